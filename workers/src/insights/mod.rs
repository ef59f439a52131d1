//! What agents could not find: the questions of opted-in tenants whose best hit scored low,
//! that found nothing, or that the same client followed with another search before running any
//! operation (it did not find what it needed), counted by normalised text per tenant over a
//! sliding window of days, with the best hits the last asking got. A schema owner reads them to
//! see where a description or a field is missing.
//!
//! Flow: the plugin reports each search ([`Insights::searched`]) and each operation a client
//! runs ([`Insights::ran_operation`]) -> a question that qualifies is counted in its tenant's
//! table ([`Questions`]) -> [`Insights::top`] lists a tenant's most asked over the window.
//!
//! The store is saved to `insights.json` in the cache folder when it changed (every few seconds
//! while in use, see [`keep`], and when it is dropped) and read back at start; `wayfinder
//! insights` reads the same file. With the fleet's Redis, it also syncs there ([`shared`]): each
//! replica adds what it counted and takes the fleet's counts of the most asked, so every
//! replica lists what the whole fleet's agents could not find. A client's searches in a row are
//! compared on the replica that answers them.
//!
//! Bounds: a tenant's table holds at most `2 x per_tenant` questions; when it fills, the least
//! asked over the window (then the least recent) are dropped down to `per_tenant`: a question
//! asked twice before `per_tenant` new ones arrive survives any flood of questions asked once.
//! Texts are clipped to [`MAX_QUESTION_CHARS`]; the searches waiting to see whether their client
//! searches again are at most [`PENDING_CLIENTS`]; askings waiting for a sync at most
//! [`UNSYNCED_PER_QUESTION`] per question kept. With `hash_key`, a question is kept as its
//! HMAC-SHA256 under that key: the same question counts together, and no text is stored (nor
//! sent to Redis: replicas that share must share the key).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use lru::LruCache;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::days::{today, DayCounts};
use crate::embed::shared_store::RedisConfig;
use crate::episode::Episode;
use crate::files::{replace_file, write_failure};
use shared::{Asked, Counts, SharedInsights};

mod shared;

/// Longest question text kept, in characters.
pub const MAX_QUESTION_CHARS: usize = 500;
/// Clients whose last search waits to see whether they search again.
pub const PENDING_CLIENTS: usize = 10_000;
/// Best hits kept with a question.
const BEST_HITS: usize = 3;
/// Longest window, in days.
const MAX_DAYS: usize = 31;
/// How often a store in use syncs with the fleet's Redis, when it does.
const SYNC_EVERY: Duration = Duration::from_secs(2);
/// How often a changed store is saved.
const SAVE_EVERY: Duration = Duration::from_secs(5);
/// Askings waiting for a sync are kept for at most this many (question, day, reason) per
/// question a tenant keeps.
const UNSYNCED_PER_QUESTION: usize = 2;

/// Which questions are kept, for which tenants, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct InsightsConfig {
    /// Tenants whose unanswered questions are kept (opt-in). A router without tenants keeps
    /// them when this lists `""`. Default: none.
    pub tenants: BTreeSet<String>,
    /// A question whose best hit scores below this (0 to 1) is counted as answered badly.
    /// Default 0.45, fitted on the question corpus (`bench/fit/low_score.py`): the best
    /// balanced accuracy at telling a question the search answered (an expected member in the
    /// first five) from one it did not or could not (another API's question).
    pub low_score: f64,
    /// Questions kept per tenant, the most asked over the window (1 to 10000). Default 300.
    pub per_tenant: usize,
    /// Days counted (1 to 31). Default 7.
    pub days: usize,
    /// Keep only a keyed hash of each question (HMAC-SHA256 under this key, at least 16
    /// characters; e.g. `${env.WAYFINDER_INSIGHTS_KEY}`), never its text. Default: texts kept.
    pub hash_key: Option<String>,
    /// Where the router serves the kept questions as JSON, for the people who own the schema:
    /// `GET <path>?tenant=<name>&first=<n>`. Put it on an internal listener, e.g. the health
    /// check's. Default: not served.
    pub view: Option<InsightsView>,
}

/// The address and path of the insights view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InsightsView {
    /// E.g. `127.0.0.1:8088`, beside the router's health check.
    pub listen: std::net::SocketAddr,
    /// Default `/wayfinder/insights`.
    #[serde(default = "default_view_path")]
    pub path: String,
}

