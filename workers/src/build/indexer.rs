//! The shard indexer: one actor per subgraph that turns the subgraph's documents into its
//! vector shard. A view's vector is the normalised sum of its texts' vectors. Vectors come
//! from the cache when the text was seen before; a text another shard is embedding is awaited;
//! with a fleet's shared store, the rest are taken from it when another replica embedded them,
//! or leased a few hundred at a time (another replica's lease is awaited, as a shard's claim
//! is); what is left goes to the embedding pool in batches cut from texts sorted by length,
//! with as many batches in flight as there are workers, and is written back to the store. A member's document text also
//! keeps its content-token vectors, which the shard holds beside its graph. The cache is saved
//! every few thousand new vectors, so a killed process keeps most of a long cold run. The shard's graph
//! is then loaded from the cache folder when one was saved for exactly these vectors, else
//! taken from the fleet's shared store (another replica built it for exactly these vectors),
//! or updated from the previous catalog's shard or built, and saved (and shared).
//!
//! Builds are handled one at a time per shard (`AtomicResponse`): a second catalog that
//! changes the same shard waits for the first build and then finds its vectors cached.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::{
    Actor, ActorFutureExt as _, Addr, AtomicResponse, Context, Handler, MailboxError, Message,
    WrapFuture as _,
};
use futures_util::StreamExt as _;
use tracing::Instrument as _;

use crate::build::pool::{EmbedPool, EmbedTexts, EmbedWorker};
use crate::build::status::Progress;
use crate::embed::cache::{save_unsaved, Claim, VectorCache};
use crate::embed::shared_store::{Entry, RedisCounts, SharedStore};
use crate::embed::tokens::TokenVectors;
use crate::embed::EmbedError;
use crate::index::document::{distinct_texts, Document, Text};
use crate::index::vector::{ShardFile, VectorError, VectorShard};

/// New vectors between two saves of the cache during a long run.
const CHECKPOINT_EVERY: usize = 4096;
const LOG_EVERY: Duration = Duration::from_secs(5);
/// How often a shard checks on texts another shard is embedding.
const CLAIM_POLL: Duration = Duration::from_millis(20);
/// Texts leased from the fleet at once, in a chunk: with at most two chunks per replica in
/// flight, embedded well within the lease on a slow machine (512 texts in about 5 s at 100 a
/// second, against 30 s), so that a lease does not end while its holder works.
pub(crate) const LEASED_AT_ONCE: usize = 256;
/// How often a shard checks on texts another replica is embedding.
const FLEET_POLL: Duration = Duration::from_millis(250);

/// Build the vector shard of one subgraph from `documents[members]`.
pub(crate) struct BuildShard {
    pub documents: Arc<[Document]>,
    pub members: Vec<usize>,
    /// The subgraph's shard for an earlier catalog: a copy of it is updated where few
    /// vectors changed, rather than a new graph built.
    pub previous: Option<Arc<VectorShard>>,
    /// The span of the publication this build is part of (background work has no request
    /// to hang from, so the caller's span is carried along).
    pub parent: tracing::Span,
}

pub(crate) struct ShardBuilt {
    pub shard: Arc<VectorShard>,
    pub embedded: usize,
    pub reused: usize,
    /// Of `reused`, the texts another replica embedded (from the shared store).
    pub from_redis: usize,
}

impl Message for BuildShard {
    type Result = Result<ShardBuilt, IndexError>;
}

