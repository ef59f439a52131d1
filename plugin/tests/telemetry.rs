//! Telemetry through the router's own OpenTelemetry pipeline: a small OTLP/HTTP receiver on
//! 127.0.0.1 takes what the real `wayfinder-router` exports (`telemetry.exporters.tracing.otlp`
//! and `telemetry.exporters.metrics.otlp`, protocol http) and the test reads the spans, their
//! attributes and parents, and the metrics.

mod support;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric;
use prost::Message;
use serde_json::json;
use support::Router;
use wayfinder_tests::redis::RedisServer;

/// One exported span, flattened.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent_span_id: Vec<u8>,
    attributes: HashMap<String, String>,
}

/// One exported data point: metric name, its attributes, and its value (a histogram's count).
#[derive(Debug, Clone)]
struct Point {
    metric: String,
    attributes: HashMap<String, String>,
    value: f64,
}

#[derive(Default)]
struct Received {
    spans: Mutex<Vec<Span>>,
    points: Mutex<Vec<Point>>,
}

fn attributes(list: &[KeyValue]) -> HashMap<String, String> {
    list.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                Some(any_value::Value::BoolValue(b)) => b.to_string(),
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                Some(any_value::Value::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

async fn traces(State(received): State<Arc<Received>>, body: Bytes) -> &'static str {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
    let mut spans = received.spans.lock().unwrap();
    for span in request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
    {
        spans.push(Span {
            name: span.name.clone(),
            trace_id: span.trace_id.clone(),
            span_id: span.span_id.clone(),
            parent_span_id: span.parent_span_id.clone(),
            attributes: attributes(&span.attributes),
        });
    }
    ""
}

async fn metrics(State(received): State<Arc<Received>>, body: Bytes) -> &'static str {
    let request = ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics export");
    let mut points = received.points.lock().unwrap();
    for m in request
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
    {
        let point = |attributes: &[KeyValue], value: f64| Point {
            metric: m.name.clone(),
            attributes: self::attributes(attributes),
            value,
        };
        match &m.data {
            Some(metric::Data::Histogram(h)) => points.extend(
                h.data_points
                    .iter()
                    .map(|p| point(&p.attributes, p.count as f64)),
            ),
            Some(metric::Data::Gauge(g)) => points.extend(
                g.data_points
                    .iter()
                    .map(|p| point(&p.attributes, number(p))),
            ),
            Some(metric::Data::Sum(sum)) => points.extend(
                sum.data_points
                    .iter()
                    .map(|p| point(&p.attributes, number(p))),
            ),
            _ => {}
        }
    }
    ""
}

fn number(point: &opentelemetry_proto::tonic::metrics::v1::NumberDataPoint) -> f64 {
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
    match point.value {
        Some(Value::AsInt(i)) => i as f64,
        Some(Value::AsDouble(d)) => d,
        None => f64::NAN,
    }
}

