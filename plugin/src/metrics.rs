//! Metrics, through the router's meter provider so they leave by whatever exporter
//! `telemetry.exporters.metrics` configures (Prometheus, OTLP):
//!
//! - `wayfinder.search.duration` (histogram, seconds): one `__search` page, by `tenant` and by
//!   `mode` (`hybrid`, `partial`: some shards still without vectors, `lexical`).
//! - `wayfinder.search.overloaded` (counter): searches that found no search thread in time, by
//!   `tenant` and `action` (`lexical`: answered without the model; `refused`).
//! - `wayfinder.mcp.calls` (counter): MCP tool calls, by `tool`, `tenant` and `outcome` (`ok`
//!   or `error`; the `wayfinder.mcp.call` span has the error's code).
//! - `wayfinder.index.generation`: the generation answering searches.
//! - `wayfinder.index.documents` (by `mode`): documents in that generation.
//! - `wayfinder.index.texts_pending`: texts the indexing run under way still has to embed.
//! - `wayfinder.cache.redis.hits`, `.misses`, `.invalid`, `.errors`, `.written` (counters),
//!   `wayfinder.cache.redis.read` (counter, bytes): what the fleet's shared store answered
//!   the indexing runs, with `index.redis` set.
//!
//! The gauges are read from the process's engine ([`crate::runtime`]) at each collection.
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

use wayfinder_workers::SearchMode;

use crate::runtime;

const METER: &str = "wayfinder";

/// Identifies the latest gauge registration; older ones observe nothing.
static LATEST_GAUGES: AtomicU64 = AtomicU64::new(0);

/// One plugin instance's instruments (cheap to clone onto the search thread).
#[derive(Clone, Default)]
pub struct Metrics(Arc<Instruments>);

#[derive(Default)]
struct Instruments {
    search_duration: OnceLock<Histogram<f64>>,
    overloaded: OnceLock<Counter<u64>>,
    mcp_calls: OnceLock<Counter<u64>>,
    gauges_registered_live: AtomicBool,
}

impl Metrics {
    /// Records one `__search` page.
    pub fn record_search(&self, elapsed: Duration, tenant: &str, mode: SearchMode) {
        let histogram = self.0.search_duration.get_or_init(|| {
            meter()
                .f64_histogram("wayfinder.search.duration")
                .with_description("Time to answer one __search page, embedding included")
                .with_unit("s")
                .build()
        });
        histogram.record(
            elapsed.as_secs_f64(),
            &[
                KeyValue::new("tenant", tenant.to_string()),
                KeyValue::new("mode", mode.as_str()),
            ],
        );
    }

    /// Counts one search that found no search thread in time, and what became of it.
    pub fn record_overload(&self, tenant: &str, action: &'static str) {
        let counter = self.0.overloaded.get_or_init(|| {
            meter()
                .u64_counter("wayfinder.search.overloaded")
                .with_description("Searches that found no search thread in time, by action")
                .build()
        });
        counter.add(
            1,
            &[
                KeyValue::new("tenant", tenant.to_string()),
                KeyValue::new("action", action),
            ],
        );
    }

    /// Counts one MCP tool call.
    pub fn record_mcp_call(&self, tool: &'static str, tenant: &str, outcome: &'static str) {
        let counter = self.0.mcp_calls.get_or_init(|| {
            meter()
                .u64_counter("wayfinder.mcp.calls")
                .with_description("MCP tool calls, by tool and outcome")
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
    type Count = fn(&wayfinder_workers::RedisCounts) -> u64;
    let counters: [(&'static str, &'static str, &'static str, Count); 6] = [
        (
            "wayfinder.cache.redis.hits",
            "Lookups of a text the shared store answered with its vectors",
            "{text}",
            |c| c.hits,
        ),
        (
            "wayfinder.cache.redis.misses",
            "Lookups of a text the shared store could not answer (absent, damaged, or the store away)",
            "{text}",
            |c| c.misses,
        ),
        (
            "wayfinder.cache.redis.invalid",
            "Shared-store records that failed their check (embedded again)",
            "{record}",
            |c| c.invalid,
        ),
        (
            "wayfinder.cache.redis.errors",
            "Shared-store commands or pipelines that failed or timed out",
            "{command}",
            |c| c.errors,
        ),
        (
            "wayfinder.cache.redis.written",
            "Vectors written to the shared store",
            "{record}",
            |c| c.written,
        ),
        (
            "wayfinder.cache.redis.read",
            "Bytes read from the shared store",
            "By",
            |c| c.bytes_read,
        ),
    ];
    for (name, description, unit, count) in counters {
        meter
            .u64_observable_counter(name)
            .with_description(description)
            .with_unit(unit)
            .with_callback(move |counter| {
                if let Some(counts) = current().then(runtime::redis_counts).flatten() {
                    counter.observe(count(&counts), &[]);
                }
            })
            .build();
    }
}
