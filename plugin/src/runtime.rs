//! The engine outlives plugin instances. The router builds a new plugin on every reload
//! (configuration or schema) while requests in flight finish on the old one, so the engine,
//! its vectors and its index generations live in one process-wide slot, reused while the
//! engine settings stay the same; a reload only publishes the new catalog, which re-indexes
//! what changed in the background while the live index keeps answering.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use wayfinder_supergraph::Catalog;
use wayfinder_workers::insights::{Insights, InsightsConfig, InsightsConfigError};
use wayfinder_workers::learned::{Learned, LearnedConfig, Learner};
use wayfinder_workers::{Engine, EngineConfig, EngineError, Generation, RedisConfig, Swap};

struct Slot {
    config: EngineConfig,
    engine: Arc<Engine>,
    /// Content hash of the catalog last published to `engine`.
    published: Option<u64>,
}

static SLOT: Mutex<Option<Slot>> = Mutex::new(None);

/// Why no engine serves the catalog.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("the engine slot is empty")]
    EmptySlot,
}

/// The engine for `config` (started on first use or when the settings changed), with
/// `catalog` published to it unless it is already the one being served.
pub fn engine_serving(
    config: &EngineConfig,
    catalog: &Arc<Catalog>,
) -> Result<Arc<Engine>, RuntimeError> {
    let mut slot = SLOT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let reuse = slot.as_ref().is_some_and(|s| s.config == *config);
    if !reuse {
        let engine = Engine::start(config.clone())?;
        if let Some(error) = engine.model_error() {
            tracing::warn!(%error, "wayfinder.search: no embedding model; __search is lexical-only");
        }
        if config.cursor_secret.is_none() {
            tracing::warn!(
                "wayfinder.search: no cursors.secret: __search cursors are signed with a key of \
                 this process, which other replicas refuse; behind a load balancer, pagination \
                 then needs sticky sessions"
            );
        }
        if let Some(warning) = engine.cache_warning() {
            tracing::warn!(%warning, "wayfinder.search: starting from an empty vector cache");
        }
        *slot = Some(Slot {
            config: config.clone(),
            engine: Arc::new(engine),
            published: None,
        });
    }
    let Some(slot) = slot.as_mut() else {
        return Err(RuntimeError::EmptySlot);
    };
    let hash = catalog.content_hash();
    if slot.published != Some(hash) {
        // The root of the indexing trace, parent of every shard's span, open until the run
        // ends. A trace of its own, linked to the router's (re)load that caused it: a child of
        // the load span would hold that span open for the whole run.
        let span = tracing::info_span!(
            parent: None,
            "wayfinder.index",
            documents = catalog.members().len()
        );
        span.follows_from(tracing::Span::current());
        let _entered = span.enter();
        let published = slot
            .engine
            .publish_with(Arc::clone(catalog), Swap::WhenIndexed)?;
        tracing::info!(
            publication = published.publication,
            documents = published.documents,
            "wayfinder.search: indexing the supergraph in the background"
        );
        slot.published = Some(hash);
    }
    Ok(Arc::clone(&slot.engine))
}

/// The learner, like the engine, outlives plugin instances: what it learned stays across
/// reloads while its settings and folder stay.
struct LearnerSlot {
    config: LearnedConfig,
    cache_dir: Option<PathBuf>,
    redis: Option<RedisConfig>,
    learner: Arc<Learner>,
}

static LEARNER: Mutex<Option<LearnerSlot>> = Mutex::new(None);