/// Why a shard's vectors were not built: the shard stays lexical-only. The shard's name is not
/// repeated here: every report of the error is keyed by it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IndexError {
    #[error("the vector cache lock is poisoned")]
    CachePoisoned,
    #[error("the embedding pool is gone: {0}")]
    PoolGone(#[source] MailboxError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// `text` is `None` when the hash is of no text of the shard.
    #[error("no vector for a view of {text:?}")]
    NoVector { text: Option<Arc<str>> },
    #[error("the shard build thread failed: {0}")]
    BuildThread(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Vector(#[from] VectorError),
    #[error("the shard indexer is gone: {0}")]
    IndexerGone(#[source] MailboxError),
}

/// What every indexer shares: the pool, the cache and the progress counters.
#[derive(Clone)]
pub(crate) struct IndexerContext {
    pub pool: Arc<EmbedPool>,
    pub cache: Arc<Mutex<VectorCache>>,
    pub progress: Arc<Progress>,
    pub epoch: Instant,
    pub dimension: usize,
    pub batch_size: usize,
    pub workers: usize,
    /// Searches a shard serves at once (the search threads).
    pub searchers: usize,
    /// Where built graphs are saved for the next start (the cache folder), if anywhere.
    pub graphs: Option<PathBuf>,
    /// The fleet's shared store, if any.
    pub shared_store: Option<Arc<SharedStore>>,
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
    type Result = AtomicResponse<Self, Result<ShardBuilt, IndexError>>;

    fn handle(&mut self, message: BuildShard, _: &mut Context<Self>) -> Self::Result {
        let context = self.context.clone();
        let name = self.name.clone();
        // Created inside the parent: an OpenTelemetry layer (the router's) may decide sampling
        // from the current span rather than the explicit parent.
        let span = message.parent.in_scope(|| {
            tracing::info_span!(
                parent: &message.parent,
                "wayfinder.index_shard",
                subgraph = %name,
                documents = message.members.len(),
                embedded = tracing::field::Empty,
                reused = tracing::field::Empty,
                graph = tracing::field::Empty,
                redis.hits = tracing::field::Empty,
                redis.misses = tracing::field::Empty,
                redis.invalid = tracing::field::Empty,
                redis.errors = tracing::field::Empty,
                redis.written = tracing::field::Empty,
            )
        });
        AtomicResponse::new(Box::pin(
            build(name, context, message)
                .instrument(span)
                .into_actor(self)
                .map(|result, _, _| result),
        ))
    }
}

async fn build(
    name: String,
    context: IndexerContext,
    message: BuildShard,
) -> Result<ShardBuilt, IndexError> {
    let texts = distinct_texts(&message.documents, &message.members);
    let documents = &message.documents;
    let with_tokens: HashSet<u128> = message
        .members
        .iter()
        .map(|&i| documents[i].text_view().parts[0].hash)
        .collect();
    // Texts another shard is embedding right now (a type's summary that both shards blend
    // in) are awaited, not embedded twice; one whose claimer failed is claimed again. Sorted
    // by length: padding costs more than batch size saves.
    let mut waiting = texts.clone();
    waiting.sort_by_key(|text| (text.text.len(), text.hash));
    // Texts another replica holds the lease of, checked on every `FLEET_POLL`.
    let mut elsewhere = Vec::new();
    let mut next_check = Instant::now();
    let at_once = match context.shared_store {
        Some(_) => LEASED_AT_ONCE,
        None => usize::MAX,
    };
    let mut redis = RedisCounts::default();
    // What another replica embedded is taken at once, in as few round trips as the store
    // allows; what is left is leased and fetched again a few hundred at a time below.
    if let Some(store) = &context.shared_store {
        let wanted: Vec<(u128, bool)> = {
            let cache = lock(&context.cache)?;
            texts
                .iter()
                .map(|text| (text.hash, with_tokens.contains(&text.hash)))
                .filter(|&(hash, tokens)| !cache.contains(hash, tokens))
                .collect()
        };
        take_from_fleet(store, &context.cache, &wanted, &mut redis).await?;
    }
    let mut embedded = 0;
    let mut lease = None;
    // A text found cached may be gone when it is read (another process on the cache folder
    // pruned it meanwhile): such texts are claimed and embedded once more.
    let mut attempt = 0;
    let (entries, tokens) = loop {
        loop {
            // With a shared store, a chunk is leased only when this replica can embed it soon.
            let permit = match &context.shared_store {
                Some(store) => store.lease_permit().await,
                None => None,
            };
            let mut mine = claim(&context.cache, &mut waiting, &with_tokens, at_once)?;
            if mine.is_empty() && !elsewhere.is_empty() && Instant::now() >= next_check {
                next_check = Instant::now() + FLEET_POLL;
                mine = claim(&context.cache, &mut elsewhere, &with_tokens, at_once)?;
                waiting.append(&mut elsewhere);
            }
            let mut claims = Claims::new(&context.cache, &mine);
            if let (Some(store), false) = (&context.shared_store, mine.is_empty()) {
                elsewhere.extend(
                    from_fleet(store, &context.cache, &mut mine, &with_tokens, &mut redis).await?,
                );
                claims.keep(&mine);
            }
            if !mine.is_empty() {
                // Held until the build ends: a build waiting on another's claims embeds again
                // soon.
                let workers = &lease.get_or_insert_with(|| context.pool.lease()).workers;
                let done = embed(&name, &context, workers, &mine, &with_tokens).await;
                if let Some(store) = &context.shared_store {
                    match &done {
                        Ok(entries) => redis.add(store.put(entries).await),
                        Err(_) => {
                            store
                                .unlease(&mine.iter().map(|t| t.hash).collect::<Vec<_>>())
                                .await
                        }
                    }
                }
                done?;
                drop((claims, permit));
                embedded += mine.len();
            } else if waiting.is_empty() && elsewhere.is_empty() {
                break;
            } else {
                tokio::time::sleep(CLAIM_POLL).await;
            }
        }
        let read = read_entries(&*lock(&context.cache)?, documents, &message.members);
        if read.missing.is_empty() || attempt > 0 {
            if let Some(hash) = read.missing_vectors.first() {
                let text = texts
                    .iter()
                    .find(|t| t.hash == *hash)
                    .map(|t| Arc::clone(&t.text));
                return Err(IndexError::NoVector { text });
            }
            break (read.entries, read.tokens);
        }
        attempt += 1;
        waiting = texts
            .iter()
            .filter(|text| read.missing.contains(&text.hash))
            .copied()
            .collect();
        tracing::warn!(
            shard = %name,
            texts = waiting.len(),
            "texts found in the vector cache were gone when read; embedding them again"
        );
    };
    // The graph is built without the workers: they may stop meanwhile.
    drop(lease);
    let reused = texts.len().saturating_sub(embedded);
    let dimension = context.dimension;
    let previous = message.previous.clone();
    let graphs = context.graphs.clone();
    let shard_name = name.clone();
    let (file, entries) = tokio::task::spawn_blocking(move || {
        let file = graphs.map(|dir| ShardFile::new(&dir, &shard_name, &entries));
        (file, entries)
    })
    .await?;
    // A graph another replica built for exactly these entries, when none is saved here.
    let shared_graph = match (&context.shared_store, &file) {
        (Some(store), Some(file)) if !file.exists() => {
            let (graph, counts) = store.fetch_graph(file.name()).await;
            redis.add(counts);
            graph
        }
        _ => None,
    };
    let graph_from_redis = shared_graph.is_some();
    let share = context.shared_store.is_some();
    let (shard, graph, to_share) = tokio::task::spawn_blocking(move || {
        if let (Some(graph), Some(file)) = (&shared_graph, &file) {
            // A failure is logged as part of the cache-writes episode; the graph is then built
            // here.
            let _ = file.write(graph);
        }
        let (shard, graph) = shard_for(
            &name,
            file.as_ref(),
            previous.as_deref(),
            dimension,
            &entries,
        )?;
        // A graph made here, for the other replicas.
        let to_share = file
            .filter(|_| share && graph != "loaded")
            .and_then(|file| Some((file.name().to_string(), file.read()?)));
        Ok::<_, VectorError>((shard, graph, to_share))
    })
    .await??;
    let graph = match graph {
        "loaded" if graph_from_redis => "shared",
        graph => graph,
    };
    if let (Some(store), Some((file_name, bytes))) = (&context.shared_store, to_share) {
        redis.add(store.put_graph(&file_name, &bytes).await);
    }
    let span = tracing::Span::current();
    span.record("embedded", embedded);
    span.record("reused", reused);
    span.record("graph", graph);
    if context.shared_store.is_some() {
        span.record("redis.hits", redis.hits);
        span.record("redis.misses", redis.misses);
        span.record("redis.invalid", redis.invalid);
        span.record("redis.errors", redis.errors);
        span.record("redis.written", redis.written);
    }
    let shard = shard.for_searchers(context.searchers)?;
    Ok(ShardBuilt {
        shard: Arc::new(shard.with_tokens(tokens)),
        embedded,
        reused,
        from_redis: redis.hits as usize,
    })
}

/// Claims up to `at_most` texts of `waiting` for this shard to embed, in order; leaves there
/// those another shard is embedding and those past `at_most`, drops those cached.
fn claim<'t>(
    cache: &Mutex<VectorCache>,
    waiting: &mut Vec<&'t Text>,
    with_tokens: &HashSet<u128>,
    at_most: usize,
) -> Result<Vec<&'t Text>, IndexError> {
    let mut mine = Vec::new();
    let mut cache = lock(cache)?;
    waiting.retain(|text| {
        if mine.len() >= at_most {
            return true;
        }
        match cache.claim(text.hash, with_tokens.contains(&text.hash)) {
            Claim::Cached => false,
            Claim::Pending => true,
            Claim::Claimed => {
                mine.push(*text);
                false
            }
        }
    });
    Ok(mine)
}

/// Takes from the fleet's store what another replica embedded of `mine` (into the cache) and
/// leases the rest; returns, released here, the texts another replica holds the lease of, and
/// leaves in `mine` those this shard must embed.
async fn from_fleet<'t>(
    store: &SharedStore,
    cache: &Mutex<VectorCache>,
    mine: &mut Vec<&'t Text>,
    with_tokens: &HashSet<u128>,
    counts: &mut RedisCounts,
) -> Result<Vec<&'t Text>, IndexError> {
    let wanted: Vec<(u128, bool)> = mine
        .iter()
        .map(|text| (text.hash, with_tokens.contains(&text.hash)))
        .collect();
    let found = take_from_fleet(store, cache, &wanted, counts).await?;
    mine.retain(|text| !found.contains(&text.hash));
    let hashes: Vec<u128> = mine.iter().map(|text| text.hash).collect();
    let (ours, leased) = store.lease(&hashes).await;
    counts.add(leased);
    let (held, kept): (Vec<_>, Vec<_>) = mine.drain(..).zip(ours).partition(|(_, ours)| !*ours);
    *mine = kept.into_iter().map(|(text, _)| text).collect();
    let held: Vec<&Text> = held.into_iter().map(|(text, _)| text).collect();
    if !held.is_empty() {
        let mut cache = lock(cache)?;
        for text in &held {
            cache.release(text.hash);
        }
    }
    Ok(held)
}

