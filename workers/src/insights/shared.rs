//! The fleet's insights, in Redis: every replica adds the askings it counted since its last
//! sync, then takes the fleet's counts of each opted-in tenant's most asked questions, so any
//! replica's view lists what the whole fleet's agents could not find.
//!
//! Keys, after `namespace:insights:` and `texts:` or `hashes-<fingerprint of the key>:` (a
//! store never reads one kept otherwise): `{tenant}:{day}:{reason}` is a sorted set per tenant,
//! day (since the Unix epoch) and reason of question keys (the normalised text, or its HMAC
//! under `hash_key`) scored by askings, cut to its most asked [`KEPT_PER_DAY`]` x per_tenant`
//! after each sync; `{tenant}:best` is a hash of question key to the best hits its last asking
//! got (JSON), cut back to the fleet's most asked once it holds more than
//! [`KEPT_PER_DAY`]` x per_tenant`. Both go a day after the window they count in. The tenant is
//! a hash tag, so a tenant's keys share a cluster slot and Redis adds its window up itself
//! (`ZUNIONSTORE`): a sync reads `per_tenant` totals, and the days and reasons only of the
//! questions whose total changed. Nothing else a client sent is in either.
//!
//! Redis is never needed ([`crate::fleet`]): the replica goes on with its own counts.

use std::collections::{HashMap, HashSet};

use fred::prelude::*;

use super::{Hit, Reason};
use crate::embed::shared_store::{RedisConfig, SharedStoreError};
use crate::fleet::FleetRedis;

/// Questions a day's set (and a tenant's best hits) keeps, in multiples of `per_tenant`.
const KEPT_PER_DAY: usize = 4;

/// Askings of one question on one day for one reason, to add.
pub(crate) struct Asked<'a> {
    pub tenant: &'a str,
    pub key: &'a str,
    pub day: u64,
    pub reason: Reason,
    pub count: u64,
}

/// Askings of one question: (day, reason, count).
pub(crate) type Counts = Vec<(u64, Reason, u64)>;

const REASONS: [Reason; 3] = [Reason::Empty, Reason::LowScore, Reason::SearchedAgain];

/// Askings sent in one pipeline: a pipeline that times out after Redis ran it is not sent
/// again (that would count it twice), so it is kept small.
const ASKINGS_PER_PIPELINE: usize = 500;

/// A replica's connection to the fleet's insights.
pub(crate) struct SharedInsights {
    redis: FleetRedis,
    /// `texts`, or `hashes-` and a fingerprint of the hash key.
    kind: String,
}

impl SharedInsights {
    /// Connects in the background; never waits for Redis.
    pub(crate) fn connect(config: &RedisConfig, kind: String) -> Result<Self, SharedStoreError> {
        Ok(SharedInsights {
            redis: FleetRedis::connect(config, "wayfinder-insights-redis", "insights")?,
            kind,
        })
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.redis.is_connected()
    }

    fn key(&self, tenant: &str, name: &str) -> String {
        self.redis
            .key(&format!("insights:{}:{{{tenant}}}:{name}", self.kind))
    }

    fn day_key(&self, tenant: &str, day: u64, reason: Reason) -> String {
        self.key(tenant, &format!("{day}:{}", reason.as_str()))
    }

    fn window_keys(&self, tenant: &str, first: u64, today: u64) -> Vec<(u64, Reason, String)> {
        (first..=today)
            .flat_map(|day| REASONS.map(|reason| (day, reason, self.day_key(tenant, day, reason))))
            .collect()
    }

