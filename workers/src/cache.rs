//! The persistent vector cache: document vectors on disk, keyed by model and document text,
//! and for the texts that are a member's document, their content-token vectors
//! ([`crate::tokens`]).
//!
//! A restart or a reload embeds only texts it has never seen. One file per model
//! (`vectors-<model key>.bin`), written whole to a temporary file in the same folder and renamed
//! over the old one, so a process killed at any moment leaves either the old file or the new
//! one. A trailing checksum catches a file damaged some other way; such a file is reported with
//! its path and the engine starts from an empty cache rather than trusting it.
//!
//! Layout (little endian): magic, model key u64, dimension u32, count u64, then `count` times
//! (text hash u128, `dimension` f32); token count u64, then that many times (text hash u128,
//! token vectors as [`TokenVectors`] encodes them); then the xxh3 of everything before it.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use xxhash_rust::xxh3::xxh3_64;

use crate::tokens::TokenVectors;

const MAGIC: &[u8; 8] = b"WFVEC\x00\x00\x02";
/// Files of the format before token vectors: read as empty, so they are rebuilt.
const MAGIC_V1: &[u8; 8] = b"WFVEC\x00\x00\x01";
const HEADER: usize = 8 + 8 + 4 + 8;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cannot read the vector cache {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("the vector cache {path} is damaged ({reason}); it will be rebuilt")]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot write the vector cache {path}: {message}")]
    Write { path: PathBuf, message: String },
}

/// Vectors by document-text hash, for one model.
#[derive(Debug)]
pub struct VectorCache {
    path: Option<PathBuf>,
    model_key: u64,
    dimension: usize,
    vectors: HashMap<u128, Arc<[f32]>>,
    tokens: HashMap<u128, Arc<TokenVectors>>,
    /// Vectors and token vectors added since the last save.
    unsaved: usize,
    /// Texts a shard indexer is embedding now: another shard that needs one waits for it
    /// rather than embedding it twice.
    claimed: HashSet<u128>,
}

/// Where the vector of a text stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// In the cache.
    Cached,
    /// Being embedded by another shard indexer.
    Pending,
    /// Claimed now by the caller, who must embed it or [`VectorCache::release`] it.
    Claimed,
}

impl VectorCache {
    /// An empty cache that is never written.
    pub fn in_memory(model_key: u64, dimension: usize) -> Self {
        VectorCache {
            path: None,
            model_key,
            dimension,
            vectors: HashMap::new(),
            tokens: HashMap::new(),
            unsaved: 0,
            claimed: HashSet::new(),
        }
    }

    /// The file for this model in `dir`.
    pub fn file_in(dir: &Path, model_key: u64) -> PathBuf {
        dir.join(format!("vectors-{model_key:016x}.bin"))
    }

