//! Score: the fitted ranker, which turns each candidate's [`Row`] of features into its score.
//!
//! The ranker is a model bench/fit fitted on the question corpus (bench/corpus): gradient-boosted
//! trees with a ranking objective, exported to ONNX and run through ONNX Runtime as the embedding
//! model is. Beside the ONNX file, bench/fit writes a JSON file naming the features the model
//! reads, in order, and the calibration that maps its raw output to a score in [0, 1]; a model
//! fitted on other features than this build computes ([`NAMES`]) is refused by name. The
//! ranker fitted for the default model is built into the binary; `index.ranking.ranker` points
//! at another. Its fingerprint goes into every cursor, so a page ranked by one ranker is never
//! continued by another.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ort::session::Session;
use ort::value::Tensor;
use serde::Deserialize;

use crate::embed::model::{environment, RuntimeCall};
use crate::embed::EmbedError;
use crate::rank::features::{Row, COUNT, NAMES};

/// The ranker fitted for the default model (bench/fit/fit.py over the whole corpus).
const BUILT_IN: &[u8] = include_bytes!("fitted/all-MiniLM-L6-v2-int8.onnx");
const BUILT_IN_META: &str = include_str!("fitted/all-MiniLM-L6-v2-int8.onnx.json");

#[derive(Debug, thiserror::Error)]
pub enum RankerError {
    #[error("cannot read the ranker {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("the ranker {source_name} is not what bench/fit writes: {message}")]
    Meta {
        source_name: String,
        message: String,
    },
    #[error(
        "the ranker {source_name} reads other features than this build computes ({difference}): \
         refit it with bench/fit/fit.py"
    )]
    Features {
        source_name: String,
        difference: String,
    },
    #[error("cannot load the ranker {source_name}: {message}")]
    Load {
        source_name: String,
        message: String,
    },
    #[error("the ranker failed: {0}")]
    Inference(String),
    #[error(transparent)]
    Runtime(#[from] EmbedError),
}

/// What bench/fit writes beside the model.
#[derive(Deserialize)]
struct Meta {
    features: Vec<String>,
    /// Raw score `s` becomes `1 / (1 + exp(-(a s + b)))`.
    calibration: [f32; 2],
}

/// A fitted ranker, ready to score; sessions are made on first need, one per concurrent
/// search (searches run on the engine's few search threads).
pub struct Ranker {
    source_name: String,
    fingerprint: u64,
    onnx: Arc<[u8]>,
    calibration: [f32; 2],
    runtime: PathBuf,
    sessions: Mutex<Vec<Session>>,
}

