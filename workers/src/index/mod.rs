//! Indexes: what a search reads, built from a catalog.
//!
//! A catalog becomes one [`document`] per member (its texts and views, its [`priors`], whether
//! it is [`plumbing`]); the documents feed the [`lexical`] index at once and the per-subgraph
//! [`vector`] shards as they are built. A [`generation`] holds one catalog with all of these;
//! [`visibility`] is the part of it one tenant's contract lets a search return.

pub mod document;
pub mod generation;
pub mod lexical;
pub(crate) mod plumbing;
pub mod priors;
pub mod spellings;
pub mod thin;
pub mod vector;
pub mod visibility;
