//! `wayfinder-workers`: the indexing and search engine over a [`wayfinder_supergraph::Catalog`]
//! (actors that embed catalog documents into per-subgraph vector shards beside a lexical
//! index, and the hybrid search over them). Under construction: nothing is exported yet.
