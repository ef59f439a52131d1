//! The embedding pool: an actix `SyncArbiter` of worker threads, each with its own ONNX
//! session (sessions run with `&mut self`, so threads do not share one).
//!
//! Supervision: a worker whose model call fails stops itself, and the arbiter starts a fresh
//! one from the factory (a new session) for the next batch; the failed batch reports its error
//! to the indexer that sent it. A model that cannot load at all leaves every worker answering
//! with that load error, so indexing fails cleanly and search stays lexical.
//!
//! Lifetime: the workers are started when a shard build first needs them and stopped when the
//! last build holding them ends ([`EmbedPool::lease`]): each drops its session and gives the
//! memory back to the system, so a router that is not indexing holds no indexing session. They run at a lower
//! priority than the router's own threads ([`crate::config::BACKGROUND_NICENESS`]), so a reload
//! under load does not slow ordinary requests.
//!
//! Shutdown: the arbiter's threads cannot be joined, and one may still be loading or running a
//! session after the actor system stops. ONNX Runtime's globals are destroyed when the process
//! exits, so a worker still inside it then crashes the process: [`Workers::wait_stopped`] lets
//! the engine wait for every worker to leave before it is dropped, and a process that never
//! drops its engine (the router keeps it in a static) closes the runtime before it exits
//! ([`crate::embed::close_runtime`]).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::{Actor, ActorContext as _, Addr, Handler, Message, SyncArbiter, SyncContext};

use crate::config::ModelConfig;
use crate::embed::{release_free_memory, EmbedError, Embedder, Embedding};

/// Texts to embed, shortest first ideally; answered with one embedding per text, in order.
pub struct EmbedTexts(pub Vec<String>);

impl Message for EmbedTexts {
    type Result = Result<Vec<Embedding>, EmbedError>;
}

pub struct EmbedWorker {
    embedder: Result<Embedder, EmbedError>,
}

impl Actor for EmbedWorker {
    type Context = SyncContext<Self>;

    fn stopped(&mut self, _: &mut SyncContext<Self>) {
        self.embedder = Err(EmbedError::Closed);
        release_free_memory();
    }
}

impl Handler<EmbedTexts> for EmbedWorker {
    type Result = Result<Vec<Embedding>, EmbedError>;

    fn handle(&mut self, message: EmbedTexts, ctx: &mut SyncContext<Self>) -> Self::Result {
        let embedder = match &mut self.embedder {
            Ok(embedder) => embedder,
            Err(error) => return Err(error.clone()),
        };
        let texts: Vec<&str> = message.0.iter().map(String::as_str).collect();
        let result = embedder.embed_with_tokens(&texts);
        if let Err(error) = &result {
            tracing::warn!(%error, "embedding worker failed; restarting it with a new session");
            ctx.stop();
        }
        result
    }
}

/// Tells whether a pool's worker threads are gone: each holds the pool's factory, and the
/// factory holds a clone of this token.
#[derive(Debug, Clone, Default)]
pub struct Workers(Arc<()>);

impl Workers {
    /// Waits until every worker thread of the pool started with this token has left its
    /// session (the actor system must be stopping, or they never will); `false` on timeout.
    pub fn wait_stopped(&self, timeout: Duration) -> bool {
        let started = Instant::now();
        while Arc::strong_count(&self.0) > 1 {
            if started.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

/// The embedding workers of an engine, started on demand and stopped when no build needs them.
pub struct EmbedPool {
    model: ModelConfig,
    threads: usize,
    workers: Workers,
    /// The running workers and how many leases hold them.
    running: Mutex<(usize, Option<Addr<EmbedWorker>>)>,
}

/// A shard build's hold on the workers; the last one dropped lets them stop once the batches
/// already sent are done.
pub struct Lease<'a> {
    pool: &'a EmbedPool,
    pub workers: Addr<EmbedWorker>,
}

impl EmbedPool {
    pub fn new(model: ModelConfig, threads: usize, workers: &Workers) -> Self {
        EmbedPool {
            model,
            threads: threads.max(1),
            workers: workers.clone(),
            running: Mutex::new((0, None)),
        }
    }

    /// The running workers, started now if they are not (call it inside the actor system).
    pub fn lease(&self) -> Lease<'_> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.0 += 1;
        let workers = running
            .1
            .get_or_insert_with(|| start(self.model.clone(), self.threads, &self.workers))
            .clone();
        Lease {
            pool: self,
            workers,
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut running = self.pool.running.lock().unwrap_or_else(|p| p.into_inner());
        running.0 -= 1;
        if running.0 == 0 {
            running.1 = None;
        }
    }
}

/// Starts `threads` workers, each loading `model` with one intra-op thread.
fn start(model: ModelConfig, threads: usize, workers: &Workers) -> Addr<EmbedWorker> {
    let alive = Arc::clone(&workers.0);
    SyncArbiter::start_with_thread_builder(
        threads,
        || std::thread::Builder::new().name("wayfinder-embed".into()),
        move || {
            // Names the token, so the factory, which every worker thread holds, owns a clone.
            let _alive = &alive;
            crate::search_pool::lower_priority();
            EmbedWorker {
                embedder: Embedder::load(&model, 1).inspect_err(|error| {
                    tracing::error!(%error, "embedding worker cannot load the model");
                }),
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_ends_when_every_holder_of_the_token_is_gone() {
        let workers = Workers::default();
        let held = Arc::clone(&workers.0);
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(held);
        });
        assert!(workers.wait_stopped(Duration::from_secs(10)));
        worker.join().unwrap();

        let _still_held = Arc::clone(&workers.0);
        assert!(!workers.wait_stopped(Duration::from_millis(20)));
    }
}
