//! The persistent vector cache: document vectors on disk, keyed by model and document text,
//! and for the texts that are a member's document, their content-token vectors
//! ([`crate::tokens`]).
//!
//! A restart or a reload embeds only texts it has never seen. One file per model
//! (`vectors-<model key>.bin`), an append-only log: a save appends the records added since the
//! last one, so a reload that embeds a few texts writes a few records, not the whole cache.
//! Each record carries its own checksum. A process killed while appending leaves a torn last
//! record, which the next reader ignores and the next writer cuts off; damage anywhere else is
//! reported with its path and offset, and the records before it are kept.
//!
//! Appends take an exclusive lock on the file and first check what lies past the end this
//! writer last saw: records another process (or another engine of this one) appended are kept,
//! a torn tail is cut. So several writers can share one cache folder.
//!
//! Layout (little endian): magic, model key u64, dimension u32; then records of tag u8
//! ([`VECTOR`] or [`TOKENS`]), text hash u128, payload length u32, payload (`dimension` f32, or
//! token vectors as [`TokenVectors`] encodes them), xxh3 of the record's bytes before it u64.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use xxhash_rust::xxh3::xxh3_64;

use crate::tokens::TokenVectors;

const MAGIC: &[u8; 8] = b"WFVEC\x00\x00\x03";
/// Files of the formats before the log: read as empty and replaced on the first save.
const OLDER_MAGICS: [&[u8; 8]; 2] = [b"WFVEC\x00\x00\x01", b"WFVEC\x00\x00\x02"];
const HEADER: usize = 8 + 8 + 4;
/// Record tags.
const VECTOR: u8 = 1;
const TOKENS: u8 = 2;
/// Tag, hash and payload length before the payload; checksum after it.
const RECORD_HEAD: usize = 1 + 16 + 4;
const RECORD_TAIL: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cannot read the vector cache {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("the vector cache {path} is damaged ({reason}); what it lacks will be rebuilt")]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot write the vector cache {path}: {message}")]
    Write { path: PathBuf, message: String },
}

/// Vectors by document-text hash, for one model.
#[derive(Debug)]
pub struct VectorCache {
    dimension: usize,
    vectors: HashMap<u128, Arc<[f32]>>,
    tokens: HashMap<u128, Arc<TokenVectors>>,
    /// The file, or none for a cache that is never written.
    log: Option<Arc<Mutex<CacheLog>>>,
    /// Records added since the last save, encoded, and how many.
    unsaved: Vec<u8>,
    unsaved_records: usize,
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
    pub fn in_memory(dimension: usize) -> Self {
        VectorCache {
            dimension,
            vectors: HashMap::new(),
            tokens: HashMap::new(),
            log: None,
            unsaved: Vec::new(),
            unsaved_records: 0,
            claimed: HashSet::new(),
        }
    }

    /// The file for this model in `dir`.
    pub fn file_in(dir: &Path, model_key: u64) -> PathBuf {
        dir.join(format!("vectors-{model_key:016x}.bin"))
    }