fn default_view_path() -> String {
    "/wayfinder/insights".to_string()
}

impl Default for InsightsConfig {
    fn default() -> Self {
        InsightsConfig {
            tenants: BTreeSet::new(),
            low_score: 0.45,
            per_tenant: 300,
            days: 7,
            hash_key: None,
            view: None,
        }
    }
}

/// A setting out of its range, named.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum InsightsConfigError {
    #[error("insights.{setting}: {problem}")]
    Invalid {
        setting: &'static str,
        problem: String,
    },
}

impl InsightsConfig {
    pub fn validate(&self) -> Result<(), InsightsConfigError> {
        let invalid =
            |setting, problem: String| Err(InsightsConfigError::Invalid { setting, problem });
        if !(0.0..=1.0).contains(&self.low_score) {
            return invalid(
                "low_score",
                format!("must be in [0, 1], got {}", self.low_score),
            );
        }
        if !(1..=10_000).contains(&self.per_tenant) {
            return invalid(
                "per_tenant",
                format!("must be 1 to 10000, got {}", self.per_tenant),
            );
        }
        if !(1..=MAX_DAYS).contains(&self.days) {
            return invalid(
                "days",
                format!("must be 1 to {MAX_DAYS}, got {}", self.days),
            );
        }
        if self
            .view
            .as_ref()
            .is_some_and(|view| !view.path.starts_with('/') || view.path == "/")
        {
            return invalid(
                "view.path",
                "must start with `/` and not be `/`".to_string(),
            );
        }
        if self
            .hash_key
            .as_ref()
            .is_some_and(|key| key.chars().count() < 16)
        {
            return invalid("hash_key", "must have at least 16 characters".to_string());
        }
        Ok(())
    }
}

/// Why a question was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// No hit at all.
    Empty,
    /// The best hit scored below `low_score`.
    LowScore,
    /// The same client searched again before running an operation.
    SearchedAgain,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Empty => "empty",
            Reason::LowScore => "low_score",
            Reason::SearchedAgain => "searched_again",
        }
    }
}

/// One hit as the question got it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub coordinate: String,
    pub score: f64,
}

/// One search, as the plugin reports it.
#[derive(Debug, Clone)]
pub struct Search<'a> {
    pub tenant: &'a str,
    /// Who asked, as far as the plugin can tell (a session, a token, an address), hashed by
    /// the caller; searches of one client in a row are compared.
    pub client: u64,
    pub question: &'a str,
    /// The best hits, best first.
    pub hits: &'a [Hit],
}

/// One kept question, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The normalised text, or `None` when only its hash is kept.
    pub text: Option<String>,
    /// The HMAC-SHA256 of the normalised text under `hash_key` (hex), when hashing.
    pub hash: Option<String>,
    /// Times it was counted over the window.
    pub count: u64,
    /// Of them, by reason.
    pub reasons: Vec<(Reason, u64)>,
    /// The best hits its last asking got.
    pub best: Vec<Hit>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    /// When it was last counted (the store's sequence): of two as often asked, the more
    /// recent is kept.
    seen: u64,
    /// Askings per day over the window.
    #[serde(flatten)]
    asked: DayCounts,
    reasons: HashMap<Reason, u64>,
    best: Vec<Hit>,
}

impl Entry {
    /// Takes the fleet's askings of the window ending on `today` in place of its own; whether
    /// that changed them.
    fn take_fleet(&mut self, counts: &Counts, today: u64) -> bool {
        let first = (today + 1).saturating_sub(self.asked.window() as u64);
        let mut reasons: HashMap<Reason, u64> = HashMap::new();
        for (_, reason, count) in counts.iter().filter(|(day, _, _)| *day >= first) {
            *reasons.entry(*reason).or_default() += count;
        }
        let days = counts.iter().map(|(day, _, count)| (*day, *count));
        let changed = self.asked.set(days, today) || reasons != self.reasons;
        self.reasons = reasons;
        changed
    }
}

/// One tenant's questions.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Questions {
    entries: HashMap<Box<str>, Entry>,
}

/// The file in the cache folder, read back at start and by `wayfinder insights`.
pub const FILE: &str = "insights.json";

