//! Engine configuration: which embedding model to run, where the vector cache lives, how many
//! worker threads embed, how many threads search and how long a search may wait for one.
//!
//! The parts router.yaml sets as they are ([`ModelConfig`], [`RedisConfig`], [`Overload`],
//! [`Params`]) derive their JSON schema here, and the plugin's config embeds them. Not
//! [`EngineConfig`] itself: router.yaml's `index` describes it at a user's level (a `home`
//! the paths default from, `no_cache`, defaults that depend on the machine), and the plugin
//! resolves that into an `EngineConfig`, with the cursor secrets from another section.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cursor::CursorSecret;
use crate::embed::shared_store::RedisConfig;
pub use crate::embed::{ModelConfig, ModelTuning, Pooling};
use crate::rank::Params;

/// Everything the engine needs besides the catalogs it is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    pub model: ModelConfig,
    /// Folder of the persistent vector cache and the saved vector graphs; `None` keeps both in
    /// memory only.
    #[serde(default)]
    pub cache_dir: Option<PathBuf>,
    /// Embedding worker threads, each with its own ONNX session. Capped at the machine's cores.
    #[serde(default = "default_workers")]
    pub workers: usize,
    /// Texts per model call; batches are cut from texts sorted by length.
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    /// Query vectors kept in memory, most recently used first.
    #[serde(default = "default_query_cache")]
    pub query_cache: usize,
    /// Threads that run searches, each with its own ONNX session to embed questions (loaded on
    /// first need). At least one, at most the machine's cores (the work is all CPU); default
    /// the machine's cores.
    #[serde(default = "default_workers")]
    pub query_sessions: usize,
    /// Most bytes of pages the vector cache's store has in use; past it, the entries used
    /// longest ago are removed (none used in the last hour, nor by this process).
    #[serde(default = "default_cache_max_bytes")]
    pub cache_max_bytes: u64,
    /// The key `__search` cursors are signed with; replicas given the same one accept each
    /// other's cursors. `None`: a random key of this process.
    #[serde(default)]
    pub cursor_secret: Option<CursorSecret>,
    /// Keys whose cursors are still accepted (not signed with): the secrets a rollout replaces.
    #[serde(default)]
    pub previous_cursor_secrets: Vec<CursorSecret>,
    /// The fleet's shared vector store; `None`: this process embeds alone.
    #[serde(default)]
    pub redis: Option<RedisConfig>,
    /// How searches rank; `None`: the params measured for the model ([`Params::for_model`]).
    #[serde(default)]
    pub ranking: Option<Params>,
}

/// How much lower than the router's own threads the engine's threads (searches and indexing)
/// are scheduled, as a Unix nice increment: a busy search or indexing run then yields the cores
/// to ordinary requests instead of taking turns with them. Linux gives a nice-10 thread about a
/// tenth of the CPU a nice-0 thread gets when both want it, and all of it when the cores are
/// otherwise idle, so an unloaded router loses nothing.
pub const BACKGROUND_NICENESS: i32 = 10;

/// Background threads per core, for callers' work around searches ([`crate::background`]):
/// most of their time they wait for a search thread, so there are more of them than cores.
pub const BACKGROUND_THREADS_PER_CORE: usize = 4;

/// Jobs that may wait for a background thread; one more is refused at once.
pub const BACKGROUND_QUEUE: usize = 256;

/// What a search does when it cannot have a search thread in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Overload {
    /// Answer from the lexical index alone, without the model, and say so.
    Lexical,
    /// Refuse the search.
    Refuse,
}

/// How long a search may wait for a search thread, and what it does when it cannot have one.
/// A gateway bounds both, so a burst of searches never builds a queue that outlives it (the
/// router plugin's `limits`); the default waits as long as it takes, as the CLI and the
/// evaluation want every answer from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// Searches that may wait for a thread at once; one more is overloaded at once.
    pub max_pending: usize,
    /// Longest a search waits for a thread before it is overloaded.
    pub max_wait: Duration,
    pub overload: Overload,
}

impl Default for Admission {
    fn default() -> Self {
        Admission {
            max_pending: usize::MAX,
            max_wait: Duration::MAX,
            overload: Overload::Refuse,
        }
    }
}

fn default_workers() -> usize {
    available_cores()
}

fn default_batch_size() -> usize {
    16
}

fn default_query_cache() -> usize {
    1024
}

/// 2 GiB: the vectors and token vectors of about eight schemas of github's size.
pub fn default_cache_max_bytes() -> u64 {
    2 << 30
}

pub(crate) fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Search threads a gateway starts unless told: one core fewer than the machine has, at least
/// one. A core left free of embedding is what keeps ordinary requests fast under a flood of
/// searches; lower CPU priority alone does not (issue 41, 2 cores: with both embedding at nice
/// +10, the ordinary request's p99 rose x3; with one, x1.1-1.3, at a fifth fewer model searches
/// a second).
pub fn gateway_search_threads() -> usize {
    available_cores().saturating_sub(1).max(1)
}

impl EngineConfig {
    /// The default model in `home`, its cache in `home/cache`.
    pub fn default_in(home: &Path) -> Self {
        EngineConfig {
            model: ModelConfig::default_in(home),
            cache_dir: Some(home.join("cache")),
            workers: default_workers(),
            batch_size: default_batch_size(),
            query_cache: default_query_cache(),
            query_sessions: default_workers(),
            cache_max_bytes: default_cache_max_bytes(),
            cursor_secret: None,
            previous_cursor_secrets: Vec::new(),
            redis: None,
            ranking: None,
        }
    }

    /// Worker threads actually started: at least one, at most the machine's cores.
    pub fn worker_threads(&self) -> usize {
        self.workers.clamp(1, available_cores())
    }

    /// Search threads actually started: at least one, at most the machine's cores.
    pub fn search_threads(&self) -> usize {
        self.query_sessions.clamp(1, available_cores())
    }
}
