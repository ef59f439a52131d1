//! The plugin over HTTP, against the real `wayfinder-router` (release) on 127.0.0.1 (issue 5):
//!
//! 1. `__search` latency, p50 and p99, at 1 and at 8 concurrent clients, on the spotify
//!    showcase supergraph once it is fully indexed. Every query is new text (its vector is
//!    embedded), as an agent's questions are.
//! 2. The added cost on ordinary requests: the same router and configuration with
//!    `wayfinder.search.enabled: false` beside it, the same operation (planned, fetched from mock
//!    subgraphs, merged) sent to each in alternating rounds; the ratio of the median latencies
//!    per round, and its median over the rounds.
//!
//! 3. What a restricted tenant's contract adds to an ordinary request (issue 42): on one router,
//!    the same operation as `staff` (the whole API: the byte scan alone) and as `public`
//!    (parsed and validated against its contract once per text, the verdict remembered),
//!    alternating request by request; the difference of the two medians, and the median of the
//!    paired differences. `hit`: the same text every time; `miss`: every request a text never
//!    seen (a new operation name), for both tenants, so the router's own caches miss for both.
//!
//! 4. What the insights add to a search (issue 55): two routers on the example, one keeping
//!    every question (`insights.tenants: [""]`; every search finds nothing, so each is
//!    counted, and the one before it as searched again), one not; the same texts (their
//!    vectors cached) to each in alternating rounds; the ratio of the median latencies per
//!    round, and its median over the rounds.
//!
//! `scripts/bench-router` builds the router and runs this. The router binary is
//! `$WAYFINDER_ROUTER`, or `target/release/wayfinder-router`. Client and router share the
//! machine's cores, so latencies include the client's share.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wayfinder_bench::{
    description_queries, p50_p99, quantile, router_binary, BenchRouter, Sections,
};
use wayfinder_supergraph::{Catalog, CatalogOptions};
use wayfinder_tests::{repo_path, schema_path};

const SPOTIFY: &str = "federated/spotify-showcase/supergraph.graphql";
const SEARCHES: usize = 400;
const ROUNDS: usize = 10;
const ORDINARY_PER_ROUND: usize = 200;

/// Sends `bodies` to `url` from `clients` concurrent clients (one keep-alive connection each);
/// the latency of each request. Every answer must be a success without errors.
async fn latencies(url: &str, bodies: Vec<Value>, clients: usize) -> Vec<Duration> {
    latencies_as(url, bodies, clients, None).await
}

/// [`latencies`], as `tenant` (the `x-wayfinder-tenant` header) when given.
async fn latencies_as(
    url: &str,
    bodies: Vec<Value>,
    clients: usize,
    tenant: Option<&str>,
) -> Vec<Duration> {
    let bodies = std::sync::Arc::new(bodies);
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (bodies, next, url) = (bodies.clone(), next.clone(), url.to_string());
            let tenant = tenant.map(str::to_string);
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut samples = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(body) = bodies.get(i) else { break };
                    let started = Instant::now();
                    let mut request = client.post(&url).json(body);
                    if let Some(tenant) = &tenant {
                        request = request.header("x-wayfinder-tenant", tenant);
                    }
                    let response = request.send().await.expect("POST");
                    let status = response.status();
                    let answer: Value = response.json().await.expect("a JSON answer");
                    samples.push(started.elapsed());
                    assert!(
                        status.is_success() && answer.get("errors").is_none(),
                        "{status}: {answer}"
                    );
                }
                samples
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("a client task"));
    }
    all
}

fn report(label: &str, samples: &[Duration], wall: Duration) {
    println!(
        "{label:<34} {}  {:.0} requests/s",
        p50_p99(samples),
        samples.len() as f64 / wall.as_secs_f64()
    );
}

const SEARCH: &str = "query Find($q: String!) { __search(query: $q, first: 10) { coordinate score pathsToRoot definition { __typename } } }";

/// [`SEARCH`] with every hit's examples.
const SEARCH_WITH_EXAMPLES: &str = "query Find($q: String!) { __search(query: $q, first: 10) { coordinate score pathsToRoot definition { __typename ... on __Field { examples { operation description } } ... on __Type { examples { operation description } } ... on __InputValue { examples { operation description } } ... on __EnumValue { examples { operation description } } } } }";

fn search_bodies(queries: &[String]) -> Vec<Value> {
    bodies_of(SEARCH, queries)
}

fn bodies_of(operation: &str, queries: &[String]) -> Vec<Value> {
    queries
        .iter()
        .map(|q| json!({ "query": operation, "variables": { "q": q } }))
        .collect()
}

