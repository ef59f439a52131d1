//! Metrics, through the router's meter provider so they leave by whatever exporter
//! `telemetry.exporters.metrics` configures (Prometheus, OTLP). docs/metrics.md lists each with
//! its Prometheus name, unit and labels, and dashboards/ queries them; the dashboard test
//! (plugin/tests/dashboard.rs) fails when one the dashboard uses is no longer exported.
//!
//! Labels come from bounded sets only: `tenant` is a configured tenant (an unknown one is
//! refused before any label is written), `code` an error code the plugin makes, `tool` an MCP
//! tool; never a question, a coordinate or a client's address.
//!
//! Recorded as they happen: `wayfinder.search.duration`, `wayfinder.search.overloaded`,
//! `wayfinder.requests.refused`, `wayfinder.mcp.calls`, `wayfinder.insights.questions`. Read from the process's engine
//! ([`crate::runtime`]) at each collection: the `wayfinder.index.*` gauges and counters,
//! `wayfinder.search.embeddings` and `wayfinder.cache.redis.*`.
//!
//! Why instruments are made late: on a reload the router builds the new pipeline's plugins first
//! and only then replaces its meter providers (when the metrics configuration changed), which
//! drops the instruments and gauge callbacks made before. So each plugin instance makes its
//! histogram on first use, and registers the gauges when it is built and again on its first
//! request, once its pipeline is live. Only the latest registration observes, so a reload that
//! replaced nothing does not report a gauge twice.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider};
use opentelemetry::KeyValue;

use wayfinder_workers::insights::Reason;
use wayfinder_workers::SearchMode;

use crate::error::Code;

use crate::runtime;

const METER: &str = "wayfinder";

/// Identifies the latest gauge registration; older ones observe nothing.
static LATEST_GAUGES: AtomicU64 = AtomicU64::new(0);

/// One plugin instance's instruments (cheap to clone onto the search thread).
#[derive(Clone, Default)]
pub struct Metrics(Arc<Instruments>);

#[derive(Default)]
struct Instruments {
    /// The configured tenants (one empty name without tenants), whose overload counters start
    /// at 0 so that the first overload is an increase Prometheus sees.
    tenants: Vec<String>,
    search_duration: OnceLock<Histogram<f64>>,
    overloaded: OnceLock<Counter<u64>>,
    refused: OnceLock<Counter<u64>>,
    unanswered: OnceLock<Counter<u64>>,
    mcp_calls: OnceLock<Counter<u64>>,
    gauges_registered_live: AtomicBool,
}

impl Metrics {
    pub fn new(tenants: Vec<String>) -> Self {
        Metrics(Arc::new(Instruments {
            tenants,
            ..Default::default()
        }))
    }

    fn overloaded(&self) -> &Counter<u64> {
        self.0.overloaded.get_or_init(|| {
            meter()
                .u64_counter("wayfinder.search.overloaded")
                .with_description("Searches that found no search thread in time, by action")
                .build()
        })
    }

    /// Records one `__search` page; `found` is whether it had any hit.
    pub fn record_search(&self, elapsed: Duration, tenant: &str, mode: SearchMode, found: bool) {
        let histogram = self.0.search_duration.get_or_init(|| {
            meter()
                .f64_histogram("wayfinder.search.duration")
                .with_description("Time to answer one __search page, embedding included")
                .with_unit("s")
                // Buckets: the router's `telemetry.exporters.metrics.common.buckets`, whose
                // views override an instrument's own.
                .build()
        });
        histogram.record(
            elapsed.as_secs_f64(),
            &[
                KeyValue::new("tenant", tenant.to_string()),
                KeyValue::new("mode", mode.as_str()),
                KeyValue::new("outcome", if found { "found" } else { "empty" }),
            ],
        );
    }

    /// Counts one search that found no search thread in time, and what became of it.
    pub fn record_overload(&self, tenant: &str, action: &'static str) {
        self.overloaded().add(
            1,
            &[
                KeyValue::new("tenant", tenant.to_string()),
                KeyValue::new("action", action),
            ],
        );
    }

