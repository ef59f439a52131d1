//! The model's tuning: a low-rank update of its int8 weights, fitted on the question corpus, that
//! the embedder adds to the model as it loads it.
//!
//! The default model places a question and a member's document by their words; agents ask in
//! other words than schemas describe in. bench/fit/tune.py fits, for each of the model's int8
//! weight matrices `W` (`[in, out]`), two small factors `A` (`[in, r]`) and `B` (`[r, out]`)
//! so that questions land nearest the documents of the members they ask for (LoRA). Here
//! `W + A B` is quantized again as the model stores its weights: int8, one scale per output
//! column. The graph, its size and the cost of a text do not change; the vectors do, so the
//! tuning is part of the model's key (the cache, the ranker fitted for it, cursors).
//!
//! The file is safetensors: tensors `<int8 initializer>.a` and `.b` (f16, f32 or i8), metadata
//! `base`, the xxh3-64 (hex) of the model file the factors were fitted on. A tuning is only
//! added to that file. Int8 factors (half an f16 file's size) come with `<int8 initializer>.scale`
//! (`[r]`): the update is `A diag(scale) B`.
//!
//! Flow: file bytes -> [`Tuning`] -> [`crate::embed::onnx_graph`] finds each named weight and
//! its scale and replaces both with [`Tuning::merged`].

use std::collections::HashMap;

use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};

/// Why a tuning file cannot be used; the caller names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TuningError {
    #[error("not a safetensors file: {0}")]
    Format(String),
    #[error("no `base` metadata naming the model it was fitted on")]
    NoBase,
    #[error("fitted on the model with hash {expected}, not this one ({actual})")]
    OtherModel { expected: String, actual: String },
    #[error(
        "tensor `{0}` is not of a type a tuning holds (factors f16, f32 or i8; scales f16 or f32)"
    )]
    Dtype(String),
    #[error("`{name}.scale` is missing or not of shape [{rank}] (int8 factors need one)")]
    Unscaled { name: String, rank: usize },
    #[error("`{name}.a` and `{name}.b` do not make a low-rank update (shapes {a:?} and {b:?})")]
    Shape {
        name: String,
        a: Vec<usize>,
        b: Vec<usize>,
    },
    #[error("`{name}.{half}` has no partner")]
    Unpaired { name: String, half: char },
    #[error(
        "the model has no int8 weight `{name}` of shape [{rows}, {columns}] scaled per column"
    )]
    NoWeight {
        name: String,
        rows: usize,
        columns: usize,
    },
    #[error("the model cannot be rewritten here (external data, subgraphs or a newer format)")]
    Unreadable,
}

/// One weight's factors, row-major.
#[derive(Debug)]
struct Update {
    rows: usize,
    rank: usize,
    columns: usize,
    a: Vec<f32>,
    b: Vec<f32>,
}

/// A tensor's shape and values, as f32.
type Values = (Vec<usize>, Vec<f32>);

/// A parsed tuning file.
#[derive(Debug)]
pub struct Tuning {
    base: String,
    updates: HashMap<String, Update>,
    fingerprint: u64,
}