/// Fetches `wanted` from the fleet's store into the cache; the texts found.
async fn take_from_fleet(
    store: &SharedStore,
    cache: &Mutex<VectorCache>,
    wanted: &[(u128, bool)],
    counts: &mut RedisCounts,
) -> Result<HashSet<u128>, IndexError> {
    let (found, fetched) = store.fetch(wanted).await;
    counts.add(fetched);
    let mut cache = lock(cache)?;
    Ok(found
        .into_iter()
        .map(|entry| {
            cache.insert(entry.hash, entry.vector, entry.tokens);
            entry.hash
        })
        .collect())
}

/// A shard's view vectors and document-text token vectors, read from the cache, with the
/// texts whose vector or token vectors it lacks.
struct Read {
    entries: Vec<(u64, Arc<[f32]>)>,
    tokens: HashMap<u64, Arc<TokenVectors>>,
    missing_vectors: Vec<u128>,
    /// `missing_vectors` and the texts without their token vectors.
    missing: HashSet<u128>,
}

fn read_entries(cache: &VectorCache, documents: &[Document], members: &[usize]) -> Read {
    let mut read = Read {
        entries: Vec::new(),
        tokens: HashMap::new(),
        missing_vectors: Vec::new(),
        missing: HashSet::new(),
    };
    for &i in members {
        for view in &documents[i].views {
            match view.blend(|hash| cache.get(hash)) {
                Some(vector) => read.entries.push((view.key, vector)),
                None => read.missing_vectors.extend(
                    view.parts
                        .iter()
                        .map(|part| part.hash)
                        .filter(|hash| cache.get(*hash).is_none()),
                ),
            }
        }
        let text = documents[i].text_view();
        match cache.tokens(text.parts[0].hash) {
            Some(text_tokens) => {
                read.tokens.insert(text.key, text_tokens);
            }
            None => {
                read.missing.insert(text.parts[0].hash);
            }
        }
    }
    read.missing.extend(read.missing_vectors.iter().copied());
    read
}