/// What the file holds.
#[derive(Serialize, Deserialize)]
struct Saved {
    /// Whether the keys are hashes (a store of texts is not read by one of hashes, nor back).
    hashed: bool,
    days: usize,
    tenants: HashMap<Box<str>, Questions>,
}

/// The store's file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum InsightsError {
    #[error("cannot read the insights {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot save the insights {path}: {message}")]
    Save { path: PathBuf, message: String },
}

/// The last search of a client, until it searches again or runs an operation.
#[derive(Debug, Clone)]
struct Pending {
    tenant: Box<str>,
    /// The normalised text, or its keyed hash (hex) with `hash_key`.
    key: Box<str>,
    best: Vec<Hit>,
}

struct State {
    tenants: HashMap<Box<str>, Questions>,
    /// Counted since the last save.
    changed: bool,
    /// Askings counted since the last sync with the fleet, by tenant; only while shared.
    unsynced: HashMap<Box<str>, HashMap<Unsynced, u64>>,
    shared: bool,
    /// Questions counted so far (orders [`Entry::seen`]).
    counted: u64,
    pending: LruCache<u64, Pending>,
}

/// A question (its key) asked on a day for a reason.
type Unsynced = (Box<str>, u64, Reason);

/// The store (see the module doc).
pub struct Insights {
    config: InsightsConfig,
    mac: Option<Hmac<Sha256>>,
    /// Keys are hashes (with `hash_key`, or as read from a file of hashes).
    hashed: bool,
    /// Where it is saved, when it is.
    file: Option<PathBuf>,
    state: Mutex<State>,
}

impl Insights {
    pub fn new(config: InsightsConfig) -> Result<Self, InsightsConfigError> {
        config.validate()?;
        let mac = config.hash_key.as_ref().map(|key| {
            Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap_or_else(|_| unreachable!())
        });
        Ok(Insights {
            hashed: mac.is_some(),
            config,
            mac,
            file: None,
            state: Mutex::new(State {
                tenants: HashMap::new(),
                changed: false,
                unsynced: HashMap::new(),
                shared: false,
                counted: 0,
                pending: LruCache::new(
                    NonZeroUsize::new(PENDING_CLIENTS).unwrap_or(NonZeroUsize::MIN),
                ),
            }),
        })
    }

    /// The store for `config`, saved in `dir` (see [`Insights::save`]) and read back from it;
    /// a file that cannot be read (or was kept otherwise: texts against hashes, another window)
    /// is said in the error beside an empty store, and replaced at the first save.
    pub fn open(
        config: InsightsConfig,
        dir: Option<&Path>,
    ) -> Result<(Insights, Option<InsightsError>), InsightsConfigError> {
        let mut insights = Insights::new(config)?;
        let Some(dir) = dir else {
            return Ok((insights, None));
        };
        let path = dir.join(FILE);
        let read = match Saved::read(&path) {
            Ok(Some(saved)) if saved.hashed != insights.hashed => Err(InsightsError::Read {
                path: path.clone(),
                message: format!(
                    "it holds {}, the settings ask for {}; starting anew",
                    if saved.hashed { "hashes" } else { "texts" },
                    if insights.hashed { "hashes" } else { "texts" }
                ),
            }),
            Ok(Some(saved)) if saved.days != insights.config.days => Err(InsightsError::Read {
                path: path.clone(),
                message: format!(
                    "it counts over {} days, the settings over {}; starting anew",
                    saved.days, insights.config.days
                ),
            }),
            Ok(Some(saved)) => {
                insights.restore(saved);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(error) => Err(error),
        };
        insights.file = Some(path);
        Ok((insights, read.err()))
    }

    /// What a saved store holds, read-only (the command line's `wayfinder insights`): every
    /// tenant in it, listed as the router lists them.
    pub fn read(dir: &Path) -> Result<Insights, InsightsError> {
        let path = dir.join(FILE);
        let saved = Saved::read(&path)?.ok_or_else(|| InsightsError::Read {
            path: path.clone(),
            message: "no such file: no router has saved insights in this folder".to_string(),
        })?;
        let config = InsightsConfig {
            tenants: saved.tenants.keys().map(|t| t.to_string()).collect(),
            days: saved.days.clamp(1, MAX_DAYS),
            ..Default::default()
        };
        let mut insights = Insights::new(config).map_err(|e| InsightsError::Read {
            path: path.clone(),
            message: e.to_string(),
        })?;
        insights.hashed = saved.hashed;
        insights.restore(saved);
        Ok(insights)
    }

    /// Takes the questions `saved` holds, counting on after the last one counted.
    fn restore(&mut self, saved: Saved) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        state.counted = saved
            .tenants
            .values()
            .flat_map(|q| q.entries.values())
            .map(|e| e.seen)
            .max()
            .unwrap_or(0);
        state.tenants = saved.tenants;
    }