    /// Opens the model's cache in `dir`; a missing file is an empty cache. A file that cannot
    /// be read, or is damaged, comes back with the error naming it, and the cache holds the
    /// records before the damage; the next save cuts the damage off.
    pub fn open(dir: &Path, model_key: u64, dimension: usize) -> (Self, Option<CacheError>) {
        let path = Self::file_in(dir, model_key);
        let mut log = CacheLog {
            path: path.clone(),
            header: header(model_key, dimension),
            dimension,
            known_end: 0,
        };
        let mut cache = Self::in_memory(dimension);
        let mut error = None;
        match std::fs::read(&path) {
            Ok(bytes) if OLDER_MAGICS.iter().any(|magic| bytes.starts_with(*magic)) => {
                tracing::info!(path = %path.display(), "the vector cache is of an older format; rebuilding it");
            }
            Ok(bytes) if bytes.starts_with(&log.header) => {
                let scanned = scan(&bytes[HEADER..], dimension, |tag, hash, payload| {
                    cache.load(tag, hash, payload)
                });
                log.known_end = (HEADER + scanned.valid) as u64;
                if let Some(reason) = scanned.damage {
                    error = Some(CacheError::Corrupt {
                        path: path.clone(),
                        reason: format!(
                            "at byte {}: {reason}; the {} vectors before it are kept",
                            log.known_end,
                            cache.len()
                        ),
                    });
                }
            }
            Ok(bytes) if bytes.is_empty() => {}
            Ok(bytes) => {
                let reason = if bytes.len() >= HEADER && bytes.starts_with(MAGIC) {
                    "written for another model or dimension"
                } else {
                    "not a Wayfinder vector cache"
                };
                error = Some(CacheError::Corrupt {
                    path: path.clone(),
                    reason: reason.into(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                error = Some(CacheError::Read {
                    path: path.clone(),
                    message: e.to_string(),
                })
            }
        }
        cache.log = Some(Arc::new(Mutex::new(log)));
        (cache, error)
    }

    /// Adds a record read from the file ([`scan`] has checked a vector's width); token vectors
    /// that do not decode are skipped.
    fn load(&mut self, tag: u8, hash: u128, payload: &[u8]) {
        match tag {
            VECTOR => {
                self.vectors.insert(hash, decode_vector(payload));
            }
            TOKENS => {
                if let Ok((tokens, _)) = TokenVectors::decode(payload, self.dimension) {
                    self.tokens.insert(hash, Arc::new(tokens));
                }
            }
            _ => {}
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
        // A cache that is never written keeps no records to save.
        let persisted = self.log.is_some();
        if !self.vectors.contains_key(&text_hash) && persisted {
            let start = self.begin_record(VECTOR, text_hash);
            for value in vector.iter() {
                self.unsaved.extend_from_slice(&value.to_le_bytes());
            }
            self.end_record(start);
        }
        self.vectors.insert(text_hash, vector);
        if let Some(tokens) = tokens {
            if !self.tokens.contains_key(&text_hash) && persisted {
                let start = self.begin_record(TOKENS, text_hash);
                tokens.encode(&mut self.unsaved);
                self.end_record(start);
            }
            self.tokens.insert(text_hash, tokens);
        }
        self.claimed.remove(&text_hash);
    }

    fn begin_record(&mut self, tag: u8, hash: u128) -> usize {
        let start = self.unsaved.len();
        self.unsaved.push(tag);
        self.unsaved.extend_from_slice(&hash.to_le_bytes());
        self.unsaved.extend_from_slice(&[0; 4]);
        start
    }

    fn end_record(&mut self, start: usize) {
        let payload = (self.unsaved.len() - start - RECORD_HEAD) as u32;
        self.unsaved[start + RECORD_HEAD - 4..start + RECORD_HEAD]
            .copy_from_slice(&payload.to_le_bytes());
        let checksum = xxh3_64(&self.unsaved[start..]);
        self.unsaved.extend_from_slice(&checksum.to_le_bytes());
        self.unsaved_records += 1;
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

    /// Records added since the last save.
    pub fn unsaved(&self) -> usize {
        self.unsaved_records
    }

    /// Takes the records added since the last save, for [`CacheLog::append`] outside the
    /// cache's lock, so searches and embedding do not wait on the disk.
    fn take_unsaved(&mut self) -> Option<Unsaved> {
        let log = Arc::clone(self.log.as_ref()?);
        let records = std::mem::take(&mut self.unsaved_records);
        Some(Unsaved {
            log,
            bytes: std::mem::take(&mut self.unsaved),
            records,
        })
    }

    /// Puts back records a save could not write, so the next save tries them again.
    fn restore_unsaved(&mut self, unsaved: Unsaved) {
        self.unsaved.extend_from_slice(&unsaved.bytes);
        self.unsaved_records += unsaved.records;
    }
}

struct Unsaved {
    log: Arc<Mutex<CacheLog>>,
    bytes: Vec<u8>,
    records: usize,
}

/// The cache file as one writer knows it.
#[derive(Debug)]
struct CacheLog {
    path: PathBuf,
    header: [u8; HEADER],
    dimension: usize,
    /// Where this writer last left the file valid: after its header and whole records.
    known_end: u64,
}

impl CacheLog {
    /// Appends whole records under an exclusive lock on the file, after checking what lies
    /// past `known_end`: another writer's records are kept, a torn or damaged tail is cut.
    /// The file is flushed to disk before the lock is released.
    fn append(&mut self, records: &[u8]) -> Result<(), CacheError> {
        let write_error = |e: std::io::Error| CacheError::Write {
            path: self.path.clone(),
            message: e.to_string(),
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(write_error)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.path)
            .map_err(write_error)?;
        file.lock().map_err(write_error)?;
        let end = self.valid_end(&mut file).map_err(write_error)?;
        let result = (|| {
            file.set_len(end)?;
            file.seek(SeekFrom::Start(end))?;
            if end == 0 {
                file.write_all(&self.header)?;
            }
            file.write_all(records)?;
            file.sync_data()?;
            file.stream_position()
        })();
        match result {
            Ok(new_end) => {
                self.known_end = new_end;
                Ok(())
            }
            Err(e) => Err(write_error(e)),
        }
    }

    /// The end of the file's valid part: 0 when the header is not this cache's (a new file, or
    /// one of an older format), else the end of the last whole record.
    fn valid_end(&self, file: &mut File) -> std::io::Result<u64> {
        let len = file.metadata()?.len();
        let mut header = [0u8; HEADER];
        if len < HEADER as u64 {
            return Ok(0);
        }
        file.seek(SeekFrom::Start(0))?;
        file.read_exact(&mut header)?;
        if header != self.header {
            return Ok(0);
        }
        // Past what this writer knows, or from the start if the file shrank under it.
        let from = if (HEADER as u64..=len).contains(&self.known_end) {
            self.known_end
        } else {
            HEADER as u64
        };
        let mut tail = Vec::with_capacity((len - from) as usize);
        file.seek(SeekFrom::Start(from))?;
        file.read_to_end(&mut tail)?;
        let scanned = scan(&tail, self.dimension, |_, _, _| {});
        if let Some(reason) = scanned.damage {
            tracing::warn!(
                path = %self.path.display(),
                at = from + scanned.valid as u64,
                %reason,
                "cutting a damaged tail off the vector cache"
            );
        }
        Ok(from + scanned.valid as u64)
    }
}

fn header(model_key: u64, dimension: usize) -> [u8; HEADER] {
    let mut header = [0u8; HEADER];
    header[..8].copy_from_slice(MAGIC);
    header[8..16].copy_from_slice(&model_key.to_le_bytes());
    header[16..].copy_from_slice(&(dimension as u32).to_le_bytes());
    header
}

fn decode_vector(payload: &[u8]) -> Arc<[f32]> {
    payload
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

struct Scanned {
    /// Bytes of whole, intact records from the start.
    valid: usize,
    /// Why the scan stopped before the end.
    damage: Option<String>,
}

/// Walks the records in `bytes`, handing each intact one to `record`, up to the first that is
/// cut short or fails its checksum.
fn scan(bytes: &[u8], dimension: usize, mut record: impl FnMut(u8, u128, &[u8])) -> Scanned {
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let Some(head) = rest.get(..RECORD_HEAD) else {
            return damaged(at, "a record cut short");
        };
        let tag = head[0];
        let hash = u128::from_le_bytes(head[1..17].try_into().unwrap_or([0; 16]));
        let payload = u32::from_le_bytes(head[17..21].try_into().unwrap_or([0; 4])) as usize;
        let body_end = RECORD_HEAD + payload;
        let Some(stored) = rest.get(body_end..body_end + RECORD_TAIL) else {
            return damaged(at, "a record cut short");
        };
        if xxh3_64(&rest[..body_end]).to_le_bytes() != stored {
            return damaged(at, "checksum mismatch");
        }
        if tag == VECTOR && payload != 4 * dimension {
            return damaged(
                at,
                &format!("a vector of {payload} bytes, expected {}", 4 * dimension),
            );
        }
        record(tag, hash, &rest[RECORD_HEAD..body_end]);
        at += body_end + RECORD_TAIL;
    }
    Scanned {
        valid: at,
        damage: None,
    }
}

fn damaged(valid: usize, reason: &str) -> Scanned {
    Scanned {
        valid,
        damage: Some(reason.to_string()),
    }
}

/// Appends the records `cache` holds unsaved when there are at least `at_least` of them (at
/// least one): taken under the cache's lock, written outside it. Records that cannot be
/// written go back to the cache for the next save. A poisoned cache lock saves nothing.
pub fn save_unsaved(cache: &Mutex<VectorCache>, at_least: usize) -> Result<(), CacheError> {
    let unsaved = match cache.lock() {
        Ok(mut cache) if cache.unsaved() >= at_least.max(1) => cache.take_unsaved(),
        _ => None,
    };
    let Some(unsaved) = unsaved else {
        return Ok(());
    };
    // A writer that panicked left `known_end` at worst stale, and `append` checks what lies
    // past it anyway.
    let result = unsaved
        .log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .append(&unsaved.bytes);
    if result.is_err() {
        if let Ok(mut cache) = cache.lock() {
            cache.restore_unsaved(unsaved);
        }
    }
    result
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
        let mut file = File::create(&temporary)?;
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

    fn open(dir: &Path) -> VectorCache {
        let (cache, error) = VectorCache::open(dir, 7, 3);
        assert!(error.is_none(), "{error:?}");
        cache
    }

    fn save(cache: VectorCache) {
        save_unsaved(&Mutex::new(cache), 1).unwrap();
    }

    fn file_len(dir: &Path) -> u64 {
        std::fs::metadata(VectorCache::file_in(dir, 7))
            .unwrap()
            .len()
    }

    #[test]
    fn saves_append_only_what_is_new_and_read_back() {
        let dir = temp_dir("append");
        let mut cache = open(&dir);
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
        let cache = Mutex::new(cache);
        save_unsaved(&cache, 1).unwrap();
        let first = std::fs::read(VectorCache::file_in(&dir, 7)).unwrap();

        // A second save writes only the record added since, after the first save's bytes.
        let mut cache = cache.into_inner().unwrap();
        cache.insert(1, Arc::from(vec![9.0, 9.0, 9.0]), None);
        cache.insert(3, Arc::from(vec![0.0, 0.0, 1.0]), None);
        assert_eq!(
            cache.unsaved(),
            1,
            "a text already cached is not saved again"
        );
        save(cache);
        let second = std::fs::read(VectorCache::file_in(&dir, 7)).unwrap();
        assert_eq!(&second[..first.len()], &first[..]);
        assert_eq!(second.len() - first.len(), RECORD_HEAD + 12 + RECORD_TAIL);

        let reopened = open(&dir);
        assert_eq!(reopened.len(), 3);
        assert_eq!(&*reopened.get(1).unwrap(), &[0.5, 0.25, 1.0]);
        assert_eq!(reopened.tokens(1), Some(tokens));
        assert_eq!(reopened.tokens(2), None);
        assert!(
            open(&dir).unsaved() == 0,
            "what was read is not saved again"
        );
        let (other, error) = VectorCache::open(&dir, 8, 3);
        assert!(
            other.is_empty() && error.is_none(),
            "another model, another file"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_torn_tail_is_cut_and_damage_keeps_the_records_before_it() {
        let dir = temp_dir("damage");
        let mut cache = open(&dir);
        for hash in 1..=3 {
            cache.insert(hash, Arc::from(vec![hash as f32, 0.0, 0.0]), None);
        }
        save(cache);
        let path = VectorCache::file_in(&dir, 7);
        let whole = std::fs::read(&path).unwrap();
        let record = RECORD_HEAD + 12 + RECORD_TAIL;

        // A process killed while appending: the last record is cut short.
        std::fs::write(&path, &whole[..whole.len() - 5]).unwrap();
        let (mut cache, error) = VectorCache::open(&dir, 7, 3);
        assert_eq!(cache.len(), 2);
        assert!(error.unwrap().to_string().contains("cut short"));
        cache.insert(4, Arc::from(vec![4.0, 0.0, 0.0]), None);
        save(cache);
        assert_eq!(
            file_len(&dir),
            (HEADER + 3 * record) as u64,
            "the torn record is cut"
        );
        let reopened = open(&dir);
        assert_eq!(reopened.len(), 3);
        assert!(reopened.get(3).is_none() && reopened.get(4).is_some());

        // A flipped byte in the second record: the first is kept, the rest rebuilt.
        let mut damaged = std::fs::read(&path).unwrap();
        damaged[HEADER + record + RECORD_HEAD + 1] ^= 0xff;
        std::fs::write(&path, &damaged).unwrap();
        let (mut cache, error) = VectorCache::open(&dir, 7, 3);
        let error = error.unwrap().to_string();
        assert!(
            error.contains("checksum") && error.contains(&format!("at byte {}", HEADER + record)),
            "{error}"
        );
        assert_eq!(cache.len(), 1);
        cache.insert(2, Arc::from(vec![2.0, 0.0, 0.0]), None);
        save(cache);
        assert_eq!(
            file_len(&dir),
            (HEADER + 2 * record) as u64,
            "the damage is cut"
        );
        assert_eq!(open(&dir).len(), 2);

        std::fs::write(&path, b"not a cache at all").unwrap();
        let (cache, error) = VectorCache::open(&dir, 7, 3);
        assert!(cache.is_empty() && error.unwrap().to_string().contains("not a Wayfinder"));
        std::fs::write(&path, OLDER_MAGICS[1]).unwrap();
        let mut cache = open(&dir);
        assert!(
            cache.is_empty(),
            "a cache of an older format is rebuilt, not an error"
        );
        cache.insert(5, Arc::from(vec![5.0, 0.0, 0.0]), None);
        save(cache);
        assert_eq!(open(&dir).len(), 1, "the older file was replaced");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn writers_sharing_a_folder_keep_each_others_records() {
        let dir = temp_dir("shared");
        let (mut one, mut two) = (open(&dir), open(&dir));
        one.insert(1, Arc::from(vec![1.0, 0.0, 0.0]), None);
        two.insert(2, Arc::from(vec![0.0, 1.0, 0.0]), None);
        let one = Mutex::new(one);
        save_unsaved(&one, 1).unwrap();
        save(two);
        one.lock()
            .unwrap()
            .insert(3, Arc::from(vec![0.0, 0.0, 1.0]), None);
        save_unsaved(&one, 1).unwrap();
        let reopened = open(&dir);
        assert_eq!(reopened.len(), 3);

        let mut memory = VectorCache::in_memory(3);
        memory.insert(9, Arc::from(vec![1.0, 0.0, 0.0]), None);
        assert_eq!(
            memory.unsaved(),
            0,
            "an in-memory cache keeps nothing to save"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
