//! The fleet's insights, in Redis: every replica adds the askings it counted since its last
//! sync, then takes the fleet's counts of each opted-in tenant's most asked questions, so any
//! replica's view lists what the whole fleet's agents could not find.
//!
//! Keys, after `namespace:insights:` and `texts:` or `hashes:` (a store of hashes never reads
//! one of texts): `{tenant}:{day}:{reason}` is a sorted set per tenant, day (since the Unix
//! epoch) and reason of question keys (the normalised text, or its HMAC under `hash_key`)
//! scored by askings, cut to its most asked [`KEPT_PER_DAY`]` x per_tenant` after each sync;
//! `{tenant}:best` is a hash of question key to the best hits its last asking got (JSON), cut
//! back to the fleet's most asked once it holds more than [`KEPT_PER_DAY`]` x per_tenant`. Both
//! go a day after the window they count in. Nothing else a client sent is in either.
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

/// The fleet's askings of one question: (day, reason, count).
pub(crate) type FleetCounts = Vec<(u64, Reason, u64)>;

/// A replica's connection to the fleet's insights.
pub(crate) struct SharedInsights {
    redis: FleetRedis,
    /// `texts` or `hashes`.
    kind: &'static str,
}

impl SharedInsights {
    /// Connects in the background; never waits for Redis.
    pub(crate) fn connect(config: &RedisConfig, hashed: bool) -> Result<Self, SharedStoreError> {
        Ok(SharedInsights {
            redis: FleetRedis::connect(config, "wayfinder-insights-redis", "insights")?,
            kind: if hashed { "hashes" } else { "texts" },
        })
    }

    fn key(&self, tenant: &str, name: &str) -> String {
        self.redis
            .key(&format!("insights:{}:{tenant}:{name}", self.kind))
    }

    fn day_key(&self, tenant: &str, day: u64, reason: Reason) -> String {
        self.key(tenant, &format!("{day}:{}", reason.as_str()))
    }

    /// Adds `asked` to the fleet's counts and `best` (tenant, question key, hits) to its best
    /// hits; each set written is then cut to its most asked, and lives `days` and a day.
    pub(crate) fn add(
        &self,
        asked: &[Asked<'_>],
        best: &[(&str, &str, &[Hit])],
        days: usize,
        per_tenant: usize,
    ) -> Result<(), Error> {
        let kept_for = (days as i64 + 1) * 86_400;
        let keep = (KEPT_PER_DAY * per_tenant.max(1)) as i64;
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
        })
    }

    /// `tenant`'s most asked `per_tenant` questions over the days `first..=today`, most asked
    /// first, with their counts by day and reason.
    pub(crate) fn top(
        &self,
        tenant: &str,
        first: u64,
        today: u64,
        per_tenant: usize,
    ) -> Result<Vec<(String, FleetCounts)>, Error> {
        let reasons = [Reason::Empty, Reason::LowScore, Reason::SearchedAgain];
        let read = self.redis.run(|client| async move {
            let pipeline = client.pipeline();
            for day in first..=today {
                for reason in reasons {
                    let () = pipeline
                        .zrange(
                            self.day_key(tenant, day, reason),
                            0,
                            per_tenant.max(1) as i64 - 1,
                            None,
                            true,
                            None,
                            true,
                        )
                        .await?;
                }
            }
            pipeline.all::<Vec<Value>>().await
        })?;
        let at = (first..=today).flat_map(|day| reasons.map(|reason| (day, reason)));
        let mut counts: HashMap<String, FleetCounts> = HashMap::new();
        for ((day, reason), set) in at.zip(read) {
            let set: Vec<(String, f64)> = set.convert()?;
            for (key, count) in set {
                let count = count.max(0.0) as u64;
                counts.entry(key).or_default().push((day, reason, count));
            }
        }
        let total = |counts: &FleetCounts| counts.iter().map(|(_, _, n)| n).sum::<u64>();
        let mut top: Vec<(String, FleetCounts)> = counts.into_iter().collect();
        top.sort_by(|a, b| total(&b.1).cmp(&total(&a.1)).then_with(|| a.0.cmp(&b.0)));
        top.truncate(per_tenant);
        Ok(top)
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
            let mut found = HashMap::new();
            if !keys.is_empty() {
                let hits: Vec<Option<String>> = client
                    .hmget(&hash, keys.iter().copied().collect::<Vec<&str>>())
                    .await?;
                for (key, hits) in keys.iter().zip(hits) {
                    if let Some(hits) = hits.and_then(|h| serde_json::from_str(&h).ok()) {
                        found.insert(key.to_string(), hits);
                    }
                }
            }
            let held: usize = client.hlen(&hash).await?;
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