    /// Counts the errors the plugin answered a GraphQL request with (`body` is the response: an
    /// object, or a batch's array of them), by code. Errors a subgraph sent are not counted.
    /// `tenant` is called only when there is one.
    pub fn record_refusals(&self, tenant: impl FnOnce() -> String, body: &serde_json_bytes::Value) {
        let responses = match body {
            serde_json_bytes::Value::Array(batch) => batch.as_slice(),
            single => std::slice::from_ref(single),
        };
        let codes: Vec<Code> = responses
            .iter()
            .filter_map(|response| response.get("errors")?.as_array())
            .flatten()
            .filter_map(|error| Code::parse(error.get("extensions")?.get("code")?.as_str()?))
            .collect();
        if codes.is_empty() {
            return;
        }
        let tenant = tenant();
        for code in codes {
            let counter = self.0.refused.get_or_init(|| {
                meter()
                    .u64_counter("wayfinder.requests.refused")
                    .with_description(
                        "Errors answered instead of (part of) a GraphQL request, by code",
                    )
                    .build()
            });
            counter.add(
                1,
                &[
                    KeyValue::new("tenant", tenant.to_string()),
                    KeyValue::new("code", code.as_str()),
                ],
            );
        }
    }

    /// Counts one question insights kept (an opted-in tenant's), and why.
    pub fn record_unanswered(&self, tenant: &str, reason: Reason) {
        let counter = self.0.unanswered.get_or_init(|| {
            meter()
                .u64_counter("wayfinder.insights.questions")
                .with_description(
                    "Questions that found nothing, whose best hit scored low, or that the client \
                     followed with another search, by tenant and reason (opted-in tenants)",
                )
                .build()
        });
        counter.add(
            1,
            &[
                KeyValue::new("tenant", tenant.to_string()),
                KeyValue::new("reason", reason.as_str()),
            ],
        );
    }

    /// Counts one MCP tool call; `outcome` is `ok` or the error's code.
    pub fn record_mcp_call(&self, tool: &'static str, tenant: &str, outcome: &str) {
        let outcome = match outcome {
            "ok" => "ok",
            code => Code::parse(code).map_or(Code::Internal.as_str(), Code::as_str),
        };
        let counter = self.0.mcp_calls.get_or_init(|| {
            meter()
                .u64_counter("wayfinder.mcp.calls")
                .with_description("MCP tool calls, by tool and outcome (ok or the error code)")
                .build()
        });
        counter.add(
            1,
            &[
                KeyValue::new("tool", tool),
                KeyValue::new("tenant", tenant.to_string()),
                KeyValue::new("outcome", outcome),
            ],
        );
    }

    /// Registers the gauges once the instance serves (see the module doc); cheap afterwards.
    pub fn serving(&self) {
        let registered = &self.0.gauges_registered_live;
        if !registered.load(Ordering::Relaxed) && !registered.swap(true, Ordering::Relaxed) {
            register_gauges();
            for tenant in &self.0.tenants {
                for action in ["lexical", "refused"] {
                    self.overloaded().add(
                        0,
                        &[
                            KeyValue::new("tenant", tenant.clone()),
                            KeyValue::new("action", action),
                        ],
                    );
                }
            }
        }
    }
}

fn meter() -> opentelemetry::metrics::Meter {
    apollo_router::metrics::meter_provider().meter(METER)
}

