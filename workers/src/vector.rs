//! Vector shards: one usearch HNSW index per subgraph, keyed by coordinate hash.
//!
//! Vectors are unit length and stored as f16 with cosine distance (recall@10 stays 1.00 at
//! this size and memory halves). Keys are view keys (coordinate hashes) rather than member ids,
//! so a shard built for one catalog serves the next when its documents did not change, and a
//! shard where few vectors changed is updated from a copy instead of built again.
//! The f32 vectors stay beside the graph (a one-text view shares its vector with the cache):
//! ranking scores every view of a candidate exactly, without reading back from the graph.

use std::collections::HashMap;
use std::sync::Arc;

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

#[derive(Debug, thiserror::Error)]
#[error("vector index: {0}")]
pub struct VectorError(String);

fn vector_error(e: impl std::fmt::Display) -> VectorError {
    VectorError(e.to_string())
}

pub struct VectorShard {
    index: Index,
    vectors: HashMap<u64, Arc<[f32]>>,
}

/// Largest share of a shard's vectors that may change for it to be updated in place of rebuilt:
/// removals leave tombstones in the graph, which a rebuild clears.
const UPDATE_SHARE: f64 = 0.2;

fn options(dimension: usize) -> IndexOptions {
    IndexOptions {
        dimensions: dimension,
        metric: MetricKind::Cos,
        quantization: ScalarKind::F16,
        connectivity: 0,
        expansion_add: 0,
        expansion_search: 0,
        multi: false,
    }
}

impl VectorShard {
    /// Builds the HNSW graph over `entries` on `threads` threads.
    pub fn build(
        dimension: usize,
        entries: &[(u64, Arc<[f32]>)],
        threads: usize,
    ) -> Result<Self, VectorError> {
        let index = Index::new(&options(dimension)).map_err(vector_error)?;
        add_all(&index, dimension, entries, threads)?;
        Ok(VectorShard {
            index,
            vectors: entries.iter().cloned().collect(),
        })
    }

    /// This shard made to hold exactly `entries`: a copy of its graph with the changed vectors
    /// replaced, or a new build when many changed.
    pub fn updated(
        &self,
        dimension: usize,
        entries: &[(u64, Arc<[f32]>)],
        threads: usize,
    ) -> Result<Self, VectorError> {
        let vectors: HashMap<u64, Arc<[f32]>> = entries.iter().cloned().collect();
        let changed: Vec<(u64, Arc<[f32]>)> = entries
            .iter()
            .filter(|(key, vector)| self.vectors.get(key) != Some(vector))
            .cloned()
            .collect();
        let removed: Vec<u64> = self
            .vectors
            .keys()
            .filter(|key| !vectors.contains_key(key))
            .copied()
            .collect();
        let churn = (changed.len() + removed.len()) as f64;
        if self.index.dimensions() != dimension || churn > UPDATE_SHARE * entries.len() as f64 {
            return Self::build(dimension, entries, threads);
        }
        let mut buffer = vec![0u8; self.index.serialized_length()];
        self.index
            .save_to_buffer(&mut buffer)
            .map_err(vector_error)?;
        let index = Index::new(&options(dimension)).map_err(vector_error)?;
        index.load_from_buffer(&buffer).map_err(vector_error)?;
        for key in removed.iter().chain(changed.iter().map(|(key, _)| key)) {
            if index.contains(*key) {
                index.remove(*key).map_err(vector_error)?;
            }
        }
        add_all(&index, dimension, &changed, threads)?;
        Ok(VectorShard { index, vectors })
    }

    pub fn len(&self) -> usize {
        self.index.size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The vector stored under `key`.
    pub fn vector(&self, key: u64) -> Option<&[f32]> {
        self.vectors.get(&key).map(|v| &v[..])
    }

    /// The `limit` nearest keys that `allow` accepts (every key without it), with cosine
    /// similarity, nearest first.
    pub fn search(
        &self,
        query: &[f32],
        limit: usize,
        allow: Option<impl Fn(u64) -> bool>,
    ) -> Result<Vec<(u64, f32)>, VectorError> {
        if limit == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        // The predicate costs a call per visited node: skip it when everything is visible.
        let matches = match allow {
            Some(allow) => self.index.filtered_search(query, limit, allow),
            None => self.index.search(query, limit),
        }
        .map_err(vector_error)?;
        Ok(matches
            .keys
            .into_iter()
            .zip(matches.distances)
            .map(|(key, distance)| (key, 1.0 - distance))
            .collect())
    }
}

/// Adds `entries` to `index` on up to `threads` threads, growing it to hold them.
fn add_all(
    index: &Index,
    dimension: usize,
    entries: &[(u64, Arc<[f32]>)],
    threads: usize,
) -> Result<(), VectorError> {
    let threads = threads.clamp(1, 8);
    index
        .reserve_capacity_and_threads(index.size() + entries.len() + 1, threads)
        .map_err(vector_error)?;
    let chunk = entries.len().div_ceil(threads).max(1);
    let failures: Vec<VectorError> = std::thread::scope(|scope| {
        let workers: Vec<_> = entries
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || -> Result<(), VectorError> {
                    for (key, vector) in part {
                        if vector.len() != dimension {
                            return Err(VectorError(format!(
                                "vector of width {} for an index of width {dimension}",
                                vector.len()
                            )));
                        }
                        index.add(*key, vector).map_err(vector_error)?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .filter_map(|w| match w.join() {
                Ok(result) => result.err(),
                Err(_) => Some(VectorError("an indexing thread panicked".into())),
            })
            .collect()
    });
    if let Some(failure) = failures.into_iter().next() {
        return Err(failure);
    }
    Ok(())
}
