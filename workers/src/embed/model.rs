//! Embedding: texts to unit vectors with a local ONNX sentence-embedding model.
//!
//! One [`Embedder`] owns one ONNX Runtime session (sessions run with `&mut self`), so each
//! worker thread of the pool and the query path hold their own. Texts are tokenized one by one,
//! padded to the longest in the batch (callers sort by length so padding stays small), run, and
//! pooled over the attention mask, then L2-normalised so a dot product is a cosine. The same
//! pass keeps the contextual vectors of the text's content tokens ([`crate::embed::tokens`]).
//!
//! Exit: ONNX Runtime's globals are destroyed by the process's exit handlers, and a thread
//! still inside the runtime then crashes the process. Every call into it (loading, running,
//! releasing a session) passes a gate that [`close_runtime`] shuts before the process exits:
//! it waits for the calls in flight, and later ones fail with [`EmbedError::Closed`] without
//! touching the runtime.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ort::session::Session;
use ort::value::Tensor;
use serde::{Deserialize, Serialize};
use tokenizers::{Tokenizer, TruncationParams};
use xxhash_rust::xxh3::Xxh3;

use crate::embed::math::normalize;
use tantivy::tokenizer::{Language, LowerCaser, RawTokenizer, StopWordFilter, TextAnalyzer};

use crate::embed::onnx_graph::{self, GraphError, Rewrites, Rewritten};
use crate::embed::tokens::TokenVectors;
use crate::embed::tuning::{self, Tuning, TuningError};

/// Tunings fitted for known model files (bench/fit/tune.py), each added to the file it names
/// and to no other ([`ModelTuning::BuiltIn`]): all-MiniLM-L6-v2 (int8) tuned on the corpus.
const BUILT_IN_TUNINGS: &[&[u8]] = &[include_bytes!(
    "fitted/all-MiniLM-L6-v2-int8.tuning.safetensors"
)];

/// How token vectors become one text vector.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// Mean over the tokens the attention mask keeps (sentence-transformers models).
    #[default]
    Mean,
    /// The first token's vector (BERT-style `[CLS]` models such as bge).
    Cls,
}

/// An ONNX sentence-embedding model.
// Also router.yaml's `index.model`, so the field docs below are the JSON schema's descriptions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The model file: inputs `input_ids`, `attention_mask` (and `token_type_ids` if it has
    /// them), output `[batch, tokens, dimension]`.
    pub onnx: PathBuf,
    /// Its Hugging Face `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// Width of its vectors.
    pub dimension: usize,
    /// `mean` (sentence-transformers) or `cls` (bge-style).
    #[serde(default)]
    pub pooling: Pooling,
    /// Texts are cut to this many tokens.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: usize,
    /// Prepended to every query (e5/bge-style models expect one).
    #[serde(default)]
    pub query_prefix: String,
    /// A tuning of its weights fitted on a question corpus for this very file
    /// (`bench/fit/tune.py`; docs/RANKING.md), or `none` for the file's weights as they are.
    /// Default: the built-in tuning when the file is the default model's, none otherwise.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub tuning: ModelTuning,
    /// The ONNX Runtime library (1.31 or newer). Default: the one in `home`.
    // Optional because its default depends on a sibling setting (`index.home`), which the
    // plugin and the CLI resolve; [`ModelConfig::default_in`] sets it.
    #[serde(default)]
    pub runtime: Option<PathBuf>,
}

/// Which tuning ([`crate::embed::tuning`]) a model loads with; in settings, no value for
/// [`ModelTuning::BuiltIn`], `none` for [`ModelTuning::Untuned`], else a file's path.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "Option<String>", into = "Option<String>")]
pub enum ModelTuning {
    /// The built-in tuning fitted for this file, if there is one; the file as it is otherwise.
    #[default]
    BuiltIn,
    /// The file as it is (to measure or refit against the model untuned).
    Untuned,
    /// A tuning file fitted for this model file.
    File(PathBuf),
}

impl From<Option<String>> for ModelTuning {
    fn from(setting: Option<String>) -> Self {
        setting
            .as_deref()
            .map_or(ModelTuning::BuiltIn, ModelTuning::named)
    }
}

