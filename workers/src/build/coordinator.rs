//! The coordinator: receives each published catalog, diffs its shards against what is already
//! built, and sends only the changed ones to their subgraph's indexer actor.
//!
//! A shard's identity is a hash over its documents' view keys and view hashes, so a change in
//! any text a view is made of (a member's own description, or the summary of a type it
//! returns and blends in) marks it changed, and an untouched shard is reused as it is. The
//! coordinator publishes a generation as soon as it has decided (reused shards answer with
//! vectors at once, changed ones lexically) and another when the last changed shard is done;
//! a newer catalog simply supersedes an older one still being indexed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use actix::{
    Actor, ActorFutureExt as _, Addr, AsyncContext as _, Context, Handler, Message, Supervisor,
    WrapFuture as _,
};
use wayfinder_supergraph::{Catalog, MemberId};
use xxhash_rust::xxh3::Xxh3;

use crate::embed::cache::save_unsaved;
use crate::embed::EmbedError;
use crate::index::document::{distinct_texts, Document};

use crate::build::indexer::{BuildShard, IndexError, IndexerContext, ShardBuilt, ShardIndexer};
use crate::build::status::IndexReport;
use crate::build::status::{Shared, Swap};
use crate::index::generation::{Generation, ShardState};
use crate::index::lexical::LexicalIndex;
use crate::index::spellings::Spellings;
use crate::index::thin::ThinNames;
use crate::index::vector::VectorShard;

/// A catalog to index, with what the engine already built for it synchronously.
pub(crate) struct Reindex {
    pub publication: u64,
    pub catalog: Arc<Catalog>,
    pub documents: Arc<[Document]>,
    pub lexical: Arc<LexicalIndex>,
    pub keys: Arc<HashMap<u64, MemberId>>,
    pub spellings: Arc<Spellings>,
    pub thin_names: Arc<ThinNames>,
    pub started: Instant,
    pub swap: Swap,
    /// The publisher's span, parent of each shard's indexing span.
    pub parent: tracing::Span,
}

impl Message for Reindex {
    type Result = ();
}

pub(crate) struct Coordinator {
    pub shared: Arc<Shared>,
    /// `Err` holds why no vectors can be made (the model did not load): every shard is then
    /// lexical-only.
    pub vectors: Result<IndexerContext, EmbedError>,
    pub indexers: HashMap<String, Addr<ShardIndexer>>,
    /// The newest shard built per subgraph name, with the hash of the documents it holds.
    pub built: HashMap<String, (u64, Arc<VectorShard>)>,
    pub active: Option<Publication>,
}

pub(crate) struct Publication {
    request: Reindex,
    shards: Vec<ShardState>,
    hashes: Vec<u64>,
    pending: usize,
    report: IndexReport,
}

impl Actor for Coordinator {
    type Context = Context<Self>;
}

impl Handler<Reindex> for Coordinator {
    type Result = ();

    fn handle(&mut self, request: Reindex, ctx: &mut Context<Self>) {
        let catalog = Arc::clone(&request.catalog);
        let swap = request.swap;
        let subgraphs = catalog.subgraphs();
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); subgraphs.len()];
        for (i, document) in request.documents.iter().enumerate() {
            if let Some(group) = groups.get_mut(document.shard.index()) {
                group.push(i);
            }
        }
        let texts: Vec<usize> = groups
            .iter()
            .map(|members| distinct_texts(&request.documents, members).len())
            .collect();
        let mut report = IndexReport {
            publication: request.publication,
            documents: request.documents.len(),
            texts: texts.iter().sum(),
            shards: groups.iter().filter(|g| !g.is_empty()).count(),
            ..IndexReport::default()
        };
        if let Ok(context) = &self.vectors {
            context.progress.begin(context.epoch);
        }
        let mut shards = Vec::with_capacity(groups.len());
        let mut hashes = Vec::with_capacity(groups.len());
        for ((subgraph, members), texts) in subgraphs.iter().zip(groups).zip(texts) {
            let hash = shard_hash(&request.documents, &members);
            hashes.push(hash);
            if members.is_empty() {
                shards.push(ShardState::Empty);
                continue;
            }
            if let Some((built_hash, shard)) = self.built.get(&subgraph.name) {
                if *built_hash == hash {
                    report.reused += texts;
                    shards.push(ShardState::Ready(Arc::clone(shard)));
                    continue;
                }
            }
            let context = match &self.vectors {
                Ok(context) => context.clone(),
                Err(reason) => {
                    let reason = reason.to_string();
                    shards.push(ShardState::Failed(Arc::from(reason.as_str())));
                    report.failed_shards.push((subgraph.name.clone(), reason));
                    continue;
                }
            };
            shards.push(ShardState::Building);
            report.shards_rebuilt += 1;
            let indexer = self
                .indexers
                .entry(subgraph.name.clone())
                .or_insert_with(|| {
                    let name = subgraph.name.clone();
                    Supervisor::start(move |_| ShardIndexer { name, context })
                });
            let build = indexer.send(BuildShard {
                documents: Arc::clone(&request.documents),
                members,
                previous: self
                    .built
                    .get(&subgraph.name)
                    .map(|(_, shard)| Arc::clone(shard)),
                parent: request.parent.clone(),
            });
            let (publication, name, index) =
                (request.publication, subgraph.name.clone(), shards.len() - 1);
            ctx.spawn(build.into_actor(self).map(move |reply, coordinator, _| {
                let result = reply.unwrap_or_else(|e| Err(IndexError::IndexerGone(e)));
                coordinator.shard_done(publication, index, name, hash, result);
            }));
        }
        let pending = shards
            .iter()
            .filter(|s| matches!(s, ShardState::Building))
            .count();
        tracing::info!(
            publication = request.publication,
            documents = report.documents,
            shards = report.shards,
            rebuilt = pending,
            "catalog received"
        );
        self.active = Some(Publication {
            request,
            shards,
            hashes,
            pending,
            report,
        });
        if pending == 0 {
            self.install();
            self.finish();
        } else if swap == Swap::Immediately {
            self.install(); // the reused shards answer with vectors while the rest are built
        }
    }
}

