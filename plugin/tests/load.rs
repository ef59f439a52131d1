//! Hostile load on the real binary: searches from several clients across many supergraph
//! reloads fail none; an overloaded search is answered lexically or refused, as configured; a
//! tenant over its quota is refused while another is served.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::{wait_for, Response, Router, EXAMPLE_MOCKS};

const SEARCH: &str = "query($q: String!) { __search(query: $q, first: 5) { coordinate cursor } }";
const MIXED: &str = "query($q: String!) { __search(query: $q, first: 3) { coordinate } __definitions(coordinates: [\"Book\"]) { ... on __Type { name } } me { displayName } }";

/// What is wrong with a search answer, if anything.
fn search_problem(response: &Response, mixed: bool) -> Option<String> {
    let text = response.body.to_string();
    let ok = response.status == 200
        && response.body["errors"].is_null()
        && response.data()["__search"].is_array()
        && !text.contains("INTERNAL_SERVER_ERROR")
        && (!mixed
            || (response.data()["me"]["displayName"] == "Ada"
                && response.data()["__definitions"][0]["name"] == "Book"));
    (!ok).then(|| format!("{} {text}", response.status))
}

#[tokio::test]
async fn twenty_reloads_under_searches_from_several_clients_fail_none() {
    let mut router = Router::start(&support::example_supergraph(), "", EXAMPLE_MOCKS).await;
    // Searches reach the vector shards from the start.
    router.wait_for_log("index ready").await;
    let router = Arc::new(router);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let resent = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..4)
        .map(|client| {
            let (router, stop, sent, resent) = (router.clone(), stop.clone(), sent.clone(), resent.clone());
            tokio::spawn(async move {
                let mut failures = Vec::new();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    // New text each time (each one is embedded), and a few repeated ones (the
                    // query cache answers: many searches reach the shards at once).
                    let text = if i % 3 == 0 { "books by an author".to_string() } else { format!("books a customer ordered {client} {i}") };
                    let mixed = client % 2 == 1;
                    let body = json!({ "query": if mixed { MIXED } else { SEARCH }, "variables": { "q": text } });
                    sent.fetch_add(1, Ordering::Relaxed);
                    match router.post_resending(&body, &[], &resent).await {
                        Ok(response) => failures.extend(search_problem(&response, mixed)),
                        Err(error) => failures.push(format!("{error:?}")),
                    }
                }
                failures
            })
        })
        .collect();

    // Twenty reloads: descriptions change, a root field comes and goes.
    let original = std::fs::read_to_string(&router.supergraph).unwrap();
    let anchor = "  \"\"\"Every author, alphabetically.\"\"\"";
    assert!(original.contains(anchor), "the fixture has the anchor line");
    for reload in 1..=20 {
        let added = reload % 2 == 1;
        let mut text = original.replace(
            "alphabetically",
            &format!("alphabetically (edition {reload})"),
        );
        if added {
            text = text.replacen(
                &format!("  \"\"\"Every author, alphabetically (edition {reload}).\"\"\""),
                &format!("  \"\"\"Books that arrived in the shop this week ({reload}).\"\"\"\n  newArrivals: [Book!]! @join__field(graph: CATALOG)\n\n  \"\"\"Every author, alphabetically (edition {reload}).\"\"\""),
                1,
            );
        }
        std::fs::write(&router.supergraph, &text).unwrap();
        // The reload is live once `__definitions` sees the field come or go (the probe may
        // meet a reload's reset too).
        let probe = json!({ "query": r#"{ __definitions(coordinates: ["Query.newArrivals"]) { ... on __Field { name } } }"# });
        wait_for(&router, Duration::from_secs(60), |router| {
            let probe = probe.clone();
            async move {
                let present = router.try_post(&probe, &[]).await.is_ok_and(|response| {
                    response.data()["__definitions"][0]["name"] == "newArrivals"
                });
                present == added
            }
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    stop.store(true, Ordering::Relaxed);
    let mut failures = Vec::new();
    for client in clients {
        failures.extend(client.await.unwrap());
    }
    let (sent, resent) = (sent.load(Ordering::Relaxed), resent.load(Ordering::Relaxed));
    assert!(sent > 200, "only {sent} requests were sent");
    assert!(
        failures.is_empty(),
        "{} of {sent} requests failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
    // Each reload hands the listener over once: at most one unanswered request per client each.
    assert!(
        resent <= 4 * 20,
        "{resent} of {sent} requests were never answered"
    );
    assert!(
        !router.log().contains("Reserve capacity"),
        "{}",
        router.log()
    );
}

/// Sends `count` searches with new text from `clients` clients at once; their answers.
async fn burst(router: &Arc<Router>, clients: usize, count: usize) -> Vec<Response> {
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (router, next) = (router.clone(), next.clone());
            tokio::spawn(async move {
                let mut answers = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break answers;
                    }
                    let body = json!({ "query": SEARCH, "variables": { "q": format!("orders placed by a loyal customer {i}") } });
                    answers.push(router.post(&body, &[]).await);
                }
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.extend(task.await.unwrap());
    }
    answers
}

/// One search thread and no waiting: of sixteen clients searching at once, most find none.
async fn overloading_router(policy: &str) -> Arc<Router> {
    let mut router = Router::start_indexing(
        &support::example_supergraph(),
        "query_sessions: 1",
        &format!(
            "limits: {{ max_pending_searches: 0, max_search_wait: 50ms, overload: {policy} }}"
        ),
        EXAMPLE_MOCKS,
    )
    .await;
    // Only searches with vectors need a search thread.
    router.wait_for_log("index ready").await;
    Arc::new(router)
}

#[tokio::test]
async fn an_overloaded_search_is_answered_lexically_or_refused_as_configured() {
    let lexical = overloading_router("lexical").await;
    let answers = burst(&lexical, 16, 160).await;
    let overloaded = answers
        .iter()
        .filter(|a| a.body["extensions"]["wayfinder"]["overloaded"] == true)
        .count();
    for answer in &answers {
        assert_eq!(search_problem(answer, false), None);
        // Lexical answers still find something.
        assert!(
            !answer.data()["__search"].as_array().unwrap().is_empty(),
            "{}",
            answer.body
        );
    }
    assert!(
        overloaded > 0 && overloaded < answers.len(),
        "{overloaded} of {} overloaded",
        answers.len()
    );
    drop(lexical);

    let refuse = overloading_router("refuse").await;
    let answers = burst(&refuse, 16, 160).await;
    let mut refused = 0;
    for answer in &answers {
        if answer.codes() == ["SEARCH_OVERLOADED"] {
            refused += 1;
            assert_eq!(answer.status, 200, "{}", answer.body);
            assert!(answer.data()["__search"].is_null(), "{}", answer.body);
        } else {
            assert_eq!(search_problem(answer, false), None);
        }
    }
    assert!(
        refused > 0 && refused < answers.len(),
        "{refused} of {} refused",
        answers.len()
    );
}

#[tokio::test]
async fn a_tenant_over_its_quota_is_refused_while_another_is_served() {
    let router = Router::start(
        &support::example_supergraph(),
        "limits: { max_fields: 2 }\ntenants:\n  contracts:\n    agents: { rate_limit: { capacity: 3, refill: 1, interval: 30s } }\n    staff: {}",
        EXAMPLE_MOCKS,
    )
    .await;
    let search = json!({ "query": "{ __search(query: \"books\") { coordinate } }" });
    let agents = [("x-wayfinder-tenant", "agents")];
    let staff = [("x-wayfinder-tenant", "staff")];
    for _ in 0..3 {
        let served = router.post(&search, &agents).await;
        assert_eq!(search_problem(&served, false), None);
    }
    let limited = router.post(&search, &agents).await;
    assert_eq!(
        (limited.status, limited.codes()),
        (429, vec!["SEARCH_RATE_LIMITED".to_string()]),
        "{}",
        limited.body
    );
    let retry = limited.body["errors"][0]["extensions"]["retryAfterMs"]
        .as_u64()
        .unwrap();
    assert!(retry > 0 && retry <= 30_000, "{retry}");
    // Ordinary requests are not counted, and the other tenant is served all along.
    let ordinary = router
        .query("{ me { displayName } }", json!({}), &agents)
        .await;
    assert_eq!(
        ordinary.data()["me"]["displayName"],
        "Ada",
        "{}",
        ordinary.body
    );
    for _ in 0..10 {
        let served = router.post(&search, &staff).await;
        assert_eq!(search_problem(&served, false), None);
    }
    let still = router.post(&search, &agents).await;
    assert_eq!(still.codes(), ["SEARCH_RATE_LIMITED"]);
}

/// Copies the folder `from` into `to` (the vector store and the saved graphs).
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("a folder");
    for entry in std::fs::read_dir(from).expect("reads the folder") {
        let path = entry.expect("an entry").path();
        let target = to.join(path.file_name().expect("a name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copies a file");
        }
    }
}

#[tokio::test]
async fn memory_does_not_grow_with_what_else_the_cache_folder_holds() {
    let example = support::example_supergraph();
    let dirs = tempfile::tempdir().expect("a temporary folder");
    let (alone, crowded) = (dirs.path().join("alone"), dirs.path().join("crowded"));
    let index = |dir: &std::path::Path| format!("cache_dir: {}", dir.display());
    // The example's vectors, in the first folder.
    let mut router = Router::start_indexing(&example, &index(&alone), "", EXAMPLE_MOCKS).await;
    router.wait_for_log("index ready").await;
    drop(router);
    // The same, with the vectors of 100,000 other texts (about 150 MB, two schemas of github's
    // size) beside them.
    copy_dir(&alone, &crowded);
    let model = wayfinder_workers::ModelConfig::default_in(&wayfinder_tests::wayfinder_home());
    let key = wayfinder_workers::embed::model_key(&model).expect("the model's key");
    let (cache, error) =
        wayfinder_workers::embed::cache::VectorCache::open(&crowded, key, 384, 4 << 30);
    assert!(error.is_none(), "{error:?}");
    let cache = std::sync::Mutex::new(cache);
    {
        let mut cache = cache.lock().expect("a lock");
        for hash in 0..100_000u128 {
            let vector: Vec<f32> = (0..384)
                .map(|i| ((hash as usize + i) % 97) as f32)
                .collect();
            cache.insert(hash << 64 | 0xfeed, std::sync::Arc::from(vector), None);
        }
    }
    wayfinder_workers::embed::cache::save_unsaved(&cache, 1).expect("saves");
    drop(cache);

    let mut resident = Vec::new();
    for dir in [&alone, &crowded] {
        let mut router = Router::start_indexing(&example, &index(dir), "", EXAMPLE_MOCKS).await;
        router.wait_for_log("index ready").await;
        assert!(
            router.log().contains("\"embedded\":0"),
            "the example's vectors are read from the store: {}",
            router.log()
        );
        // Searches read what they need; the allocator settles.
        for q in [
            "books by an author",
            "a customer's orders",
            "reviews of a book",
        ] {
            router.query(SEARCH, json!({ "q": q }), &[]).await;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        resident.push(router.rss_bytes() as f64);
    }
    let ratio = resident[1] / resident[0];
    eprintln!(
        "RSS with the example's vectors alone {:.0} MB, beside 100,000 others {:.0} MB (x{ratio:.3})",
        resident[0] / 1e6,
        resident[1] / 1e6
    );
    assert!(
        (0.9..=1.1).contains(&ratio),
        "RSS depends on what else the cache folder holds: {resident:?}"
    );
}
