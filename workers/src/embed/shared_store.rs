//! The fleet's shared vector store, in Redis: before it embeds a text, a replica takes the
//! vector another replica embedded; it leaves the vectors it embedded itself; and it leases the
//! texts it is embedding, so that replicas starting together on an empty store split the work
//! rather than each doing all of it. The local cache ([`crate::embed::cache`]) stays the first level:
//! what comes from Redis is kept there too.
//!
//! Flow (driven by the shard indexer, [`crate::build::indexer`]): the texts the local cache lacks are
//! fetched in pipelined batches ([`SharedStore::fetch`]); those still missing are leased a
//! chunk at a time, at most [`LEASES_IN_FLIGHT`] chunks per replica ([`SharedStore::lease`],
//! `SET NX PX`); a text another replica holds is fetched again until it appears, or its lease
//! ends (its holder died) and it is taken over. What a replica embeds is written back, and its
//! leases removed ([`SharedStore::put`]).
//!
//! Redis is never needed. Down, slow past `timeout`, flushed, or holding a record that fails
//! its check: each counts as a miss, and the text is embedded here. After an outage's error the
//! store is left alone for [`PAUSE_AFTER_ERROR`]; while the client is disconnected (a connection
//! silent for [`UNRESPONSIVE_AFTER`] is dropped) it is not asked at all; so an outage costs an
//! indexing run a timeout every few seconds, not one per batch. Nothing on the request path
//! reads Redis.
//!
//! Built vector graphs are shared too ([`SharedStore::fetch_graph`]): a new replica would
//! otherwise spend most of its start building them (3.5 of 4.8 s on github).
//!
//! Keys follow the router's caches (`namespace:` then the key): `vectors:{model key}:{text
//! hash}`, `lease:{model key}:{text hash}`, in hex, and `graphs:{model key}:{graph file
//! name}` (the name hashes the shard and its exact entries). A record holds the model key, the text
//! hash, the vector (`dimension` f32 little endian), the token vectors if any, and an XXH3-64
//! of all of that: a record damaged, cut short, or written under another key or by another
//! model fails the check and is ignored, never served.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fred::prelude::*;
use fred::types::config::UnresponsiveConfig;
use fred::types::Builder;
use futures_util::StreamExt as _;
use xxhash_rust::xxh3::xxh3_64;

use crate::embed::tokens::TokenVectors;
use crate::episode::Episode;

/// Keys read in one pipeline, and pipelines in flight at once (the replies of one are decoded
/// while the next ones travel).
const FETCH_BATCH: usize = 256;
const FETCH_IN_FLIGHT: usize = 4;
/// Records written in one pipeline (each about 1.5 KB, with token vectors about 10 KB).
const WRITE_BATCH: usize = 64;
/// How long a lease holds: far longer than a replica takes to embed the texts it leases at
/// once (`crate::build::indexer::LEASED_AT_ONCE`), and how long the others wait when it dies.
pub(crate) const LEASE: Duration = Duration::from_secs(30);
/// Chunks of leased texts one replica embeds at once (two keep the pool busy between chunks).
const LEASES_IN_FLIGHT: usize = 2;
/// A graph (github's: about 25 MB) may take this many times `timeout` to move.
const GRAPH_TIMEOUT_FACTOR: u32 = 20;
/// A connection with a command unanswered this long is dropped and made again.
const UNRESPONSIVE_AFTER: Duration = Duration::from_secs(5);
/// After an error the store is not asked for this long.
const PAUSE_AFTER_ERROR: Duration = Duration::from_secs(5);
/// Reconnection attempts back off from this to [`RECONNECT_MAX_MS`], without end.
const RECONNECT_MIN_MS: u32 = 100;
const RECONNECT_MAX_MS: u32 = 5_000;

const RECORD_MAGIC: &[u8; 4] = b"WFR\x01";
const GRAPH_MAGIC: &[u8; 4] = b"WFG\x01";
const RECORD_HEAD: usize = 4 + 8 + 16 + 4;

