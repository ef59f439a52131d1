//! The persistent vector cache: document vectors, keyed by model and document text, and for
//! the texts that are a member's document, their content-token vectors ([`crate::embed::tokens`]).
//!
//! A restart or a reload embeds only texts it has never seen. The vectors live in an LMDB
//! environment (`heed`) in the cache folder, `vectors.lmdb/`, read per key through a memory
//! map: a process holds in memory only what it reads (the texts of the catalogs it serves), so
//! its RSS does not depend on what else the folder holds, and several processes on one host
//! (the CLI beside the router) read and write one folder at once, LMDB serialising the writers
//! (it needs a local file system). Why LMDB: the whole-file log before it was read whole at every start (1.1 GB
//! for a folder that had held three schemas, all of it resident); LMDB reads a key in a few
//! microseconds without a copy, writes in transactions that a killed process cannot tear, and
//! needs no compaction of its own.
//!
//! Flow: the indexer claims the texts it must embed ([`VectorCache::claim`]), inserts their
//! vectors, and [`save_unsaved`] writes them in one transaction, outside the cache's lock, with
//! a time stamp for every key claimed or written since the last save; when the store grows
//! past its bound (`cache_max_bytes`, the pages in use) the entries stamped longest ago are
//! removed first, none that any process used in the last hour or that this process used. A folder written by an earlier version (one
//! `vectors-<model key>.bin` log per model) is migrated on first open, and the log removed.
//!
//! Keys: model key u64 then text hash u128, big endian. Values: `dimension` f32 little endian
//! (vectors), [`TokenVectors`] encoded (tokens), Unix seconds u64 big endian (last use).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, WithoutTls};
use xxhash_rust::xxh3::xxh3_64;

use crate::embed::tokens::TokenVectors;
use crate::episode::Episode;
use crate::files::{is_disk_full, replace_file};

/// The environment's folder inside the cache folder.
const STORE_DIR: &str = "vectors.lmdb";
/// After a prune the store holds at most this share of its bound: room for a few indexing
/// runs before the next.
const PRUNE_TO: f64 = 0.8;
/// Entries any process used more recently than this are never pruned: an indexing run that
/// found a text cached reads it minutes later, and another process may prune meanwhile.
const PRUNE_GRACE_SECONDS: u64 = 3600;
/// The map is address space, not memory or disk (the file grows only as it is written): one
/// size for every process on a folder, so that none outgrows another's map, and far above any
/// bound, so that a save does not find it full.
const MAP_SIZE: usize = 256 << 30;
/// Read slots, shared by every process on the folder (LMDB's default, 126, is few for the
/// threads of a router and a CLI beside it).
const MAX_READERS: u32 = 1024;

/// The log format of earlier versions, read once to migrate it.
const LOG_MAGIC: &[u8; 8] = b"WFVEC\x00\x00\x03";
const LOG_HEADER: usize = 8 + 8 + 4;
const VECTOR: u8 = 1;
const TOKENS: u8 = 2;
const RECORD_HEAD: usize = 1 + 16 + 4;
const RECORD_TAIL: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cannot open the vector cache {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("cannot read the vector cache {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("the vector cache {path} is damaged ({reason}); what it lacks will be rebuilt")]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot write the vector cache {path}: {message}")]
    Write { path: PathBuf, message: String },
    #[error("the disk holding the vector cache {path} is full (ENOSPC: no space left on device)")]
    DiskFull { path: PathBuf },
}

impl CacheError {
    /// A failed write to `path`, naming a full disk as such.
    fn writing(path: &Path, error: std::io::Error) -> CacheError {
        if is_disk_full(&error, path) {
            CacheError::DiskFull {
                path: path.to_path_buf(),
            }
        } else {
            CacheError::Write {
                path: path.to_path_buf(),
                message: error.to_string(),
            }
        }
    }

    /// A failed LMDB write to the store at `path`.
    fn writing_store(path: &Path, error: heed::Error) -> CacheError {
        match error {
            heed::Error::Io(error) => CacheError::writing(path, error),
            other => CacheError::Write {
                path: path.to_path_buf(),
                message: other.to_string(),
            },
        }
    }
}

