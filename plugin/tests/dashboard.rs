//! The dashboard and the alert rules (dashboards/) against a real Prometheus: Debian's
//! `prometheus` scrapes the real `wayfinder-router`'s Prometheus endpoint
//! (`telemetry.exporters.metrics.prometheus`) every second and evaluates dashboards/alerts.yaml
//! while a scripted workload runs (searches for every tenant, one that finds nothing, a contract
//! refusal, a spent quota, an overload, MCP calls, two reloads, a Redis stop). Then every
//! panel's and every rule's query must return series, `promtool check rules` must pass, the
//! alerts the workload causes must be pending or firing, and docs/metrics.md must list exactly
//! the metrics the router exports.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::Router;
use wayfinder_tests::prometheus::{check_rules, Prometheus};
use wayfinder_tests::redis::RedisServer;
use wayfinder_tests::repo_path;
use wayfinder_tests::router::free_port;

const SEARCH: &str = "query($q: String!) { __search(query: $q, first: 3) { coordinate } }";

/// Every query of the dashboard's panels, with Grafana's variables as a dashboard with every
/// tenant selected sends them.
fn panel_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expression = target["expr"].as_str().expect("a PromQL expression");
            queries.push((
                panel["title"].as_str().unwrap_or_default().to_string(),
                expression
                    .replace("$tenant", ".*")
                    .replace("$__rate_interval", "1m"),
            ));
        }
    }
    queries
}

/// Each rule's name and its query: the expression without its threshold.
fn rule_queries(rules: &str) -> Vec<(String, String)> {
    let rules: serde_yaml::Value = serde_yaml::from_str(rules).expect("alerts.yaml is YAML");
    rules["groups"]
        .as_sequence()
        .expect("groups")
        .iter()
        .flat_map(|group| group["rules"].as_sequence().expect("rules").iter())
        .map(|rule| {
            let name = rule["alert"].as_str().expect("an alert name").to_string();
            let expression = rule["expr"].as_str().expect("an expression");
            let (query, threshold) = expression
                .rsplit_once(" > ")
                .unwrap_or_else(|| panic!("{name}: `<query> > <threshold>`: {expression}"));
            assert!(
                threshold.trim().parse::<f64>().is_ok(),
                "{name}: {threshold}"
            );
            (name, query.to_string())
        })
        .collect()
}

/// The metric names in docs/metrics.md's table (its first column, as Prometheus names them).
fn documented_metrics() -> BTreeSet<String> {
    let docs = std::fs::read_to_string(repo_path("docs/metrics.md")).expect("docs/metrics.md");
    docs.lines()
        .filter_map(|line| line.strip_prefix("| `wayfinder_"))
        .filter_map(|rest| rest.split('`').next())
        .map(|name| format!("wayfinder_{name}"))
        .collect()
}