    /// Writes the store to its file when it changed since the last save (a temporary file
    /// first, so a crash never leaves half a file). A failure is part of one logged episode,
    /// and the next save tries again.
    pub fn save(&self) -> Result<(), InsightsError> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        let bytes = {
            let mut state = self.lock();
            if !state.changed {
                return Ok(());
            }
            state.changed = false;
            let saved = SavedRef {
                hashed: self.hashed,
                days: self.config.days,
                tenants: &state.tenants,
            };
            serde_json::to_vec(&saved).map_err(|e| InsightsError::Save {
                path: path.clone(),
                message: e.to_string(),
            })?
        };
        let temporary = path.with_extension("json.tmp");
        match replace_file(path, &temporary, &bytes) {
            Ok(()) => {
                SAVES.recovered();
                Ok(())
            }
            Err(e) => {
                // Nothing is lost: the next save tries again.
                self.lock().changed = true;
                let error = InsightsError::Save {
                    path: path.clone(),
                    message: write_failure(&e, path),
                };
                SAVES.failed(&error);
                Err(error)
            }
        }
    }

    pub fn config(&self) -> &InsightsConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `tenant`'s questions are kept.
    pub fn keeps(&self, tenant: &str) -> bool {
        self.config.tenants.contains(tenant)
    }

    /// Reports one search; returns the reasons it (or the client's previous search) was
    /// counted for, for the caller's metrics.
    pub fn searched(&self, search: &Search<'_>) -> Vec<Reason> {
        self.searched_on(search, today())
    }

    fn searched_on(&self, search: &Search<'_>, today: u64) -> Vec<Reason> {
        if !self.keeps(search.tenant) {
            return Vec::new();
        }
        let normalised = normalise(search.question);
        if normalised.is_empty() {
            return Vec::new();
        }
        let key: Box<str> = match &self.mac {
            Some(mac) => {
                let mut mac = mac.clone();
                mac.update(normalised.as_bytes());
                hex::encode(mac.finalize().into_bytes()).into()
            }
            None => normalised.as_str().into(),
        };
        let best: Vec<Hit> = search.hits.iter().take(BEST_HITS).cloned().collect();
        let mut counted = Vec::new();
        let mut state = self.lock();
        let previous = state.pending.put(
            search.client,
            Pending {
                tenant: search.tenant.into(),
                key: key.clone(),
                best: best.clone(),
            },
        );
        // Searching again for another question: the previous one did not lead anywhere.
        if let Some(previous) = previous.filter(|p| p.key != key) {
            self.count(&mut state, previous, Reason::SearchedAgain, today);
            counted.push(Reason::SearchedAgain);
        }
        let reason = match search.hits.first() {
            None => Some(Reason::Empty),
            Some(hit) if hit.score < self.config.low_score => Some(Reason::LowScore),
            Some(_) => None,
        };
        if let Some(reason) = reason {
            let pending = Pending {
                tenant: search.tenant.into(),
                key,
                best,
            };
            self.count(&mut state, pending, reason, today);
            counted.push(reason);
        }
        counted
    }

    /// Reports an operation a client ran: its last search led somewhere.
    pub fn ran_operation(&self, client: u64) {
        self.lock().pending.pop(&client);
    }

    fn count(&self, state: &mut State, asked: Pending, reason: Reason, today: u64) {
        let window = self.config.days;
        state.counted += 1;
        state.changed = true;
        if state.shared {
            let at = (asked.key.clone(), today, reason);
            self.wait_for_sync(state, &asked.tenant, at, 1);
        }
        let seen = state.counted;
        let questions = state.tenants.entry(asked.tenant).or_default();
        let entry = questions.entries.entry(asked.key).or_insert_with(|| Entry {
            seen,
            asked: DayCounts::new(window, today),
            reasons: HashMap::new(),
            best: Vec::new(),
        });
        entry.asked.add(today, 1);
        entry.seen = seen;
        *entry.reasons.entry(reason).or_default() += 1;
        entry.best = asked.best;
        if questions.entries.len() > 2 * self.config.per_tenant {
            trim(questions, self.config.per_tenant, today);
        }
    }

    /// Keeps an asking for the next sync, bounded through an outage of the fleet's Redis: past
    /// [`UNSYNCED_PER_QUESTION`] per question a tenant keeps, new ones count here only.
    fn wait_for_sync(&self, state: &mut State, tenant: &str, at: Unsynced, count: u64) {
        let bound = UNSYNCED_PER_QUESTION * self.config.per_tenant;
        let waiting = state.unsynced.entry(tenant.into()).or_default();
        if waiting.len() < bound || waiting.contains_key(&at) {
            *waiting.entry(at).or_default() += count;
        }
    }

    /// The namespace of this store's keys in the fleet's Redis: hashes under one key are
    /// never counted with texts, nor with hashes under another key.
    fn fleet_kind(&self) -> String {
        match &self.mac {
            Some(mac) => {
                let mut mac = mac.clone();
                mac.update(b"wayfinder insights in the fleet");
                let fingerprint = hex::encode(mac.finalize().into_bytes());
                format!("hashes-{}", &fingerprint[..8])
            }
            None => "texts".to_string(),
        }
    }

    /// Adds the askings counted here since the last sync to the fleet's, then takes the
    /// fleet's counts of each tenant's most asked questions in place of its own, with the best
    /// hits of those it does not have. While Redis is away the askings wait (bounded); a send
    /// that fails once connected is not tried again (Redis may have counted it).
    fn sync(&self, shared: &SharedInsights) -> Result<(), fred::error::Error> {
        if !shared.is_connected() {
            return Ok(());
        }
        let today = today();
        let (per_tenant, days) = (self.config.per_tenant, self.config.days);
        let unsynced = std::mem::take(&mut self.lock().unsynced);
        // The best hits of each question counted since, as its last asking got them.
        let best: Vec<(&str, &str, Vec<Hit>)> = {
            let state = self.lock();
            let questions = unsynced.iter().flat_map(|(tenant, waiting)| {
                let keys: BTreeSet<&str> = waiting.keys().map(|(key, _, _)| &**key).collect();
                keys.into_iter().map(move |key| (&**tenant, key))
            });
            questions
                .filter_map(|(tenant, key)| {
                    let entry = state.tenants.get(tenant)?.entries.get(key)?;
                    (!entry.best.is_empty()).then(|| (tenant, key, entry.best.clone()))
                })
                .collect()
        };
        let asked: Vec<Asked<'_>> = unsynced
            .iter()
            .flat_map(|(tenant, waiting)| {
                waiting.iter().map(|((key, day, reason), count)| Asked {
                    tenant,
                    key,
                    day: *day,
                    reason: *reason,
                    count: *count,
                })
            })
            .collect();
        shared.add(&asked, &best, days, per_tenant)?;
        let first = (today + 1).saturating_sub(days as u64);
        for tenant in &self.config.tenants {
            let top = shared.top(tenant, first, today, per_tenant)?;
            if top.is_empty() {
                continue;
            }
            // Only the questions whose total changed (or that are new here) are read by day
            // and reason, and only those without best hits get the fleet's.
            let (changed, without_best) = {
                let state = self.lock();
                let questions = state.tenants.get(tenant.as_str());
                let since = waiting_since(&state, tenant);
                let mut changed = Vec::new();
                let mut without_best = Vec::new();
                for (key, total) in &top {
                    let entry = questions.and_then(|q| q.entries.get(key.as_str()));
                    let waiting: u64 = since
                        .get(key.as_str())
                        .map_or(0, |w| w.iter().map(|(_, _, count)| count).sum());
                    if entry.is_none_or(|e| e.asked.total(today) != total + waiting) {
                        changed.push(key.as_str());
                    }
                    if entry.is_none_or(|e| e.best.is_empty()) {
                        without_best.push(key.as_str());
                    }
                }
                (changed, without_best)
            };
            let mut counts = shared.counts(tenant, first, today, &changed)?;
            let listed: HashSet<&str> = top.iter().map(|(key, _)| key.as_str()).collect();
            let mut fleet_best = shared.best(tenant, &without_best, &listed, per_tenant)?;
            let mut state = self.lock();
            // Askings counted here since this sync took them are not the fleet's yet.
            let mut since: HashMap<String, Counts> = waiting_since(&state, tenant)
                .into_iter()
                .map(|(key, counts)| (key.to_string(), counts))
                .collect();
            let state = &mut *state;
            let questions = state.tenants.entry(tenant.as_str().into()).or_default();
            for key in changed {
                let Some(mut fleet) = counts.remove(key) else {
                    continue;
                };
                fleet.extend(since.remove(key).into_iter().flatten());
                let entry = questions
                    .entries
                    .entry(key.into())
                    .or_insert_with(|| Entry {
                        seen: state.counted,
                        asked: DayCounts::new(days, today),
                        reasons: HashMap::new(),
                        best: Vec::new(),
                    });
                state.changed |= entry.take_fleet(&fleet, today);
            }
            for (key, hits) in fleet_best.drain() {
                if let Some(entry) = questions.entries.get_mut(key.as_str()) {
                    if entry.best.is_empty() {
                        entry.best = hits;
                        state.changed = true;
                    }
                }
            }
            if questions.entries.len() > 2 * per_tenant {
                trim(questions, per_tenant, today);
            }
        }
        Ok(())
    }

    /// `tenant`'s most asked questions over the window, at most `first`.
    pub fn top(&self, tenant: &str, first: usize) -> Vec<Question> {
        self.top_on(tenant, first, today())
    }

    fn top_on(&self, tenant: &str, first: usize, today: u64) -> Vec<Question> {
        let state = self.lock();
        let Some(questions) = state.tenants.get(tenant) else {
            return Vec::new();
        };
        let mut listed: Vec<Question> = questions
            .entries
            .iter()
            .filter_map(|(key, entry)| {
                let count = entry.asked.total(today);
                (count > 0).then(|| {
                    let mut reasons: Vec<(Reason, u64)> =
                        entry.reasons.iter().map(|(r, n)| (*r, *n)).collect();
                    reasons.sort_by_key(|(reason, _)| reason.as_str());
                    let hashed = self.hashed;
                    Question {
                        text: (!hashed).then(|| key.to_string()),
                        hash: hashed.then(|| key.to_string()),
                        count,
                        reasons,
                        best: entry.best.clone(),
                    }
                })
            })
            .collect();
        listed.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.text.cmp(&b.text))
                .then_with(|| a.hash.cmp(&b.hash))
        });
        listed.truncate(first);
        listed
    }

    /// The tenants with kept questions.
    pub fn tenants(&self) -> Vec<String> {
        let mut tenants: Vec<String> = self.lock().tenants.keys().map(|t| t.to_string()).collect();
        tenants.sort();
        tenants
    }

    /// Questions held, over all tenants.
    pub fn len(&self) -> usize {
        self.lock().tenants.values().map(|q| q.entries.len()).sum()
    }

    /// Bytes of text the store holds (questions and hits, kept, pending and waiting for a
    /// sync): what the bounds bound.
    pub fn text_bytes(&self) -> usize {
        let hits = |best: &[Hit]| best.iter().map(|h| h.coordinate.len()).sum::<usize>();
        let state = self.lock();
        let kept: usize = state
            .tenants
            .values()
            .flat_map(|q| &q.entries)
            .map(|(key, entry)| key.len() + hits(&entry.best))
            .sum();
        let pending: usize = state
            .pending
            .iter()
            .map(|(_, p)| p.key.len() + p.tenant.len() + hits(&p.best))
            .sum();
        let unsynced: usize = state
            .unsynced
            .values()
            .flat_map(|waiting| waiting.keys())
            .map(|(key, _, _)| key.len())
            .sum();
        kept + pending + unsynced
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Insights {
    fn drop(&mut self) {
        let _ = self.save();
    }
}

impl Saved {
    /// The file at `path`; `None` when there is none.
    fn read(path: &Path) -> Result<Option<Saved>, InsightsError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(InsightsError::Read {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                })
            }
        };
        let mut saved: Saved = serde_json::from_slice(&bytes).map_err(|e| InsightsError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        // An entry is counted over `days` days; one that is not (an edited file) is dropped.
        let days = saved.days;
        for questions in saved.tenants.values_mut() {
            questions
                .entries
                .retain(|_, entry| days >= 1 && entry.asked.window() == days);
        }
        Ok(Some(saved))
    }
}