/// The learner for `config`, started (and its saved store read) on first use or when the
/// settings changed; `None` when examples are not learned from traffic. With `redis` (the
/// engine's, `index.redis`), it shares what it learns with the fleet.
pub fn learner(
    config: &LearnedConfig,
    cache_dir: Option<&Path>,
    redis: Option<&RedisConfig>,
) -> Option<Arc<Learner>> {
    let mut slot = LEARNER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !config.from_traffic {
        *slot = None;
        return None;
    }
    if let Some(slot) = slot.as_ref().filter(|s| {
        s.config == *config && s.cache_dir.as_deref() == cache_dir && s.redis.as_ref() == redis
    }) {
        return Some(Arc::clone(&slot.learner));
    }
    let (learned, error) = Learned::open(config.clone(), cache_dir);
    if let Some(error) = error {
        tracing::warn!(%error, "wayfinder.search: learning examples from an empty store");
    }
    let learner = match Learner::start(Arc::new(learned), redis.cloned()) {
        Ok(learner) => Arc::new(learner),
        Err(error) => {
            tracing::warn!(%error, "wayfinder.search: cannot start the examples learner");
            return None;
        }
    };
    *slot = Some(LearnerSlot {
        config: config.clone(),
        cache_dir: cache_dir.map(Path::to_path_buf),
        redis: redis.cloned(),
        learner: Arc::clone(&learner),
    });
    Some(learner)
}

/// The insights store, like the learner, outlives plugin instances while its settings,
/// folder and Redis stay.
struct InsightsSlot {
    cache_dir: Option<PathBuf>,
    redis: Option<RedisConfig>,
    insights: Arc<Insights>,
}

static INSIGHTS: Mutex<Option<InsightsSlot>> = Mutex::new(None);

/// The insights store for `config`, saved in `cache_dir` (made, and its file read, on first use
/// or when the settings changed) and, with `redis` (the engine's, `index.redis`), shared with
/// the fleet; `None` when no tenant is opted in.
pub fn insights(
    config: &InsightsConfig,
    cache_dir: Option<&Path>,
    redis: Option<&RedisConfig>,
) -> Result<Option<Arc<Insights>>, InsightsConfigError> {
    let mut slot = INSIGHTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if config.tenants.is_empty() {
        *slot = None;
        return Ok(None);
    }
    if let Some(slot) = slot.as_ref().filter(|s| {
        s.insights.config() == config
            && s.cache_dir.as_deref() == cache_dir
            && s.redis.as_ref() == redis
    }) {
        return Ok(Some(Arc::clone(&slot.insights)));
    }
    let (insights, error) = Insights::open(config.clone(), cache_dir)?;
    if let Some(error) = error {
        tracing::warn!(%error, "wayfinder.search: insights start empty");
    }
    let insights = Arc::new(insights);
    if let Err(error) = wayfinder_workers::insights::keep(&insights, redis.cloned()) {
        tracing::warn!(%error, "wayfinder.search: insights are saved only when the router stops, and not shared");
    }
    *slot = Some(InsightsSlot {
        cache_dir: cache_dir.map(Path::to_path_buf),
        redis: redis.cloned(),
        insights: Arc::clone(&insights),
    });
    Ok(Some(insights))
}

fn engine() -> Option<Arc<Engine>> {
    let slot = SLOT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    slot.as_ref().map(|s| Arc::clone(&s.engine))
}

/// The generation answering searches in this process, if any (for the index gauges).
pub fn live_generation() -> Option<Arc<Generation>> {
    engine()?.current()
}

/// (texts embedded, texts to embed) of the indexing run under way (for the index gauges).
pub fn progress() -> Option<(usize, usize)> {
    let (embedded, to_embed, _) = engine()?.progress();
    Some((embedded, to_embed))
}

/// What the fleet's shared store has answered since the engine started, if it has one (for
/// the Redis counters).
pub fn redis_counts() -> Option<wayfinder_workers::RedisCounts> {
    engine()?.redis_counts()
}

/// What indexing has done since the engine started (for the index metrics).
pub fn index_activity() -> Option<wayfinder_workers::IndexActivity> {
    Some(engine()?.index_activity())
}

/// (question texts found in the cache, texts embedded) since the engine started, with a model.
pub fn query_cache_counts() -> Option<(u64, u64)> {
    engine()?.query_cache_counts()
}

/// Whether the fleet's shared store is usable now, if the engine has one.
pub fn redis_available() -> Option<bool> {
    engine()?.redis_available()
}
