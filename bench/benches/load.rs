//! Hostile load (issue 41), against the real `wayfinder-router` (release) on 127.0.0.1:
//!
//! 1. Footprint: RSS once started and fully indexed from an empty vector cache (so after an
//!    indexing run, as a new pod), with `wayfinder.search` on and with `enabled: false`, on the
//!    bundled example and on github, in the same run. The "added" RSS is on minus off.
//! 2. Flood: 16 and then 64 clients send `__search` with new text each time (every search embeds
//!    its question) while one client sends the ordinary request `{ me { displayName } }`; the
//!    ordinary request's latency is also measured alone, on the same router, just before. Search
//!    latencies are bounded by `limits.max_search_wait` plus one search; searches past the bound
//!    are answered lexically and counted as overloaded.
//! 3. Miss throughput: the same 16-client flood with a search thread per core and with
//!    `query_sessions: 1`, reported as the ratio of model-answered searches per second, with
//!    the ordinary request's p99 under each (the default leaves one core to the router).
//!
//! `scripts/bench-load` builds the router and runs this. The router binary is
//! `$WAYFINDER_ROUTER`, or `target/release/wayfinder-router`. Clients and router share the
//! machine's cores, so latencies include the clients' share.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wayfinder_bench::{description_queries, p50_p99, quantile, router_binary, BenchRouter};
use wayfinder_supergraph::{Catalog, CatalogOptions};
use wayfinder_tests::{repo_path, schema_path, single_subgraph_supergraph};

const EXAMPLE: &str = "examples/bookshop/supergraph.graphql";
const GITHUB: &str = "monolithic/github/schema.graphql";
/// How long each flood lasts, and the ordinary request alone before it.
const FLOOD: Duration = Duration::from_secs(15);
const ALONE: Duration = Duration::from_secs(8);
const MAX_SEARCH_WAIT_MS: u64 = 250;
const ORDINARY: &str = "{ me { displayName } }";

/// Starts `binary` on `supergraph` with the plugin's section `plugin`, the example's mocks,
/// and, unless the plugin is off, waits until the schema is indexed.
async fn start(binary: &Path, name: &str, supergraph: &Path, plugin: Value) -> BenchRouter {
    let config = json!({
        "supergraph": { "introspection": true },
        "plugins": { "wayfinder.search": plugin },
        // The example's subgraphs do not run; the router answers from these mocks.
        "experimental_mock_subgraphs": {
            "accounts": { "query": { "me": { "__typename": "Customer", "id": "c1", "displayName": "Ada" } } },
        },
    });
    let mut router = BenchRouter::start(binary, name, supergraph, config).await;
    if plugin["enabled"] != json!(false) {
        // The first start embeds the whole schema (minutes for github); later ones read the
        // cache.
        router
            .process
            .wait_for("index ready", Duration::from_secs(1800))
            .await;
    }
    router
}

/// A cache folder per schema: RSS must not count vectors of other schemas (the cache file is
/// read whole at start; issue 43).
fn cache(schema: &str) -> PathBuf {
    repo_path("target/wayfinder-load-cache").join(schema)
}

/// A monolithic schema as a supergraph the router runs, in a temporary file.
fn servable(schema: &Path) -> PathBuf {
    let copy = std::env::temp_dir().join(format!("wayfinder-load-{}.graphql", std::process::id()));
    std::fs::write(&copy, single_subgraph_supergraph(schema)).expect("writes the supergraph");
    copy
}