/// [`Saved`], written from the live tables without a copy.
#[derive(Serialize)]
struct SavedRef<'a> {
    hashed: bool,
    days: usize,
    tenants: &'a HashMap<Box<str>, Questions>,
}

/// Saves that fail (a full disk, a folder made read-only), logged as one episode.
static SAVES: Episode = Episode::new(
    "insights cannot be saved",
    "they are counted in memory and saved once the folder can be written again",
);

/// `tenant`'s askings waiting for a sync, by question key.
fn waiting_since<'a>(state: &'a State, tenant: &str) -> HashMap<&'a str, Counts> {
    let mut since: HashMap<&str, Counts> = HashMap::new();
    for ((key, day, reason), count) in state.unsynced.get(tenant).into_iter().flatten() {
        since.entry(key).or_default().push((*day, *reason, *count));
    }
    since
}

/// Drops the least asked questions (of those as often asked, the least recent) down to `keep`.
fn trim(questions: &mut Questions, keep: usize, today: u64) {
    let mut ranked: Vec<(u64, u64, Box<str>)> = questions
        .entries
        .iter()
        .map(|(key, entry)| (entry.asked.total(today), entry.seen, key.clone()))
        .collect();
    ranked.sort_unstable_by_key(|&(count, seen, _)| std::cmp::Reverse((count, seen)));
    for (_, _, key) in ranked.into_iter().skip(keep) {
        questions.entries.remove(&key);
    }
}

