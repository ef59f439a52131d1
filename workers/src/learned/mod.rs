//! Examples learned from traffic: the shapes of the operations a router ran without errors
//! ([`wayfinder_supergraph::usage`]), counted by day over a week, the most used few served
//! per member they touch.
//!
//! Flow: the plugin offers each executed operation to the [`Learner`] (a bounded queue: when
//! it is full the operation is dropped and counted, never waited for) -> its thread reduces it
//! to a shape against the catalog it ran on -> [`Learned::record`] counts the shape, keeping
//! at most `max_operations` (the least used this week go first) -> [`Learned::examples`]
//! serves, per coordinate, the most used shapes whose every member the caller may see. The
//! store is saved to `learned-examples.json` in the cache folder when it changed, once the
//! queue is idle for a second (at least every minute under steady traffic) and when the
//! learner stops, and read back at start, so a restart keeps what was learned.
//!
//! With the fleet's Redis, the learner also syncs every [`SYNC_EVERY`] ([`shared`]): it adds
//! the runs it counted and takes the fleet's counts, so every replica serves what all of them
//! ran.
//!
//! Nothing a client sent is kept: a shape has no literal and no variable value, and the text
//! of an operation only lives in the queue until its shape is made.

mod shared;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wayfinder_supergraph::{Catalog, Usage};

use crate::days::{today, DayCounts};
use crate::embed::shared_store::RedisConfig;
use crate::episode::Episode;
use crate::files::{replace_file, write_failure};
use shared::{Runs, SharedLearned, SharedShape};

/// Days a count is kept for ("this week").
const DAYS: usize = 7;
/// Operations that may wait for the learner; one more is dropped.
const QUEUE: usize = 1024;
/// A changed store is saved once the queue has been idle this long...
const SAVE_WHEN_IDLE: Duration = Duration::from_secs(1);
/// ...or, under steady traffic, this long after the last save (what a process stopped
/// between two saves loses).
const SAVE_EVERY: Duration = Duration::from_secs(10);
/// Longest operation text offered to the learner: with [`QUEUE`], what the queue may hold.
/// Longer texts are not learned (their shapes would rarely be kept anyway).
pub const MAX_OFFERED_BYTES: usize = 64 * 1024;
/// The store's file in the cache folder.
const FILE: &str = "learned-examples.json";
/// How often a replica syncs with the fleet's Redis.
const SYNC_EVERY: Duration = Duration::from_secs(2);
/// Runs waiting for a sync are kept for at most this many (shape, day) pairs per shape kept.
const UNSYNCED_PER_OPERATION: usize = 8;

/// Examples learned from the operations the router runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LearnedConfig {
    /// Learn examples from the operations the router executes without errors: their shapes
    /// (every literal a variable, aliases and fragments resolved, fields ordered), never a
    /// value. Default `false`.
    pub from_traffic: bool,
    /// Learned examples served per member, most used this week first, before the ones made
    /// from the schema. Default 3.
    pub per_member: usize,
    /// Distinct operation shapes kept, in memory and on disk; past it, the least used this
    /// week are forgotten (1 to 100000). Default 2000.
    pub max_operations: usize,
    /// Longest shape kept, in bytes; longer operations are not learned. Default 4096.
    pub max_operation_bytes: usize,
}

impl Default for LearnedConfig {
    fn default() -> Self {
        LearnedConfig {
            from_traffic: false,
            per_member: 3,
            max_operations: 2000,
            max_operation_bytes: 4096,
        }
    }
}

/// One learned example, as served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedExample {
    pub operation: Arc<str>,
    /// Times it ran in the last seven days.
    pub this_week: u64,
}

/// One operation shape and its counts.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Shape {
    operation: Arc<str>,
    coordinates: Box<[Box<str>]>,
    /// Runs per day this week.
    #[serde(flatten)]
    runs: DayCounts,
}

impl Shape {
    fn this_week(&self, today: u64) -> u64 {
        self.runs.total(today)
    }
}

#[derive(Default, Serialize, Deserialize)]
struct Saved {
    shapes: Vec<Shape>,
}

#[derive(Default)]
struct State {
    shapes: HashMap<u64, Shape>,
    /// Shapes by each coordinate they touch.
    by_coordinate: HashMap<Box<str>, Vec<u64>>,
    changed: bool,
    /// Runs counted since the last sync with the fleet, by (shape, day); only while shared.
    unsynced: HashMap<(u64, u64), u64>,
    shared: bool,
}