/// Writes to cache folders (vectors and graphs) that fail, logged as one episode.
pub static CACHE_WRITES: Episode = Episode::new(
    "the vector cache cannot be written",
    "indexing and search go on with the vectors in memory, and what is unsaved is written once \
     the folder can be written again (a restart meanwhile embeds it again)",
);

/// One cache folder's store, as a cache uses it: the environment shared by every handle of the
/// process on that folder, and this handle's bound.
#[derive(Clone)]
struct Store {
    shared: Arc<Environment>,
    max_bytes: u64,
}

/// The LMDB environment of one cache folder; LMDB allows one per process and folder, so
/// handles share it ([`OPEN`]).
struct Environment {
    path: PathBuf,
    env: Env<WithoutTls>,
    vectors: Database<Bytes, Bytes>,
    tokens: Database<Bytes, Bytes>,
    used: Database<Bytes, Bytes>,
}

/// The environments open in this process, by folder.
static OPEN: Mutex<Option<HashMap<PathBuf, std::sync::Weak<Environment>>>> = Mutex::new(None);

impl std::ops::Deref for Store {
    type Target = Environment;

    fn deref(&self) -> &Environment {
        &self.shared
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// Vectors by document-text hash, for one model.
#[derive(Debug)]
pub struct VectorCache {
    dimension: usize,
    model_key: u64,
    /// The folder's store, or none for a cache that is never written.
    store: Option<Store>,
    /// Vectors and tokens inserted and not yet written (all of them, without a store).
    fresh_vectors: HashMap<u128, Arc<[f32]>>,
    fresh_tokens: HashMap<u128, Arc<TokenVectors>>,
    /// Entries inserted since the last save.
    unsaved_records: usize,
    /// Keys read or inserted since the last save: their last use is written with it.
    touched: HashSet<u128>,
    /// Every key this process used: a prune keeps them.
    live: HashSet<u128>,
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

fn key(model_key: u64, text_hash: u128) -> [u8; 24] {
    let mut key = [0u8; 24];
    key[..8].copy_from_slice(&model_key.to_be_bytes());
    key[8..].copy_from_slice(&text_hash.to_be_bytes());
    key
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl VectorCache {
    /// An empty cache that is never written.
    pub fn in_memory(dimension: usize) -> Self {
        VectorCache {
            dimension,
            model_key: 0,
            store: None,
            fresh_vectors: HashMap::new(),
            fresh_tokens: HashMap::new(),
            unsaved_records: 0,
            touched: HashSet::new(),
            live: HashSet::new(),
            claimed: HashSet::new(),
        }
    }

    /// The store's folder in the cache folder `dir`.
    pub fn store_in(dir: &Path) -> PathBuf {
        dir.join(STORE_DIR)
    }

    /// The log an earlier version kept for this model in `dir`.
    pub fn legacy_file_in(dir: &Path, model_key: u64) -> PathBuf {
        dir.join(format!("vectors-{model_key:016x}.bin"))
    }

    /// Opens the cache folder `dir` for the model, bounded to `max_bytes`, migrating an earlier
    /// version's log. A store that cannot be opened (damaged, or not LMDB) is moved aside to
    /// `vectors.lmdb.damaged` and a new one made, with the error naming it; failing that, the
    /// cache stays in memory. A log that is damaged is migrated up to the damage, with the
    /// error.
    pub fn open(
        dir: &Path,
        model_key: u64,
        dimension: usize,
        max_bytes: u64,
    ) -> (Self, Option<CacheError>) {
        let mut cache = Self::in_memory(dimension);
        cache.model_key = model_key;
        let path = Self::store_in(dir);
        let (store, mut error) = match Store::open(&path, max_bytes) {
            Ok(store) => (Some(store), None),
            // Anything else (a lock, the disk, the system) may pass: the store is kept.
            Err(error) if !matches!(error, CacheError::Corrupt { .. }) => (None, Some(error)),
            Err(error) => {
                tracing::warn!(%error, "moving the vector cache aside and starting a new one");
                let aside = path.with_extension("lmdb.damaged");
                let _ = std::fs::remove_dir_all(&aside);
                let store = std::fs::rename(&path, &aside)
                    .ok()
                    .and_then(|()| Store::open(&path, max_bytes).ok());
                (store, Some(error))
            }
        };
        let Some(store) = store else {
            return (cache, error);
        };
        cache.store = Some(store);
        if let Some(migration) = cache.migrate(&Self::legacy_file_in(dir, model_key)) {
            error.get_or_insert(migration);
        }
        (cache, error)
    }

    /// Moves the records of an earlier version's log into the store, then removes the log.
    fn migrate(&mut self, log: &Path) -> Option<CacheError> {
        let bytes = match std::fs::read(log) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                return Some(CacheError::Read {
                    path: log.to_path_buf(),
                    message: e.to_string(),
                })
            }
        };
        let mut error = None;
        if bytes.len() >= LOG_HEADER && bytes.starts_with(LOG_MAGIC) {
            let scanned = scan(
                &bytes[LOG_HEADER..],
                self.dimension,
                |tag, hash, payload| match tag {
                    VECTOR => {
                        self.insert(hash, decode_vector(payload), None);
                    }
                    TOKENS => {
                        if let Ok((tokens, _)) = TokenVectors::decode(payload, self.dimension) {
                            self.fresh_tokens.insert(hash, Arc::new(tokens));
                            self.unsaved_records += 1;
                        }
                    }
                    _ => {}
                },
            );
            if let Some(reason) = scanned.damage {
                error = Some(CacheError::Corrupt {
                    path: log.to_path_buf(),
                    reason: format!(
                        "at byte {}: {reason}; the records before it were kept",
                        LOG_HEADER + scanned.valid
                    ),
                });
            }
        }
        let Some(save) = self.take_save() else {
            return error;
        };
        match save.store.write(&save) {
            Ok(()) => {
                self.saved(&save);
                let _ = std::fs::remove_file(log);
                tracing::info!(
                    from = %log.display(),
                    to = %save.store.path.display(),
                    records = save.records,
                    "migrated the vector cache of an earlier version into the LMDB store, and removed its log"
                );
            }
            Err(e) => {
                error = Some(CacheError::writing_store(&save.store.path, e));
                self.unsaved_again(save);
            }
        }
        error
    }

    fn stored<T>(
        &self,
        read: impl FnOnce(&Store, &heed::RoTxn<'_, WithoutTls>) -> heed::Result<Option<T>>,
    ) -> Option<T> {
        let store = self.store.as_ref()?;
        let txn = match store.env.read_txn() {
            Ok(txn) => txn,
            Err(error) => {
                tracing::warn!(path = %store.path.display(), %error, "cannot read the vector cache");
                return None;
            }
        };
        read(store, &txn).ok().flatten()
    }

    /// The text's vector. Reading does not count as a use: [`VectorCache::claim`], which every
    /// indexing run asks for each of its texts first, does.
    pub fn get(&self, text_hash: u128) -> Option<Arc<[f32]>> {
        if let Some(vector) = self.fresh_vectors.get(&text_hash) {
            return Some(Arc::clone(vector));
        }
        let key = key(self.model_key, text_hash);
        let dimension = self.dimension;
        self.stored(|store, txn| {
            Ok(store
                .vectors
                .get(txn, &key)?
                .filter(|bytes| bytes.len() == 4 * dimension)
                .map(decode_vector))
        })
    }

    pub fn tokens(&self, text_hash: u128) -> Option<Arc<TokenVectors>> {
        if let Some(tokens) = self.fresh_tokens.get(&text_hash) {
            return Some(Arc::clone(tokens));
        }
        let key = key(self.model_key, text_hash);
        let dimension = self.dimension;
        self.stored(|store, txn| {
            Ok(store
                .tokens
                .get(txn, &key)?
                .and_then(|bytes| TokenVectors::decode(bytes, dimension).ok())
                .map(|(tokens, _)| Arc::new(tokens)))
        })
    }

    /// Stamps the key at the next save (every use, so that a long-running process keeps its
    /// entries recent) and keeps it from this process's prunes.
    fn touch(&mut self, text_hash: u128) {
        if self.store.is_some() {
            self.live.insert(text_hash);
            self.touched.insert(text_hash);
        }
    }

    /// Whether the text's vector (and its token vectors when `with_tokens`) is here.
    pub(crate) fn contains(&self, text_hash: u128, with_tokens: bool) -> bool {
        let key = key(self.model_key, text_hash);
        let vector = self.fresh_vectors.contains_key(&text_hash)
            || self
                .stored(|store, txn| Ok(store.vectors.get(txn, &key)?.map(drop)))
                .is_some();
        let tokens = !with_tokens
            || self.fresh_tokens.contains_key(&text_hash)
            || self
                .stored(|store, txn| Ok(store.tokens.get(txn, &key)?.map(drop)))
                .is_some();
        vector && tokens
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
        self.fresh_vectors.insert(text_hash, vector);
        self.unsaved_records += 1;
        if let Some(tokens) = tokens {
            self.fresh_tokens.insert(text_hash, tokens);
            self.unsaved_records += 1;
        }
        self.touch(text_hash);
        self.claimed.remove(&text_hash);
    }

    /// Claims the text for the caller to embed, unless it is cached (with its token vectors
    /// when `with_tokens`) or someone else has claimed it.
    pub fn claim(&mut self, text_hash: u128, with_tokens: bool) -> Claim {
        if self.contains(text_hash, with_tokens) {
            self.touch(text_hash);
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

    /// Entries inserted and uses stamped since the last save.
    pub fn unsaved(&self) -> usize {
        self.unsaved_records + self.touched.len()
    }

    /// What the next save writes, copied (the entries stay readable until it is written).
    fn take_save(&mut self) -> Option<ToSave> {
        let store = self.store.clone()?;
        let records = std::mem::take(&mut self.unsaved_records);
        Some(ToSave {
            store,
            model_key: self.model_key,
            vectors: self
                .fresh_vectors
                .iter()
                .map(|(h, v)| (*h, Arc::clone(v)))
                .collect(),
            tokens: self
                .fresh_tokens
                .iter()
                .map(|(h, t)| (*h, Arc::clone(t)))
                .collect(),
            touched: std::mem::take(&mut self.touched),
            records,
        })
    }

    /// Forgets the fresh entries a save wrote: the store answers for them now.
    fn saved(&mut self, saved: &ToSave) {
        for (hash, _) in &saved.vectors {
            self.fresh_vectors.remove(hash);
        }
        for (hash, _) in &saved.tokens {
            self.fresh_tokens.remove(hash);
        }
    }

    /// Puts back what a save could not write, so the next save tries it again.
    fn unsaved_again(&mut self, saved: ToSave) {
        self.unsaved_records += saved.records;
        self.touched.extend(saved.touched);
    }
}

/// One save's entries, written outside the cache's lock.
struct ToSave {
    store: Store,
    model_key: u64,
    vectors: Vec<(u128, Arc<[f32]>)>,
    tokens: Vec<(u128, Arc<TokenVectors>)>,
    touched: HashSet<u128>,
    records: usize,
}

impl Store {
    fn open(path: &Path, max_bytes: u64) -> Result<Store, CacheError> {
        let open_error = |message: String| CacheError::Open {
            path: path.to_path_buf(),
            message,
        };
        std::fs::create_dir_all(path).map_err(|e| open_error(e.to_string()))?;
        let canonical = path.canonicalize().map_err(|e| open_error(e.to_string()))?;
        let mut open = OPEN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let open = open.get_or_insert_with(HashMap::new);
        open.retain(|_, environment| environment.strong_count() > 0);
        let shared = match open.get(&canonical).and_then(std::sync::Weak::upgrade) {
            Some(shared) => shared,
            None => {
                let shared = Arc::new(Environment::open(&canonical)?);
                open.insert(canonical, Arc::downgrade(&shared));
                shared
            }
        };
        Ok(Store { shared, max_bytes })
    }
}

impl Environment {
    fn open(path: &Path) -> Result<Environment, CacheError> {
        let open_error = |error: heed::Error| match error {
            heed::Error::Mdb(
                heed::MdbError::Invalid
                | heed::MdbError::Corrupted
                | heed::MdbError::VersionMismatch,
            ) => CacheError::Corrupt {
                path: path.to_path_buf(),
                reason: error.to_string(),
            },
            error => CacheError::Open {
                path: path.to_path_buf(),
                message: error.to_string(),
            },
        };
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options
            .map_size(MAP_SIZE)
            .max_dbs(3)
            .max_readers(MAX_READERS);
        // No read-ahead: keys are read at random, and the kernel would otherwise map in the
        // neighbouring pages (other schemas' entries) with each one.
        // SAFETY: the folder must be on a local file system (LMDB's locks do not hold across
        // hosts), and its files are only written through LMDB, by this process and others that
        // open it with this code, which lock them themselves; nothing truncates or rewrites them
        // while they are mapped.
        let mut attempts = 0;
        let env = loop {
            match unsafe { options.flags(EnvFlags::NO_READ_AHEAD).open(path) } {
                // The last handle of this process on the folder is closing: heed has not
                // forgotten it yet.
                Err(heed::Error::EnvAlreadyOpened) if attempts < 50 => {
                    attempts += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                result => break result.map_err(open_error)?,
            }
        };
        // Slots of processes that died holding them.
        let _ = env.clear_stale_readers();
        let mut txn = env.write_txn().map_err(open_error)?;
        let mut database = |name: &str| {
            env.create_database::<Bytes, Bytes>(&mut txn, Some(name))
                .map_err(open_error)
        };
        let (vectors, tokens, used) =
            (database("vectors")?, database("tokens")?, database("used")?);
        txn.commit().map_err(open_error)?;
        Ok(Environment {
            path: path.to_path_buf(),
            env,
            vectors,
            tokens,
            used,
        })
    }
}

impl Store {
    fn write(&self, save: &ToSave) -> heed::Result<()> {
        let mut txn = self.env.write_txn()?;
        let mut buffer = Vec::new();
        for (hash, vector) in &save.vectors {
            buffer.clear();
            for value in vector.iter() {
                buffer.extend_from_slice(&value.to_le_bytes());
            }
            self.vectors
                .put(&mut txn, &key(save.model_key, *hash), &buffer)?;
        }
        for (hash, tokens) in &save.tokens {
            buffer.clear();
            tokens.encode(&mut buffer);
            self.tokens
                .put(&mut txn, &key(save.model_key, *hash), &buffer)?;
        }
        let stamp = now().to_be_bytes();
        for hash in &save.touched {
            self.used
                .put(&mut txn, &key(save.model_key, *hash), &stamp)?;
        }
        txn.commit()
    }

    /// Bytes the store's pages hold.
    fn used_bytes(&self) -> u64 {
        self.env.non_free_pages_size().unwrap_or(0)
    }

    /// Removes the entries used longest ago (before [`PRUNE_GRACE_SECONDS`], and not by this
    /// process: `live`) until the store holds at most [`PRUNE_TO`] of its bound; how many it
    /// removed.
    fn prune(&self, model_key: u64, live: &HashSet<u128>) -> heed::Result<usize> {
        let target = (self.max_bytes as f64 * PRUNE_TO) as u64;
        let recent = now().saturating_sub(PRUNE_GRACE_SECONDS);
        let txn = self.env.read_txn()?;
        let mut entries: Vec<(u64, [u8; 24])> = self
            .used
            .iter(&txn)?
            .filter_map(|entry| {
                let (key, stamp) = entry.ok()?;
                let key: [u8; 24] = key.try_into().ok()?;
                let stamp = u64::from_be_bytes(stamp.try_into().ok()?);
                Some((stamp, key))
            })
            .filter(|(stamp, key)| {
                *stamp < recent
                    && !(key[..8] == model_key.to_be_bytes()
                        && live
                            .contains(&u128::from_be_bytes(key[8..].try_into().unwrap_or([0; 16]))))
            })
            .collect();
        drop(txn);
        entries.sort_unstable();
        let mut removed = 0;
        // A page frees only when all its entries go, so the size is checked often: a bigger
        // step overshoots the target.
        for chunk in entries.chunks(256) {
            if self.used_bytes() <= target {
                break;
            }
            let mut txn = self.env.write_txn()?;
            for (_, key) in chunk {
                self.vectors.delete(&mut txn, key)?;
                self.tokens.delete(&mut txn, key)?;
                self.used.delete(&mut txn, key)?;
                removed += 1;
            }
            txn.commit()?;
        }
        Ok(removed)
    }
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

/// Writes the entries `cache` holds unsaved when there are at least `at_least` of them (at
/// least one): taken under the cache's lock, written outside it in one transaction, then
/// pruned when the store outgrew its bound. Entries that cannot be written stay unsaved for
/// the next save. A poisoned cache lock saves nothing.
pub fn save_unsaved(cache: &Mutex<VectorCache>, at_least: usize) -> Result<(), CacheError> {
    let save = match cache.lock() {
        Ok(mut cache) if cache.unsaved() >= at_least.max(1) => cache.take_save(),
        _ => None,
    };
    let Some(save) = save else {
        return Ok(());
    };
    let store = save.store.clone();
    let write_error = |e: heed::Error| CacheError::writing_store(&store.path, e);
    match store.write(&save) {
        Ok(()) => {
            CACHE_WRITES.recovered();
            if let Ok(mut cache) = cache.lock() {
                cache.saved(&save);
            }
        }
        Err(e) => {
            if let Ok(mut cache) = cache.lock() {
                cache.unsaved_again(save);
            }
            let error = write_error(e);
            CACHE_WRITES.failed(&error);
            return Err(error);
        }
    }
    if store.used_bytes() > store.max_bytes {
        let live = cache.lock().map(|c| c.live.clone()).unwrap_or_default();
        let removed = store.prune(save.model_key, &live).map_err(write_error)?;
        tracing::info!(
            path = %store.path.display(),
            removed,
            bytes = store.used_bytes(),
            max_bytes = store.max_bytes,
            "pruned the vector cache: the entries used longest ago, by no process in the last hour"
        );
    }
    Ok(())
}

/// Writes `bytes` over `path` whole ([`replace_file`]); a failure is part of the
/// [`CACHE_WRITES`] episode.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    match replace_file(path, &temporary, bytes) {
        Ok(()) => {
            CACHE_WRITES.recovered();
            Ok(())
        }
        Err(e) => {
            let error = CacheError::writing(path, e);
            CACHE_WRITES.failed(&error);
            Err(error)
        }
    }
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

    fn open(dir: &Path, model: u64) -> VectorCache {
        let (cache, error) = VectorCache::open(dir, model, 3, 1 << 30);
        assert!(error.is_none(), "{error:?}");
        cache
    }

    fn save(cache: VectorCache) -> VectorCache {
        let cache = Mutex::new(cache);
        save_unsaved(&cache, 1).unwrap();
        cache.into_inner().unwrap()
    }

    #[test]
    fn entries_are_read_back_by_key_from_any_handle() {
        let dir = temp_dir("read-back");
        let mut cache = open(&dir, 7);
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
        assert_eq!(cache.claim(3, false), Claim::Claimed);
        assert_eq!(cache.claim(3, false), Claim::Pending);
        // Another handle on the folder (another process, or the CLI) sees what was saved.
        let other = open(&dir, 7);
        assert!(other.get(1).is_none(), "nothing saved yet");
        let cache = save(cache);
        assert_eq!(cache.unsaved(), 0);
        assert_eq!(&*other.get(1).unwrap(), &[0.5, 0.25, 1.0]);
        drop((cache, other));

        let reopened = open(&dir, 7);
        assert_eq!(&*reopened.get(2).unwrap(), &[1.0, 0.0, 0.0]);
        assert_eq!(reopened.tokens(1), Some(tokens));
        assert_eq!(reopened.tokens(2), None);
        assert!(open(&dir, 8).get(1).is_none(), "another model's entries");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A log of the earlier format, with `vectors` records.
    fn legacy_log(model: u64, vectors: &[(u128, [f32; 3])]) -> Vec<u8> {
        let mut bytes = LOG_MAGIC.to_vec();
        bytes.extend_from_slice(&model.to_le_bytes());
        bytes.extend_from_slice(&3u32.to_le_bytes());
        for (hash, vector) in vectors {
            let start = bytes.len();
            bytes.push(VECTOR);
            bytes.extend_from_slice(&hash.to_le_bytes());
            bytes.extend_from_slice(&12u32.to_le_bytes());
            for value in vector {
                bytes.extend_from_slice(&value.to_le_bytes());
            }
            let checksum = xxh3_64(&bytes[start..]);
            bytes.extend_from_slice(&checksum.to_le_bytes());
        }
        bytes
    }

    #[test]
    fn an_earlier_log_is_migrated_up_to_its_damage_and_removed() {
        let dir = temp_dir("migrate");
        std::fs::create_dir_all(&dir).unwrap();
        let log = VectorCache::legacy_file_in(&dir, 7);
        let mut bytes = legacy_log(7, &[(1, [1.0, 0.0, 0.0]), (2, [0.0, 1.0, 0.0])]);
        bytes.extend_from_slice(&[VECTOR, 9, 9]); // a torn record
        std::fs::write(&log, &bytes).unwrap();
        let (cache, error) = VectorCache::open(&dir, 7, 3, 1 << 30);
        let error = error.expect("the damage is reported").to_string();
        assert!(error.contains(&log.display().to_string()), "{error}");
        assert_eq!(&*cache.get(2).unwrap(), &[0.0, 1.0, 0.0]);
        assert!(!log.exists(), "the log is removed once migrated");
        drop(cache);
        assert_eq!(&*open(&dir, 7).get(1).unwrap(), &[1.0, 0.0, 0.0]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_store_past_its_bound_drops_what_no_live_catalog_used() {
        let dir = temp_dir("prune");
        let old: Vec<u128> = (1000..5000).collect();
        let mut cache = open(&dir, 7);
        for &hash in &old {
            cache.insert(hash, Arc::from(vec![hash as f32, 0.0, 1.0]), None);
        }
        let cache = save(cache);
        // Used two hours ago, past the grace.
        let store = cache.store.clone().unwrap();
        let mut txn = store.env.write_txn().unwrap();
        for &hash in &old {
            let stamp = (now() - 7200).to_be_bytes();
            store.used.put(&mut txn, &key(7, hash), &stamp).unwrap();
        }
        txn.commit().unwrap();
        drop((store, cache));
        // A later process with a bound the store is past: what it uses stays.
        let bound = 256 << 10;
        let (mut cache, error) = VectorCache::open(&dir, 7, 3, bound);
        assert!(error.is_none(), "{error:?}");
        assert_eq!(cache.claim(1000, false), Claim::Cached);
        cache.insert(1, Arc::from(vec![1.0, 1.0, 1.0]), None);
        let cache = save(cache);
        let store = cache.store.clone().unwrap();
        assert!(store.used_bytes() <= bound, "{} bytes", store.used_bytes());
        assert!(
            cache.get(1000).is_some() && cache.get(1).is_some(),
            "used now: kept"
        );
        let left = old.iter().filter(|h| cache.get(**h).is_some()).count();
        assert!(
            left < old.len() / 2,
            "{left} of {} old entries left",
            old.len()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
