//! The embedding pool: an actix `SyncArbiter` of worker threads, each with its own ONNX
//! session (sessions run with `&mut self`, so threads do not share one).
//!
//! Supervision: a worker whose model call fails stops itself, and the arbiter starts a fresh
//! one from the factory (a new session) for the next batch; the failed batch reports its error
//! to the indexer that sent it. A model that cannot load at all leaves every worker answering
//! with that load error, so indexing fails cleanly and search stays lexical.
//!
//! Shutdown: the arbiter's threads cannot be joined, and one may still be loading or running a
//! session after the actor system stops. ONNX Runtime's globals are destroyed when the process
//! exits, so a worker still inside it then crashes the process: [`Workers::wait_stopped`] lets
//! the engine wait for every worker to leave before it is dropped, and a process that never
//! drops its engine (the router keeps it in a static) closes the runtime before it exits
//! ([`crate::embed::close_runtime`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, ActorContext as _, Addr, Handler, Message, SyncArbiter, SyncContext};

use crate::config::ModelConfig;
use crate::embed::{EmbedError, Embedder, Embedding};

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

/// Starts `threads` workers, each loading `model` with one intra-op thread.
pub fn start(model: ModelConfig, threads: usize, workers: &Workers) -> Addr<EmbedWorker> {
    let alive = Arc::clone(&workers.0);
    SyncArbiter::start_with_thread_builder(
        threads.max(1),
        || std::thread::Builder::new().name("wayfinder-embed".into()),
        move || {
            // Names the token, so the factory, which every worker thread holds, owns a clone.
            let _alive = &alive;
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