impl From<ModelTuning> for Option<String> {
    fn from(tuning: ModelTuning) -> Self {
        match tuning {
            ModelTuning::BuiltIn => None,
            ModelTuning::Untuned => Some("none".into()),
            ModelTuning::File(path) => Some(path.to_string_lossy().into_owned()),
        }
    }
}

impl ModelTuning {
    /// The tuning a setting names: `none` for [`ModelTuning::Untuned`], else a file's path
    /// (router.yaml's `index.model.tuning`, `--model-tuning`).
    pub fn named(setting: &str) -> ModelTuning {
        match setting {
            "none" => ModelTuning::Untuned,
            path => ModelTuning::File(path.into()),
        }
    }
}

fn default_max_tokens() -> usize {
    256
}

impl ModelConfig {
    /// The model and runtime that `scripts/setup` fetches into `home` (`.wayfinder/` by default):
    /// all-MiniLM-L6-v2 with int8 weights, 384 dimensions, mean pooling.
    pub fn default_in(home: &Path) -> Self {
        let model = home.join("models/all-MiniLM-L6-v2-int8");
        ModelConfig {
            runtime: Some(home.join("lib/libonnxruntime.so.1.31.1")),
            onnx: model.join("model.onnx"),
            tokenizer: model.join("tokenizer.json"),
            pooling: Pooling::Mean,
            dimension: 384,
            max_tokens: default_max_tokens(),
            query_prefix: String::new(),
            tuning: ModelTuning::BuiltIn,
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    #[error("cannot load the ONNX Runtime library {path}: {message}")]
    Runtime { path: PathBuf, message: String },
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot load the model {path}: {message}")]
    Model { path: PathBuf, message: String },
    #[error("cannot load the tokenizer {path}: {message}")]
    Tokenizer { path: PathBuf, message: String },
    #[error("the model {path} gives vectors of width {actual}, the configuration says {expected}")]
    Dimension {
        path: PathBuf,
        expected: usize,
        actual: usize,
    },
    #[error("cannot tune the model {model} with {tuning}: {error}")]
    Tuning {
        model: PathBuf,
        tuning: String,
        error: TuningError,
    },
    #[error("embedding failed: {0}")]
    Inference(String),
    #[error("ONNX Runtime is closed: the process is exiting")]
    Closed,
}

/// Calls into ONNX Runtime under way, and whether [`close_runtime`] has shut the gate.
struct Gate {
    calls: usize,
    closed: bool,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    calls: 0,
    closed: false,
});
/// Signalled when the last call in flight leaves.
static GATE_IDLE: Condvar = Condvar::new();

fn gate() -> MutexGuard<'static, Gate> {
    GATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One call into ONNX Runtime: the runtime stays open until it is dropped.
pub(crate) struct RuntimeCall;

impl RuntimeCall {
    pub(crate) fn enter() -> Result<Self, EmbedError> {
        let mut gate = gate();
        if gate.closed {
            return Err(EmbedError::Closed);
        }
        gate.calls += 1;
        Ok(RuntimeCall)
    }
}

impl Drop for RuntimeCall {
    fn drop(&mut self) {
        let mut gate = gate();
        gate.calls -= 1;
        if gate.calls == 0 {
            GATE_IDLE.notify_all();
        }
    }
}

/// Longest a process waits at exit for the threads inside ONNX Runtime (a batch being embedded
/// or a session being loaded).
pub const EXIT_WAIT: Duration = Duration::from_secs(30);

/// Shuts ONNX Runtime for the rest of the process and waits up to `timeout` for the calls in
/// flight to leave it; true if none is left. Later calls fail with [`EmbedError::Closed`], and
/// sessions dropped afterwards are leaked rather than released. Call it when the process is
/// about to exit: the runtime's globals are destroyed by the exit handlers, and a thread still
/// inside the runtime then crashes the process.
pub fn close_runtime(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut gate = gate();
    gate.closed = true;
    while gate.calls > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        gate = GATE_IDLE
            .wait_timeout(gate, left)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0;
    }
    true
}

/// The ONNX Runtime library can be loaded once per process; every later session reuses it.
static RUNTIME: OnceLock<Mutex<Option<(PathBuf, ort::environment::Environment)>>> = OnceLock::new();

