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
//! Redis is never needed: down or slow, a sync fails, is logged once per outage by the
//! client's watcher, and the replica goes on with its own counts.

use std::collections::HashMap;
use std::time::Duration;

use fred::prelude::*;
use fred::types::Expiration;

use crate::embed::shared_store::{self, RedisConfig, SharedStoreError};

/// How long a day's counts and a shape stay in Redis: the week they count in, and a day.
const KEPT_FOR: Duration = Duration::from_secs(8 * 86_400);
/// Shapes a day's set keeps, in multiples of `max_operations`.
const KEPT_PER_DAY: usize = 4;

/// A shape as the fleet shares it: its operation alone (a replica reads the members it
/// touches from it, through its own schema).
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct SharedShape {
    pub operation: String,
}

/// A replica's connection to the fleet's learned examples, on a runtime of its own.
pub(crate) struct SharedLearned {
    client: Client,
    namespace: String,
    runtime: tokio::runtime::Runtime,
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
        // One worker thread of its own keeps the connection alive between syncs (a
        // current-thread runtime would only run while a sync waits on it).
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("wayfinder-learned-redis")
            .enable_all()
            .build()
            .map_err(|e| SharedStoreError::Config(format!("a runtime for Redis: {e}")))?;
        let (client, shown) = runtime.block_on(async {
            let (client, shown) = shared_store::client(config)?;
            shared_store::watch(&client, shown.clone());
            drop(client.connect());
            Ok::<_, SharedStoreError>((client, shown))
        })?;
        tracing::info!(url = %shown, "wayfinder: learned examples shared through Redis");
        Ok(SharedLearned {
            client,
            namespace: config.namespace.clone(),
            runtime,
        })
    }

    fn key(&self, kind: &str, name: &str) -> String {
        format!("{}:examples:{kind}:{name}", self.namespace)
    }

    /// Adds this replica's runs to the fleet's, each day's set then cut to its most run
    /// [`KEPT_PER_DAY`]` × max` shapes.
    pub(crate) fn add(&self, added: &[Runs<'_>], max: usize) -> Result<(), Error> {
        self.runtime.block_on(async {
            self.connected()?;
            let kept_for = KEPT_FOR.as_secs() as i64;
            let pipeline = self.client.pipeline();
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
        self.runtime.block_on(async {
            self.connected()?;
            let mut runs: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
            for day in first..=today {
                let top: Vec<(String, f64)> = self
                    .client
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
        self.runtime.block_on(async {
            self.connected()?;
            let pipeline = self.client.pipeline();
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

    fn connected(&self) -> Result<(), Error> {
        match self.client.is_connected() {
            true => Ok(()),
            false => Err(Error::new(ErrorKind::IO, "not connected")),
        }
    }
}