impl State {
    /// Adds runs waiting for a sync, bounded through an outage of the fleet's Redis: past
    /// the bound, new (shape, day) pairs count here only.
    fn wait_for_sync(&mut self, at: (u64, u64), runs: u64, max_operations: usize) {
        let room = self.unsynced.len() < UNSYNCED_PER_OPERATION * max_operations;
        if room || self.unsynced.contains_key(&at) {
            *self.unsynced.entry(at).or_default() += runs;
        }
    }
}

/// The learned shapes, shared by the learner and the requests that serve them.
pub struct Learned {
    config: LearnedConfig,
    state: Mutex<State>,
    file: Option<PathBuf>,
    /// Names this store's temporary file.
    id: u64,
}

/// Why the store could not be read or saved.
#[derive(Debug, thiserror::Error)]
pub enum LearnedError {
    #[error("cannot read the learned examples {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot save the learned examples {path}: {message}")]
    Save { path: PathBuf, message: String },
}

fn key_of(operation: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(operation.as_bytes())
}

impl Learned {
    /// An empty store, saved in `cache_dir` when there is one.
    pub fn new(config: LearnedConfig, cache_dir: Option<&Path>) -> Self {
        Learned {
            config,
            state: Mutex::new(State::default()),
            file: cache_dir.map(|dir| dir.join(FILE)),
            id: rand::random(),
        }
    }

