//! `wayfinder-workers` indexes catalogs and answers searches over them.
//!
//! Data flows one way, one folder per step:
//!
//! - [`index`]: a [`Catalog`](wayfinder_supergraph::Catalog) becomes documents, which feed
//!   the lexical index at once and the vector shards as they are built; each step publishes a
//!   generation.
//! - [`build`]: the actors that make the vectors (coordinator, per-subgraph indexers, the
//!   embedding pool), taking what the caches hold first.
//! - [`embed`]: the model, its token vectors, the vector cache and the fleet's shared store.
//! - [`query`]: one analysis of the question (its shape, its phrases, its words spelled out).
//! - [`rank`]: fusion and the re-ranking stages, every number in [`rank::Params`].
//!
//! The [`engine`] ties them together for the CLI and the router plugin: it publishes catalogs
//! and answers searches on the [`search_pool`]'s threads (callers' own work around them runs
//! on the [`background`] threads); [`cursor`] signs pages, [`config`] holds the settings and
//! [`eval`] scores question sets. Beside them, [`learned`] keeps the examples learned from the
//! operations a router runs.

pub mod background;
pub(crate) mod build;
pub mod config;
pub mod cursor;
pub(crate) mod days;
pub mod embed;
pub mod engine;
pub mod episode;
pub mod eval;
pub mod files;
pub(crate) mod fleet;
pub mod index;
pub mod insights;
pub mod learned;
pub(crate) mod query;
pub mod rank;
pub mod search_pool;

pub use build::status::{IndexActivity, IndexReport, Swap};
pub use config::{Admission, EngineConfig, ModelConfig, ModelTuning, Overload, Pooling};
pub use embed::shared_store::{ClientAuthentication, RedisConfig, RedisCounts, RedisTls};
pub use embed::{close_runtime, EXIT_WAIT};
pub use engine::{
    Engine, EngineError, Published, SearchError, SearchHit, SearchRequest, SearchResults,
};
pub use index::generation::{Generation, SearchMode};
pub use rank::{Fusion, Params, Stage};
pub use search_pool::Overloaded;
