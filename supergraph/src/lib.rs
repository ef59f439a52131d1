//! `wayfinder-supergraph` turns a composed supergraph (or a plain GraphQL schema) into a
//! [`Catalog`]: every member of the API schema that a client can see, keyed by schema
//! coordinate, with description, signature, owning subgraphs, entity keys, deprecation,
//! `@tag`s, relations, content hashes and paths to the roots.
//!
//! Data flows one way: [`source`] reads the document and derives the API schema;
//! [`catalog`] builds members from it, reading federation facts through [`federation`] and
//! hashing them through [`hash`]; [`paths`] walks from the roots, and [`examples`] writes an
//! operation along a member's shortest path (with [`operation_text`], as [`usage`] writes shapes); [`contract`] decides what a tenant's `@tag`
//! filter lets it see, and [`contract_schema`] derives that tenant's API schema. Apart from
//! the catalog, [`usage`] reduces an executed operation to its shape and the members it uses.

mod catalog;
mod contract;
mod contract_schema;
mod error;
mod examples;
mod federation;
mod hash;
mod member;
mod operation_text;
mod paths;
mod source;
mod usage;

pub use catalog::{Catalog, CatalogOptions, PLAIN_SUBGRAPH};
pub use contract::{Contract, ContractFilter};
pub use contract_schema::ContractSchemaError;
pub use error::{CatalogError, SchemaProblem};
pub use examples::{Example, NoExample};
pub use member::Roots;
pub use member::{
    Deprecation, EntityKey, FederationFacts, Member, MemberId, MemberKind, Override, Subgraph,
    SubgraphId,
};
pub use paths::PathIndex;
pub use usage::{usage, Usage, UsageError};