    /// Adds `asked` to the fleet's counts and `best` (tenant, question key, hits) to its best
    /// hits, in pipelines of [`ASKINGS_PER_PIPELINE`]; each set written is then cut to its
    /// most asked, and lives `days` and a day.
    pub(crate) fn add(
        &self,
        asked: &[Asked<'_>],
        best: &[(&str, &str, Vec<Hit>)],
        days: usize,
        per_tenant: usize,
    ) -> Result<(), Error> {
        let kept_for = (days as i64 + 1) * 86_400;
        let keep = (KEPT_PER_DAY * per_tenant.max(1)) as i64;
        for asked in asked.chunks(ASKINGS_PER_PIPELINE) {
            self.redis.run(|client| async move {
                let pipeline = client.pipeline();
                let mut sets = HashSet::new();
                for asked in asked {
                    let set = self.day_key(asked.tenant, asked.day, asked.reason);
                    let () = pipeline
                        .zincrby(&set, asked.count as f64, asked.key)
                        .await?;
                    sets.insert(set);
                }
                for set in &sets {
                    let () = pipeline.zremrangebyrank(set, 0, -(keep + 1)).await?;
                    let () = pipeline.expire(set, kept_for, None).await?;
                }
                let _: Vec<Value> = pipeline.all().await?;
                Ok(())
            })?;
        }
        for best in best.chunks(ASKINGS_PER_PIPELINE) {
            self.redis.run(|client| async move {
                let pipeline = client.pipeline();
                let mut hashes = HashSet::new();
                for (tenant, key, hits) in best {
                    let hits = serde_json::to_string(hits)
                        .map_err(|e| Error::new(ErrorKind::Parse, e.to_string()))?;
                    let hash = self.key(tenant, "best");
                    let () = pipeline.hset(&hash, (*key, hits)).await?;
                    hashes.insert(hash);
                }
                for hash in &hashes {
                    let () = pipeline.expire(hash, kept_for, None).await?;
                }
                let _: Vec<Value> = pipeline.all().await?;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// `tenant`'s most asked `per_tenant` questions over the days `first..=today`, most asked
    /// first, with their totals: Redis adds the window's sets into a temporary one.
    pub(crate) fn top(
        &self,
        tenant: &str,
        first: u64,
        today: u64,
        per_tenant: usize,
    ) -> Result<Vec<(String, u64)>, Error> {
        let sets: Vec<String> = self
            .window_keys(tenant, first, today)
            .into_iter()
            .map(|(_, _, key)| key)
            .collect();
        let summed = self.key(tenant, &format!("top:{:016x}", rand::random::<u64>()));
        let read: Vec<Value> = self.redis.run(|client| async move {
            let pipeline = client.pipeline();
            let () = pipeline.zunionstore(&summed, sets, None, None).await?;
            let () = pipeline
                .zrange(
                    &summed,
                    0,
                    per_tenant.max(1) as i64 - 1,
                    None,
                    true,
                    None,
                    true,
                )
                .await?;
            let () = pipeline.del(&summed).await?;
            pipeline.all().await
        })?;
        let top: Vec<(String, f64)> = match read.into_iter().nth(1) {
            Some(top) => top.convert()?,
            None => Vec::new(),
        };
        Ok(top
            .into_iter()
            .map(|(key, total)| (key, total.max(0.0) as u64))
            .collect())
    }

    /// The askings of `keys` of `tenant` by day and reason over the days `first..=today`.
    pub(crate) fn counts(
        &self,
        tenant: &str,
        first: u64,
        today: u64,
        keys: &[&str],
    ) -> Result<HashMap<String, Counts>, Error> {
        let mut counts: HashMap<String, Counts> = HashMap::new();
        if keys.is_empty() {
            return Ok(counts);
        }
        let sets = self.window_keys(tenant, first, today);
        let sets = &sets;
        let read: Vec<Value> = self.redis.run(|client| async move {
            let pipeline = client.pipeline();
            for (_, _, set) in sets {
                let () = pipeline.zmscore(set, keys.to_vec()).await?;
            }
            pipeline.all().await
        })?;
        for ((day, reason, _), scores) in sets.iter().zip(read) {
            let scores: Vec<Option<f64>> = scores.convert()?;
            for (key, score) in keys.iter().zip(scores) {
                if let Some(score) = score.filter(|s| *s > 0.0) {
                    counts
                        .entry(key.to_string())
                        .or_default()
                        .push((*day, *reason, score as u64));
                }
            }
        }
        Ok(counts)
    }

    /// The best hits the fleet holds for `keys` of `tenant`; then, once the tenant's best hits
    /// hold more than [`KEPT_PER_DAY`]` x per_tenant`, those of questions not in `top` go.
    pub(crate) fn best(
        &self,
        tenant: &str,
        keys: &[&str],
        top: &HashSet<&str>,
        per_tenant: usize,
    ) -> Result<HashMap<String, Vec<Hit>>, Error> {
        let hash = self.key(tenant, "best");
        self.redis.run(|client| async move {
            let pipeline = client.pipeline();
            let () = pipeline.hlen(&hash).await?;
            if !keys.is_empty() {
                let () = pipeline.hmget(&hash, keys.to_vec()).await?;
            }
            let mut read: Vec<Value> = pipeline.all().await?;
            let mut found = HashMap::new();
            if !keys.is_empty() {
                let hits: Vec<Option<String>> =
                    read.pop().map_or(Ok(Vec::new()), Value::convert)?;
                for (key, hits) in keys.iter().zip(hits) {
                    if let Some(hits) = hits.and_then(|h| serde_json::from_str(&h).ok()) {
                        found.insert(key.to_string(), hits);
                    }
                }
            }
            let held: usize = read.pop().map_or(Ok(0), Value::convert)?;
            if held > KEPT_PER_DAY * per_tenant.max(1) {
                let all: Vec<String> = client.hkeys(&hash).await?;
                let gone: Vec<String> = all
                    .into_iter()
                    .filter(|key| !top.contains(key.as_str()))
                    .collect();
                if !gone.is_empty() {
                    let _: u64 = client.hdel(&hash, gone).await?;
                }
            }
            Ok(found)
        })
    }
}
