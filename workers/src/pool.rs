//! The embedding pool: an actix `SyncArbiter` of worker threads, each with its own ONNX
//! session (sessions run with `&mut self`, so threads do not share one).
//!
//! Supervision: a worker whose model call fails stops itself, and the arbiter starts a fresh
//! one from the factory (a new session) for the next batch; the failed batch reports its error
//! to the indexer that sent it. A model that cannot load at all leaves every worker answering
//! with that load error, so indexing fails cleanly and search stays lexical.

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

/// Starts `threads` workers, each loading `model` with one intra-op thread.
pub fn start(model: ModelConfig, threads: usize) -> Addr<EmbedWorker> {
    SyncArbiter::start(threads.max(1), move || EmbedWorker {
        embedder: Embedder::load(&model, 1).inspect_err(|error| {
            tracing::error!(%error, "embedding worker cannot load the model");
        }),
    })
}
