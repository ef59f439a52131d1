//! The question adapter: a linear map, fitted with the ranker, that moves a question's vector
//! toward the members such questions ask for.
//!
//! The model places a question and a member's document by their words; agents ask in other
//! words than schemas describe in. bench/fit/adapter.py fits a square matrix `A` on the
//! question corpus, the document vectors left as they are, so that `A q` is nearest the
//! document vectors of the members each question asks for. The features read the similarity of
//! each candidate's document text to `A q` (`adapted_text`) beside its similarities to `q`
//! itself: the search, the candidates and every other feature keep the model's own vector
//! (moving it instead ranked no better: bench/HISTORY.md). Documents, their vectors and the
//! cache do not change.
//!
//! The file is safetensors (the format of model weights): one f32 tensor `question`, shape
//! `[dimension, dimension]`, row-major, `A[i][j]` the weight of input `j` in output `i`.

use safetensors::{Dtype, SafeTensors};

use crate::embed::math::dot;

/// The tensor that holds `A`.
const TENSOR: &str = "question";

/// A fitted linear map over question vectors.
#[derive(Debug)]
pub struct Adapter {
    dimension: usize,
    /// A hash of the file, for cursors.
    fingerprint: u64,
    /// `A`, row-major.
    matrix: Vec<f32>,
}

/// Why an adapter file cannot be used; the caller names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdapterError {
    #[error("not a safetensors file: {0}")]
    Format(String),
    #[error("no f32 tensor `{TENSOR}` in it")]
    Missing,
    #[error("tensor `{TENSOR}` has shape {shape:?}, where [{dimension}, {dimension}] (the model's width) was expected")]
    Shape { shape: Vec<usize>, dimension: usize },
}

impl Adapter {
    /// Reads the adapter from a safetensors file's `bytes`, for vectors `dimension` wide.
    pub fn from_bytes(bytes: &[u8], dimension: usize) -> Result<Adapter, AdapterError> {
        let tensors =
            SafeTensors::deserialize(bytes).map_err(|e| AdapterError::Format(e.to_string()))?;
        let tensor = tensors.tensor(TENSOR).map_err(|_| AdapterError::Missing)?;
        if tensor.dtype() != Dtype::F32 {
            return Err(AdapterError::Missing);
        }
        if tensor.shape() != [dimension, dimension] {
            return Err(AdapterError::Shape {
                shape: tensor.shape().to_vec(),
                dimension,
            });
        }
        let matrix = tensor
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok(Adapter {
            dimension,
            fingerprint: xxhash_rust::xxh3::xxh3_64(bytes),
            matrix,
        })
    }

    /// A hash of the file it was read from.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// `A vector`, unit length; `None` for a vector of another width, or one the map sends to
    /// zero.
    pub fn apply(&self, vector: &[f32]) -> Option<Vec<f32>> {
        if vector.len() != self.dimension {
            return None;
        }
        let mut mapped: Vec<f32> = self
            .matrix
            .chunks_exact(self.dimension)
            .map(|row| dot(row, vector))
            .collect();
        let norm = dot(&mapped, &mapped).sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return None;
        }
        for value in &mut mapped {
            *value /= norm;
        }
        Some(mapped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(shape: [usize; 2], values: &[f32]) -> Vec<u8> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let view =
            safetensors::tensor::TensorView::new(Dtype::F32, shape.to_vec(), &bytes).unwrap();
        safetensors::serialize([(TENSOR, view)], None).unwrap()
    }

    fn adapter_of_two() -> Adapter {
        Adapter::from_bytes(&file([2, 2], &[1.0, 0.0, 0.0, 1.0]), 2).unwrap()
    }

    #[test]
    fn maps_a_question_and_makes_it_unit_length() {
        // Swaps the two coordinates and doubles the first of the result.
        let adapter = Adapter::from_bytes(&file([2, 2], &[0.0, 2.0, 1.0, 0.0]), 2).unwrap();
        let vector = adapter.apply(&[0.6, 0.8]).unwrap();
        let norm = (1.6f32 * 1.6 + 0.6 * 0.6).sqrt();
        let expected = [1.6 / norm, 0.6 / norm];
        assert!((vector[0] - expected[0]).abs() < 1e-6, "{vector:?}");
        assert!((vector[1] - expected[1]).abs() < 1e-6, "{vector:?}");
    }

    #[test]
    fn a_file_of_another_width_is_refused_with_its_shape() {
        let error = Adapter::from_bytes(&file([2, 2], &[1.0, 0.0, 0.0, 1.0]), 384).unwrap_err();
        assert_eq!(
            error,
            AdapterError::Shape {
                shape: vec![2, 2],
                dimension: 384
            }
        );
        assert!(error.to_string().contains("[2, 2]"), "{error}");
        assert_eq!(adapter_of_two().apply(&[1.0, 0.0, 0.0]), None);
        assert!(matches!(
            Adapter::from_bytes(b"not safetensors", 2),
            Err(AdapterError::Format(_))
        ));
    }
}
