//! Building a catalog's vectors: the actors that turn published documents into vector shards.
//!
//! The [`coordinator`] diffs each published catalog against what is built and sends the
//! changed subgraphs to their [`indexer`] actors; an indexer takes each text's vectors from the
//! cache or the fleet's shared store, or has the embedding [`pool`] make them, builds its
//! shard and publishes a new generation. [`status`] is what this reports and the generation it
//! made live.

pub(crate) mod coordinator;
pub(crate) mod indexer;
pub(crate) mod pool;
pub mod status;