/// Redis for the fleet's shared vector store, with the keys and meanings of the router's own
/// Redis caches (`supergraph.query_planning.cache.redis`).
// Also router.yaml's `index.redis`, so the field docs below are the JSON schema's descriptions.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://`, `rediss://` (TLS), `redis-cluster://` or `redis-sentinel://` URLs; several
    /// are the nodes of one cluster.
    pub urls: Vec<String>,
    /// Redis username; replaces the one in the URLs.
    #[serde(default)]
    pub username: Option<String>,
    /// Redis password; replaces the one in the URLs. Logs show URLs without it.
    #[serde(default)]
    pub password: Option<String>,
    /// Prefix of every key (`<namespace>:vectors:…`), so that deployments can share a Redis.
    #[serde(default = "RedisConfig::default_namespace")]
    pub namespace: String,
    /// Entries not read for this long expire, e.g. `30d`. Reading an entry restarts its TTL.
    /// Default: `30d`.
    // `None` (never) is for the engine's own callers; router.yaml always has one.
    #[serde(default = "RedisConfig::default_ttl", with = "humantime_serde::option")]
    #[schemars(with = "String")]
    pub ttl: Option<Duration>,
    /// Longest wait for one Redis command or pipeline (256 reads; a whole graph may take 20
    /// times as long); past it, what it asked counts as missing and Redis is left alone for a
    /// few seconds. Default: `500ms`.
    #[serde(default = "RedisConfig::default_timeout", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub timeout: Duration,
    /// TLS beyond what a `rediss://` URL gives (the system's roots).
    #[serde(default)]
    pub tls: Option<RedisTls>,
    /// Refuse to start when Redis cannot be reached at start. Default `false`: start without
    /// it, log, and keep trying.
    #[serde(default)]
    pub required_to_start: bool,
}

impl RedisConfig {
    pub const DEFAULT_NAMESPACE: &'static str = "wayfinder";
    /// Long enough that a schema deployed once a month stays shared.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
    /// The router's default for its caches.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);

    /// The Redis at `urls`, with the defaults for the rest.
    pub fn at(urls: Vec<String>) -> Self {
        RedisConfig {
            urls,
            username: None,
            password: None,
            namespace: Self::default_namespace(),
            ttl: Self::default_ttl(),
            timeout: Self::DEFAULT_TIMEOUT,
            tls: None,
            required_to_start: false,
        }
    }

    fn default_namespace() -> String {
        Self::DEFAULT_NAMESPACE.into()
    }

    fn default_ttl() -> Option<Duration> {
        Some(Self::DEFAULT_TTL)
    }

    fn default_timeout() -> Duration {
        Self::DEFAULT_TIMEOUT
    }
}

/// TLS towards Redis, as the router's `tls.subgraph` client settings.
#[derive(
    Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct RedisTls {
    /// PEM certificates of the authorities to trust instead of the system's.
    #[serde(default)]
    pub certificate_authorities: Option<String>,
    /// A client certificate.
    #[serde(default)]
    pub client_authentication: Option<ClientAuthentication>,
}

/// The certificate and key a client authenticates with.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientAuthentication {
    /// PEM certificate chain.
    pub certificate_chain: String,
    /// PEM private key.
    pub key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SharedStoreError {
    #[error("index.redis: {0}")]
    Config(String),
    #[error("index.redis: cannot reach Redis at {url}: {message}")]
    Unreachable { url: String, message: String },
}

/// Counts of one indexing step, or of the process's life.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RedisCounts {
    /// Texts whose vectors Redis had.
    pub hits: u64,
    /// Texts it did not have, or was not asked for (unreachable).
    pub misses: u64,
    /// Records that failed their check (ignored, the text embedded again).
    pub invalid: u64,
    /// Commands or pipelines that failed or timed out.
    pub errors: u64,
    /// Records written.
    pub written: u64,
    /// Bytes of the records read.
    pub bytes_read: u64,
}

impl RedisCounts {
    pub(crate) fn add(&mut self, other: RedisCounts) {
        self.hits += other.hits;
        self.misses += other.misses;
        self.invalid += other.invalid;
        self.errors += other.errors;
        self.written += other.written;
        self.bytes_read += other.bytes_read;
    }
}