    /// Opens the model's cache in `dir`; a missing file is an empty cache. A damaged one is an
    /// error naming it; [`VectorCache::open_or_empty`] turns that into an empty cache.
    pub fn open(dir: &Path, model_key: u64, dimension: usize) -> Result<Self, CacheError> {
        let path = Self::file_in(dir, model_key);
        let mut cache = VectorCache {
            path: Some(path.clone()),
            ..Self::in_memory(model_key, dimension)
        };
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cache),
            Err(e) => {
                return Err(CacheError::Read {
                    path,
                    message: e.to_string(),
                })
            }
        };
        if bytes.starts_with(MAGIC_V1) {
            tracing::info!(path = %path.display(), "the vector cache predates token vectors; rebuilding it");
            return Ok(cache);
        }
        (cache.vectors, cache.tokens) =
            decode(&bytes, model_key, dimension).map_err(|reason| CacheError::Corrupt {
                path: path.clone(),
                reason,
            })?;
        Ok(cache)
    }

    /// Like [`VectorCache::open`], but a cache that cannot be read is reported and replaced by
    /// an empty one (the next save overwrites it).
    pub fn open_or_empty(
        dir: &Path,
        model_key: u64,
        dimension: usize,
    ) -> (Self, Option<CacheError>) {
        match Self::open(dir, model_key, dimension) {
            Ok(cache) => (cache, None),
            Err(error) => {
                let cache = VectorCache {
                    path: Some(Self::file_in(dir, model_key)),
                    ..Self::in_memory(model_key, dimension)
                };
                (cache, Some(error))
            }
        }
    }

    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    pub fn get(&self, text_hash: u128) -> Option<Arc<[f32]>> {
        self.vectors.get(&text_hash).cloned()
    }

    pub fn tokens(&self, text_hash: u128) -> Option<Arc<TokenVectors>> {
        self.tokens.get(&text_hash).cloned()
    }

    /// Adds a text's vector, and its token vectors when given.
    pub fn insert(
        &mut self,
        text_hash: u128,
        vector: Arc<[f32]>,
        tokens: Option<Arc<TokenVectors>>,
    ) {
        if vector.len() != self.dimension {
            return;
        }
        if self.vectors.insert(text_hash, vector).is_none() {
            self.unsaved += 1;
        }
        if let Some(tokens) = tokens {
            if self.tokens.insert(text_hash, tokens).is_none() {
                self.unsaved += 1;
            }
        }
        self.claimed.remove(&text_hash);
    }

    /// Claims the text for the caller to embed, unless it is cached (with its token vectors
    /// when `with_tokens`) or someone else has claimed it.
    pub fn claim(&mut self, text_hash: u128, with_tokens: bool) -> Claim {
        let cached = self.vectors.contains_key(&text_hash)
            && (!with_tokens || self.tokens.contains_key(&text_hash));
        if cached {
            Claim::Cached
        } else if self.claimed.insert(text_hash) {
            Claim::Claimed
        } else {
            Claim::Pending
        }
    }

    /// Gives up a claim that was not fulfilled (the embedding failed).
    pub fn release(&mut self, text_hash: u128) {
        self.claimed.remove(&text_hash);
    }

    pub fn unsaved(&self) -> usize {
        self.unsaved
    }

    /// The bytes of the file as it stands now, for [`write_atomically`]; clears `unsaved`.
    /// Encoding under the caller's lock and writing outside it keeps searches and embedding
    /// from waiting on the disk.
    pub fn snapshot(&mut self) -> Option<(PathBuf, Vec<u8>)> {
        let path = self.path.clone()?;
        self.unsaved = 0;
        Some((path, self.encode()))
    }

    fn encode(&self) -> Vec<u8> {
        // Sorted, so the same content always gives the same file.
        let mut entries: Vec<_> = self.vectors.iter().collect();
        entries.sort_unstable_by_key(|(hash, _)| **hash);
        let mut tokens: Vec<_> = self.tokens.iter().collect();
        tokens.sort_unstable_by_key(|(hash, _)| **hash);
        let dimension = self.dimension;
        let mut out = Vec::with_capacity(HEADER + entries.len() * (16 + 4 * dimension) + 8);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.model_key.to_le_bytes());
        out.extend_from_slice(&(dimension as u32).to_le_bytes());
        out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        for (hash, vector) in entries {
            out.extend_from_slice(&hash.to_le_bytes());
            for value in vector.iter() {
                out.extend_from_slice(&value.to_le_bytes());
            }
        }
        out.extend_from_slice(&(tokens.len() as u64).to_le_bytes());
        for (hash, vectors) in tokens {
            out.extend_from_slice(&hash.to_le_bytes());
            vectors.encode(&mut out);
        }
        let checksum = xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }
}

type Decoded = (HashMap<u128, Arc<[f32]>>, HashMap<u128, Arc<TokenVectors>>);

