//! The shard indexer: one actor per subgraph that turns the subgraph's documents into its
//! vector shard. Vectors come from the cache when the text was seen before; the rest go to the
//! embedding pool in batches cut from texts sorted by length (padding costs more than batch
//! size saves), with as many batches in flight as there are workers. The cache is saved every
//! few thousand new vectors, so a killed process keeps most of a long cold run.
//!
//! Builds are handled one at a time per shard (`AtomicResponse`): a second catalog that
//! changes the same shard waits for the first build and then finds its vectors cached.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::{
    Actor, ActorFutureExt as _, Addr, AtomicResponse, Context, Handler, Message, WrapFuture as _,
};
use futures_util::StreamExt as _;

use crate::cache::{save_unsaved, VectorCache};
use crate::document::{Document, View};
use crate::pool::{EmbedTexts, EmbedWorker};
use crate::status::Progress;
use crate::vector::VectorShard;

/// New vectors between two saves of the cache during a long run.
const CHECKPOINT_EVERY: usize = 4096;
const LOG_EVERY: Duration = Duration::from_secs(5);

/// Build the vector shard of one subgraph from `documents[members]`.
pub(crate) struct BuildShard {
    pub documents: Arc<[Document]>,
    pub members: Vec<usize>,
    /// The subgraph's shard for an earlier catalog: a copy of it is updated where few
    /// vectors changed, rather than a new graph built.
    pub previous: Option<Arc<VectorShard>>,
}

pub(crate) struct ShardBuilt {
    pub shard: Arc<VectorShard>,
    pub embedded: usize,
    pub reused: usize,
}

impl Message for BuildShard {
    type Result = Result<ShardBuilt, String>;
}

/// What every indexer shares: the pool, the cache and the progress counters.
#[derive(Clone)]
pub(crate) struct IndexerContext {
    pub pool: Addr<EmbedWorker>,
    pub cache: Arc<Mutex<VectorCache>>,
    pub progress: Arc<Progress>,
    pub epoch: Instant,
    pub dimension: usize,
    pub batch_size: usize,
    pub workers: usize,
}

pub(crate) struct ShardIndexer {
    pub name: String,
    pub context: IndexerContext,
}

impl Actor for ShardIndexer {
    type Context = Context<Self>;
}

impl actix::Supervised for ShardIndexer {
    fn restarting(&mut self, _: &mut Context<Self>) {
        tracing::warn!(shard = %self.name, "shard indexer restarted by its supervisor");
    }
}

impl Handler<BuildShard> for ShardIndexer {
    type Result = AtomicResponse<Self, Result<ShardBuilt, String>>;

    fn handle(&mut self, message: BuildShard, _: &mut Context<Self>) -> Self::Result {
        let context = self.context.clone();
        let name = self.name.clone();
        AtomicResponse::new(Box::pin(
            build(name, context, message)
                .into_actor(self)
                .map(|result, _, _| result),
        ))
    }
}

async fn build(
    name: String,
    context: IndexerContext,
    message: BuildShard,
) -> Result<ShardBuilt, String> {
    let views: Vec<&View> = message
        .members
        .iter()
        .flat_map(|&i| message.documents[i].views.iter())
        .collect();
    let (_, mut missing) = lookup(&context.cache, &views)?;
    missing.sort_by_key(|view| (view.text.len(), view.text_hash));
    missing.dedup_by_key(|view| view.text_hash);
    let embedded = missing.len();
    context
        .progress
        .to_embed
        .fetch_add(embedded, std::sync::atomic::Ordering::Relaxed);

    let batches: Vec<Vec<&View>> = missing
        .chunks(context.batch_size.max(1))
        .map(<[&View]>::to_vec)
        .collect();
    let mut replies = futures_util::stream::iter(batches)
        .map(|batch| {
            let texts = batch.iter().map(|view| view.text.clone()).collect();
            let reply = context.pool.send(EmbedTexts(texts));
            async move { (batch, reply.await) }
        })
        .buffered(context.workers.max(1));
    let mut last_log = Instant::now();
    while let Some((batch, reply)) = replies.next().await {
        let vectors = reply
            .map_err(|e| format!("the embedding pool is gone: {e}"))?
            .map_err(|e| e.to_string())?;
        {
            let mut cache = lock(&context.cache)?;
            for (view, vector) in batch.iter().zip(vectors) {
                cache.insert(view.text_hash, Arc::from(vector));
            }
        }
        context
            .progress
            .embedded
            .fetch_add(batch.len(), std::sync::atomic::Ordering::Relaxed);
        if let Err(error) = save_unsaved(&context.cache, CHECKPOINT_EVERY) {
            tracing::warn!(%error, "cannot checkpoint the vector cache");
        }
        if last_log.elapsed() >= LOG_EVERY {
            last_log = Instant::now();
            let (done, total, rate) = context.progress.snapshot(context.epoch);
            tracing::info!(shard = %name, embedded = done, total, texts_per_second = rate.round(), "embedding");
        }
    }

    let (entries, still_missing) = lookup(&context.cache, &views)?;
    if let Some(view) = still_missing.first() {
        return Err(format!("no vector for the text {:?}", view.text));
    }
    let reused = entries.len().saturating_sub(embedded);
    let (dimension, threads) = (context.dimension, context.workers);
    let previous = message.previous.clone();
    let shard = tokio::task::spawn_blocking(move || match previous {
        Some(previous) => previous.updated(dimension, &entries, threads),
        None => VectorShard::build(dimension, &entries, threads),
    })
    .await
    .map_err(|e| format!("the shard build thread failed: {e}"))?
    .map_err(|e| e.to_string())?;
    Ok(ShardBuilt {
        shard: Arc::new(shard),
        embedded,
        reused,
    })
}

/// (shard key, vector) pairs.
type Entries = Vec<(u64, Arc<[f32]>)>;

fn lock(cache: &Mutex<VectorCache>) -> Result<std::sync::MutexGuard<'_, VectorCache>, String> {
    cache
        .lock()
        .map_err(|_| "the vector cache lock is poisoned".to_string())
}

/// Splits `views` into the (key, vector) pairs the cache holds and the views it lacks.
fn lookup<'v>(
    cache: &Mutex<VectorCache>,
    views: &[&'v View],
) -> Result<(Entries, Vec<&'v View>), String> {
    let cache = lock(cache)?;
    let mut found = Vec::with_capacity(views.len());
    let mut missing = Vec::new();
    for view in views {
        match cache.get(view.text_hash) {
            Some(vector) => found.push((view.key, vector)),
            None => missing.push(*view),
        }
    }
    Ok((found, missing))
}