/// A text's vector, and its token vectors when it is a member's document text: what Redis
/// holds of it.
pub(crate) struct Entry {
    pub hash: u128,
    pub vector: Arc<[f32]>,
    pub tokens: Option<Arc<TokenVectors>>,
}

pub(crate) struct SharedStore {
    client: Client,
    namespace: String,
    /// The entries' TTL in seconds, if they expire.
    ttl: Option<i64>,
    model_key: u64,
    dimension: usize,
    /// The lease value: who holds it.
    owner: String,
    paused_until: Mutex<Option<Instant>>,
    /// Failing commands, logged as one episode (not once per pause).
    commands: Episode,
    total: Mutex<RedisCounts>,
    /// Options of the commands that move a whole graph (megabytes): a longer timeout.
    long: Options,
    /// Chunks of texts this replica may hold leases on at once, across its shards: every
    /// shard builds at once, and a lease must not end while its texts wait for the pool.
    leasing: tokio::sync::Semaphore,
}

impl SharedStore {
    /// Connects: with `required_to_start`, fails when Redis cannot be reached; otherwise waits
    /// at most `timeout` for it and goes on without it. The client then reconnects on its own,
    /// for as long as the engine runs.
    pub(crate) async fn connect(
        config: &RedisConfig,
        model_key: u64,
        dimension: usize,
    ) -> Result<SharedStore, SharedStoreError> {
        let (client, shown) = client(config)?;
        let timeout = config.timeout;
        watch(&client, shown.clone());
        if config.required_to_start {
            client
                .init()
                .await
                .map_err(|e| SharedStoreError::Unreachable {
                    url: shown.clone(),
                    message: e.to_string(),
                })?;
        } else {
            let connected = client.wait_for_connect();
            drop(client.connect());
            // The first indexing run starts at once: give it the store unless it is away.
            if !matches!(tokio::time::timeout(timeout, connected).await, Ok(Ok(()))) {
                tracing::warn!(url = %shown, "wayfinder: Redis unreachable at start; indexing uses the local cache and the model, and keeps trying");
            }
        }
        tracing::info!(url = %shown, namespace = %config.namespace, "wayfinder: vectors shared through Redis");
        Ok(SharedStore {
            client,
            namespace: config.namespace.clone(),
            ttl: config.ttl.map(|ttl| ttl.as_secs().max(1) as i64),
            leasing: tokio::sync::Semaphore::new(LEASES_IN_FLIGHT),
            model_key,
            dimension,
            owner: format!("{:016x}", rand::random::<u64>()),
            paused_until: Mutex::new(None),
            commands: Episode::new(
                "Redis commands fail",
                "indexing goes on with the local cache and the model, and tries Redis again \
                 every 5 s",
            ),
            total: Mutex::new(RedisCounts::default()),
            long: Options {
                timeout: Some(timeout * GRAPH_TIMEOUT_FACTOR),
                ..Options::default()
            },
        })
    }