    /// The store saved in `cache_dir`, or an empty one when there is none; a file that cannot
    /// be read is an error naming it (the store then starts empty).
    pub fn open(config: LearnedConfig, cache_dir: Option<&Path>) -> (Self, Option<LearnedError>) {
        let learned = Self::new(config, cache_dir);
        let Some(path) = learned.file.clone() else {
            return (learned, None);
        };
        let read = match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Saved::default()),
            read => read
                .map_err(|e| e.to_string())
                .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string())),
        };
        let saved: Saved = match read {
            Ok(saved) => saved,
            Err(message) => return (learned, Some(LearnedError::Read { path, message })),
        };
        {
            let mut state = learned.lock();
            // A shape counted over another window (an edited file) is dropped.
            for shape in saved.shapes.into_iter().filter(|s| s.runs.window() == DAYS) {
                learned.insert(&mut state, shape);
            }
            state.changed = false;
        }
        (learned, None)
    }

    pub fn config(&self) -> &LearnedConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one run of `usage`.
    pub fn record(&self, usage: &Usage) {
        if usage.operation.len() > self.config.max_operation_bytes
            || self.config.max_operations == 0
        {
            return;
        }
        let today = today();
        let key = key_of(&usage.operation);
        let mut state = self.lock();
        state.changed = true;
        if state.shared {
            state.wait_for_sync((key, today), 1, self.config.max_operations);
        }
        if let Some(shape) = state.shapes.get_mut(&key) {
            shape.runs.add(today, 1);
            return;
        }
        let mut shape = Shape {
            operation: usage.operation.as_str().into(),
            coordinates: usage
                .coordinates
                .iter()
                .map(|c| c.as_str().into())
                .collect(),
            runs: DayCounts::new(DAYS, today),
        };
        shape.runs.add(today, 1);
        self.insert(&mut state, shape);
    }

    fn insert(&self, state: &mut State, shape: Shape) {
        let today = today();
        while state.shapes.len() >= self.config.max_operations {
            let Some(least) = state
                .shapes
                .iter()
                .min_by_key(|(_, s)| (s.this_week(today), s.runs.day()))
                .map(|(key, _)| *key)
            else {
                break;
            };
            if let Some(gone) = state.shapes.remove(&least) {
                for coordinate in gone.coordinates.iter() {
                    if let Some(keys) = state.by_coordinate.get_mut(coordinate) {
                        keys.retain(|k| *k != least);
                        if keys.is_empty() {
                            state.by_coordinate.remove(coordinate);
                        }
                    }
                }
            }
        }
        let key = key_of(&shape.operation);
        for coordinate in shape.coordinates.iter() {
            state
                .by_coordinate
                .entry(coordinate.clone())
                .or_default()
                .push(key);
        }
        state.shapes.insert(key, shape);
    }

    /// The most used shapes that touch `coordinate` and only what `visible` allows, most
    /// used first, at most `per_member`.
    pub fn examples(
        &self,
        coordinate: &str,
        visible: &dyn Fn(&str) -> bool,
    ) -> Vec<LearnedExample> {
        let today = today();
        let state = self.lock();
        let Some(keys) = state.by_coordinate.get(coordinate) else {
            return Vec::new();
        };
        let mut found: Vec<LearnedExample> = keys
            .iter()
            .filter_map(|key| state.shapes.get(key))
            .filter(|shape| shape.coordinates.iter().all(|c| visible(c)))
            .map(|shape| LearnedExample {
                operation: Arc::clone(&shape.operation),
                this_week: shape.this_week(today),
            })
            .filter(|example| example.this_week > 0)
            .collect();
        found.sort_by(|a, b| {
            b.this_week
                .cmp(&a.this_week)
                .then_with(|| a.operation.cmp(&b.operation))
        });
        found.truncate(self.config.per_member);
        found
    }

    /// Adds the runs counted here since the last sync to the fleet's (they wait while Redis is
    /// away), then takes the fleet's counts of its `max_operations` most run
    /// shapes this week. A shape this replica did not know is read back through `catalog`
    /// (its operation must reduce to itself, and the coordinates are the ones it touches
    /// here, never the ones Redis says), and kept only when it is run more than the least run
    /// one kept here, so that a fleet that knows more shapes than one replica keeps does not
    /// make it swap them in and out.
    fn sync(
        &self,
        shared: &SharedLearned,
        catalog: Option<&Catalog>,
    ) -> Result<(), fred::error::Error> {
        // While Redis is away the runs wait (bounded).
        if !shared.is_connected() {
            return Ok(());
        }
        let today = today();
        let max = self.config.max_operations.max(1);
        let (unsynced, shapes) = {
            let mut state = self.lock();
            let unsynced = std::mem::take(&mut state.unsynced);
            let shapes: HashMap<u64, SharedShape> = unsynced
                .keys()
                .filter_map(|(key, _)| {
                    let shape = state.shapes.get(key)?;
                    let operation = shape.operation.to_string();
                    Some((*key, SharedShape { operation }))
                })
                .collect();
            (unsynced, shapes)
        };
        let added: Vec<Runs<'_>> = unsynced
            .iter()
            .filter_map(|(&(key, day), &runs)| {
                Some(Runs {
                    key,
                    day,
                    runs,
                    shape: shapes.get(&key)?,
                })
            })
            .collect();
        // Once sent, a failed add is not sent again: Redis may have counted it.
        shared.add(&added, max)?;
        let first = today.saturating_sub(DAYS as u64 - 1);
        let runs = shared.runs(first, today, max)?;
        let mut ranked: Vec<(u64, u64)> = runs
            .iter()
            .map(|(key, days)| (*key, days.iter().map(|(_, n)| n).sum()))
            .collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(max);
        let unknown: Vec<u64> = {
            let state = self.lock();
            ranked
                .iter()
                .map(|(key, _)| *key)
                .filter(|key| !state.shapes.contains_key(key))
                .collect()
        };
        let mut fetched: Vec<Shape> = Vec::new();
        if let (Some(catalog), false) = (catalog, unknown.is_empty()) {
            for (key, shape) in shared.shapes(&unknown)? {
                let Ok(usage) =
                    wayfinder_supergraph::usage(catalog.api_schema(), &shape.operation, None)
                else {
                    continue;
                };
                if usage.operation != shape.operation
                    || key_of(&usage.operation) != key
                    || usage.operation.len() > self.config.max_operation_bytes
                {
                    continue;
                }
                fetched.push(Shape {
                    operation: usage.operation.into(),
                    coordinates: usage.coordinates.into_iter().map(Into::into).collect(),
                    runs: DayCounts::new(DAYS, today),
                });
            }
        }
        let mut state = self.lock();
        for (key, _) in &ranked {
            if let (Some(shape), Some(days)) = (state.shapes.get_mut(key), runs.get(key)) {
                if shape.runs.set(days.iter().copied(), today) {
                    state.changed = true;
                }
            }
        }
        for mut shape in fetched {
            let Some(days) = runs.get(&key_of(&shape.operation)) else {
                continue;
            };
            shape.runs.set(days.iter().copied(), today);
            let week = shape.this_week(today);
            let full = state.shapes.len() >= max;
            let least = state.shapes.values().map(|s| s.this_week(today)).min();
            if !full || least.is_some_and(|least| week > least) {
                self.insert(&mut state, shape);
                state.changed = true;
            }
        }
        Ok(())
    }

    /// Distinct shapes kept.
    pub fn len(&self) -> usize {
        self.lock().shapes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the store when it changed since the last save (to a temporary file first, so
    /// a crash never leaves half a file).
    pub fn save(&self) -> Result<(), LearnedError> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        let bytes = {
            let mut state = self.lock();
            if !state.changed {
                return Ok(());
            }
            state.changed = false;
            let saved = Saved {
                shapes: state.shapes.values().cloned().collect(),
            };
            serde_json::to_vec(&saved).map_err(|e| LearnedError::Save {
                path: path.clone(),
                message: e.to_string(),
            })?
        };
        // Another learner of this folder (a reload that changed the settings) writes its own.
        let temporary = path.with_extension(format!("{:016x}.tmp", self.id));
        replace_file(path, &temporary, &bytes).map_err(|e| {
            // Nothing is lost: the next save tries again.
            self.lock().changed = true;
            LearnedError::Save {
                path: path.clone(),
                message: write_failure(&e, path),
            }
        })
    }
}