/// Registers the index gauges, superseding earlier registrations.
pub fn register_gauges() {
    let id = LATEST_GAUGES.fetch_add(1, Ordering::Relaxed) + 1;
    let current = move || LATEST_GAUGES.load(Ordering::Relaxed) == id;
    let meter = meter();
    meter
        .u64_observable_gauge("wayfinder.index.generation")
        .with_description("The index generation answering __search")
        .with_callback(move |gauge| {
            if let Some(generation) = current().then(runtime::live_generation).flatten() {
                gauge.observe(generation.id, &[]);
            }
        })
        .build();
    meter
        .u64_observable_gauge("wayfinder.index.documents")
        .with_description("Documents in the index generation answering __search, by mode")
        .with_callback(move |gauge| {
            if let Some(generation) = current().then(runtime::live_generation).flatten() {
                gauge.observe(
                    generation.documents().len() as u64,
                    &[KeyValue::new("mode", generation.mode().as_str())],
                );
            }
        })
        .build();
    meter
        .u64_observable_gauge("wayfinder.index.texts_pending")
        .with_description("Texts the indexing run under way still has to embed")
        .with_callback(move |gauge| {
            if let Some((embedded, to_embed)) = current().then(runtime::progress).flatten() {
                gauge.observe(to_embed.saturating_sub(embedded) as u64, &[]);
            }
        })
        .build();
    meter
        .f64_observable_gauge("wayfinder.index.age")
        .with_description("Time since the index generation answering __search went live")
        .with_unit("s")
        .with_callback(move |gauge| {
            if let Some(generation) = current().then(runtime::live_generation).flatten() {
                gauge.observe(generation.made.elapsed().as_secs_f64(), &[]);
            }
        })
        .build();
    meter
        .u64_observable_gauge("wayfinder.index.failed_shards")
        .with_description("Subgraphs the live index answers lexically because indexing them failed")
        .with_unit("{shard}")
        .with_callback(move |gauge| {
            if let Some(generation) = current().then(runtime::live_generation).flatten() {
                gauge.observe(generation.failed_shards() as u64, &[]);
            }
        })
        .build();
    meter
        .u64_observable_gauge("wayfinder.index.publications_pending")
        .with_description(
            "Supergraphs handed to the index whose vectors are not done: while above 0, \
             __search answers from an older supergraph's index",
        )
        .with_callback(move |gauge| {
            if let Some(activity) = current().then(runtime::index_activity).flatten() {
                gauge.observe(activity.published.saturating_sub(activity.indexed), &[]);
            }
        })
        .build();
    meter
        .f64_observable_gauge("wayfinder.index.last_run.duration")
        .with_description("Wall time of the last finished indexing run, publication to vectors")
        .with_unit("s")
        .with_callback(move |gauge| {
            if let Some(activity) = current()
                .then(runtime::index_activity)
                .flatten()
                .filter(|a| a.runs > 0)
            {
                gauge.observe(activity.last_run_seconds, &[]);
            }
        })
        .build();
    meter
        .u64_observable_counter("wayfinder.search.embeddings")
        .with_description(
            "Question texts searches needed vectors for, by source (`cache` or `model`)",
        )
        .with_unit("{text}")
        .with_callback(move |counter| {
            if let Some((cached, embedded)) = current().then(runtime::query_cache_counts).flatten()
            {
                counter.observe(cached, &[KeyValue::new("source", "cache")]);
                counter.observe(embedded, &[KeyValue::new("source", "model")]);
            }
        })
        .build();
    meter
        .u64_observable_gauge("wayfinder.cache.redis.available")
        .with_description(
            "1 while the fleet's shared store is connected and has not failed a command in \
             the last 5 s, else 0 (indexing then goes on without it)",
        )
        .with_callback(move |gauge| {
            if let Some(available) = current().then(runtime::redis_available).flatten() {
                gauge.observe(u64::from(available), &[]);
            }
        })
        .build();
    // The engine's counters since its start, each read at collection.
    type Read = fn() -> Option<u64>;
    let counters: [(&'static str, &'static str, &'static str, Read); 8] = [
        (
            "wayfinder.index.runs",
            "Indexing runs finished",
            "{run}",
            || Some(runtime::index_activity()?.runs),
        ),
        (
            "wayfinder.index.embedded",
            "Texts the model embedded for the index (the rest came from a cache)",
            "{text}",
            || Some(runtime::index_activity()?.embedded),
        ),
        (
            "wayfinder.cache.redis.hits",
            "Lookups of a text the shared store answered with its vectors",
            "{text}",
            || Some(runtime::redis_counts()?.hits),
        ),
        (
            "wayfinder.cache.redis.misses",
            "Lookups of a text the shared store could not answer (absent, damaged, or the store away)",
            "{text}",
            || Some(runtime::redis_counts()?.misses),
        ),
        (
            "wayfinder.cache.redis.invalid",
            "Shared-store records that failed their check (embedded again)",
            "{record}",
            || Some(runtime::redis_counts()?.invalid),
        ),
        (
            "wayfinder.cache.redis.errors",
            "Shared-store commands or pipelines that failed or timed out",
            "{command}",
            || Some(runtime::redis_counts()?.errors),
        ),
        (
            "wayfinder.cache.redis.written",
            "Vectors written to the shared store",
            "{record}",
            || Some(runtime::redis_counts()?.written),
        ),
        (
            "wayfinder.cache.redis.read",
            "Bytes read from the shared store",
            "By",
            || Some(runtime::redis_counts()?.bytes_read),
        ),
    ];
    for (name, description, unit, read) in counters {
        meter
            .u64_observable_counter(name)
            .with_description(description)
            .with_unit(unit)
            .with_callback(move |counter| {
                if let Some(count) = current().then(read).flatten() {
                    counter.observe(count, &[]);
                }
            })
            .build();
    }
}