    /// The counts since the process started.
    pub(crate) fn counts(&self) -> RedisCounts {
        *self.total.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn key(&self, kind: &str, hash: u128) -> String {
        self.key_named(kind, &format!("{hash:032x}"))
    }

    fn key_named(&self, kind: &str, name: &str) -> String {
        format!("{}:{kind}:{:016x}:{name}", self.namespace, self.model_key)
    }

    /// Whether to ask Redis now: connected, and no error in the last [`PAUSE_AFTER_ERROR`].
    pub(crate) fn available(&self) -> bool {
        if !self.client.is_connected() {
            return false;
        }
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        match *paused {
            Some(until) if Instant::now() < until => false,
            Some(_) => {
                *paused = None;
                true
            }
            None => true,
        }
    }

    fn failed(&self, what: &str, error: &Error, counts: &mut RedisCounts) {
        counts.errors += 1;
        self.commands.failed(&format_args!("{what}: {error}"));
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        *paused = Some(Instant::now() + PAUSE_AFTER_ERROR);
    }

    fn record(&self, counts: RedisCounts) -> RedisCounts {
        self.total
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(counts);
        counts
    }

    /// The vectors Redis holds of `wanted` (text hash, and whether its token vectors are
    /// needed too: a record without them is then a miss), a few pipelines in flight.
    pub(crate) async fn fetch(&self, wanted: &[(u128, bool)]) -> (Vec<Entry>, RedisCounts) {
        let mut found = Vec::new();
        let mut counts = RedisCounts::default();
        let mut batches = futures_util::stream::iter(wanted.chunks(FETCH_BATCH))
            .map(|batch| self.fetch_batch(batch))
            .buffered(FETCH_IN_FLIGHT);
        while let Some((entries, batch_counts)) = batches.next().await {
            found.extend(entries);
            counts.add(batch_counts);
        }
        if counts.invalid > 0 {
            tracing::warn!(
                invalid = counts.invalid,
                "wayfinder: records in Redis failed their check; ignored, and embedded again"
            );
        }
        (found, self.record(counts))
    }

    /// One pipeline: each key's GET and, with a TTL, its EXPIRE (what a live catalog reads
    /// does not expire; on a missing key it does nothing).
    async fn fetch_batch(&self, batch: &[(u128, bool)]) -> (Vec<Entry>, RedisCounts) {
        let mut found = Vec::new();
        let mut counts = RedisCounts::default();
        if !self.available() {
            counts.misses += batch.len() as u64;
            return (found, counts);
        }
        let pipeline = self.client.pipeline();
        for (hash, _) in batch {
            let key = self.key("vectors", *hash);
            let _: Result<(), _> = pipeline.get(key.as_str()).await;
            if let Some(ttl) = self.ttl {
                let _: Result<(), _> = pipeline.expire(key, ttl, None).await;
            }
        }
        let replies = pipeline.try_all::<Value>().await;
        let gets = replies
            .into_iter()
            .step_by(if self.ttl.is_some() { 2 } else { 1 });
        for (i, ((hash, with_tokens), reply)) in batch.iter().zip(gets).enumerate() {
            match reply.and_then(Value::convert::<Option<bytes::Bytes>>) {
                Ok(Some(record)) => {
                    counts.bytes_read += record.len() as u64;
                    match decode(&record, self.model_key, *hash, self.dimension) {
                        Some(entry) if entry.tokens.is_some() || !with_tokens => {
                            counts.hits += 1;
                            found.push(entry);
                        }
                        Some(_) => counts.misses += 1,
                        None => {
                            counts.invalid += 1;
                            counts.misses += 1;
                        }
                    }
                }
                Ok(None) => counts.misses += 1,
                // The key alone (another type of value under it): the store is fine.
                Err(error) if !is_outage(&error) => {
                    counts.invalid += 1;
                    counts.misses += 1;
                }
                Err(error) => {
                    self.failed("read", &error, &mut counts);
                    counts.misses += (batch.len() - i) as u64;
                    break;
                }
            }
        }
        if counts.errors == 0 {
            self.commands.recovered();
        }
        (found, counts)
    }

    /// Writes what this replica embedded.
    pub(crate) async fn put(&self, entries: &[Entry]) -> RedisCounts {
        let mut counts = RedisCounts::default();
        let expire = self.ttl.map(Expiration::EX);
        let mut record = Vec::new();
        for batch in entries.chunks(WRITE_BATCH) {
            if !self.available() {
                break;
            }
            let pipeline = self.client.pipeline();
            for entry in batch {
                encode(self.model_key, entry, &mut record);
                // Written over whatever is there: a damaged record is repaired. (One without
                // token vectors may replace one with them; a shard that needs them embeds the
                // text again and writes them back.)
                let _: Result<(), _> = pipeline
                    .set(
                        self.key("vectors", entry.hash),
                        record.as_slice(),
                        expire.clone(),
                        None,
                        false,
                    )
                    .await;
                // Written: the others need not wait for the lease to end.
                let _: Result<(), _> = pipeline.del(self.key("lease", entry.hash)).await;
            }
            match pipeline
                .try_all::<Value>()
                .await
                .into_iter()
                .find_map(Result::err)
            {
                Some(error) => {
                    self.failed("write", &error, &mut counts);
                    break;
                }
                None => {
                    counts.written += batch.len() as u64;
                    self.commands.recovered();
                }
            }
        }
        self.record(counts)
    }

    /// The graph another replica built and shared under `name` (a [`crate::index::vector::ShardFile`]
    /// name: the shard and the exact entries it holds), if Redis has it whole.
    pub(crate) async fn fetch_graph(&self, name: &str) -> (Option<Vec<u8>>, RedisCounts) {
        let mut counts = RedisCounts::default();
        if !self.available() {
            return (None, counts);
        }
        let key = self.key_named("graphs", name);
        let reply: Result<Option<bytes::Bytes>, _> =
            self.client.with_options(&self.long).get(key.as_str()).await;
        let graph = match reply {
            Ok(Some(record)) => {
                counts.bytes_read += record.len() as u64;
                let graph = decode_graph(&record, self.model_key, name);
                if graph.is_none() {
                    counts.invalid += 1;
                    tracing::warn!(%key, "wayfinder: a graph in Redis failed its check; ignored, and built here");
                } else if let Some(ttl) = self.ttl {
                    let _: Result<Value, _> = self.client.expire(key, ttl, None).await;
                }
                graph
            }
            Ok(None) => None,
            Err(error) => {
                self.failed("graph read", &error, &mut counts);
                None
            }
        };
        (graph, self.record(counts))
    }

    /// Shares a graph this replica built.
    pub(crate) async fn put_graph(&self, name: &str, graph: &[u8]) -> RedisCounts {
        let mut counts = RedisCounts::default();
        if !self.available() {
            return counts;
        }
        let expire = self.ttl.map(Expiration::EX);
        let record = encode_graph(self.model_key, name, graph);
        let written: Result<Value, _> = self
            .client
            .with_options(&self.long)
            .set(self.key_named("graphs", name), record, expire, None, false)
            .await;
        if let Err(error) = written {
            self.failed("graph write", &error, &mut counts);
        }
        self.record(counts)
    }

    /// Waits until this replica may lease another chunk of texts; the permit is held until the
    /// chunk is embedded and written.
    pub(crate) async fn lease_permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.leasing.acquire().await.ok()
    }

