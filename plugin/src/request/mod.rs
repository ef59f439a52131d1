//! Reading and answering GraphQL operations: HTTP bytes -> GraphQL requests ([`graphql`]) -> a
//! checked, split operation ([`operation`]) -> the plugin's part executed ([`answer`],
//! [`definitions`]), then merged with the router's answer to the rest, which [`relay`] sends
//! through the router's own pipeline. Knows no tenant, gate or instance.

pub mod answer;
pub mod definitions;
pub mod graphql;
pub mod operation;
pub mod relay;