/// The `wayfinder_` metric families the router's endpoint exports.
async fn exported_metrics(port: u16) -> BTreeSet<String> {
    let text = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .expect("the router's Prometheus endpoint answers")
        .text()
        .await
        .expect("text");
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|name| name.starts_with("wayfinder_"))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn every_panel_and_alert_rule_returns_series_from_a_real_prometheus() {
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("dashboards/wayfinder.json"))
            .expect("dashboards/wayfinder.json"),
    )
    .expect("the dashboard is JSON");
    let rules_path = repo_path("dashboards/alerts.yaml");
    let rules = std::fs::read_to_string(&rules_path).expect("dashboards/alerts.yaml");
    check_rules(&rules_path).unwrap_or_else(|printed| panic!("promtool check rules: {printed}"));

    let mut redis = RedisServer::start();
    let cache = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    // One search thread and no waiting, so a burst overloads it; a quota the partner spends.
    let index = format!(
        "cache_dir: {}\nquery_sessions: 1\nredis:\n  urls: [\"{}\"]\n  timeout: 500ms",
        cache.path().display(),
        redis.url()
    );
    let plugin = format!(
        "tenants:\n  default: public\n  contracts:\n    public: {{ exclude_tags: [internal] }}\n    \
         staff: {{}}\n    partner:\n      include_tags: [partner]\n      exclude_tags: [internal]\n      \
         rate_limit: {{ capacity: 8, refill: 1, interval: 1h }}\n\
         limits: {{ max_pending_searches: 0, max_search_wait: 20ms, overload: lexical }}\n\
         insights: {{ tenants: [staff] }}\n{}",
        support::MCP_ON
    );
    let telemetry = format!(
        "telemetry:\n  exporters:\n    metrics:\n      prometheus:\n        enabled: true\n        \
         listen: 127.0.0.1:{metrics_port}\n        path: /metrics"
    );
    let router = Router::start_indexing(
        &support::example_supergraph(),
        &index,
        &plugin,
        &format!("{}\n{telemetry}", support::EXAMPLE_MOCKS),
    )
    .await;
    let prometheus = Prometheus::start(
        &[format!("127.0.0.1:{metrics_port}")],
        "/metrics",
        &[rules_path.as_path()],
    )
    .await;
    router.wait_for_lines("index ready", 1).await;

    // Searches for every tenant (and one naming none), one that finds nothing.
    for tenant in ["public", "staff", "partner", ""] {
        let headers: &[(&str, &str)] = if tenant.is_empty() {
            &[]
        } else {
            &[("x-wayfinder-tenant", tenant)]
        };
        let answer = router
            .query(SEARCH, json!({ "q": "books by an author" }), headers)
            .await;
        assert!(answer.codes().is_empty(), "{tenant}: {}", answer.body);
    }
    let staff = [("x-wayfinder-tenant", "staff")];
    let nothing = router
        .query(
            "{ __search(query: \"books by an author\", minScore: 0.999) { coordinate } }",
            json!({}),
            &staff,
        )
        .await;
    assert_eq!(nothing.data()["__search"], json!([]), "{}", nothing.body);
    // A contract refusal, then the partner's quota spent.
    let partner = [("x-wayfinder-tenant", "partner")];
    let refused = router
        .query(
            "{ book(isbn: \"1\") { title costCents } }",
            json!({}),
            &partner,
        )
        .await;
    assert_eq!(
        refused.codes(),
        ["GRAPHQL_VALIDATION_FAILED"],
        "{}",
        refused.body
    );
    let mut limited = false;
    for _ in 0..10 {
        let answer = router
            .query(SEARCH, json!({ "q": "books" }), &partner)
            .await;
        limited |= answer.codes() == ["SEARCH_RATE_LIMITED"];
    }
    assert!(limited, "the partner's quota was never spent");

    // An overload: sixteen clients at once on one search thread that waits for none.
    let router = Arc::new(router);
    let burst: Vec<_> = (0..16)
        .map(|client| {
            let router = Arc::clone(&router);
            tokio::spawn(async move {
                let mut overloaded = 0;
                for i in 0..8 {
                    let question = format!("orders a loyal customer placed {client} {i}");
                    let answer = router
                        .query(
                            SEARCH,
                            json!({ "q": question }),
                            &[("x-wayfinder-tenant", "staff")],
                        )
                        .await;
                    overloaded +=
                        usize::from(answer.body["extensions"]["wayfinder"]["overloaded"] == true);
                }
                overloaded
            })
        })
        .collect();
    let mut overloaded = 0;
    for client in burst {
        overloaded += client.await.unwrap();
    }
    assert!(overloaded > 0, "the burst overloaded no search");

    // MCP calls: one that succeeds, one refused.
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

    // A reload with Redis up, then Redis stopped and another reload: its lookups fail.
    router.add_root_field("staffPicks");
    router.wait_for_lines("index ready", 2).await;
    redis.kill();
    router.add_root_field("newArrivals");
    router.wait_for_lines("index ready", 3).await;

    // Every panel's query and every rule's query returns series once Prometheus has scraped
    // what the workload did.
    let mut queries = panel_queries(&dashboard);
    queries.extend(rule_queries(&rules));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut empty = Vec::new();
        for (title, query) in &queries {
            if prometheus.query(query).await.is_empty() {
                empty.push(format!("{title}: {query}"));
            }
        }
        if empty.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "queries without series:\n{}\ntargets: {:?}\n{}",
            empty.join("\n"),
            prometheus.targets().await,
            prometheus.log()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    println!("{} panel and rule queries return series", queries.len());

    // The alerts this workload causes.
    let expected = ["WayfinderSearchOverloaded", "WayfinderRedisUnavailable"];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let alerts = prometheus.alerts().await;
        let active = |name: &str| {
            alerts
                .iter()
                .any(|(alert, state)| alert == name && (state == "pending" || state == "firing"))
        };
        if expected.iter().all(|name| active(name)) {
            println!("alerts: {alerts:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "alerts: {alerts:?}\nredis available: {:?}",
            prometheus.query("wayfinder_cache_redis_available").await,
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    // docs/metrics.md lists exactly what the router exports.
    let documented = documented_metrics();
    let exported = exported_metrics(metrics_port).await;
    assert_eq!(
        documented,
        exported,
        "documented but not exported: {:?}; exported but not documented: {:?}",
        documented.difference(&exported).collect::<Vec<_>>(),
        exported.difference(&documented).collect::<Vec<_>>()
    );
    let used: BTreeSet<&str> = queries
        .iter()
        .flat_map(|(_, query)| query.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|word| word.starts_with("wayfinder_"))
        .collect();
    for name in used {
        let family = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(name);
        assert!(
            exported.contains(family),
            "the dashboard uses {name}, which the router does not export"
        );
    }
}
