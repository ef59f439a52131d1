//! A replica's connection to the fleet's Redis for the stores that sync from a thread of their
//! own every few seconds (the learned examples, the insights), rather than on a request.
//!
//! The connection runs on a one-thread runtime of its own, which keeps it alive between syncs
//! (a current-thread runtime would only run while a sync waits on it); a sync blocks its
//! thread on it. Keys follow the router's caches: `namespace:` then the store's own.
//!
//! Redis is never needed: down or slow, a sync fails at once (`not connected`), the outage is
//! logged once by the client's watcher, and the store goes on with its own counts.

use std::future::Future;

use fred::prelude::*;

use crate::embed::shared_store::{self, RedisConfig, SharedStoreError};

/// A blocking handle on the fleet's Redis.
pub(crate) struct FleetRedis {
    client: Client,
    namespace: String,
    runtime: tokio::runtime::Runtime,
}

impl FleetRedis {
    /// Connects in the background, on a thread named `thread`, for the store named `what`;
    /// never waits for Redis.
    pub(crate) fn connect(
        config: &RedisConfig,
        thread: &str,
        what: &str,
    ) -> Result<Self, SharedStoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(thread)
            .enable_all()
            .build()
            .map_err(|e| SharedStoreError::Config(format!("a runtime for Redis: {e}")))?;
        let (client, shown) = runtime.block_on(async {
            let (client, shown) = shared_store::client(config)?;
            shared_store::watch(&client, shown.clone());
            drop(client.connect());
            Ok::<_, SharedStoreError>((client, shown))
        })?;
        tracing::info!(url = %shown, "wayfinder: {what} shared through Redis");
        Ok(FleetRedis {
            client,
            namespace: config.namespace.clone(),
            runtime,
        })
    }

    /// `namespace:name`.
    pub(crate) fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.namespace)
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.client.is_connected()
    }

    /// Runs `commands` on the connection, or fails at once when it is down.
    pub(crate) fn run<T, F>(&self, commands: impl FnOnce(Client) -> F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        if !self.client.is_connected() {
            return Err(Error::new(ErrorKind::IO, "not connected"));
        }
        self.runtime.block_on(commands(self.client.clone()))
    }
}