async fn search_latency(binary: &Path) {
    let supergraph = schema_path(SPOTIFY);
    let catalog = Catalog::from_file(&supergraph, CatalogOptions::default()).expect("spotify");
    let cache = repo_path("target/wayfinder-bench-cache");
    let config = json!({
        "supergraph": { "introspection": true },
        "plugins": { "wayfinder.search": { "index": { "cache_dir": cache } } },
    });
    let mut router = BenchRouter::start(binary, "search", &supergraph, config).await;
    // The first start embeds the whole schema (minutes); later ones read the cache.
    router
        .process
        .wait_for("index ready", Duration::from_secs(1800))
        .await;

    // Warm-up: connections, allocator, the model's first runs.
    latencies(
        &router.process.url,
        search_bodies(&description_queries(&catalog, 20, 9)),
        1,
    )
    .await;
    for (clients, seed) in [(1, 1), (8, 8)] {
        let bodies = search_bodies(&description_queries(&catalog, SEARCHES, seed));
        let started = Instant::now();
        let samples = latencies(&router.process.url, bodies, clients).await;
        report(
            &format!("__search, {clients} client(s)"),
            &samples,
            started.elapsed(),
        );
    }

    // What examples add (issue 54): each text once to warm its vector, then the same text
    // without and with every hit's examples, in alternating order, one client.
    let queries = description_queries(&catalog, SEARCHES / 2, 54);
    latencies(&router.process.url, search_bodies(&queries), 1).await;
    let (mut without, mut with, mut added) = (Vec::new(), Vec::new(), Vec::new());
    for (i, query) in queries.iter().enumerate() {
        let one = std::slice::from_ref(query);
        let mut pair = [SEARCH, SEARCH_WITH_EXAMPLES];
        if i % 2 == 1 {
            pair.reverse();
        }
        let mut took = [Duration::ZERO; 2];
        for operation in pair {
            let sample = latencies(&router.process.url, bodies_of(operation, one), 1).await[0];
            took[usize::from(operation == SEARCH_WITH_EXAMPLES)] = sample;
        }
        without.push(took[0]);
        with.push(took[1]);
        added.push(took[1].as_secs_f64() - took[0].as_secs_f64());
    }
    added.sort_by(f64::total_cmp);
    println!(
        "__search without examples: {}\n__search with examples:    {}\n\
         median paired difference {:+.3} ms ({} pairs, 1 client, texts seen)",
        p50_p99(&without),
        p50_p99(&with),
        added[added.len() / 2] * 1e3,
        added.len()
    );
}

/// The example's subgraphs do not run; the router answers from these mocks (as in
/// router.yaml), so a request is planned, fetched from two subgraphs and merged.
fn example_config(plugin: Value) -> Value {
    let mut plugin = plugin;
    plugin["index"] = json!({ "cache_dir": repo_path("target/wayfinder-bench-cache") });
    json!({
        "plugins": { "wayfinder.search": plugin },
        "experimental_mock_subgraphs": {
            "accounts": { "query": { "me": { "__typename": "Customer", "id": "c1", "displayName": "Ada" } } },
            "catalog": { "query": { "book": { "__typename": "Book", "isbn": "978-0", "title": "The Dispossessed" } } },
        },
    })
}