/// RSS 3 s after the router is ready, and 15 s after, once what was freed is given back (the
/// router's jemalloc returns freed pages after a 10 s decay, so the first seconds after indexing
/// still count the indexing's garbage).
async fn settled_rss(router: &BenchRouter) -> [u64; 2] {
    tokio::time::sleep(Duration::from_secs(3)).await;
    let early = router.process.rss_bytes();
    tokio::time::sleep(Duration::from_secs(12)).await;
    [early, router.process.rss_bytes()]
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

async fn footprint(binary: &Path) {
    println!("footprint: RSS once indexed, MB, at 3 s / 15 s     on            off          added");
    for (label, name, schema) in [
        ("example (106 members)", "example", repo_path(EXAMPLE)),
        ("github", "github", servable(&schema_path(GITHUB))),
    ] {
        let empty = cache(&format!("empty-{name}"));
        let _ = std::fs::remove_dir_all(&empty);
        let on = start(
            binary,
            "on",
            &schema,
            json!({ "index": { "cache_dir": empty } }),
        )
        .await;
        let on_rss = settled_rss(&on).await;
        drop(on);
        let _ = std::fs::remove_dir_all(&empty);
        let off = start(binary, "off", &schema, json!({ "enabled": false })).await;
        let off_rss = settled_rss(&off).await;
        drop(off);
        let column = |[early, late]: [u64; 2]| format!("{:>5.0} / {:<5.0}", mb(early), mb(late));
        println!(
            "  {label:<36} {}  {}  {}",
            column(on_rss),
            column(off_rss),
            column([0, 1].map(|i| on_rss[i].saturating_sub(off_rss[i])))
        );
    }
}

/// What one flood measured.
struct Flood {
    ordinary: Vec<Duration>,
    ordinary_failed: usize,
    searches: Vec<Duration>,
    /// Searches answered with the model (not overloaded).
    modelled: usize,
    overloaded: usize,
    search_failed: usize,
    wall: Duration,
}

fn search_body(text: &str) -> Value {
    json!({
        "query": "query Find($q: String!) { __search(query: $q, first: 5) { coordinate score } }",
        "variables": { "q": text },
    })
}

/// The ordinary request from one client for `duration`, while `flooders` clients send new
/// searches as fast as they are answered.
async fn flood(url: &str, texts: Arc<Vec<String>>, flooders: usize, duration: Duration) -> Flood {
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicUsize::new(0));
    let searchers: Vec<_> = (0..flooders)
        .map(|_| {
            let (stop, next, texts, url) =
                (stop.clone(), next.clone(), texts.clone(), url.to_string());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let (mut samples, mut modelled, mut overloaded, mut failed) = (Vec::new(), 0, 0, 0);
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let text = format!("{} {i}", texts[i % texts.len()]);
                    let started = Instant::now();
                    let answer = match client.post(&url).json(&search_body(&text)).send().await {
                        Ok(response) if response.status().is_success() => {
                            response.json::<Value>().await.ok()
                        }
                        _ => None,
                    };
                    samples.push(started.elapsed());
                    match answer {
                        Some(a) if a["errors"].is_null() && a["data"]["__search"].is_array() => {
                            if a["extensions"]["wayfinder"]["overloaded"] == json!(true) {
                                overloaded += 1;
                            } else {
                                modelled += 1;
                            }
                        }
                        _ => failed += 1,
                    }
                }
                (samples, modelled, overloaded, failed)
            })
        })
        .collect();
    let started = Instant::now();
    let (ordinary, ordinary_failed) = ordinary_apart(url, duration).await;
    stop.store(true, Ordering::Relaxed);
    let wall = started.elapsed();
    let mut result = Flood {
        ordinary,
        ordinary_failed,
        searches: Vec::new(),
        modelled: 0,
        overloaded: 0,
        search_failed: 0,
        wall,
    };
    for searcher in searchers {
        let (samples, modelled, overloaded, failed) = searcher.await.expect("a search client");
        result.searches.extend(samples);
        result.modelled += modelled;
        result.overloaded += overloaded;
        result.search_failed += failed;
    }
    result
}

/// [`ordinary_for`] on a thread and runtime of its own, so the flood's clients do not delay
/// the measuring client's own task: the latency measured is the router's.
async fn ordinary_apart(url: &str, duration: Duration) -> (Vec<Duration>, usize) {
    let url = url.to_string();
    let thread = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(ordinary_for(&url, duration))
    });
    tokio::task::spawn_blocking(move || thread.join().expect("the measuring client"))
        .await
        .expect("the measuring thread")
}