    /// Leases `hashes` for this replica to embed; `true` where it got the lease, `false` where
    /// another replica holds it. Unreachable, every one is this replica's.
    pub(crate) async fn lease(&self, hashes: &[u128]) -> (Vec<bool>, RedisCounts) {
        let mut counts = RedisCounts::default();
        let mut ours = vec![true; hashes.len()];
        if hashes.is_empty() || !self.available() {
            return (ours, counts);
        }
        let pipeline = self.client.pipeline();
        for hash in hashes {
            let key = self.key("lease", *hash);
            let _: Result<(), _> = pipeline
                .set(
                    key.as_str(),
                    self.owner.as_str(),
                    Some(Expiration::PX(LEASE.as_millis() as i64)),
                    Some(SetOptions::NX),
                    false,
                )
                .await;
            // Who holds it: another shard of this replica may have leased it before.
            let _: Result<(), _> = pipeline.get(key).await;
        }
        let replies = pipeline.try_all::<Option<String>>().await;
        for (i, pair) in replies.chunks(2).enumerate().take(hashes.len()) {
            match pair {
                [Ok(Some(_)), _] => {}
                [Ok(None), Ok(holder)] => ours[i] = holder.as_deref() == Some(self.owner.as_str()),
                [Err(error), ..] | [_, Err(error)] => {
                    self.failed("lease", error, &mut counts);
                    break;
                }
                _ => ours[i] = false,
            }
        }
        (ours, self.record(counts))
    }

    /// Ends leases this replica took and will not fulfil, so that others need not wait them out.
    pub(crate) async fn unlease(&self, hashes: &[u128]) {
        if hashes.is_empty() || !self.available() {
            return;
        }
        let pipeline = self.client.pipeline();
        for hash in hashes {
            let _: Result<(), _> = pipeline.del(self.key("lease", *hash)).await;
        }
        let _ = pipeline.try_all::<Value>().await;
    }
}