pub(crate) fn environment(library: &Path) -> Result<ort::environment::Environment, EmbedError> {
    let runtime_error = |message: String| EmbedError::Runtime {
        path: library.to_path_buf(),
        message,
    };
    let slot = RUNTIME.get_or_init(|| Mutex::new(None));
    let mut slot = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((loaded, environment)) = slot.as_ref() {
        if loaded != library {
            return Err(runtime_error(format!(
                "this process already runs ONNX Runtime from {}",
                loaded.display()
            )));
        }
        return Ok(environment.clone());
    }
    if !library.is_file() {
        return Err(runtime_error(
            "no such file (run scripts/setup to fetch it)".into(),
        ));
    }
    let environment = ort::init_from(library)
        .map_err(|e| runtime_error(e.to_string()))?
        .with_name("wayfinder")
        .build()
        .map_err(|e| runtime_error(e.to_string()))?;
    *slot = Some((library.to_path_buf(), environment.clone()));
    Ok(environment)
}

/// The tuning `config` loads its model with, given the model file's `bytes`.
fn tuning_for(config: &ModelConfig, bytes: &[u8]) -> Result<Option<Tuning>, EmbedError> {
    if config.tuning == ModelTuning::Untuned {
        return Ok(None);
    }
    let hash = tuning::model_hash(bytes);
    let ModelTuning::File(path) = &config.tuning else {
        return Ok(BUILT_IN_TUNINGS.iter().find_map(|tuning_bytes| {
            let tuning = Tuning::from_bytes(tuning_bytes).ok()?;
            tuning.check_base(&hash).ok()?;
            Some(tuning)
        }));
    };
    let file = std::fs::read(path).map_err(|e| EmbedError::Read {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let tuning = Tuning::from_bytes(&file).map_err(|e| tuning_error(config, e))?;
    tuning
        .check_base(&hash)
        .map_err(|e| tuning_error(config, e))?;
    Ok(Some(tuning))
}

/// `error` of `config`'s tuning, naming the model and the tuning.
fn tuning_error(config: &ModelConfig, error: TuningError) -> EmbedError {
    EmbedError::Tuning {
        model: config.onnx.clone(),
        tuning: match &config.tuning {
            ModelTuning::File(path) => path.display().to_string(),
            _ => "the built-in tuning".into(),
        },
        error,
    }
}

/// The model of `config`, tuned, with `rewrites` ([`onnx_graph`]) applied, or `None` when none
/// applies or the file cannot be read as ONNX here (ONNX Runtime, which reads more formats, then
/// loads the file itself). A tuning that cannot be applied is an error.
fn rewritten_model(
    config: &ModelConfig,
    rewrites: Rewrites,
) -> Result<Option<Rewritten>, EmbedError> {
    let Ok(bytes) = std::fs::read(&config.onnx) else {
        return Ok(None);
    };
    let tuning = tuning_for(config, &bytes)?;
    match onnx_graph::rewrite(&bytes, rewrites, tuning.as_ref()) {
        Ok(rewritten) => Ok(rewritten),
        Err(GraphError::Tuning(error)) => Err(tuning_error(config, error)),
        Err(e) if tuning.is_some() => Err(EmbedError::Model {
            path: config.onnx.clone(),
            message: e.to_string(),
        }),
        Err(e) => {
            tracing::debug!(model = %config.onnx.display(), error = %e, "model left as it is");
            Ok(None)
        }
    }
}

/// Identifies what a vector was made by: the model file, its tokenizer and the settings that
/// change the output. The vector cache is keyed by it.
pub fn model_key(config: &ModelConfig) -> Result<u64, EmbedError> {
    let mut hasher = Xxh3::new();
    let read = |path: &PathBuf| {
        std::fs::read(path).map_err(|e| EmbedError::Read {
            path: path.clone(),
            message: e.to_string(),
        })
    };
    let model = read(&config.onnx)?;
    hasher.update(&model);
    hasher.update(&read(&config.tokenizer)?);
    if let Some(tuning) = tuning_for(config, &model)? {
        hasher.update(&tuning.fingerprint().to_le_bytes());
    }
    let pooling = match config.pooling {
        Pooling::Mean => 0u8,
        Pooling::Cls => 1,
    };
    hasher.update(&[pooling]);
    hasher.update(&(config.dimension as u64).to_le_bytes());
    hasher.update(&(config.max_tokens as u64).to_le_bytes());
    Ok(hasher.digest())
}

pub struct Embedder {
    /// Always `Some` until the embedder is dropped (see [`Embedder`]'s `Drop`).
    session: Option<Session>,
    tokenizer: Tokenizer,
    pooling: Pooling,
    dimension: usize,
    takes_token_types: bool,
    onnx: PathBuf,
    /// Put before every query (`query: ` for e5); see [`Embedder::embed_queries`].
    query_prefix: String,
    /// How many tokens the prefix adds after the first special token.
    query_prefix_tokens: usize,
    /// By token id: whether the token starts a content word (a word-piece that begins a word
    /// with a letter or digit and is not a stop word of the lexical index).
    content: Vec<bool>,
    /// Queries are embedded one per call: the graph quantizes its activations over the batch.
    one_at_a_time: bool,
}

/// A text's sentence vector and its content tokens.
pub struct Embedding {
    pub vector: Vec<f32>,
    pub tokens: TokenVectors,
}

impl Embedder {
    /// Loads the model to embed documents, with `threads` intra-op threads: the same vectors as
    /// the file gives, whatever else is in a batch.
    pub fn load(config: &ModelConfig, threads: usize) -> Result<Self, EmbedError> {
        Self::open(config, threads, Rewrites::DOCUMENTS)
    }

    /// Loads the model to embed questions ([`Embedder::embed_queries`]) on one thread: a
    /// weight-only int8 model multiplies in int8 ([`Rewrites::QUESTIONS`]), in half the time,
    /// and embeds each question alone, so its vector does not depend on what else was asked.
    pub fn load_for_questions(config: &ModelConfig) -> Result<Self, EmbedError> {
        Self::open(config, 1, Rewrites::QUESTIONS)
    }

    /// [`Embedder::load`], with these of the graph rewrites ([`onnx_graph`]).
    fn open(config: &ModelConfig, threads: usize, rewrites: Rewrites) -> Result<Self, EmbedError> {
        // Outside the runtime's gate: the rewrite does not call into it, so exit need not wait.
        let rewritten = rewritten_model(config, rewrites)?;
        let call = RuntimeCall::enter()?;
        let library = config
            .runtime
            .as_deref()
            .ok_or_else(|| EmbedError::Runtime {
                path: PathBuf::new(),
                message: "no ONNX Runtime library is set (index.model.runtime)".into(),
            })?;
        let environment = environment(library)?;
        let model_error = |message: String| EmbedError::Model {
            path: config.onnx.clone(),
            message,
        };
        if !config.onnx.is_file() {
            return Err(model_error(
                "no such file (run scripts/setup to fetch it)".into(),
            ));
        }
        // Without its arena and memory patterns a session gives back what a batch took when the
        // batch is done: with them, one long batch of indexing kept ~200 MB per session for
        // the life of the process (bench/HISTORY.md, "Hostile load").
        let mut builder = Session::builder(&environment)
            .map_err(|e| model_error(e.to_string()))?
            .with_execution_providers([ort::ep::CPU::default().with_arena_allocator(false).build()])
            .map_err(|e| model_error(e.to_string()))?
            .with_memory_pattern(false)
            .map_err(|e| model_error(e.to_string()))?
            .with_intra_threads(threads.max(1))
            .map_err(|e| model_error(e.to_string()))?;
        let tuned = rewritten.as_ref().is_some_and(|r| r.tuned);
        let from_memory = match rewritten {
            Some(rewritten) => match builder.commit_from_memory(&rewritten.bytes) {
                Ok(session) => Some((session, rewritten.applied.int8_matmul)),
                // The file as it is would give other vectors than the key says.
                Err(e) if tuned => return Err(model_error(format!("tuned, it did not load: {e}"))),
                Err(e) => {
                    tracing::warn!(model = %config.onnx.display(), error = %e,
                        "the rewritten model did not load; loading the file as it is");
                    None
                }
            },
            None => None,
        };
        let (session, one_at_a_time) = match from_memory {
            Some(loaded) => loaded,
            None => (
                builder
                    .commit_from_file(&config.onnx)
                    .map_err(|e| model_error(e.to_string()))?,
                false,
            ),
        };
        let input_names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for required in ["input_ids", "attention_mask"] {
            if !input_names.contains(&required) {
                return Err(model_error(format!(
                    "it has no `{required}` input (inputs: {})",
                    input_names.join(", ")
                )));
            }
        }
        let takes_token_types = input_names.contains(&"token_type_ids");

        let tokenizer_error = |message: String| EmbedError::Tokenizer {
            path: config.tokenizer.clone(),
            message,
        };
        let mut tokenizer =
            Tokenizer::from_file(&config.tokenizer).map_err(|e| tokenizer_error(e.to_string()))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: config.max_tokens.max(8),
                ..Default::default()
            }))
            .map_err(|e| tokenizer_error(e.to_string()))?;

        let mut is_stop_word = stop_words();
        let mut content = vec![false; tokenizer.get_vocab_size(true)];
        for (token, id) in tokenizer.get_vocab(true) {
            if let Some(slot) = content.get_mut(id as usize) {
                *slot = token.starts_with(char::is_alphanumeric) && !is_stop_word(&token);
            }
        }

        let query_prefix_tokens = tokenizer
            .encode(config.query_prefix.as_str(), false)
            .map_err(|e| tokenizer_error(e.to_string()))?
            .len();
        let mut embedder = Embedder {
            session: Some(session),
            tokenizer,
            query_prefix: config.query_prefix.clone(),
            query_prefix_tokens,
            pooling: config.pooling,
            dimension: config.dimension,
            takes_token_types,
            onnx: config.onnx.clone(),
            content,
            one_at_a_time,
        };
        // One call proves the model runs and has the configured width before any document
        // depends on it (it passes the gate itself).
        drop(call);
        embedder.embed(&["wayfinder"])?;
        // Loading folds the model's int8 weights into float ones through temporaries, which
        // the C allocator keeps unless asked.
        release_free_memory();
        Ok(embedder)
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The words the model reads whole: the tokens of its vocabulary that do not continue a
    /// word (WordPiece, the default model's tokenizer, marks those with `##`).
    pub fn whole_words(&self) -> HashSet<String> {
        self.tokenizer
            .get_vocab(true)
            .into_keys()
            .filter(|token| !token.starts_with("##"))
            .collect()
    }

    /// Unit vectors for `texts`, in order.
    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let embeddings = self.embed_with_tokens(texts)?;
        Ok(embeddings.into_iter().map(|e| e.vector).collect())
    }

    /// Unit vectors and content tokens for `texts`, in order.
    pub fn embed_with_tokens(&mut self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        self.embed_tokens_after(texts, 0)
    }

    /// Search queries' vectors and content tokens, in order: in one batch, or one call each
    /// for a session loaded [`Embedder::load_for_questions`] that multiplies in int8. Models
    /// trained with a query prefix (e5's `query: `, bge's instruction) embed each query after
    /// it; the prefix's own words are left out of the content tokens, so token evidence matches
    /// only what the query says.
    pub fn embed_queries(&mut self, queries: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        let texts: Vec<String> = queries
            .iter()
            .map(|query| format!("{}{query}", self.query_prefix))
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        if !self.one_at_a_time {
            return self.embed_tokens_after(&texts, self.query_prefix_tokens);
        }
        let mut embeddings = Vec::with_capacity(texts.len());
        for text in texts {
            embeddings.extend(self.embed_tokens_after(&[text], self.query_prefix_tokens)?);
        }
        Ok(embeddings)
    }

    /// [`Embedder::embed_with_tokens`], leaving out of the content tokens the `skip` tokens
    /// after the first special token.
    fn embed_tokens_after(
        &mut self,
        texts: &[&str],
        skip: usize,
    ) -> Result<Vec<Embedding>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // Declared first, so dropped last: the inputs and outputs release runtime values too.
        let _call = RuntimeCall::enter()?;
        let session = self.session.as_mut().ok_or(EmbedError::Closed)?;
        let encodings = texts
            .iter()
            .map(|text| self.tokenizer.encode(*text, true))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| EmbedError::Inference(format!("tokenizing: {e}")))?;
        let batch = encodings.len();
        let width = encodings.iter().map(|e| e.len()).max().unwrap_or(1).max(1);
        let mut ids = vec![0i64; batch * width];
        let mut mask = vec![0i64; batch * width];
        let mut types = vec![0i64; batch * width];
        for (row, encoding) in encodings.iter().enumerate() {
            let base = row * width;
            for (i, &id) in encoding.get_ids().iter().enumerate() {
                ids[base + i] = i64::from(id);
                mask[base + i] = 1;
            }
            for (i, &ty) in encoding.get_type_ids().iter().enumerate() {
                types[base + i] = i64::from(ty);
            }
        }
        let shape = [batch as i64, width as i64];
        let tensor = |data: Vec<i64>| {
            Tensor::from_array((shape, data)).map_err(|e| EmbedError::Inference(e.to_string()))
        };
        let mut inputs = ort::inputs![
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask.clone())?,
        ];
        if self.takes_token_types {
            inputs.push(("token_type_ids".into(), tensor(types)?.into()));
        }
        let outputs = session
            .run(inputs)
            .map_err(|e| EmbedError::Inference(e.to_string()))?;
        let (out_shape, hidden) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| EmbedError::Inference(e.to_string()))?;
        let dims: Vec<i64> = out_shape.iter().copied().collect();
        let actual = dims.last().copied().unwrap_or(0) as usize;
        if dims.len() != 3 || actual != self.dimension {
            return Err(EmbedError::Dimension {
                path: self.onnx.clone(),
                expected: self.dimension,
                actual,
            });
        }
        let seq = dims[1] as usize;
        let dim = self.dimension;
        let mut embeddings = Vec::with_capacity(batch);
        for (row, encoding) in encodings.iter().enumerate() {
            let hidden_row = |token: usize| &hidden[(row * seq + token) * dim..][..dim];
            let (ids, positions): (Vec<u32>, Vec<usize>) = encoding
                .get_ids()
                .iter()
                .enumerate()
                .take(seq)
                .filter(|(position, id)| {
                    *position > skip && self.content.get(**id as usize) == Some(&true)
                })
                .map(|(position, id)| (*id, position))
                .unzip();
            let tokens = TokenVectors::new(ids, positions.into_iter().map(hidden_row));
            let mut vector = vec![0f32; dim];
            match self.pooling {
                Pooling::Cls => vector.copy_from_slice(hidden_row(0)),
                Pooling::Mean => {
                    let mut kept = 0f32;
                    for token in 0..seq.min(width) {
                        if mask[row * width + token] == 0 {
                            continue;
                        }
                        kept += 1.0;
                        for (v, h) in vector.iter_mut().zip(hidden_row(token)) {
                            *v += h;
                        }
                    }
                    vector.iter_mut().for_each(|v| *v /= kept.max(1.0));
                }
            }
            normalize(&mut vector);
            embeddings.push(Embedding { vector, tokens });
        }
        Ok(embeddings)
    }
}