/// An operation the router ran, waiting to be learned.
struct Offered {
    catalog: Arc<Catalog>,
    text: String,
    operation_name: Option<String>,
}

/// The thread that learns shapes, fed through a bounded queue; it stops (and saves) once the
/// learner is dropped.
pub struct Learner {
    learned: Arc<Learned>,
    queue: SyncSender<Offered>,
    /// The catalog served now, which shapes from the fleet are read back through.
    catalog: Arc<Mutex<Option<Arc<Catalog>>>>,
    /// Whether a full queue was logged.
    warned: AtomicBool,
}

impl Learner {
    /// Starts the learner's thread; with `redis`, it syncs with the fleet there.
    pub fn start(learned: Arc<Learned>, redis: Option<RedisConfig>) -> std::io::Result<Self> {
        let (queue, offered) = std::sync::mpsc::sync_channel(QUEUE);
        let catalog: Arc<Mutex<Option<Arc<Catalog>>>> = Arc::default();
        std::thread::Builder::new()
            .name("wayfinder-learner".into())
            .spawn({
                let learned = Arc::clone(&learned);
                let catalog = Arc::clone(&catalog);
                move || {
                    let shared = redis.and_then(|redis| match SharedLearned::connect(&redis) {
                        Ok(shared) => {
                            learned.lock().shared = true;
                            Some(shared)
                        }
                        Err(error) => {
                            tracing::warn!(%error, "wayfinder.search: learned examples stay local");
                            None
                        }
                    });
                    learn(&learned, &offered, shared.as_ref(), &catalog)
                }
            })?;
        Ok(Learner {
            learned,
            queue,
            catalog,
            warned: AtomicBool::new(false),
        })
    }

    pub fn learned(&self) -> &Arc<Learned> {
        &self.learned
    }

    /// The catalog the router serves now.
    pub fn serve(&self, catalog: &Arc<Catalog>) {
        *self.catalog.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::clone(catalog));
    }

    /// Offers an operation `catalog`'s router ran without errors; never waits. One that does
    /// not fit in the queue is not learned (logged once).
    pub fn offer(&self, catalog: &Arc<Catalog>, text: String, operation_name: Option<String>) {
        if text.len() > MAX_OFFERED_BYTES {
            return;
        }
        let offered = Offered {
            catalog: Arc::clone(catalog),
            text,
            operation_name,
        };
        if let Err(TrySendError::Full(_)) = self.queue.try_send(offered) {
            if !self.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    queue = QUEUE,
                    "wayfinder.search: the examples learner is behind; operations that do not \
                     fit in its queue are not learned"
                );
            }
        }
    }
}

