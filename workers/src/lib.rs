//! `wayfinder-workers` indexes catalogs and answers searches over them.
//!
//! Data flows one way: a [`Catalog`](wayfinder_supergraph::Catalog) becomes [`document`]s;
//! documents feed the [`lexical`] index at once and, through the [`coordinator`] actor, the
//! per-subgraph [`indexer`] actors, which embed what the [`cache`] lacks on the [`pool`] of
//! [`embed`] workers (taking what other replicas embedded from the fleet's
//! [`shared_store`] first) and build [`vector`] shards; each step publishes a [`generation`];
//! [`engine`] searches the current one on the [`search_pool`]'s threads, reading the query's [`intent`] and spelling out its
//! acronyms and clipped words ([`spelling`]); [`ranking`] fuses and orders, [`cursor`] pages.
//! [`math`] is the vector arithmetic they share; [`status`] what indexing reports and the
//! generation it made live.

pub mod background;
pub mod cache;
pub mod config;
mod coordinator;
pub mod cursor;
pub mod document;
pub mod embed;
pub mod engine;
pub mod eval;
pub mod generation;
mod indexer;
pub mod intent;
pub mod lexical;
pub mod math;
mod onnx_graph;
mod pool;
pub mod ranking;
pub mod search_pool;
pub mod shared_store;
mod spelling;
pub mod status;
pub mod tokens;
pub mod vector;
pub mod visibility;

pub use config::{Admission, EngineConfig, ModelConfig, Overload, Pooling};
pub use embed::{close_runtime, EXIT_WAIT};
pub use engine::{
    Engine, EngineError, Published, SearchError, SearchHit, SearchRequest, SearchResults,
};
pub use generation::{Generation, SearchMode};
pub use ranking::Fusion;
pub use search_pool::Overloaded;
pub use shared_store::{RedisConfig, RedisCounts, RedisTls};
pub use status::{IndexReport, Swap};