impl Drop for Embedder {
    /// Releases the session while the runtime is open; once it is closed, leaks it: releasing
    /// it would call into a runtime that may already be torn down.
    fn drop(&mut self) {
        let session = self.session.take();
        match RuntimeCall::enter() {
            Ok(_call) => drop(session),
            Err(_) => std::mem::forget(session),
        }
    }
}

/// Gives the C allocator's free pages back to the system. ONNX Runtime, usearch and tantivy
/// allocate through it, and glibc keeps what they free for reuse, per thread arena, unless
/// asked.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory; it is safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A test for English stop words, the list (tantivy's) the lexical index drops: a text's
/// token vectors skip the same words.
pub(crate) fn stop_words() -> impl FnMut(&str) -> bool {
    let builder = TextAnalyzer::builder(RawTokenizer::default()).filter(LowerCaser);
    let mut analyzer = match StopWordFilter::new(Language::English) {
        Some(stop_words) => builder.filter(stop_words).build(),
        None => builder.build(),
    };
    move |word| {
        let mut stream = analyzer.token_stream(word);
        !stream.advance()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn every_built_in_tuning_reads() {
        for bytes in BUILT_IN_TUNINGS {
            Tuning::from_bytes(bytes).expect("a built-in tuning reads");
        }
    }

    pub(crate) fn home() -> PathBuf {
        std::env::var_os("WAYFINDER_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.wayfinder"))
    }

    #[test]
    fn a_tuning_moves_the_vectors_and_one_for_another_file_is_refused() {
        let config = ModelConfig::default_in(&home());
        let model = std::fs::read(&config.onnx).unwrap();
        let dir = std::env::temp_dir();
        let file = |base: &str, name: &str| {
            // One query projection of the default model's graph, moved by a rank-one update.
            let pair = [
                ("val_49_q.a", vec![384, 1], vec![1.0; 384]),
                (
                    "val_49_q.b",
                    vec![1, 384],
                    (0..384).map(|i| (i % 7) as f32 * 0.05 - 0.15).collect(),
                ),
            ];
            let path = dir.join(format!(
                "wayfinder-tuning-{}-{name}.safetensors",
                std::process::id()
            ));
            std::fs::write(&path, crate::embed::tuning::tests::file(&pair, Some(base))).unwrap();
            ModelConfig {
                tuning: ModelTuning::File(path),
                ..config.clone()
            }
        };
        let tuned = file(&tuning::model_hash(&model), "fits");
        let untuned = ModelConfig {
            tuning: ModelTuning::Untuned,
            ..config.clone()
        };
        let text = ["renew a library loan"];
        let embed = |config: &ModelConfig| {
            Embedder::load(config, 1)
                .unwrap()
                .embed_with_tokens(&text)
                .unwrap()[0]
                .vector
                .clone()
        };
        let cos = crate::embed::math::dot(&embed(&tuned), &embed(&untuned));
        assert!(
            cos < 0.9999 && cos > 0.5,
            "cosine {cos} of tuned to untuned"
        );
        assert_ne!(model_key(&tuned).unwrap(), model_key(&untuned).unwrap());

        let elsewhere = file("0000000000000000", "elsewhere");
        let refused = |e: EmbedError| {
            matches!(e, EmbedError::Tuning { error: TuningError::OtherModel { .. }, ref tuning, .. }
                if tuning.contains("wayfinder-tuning-"))
        };
        assert!(model_key(&elsewhere).is_err_and(refused));
        assert!(Embedder::load(&elsewhere, 1).err().is_some_and(refused));
        for config in [tuned, elsewhere] {
            if let ModelTuning::File(path) = config.tuning {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    #[test]
    fn the_rewritten_graphs_give_the_files_vectors() {
        let config = ModelConfig::default_in(&home());
        let texts = [
            "Retrieve a user by their email address",
            "renew a library loan",
            "Pagination cursor ß 東京 🙂",
        ];
        let as_is = Embedder::open(&config, 1, Rewrites::NONE)
            .unwrap()
            .embed_with_tokens(&texts)
            .unwrap();
        // A documents' session: the same vectors to the bit.
        let documents = Embedder::load(&config, 1)
            .unwrap()
            .embed_with_tokens(&texts)
            .unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (a, b) in documents.iter().zip(&as_is) {
            assert_eq!(bits(&a.vector), bits(&b.vector));
            assert_eq!(a.tokens, b.tokens);
        }
        // A questions' session multiplies in int8: the vectors move a little, the texts' order
        // of likeness stays, and a question's vector is the same asked alone or with others.
        let mut questions = Embedder::load_for_questions(&config).unwrap();
        assert!(questions.one_at_a_time);
        let together = questions.embed_queries(&texts).unwrap();
        for (i, (a, b)) in together.iter().zip(&as_is).enumerate() {
            let cos = crate::embed::math::dot(&a.vector, &b.vector);
            assert!(cos > 0.98, "cosine {cos} to the file's vector");
            assert_eq!(a.tokens.len(), b.tokens.len());
            let alone = questions.embed_queries(&texts[i..=i]).unwrap();
            assert_eq!(bits(&alone[0].vector), bits(&a.vector));
        }
        let likeness = |e: &[Embedding]| crate::embed::math::dot(&e[0].vector, &e[1].vector);
        assert!((likeness(&together) - likeness(&as_is)).abs() < 0.03);
        let bytes = std::fs::read(&config.onnx).unwrap();
        // The same model, the same graph: every session of a fleet runs the same numbers.
        let rewrite = || onnx_graph::rewrite(&bytes, Rewrites::QUESTIONS, None).unwrap();
        assert_eq!(rewrite().map(|r| r.applied), Some(Rewrites::QUESTIONS));
        assert_eq!(rewrite(), rewrite());
    }
}
