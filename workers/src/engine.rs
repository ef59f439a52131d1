//! The engine: the one entry point the CLI and the router plugin share.
//!
//! `Engine::start` runs the actor system (coordinator, shard indexers, embedding pool) on a
//! thread of its own and loads a query-side model session. `publish` turns a catalog into
//! documents and a lexical index at once (so search answers lexically within moments), then
//! hands it to the coordinator for vectors. `search` reads the current generation: lexical
//! and vector candidates (both filtered by the caller's contract), fused, deprecated members
//! placed below their replacements, paged by signed cursors.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use actix::{Actor, Addr};
use lru::LruCache;
use wayfinder_supergraph::{Catalog, Contract, ContractFilter, MemberId};
use xxhash_rust::xxh3::Xxh3;

use crate::background::Background;
use crate::build::coordinator::{Coordinator, Reindex};
use crate::build::indexer::IndexerContext;
use crate::build::pool::{EmbedPool, Workers};
use crate::build::status::{IndexActivity, IndexReport, Progress, Shared, Swap};
use crate::config::{
    Admission, EngineConfig, Overload, BACKGROUND_QUEUE, BACKGROUND_THREADS_PER_CORE,
};
use crate::cursor::{CursorCodec, CursorError};
use crate::embed::cache::VectorCache;
use crate::embed::shared_store::{RedisCounts, SharedStore, SharedStoreError};
use crate::embed::{model_key, EmbedError, Embedder, Embedding, EXIT_WAIT};
use crate::index::document::documents;
use crate::index::generation::{Generation, SearchMode, ShardState};
use crate::index::lexical::{LexicalError, LexicalIndex};
use crate::index::spellings::{Spellings, Vocabulary};
use crate::index::thin::thin_names;
use crate::index::vector::VectorError;
use crate::index::visibility::Visibility;
pub use crate::rank::page::SearchHit;
use crate::rank::score::{Ranker, RankerError};
use crate::rank::{self, features, page, Params, ParamsError, RankError};
use crate::search_pool::{Overloaded, SearchPool, SpawnError};

/// Longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 1000;
/// Largest page (`first`) accepted.
pub const MAX_FIRST: usize = 100;
/// Contracts kept per catalog (one per distinct tenant filter).
const CONTRACTS_KEPT: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot start the engine thread: {0}")]
    Thread(#[from] SpawnError),
    #[error(transparent)]
    Lexical(#[from] LexicalError),
    #[error(transparent)]
    SharedStore(#[from] SharedStoreError),
    #[error(transparent)]
    Params(#[from] ParamsError),
    #[error(transparent)]
    Ranker(#[from] RankerError),
}

impl From<RankError> for SearchError {
    fn from(error: RankError) -> Self {
        match error {
            RankError::Lexical(error) => SearchError::Lexical(error),
            RankError::Vector(error) => SearchError::Vector(error),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("no schema has been indexed yet")]
    NotReady,
    #[error("`query` has {chars} characters; at most {max} are accepted")]
    QueryTooLong { chars: usize, max: usize },
    #[error("`first` is {first}; at most {max} results are returned per page")]
    FirstTooLarge { first: usize, max: usize },
    #[error("`minScore` must be a number between 0 and 1, got {0}")]
    MinScore(f64),
    #[error(transparent)]
    Cursor(#[from] CursorError),
    #[error(transparent)]
    Lexical(#[from] LexicalError),
    #[error(transparent)]
    Vector(#[from] VectorError),
    #[error("the search is refused: the gateway is busy with other searches ({0}); retry later")]
    Overloaded(Overloaded),
}

/// One `__search` call.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest<'a> {
    pub query: &'a str,
    pub first: usize,
    pub after: Option<&'a str>,
    pub min_score: Option<f64>,
    /// The caller's contract; `None` sees the whole API schema.
    pub contract: Option<&'a ContractFilter>,
    /// How long it may wait for a search thread, and what it does when it cannot have one.
    pub admission: Admission,
}

/// One question's candidates and their features ([`Engine::explain`]).
#[derive(Debug, Clone)]
pub struct Explained {
    pub coordinates: Vec<String>,
    pub rows: Vec<features::Row>,
}

/// A page of results with the generation they came from, so definitions and paths are read
/// from the same catalog the ranking used.
pub struct SearchResults {
    pub generation: u64,
    pub mode: SearchMode,
    pub hits: Vec<SearchHit>,
    pub catalog: Arc<Catalog>,
    /// What the caller's contract lets it see of `catalog`.
    pub visibility: Visibility,
    /// Set when the search could not have a search thread and was answered lexically
    /// ([`Overload::Lexical`]).
    pub overloaded: Option<Overloaded>,
    /// How many texts the search embedded or found in the query cache: the question, the
    /// phrases it lists and, ranked by the stages, the owner, answer and verb it names.
    pub texts: usize,
}

impl std::fmt::Debug for SearchResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchResults")
            .field("generation", &self.generation)
            .field("mode", &self.mode)
            .field("hits", &self.hits)
            .finish_non_exhaustive()
    }
}

impl SearchResults {
    /// Paths from a root to `member`, within the caller's contract.
    pub fn paths_to_root(&self, member: MemberId) -> Vec<Vec<String>> {
        self.visibility
            .paths_to_root(&self.catalog, member)
            .iter()
            .map(|path| {
                self.catalog
                    .path_coordinates(path)
                    .into_iter()
                    .map(str::to_string)
                    .collect()
            })
            .collect()
    }
}

/// What `publish` did before returning.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    pub publication: u64,
    /// The generation of the catalog's lexical index, answering now unless it waits for
    /// its vectors ([`Swap::WhenIndexed`]).
    pub generation: u64,
    pub documents: usize,
    /// From the call to lexical-ready.
    pub lexical_seconds: f64,
}

struct QueryEncoder {
    /// The search threads and their sessions.
    pool: SearchPool,
    embeddings: Mutex<LruCache<String, Arc<Embedding>>>,
    /// Texts `embeddings` had, and texts the model embedded, since the start.
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
    /// The words the model reads whole, for spelling out the clipped ones of a question.
    vocabulary: Arc<Vocabulary>,
}

pub struct Engine {
    shared: Arc<Shared>,
    background: Background,
    progress: Arc<Progress>,
    epoch: Instant,
    coordinator: Addr<Coordinator>,
    system: actix::System,
    thread: Option<JoinHandle<()>>,
    /// The embedding pool's threads, waited for on drop.
    embed_workers: Workers,
    query: Option<QueryEncoder>,
    model_error: Option<EmbedError>,
    cache_warning: Option<String>,
    cursors: CursorCodec,
    /// What besides the generation a cursor's state names: the model's key (0 without one)
    /// and the ranking params' fingerprint, since either ranks otherwise.
    cursor_key: u64,
    contracts: Mutex<(u64, HashMap<ContractFilter, Arc<Contract>>)>,
    /// How searches rank.
    params: Params,
    /// The fitted ranker, with a model (and `params.learned`).
    ranker: Option<Ranker>,
    /// The fleet's shared store, when configured (and a model loaded).
    shared_store: Option<Arc<SharedStore>>,
}

impl Engine {
    /// Starts the actors. A model that cannot be loaded is not an error here: the engine runs
    /// lexical-only and says why in [`Engine::model_error`] (and in the log).
    pub fn start(config: EngineConfig) -> Result<Engine, EngineError> {
        let epoch = Instant::now();
        let shared = Arc::new(Shared::default());
        let progress = Arc::new(Progress::default());

        if let Some(params) = &config.ranking {
            params.validate()?;
        }
        let workers = config.worker_threads();
        let loaded = model_key(&config.model).and_then(|key| {
            Embedder::load_for_questions(&config.model).map(|embedder| (key, embedder))
        });
        let loaded_key = loaded.as_ref().map_or(0, |(key, _)| *key);
        let (query, vectors_setup, model_error, cache_warning) = match loaded {
            Ok((key, embedder)) => {
                let dimension = embedder.dimension();
                let (cache, warning) = match &config.cache_dir {
                    Some(dir) => VectorCache::open(dir, key, dimension, config.cache_max_bytes),
                    None => (VectorCache::in_memory(dimension), None),
                };
                let warning = warning.map(|e| {
                    tracing::warn!(error = %e, "the vector cache was not read whole; what it lacks will be embedded again");
                    e.to_string()
                });
                let capacity =
                    NonZeroUsize::new(config.query_cache.max(1)).unwrap_or(NonZeroUsize::MIN);
                let vocabulary = Arc::new(embedder.whole_words());
                let pool = SearchPool::new(config.model.clone(), embedder, config.search_threads())
                    .map_err(EngineError::Thread)?;
                let query = QueryEncoder {
                    vocabulary,
                    pool,
                    embeddings: Mutex::new(LruCache::new(capacity)),
                    cache_hits: AtomicU64::new(0),
                    cache_misses: AtomicU64::new(0),
                };
                (
                    Some(query),
                    Ok((Arc::new(Mutex::new(cache)), dimension)),
                    None,
                    warning,
                )
            }
            Err(error) => {
                tracing::error!(%error, "no embedding model: search is lexical-only");
                (None, Err(error.clone()), Some(error), None)
            }
        };

        let (sender, receiver) = std::sync::mpsc::channel();
        let coordinator_shared = Arc::clone(&shared);
        let coordinator_progress = Arc::clone(&progress);
        let model = config.model.clone();
        let batch_size = config.batch_size;
        let graphs = config.cache_dir.clone();
        let searchers = config.search_threads();
        let embed_workers = Workers::default();
        let pool_workers = embed_workers.clone();
        let redis = config.redis.clone();
        let thread = std::thread::Builder::new()
            .name("wayfinder-engine".into())
            .spawn(move || {
                let system = actix::System::new();
                // The Redis client's connection tasks run on this thread's runtime, beside the
                // indexers that use it.
                let started = system.block_on(async move {
                    let shared_store = match (&redis, &vectors_setup) {
                        (Some(redis), Ok((_, dimension))) => {
                            match SharedStore::connect(redis, loaded_key, *dimension).await {
                                Ok(store) => Some(Arc::new(store)),
                                Err(error) => {
                                    let _ = sender.send(Err(EngineError::from(error)));
                                    return false;
                                }
                            }
                        }
                        _ => None,
                    };
                    // Without a model every shard is lexical-only, and says why.
                    let vectors = vectors_setup.map(|(cache, dimension)| IndexerContext {
                        shared_store: shared_store.clone(),
                        pool: Arc::new(EmbedPool::new(model, workers, &pool_workers)),
                        cache,
                        progress: coordinator_progress,
                        epoch,
                        dimension,
                        batch_size,
                        workers,
                        searchers,
                        graphs,
                    });
                    let coordinator = Coordinator {
                        shared: coordinator_shared,
                        vectors,
                        indexers: HashMap::new(),
                        built: HashMap::new(),
                        active: None,
                    }
                    .start();
                    let _ = sender.send(Ok((coordinator, actix::System::current(), shared_store)));
                    true
                });
                if started {
                    let _ = system.run();
                }
            })
            .map_err(|e| EngineError::Thread(SpawnError::EngineThread(e)))?;
        let (coordinator, system, shared_store) = receiver
            .recv()
            .map_err(|_| EngineError::Thread(SpawnError::EngineStopped))??;

        let params = config
            .ranking
            .clone()
            .unwrap_or_else(|| Params::for_model(loaded_key));
        let ranker = match &query {
            Some(_) if params.learned => Some(Ranker::load(params.ranker.as_deref())?),
            _ => None,
        };
        let background = Background::start(
            BACKGROUND_THREADS_PER_CORE * crate::config::available_cores(),
            BACKGROUND_QUEUE,
        )
        .map_err(EngineError::Thread)?;
        Ok(Engine {
            background,
            shared,
            progress,
            epoch,
            coordinator,
            system,
            thread: Some(thread),
            embed_workers,
            query,
            model_error,
            cache_warning,
            cursors: match &config.cursor_secret {
                Some(secret) => CursorCodec::new(secret).accepting(&config.previous_cursor_secrets),
                // Only a fleet needs a shared key; the router warns of its absence.
                None => CursorCodec::of_this_process(),
            },
            contracts: Mutex::new((0, HashMap::new())),
            cursor_key: loaded_key.rotate_left(17)
                ^ params.fingerprint()
                ^ ranker
                    .as_ref()
                    .map_or(0, |r| r.fingerprint().rotate_left(31)),
            params,
            ranker,
            shared_store,
        })
    }

    /// Whether the fleet's shared store is usable now (connected, no recent error); `None`
    /// without one.
    pub fn redis_available(&self) -> Option<bool> {
        self.shared_store.as_ref().map(|store| store.available())
    }

    /// What indexing has done since the start.
    pub fn index_activity(&self) -> IndexActivity {
        self.shared.status.activity()
    }

    /// (texts found in the question-embedding cache, texts the model embedded) since the
    /// start; `None` without a model.
    pub fn query_cache_counts(&self) -> Option<(u64, u64)> {
        let encoder = self.query.as_ref()?;
        Some((
            encoder.cache_hits.load(Ordering::Relaxed),
            encoder.cache_misses.load(Ordering::Relaxed),
        ))
    }

    /// What the fleet's shared store has answered since the start; `None` without one.
    pub fn redis_counts(&self) -> Option<RedisCounts> {
        self.shared_store.as_ref().map(|store| store.counts())
    }

    /// The state cursors name for `generation` (see [`Generation::state`]), with the model and
    /// the ranking params (other params rank otherwise).
    fn cursor_state(&self, generation: &Generation) -> u64 {
        generation.state() ^ self.cursor_key
    }

    /// How searches rank: the engine config's `ranking`, or the params measured for its model.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Low-priority threads for a caller's work around searches.
    pub fn background(&self) -> &Background {
        &self.background
    }

    /// Why there are no vectors, if the model could not be loaded.
    pub fn model_error(&self) -> Option<&EmbedError> {
        self.model_error.as_ref()
    }

    /// A cache file that could not be read at start (the engine began with an empty cache).
    pub fn cache_warning(&self) -> Option<&str> {
        self.cache_warning.as_deref()
    }

    /// Makes `catalog` searchable lexically now and starts making its vectors.
    pub fn publish(&self, catalog: Arc<Catalog>) -> Result<Published, EngineError> {
        self.publish_with(catalog, Swap::Immediately)
    }

    /// Indexes `catalog` and makes it searchable as `swap` says.
    pub fn publish_with(
        &self,
        catalog: Arc<Catalog>,
        swap: Swap,
    ) -> Result<Published, EngineError> {
        let started = Instant::now();
        let documents: Arc<[_]> = documents(&catalog, &self.params.priors).into();
        let lexical = Arc::new(LexicalIndex::build(&catalog, &documents)?);
        let keys: Arc<HashMap<u64, MemberId>> = Arc::new(
            documents
                .iter()
                .flat_map(|d| d.views.iter().map(|v| (v.key, d.member)))
                .collect(),
        );
        let vocabulary = self.query.as_ref().map(|q| Arc::clone(&q.vocabulary));
        let spellings = Arc::new(Spellings::of(&catalog, vocabulary));
        let thin_names = Arc::new(thin_names(
            &catalog,
            self.params.generic_argument_fields,
            |name| lexical.terms(name),
        ));
        // One pass over the documents, not one per subgraph (191 subgraphs x 22k documents).
        let mut shards = vec![ShardState::Empty; catalog.subgraphs().len()];
        for document in documents.iter() {
            if let Some(shard) = shards.get_mut(document.shard.index()) {
                *shard = ShardState::Building;
            }
        }
        let mut publication = 0;
        self.shared.status.update(|state| {
            state.published += 1;
            publication = state.published;
        });
        let generation = self.shared.next_generation();
        let swap = match self.current() {
            None => Swap::Immediately,
            Some(_) => swap,
        };
        if swap == Swap::Immediately {
            self.shared.install(Generation {
                id: generation,
                catalog: Arc::clone(&catalog),
                documents: Arc::clone(&documents),
                lexical: Arc::clone(&lexical),
                shards,
                keys: Arc::clone(&keys),
                mutation_views: Default::default(),
                token_frequencies: Default::default(),
                thin_names: Arc::clone(&thin_names),
                spellings: Arc::clone(&spellings),
                made: Instant::now(),
            });
        }
        let published = Published {
            publication,
            generation,
            documents: documents.len(),
            lexical_seconds: started.elapsed().as_secs_f64(),
        };
        self.coordinator.do_send(Reindex {
            publication,
            catalog,
            documents,
            lexical,
            keys,
            spellings,
            thin_names,
            started,
            swap,
            parent: tracing::Span::current(),
        });
        Ok(published)
    }

    /// Waits until `publication` (or a newer one) has its vectors; `None` on timeout.
    pub fn wait_indexed(&self, publication: u64, timeout: Duration) -> Option<IndexReport> {
        self.shared.status.wait_indexed(publication, timeout)
    }

    /// (texts embedded, texts to embed, texts per second) of the indexing run under way.
    pub fn progress(&self) -> (usize, usize, f64) {
        self.progress.snapshot(self.epoch)
    }

    pub fn current(&self) -> Option<Arc<Generation>> {
        self.shared.current()
    }

    /// One `__search` page. Each step is a `tracing` span (`wayfinder.lexical_search`,
    /// `wayfinder.embed`, `wayfinder.vector_search`, `wayfinder.merge`) under
    /// `wayfinder.search`, which records the generation, hits and whether vectors answered.
    pub fn search(&self, request: &SearchRequest<'_>) -> Result<SearchResults, SearchError> {
        let span = tracing::info_span!(
            "wayfinder.search",
            generation = tracing::field::Empty,
            hits = tracing::field::Empty,
            lexical_only = tracing::field::Empty,
            overloaded = tracing::field::Empty,
            contract = request.contract.is_some_and(|f| !f.is_unfiltered()),
        );
        let _entered = span.enter();
        let results = self.search_in_span(request)?;
        span.record("generation", results.generation);
        span.record("hits", results.hits.len());
        span.record("lexical_only", results.mode == SearchMode::Lexical);
        Ok(results)
    }

    fn search_in_span(&self, request: &SearchRequest<'_>) -> Result<SearchResults, SearchError> {
        let generation = self.current().ok_or(SearchError::NotReady)?;
        let chars = request.query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(SearchError::QueryTooLong {
                chars,
                max: MAX_QUERY_CHARS,
            });
        }
        if request.first > MAX_FIRST {
            return Err(SearchError::FirstTooLarge {
                first: request.first,
                max: MAX_FIRST,
            });
        }
        let min_score = match request.min_score {
            Some(m) if !(0.0..=1.0).contains(&m) => return Err(SearchError::MinScore(m)),
            m => m.unwrap_or(0.0) as f32,
        };
        let fingerprint = request_fingerprint(request);
        let lexical_fingerprint = fingerprint ^ LEXICAL_PAGES;
        let state = self.cursor_state(&generation);
        let (offset, lexical_pages) = match request.after {
            None => (0, false),
            Some(cursor) => match self.cursors.decode(cursor, state, fingerprint) {
                Ok(offset) => (offset, false),
                Err(CursorError::OtherSearch) => (
                    self.cursors.decode(cursor, state, lexical_fingerprint)?,
                    true,
                ),
                Err(error) => return Err(error.into()),
            },
        };
        let visibility = Visibility::of(
            request
                .contract
                .filter(|f| !f.is_unfiltered())
                .map(|filter| self.contract(&generation.catalog, filter)),
        );
        let page = Page {
            offset,
            min_score,
            fingerprint,
            visibility,
        };
        let lexically = |mut page: Page, overloaded: Option<Overloaded>| {
            page.fingerprint = lexical_fingerprint;
            let mut results = self.rank(request, &generation, page, None)?;
            results.mode = SearchMode::Lexical;
            results.overloaded = overloaded;
            Ok(results)
        };
        // The next page of an overloaded search is ranked as its first page was.
        if lexical_pages {
            return lexically(page, None);
        }
        // Lexical work alone runs where it was asked; work with the model and the vector
        // shards runs on a search thread, when one is free in time.
        let encoder = self
            .query
            .as_ref()
            .filter(|_| generation.has_vectors() && !request.query.trim().is_empty());
        let Some(encoder) = encoder else {
            return self.rank(request, &generation, page, None);
        };
        let admission = &request.admission;
        let ranked = encoder.pool.run(admission, |session| {
            self.rank(request, &generation, page.clone(), Some(session))
        });
        match ranked {
            Ok(results) => results,
            Err(overloaded) => match admission.overload {
                Overload::Refuse => Err(SearchError::Overloaded(overloaded)),
                // On the caller's thread: the router plugin calls from the engine's
                // low-priority background threads ([`Engine::background`]).
                Overload::Lexical => {
                    tracing::Span::current().record("overloaded", true);
                    lexically(page, Some(overloaded))
                }
            },
        }
    }

    /// Ranks `generation`'s members for `request`: with the model when a `session` is given
    /// (`Err` when none could be loaded), lexically without.
    fn rank(
        &self,
        request: &SearchRequest<'_>,
        generation: &Generation,
        page: Page,
        session: Option<Result<&mut Embedder, EmbedError>>,
    ) -> Result<SearchResults, SearchError> {
        let Page {
            offset,
            min_score,
            fingerprint,
            visibility,
        } = page;
        let params = &self.params;
        let depth = (offset + request.first).max(params.candidate_depth);
        let gathered = rank::gather(
            generation,
            request.query,
            depth,
            &visibility,
            params,
            self.ranker.is_some(),
            self.embed(session),
        )?;
        let mode = gathered.mode;
        let ranked = rank::order(
            generation,
            &gathered,
            self.ranker.as_ref(),
            &visibility,
            params,
        )?;
        let catalog = &generation.catalog;
        let state = self.cursor_state(generation);
        let hits = page::page(
            ranked,
            catalog,
            min_score,
            offset,
            request.first,
            |position| self.cursors.encode(state, position, fingerprint),
        );
        Ok(SearchResults {
            generation: generation.id,
            mode,
            hits,
            catalog: Arc::clone(catalog),
            visibility,
            overloaded: None,
            texts: gathered.texts,
        })
    }

    /// The candidates the ranking weighs for `query` over the whole API, each with its
    /// coordinate and its features ([`crate::rank::features`]), in fused order: what the
    /// learned ranker is fitted on (`wayfinder eval --features`).
    pub fn explain(&self, query: &str) -> Result<Explained, SearchError> {
        let generation = self.current().ok_or(SearchError::NotReady)?;
        match self.query.as_ref().filter(|_| generation.has_vectors()) {
            Some(encoder) => encoder
                .pool
                .run(&Admission::default(), |session| {
                    self.explain_with(&generation, query, Some(session))
                })
                .map_err(SearchError::Overloaded)?,
            None => self.explain_with(&generation, query, None),
        }
    }

    fn explain_with(
        &self,
        generation: &Generation,
        query: &str,
        session: Option<Result<&mut Embedder, EmbedError>>,
    ) -> Result<Explained, SearchError> {
        let visibility = Visibility::all();
        let depth = self.params.candidate_depth;
        let gathered = rank::gather(
            generation,
            query,
            depth,
            &visibility,
            &self.params,
            true,
            self.embed(session),
        )?;
        let (candidates, rows) = rank::features(generation, &gathered, &visibility, &self.params)?;
        Ok(Explained {
            coordinates: candidates
                .iter()
                .map(|c| generation.catalog.member(c.member).coordinate.clone())
                .collect(),
            rows,
        })
    }

    /// How a search with a `session` embeds what it reads ([`rank::gather`]).
    fn embed<'s>(
        &'s self,
        session: Option<Result<&'s mut Embedder, EmbedError>>,
    ) -> Option<Box<rank::Embed<'s>>> {
        session.map(|session| {
            Box::new(move |texts: &[Option<&str>]| self.query_embeddings(texts, session))
                as Box<rank::Embed<'s>>
        })
    }

    /// The vectors and content tokens of `texts` (a question and the phrases read from it), in
    /// order, from the LRU cache or the `session`, which embeds those not cached in one batch;
    /// `None` if the model fails (the search then goes on lexically).
    fn query_embeddings(
        &self,
        texts: &[Option<&str>],
        session: Result<&mut Embedder, EmbedError>,
    ) -> Option<Vec<Option<Arc<Embedding>>>> {
        let encoder = self.query.as_ref()?;
        let span = tracing::info_span!("wayfinder.embed", cached = tracing::field::Empty);
        let _entered = span.enter();
        let mut found: Vec<Option<Arc<Embedding>>> = {
            let mut cache = lock(&encoder.embeddings);
            texts
                .iter()
                .map(|text| text.and_then(|text| cache.get(text).cloned()))
                .collect()
        };
        let mut missing: Vec<&str> = texts
            .iter()
            .zip(&found)
            .filter_map(|(text, found)| text.filter(|_| found.is_none()))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        span.record("cached", missing.is_empty());
        let hits = found.iter().filter(|f| f.is_some()).count();
        encoder.cache_hits.fetch_add(hits as u64, Ordering::Relaxed);
        encoder
            .cache_misses
            .fetch_add(missing.len() as u64, Ordering::Relaxed);
        if missing.is_empty() {
            return Some(found);
        }
        let embedded = match session.and_then(|session| session.embed_queries(&missing)) {
            Ok(embedded) => embedded,
            Err(error) => {
                tracing::warn!(%error, "cannot embed the query; answering lexically");
                return None;
            }
        };
        let mut cache = lock(&encoder.embeddings);
        for (text, embedding) in missing.into_iter().zip(embedded) {
            let embedding = Arc::new(embedding);
            for (slot, _) in found
                .iter_mut()
                .zip(texts)
                .filter(|(_, t)| **t == Some(text))
            {
                *slot = Some(Arc::clone(&embedding));
            }
            cache.put(text.to_string(), embedding);
        }
        Some(found)
    }

    fn contract(&self, catalog: &Catalog, filter: &ContractFilter) -> Arc<Contract> {
        let mut contracts = lock(&self.contracts);
        if contracts.0 != catalog.content_hash() || contracts.1.len() >= CONTRACTS_KEPT {
            *contracts = (catalog.content_hash(), HashMap::new());
        }
        Arc::clone(
            contracts
                .1
                .entry(filter.clone())
                .or_insert_with(|| Arc::new(catalog.contract(filter))),
        )
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.system.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // The stopped system dropped the pool's address, so each worker leaves once its current
        // batch or session load is done; one still inside ONNX Runtime when the process exits
        // would crash it.
        if !self.embed_workers.wait_stopped(EXIT_WAIT) {
            tracing::warn!(
                seconds = EXIT_WAIT.as_secs(),
                "embedding workers still running after the engine stopped"
            );
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Cursors of pages answered lexically because the search was overloaded are bound to the
/// request's fingerprint with these bits flipped, so the next page is ranked the same way
/// rather than read as an offset into the model's ranking.
const LEXICAL_PAGES: u64 = 0x6c65_7869_6361_6c21;

/// Where a page starts and what it may show, read from a request before ranking.
#[derive(Clone)]
struct Page {
    offset: usize,
    min_score: f32,
    fingerprint: u64,
    visibility: Visibility,
}

/// What a cursor is bound to: the same words, minimum score and contract.
fn request_fingerprint(request: &SearchRequest<'_>) -> u64 {
    let mut hasher = Xxh3::new();
    hasher.update(request.query.trim().as_bytes());
    hasher.update(&request.min_score.unwrap_or(0.0).to_le_bytes());
    if let Some(filter) = request.contract {
        for tag in &filter.include_tags {
            hasher.update(b"+");
            hasher.update(tag.as_bytes());
        }
        for tag in &filter.exclude_tags {
            hasher.update(b"-");
            hasher.update(tag.as_bytes());
        }
    }
    hasher.digest()
}