/// Lower case, inner white space as one space, no surrounding punctuation, clipped to
/// [`MAX_QUESTION_CHARS`]: the same question asked twice counts together.
pub fn normalise(question: &str) -> String {
    let words: Vec<String> = question.split_whitespace().map(str::to_lowercase).collect();
    let joined = words.join(" ");
    let trimmed = joined.trim_matches(|c: char| !c.is_alphanumeric());
    trimmed.chars().take(MAX_QUESTION_CHARS).collect()
}

/// Keeps `insights` while it is in use, on a thread of its own: every [`SAVE_EVERY`] saved when
/// it changed, and with `redis` (the engine's, `index.redis`) synced with the fleet every
/// [`SYNC_EVERY`]. The thread ends once the store is dropped (whose drop saves it last).
pub fn keep(insights: &Arc<Insights>, redis: Option<RedisConfig>) -> std::io::Result<()> {
    let kept: Weak<Insights> = Arc::downgrade(insights);
    let kind = insights.fleet_kind();
    // Askings count for the fleet from the start; if Redis cannot be set up they stop.
    insights.lock().shared = redis.is_some();
    std::thread::Builder::new()
        .name("wayfinder-insights".into())
        .spawn(move || {
            let shared = redis.and_then(|redis| match SharedInsights::connect(&redis, kind) {
                Ok(shared) => Some(shared),
                Err(error) => {
                    tracing::warn!(%error, "wayfinder.search: insights stay local");
                    if let Some(insights) = kept.upgrade() {
                        let mut state = insights.lock();
                        state.shared = false;
                        state.unsynced.clear();
                    }
                    None
                }
            });
            let mut saved = Instant::now();
            loop {
                std::thread::sleep(SYNC_EVERY);
                let Some(insights) = kept.upgrade() else {
                    return;
                };
                if let Some(shared) = &shared {
                    // An outage is logged by the client's watcher, once; the askings wait.
                    if let Err(error) = insights.sync(shared) {
                        tracing::debug!(%error, "wayfinder.search: insights not synced");
                    }
                }
                if saved.elapsed() >= SAVE_EVERY {
                    let _ = insights.save(); // a failure is logged as an episode
                    saved = Instant::now();
                }
            }
        })
        .map(drop)
}

#[cfg(test)]
mod tests;