/// `base` and `tensors` (in name order) hashed, each field after its length.
fn fingerprint(base: &str, tensors: &[(String, TensorView<'_>)]) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut field = |bytes: &[u8]| {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(base.as_bytes());
    for (name, view) in tensors {
        field(name.as_bytes());
        field(view.dtype().to_string().as_bytes());
        let shape: Vec<u8> = view
            .shape()
            .iter()
            .flat_map(|d| (*d as u64).to_le_bytes())
            .collect();
        field(&shape);
        field(view.data());
    }
    hasher.digest()
}

/// The hash a tuning file's `base` names a model file by.
pub fn model_hash(model: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(model))
}

impl Tuning {
    pub fn from_bytes(bytes: &[u8]) -> Result<Tuning, TuningError> {
        let (_, metadata) =
            SafeTensors::read_metadata(bytes).map_err(|e| TuningError::Format(e.to_string()))?;
        let base = metadata
            .metadata()
            .as_ref()
            .and_then(|m| m.get("base"))
            .cloned()
            .ok_or(TuningError::NoBase)?;
        let tensors =
            SafeTensors::deserialize(bytes).map_err(|e| TuningError::Format(e.to_string()))?;
        let mut tensors = tensors.tensors();
        tensors.sort_by(|a, b| a.0.cmp(&b.0));
        let fingerprint = fingerprint(&base, &tensors);
        // An int8 factor is only usable with its weight's scale, so whether one is int8 is kept.
        let mut parts: HashMap<String, ([Option<Values>; 3], bool)> = HashMap::new();
        for (name, view) in tensors {
            let (weight, part) = match name.rsplit_once('.') {
                Some((weight, "a")) => (weight, 0),
                Some((weight, "b")) => (weight, 1),
                Some((weight, "scale")) => (weight, 2),
                _ => continue,
            };
            let values = match view.dtype() {
                Dtype::F16 => view
                    .data()
                    .chunks_exact(2)
                    .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect(),
                Dtype::F32 => view
                    .data()
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect(),
                Dtype::I8 if part < 2 => view.data().iter().map(|&b| f32::from(b as i8)).collect(),
                _ => return Err(TuningError::Dtype(name)),
            };
            let entry = parts.entry(weight.to_string()).or_default();
            entry.0[part] = Some((view.shape().to_vec(), values));
            entry.1 |= view.dtype() == Dtype::I8;
        }
        let mut updates = HashMap::new();
        for (name, ([a, b, scale], int8)) in parts {
            let ((a_shape, mut a), (b_shape, b)) = match (a, b) {
                (Some(a), Some(b)) => (a, b),
                (None, _) => return Err(TuningError::Unpaired { name, half: 'b' }),
                (_, None) => return Err(TuningError::Unpaired { name, half: 'a' }),
            };
            let &[rows, rank] = a_shape.as_slice() else {
                return Err(TuningError::Shape {
                    name,
                    a: a_shape,
                    b: b_shape,
                });
            };
            if b_shape.len() != 2 || b_shape[0] != rank {
                return Err(TuningError::Shape {
                    name,
                    a: a_shape,
                    b: b_shape,
                });
            }
            let columns = b_shape[1];
            match scale {
                Some((shape, scale)) if shape == [rank] => {
                    for row in a.chunks_exact_mut(rank) {
                        row.iter_mut().zip(&scale).for_each(|(a, s)| *a *= s);
                    }
                }
                None if !int8 => {}
                _ => return Err(TuningError::Unscaled { name, rank }),
            }
            updates.insert(
                name,
                Update {
                    rows,
                    rank,
                    columns,
                    a,
                    b,
                },
            );
        }
        Ok(Tuning {
            base,
            updates,
            fingerprint,
        })
    }

    /// The tuning hashed by its base and its tensors in name order: the rest of the metadata
    /// (how it was fitted) and the order safetensors wrote the file in (its writer does not keep
    /// the metadata's) are left out, so the same factors written twice give the same model key.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Ok when the factors were fitted on the model file with these bytes' hash.
    pub fn check_base(&self, model_hash: &str) -> Result<(), TuningError> {
        if self.base == model_hash {
            Ok(())
        } else {
            Err(TuningError::OtherModel {
                expected: self.base.clone(),
                actual: model_hash.to_string(),
            })
        }
    }

    /// The names of the int8 weights it updates, and each one's `[rows, columns]`.
    pub fn weights(&self) -> impl Iterator<Item = (&str, [usize; 2])> {
        self.updates
            .iter()
            .map(|(name, u)| (name.as_str(), [u.rows, u.columns]))
    }

    /// `W + A B` quantized again, for the int8 weight `name` (`quantized`, row-major
    /// `[rows, columns]`, times `scale`, one per column): the new int8 values and scales.
    /// `None` when the tuning does not update `name`.
    pub fn merged(
        &self,
        name: &str,
        quantized: &[i8],
        scale: &[f32],
    ) -> Option<(Vec<i8>, Vec<f32>)> {
        let u = self.updates.get(name)?;
        let (rows, columns) = (u.rows, u.columns);
        if quantized.len() != rows * columns || scale.len() != columns {
            return None;
        }
        // In f64 as bench/fit/tune.py merges; each weight adds its factors' products in rank
        // order (the vectors cached under this tuning depend on it), a whole row at a time so
        // the compiler vectorizes it.
        let mut weight = vec![0f64; rows * columns];
        let mut largest = vec![0f64; columns];
        for (i, row) in weight.chunks_exact_mut(columns).enumerate() {
            let own = &quantized[i * columns..(i + 1) * columns];
            for ((w, &q), &s) in row.iter_mut().zip(own).zip(scale) {
                *w = f64::from(f32::from(q) * s);
            }
            for (k, &a) in u.a[i * u.rank..(i + 1) * u.rank].iter().enumerate() {
                let a = f64::from(a);
                for (w, &b) in row.iter_mut().zip(&u.b[k * columns..(k + 1) * columns]) {
                    *w += a * f64::from(b);
                }
            }
            for (m, w) in largest.iter_mut().zip(row.iter()) {
                *m = m.max(w.abs());
            }
        }
        let scales: Vec<f64> = largest.iter().map(|m| m.max(1e-12) / 127.0).collect();
        let values = weight
            .chunks_exact(columns)
            .flat_map(|row| {
                row.iter()
                    .zip(&scales)
                    .map(|(w, s)| (w / s).round_ties_even().clamp(-127.0, 127.0) as i8)
            })
            .collect();
        Some((values, scales.into_iter().map(|s| s as f32).collect()))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A safetensors file of f32 `tensors` (name, shape, values), with `base` metadata.
    pub(crate) fn file(tensors: &[(&str, Vec<usize>, Vec<f32>)], base: Option<&str>) -> Vec<u8> {
        let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
            .iter()
            .map(|(n, s, v)| {
                (
                    n.to_string(),
                    s.clone(),
                    v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                )
            })
            .collect();
        let views: Vec<(String, TensorView)> = bytes
            .iter()
            .map(|(n, s, b)| {
                (
                    n.clone(),
                    TensorView::new(Dtype::F32, s.clone(), b).unwrap(),
                )
            })
            .collect();
        let metadata = base.map(|b| HashMap::from([("base".to_string(), b.to_string())]));
        safetensors::serialize(views, metadata).unwrap()
    }

    #[test]
    fn the_same_factors_written_twice_have_one_fingerprint() {
        let tensors = [
            ("w.a", vec![2, 1], vec![1.0, 0.0]),
            ("w.b", vec![1, 2], vec![127.0, 0.0]),
        ];
        let fingerprint = |bytes: &[u8]| Tuning::from_bytes(bytes).unwrap().fingerprint();
        let plain = file(&tensors, Some("00"));
        let annotated = {
            let parsed = SafeTensors::deserialize(&plain).unwrap();
            let metadata = HashMap::from([
                ("base".to_string(), "00".to_string()),
                ("soup".to_string(), r#"{"seed": 1}"#.to_string()),
            ]);
            safetensors::serialize(parsed.tensors().into_iter().rev(), Some(metadata)).unwrap()
        };
        assert_ne!(plain, annotated);
        assert_eq!(fingerprint(&plain), fingerprint(&annotated));
        assert_ne!(
            fingerprint(&plain),
            fingerprint(&file(&tensors, Some("01"))),
            "another base"
        );
        let mut moved = tensors.clone();
        moved[0].2[1] = 0.5;
        assert_ne!(fingerprint(&plain), fingerprint(&file(&moved, Some("00"))));
    }

    #[test]
    fn merges_the_update_and_quantizes_per_column() {
        // W = [[1, -1.5], [3, 2]] (int8 [[1, -3], [3, 4]] times [1, 0.5]); A B = [[127, 0], [0, 0]].
        let bytes = file(
            &[
                ("w.a", vec![2, 1], vec![1.0, 0.0]),
                ("w.b", vec![1, 2], vec![127.0, 0.0]),
            ],
            Some("00"),
        );
        let tuning = Tuning::from_bytes(&bytes).unwrap();
        let (q, s) = tuning.merged("w", &[1, -3, 3, 4], &[1.0, 0.5]).unwrap();
        // Column 0 is [128, 3]: its scale 128/127; column 1 is [-1.5, 2]: 2/127.
        assert_eq!(s, vec![(128.0f64 / 127.0) as f32, (2.0f64 / 127.0) as f32]);
        assert_eq!(q, vec![127, -95, 3, 127]);
        assert!(tuning
            .merged("other", &[1, -2, 3, 4], &[1.0, 0.5])
            .is_none());
        assert!(tuning.merged("w", &[1, -2, 3], &[1.0, 0.5]).is_none());
    }

    #[test]
    fn merging_sums_each_weight_in_the_order_the_vector_cache_was_filled_with() {
        // The cached vectors of a tuned model are keyed by the files, not by the merged weights:
        // a faster merge must give them to the bit. Each weight is its int8 value times its
        // scale, then each factor's product added in rank order.
        let (rows, rank, columns) = (16, 3, 24);
        let a: Vec<f32> = (0..rows * rank)
            .map(|i| (i as f32 * 0.37).sin() / 7.0)
            .collect();
        let b: Vec<f32> = (0..rank * columns)
            .map(|i| (i as f32 * 0.11).cos() / 9.0)
            .collect();
        let tuning = Tuning::from_bytes(&file(
            &[
                ("w.a", vec![rows, rank], a.clone()),
                ("w.b", vec![rank, columns], b.clone()),
            ],
            Some("00"),
        ))
        .unwrap();
        let quantized: Vec<i8> = (0..rows * columns)
            .map(|i| (i * 37 % 255) as u8 as i8)
            .collect();
        let scale: Vec<f32> = (0..columns).map(|j| 0.001 + j as f32 * 1e-4).collect();
        let expected: Vec<f64> = (0..rows * columns)
            .map(|at| {
                let (i, j) = (at / columns, at % columns);
                let mut sum = f64::from(f32::from(quantized[at]) * scale[j]);
                for k in 0..rank {
                    sum += f64::from(a[i * rank + k]) * f64::from(b[k * columns + j]);
                }
                sum
            })
            .collect();
        let (q, s) = tuning.merged("w", &quantized, &scale).unwrap();
        for j in 0..columns {
            let largest = (0..rows)
                .map(|i| expected[i * columns + j].abs())
                .fold(0.0, f64::max);
            let step = largest / 127.0;
            assert_eq!(s[j], step as f32);
            for i in 0..rows {
                let value = (expected[i * columns + j] / step).round_ties_even() as i8;
                assert_eq!(q[i * columns + j], value, "row {i} column {j}");
            }
        }
    }

    #[test]
    fn int8_factors_are_scaled_per_rank_component() {
        // A = [[2], [-1]] and B = [[3, 1]] in int8, times 0.5: the update of the f32 file A B / 2.
        let (a, b, scale) = ([2i8, -1], [3i8, 1], 0.5f32.to_le_bytes());
        let int8 = |v: &[i8]| v.iter().map(|&x| x as u8).collect::<Vec<u8>>();
        let (a, b) = (int8(&a), int8(&b));
        let views = vec![
            ("w.a", TensorView::new(Dtype::I8, vec![2, 1], &a).unwrap()),
            ("w.b", TensorView::new(Dtype::I8, vec![1, 2], &b).unwrap()),
            (
                "w.scale",
                TensorView::new(Dtype::F32, vec![1], &scale).unwrap(),
            ),
        ];
        let base = Some(HashMap::from([("base".to_string(), "00".to_string())]));
        let scaled =
            Tuning::from_bytes(&safetensors::serialize(views.clone(), base.clone()).unwrap());
        let float = Tuning::from_bytes(&file(
            &[
                ("w.a", vec![2, 1], vec![1.0, -0.5]),
                ("w.b", vec![1, 2], vec![3.0, 1.0]),
            ],
            Some("00"),
        ));
        let weight = ([10i8, -20, 30, 40], [0.1f32, 0.2]);
        assert_eq!(
            scaled.unwrap().merged("w", &weight.0, &weight.1),
            float.unwrap().merged("w", &weight.0, &weight.1)
        );
        let unscaled = safetensors::serialize(views[..2].to_vec(), base.clone()).unwrap();
        assert!(matches!(
            Tuning::from_bytes(&unscaled),
            Err(TuningError::Unscaled { rank: 1, .. })
        ));
        let two = [0u8; 8];
        let mut misshapen = views[..2].to_vec();
        misshapen.push((
            "w.scale",
            TensorView::new(Dtype::F32, vec![2], &two).unwrap(),
        ));
        assert!(matches!(
            Tuning::from_bytes(&safetensors::serialize(misshapen, base).unwrap()),
            Err(TuningError::Unscaled { rank: 1, .. })
        ));
    }

    #[test]
    fn refuses_a_file_it_cannot_use() {
        let pair = [
            ("w.a", vec![2, 1], vec![1.0, 0.0]),
            ("w.b", vec![1, 2], vec![1.0, 0.0]),
        ];
        assert_eq!(
            Tuning::from_bytes(&file(&pair, None)).unwrap_err(),
            TuningError::NoBase
        );
        let lone = file(&pair[..1], Some("00"));
        assert!(matches!(
            Tuning::from_bytes(&lone),
            Err(TuningError::Unpaired { half: 'a', .. })
        ));
        let crooked = file(
            &[pair[0].clone(), ("w.b", vec![2, 2], vec![0.0; 4])],
            Some("00"),
        );
        assert!(matches!(
            Tuning::from_bytes(&crooked),
            Err(TuningError::Shape { .. })
        ));
        let tuning = Tuning::from_bytes(&file(&pair, Some("00"))).unwrap();
        assert!(tuning.check_base("00").is_ok());
        assert!(matches!(
            tuning.check_base("01"),
            Err(TuningError::OtherModel { .. })
        ));
        assert!(Tuning::from_bytes(b"not a file").is_err());
    }
}
