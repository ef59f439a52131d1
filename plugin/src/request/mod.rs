//! Reading and answering GraphQL operations: HTTP bytes -> GraphQL requests ([`graphql`]) -> a
//! checked, split operation ([`operation`]) -> the plugin's part executed ([`answer`],
//! [`definitions`]), then merged with the router's answer to the rest, which [`relay`] sends
//! through the router's own pipeline. Knows no tenant, gate or instance.

pub(crate) mod answer;
pub(crate) mod definitions;
pub(crate) mod graphql;
pub(crate) mod operation;
pub(crate) mod relay;