/// Starts the receiver; returns its port.
async fn receiver(received: Arc<Received>) -> u16 {
    let app = axum::Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(received);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds the receiver");
    let port = listener.local_addr().expect("an address").port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// Waits until `found` holds for what was received, or fails with what was.
async fn eventually<T>(
    router: &Router,
    received: &Received,
    what: &str,
    found: impl Fn(&[Span], &[Point]) -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        {
            let spans = received.spans.lock().unwrap();
            let points = received.points.lock().unwrap();
            if let Some(value) = found(&spans, &points) {
                return value;
            }
            if Instant::now() > deadline {
                let names: BTreeSet<&str> = spans.iter().map(|s| s.name.as_str()).collect();
                let metrics: BTreeSet<&str> = points.iter().map(|p| p.metric.as_str()).collect();
                panic!(
                    "{what} never arrived.\nspans: {names:?}\nmetrics: {metrics:?}\n{}",
                    router.log()
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

const SEARCH: &str = r#"{ __search(query: "books a customer ordered", first: 3) { coordinate } }"#;

/// The spans docs/metrics.md's span table lists, each with the attributes it always has and
/// those it has when they apply.
fn documented_spans() -> Vec<(String, Vec<String>, Vec<String>)> {
    let docs = std::fs::read_to_string(wayfinder_tests::repo_path("docs/metrics.md"))
        .expect("docs/metrics.md");
    let table = docs
        .split("## Spans")
        .nth(1)
        .expect("docs/metrics.md has a Spans section");
    let quoted = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            let name = name.starts_with("wayfinder.").then(|| name.to_string())?;
            Some((name, quoted(cells.get(3)?), quoted(cells.get(4)?)))
        })
        .collect()
}

#[tokio::test]
async fn spans_and_metrics_reach_an_otlp_receiver() {
    let received = Arc::new(Received::default());
    let port = receiver(Arc::clone(&received)).await;
    let telemetry = format!(
        "telemetry:
  exporters:
    tracing:
      common:
        sampler: always_on
      otlp:
        enabled: true
        protocol: http
        endpoint: http://127.0.0.1:{port}
        batch_processor:
          scheduled_delay: 100ms
    metrics:
      otlp:
        enabled: true
        protocol: http
        endpoint: http://127.0.0.1:{port}
        batch_processor:
          scheduled_delay: 500ms"
    );
    let tenants = format!(
        "tenants:\n  contracts:\n    staff: {{}}\n    public: {{ exclude_tags: [internal] }}\n{}",
        support::MCP_ON
    );
    // An empty local cache and a shared store: the run asks Redis and writes to it.
    let redis = RedisServer::start();
    let cache = tempfile::tempdir().unwrap();
    let index = format!(
        "cache_dir: {}\nredis:\n  urls: [\"{}\"]",
        cache.path().display(),
        redis.url()
    );
    let mut router =
        Router::start_indexing(&support::example_supergraph(), &index, &tenants, &telemetry).await;

    // Indexing at start: one span per rebuilt subgraph, under the `wayfinder.index` root.
    router.wait_for_log("index ready").await;
    let (index, shards) = eventually(&router, &received, "the index spans", |spans, _| {
        let index = (*named(spans, "wayfinder.index").first()?).clone();
        let shards: Vec<Span> = named(spans, "wayfinder.index_shard")
            .into_iter()
            .cloned()
            .collect();
        (!shards.is_empty()).then_some((index, shards))
    })
    .await;
    assert!(index.attributes["documents"].parse::<usize>().unwrap() > 0);
    for shard in &shards {
        assert_eq!(shard.parent_span_id, index.span_id, "{shard:?}");
        assert_eq!(shard.trace_id, index.trace_id, "{shard:?}");
        for key in ["subgraph", "documents", "embedded", "reused"] {
            assert!(shard.attributes.contains_key(key), "{key} in {shard:?}");
        }
        // Every text embedded was looked up first (twice: with the shard's first lookup,
        // and again with its lease).
        let number = |key: &str| shard.attributes[key].parse::<u64>().unwrap();
        assert!(number("redis.misses") >= number("embedded"), "{shard:?}");
        assert_eq!(number("redis.written"), number("embedded"), "{shard:?}");
        assert_eq!(shard.attributes["redis.hits"], "0", "{shard:?}");
        assert_eq!(shard.attributes["redis.errors"], "0", "{shard:?}");
    }

    // With the index ready, a search uses vectors.
    let answer = router
        .post(
            &json!({ "query": SEARCH }),
            &[("x-wayfinder-tenant", "staff")],
        )
        .await;
    assert!(
        answer.body["data"]["__search"][0]["coordinate"].is_string(),
        "{:?}",
        answer.body
    );

    // An MCP call that succeeds and one that fails, each a span with its tool, tenant and
    // outcome.
    let staff = [("x-wayfinder-tenant", "staff")];
    let mcp = router
        .mcp_call(
            "search",
            json!({ "query": "books a customer ordered" }),
            &staff,
        )
        .await;
    assert!(!support::mcp_text(&mcp).0, "{mcp}");
    let mcp = router
        .mcp_call("search", json!({ "query": "books", "first": 0 }), &staff)
        .await;
    assert_eq!(support::mcp_code(&mcp), "SEARCH_FIRST_OUT_OF_RANGE");

    let spans = eventually(&router, &received, "the search spans", |spans, _| {
        (!named(spans, "wayfinder.merge").is_empty()
            && named(spans, "wayfinder.mcp.call").len() == 2
            && !named(spans, "wayfinder.request").is_empty())
        .then(|| spans.to_vec())
    })
    .await;
    assert!(
        !named(&spans, "starting").is_empty(),
        "the router's start-up trace is not held open by indexing"
    );
    let request = named(&spans, "wayfinder.request")[0];
    let outcomes: BTreeSet<(String, String, String)> = named(&spans, "wayfinder.mcp.call")
        .iter()
        .map(|span| {
            let attribute = |key: &str| span.attributes.get(key).cloned().unwrap_or_default();
            (attribute("tool"), attribute("tenant"), attribute("outcome"))
        })
        .collect();
    let expected = ["ok", "SEARCH_FIRST_OUT_OF_RANGE"].map(|outcome| {
        (
            "search".to_string(),
            "staff".to_string(),
            outcome.to_string(),
        )
    });
    assert_eq!(outcomes, BTreeSet::from(expected));
    assert_eq!(request.attributes["tenant"], "staff");
    assert_eq!(request.attributes["hits"], "3");
    assert_eq!(request.attributes["lexical_only"], "false");
    assert_eq!(request.attributes["semantic_fields"], "1");
    assert!(request.attributes.contains_key("generation"));
    assert!(
        !request.parent_span_id.is_empty(),
        "the request span hangs from the router's own span"
    );

    let search = named(&spans, "wayfinder.search")[0];
    assert_eq!(search.trace_id, request.trace_id);
    assert_eq!(search.attributes["hits"], "3");
    assert_eq!(search.attributes["lexical_only"], "false");
    assert_eq!(
        search.attributes["generation"],
        request.attributes["generation"]
    );
    assert_eq!(search.attributes["contract"], "false");
    for step in [
        "wayfinder.lexical_search",
        "wayfinder.embed",
        "wayfinder.vector_search",
        "wayfinder.merge",
    ] {
        let child = named(&spans, step);
        assert!(
            child.iter().any(|c| c.parent_span_id == search.span_id),
            "{step} under wayfinder.search: {child:?}"
        );
    }
    assert!(named(&spans, "wayfinder.embed")[0]
        .attributes
        .contains_key("cached"));
    assert!(named(&spans, "wayfinder.vector_search")[0]
        .attributes
        .contains_key("candidates"));

    // Every span docs/metrics.md lists is made, each carries the attributes listed, and some
    // carry those listed for when they apply (all do here but `overloaded`: this router has
    // `index.redis`, and no search was overloaded).
    for (name, always, when) in documented_spans() {
        let made = named(&spans, &name);
        assert!(!made.is_empty(), "no {name} span was exported");
        for attribute in &always {
            assert!(
                made.iter()
                    .all(|span| span.attributes.contains_key(attribute)),
                "{name} without {attribute}: {made:?}"
            );
        }
        for attribute in when.iter().filter(|a| a.as_str() != "overloaded") {
            assert!(
                made.iter()
                    .any(|span| span.attributes.contains_key(attribute)),
                "no {name} with {attribute}: {made:?}"
            );
        }
    }

    // Metrics: the latency histogram by tenant and mode, and the index gauges.
    eventually(&router, &received, "the metrics", |_, points| {
        let duration = points.iter().any(|p| {
            p.metric == "wayfinder.search.duration"
                && p.attributes.get("tenant").map(String::as_str) == Some("staff")
                && p.attributes.get("mode").map(String::as_str) == Some("hybrid")
                && p.value >= 1.0
        });
        let documents = points.iter().any(|p| {
            p.metric == "wayfinder.index.documents"
                && p.value > 0.0
                && p.attributes.get("mode").map(String::as_str) == Some("hybrid")
        });
        let gauges = [
            "wayfinder.index.generation",
            "wayfinder.index.texts_pending",
        ]
        .iter()
        .all(|name| points.iter().any(|p| p.metric == *name));
        let redis = [
            "wayfinder.cache.redis.misses",
            "wayfinder.cache.redis.written",
        ]
        .iter()
        .all(|name| points.iter().any(|p| p.metric == *name && p.value > 0.0))
            && points
                .iter()
                .any(|p| p.metric == "wayfinder.cache.redis.errors" && p.value == 0.0);
        let mcp = ["ok", "SEARCH_FIRST_OUT_OF_RANGE"].iter().all(|outcome| {
            points.iter().any(|p| {
                p.metric == "wayfinder.mcp.calls"
                    && p.attributes.get("tool").map(String::as_str) == Some("search")
                    && p.attributes.get("tenant").map(String::as_str) == Some("staff")
                    && p.attributes.get("outcome").map(String::as_str) == Some(outcome)
                    && p.value == 1.0
            })
        });
        (duration && documents && gauges && redis && mcp).then_some(())
    })
    .await;
}