fn learn(
    learned: &Learned,
    offered: &Receiver<Offered>,
    shared: Option<&SharedLearned>,
    catalog: &Mutex<Option<Arc<Catalog>>>,
) {
    let mut saved = std::time::Instant::now();
    let mut synced = std::time::Instant::now();
    loop {
        if let Some(shared) = shared.filter(|_| synced.elapsed() >= SYNC_EVERY) {
            // An outage is logged by the client's watcher, once; the runs wait.
            let serving = catalog.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Err(error) = learned.sync(shared, serving.as_deref()) {
                tracing::debug!(%error, "wayfinder.search: learned examples not synced");
            }
            synced = std::time::Instant::now();
        }
        if saved.elapsed() >= SAVE_EVERY {
            save(learned);
            saved = std::time::Instant::now();
        }
        match offered.recv_timeout(SAVE_WHEN_IDLE) {
            Ok(Offered {
                catalog,
                text,
                operation_name,
            }) => {
                // An operation that does not reduce to a shape (invalid for this schema, a
                // subscription, introspection) is not an example; nothing of it is logged.
                if let Ok(usage) = wayfinder_supergraph::usage(
                    catalog.api_schema(),
                    &text,
                    operation_name.as_deref(),
                ) {
                    learned.record(&usage);
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                save(learned);
                saved = std::time::Instant::now();
            }
            Err(RecvTimeoutError::Disconnected) => {
                save(learned);
                return;
            }
        }
    }
}

/// Saves that fail (a full disk, a folder made read-only), logged as one episode.
static SAVES: Episode = Episode::new(
    "learned examples cannot be saved",
    "they are served from memory and saved once the folder can be written again",
);

fn save(learned: &Learned) {
    match learned.save() {
        Ok(()) => SAVES.recovered(),
        Err(error) => SAVES.failed(&error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(operation: &str, coordinates: &[&str]) -> Usage {
        Usage {
            operation: operation.into(),
            coordinates: coordinates.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn the_most_used_visible_shapes_come_first_and_the_store_keeps_its_bound() {
        let config = LearnedConfig {
            from_traffic: true,
            per_member: 2,
            max_operations: 3,
            max_operation_bytes: 100,
        };
        let learned = Learned::new(config, None);
        let a = usage("query { a }", &["Query.a"]);
        let ab = usage("query { a b }", &["Query.a", "Query.b"]);
        let secret = usage("query { a secret }", &["Query.a", "Query.secret"]);
        for _ in 0..3 {
            learned.record(&ab);
        }
        learned.record(&a);
        for _ in 0..5 {
            learned.record(&secret);
        }
        let public = |c: &str| c != "Query.secret";
        let served: Vec<(String, u64)> = learned
            .examples("Query.a", &public)
            .into_iter()
            .map(|e| (e.operation.to_string(), e.this_week))
            .collect();
        assert_eq!(
            served,
            [
                ("query { a b }".to_string(), 3),
                ("query { a }".to_string(), 1)
            ]
        );
        assert_eq!(learned.examples("Query.a", &|_| true)[0].this_week, 5);
        // A fourth shape pushes out the least used one.
        learned.record(&usage("query { b }", &["Query.b"]));
        assert_eq!(learned.len(), 3);
        assert!(learned
            .examples("Query.a", &public)
            .iter()
            .all(|e| &*e.operation != "query { a }"));
        // Too long to keep.
        learned.record(&usage(&"x".repeat(101), &["Query.a"]));
        assert_eq!(learned.len(), 3);
    }

    #[test]
    fn a_saved_store_is_read_back() {
        let dir = std::env::temp_dir().join(format!("wayfinder-learned-{}", std::process::id()));
        let config = LearnedConfig {
            from_traffic: true,
            ..LearnedConfig::default()
        };
        let learned = Learned::new(config.clone(), Some(&dir));
        learned.record(&usage("query { a }", &["Query.a"]));
        learned.save().unwrap();
        let (again, error) = Learned::open(config.clone(), Some(&dir));
        assert!(error.is_none());
        assert_eq!(again.examples("Query.a", &|_| true)[0].this_week, 1);
        // The file as issue 54 wrote it, before the counts had a type of their own.
        let earlier = format!(
            r#"{{"shapes":[{{"operation":"query {{ b }}","coordinates":["Query.b"],"days":[1,1,1,1,1,1,1],"day":{}}}]}}"#,
            today()
        );
        std::fs::write(dir.join(FILE), earlier).unwrap();
        let (earlier, error) = Learned::open(config.clone(), Some(&dir));
        assert!(error.is_none());
        assert_eq!(earlier.examples("Query.b", &|_| true)[0].this_week, 7);
        std::fs::write(dir.join(FILE), b"not json").unwrap();
        let (_, error) = Learned::open(config, Some(&dir));
        assert!(error.unwrap().to_string().contains(FILE));
        let _ = std::fs::remove_dir_all(dir);
    }
}