/// The ordinary request, one at a time, for `duration`: latencies and failures.
async fn ordinary_for(url: &str, duration: Duration) -> (Vec<Duration>, usize) {
    let client = reqwest::Client::new();
    let body = json!({ "query": ORDINARY });
    let (mut samples, mut failed) = (Vec::new(), 0);
    let started = Instant::now();
    while started.elapsed() < duration {
        let sent = Instant::now();
        let ok = match client.post(url).json(&body).send().await {
            Ok(response) if response.status().is_success() => response
                .json::<Value>()
                .await
                .is_ok_and(|a| a["errors"].is_null() && a["data"]["me"]["displayName"].is_string()),
            _ => false,
        };
        samples.push(sent.elapsed());
        failed += usize::from(!ok);
        // An agent's gateway also serves paced traffic, not one closed loop.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    (samples, failed)
}

fn plugin(query_sessions: Option<usize>) -> Value {
    let mut index = json!({ "cache_dir": cache("example") });
    if let Some(sessions) = query_sessions {
        index["query_sessions"] = json!(sessions);
    }
    json!({
        "index": index,
        "limits": { "max_search_wait": format!("{MAX_SEARCH_WAIT_MS}ms"), "overload": "lexical" },
    })
}

async fn floods(binary: &Path) {
    let example = repo_path(EXAMPLE);
    let catalog = Catalog::from_file(&example, CatalogOptions::default()).expect("the example");
    let texts = Arc::new(description_queries(&catalog, 500, 41));
    let router = start(binary, "flood", &example, plugin(None)).await;
    let url = router.process.url.clone();
    // Warm-up: connections, the model's first runs, every search thread's session.
    flood(&url, texts.clone(), 4, Duration::from_secs(3)).await;

    for clients in [16, 64] {
        let (alone, alone_failed) = ordinary_apart(&url, ALONE).await;
        let run = flood(&url, texts.clone(), clients, FLOOD).await;
        let alone_p99 = quantile(&alone, 0.99);
        let flood_p99 = quantile(&run.ordinary, 0.99);
        println!(
            "flood of {clients} search clients, {:.0} s:",
            run.wall.as_secs_f64()
        );
        println!(
            "  ordinary alone          {}  failed {alone_failed}",
            p50_p99(&alone)
        );
        println!(
            "  ordinary under flood    {}  failed {}  p99 ratio {:.2}",
            p50_p99(&run.ordinary),
            run.ordinary_failed,
            flood_p99.as_secs_f64() / alone_p99.as_secs_f64()
        );
        println!(
            "  __search                {}  max {:.0} ms  failed {}",
            p50_p99(&run.searches),
            run.searches
                .iter()
                .max()
                .map_or(0.0, |d| d.as_secs_f64() * 1e3),
            run.search_failed
        );
        let rate = run.modelled as f64 / run.wall.as_secs_f64();
        println!(
            "  with the model {rate:.0}/s, overloaded (lexical) {:.0}/s",
            run.overloaded as f64 / run.wall.as_secs_f64()
        );
    }
}

/// Miss throughput, 16 clients, with a search thread per core against one, each on a router of
/// its own, with the ordinary request's p99 under each flood: what the default (one core left to
/// the router) gives up and what it buys.
async fn throughput(binary: &Path) {
    let example = repo_path(EXAMPLE);
    let catalog = Catalog::from_file(&example, CatalogOptions::default()).expect("the example");
    let texts = Arc::new(description_queries(&catalog, 500, 41));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rates = Vec::new();
    for sessions in [cores, 1] {
        let router = start(binary, "throughput", &example, plugin(Some(sessions))).await;
        let url = router.process.url.clone();
        flood(&url, texts.clone(), 4, Duration::from_secs(3)).await;
        let (alone, _) = ordinary_apart(&url, ALONE).await;
        let run = flood(&url, texts.clone(), 16, FLOOD).await;
        let rate = run.modelled as f64 / run.wall.as_secs_f64();
        println!(
            "query_sessions: {sessions}, 16 clients: {rate:.0} model searches/s; ordinary p99 alone {:.2} ms, under the flood {:.2} ms",
            quantile(&alone, 0.99).as_secs_f64() * 1e3,
            quantile(&run.ordinary, 0.99).as_secs_f64() * 1e3,
        );
        rates.push(rate);
    }
    println!(
        "miss throughput ratio, query_sessions: {cores} against 1: {:.2}",
        rates[0] / rates[1].max(f64::MIN_POSITIVE)
    );
}

fn main() {
    let binary = router_binary("scripts/bench-load");
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        if only.as_deref().is_none_or(|o| o == "footprint") {
            footprint(&binary).await;
        }
        if only.as_deref().is_none_or(|o| o == "flood") {
            floods(&binary).await;
            throughput(&binary).await;
        }
    });
}
