//! The fleet's learned examples, in Redis: every replica adds the runs it counted since its
//! last sync, then takes the fleet's counts of the most used shapes, so each serves what the
//! whole fleet runs.
//!
//! Keys follow the router's caches (`namespace:` then the key): `examples:runs:{day}` is a
//! sorted set per day (days since the Unix epoch) of shape keys (hex) scored by runs, cut to
//! its most run [`KEPT_PER_DAY`]`× max_operations` after each sync and gone after
//! [`KEPT_FOR`]; `examples:shape:{key}` holds the shape (its operation, JSON),
//! for as long. Nothing a client sent is in either: a shape has no value.
//!
//! Redis is never needed ([`crate::fleet`]): the replica goes on with its own counts.

use std::collections::HashMap;
use std::time::Duration;

use fred::prelude::*;
use fred::types::Expiration;

use crate::embed::shared_store::{RedisConfig, SharedStoreError};
use crate::fleet::FleetRedis;

/// How long a day's counts and a shape stay in Redis: the week they count in, and a day.
const KEPT_FOR: Duration = Duration::from_secs(8 * 86_400);
/// Shapes a day's set keeps, in multiples of `max_operations`.
const KEPT_PER_DAY: usize = 4;
/// Runs sent in one pipeline: a pipeline that times out after Redis ran it is not sent again
/// (that would count it twice), so it is kept small.
const RUNS_PER_PIPELINE: usize = 500;

/// A shape as the fleet shares it: its operation alone (a replica reads the members it
/// touches from it, through its own schema).
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct SharedShape {
    pub operation: String,
}

/// A replica's connection to the fleet's learned examples.
pub(crate) struct SharedLearned {
    redis: FleetRedis,
}

/// Runs of one shape on one day, to add.
pub(crate) struct Runs<'a> {
    pub key: u64,
    pub day: u64,
    pub runs: u64,
    pub shape: &'a SharedShape,
}

impl SharedLearned {
    /// Connects in the background; never waits for Redis.
    pub(crate) fn connect(config: &RedisConfig) -> Result<Self, SharedStoreError> {
        let redis = FleetRedis::connect(config, "wayfinder-learned-redis", "learned examples")?;
        Ok(SharedLearned { redis })
    }

    fn key(&self, kind: &str, name: &str) -> String {
        self.redis.key(&format!("examples:{kind}:{name}"))
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.redis.is_connected()
    }

    /// Adds this replica's runs to the fleet's, in pipelines of [`RUNS_PER_PIPELINE`], each
    /// day's set then cut to its most run [`KEPT_PER_DAY`]` × max` shapes.
    pub(crate) fn add(&self, added: &[Runs<'_>], max: usize) -> Result<(), Error> {
        added
            .chunks(RUNS_PER_PIPELINE)
            .try_for_each(|added| self.add_some(added, max))
    }

    fn add_some(&self, added: &[Runs<'_>], max: usize) -> Result<(), Error> {
        self.redis.run(|client| async move {
            let kept_for = KEPT_FOR.as_secs() as i64;
            let pipeline = client.pipeline();
            let mut days = Vec::new();
            for runs in added {
                let day = self.key("runs", &runs.day.to_string());
                let shape = serde_json::to_string(runs.shape)
                    .map_err(|e| Error::new(ErrorKind::Parse, e.to_string()))?;
                let member = format!("{:016x}", runs.key);
                let () = pipeline
                    .zincrby(&day, runs.runs as f64, member.as_str())
                    .await?;
                let () = pipeline
                    .set(
                        self.key("shape", &member),
                        shape,
                        Some(Expiration::EX(kept_for)),
                        None,
                        false,
                    )
                    .await?;
                if !days.contains(&day) {
                    days.push(day);
                }
            }
            for day in &days {
                let () = pipeline.expire(day, kept_for, None).await?;
                let keep = (KEPT_PER_DAY * max.max(1)) as i64;
                let () = pipeline.zremrangebyrank(day, 0, -(keep + 1)).await?;
            }
            let _: Vec<Value> = pipeline.all().await?;
            Ok(())
        })
    }

    /// The fleet's runs per day of the most run `max` shapes of each of the days
    /// `first..=today`, by shape key.
    pub(crate) fn runs(
        &self,
        first: u64,
        today: u64,
        max: usize,
    ) -> Result<HashMap<u64, Vec<(u64, u64)>>, Error> {
        self.redis.run(|client| async move {
            let mut runs: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
            for day in first..=today {
                let top: Vec<(String, f64)> = client
                    .zrange(
                        self.key("runs", &day.to_string()),
                        0,
                        max.max(1) as i64 - 1,
                        None,
                        true,
                        None,
                        true,
                    )
                    .await?;
                for (member, score) in top {
                    if let Ok(key) = u64::from_str_radix(&member, 16) {
                        runs.entry(key)
                            .or_default()
                            .push((day, score.max(0.0) as u64));
                    }
                }
            }
            Ok(runs)
        })
    }

    /// The shapes of `keys` Redis holds (one GET each, pipelined: the keys may live on
    /// several nodes of a cluster).
    pub(crate) fn shapes(&self, keys: &[u64]) -> Result<HashMap<u64, SharedShape>, Error> {
        self.redis.run(|client| async move {
            let pipeline = client.pipeline();
            for key in keys {
                let () = pipeline
                    .get(self.key("shape", &format!("{key:016x}")))
                    .await?;
            }
            let texts: Vec<Option<String>> = pipeline.all().await?;
            Ok(keys
                .iter()
                .zip(texts)
                .filter_map(|(key, text)| Some((*key, serde_json::from_str(&text?).ok()?)))
                .collect())
        })
    }
}
