//! Vector shards: one usearch HNSW index per subgraph, keyed by coordinate hash.
//!
//! Vectors are unit length and stored as f16 with cosine distance (recall@10 stays 1.00 at
//! this size and memory halves). Keys are coordinate hashes rather than member ids, so a shard
//! built for one catalog serves the next when its documents did not change.

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
}

impl VectorShard {
    /// Builds the HNSW graph over `entries` on `threads` threads.
    pub fn build(
        dimension: usize,
        entries: &[(u64, Arc<[f32]>)],
        threads: usize,
    ) -> Result<Self, VectorError> {
        let options = IndexOptions {
            dimensions: dimension,
            metric: MetricKind::Cos,
            quantization: ScalarKind::F16,
            connectivity: 0,
            expansion_add: 0,
            expansion_search: 0,
            multi: false,
        };
        let index = Index::new(&options).map_err(vector_error)?;
        let threads = threads.clamp(1, 8);
        index
            .reserve_capacity_and_threads(entries.len().max(1), threads)
            .map_err(vector_error)?;
        let chunk = entries.len().div_ceil(threads).max(1);
        let failures: Vec<VectorError> = std::thread::scope(|scope| {
            let workers: Vec<_> = entries
                .chunks(chunk)
                .map(|part| {
                    let index = &index;
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
        Ok(VectorShard { index })
    }

    pub fn len(&self) -> usize {
        self.index.size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored vector of `key` (as the index keeps it, f16-rounded), if any.
    pub fn vector(&self, key: u64) -> Option<Vec<f32>> {
        let mut vector = vec![0f32; self.index.dimensions()];
        match self.index.get(key, &mut vector) {
            Ok(n) if n > 0 => Some(vector),
            _ => None,
        }
    }

    /// The `limit` nearest keys that `allow` accepts, with cosine similarity, nearest first.
    pub fn search(
        &self,
        query: &[f32],
        limit: usize,
        allow: impl Fn(u64) -> bool,
    ) -> Result<Vec<(u64, f32)>, VectorError> {
        if limit == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        let matches = self
            .index
            .filtered_search(query, limit, allow)
            .map_err(vector_error)?;
        Ok(matches
            .keys
            .into_iter()
            .zip(matches.distances)
            .map(|(key, distance)| (key, 1.0 - distance))
            .collect())
    }
}
