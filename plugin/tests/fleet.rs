//! A fleet of real `wayfinder-router` processes on the spotify showcase supergraph:
//! - replicas given the same `cursors.secret` accept each other's `__search` cursors and give
//!   the same next page; a replica with another key refuses them, saying why; a replica serving
//!   another supergraph says the cursor is stale;
//! - with a real `redis-server` as the shared store (each replica with its own empty local
//!   cache), a new replica embeds nothing and ranks as the first did; a damaged record is
//!   embedded again, never served; replicas started together split the texts; and Redis away
//!   at start, stalled, killed or flushed fails no request.

mod support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use support::Router;
use wayfinder_tests::redis::RedisServer;

const SECRET: &str = "a-fleet-secret-for-tests-only";

const PAGE: &str = "query Page($q: String!, $after: String) {
  __search(query: $q, first: 5, after: $after) { coordinate cursor }
}";

async fn replica(supergraph: &std::path::Path, cursors: &str) -> Router {
    let mut router = Router::start(supergraph, cursors, "").await;
    router.wait_for_log("index ready").await;
    router
}

fn coordinates(response: &support::Response) -> Vec<String> {
    response.data()["__search"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {}", response.body))
        .iter()
        .map(|hit| hit["coordinate"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn last_cursor(response: &support::Response) -> String {
    response.data()["__search"]
        .as_array()
        .and_then(|hits| hits.last())
        .and_then(|hit| hit["cursor"].as_str())
        .unwrap_or_else(|| panic!("a cursor: {}", response.body))
        .to_string()
}

#[tokio::test]
async fn replicas_with_one_secret_accept_each_others_cursors() {
    let spotify = support::spotify_supergraph();
    let shared = format!("cursors:\n  secret: {SECRET}");
    let a = replica(&spotify, &shared).await;
    let b = replica(&spotify, &shared).await;
    let c = replica(&spotify, "").await;
    assert!(
        c.log().contains("no cursors.secret"),
        "a replica without a secret says pagination needs sticky sessions:\n{}",
        c.log()
    );
    let questions = [
        "tracks in a playlist",
        "follow an artist",
        "pause playback on a device",
        "albums an artist released",
        "the current user's top tracks",
    ];
    for q in questions {
        let first = a.query(PAGE, json!({ "q": q }), &[]).await;
        let after = last_cursor(&first);
        let next = json!({ "q": q, "after": after });
        let from_a = a.query(PAGE, next.clone(), &[]).await;
        let from_b = b.query(PAGE, next.clone(), &[]).await;
        assert_eq!(coordinates(&from_a).len(), 5, "{q}: {}", from_a.body);
        assert_eq!(
            coordinates(&from_b),
            coordinates(&from_a),
            "{q}: B's page 2"
        );
        assert_ne!(
            coordinates(&from_a),
            coordinates(&first),
            "{q}: a next page"
        );

        let from_c = c.query(PAGE, next, &[]).await;
        assert_eq!(
            from_c.codes(),
            ["SEARCH_INVALID_CURSOR"],
            "{q}: {}",
            from_c.body
        );
        let message = from_c.body["errors"][0]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(message.contains("cursors.secret"), "{message}");
    }
    drop((b, c));

    // Another supergraph, the same secret: the cursor names another index state.
    let example = replica(&support::example_supergraph(), &shared).await;
    let first = a
        .query(PAGE, json!({ "q": "tracks in a playlist" }), &[])
        .await;
    let stale = example
        .query(
            PAGE,
            json!({ "q": "tracks in a playlist", "after": last_cursor(&first) }),
            &[],
        )
        .await;
    assert_eq!(stale.codes(), ["SEARCH_STALE_CURSOR"], "{}", stale.body);
    let message: &Value = &stale.body["errors"][0]["message"];
    assert!(
        message
            .as_str()
            .is_some_and(|m| m.contains("another state of the schema index")),
        "{message}"
    );
}

/// A replica sharing vectors through `redis`, with `cache` as its local store.
async fn shared_replica(redis_url: &str, cache: &Path) -> Router {
    let index = format!(
        "cache_dir: {}\nredis:\n  urls: [\"{redis_url}\"]",
        cache.display()
    );
    Router::start_indexing(
        &support::spotify_supergraph(),
        &index,
        &format!("cursors:\n  secret: {SECRET}"),
        "",
    )
    .await
}

/// The fields of the router's `index ready` log lines, in order.
fn index_ready(router: &Router) -> Vec<Value> {
    router
        .log()
        .lines()
        .filter(|line| line.contains("index ready"))
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn count(line: &Value, field: &str) -> u64 {
    line[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {line}"))
}

/// Waits until the router has logged `n` `index ready` lines; the last. Up to five minutes:
/// a replica indexing from an empty cache on a busy 2-core machine takes two.
async fn indexed(router: &Router, n: usize) -> Value {
    for _ in 0..3000 {
        if let Some(line) = index_ready(router).get(n - 1) {
            return line.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no index ready #{n}:\n{}", router.log());
}

/// 50 questions: this project's own spotify sets, then the schema's one-line descriptions.
fn fifty_questions() -> Vec<String> {
    let mut questions: Vec<String> = ["actions", "reads"]
        .iter()
        .flat_map(|set| {
            let path =
                wayfinder_tests::repo_path(&format!("bench/corpus/questions/spotify/{set}.jsonl"));
            std::fs::read_to_string(path)
                .expect("the question set")
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter_map(|q| q["query"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect();
    let schema = std::fs::read_to_string(support::spotify_supergraph()).expect("the supergraph");
    questions.extend(
        schema
            .lines()
            .filter_map(|line| line.trim().strip_prefix("\"\"\"")?.strip_suffix("\"\"\""))
            .filter(|text| text.len() > 12)
            .map(str::to_string),
    );
    questions.dedup();
    questions.truncate(50);
    assert_eq!(questions.len(), 50);
    questions
}

async fn ranking(router: &Router, questions: &[String]) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    for q in questions {
        let page = router
            .query(
                "query($q: String!) { __search(query: $q, first: 10) { coordinate } }",
                json!({ "q": q }),
                &[],
            )
            .await;
        pages.push(coordinates(&page));
    }
    pages
}

/// `router` gives `expected`'s top 10 for each question.
async fn assert_ranks_as(router: &Router, questions: &[String], expected: &[Vec<String>]) {
    for (i, (page, wanted)) in ranking(router, questions)
        .await
        .iter()
        .zip(expected)
        .enumerate()
    {
        assert_eq!(page, wanted, "question {i}: {:?}", questions[i]);
    }
}

#[tokio::test]
async fn a_new_replica_takes_every_vector_from_redis_and_ranks_alike() {
    let redis = RedisServer::start();
    let caches: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let questions = fifty_questions();

    let a = shared_replica(&redis.url(), caches[0].path()).await;
    let cold = indexed(&a, 1).await;
    assert!(count(&cold, "embedded") > 1000, "A indexes cold: {cold}");
    assert_eq!(count(&cold, "from_redis"), 0, "{cold}");
    let records = redis.keys("wayfinder:vectors:*");
    assert_eq!(
        records.len() as u64,
        count(&cold, "embedded"),
        "A wrote what it embedded"
    );
    let graphs = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|entry| {
                let name = entry.as_ref().unwrap().file_name();
                name.to_string_lossy().ends_with(".usearch")
            })
            .count()
    };
    assert_eq!(
        redis.keys("wayfinder:graphs:*").len(),
        graphs(caches[0].path()),
        "A shared the graphs it built"
    );
    let from_a = ranking(&a, &questions).await;
    assert!(from_a.iter().all(|page| page.len() == 10));

    let b = shared_replica(&redis.url(), caches[1].path()).await;
    let ready = indexed(&b, 1).await;
    assert_eq!(count(&ready, "embedded"), 0, "B embeds nothing: {ready}");
    assert!(
        count(&ready, "from_redis") >= records.len() as u64,
        "{ready}"
    );
    assert_eq!(ready["generation"], cold["generation"]);
    assert_eq!(
        graphs(caches[1].path()),
        graphs(caches[0].path()),
        "B took A's graphs"
    );
    assert_ranks_as(&b, &questions, &from_a).await;
    drop(b);

    // A damaged record (bytes inside the vector overwritten) fails its check: C embeds that
    // one text again and writes it back, and ranks alike.
    let damaged = &records[records.len() / 2];
    assert!(redis
        .cli(&["SETRANGE", damaged, "100", "not a float"])
        .parse::<u64>()
        .is_ok());
    let before = redis.cli(&["GET", damaged]);
    let c = shared_replica(&redis.url(), caches[2].path()).await;
    let ready = indexed(&c, 1).await;
    assert_eq!(
        count(&ready, "embedded"),
        1,
        "C embeds the damaged text alone: {ready}"
    );
    assert!(c.log().contains("failed their check"), "{}", c.log());
    assert_ne!(
        redis.cli(&["GET", damaged]),
        before,
        "the record is written again"
    );
    assert_ranks_as(&c, &questions, &from_a).await;
}

#[tokio::test]
async fn replicas_started_together_split_the_texts() {
    let redis = RedisServer::start();
    let caches: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let url = redis.url();
    let (a, b) = tokio::join!(
        shared_replica(&url, caches[0].path()),
        shared_replica(&url, caches[1].path())
    );
    let (ready_a, ready_b) = (indexed(&a, 1).await, indexed(&b, 1).await);
    let distinct = redis.keys("wayfinder:vectors:*").len() as f64;
    let embedded = (count(&ready_a, "embedded") + count(&ready_b, "embedded")) as f64;
    println!(
        "{embedded} texts embedded across both replicas for {distinct} distinct ({:.3}x)",
        embedded / distinct
    );
    assert!(
        embedded <= 1.1 * distinct,
        "{embedded} texts embedded for {distinct} distinct: {ready_a} {ready_b}"
    );
    assert!(
        count(&ready_a, "embedded") > 0 && count(&ready_b, "embedded") > 0,
        "both worked"
    );
}

/// Rewrites one description of the router's supergraph copy, so that a reload embeds again.
fn change_a_description(router: &Router, to: &str) {
    let schema = std::fs::read_to_string(&router.supergraph).unwrap();
    let anchor = "The synthetic timeout configured for the field.";
    assert!(schema.contains(anchor), "the fixture has the anchor line");
    let changed = schema.replacen(anchor, &format!("{anchor} {to}."), 1);
    std::fs::write(&router.supergraph, changed).unwrap();
}

#[tokio::test]
async fn redis_away_stalled_killed_or_flushed_fails_no_request() {
    let mut redis = RedisServer::start();
    redis.kill();
    let cache = tempfile::tempdir().unwrap();

    // Down at start: the replica starts, says so, and indexes alone.
    let router = shared_replica(&redis.url(), cache.path()).await;
    let ready = indexed(&router, 1).await;
    assert!(count(&ready, "embedded") > 1000, "{ready}");
    let log = router.log();
    assert!(log.contains("Redis unreachable"), "{log}");
    assert!(
        log.contains(&format!("127.0.0.1:{}", redis.port)),
        "the log names the URL: {log}"
    );
    let router = Arc::new(router);

    let stop = Arc::new(AtomicBool::new(false));
    let searches = {
        let (router, stop) = (Arc::clone(&router), Arc::clone(&stop));
        tokio::spawn(async move {
            let (mut sent, mut failures) = (0, Vec::new());
            // A reload drops a connection the router accepted but had not read
            // (apollographql/router#5185), whatever Redis does: such a search is sent again.
            let resent = AtomicUsize::new(0);
            while !stop.load(Ordering::Relaxed) {
                let query =
                    "{ __search(query: \"tracks in a playlist\", first: 5) { coordinate } }";
                let page = router
                    .post_resending(&json!({ "query": query }), &[], &resent)
                    .await;
                sent += 1;
                match page {
                    Ok(r) if r.status == 200 && r.body["errors"].is_null() => {}
                    Ok(r) => failures.push(format!("{} {}", r.status, r.body)),
                    Err(e) => failures.push(format!("{e:?}")),
                }
            }
            (sent, failures)
        })
    };

    // Back (empty, as after a flush): the client reconnects and the next run writes again.
    redis.restart();
    support::wait_for(&router, Duration::from_secs(30), |r| async move {
        r.log().contains("Redis is unreachable: no longer")
    })
    .await;
    change_a_description(&router, "One");
    let ready = indexed(&router, 2).await;
    assert!(count(&ready, "embedded") >= 1, "{ready}");
    assert!(
        !redis.keys("wayfinder:vectors:*").is_empty(),
        "writes resumed"
    );

    // Stalled past the timeout: the run goes on without it.
    // (The router notices a changed file within about 3 s.)
    assert_eq!(redis.cli(&["CLIENT", "PAUSE", "20000", "ALL"]), "OK");
    change_a_description(&router, "Two");
    let ready = indexed(&router, 3).await;
    assert!(count(&ready, "embedded") >= 1, "{ready}");
    assert!(
        router
            .log()
            .contains("Redis commands fail; indexing goes on"),
        "{}",
        router.log()
    );
    assert_eq!(redis.cli(&["CLIENT", "UNPAUSE"]), "OK");

    // Killed: the next run goes on without it.
    redis.kill();
    change_a_description(&router, "Three");
    let ready = indexed(&router, 4).await;
    assert!(count(&ready, "embedded") >= 1, "{ready}");

    stop.store(true, Ordering::Relaxed);
    let (sent, failures) = searches.await.unwrap();
    assert!(sent > 10, "{sent} searches");
    assert!(
        failures.is_empty(),
        "{} of {sent} searches failed: {failures:?}",
        failures.len()
    );
    assert!(
        !router.log().contains(wayfinder_tests::redis::PASSWORD),
        "the log shows no password"
    );
}