impl std::fmt::Debug for Ranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ranker")
            .field("source", &self.source_name)
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, RankerError> {
    std::fs::read(path).map_err(|e| RankerError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

impl Ranker {
    /// The ranker at `path` (with `path.json` beside it), or the built-in one; run with the ONNX
    /// Runtime library at `runtime`. The first
    /// session is made here, so a model ONNX Runtime cannot load is an error at start, not on
    /// the first search.
    pub fn load(path: Option<&Path>, runtime: &Path) -> Result<Ranker, RankerError> {
        let (onnx, meta, source_name) = match path {
            None => (
                Arc::from(BUILT_IN),
                BUILT_IN_META.to_string(),
                "built in".to_string(),
            ),
            Some(path) => {
                let mut json = path.as_os_str().to_owned();
                json.push(".json");
                let meta = String::from_utf8_lossy(&read(Path::new(&json))?).into_owned();
                (Arc::from(read(path)?), meta, path.display().to_string())
            }
        };
        let meta: Meta = serde_json::from_str(&meta).map_err(|e| RankerError::Meta {
            source_name: source_name.clone(),
            message: e.to_string(),
        })?;
        if meta.features != NAMES {
            let missing: Vec<&str> = NAMES
                .iter()
                .filter(|n| !meta.features.iter().any(|f| f == *n))
                .copied()
                .collect();
            let unknown: Vec<&str> = meta
                .features
                .iter()
                .filter(|f| !NAMES.contains(&f.as_str()))
                .map(String::as_str)
                .collect();
            return Err(RankerError::Features {
                source_name,
                difference: format!(
                    "not read: {missing:?}; unknown: {unknown:?}; or in another order"
                ),
            });
        }
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&onnx);
        hasher.update(&meta.calibration[0].to_le_bytes());
        hasher.update(&meta.calibration[1].to_le_bytes());
        let ranker = Ranker {
            source_name,
            fingerprint: hasher.digest(),
            onnx,
            calibration: meta.calibration,
            runtime: runtime.to_path_buf(),
            sessions: Mutex::new(Vec::new()),
        };
        let first = ranker.session()?;
        ranker.give_back(first);
        Ok(ranker)
    }

    /// Names the ranker in cursors.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Each row's score in [0, 1], in order.
    pub fn score(&self, rows: &[Row]) -> Result<Vec<f32>, RankerError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let call = RuntimeCall::enter()?;
        let mut session = self.session()?;
        let raw = Self::run(&mut session, rows);
        self.give_back(session);
        drop(call);
        let [a, b] = self.calibration;
        Ok(raw?
            .into_iter()
            .map(|s| 1.0 / (1.0 + (-(a * s + b)).exp()))
            .collect())
    }

    fn run(session: &mut Session, rows: &[Row]) -> Result<Vec<f32>, RankerError> {
        let failed = |e: ort::Error| RankerError::Inference(e.to_string());
        let flat: Vec<f32> = rows.iter().flatten().copied().collect();
        let input =
            Tensor::from_array(([rows.len() as i64, COUNT as i64], flat)).map_err(failed)?;
        let outputs = session
            .run(ort::inputs!["features" => input])
            .map_err(failed)?;
        let (_, scores) = outputs[0].try_extract_tensor::<f32>().map_err(failed)?;
        if scores.len() != rows.len() {
            return Err(RankerError::Inference(format!(
                "{} scores for {} rows",
                scores.len(),
                rows.len()
            )));
        }
        Ok(scores.to_vec())
    }

    fn session(&self) -> Result<Session, RankerError> {
        let idle = self
            .sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop();
        if let Some(session) = idle {
            return Ok(session);
        }
        let load = |message: String| RankerError::Load {
            source_name: self.source_name.clone(),
            message,
        };
        let environment = environment(&self.runtime)?;
        Session::builder(&environment)
            .map_err(|e| load(e.to_string()))?
            .with_intra_threads(1)
            .map_err(|e| load(e.to_string()))?
            .commit_from_memory(&self.onnx)
            .map_err(|e| load(e.to_string()))
    }

    fn give_back(&self, session: Session) {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(session);
    }
}

impl Drop for Ranker {
    /// Releases the sessions while the runtime is open; once it is closed, leaks them, as
    /// [`crate::embed::Embedder`] does.
    fn drop(&mut self) {
        let sessions = std::mem::take(
            self.sessions
                .get_mut()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        match RuntimeCall::enter() {
            Ok(_call) => drop(sessions),
            Err(_) => std::mem::forget(sessions),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ranker_fitted_on_other_features_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("wayfinder-ranker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let onnx = dir.join("other.onnx");
        std::fs::write(&onnx, b"not read").unwrap();
        let mut features: Vec<&str> = NAMES[1..].to_vec();
        features.push("invented");
        let meta = serde_json::json!({"features": features, "calibration": [1.0, 0.0]});
        std::fs::write(dir.join("other.onnx.json"), meta.to_string()).unwrap();
        let error = Ranker::load(Some(&onnx), Path::new("/nowhere")).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains(NAMES[0]) && text.contains("invented"),
            "{text}"
        );
        assert!(matches!(error, RankerError::Features { .. }));
        std::fs::write(dir.join("other.onnx.json"), "{}").unwrap();
        let error = Ranker::load(Some(&onnx), Path::new("/nowhere")).unwrap_err();
        assert!(matches!(error, RankerError::Meta { .. }), "{error}");
        let error = Ranker::load(Some(&dir.join("absent.onnx")), Path::new("/nowhere"));
        assert!(matches!(error, Err(RankerError::Read { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