/// Whether an error says the store is away or slow (then it is left alone for a while), rather
/// than something about one key.
fn is_outage(error: &Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::IO
            | ErrorKind::Timeout
            | ErrorKind::Canceled
            | ErrorKind::Backpressure
            | ErrorKind::Tls
            | ErrorKind::Auth
            | ErrorKind::Routing
            | ErrorKind::Cluster
            | ErrorKind::Sentinel
            | ErrorKind::Unknown
    )
}

/// A record: magic, model key, text hash, dimension, vector, token vectors if any, XXH3-64.
fn encode(model_key: u64, entry: &Entry, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(RECORD_MAGIC);
    out.extend_from_slice(&model_key.to_le_bytes());
    out.extend_from_slice(&entry.hash.to_le_bytes());
    out.extend_from_slice(&(entry.vector.len() as u32).to_le_bytes());
    for value in entry.vector.iter() {
        out.extend_from_slice(&value.to_le_bytes());
    }
    if let Some(tokens) = &entry.tokens {
        tokens.encode(out);
    }
    let sum = xxh3_64(out);
    out.extend_from_slice(&sum.to_le_bytes());
}

/// The record's entry, if it passes every check for this model, text and dimension.
fn decode(record: &[u8], model_key: u64, hash: u128, dimension: usize) -> Option<Entry> {
    let (body, sum) = record.split_at_checked(record.len().checked_sub(8)?)?;
    if xxh3_64(body) != u64::from_le_bytes(sum.try_into().ok()?)
        || body.len() < RECORD_HEAD
        || &body[..4] != RECORD_MAGIC
        || u64::from_le_bytes(body[4..12].try_into().ok()?) != model_key
        || u128::from_le_bytes(body[12..28].try_into().ok()?) != hash
        || u32::from_le_bytes(body[28..32].try_into().ok()?) as usize != dimension
    {
        return None;
    }
    let (vector, rest) = body[RECORD_HEAD..].split_at_checked(4 * dimension)?;
    let vector: Arc<[f32]> = vector
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let tokens = if rest.is_empty() {
        None
    } else {
        match TokenVectors::decode(rest, dimension) {
            Ok((tokens, used)) if used == rest.len() => Some(Arc::new(tokens)),
            _ => return None,
        }
    };
    Some(Entry {
        hash,
        vector,
        tokens,
    })
}

/// A graph record: magic, model key, the graph's name, the graph, XXH3-64 of all of it.
fn encode_graph(model_key: u64, name: &str, graph: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 8 + 4 + name.len() + graph.len() + 8);
    out.extend_from_slice(GRAPH_MAGIC);
    out.extend_from_slice(&model_key.to_le_bytes());
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(graph);
    let sum = xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The graph in a record, if it passes every check for this model and name.
fn decode_graph(record: &[u8], model_key: u64, name: &str) -> Option<Vec<u8>> {
    let (body, sum) = record.split_at_checked(record.len().checked_sub(8)?)?;
    let head = 4 + 8 + 4 + name.len();
    if xxh3_64(body) != u64::from_le_bytes(sum.try_into().ok()?)
        || body.len() < head
        || &body[..4] != GRAPH_MAGIC
        || u64::from_le_bytes(body[4..12].try_into().ok()?) != model_key
        || u32::from_le_bytes(body[12..16].try_into().ok()?) as usize != name.len()
        || &body[16..head] != name.as_bytes()
    {
        return None;
    }
    Some(body[head..].to_vec())
}