fn decode(bytes: &[u8], model_key: u64, dimension: usize) -> Result<Decoded, String> {
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
    if bytes.len() < HEADER + 8 || &bytes[..8] != MAGIC {
        return Err("not a Wayfinder vector cache".into());
    }
    let (body, tail) = bytes.split_at(bytes.len() - 8);
    if xxh3_64(body).to_le_bytes() != tail {
        return Err("checksum mismatch".into());
    }
    if u64_at(8) != model_key {
        return Err("written for another model".into());
    }
    let stored_dimension = u32::from_le_bytes(bytes[16..20].try_into().unwrap_or([0; 4])) as usize;
    if stored_dimension != dimension {
        return Err(format!(
            "vectors of width {stored_dimension}, the model gives {dimension}"
        ));
    }
    let count = u64_at(20) as usize;
    let entry = 16 + 4 * dimension;
    let vectors_end = count
        .checked_mul(entry)
        .map(|n| n + HEADER)
        .filter(|end| end + 8 <= body.len())
        .ok_or_else(|| format!("{count} vectors announced, {} bytes held", body.len()))?;
    let mut vectors = HashMap::with_capacity(count);
    for chunk in body[HEADER..vectors_end].chunks_exact(entry) {
        let hash = u128::from_le_bytes(chunk[..16].try_into().unwrap_or([0; 16]));
        let vector: Arc<[f32]> = chunk[16..]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
            .collect();
        vectors.insert(hash, vector);
    }
    let token_count = u64_at(vectors_end) as usize;
    let mut tokens = HashMap::with_capacity(token_count.min(count));
    let mut at = vectors_end + 8;
    for _ in 0..token_count {
        let hash = body
            .get(at..at + 16)
            .and_then(|b| b.try_into().ok())
            .map(u128::from_le_bytes)
            .ok_or("token vectors cut short")?;
        let (text_tokens, used) = TokenVectors::decode(&body[at + 16..], dimension)?;
        tokens.insert(hash, Arc::new(text_tokens));
        at += 16 + used;
    }
    if at != body.len() {
        return Err(format!("{} bytes after the token vectors", body.len() - at));
    }
    Ok((vectors, tokens))
}

/// Saves `cache` when it holds at least `at_least` unsaved vectors (at least one): encoded
/// under the lock, written outside it. A poisoned lock saves nothing.
pub fn save_unsaved(cache: &Mutex<VectorCache>, at_least: usize) -> Result<(), CacheError> {
    let snapshot = match cache.lock() {
        Ok(mut cache) if cache.unsaved() >= at_least.max(1) => cache.snapshot(),
        _ => None,
    };
    match snapshot {
        Some((path, bytes)) => write_atomically(&path, &bytes),
        None => Ok(()),
    }
}

/// Writes `bytes` to a temporary file beside `path`, flushes it to disk and renames it over
/// `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
    let write_error = |e: std::io::Error| CacheError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write_error)?;
    }
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result.map_err(write_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("wayfinder-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_saved_cache_reads_back_and_damage_is_reported() {
        let dir = temp_dir("roundtrip");
        let mut cache = VectorCache::open(&dir, 7, 3).unwrap();
        let tokens = Arc::new(TokenVectors::new(vec![5], [[0.0, 1.0, 0.0].as_slice()]));
        cache.insert(
            1,
            Arc::from(vec![0.5, 0.25, 1.0]),
            Some(Arc::clone(&tokens)),
        );
        cache.insert(2, Arc::from(vec![1.0, 0.0, 0.0]), None);
        assert_eq!(cache.claim(2, false), Claim::Cached);
        assert_eq!(
            cache.claim(2, true),
            Claim::Claimed,
            "cached without its tokens"
        );
        let (path, bytes) = cache.snapshot().unwrap();
        write_atomically(&path, &bytes).unwrap();

        let reopened = VectorCache::open(&dir, 7, 3).unwrap();
        assert_eq!(reopened.len(), 2);
        assert_eq!(&*reopened.get(1).unwrap(), &[0.5, 0.25, 1.0]);
        assert_eq!(reopened.tokens(1), Some(tokens));
        assert_eq!(reopened.tokens(2), None);
        assert!(
            VectorCache::open(&dir, 8, 3).unwrap().is_empty(),
            "another model, another file"
        );

        let mut damaged = bytes.clone();
        damaged[HEADER + 3] ^= 0xff;
        std::fs::write(&path, &damaged).unwrap();
        let error = VectorCache::open(&dir, 7, 3).unwrap_err();
        assert!(error.to_string().contains("checksum"), "{error}");
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let (cache, error) = VectorCache::open_or_empty(&dir, 7, 3);
        assert!(cache.is_empty() && error.is_some());
        std::fs::write(&path, MAGIC_V1).unwrap();
        assert!(
            VectorCache::open(&dir, 7, 3).unwrap().is_empty(),
            "a cache of the format before token vectors is rebuilt, not an error"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
