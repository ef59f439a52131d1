//! Score: the fitted ranker, which turns each candidate's [`Row`] of features into its score.
//!
//! The ranker is a model bench/fit fitted on the question corpus (bench/corpus): gradient-boosted
//! trees with a ranking objective, exported to ONNX and evaluated by [`Trees`]. Beside the ONNX
//! file, bench/fit writes a JSON file naming the features the model reads, in order, and the
//! calibration that maps its raw output to a score in [0, 1]; a model fitted on other features
//! than this build computes ([`NAMES`]) is refused by name. The ranker fitted for the default
//! model is built into the binary; `index.ranking.ranker` points at another. Its fingerprint
//! goes into every cursor, so a page ranked by one ranker is never continued by another.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::rank::features::{Row, NAMES};
use crate::rank::trees::{Trees, TreesError};

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
    #[error("cannot load the ranker {source_name}: {source}")]
    Trees {
        source_name: String,
        source: TreesError,
    },
}

/// What bench/fit writes beside the model.
#[derive(Deserialize)]
struct Meta {
    features: Vec<String>,
    /// Raw score `s` becomes `1 / (1 + exp(-(a s + b)))`.
    calibration: [f32; 2],
}

/// A fitted ranker, ready to score.
pub struct Ranker {
    source_name: String,
    fingerprint: u64,
    trees: Trees,
    calibration: [f32; 2],
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
    /// The ranker at `path` (with `path.json` beside it), or the built-in one.
    pub fn load(path: Option<&Path>) -> Result<Ranker, RankerError> {
        let (onnx, meta, source_name) = match path {
            None => (
                Cow::Borrowed(BUILT_IN),
                BUILT_IN_META.to_string(),
                "built in".to_string(),
            ),
            Some(path) => {
                let mut json = path.as_os_str().to_owned();
                json.push(".json");
                let meta = String::from_utf8_lossy(&read(Path::new(&json))?).into_owned();
                (Cow::Owned(read(path)?), meta, path.display().to_string())
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
        let trees = Trees::from_onnx(&onnx).map_err(|source| RankerError::Trees {
            source_name: source_name.clone(),
            source,
        })?;
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&onnx);
        hasher.update(&meta.calibration[0].to_le_bytes());
        hasher.update(&meta.calibration[1].to_le_bytes());
        Ok(Ranker {
            source_name,
            fingerprint: hasher.digest(),
            trees,
            calibration: meta.calibration,
        })
    }

    /// Names the ranker in cursors.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Each row's score in [0, 1], in order.
    pub fn score(&self, rows: &[Row]) -> Vec<f32> {
        let [a, b] = self.calibration;
        let mut scores = self.trees.predict(rows);
        for s in &mut scores {
            *s = 1.0 / (1.0 + (-(a * *s + b)).exp());
        }
        scores
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
        let error = Ranker::load(Some(&onnx)).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains(NAMES[0]) && text.contains("invented"),
            "{text}"
        );
        assert!(matches!(error, RankerError::Features { .. }));
        std::fs::write(dir.join("other.onnx.json"), "{}").unwrap();
        let error = Ranker::load(Some(&onnx)).unwrap_err();
        assert!(matches!(error, RankerError::Meta { .. }), "{error}");
        let error = Ranker::load(Some(&dir.join("absent.onnx")));
        assert!(matches!(error, Err(RankerError::Read { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