/// One URL for the client: several are the nodes of one cluster, as in the router.
/// A client for the Redis `config` names (not yet connected), and its URL as logs show it
/// (no password); the engine's shared store and the learned examples each make one.
pub(crate) fn client(config: &RedisConfig) -> Result<(Client, String), SharedStoreError> {
    let url = combined_url(&config.urls)?;
    let shown = shown_url(&url);
    let mut fred_config = Config::from_url(url.as_str())
        .map_err(|e| SharedStoreError::Config(format!("{shown}: {e}")))?;
    if let Some(username) = &config.username {
        fred_config.username = Some(username.clone());
    }
    if let Some(password) = &config.password {
        fred_config.password = Some(password.clone());
    }
    if let Some(tls) = &config.tls {
        fred_config.tls = Some(tls_config(tls)?.into());
    }
    fred_config.fail_fast = config.required_to_start;
    let timeout = config.timeout;
    let client = Builder::from_config(fred_config)
        .with_connection_config(|connection| {
            connection.connection_timeout = timeout.max(Duration::from_secs(1));
            connection.max_command_attempts = 1;
            connection.max_command_buffer_len = 10_000;
            // A connection that stops answering (half open) is dropped and made again,
            // rather than costing every pipeline its timeout.
            connection.unresponsive = UnresponsiveConfig {
                max_timeout: Some(UNRESPONSIVE_AFTER),
                interval: Duration::from_secs(1),
            };
        })
        .with_performance_config(|performance| {
            performance.default_command_timeout = timeout;
        })
        .set_policy(ReconnectPolicy::new_exponential(
            0,
            RECONNECT_MIN_MS,
            RECONNECT_MAX_MS,
            2,
        ))
        .build()
        .map_err(|e| SharedStoreError::Config(format!("{shown}: {e}")))?;
    Ok((client, shown))
}

fn combined_url(urls: &[String]) -> Result<url::Url, SharedStoreError> {
    let parse = |text: &str| {
        url::Url::parse(text).map_err(|e| {
            SharedStoreError::Config(format!("{:?} is not a URL: {e}", shown_text(text)))
        })
    };
    let Some(first) = urls.first() else {
        return Err(SharedStoreError::Config("urls is empty".into()));
    };
    let mut combined = parse(first)?;
    const SCHEMES: [&str; 6] = [
        "redis",
        "rediss",
        "redis-cluster",
        "rediss-cluster",
        "redis-sentinel",
        "rediss-sentinel",
    ];
    if !SCHEMES.contains(&combined.scheme()) {
        return Err(SharedStoreError::Config(format!(
            "{}: the scheme must be one of {SCHEMES:?}",
            shown_url(&combined)
        )));
    }
    if urls.len() == 1 {
        return Ok(combined);
    }
    let cluster = match combined.scheme() {
        "redis" | "redis-cluster" => "redis-cluster",
        "rediss" | "rediss-cluster" => "rediss-cluster",
        other => {
            return Err(SharedStoreError::Config(format!(
                "several urls are the nodes of one cluster; {other} is not a cluster scheme"
            )))
        }
    };
    let _ = combined.set_scheme(cluster);
    for text in &urls[1..] {
        let node = parse(text)?;
        let host = node.host_str().unwrap_or_default();
        let port = node.port().unwrap_or(6379);
        combined
            .query_pairs_mut()
            .append_pair("node", &format!("{host}:{port}"));
    }
    Ok(combined)
}

/// The URL as logs and errors show it: without its password.
fn shown_url(url: &url::Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("***"));
    }
    shown.to_string()
}

fn shown_text(text: &str) -> String {
    url::Url::parse(text).map_or_else(|_| "<unparsable URL>".to_string(), |u| shown_url(&u))
}

fn tls_config(tls: &RedisTls) -> Result<fred::types::config::TlsConnector, SharedStoreError> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        SharedStoreError::Config(format!("tls.{what}: {e}"))
    };
    let mut roots = rustls::RootCertStore::empty();
    match &tls.certificate_authorities {
        Some(pem) => {
            for certificate in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let certificate = certificate.map_err(|e| bad("certificate_authorities", &e))?;
                roots
                    .add(certificate)
                    .map_err(|e| bad("certificate_authorities", &e))?;
            }
        }
        None => {
            for certificate in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(certificate);
            }
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| bad("versions", &e))?
    .with_root_certificates(roots);
    let config = match &tls.client_authentication {
        Some(client) => {
            let chain = CertificateDer::pem_slice_iter(client.certificate_chain.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad("client_authentication.certificate_chain", &e))?;
            let key = PrivateKeyDer::from_pem_slice(client.key.as_bytes())
                .map_err(|e| bad("client_authentication.key", &e))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| bad("client_authentication", &e))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(fred::types::config::TlsConnector::Rustls(
        tokio_rustls::TlsConnector::from(Arc::new(config)),
    ))
}