/// A typical ordinary operation, named `name`.
fn ordinary(name: &str) -> Value {
    json!({
        "query": format!("query {name}($isbn: ID!) {{ me {{ id displayName }} book(isbn: $isbn) {{ isbn title }} }}"),
        "variables": { "isbn": "978-0" },
    })
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

async fn ordinary_overhead(binary: &Path) {
    let supergraph = repo_path("examples/bookshop/supergraph.graphql");
    let config = |enabled: bool| example_config(json!({ "enabled": enabled }));
    let with = BenchRouter::start(binary, "with", &supergraph, config(true)).await;
    let without = BenchRouter::start(binary, "without", &supergraph, config(false)).await;
    let body = ordinary("Ordinary");
    let round = || vec![body.clone(); ORDINARY_PER_ROUND];
    latencies(&with.process.url, round(), 1).await;
    latencies(&without.process.url, round(), 1).await;

    let (mut all_with, mut all_without, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let a = latencies(&with.process.url, round(), 1).await;
        let b = latencies(&without.process.url, round(), 1).await;
        ratios.push(quantile(&a, 0.5).as_secs_f64() / quantile(&b, 0.5).as_secs_f64());
        all_with.extend(a);
        all_without.extend(b);
    }
    let median_ratio = median(&ratios);
    for (label, samples) in [
        ("plugin enabled", &all_with),
        ("plugin disabled", &all_without),
    ] {
        println!("ordinary request, {label:<17} {}", p50_p99(samples));
    }
    println!(
        "ordinary request overhead          p50 ratio enabled/disabled: median {median_ratio:.3} over {ROUNDS} rounds (min {:.3}, max {:.3}); p99 ratio {:.3}",
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
        quantile(&all_with, 0.99).as_secs_f64() / quantile(&all_without, 0.99).as_secs_f64()
    );
}

async fn contract_cost(binary: &Path) {
    let supergraph = repo_path("examples/bookshop/supergraph.graphql");
    let config = example_config(json!({ "tenants": {
        "default": "public",
        "contracts": { "public": { "exclude_tags": ["internal"] }, "staff": {} },
    } }));
    let router = BenchRouter::start(binary, "contracts", &supergraph, config).await;
    let url = &router.process.url;
    let client = reqwest::Client::new();
    let send = |body: Value, tenant: &'static str| {
        let request = client
            .post(url)
            .header("x-wayfinder-tenant", tenant)
            .json(&body);
        async move {
            let started = Instant::now();
            let response = request.send().await.expect("POST");
            let status = response.status();
            let answer: Value = response.json().await.expect("a JSON answer");
            assert!(
                status.is_success() && answer.get("errors").is_none(),
                "{status}: {answer}"
            );
            started.elapsed()
        }
    };
    for _ in 0..ORDINARY_PER_ROUND {
        send(ordinary("Ordinary"), "staff").await;
        send(ordinary("Ordinary"), "public").await;
    }
    let pairs = ROUNDS * ORDINARY_PER_ROUND;
    for (label, miss) in [("hit", false), ("miss", true)] {
        let (mut whole, mut restricted, mut added) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..pairs {
            let name = |tenant: &str| match miss {
                true => format!("Ordinary{tenant}{i}"),
                false => "Ordinary".to_string(),
            };
            // Each goes first in every other pair: no order bias.
            let (a, b) = if i % 2 == 0 {
                let a = send(ordinary(&name("Staff")), "staff").await;
                (a, send(ordinary(&name("Public")), "public").await)
            } else {
                let b = send(ordinary(&name("Public")), "public").await;
                (send(ordinary(&name("Staff")), "staff").await, b)
            };
            added.push((b.as_secs_f64() - a.as_secs_f64()) * 1e6);
            whole.push(a);
            restricted.push(b);
        }
        println!(
            "contract, {label:<4} whole API {}  restricted {}  added p50 {:.0} µs (median of paired differences {:.0} µs)",
            p50_p99(&whole),
            p50_p99(&restricted),
            (quantile(&restricted, 0.5).as_secs_f64() - quantile(&whole, 0.5).as_secs_f64()) * 1e6,
            median(&added),
        );
    }
}

/// A search that finds nothing, so that a router keeping insights counts every one.
const SEARCH_NOTHING: &str =
    "query Find($q: String!) { __search(query: $q, first: 10, minScore: 0.999) { coordinate } }";

async fn insights_cost(binary: &Path) {
    let supergraph = repo_path("examples/bookshop/supergraph.graphql");
    let config = |insights: Value| {
        let mut config = example_config(json!({ "insights": insights }));
        config["supergraph"] = json!({ "introspection": true });
        config
    };
    let mut with = BenchRouter::start(
        binary,
        "insights",
        &supergraph,
        config(json!({ "tenants": [""] })),
    )
    .await;
    let mut without =
        BenchRouter::start(binary, "no-insights", &supergraph, config(json!({}))).await;
    for router in [&mut with, &mut without] {
        router
            .process
            .wait_for("index ready", Duration::from_secs(600))
            .await;
    }
    let catalog = Catalog::from_file(&supergraph, CatalogOptions::default()).expect("example");
    let queries = description_queries(&catalog, ORDINARY_PER_ROUND, 55);
    let round = || bodies_of(SEARCH_NOTHING, &queries);
    // Each router embeds each text once; the rounds then read their vectors from its cache.
    latencies(&with.process.url, round(), 1).await;
    latencies(&without.process.url, round(), 1).await;

    let (mut all_with, mut all_without, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        // Each goes first in every other round: no order bias.
        let (a, b) = if i % 2 == 0 {
            let a = latencies(&with.process.url, round(), 1).await;
            (a, latencies(&without.process.url, round(), 1).await)
        } else {
            let b = latencies(&without.process.url, round(), 1).await;
            (latencies(&with.process.url, round(), 1).await, b)
        };
        ratios.push(quantile(&a, 0.5).as_secs_f64() / quantile(&b, 0.5).as_secs_f64());
        all_with.extend(a);
        all_without.extend(b);
    }
    println!("__search, insights kept   {}", p50_p99(&all_with));
    println!("__search, insights off    {}", p50_p99(&all_without));
    println!(
        "insights cost              p50 ratio kept/off: median {:.3} over {ROUNDS} rounds (min {:.3}, max {:.3}); p50 {:+.3} ms",
        median(&ratios),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
        (quantile(&all_with, 0.5).as_secs_f64() - quantile(&all_without, 0.5).as_secs_f64()) * 1e3,
    );
}

fn main() {
    let binary = router_binary("scripts/bench-router");
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let sections = Sections::from_args();
    runtime.block_on(async {
        if sections.runs("search") {
            search_latency(&binary).await;
        }
        if sections.runs("ordinary") {
            ordinary_overhead(&binary).await;
        }
        if sections.runs("contract") {
            contract_cost(&binary).await;
        }
        if sections.runs("insights") {
            insights_cost(&binary).await;
        }
    });
}
