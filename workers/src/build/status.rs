//! What indexing has done and is doing, shared between the actors that do it and whoever
//! watches (the CLI's progress bar, the plugin's logs, tests), and the generation it made live
//! ([`Shared`]), which the engine searches.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use arc_swap::ArcSwapOption;

use crate::index::generation::Generation;
use std::time::{Duration, Instant};

/// When a published catalog starts answering searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Swap {
    /// At once, lexically, then with each step of indexing (the CLI, a first catalog).
    #[default]
    Immediately,
    /// Only when fully indexed, so a live catalog keeps answering with its vectors meanwhile
    /// (a gateway's hot reload). With nothing live yet this is the same as `Immediately`.
    WhenIndexed,
}

/// State the engine, the coordinator and the indexers share.
#[derive(Default)]
pub(crate) struct Shared {
    current: ArcSwapOption<Generation>,
    generations: AtomicU64,
    pub status: Status,
}

impl Shared {
    /// The generation answering searches.
    pub fn current(&self) -> Option<Arc<Generation>> {
        self.current.load_full()
    }

    pub fn next_generation(&self) -> u64 {
        self.generations.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub fn current_generation(&self) -> u64 {
        self.current.load().as_ref().map_or(0, |g| g.id)
    }

    /// Swaps `generation` in unless a newer one is already live (two installers can race).
    pub fn install(&self, generation: Generation) {
        let generation = Arc::new(generation);
        self.current.rcu(|current| match current {
            Some(live) if live.id > generation.id => Some(Arc::clone(live)),
            _ => Some(Arc::clone(&generation)),
        });
    }
}

/// Live embedding progress of the current indexing run.
#[derive(Debug, Default)]
pub struct Progress {
    /// Texts this run has to embed (not found in the cache).
    pub to_embed: AtomicUsize,
    pub embedded: AtomicUsize,
    /// Milliseconds since the engine started, when the current run began.
    started_ms: AtomicU64,
}

impl Progress {
    pub(crate) fn begin(&self, epoch: Instant) {
        self.to_embed.store(0, Ordering::Relaxed);
        self.embedded.store(0, Ordering::Relaxed);
        self.started_ms
            .store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// (embedded, to embed, texts per second so far).
    pub fn snapshot(&self, epoch: Instant) -> (usize, usize, f64) {
        let embedded = self.embedded.load(Ordering::Relaxed);
        let total = self.to_embed.load(Ordering::Relaxed);
        let since = epoch.elapsed().as_millis() as u64 - self.started_ms.load(Ordering::Relaxed);
        let rate = embedded as f64 / (since.max(1) as f64 / 1000.0);
        (embedded, total, rate)
    }
}

/// The outcome of indexing one published catalog.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct IndexReport {
    /// The publication (one per catalog handed to the engine).
    pub publication: u64,
    /// The generation that went live when the vectors were done.
    pub generation: u64,
    pub documents: usize,
    /// Texts the views are made of, distinct within each shard (a text two shards use, such
    /// as a type's summary, counts in each).
    pub texts: usize,
    pub shards: usize,
    /// Shards whose documents changed since the last catalog (or that had none yet).
    pub shards_rebuilt: usize,
    /// Texts embedded by the model during this run.
    pub embedded: usize,
    /// Texts whose vectors were not embedded by their shard this run: from the cache, from
    /// another shard that embedded them, or in a shard that did not change.
    /// `embedded + reused == texts` once every shard is built.
    pub reused: usize,
    /// Of `reused`, texts another replica embedded, taken from the fleet's shared store.
    pub from_redis: usize,
    /// Wall time from publication to the hybrid generation.
    pub seconds: f64,
    /// Shards left lexical-only, with the reason.
    pub failed_shards: Vec<(String, String)>,
    /// Problems that did not stop indexing (an unreadable cache file, a failed save).
    pub warnings: Vec<String>,
}

impl IndexReport {
    pub fn texts_per_second(&self) -> f64 {
        self.embedded as f64 / self.seconds.max(1e-9)
    }
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub published: u64,
    pub indexed: u64,
    pub report: Option<IndexReport>,
    /// Runs finished and texts they embedded, since the engine started.
    pub runs: u64,
    pub embedded: u64,
}

/// What indexing has done since the engine started, for a caller's metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct IndexActivity {
    /// Catalogs handed to the engine.
    pub published: u64,
    /// The latest of them whose indexing finished (`published - indexed` wait for vectors).
    pub indexed: u64,
    /// Indexing runs finished.
    pub runs: u64,
    /// Texts the model embedded, over all runs.
    pub embedded: u64,
    /// The wall time of the last finished run, in seconds.
    pub last_run_seconds: f64,
}

/// Publication counters with a condition variable, so callers can wait for a catalog's vectors.
#[derive(Debug, Default)]
pub(crate) struct Status {
    state: Mutex<State>,
    changed: Condvar,
}

impl Status {
    pub fn update(&self, f: impl FnOnce(&mut State)) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut state);
        self.changed.notify_all();
    }

    pub fn activity(&self) -> IndexActivity {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        IndexActivity {
            published: state.published,
            indexed: state.indexed,
            runs: state.runs,
            embedded: state.embedded,
            last_run_seconds: state.report.as_ref().map_or(0.0, |r| r.seconds),
        }
    }

    /// Waits until `publication` is indexed; `None` on timeout.
    pub fn wait_indexed(&self, publication: u64, timeout: Duration) -> Option<IndexReport> {
        let guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, timeout, |s| s.indexed < publication)
            .unwrap_or_else(|p| p.into_inner());
        (guard.indexed >= publication)
            .then(|| guard.report.clone())
            .flatten()
    }
}