/// The shard holding `entries`, and how its graph came to be: loaded from the graph saved
/// for exactly these entries, or updated from the previous catalog's shard, or built; a graph
/// not loaded is saved for the next start.
fn shard_for(
    name: &str,
    file: Option<&ShardFile>,
    previous: Option<&VectorShard>,
    dimension: usize,
    entries: &[(u64, Arc<[f32]>)],
) -> Result<(VectorShard, &'static str), VectorError> {
    if let Some(file) = file {
        match VectorShard::load(file, dimension, entries) {
            Ok(Some(shard)) => return Ok((shard, "loaded")),
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(shard = %name, %error, "a saved graph is unreadable; building it again")
            }
        }
    }
    let (shard, graph) = match previous {
        Some(previous) => (previous.updated(dimension, entries)?, "updated"),
        None => (VectorShard::build(dimension, entries)?, "built"),
    };
    if let Some(file) = file {
        // A failure is logged as part of the cache-writes episode: the next start builds the
        // graph again.
        let _ = shard.save(file);
    }
    Ok((shard, graph))
}

/// Embeds `texts` on the pool, as many batches in flight as there are workers, and puts
/// their vectors in the cache, with the token vectors of those in `with_tokens`; returns them
/// too when there is a shared store to write them to.
async fn embed(
    name: &str,
    context: &IndexerContext,
    pool: &Addr<EmbedWorker>,
    texts: &[&Text],
    with_tokens: &HashSet<u128>,
) -> Result<Vec<Entry>, IndexError> {
    let mut written = Vec::new();
    context
        .progress
        .to_embed
        .fetch_add(texts.len(), std::sync::atomic::Ordering::Relaxed);
    let mut replies = futures_util::stream::iter(texts.chunks(context.batch_size.max(1)))
        .map(|batch| {
            let strings = batch.iter().map(|text| text.text.to_string()).collect();
            let reply = pool.send(EmbedTexts(strings));
            async move { (batch, reply.await) }
        })
        .buffered(context.workers.max(1));
    let mut last_log = Instant::now();
    while let Some((batch, reply)) = replies.next().await {
        let embeddings = reply.map_err(IndexError::PoolGone)??;
        {
            let mut cache = lock(&context.cache)?;
            for (text, embedding) in batch.iter().zip(embeddings) {
                let tokens = with_tokens
                    .contains(&text.hash)
                    .then(|| Arc::new(embedding.tokens));
                let vector: Arc<[f32]> = Arc::from(embedding.vector);
                if context.shared_store.is_some() {
                    written.push(Entry {
                        hash: text.hash,
                        vector: Arc::clone(&vector),
                        tokens: tokens.clone(),
                    });
                }
                cache.insert(text.hash, vector, tokens);
            }
        }
        context
            .progress
            .embedded
            .fetch_add(batch.len(), std::sync::atomic::Ordering::Relaxed);
        // A failure is logged as part of the cache-writes episode; the vectors stay in memory.
        let _ = save_unsaved(&context.cache, CHECKPOINT_EVERY);
        if last_log.elapsed() >= LOG_EVERY {
            last_log = Instant::now();
            let (done, total, rate) = context.progress.snapshot(context.epoch);
            tracing::info!(shard = %name, embedded = done, total, texts_per_second = rate.round(), "embedding");
        }
    }
    Ok(written)
}

/// Texts claimed for embedding; whatever did not reach the cache is released on drop (an
/// error, or the build cancelled), so another shard can claim it.
struct Claims<'a> {
    cache: &'a Mutex<VectorCache>,
    hashes: Vec<u128>,
}

impl<'a> Claims<'a> {
    fn new(cache: &'a Mutex<VectorCache>, texts: &[&Text]) -> Self {
        let hashes = texts.iter().map(|text| text.hash).collect();
        Claims { cache, hashes }
    }

    /// Keeps only `texts`: the others were taken from the store or released already.
    fn keep(&mut self, texts: &[&Text]) {
        self.hashes = texts.iter().map(|text| text.hash).collect();
    }
}

impl Drop for Claims<'_> {
    fn drop(&mut self) {
        if let Ok(mut cache) = self.cache.lock() {
            for hash in &self.hashes {
                cache.release(*hash);
            }
        }
    }
}

fn lock(cache: &Mutex<VectorCache>) -> Result<std::sync::MutexGuard<'_, VectorCache>, IndexError> {
    cache.lock().map_err(|_| IndexError::CachePoisoned)
}
