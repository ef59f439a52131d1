//! Embedding: texts to vectors with a local ONNX model, and the stores that keep them.
//!
//! The [`model`] owns the ONNX sessions and the runtime gate that closes before the process
//! exits ([`onnx_graph`] rewrites the model's graph before it loads, adding its fitted
//! [`tuning`]); [`tokens`] are the
//! contextual vectors of a text's content words; [`math`] the vector arithmetic every user
//! shares. Vectors are kept by text in the persistent [`cache`] and, across a fleet, in the
//! [`shared_store`], so nothing is embedded twice.

pub mod cache;
pub mod math;
pub mod model;
pub(crate) mod onnx_graph;
pub mod shared_store;
pub mod tokens;
pub mod tuning;

pub(crate) use model::release_free_memory;
pub use model::{
    close_runtime, model_key, EmbedError, Embedder, Embedding, ModelConfig, ModelTuning, Pooling,
    EXIT_WAIT,
};