impl Coordinator {
    fn shard_done(
        &mut self,
        publication: u64,
        index: usize,
        name: String,
        hash: u64,
        result: Result<ShardBuilt, IndexError>,
    ) {
        let state = match result {
            Ok(built) => {
                let shard = Arc::clone(&built.shard);
                self.built.insert(name.clone(), (hash, built.shard));
                if let Some(active) = self
                    .active
                    .as_mut()
                    .filter(|a| a.request.publication == publication)
                {
                    active.report.embedded += built.embedded;
                    active.report.reused += built.reused;
                    active.report.from_redis += built.from_redis;
                }
                ShardState::Ready(shard)
            }
            Err(error) => {
                tracing::error!(shard = %name, %error, "indexing failed; the shard stays lexical-only");
                let error = error.to_string();
                if let Some(active) = self
                    .active
                    .as_mut()
                    .filter(|a| a.request.publication == publication)
                {
                    active.report.failed_shards.push((name, error.clone()));
                }
                ShardState::Failed(Arc::from(error))
            }
        };
        let Some(active) = self
            .active
            .as_mut()
            .filter(|a| a.request.publication == publication)
        else {
            return; // superseded by a newer catalog; the built shard is kept for reuse
        };
        if active.hashes.get(index) == Some(&hash)
            && matches!(active.shards[index], ShardState::Building)
        {
            active.shards[index] = state;
            active.pending -= 1;
            if active.pending == 0 {
                self.install();
                self.finish();
            }
        }
    }

    /// Makes the active publication's current state the searchable generation.
    fn install(&mut self) {
        let Some(active) = &self.active else { return };
        let id = self.shared.next_generation();
        let request = &active.request;
        self.shared.install(Generation {
            id,
            catalog: Arc::clone(&request.catalog),
            documents: Arc::clone(&request.documents),
            lexical: Arc::clone(&request.lexical),
            shards: active.shards.clone(),
            keys: Arc::clone(&request.keys),
            mutation_views: Default::default(),
            token_frequencies: Default::default(),
            thin_names: Arc::clone(&request.thin_names),
            spellings: Arc::clone(&request.spellings),
            made: Instant::now(),
        });
    }

    /// The active publication is fully indexed: save the cache, report, wake waiters.
    fn finish(&mut self) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let mut report = std::mem::take(&mut active.report);
        // The publisher's span lasts as long as the indexing it parents.
        active.request.parent = tracing::Span::none();
        report.generation = self.shared.current_generation();
        if let Ok(context) = &self.vectors {
            // A failure is logged as part of the cache-writes episode.
            if let Err(error) = save_unsaved(&context.cache, 1) {
                report.warnings.push(error.to_string());
            }
        }
        report.seconds = active.request.started.elapsed().as_secs_f64();
        tracing::info!(
            publication = report.publication,
            generation = report.generation,
            documents = report.documents,
            embedded = report.embedded,
            reused = report.reused,
            from_redis = report.from_redis,
            failed_shards = report.failed_shards.len(),
            seconds = report.seconds,
            "index ready"
        );
        let publication = report.publication;
        self.shared.status.update(|state| {
            state.indexed = state.indexed.max(publication);
            state.runs += 1;
            state.embedded += report.embedded as u64;
            state.report = Some(report);
        });
    }
}

/// Identity of a shard's content: its documents' view keys and hashes, in catalog order.
fn shard_hash(documents: &[Document], members: &[usize]) -> u64 {
    let mut hasher = Xxh3::new();
    for &i in members {
        for view in &documents[i].views {
            hasher.update(&view.key.to_le_bytes());
            hasher.update(&view.hash.to_le_bytes());
        }
    }
    hasher.digest()
}