/// Logs an outage as one episode ([`Episode`]): its first error, a count while it lasts, and the
/// reconnection that ends it, not every retry.
pub(crate) fn watch(client: &Client, url: String) {
    let mut errors = client.error_rx();
    let mut reconnects = client.reconnect_rx();
    let outage = Arc::new(Episode::new(
        "Redis is unreachable",
        "indexing uses the local cache and the model, and the client reconnects",
    ));
    let during = Arc::clone(&outage);
    tokio::spawn(async move {
        while let Ok((error, _)) = errors.recv().await {
            during.failed(&format_args!("{url}: {error}"));
        }
    });
    tokio::spawn(async move {
        while reconnects.recv().await.is_ok() {
            outage.recovered();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_served_only_to_its_model_and_text_and_only_whole() {
        let rows = [[0.5f32, -1.0, 2.0], [1.0, 0.0, 0.0]];
        let tokens = TokenVectors::new(vec![7, 9], rows.iter().map(|r| r.as_slice()));
        let entry = Entry {
            hash: 42,
            vector: Arc::from(vec![0.25f32, 0.5, -0.75]),
            tokens: Some(Arc::new(tokens)),
        };
        let mut record = Vec::new();
        encode(7, &entry, &mut record);
        let decoded = decode(&record, 7, 42, 3).expect("its own record");
        assert_eq!(&*decoded.vector, &*entry.vector);
        assert!(decoded.tokens.is_some());
        assert!(decode(&record, 8, 42, 3).is_none(), "another model's");
        assert!(
            decode(&record, 7, 43, 3).is_none(),
            "under another text's key"
        );
        assert!(decode(&record, 7, 42, 4).is_none(), "another width");
        assert!(
            decode(&record[..record.len() - 1], 7, 42, 3).is_none(),
            "cut short"
        );
        assert!(decode(b"garbage", 7, 42, 3).is_none());
        for i in [0, 5, 20, 40, record.len() - 1] {
            let mut damaged = record.clone();
            damaged[i] ^= 0x10;
            assert!(decode(&damaged, 7, 42, 3).is_none(), "byte {i} flipped");
        }
        let bare = Entry {
            tokens: None,
            ..entry
        };
        encode(7, &bare, &mut record);
        assert!(decode(&record, 7, 42, 3).is_some_and(|entry| entry.tokens.is_none()));
    }

    #[test]
    fn a_graph_record_is_served_only_whole_and_under_its_name() {
        let record = encode_graph(7, "graph-a.usearch", b"the graph");
        assert_eq!(
            decode_graph(&record, 7, "graph-a.usearch").as_deref(),
            Some(&b"the graph"[..])
        );
        assert!(decode_graph(&record, 8, "graph-a.usearch").is_none());
        assert!(decode_graph(&record, 7, "graph-b.usearch").is_none());
        let mut damaged = record.clone();
        damaged[30] ^= 1;
        assert!(decode_graph(&damaged, 7, "graph-a.usearch").is_none());
        assert!(decode_graph(&record[..10], 7, "graph-a.usearch").is_none());
    }

    #[test]
    fn several_urls_are_one_cluster_and_passwords_are_not_shown() {
        let url = combined_url(&[
            "redis://user:secret@a:7000".into(),
            "redis://user:secret@b:7001".into(),
        ])
        .unwrap();
        assert_eq!(url.scheme(), "redis-cluster");
        assert!(url.as_str().contains("node=b%3A7001"), "{url}");
        assert!(!shown_url(&url).contains("secret"));
        let error = combined_url(&["http://x:pw@host".into()])
            .unwrap_err()
            .to_string();
        assert!(error.contains("scheme") && !error.contains("pw"), "{error}");
        assert!(combined_url(&[]).is_err());
    }
}
