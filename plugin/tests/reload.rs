//! Hot reload under requests: a changed supergraph is re-indexed in the background while the
//! old index answers, no request fails, and an invalid supergraph leaves the old one serving.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::{wait_for, Router};

const LOAD: &str = r#"{ __search(query: "books by an author", first: 3) { coordinate cursor } __definitions(coordinates: ["Book"]) { ... on __Type { name } } authors { name } }"#;

const MOCKS: &str = "\
experimental_mock_subgraphs:
  catalog:
    query:
      authors:
        - { __typename: Author, id: a1, name: Le Guin }";

#[tokio::test]
async fn a_reload_under_requests_fails_none_and_a_bad_schema_keeps_the_old_one() {
    let router = Arc::new(Router::start(&support::example_supergraph(), "", MOCKS).await);
    let before = router.query(LOAD, json!({}), &[]).await;
    let stale_cursor = before.data()["__search"][0]["cursor"]
        .as_str()
        .unwrap()
        .to_string();

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let resent = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..2 {
        let (router, stop, sent, resent) = (
            Arc::clone(&router),
            Arc::clone(&stop),
            Arc::clone(&sent),
            Arc::clone(&resent),
        );
        clients.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let body = json!({ "query": LOAD });
                let response = router.post_resending(&body, &[], &resent).await;
                sent.fetch_add(1, Ordering::Relaxed);
                match response {
                    Ok(r)
                        if r.status == 200
                            && r.body["errors"].is_null()
                            && r.data()["authors"].is_array() => {}
                    Ok(r) => failures.push(format!("{} {}", r.status, r.body)),
                    Err(e) => failures.push(format!("{e:?}")),
                }
            }
            failures
        }));
    }

    // A new root field, written while the clients run.
    let original = std::fs::read_to_string(&router.supergraph).unwrap();
    let changed = original.replacen(
        "  \"\"\"Every author, alphabetically.\"\"\"",
        "  \"\"\"Books that arrived in the shop this week, newest first.\"\"\"\n  newArrivals: [Book!]! @join__field(graph: CATALOG)\n\n  \"\"\"Every author, alphabetically.\"\"\"",
        1,
    );
    assert_ne!(changed, original, "the fixture has the anchor line");
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::write(&router.supergraph, &changed).unwrap();

    let definition =
        r#"{ __definitions(coordinates: ["Query.newArrivals"]) { ... on __Field { name } } }"#;
    wait_for(&router, Duration::from_secs(60), |r| async move {
        r.query(definition, json!({}), &[]).await.data()["__definitions"][0]["name"]
            == "newArrivals"
    })
    .await;
    // The new field is searchable once its index is ready (the old one answers meanwhile).
    wait_for(&router, Duration::from_secs(120), |r| async move {
        let response = r
            .query(
                "{ __search(query: \"books that arrived this week\", first: 5) { coordinate } }",
                json!({}),
                &[],
            )
            .await;
        response.data()["__search"]
            .as_array()
            .is_some_and(|hits| hits.iter().any(|h| h["coordinate"] == "Query.newArrivals"))
    })
    .await;
    let stale = router
        .query(
            "query($after: String) { __search(query: \"books by an author\", first: 3, after: $after) { coordinate } }",
            json!({ "after": stale_cursor }),
            &[],
        )
        .await;
    assert_eq!(stale.codes(), ["SEARCH_STALE_CURSOR"], "{}", stale.body);

    // An invalid supergraph: the router keeps the last good one, and so does the plugin.
    std::fs::write(&router.supergraph, "this is not a supergraph").unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let still = router.query(definition, json!({}), &[]).await;
    assert_eq!(
        still.data()["__definitions"][0]["name"],
        "newArrivals",
        "{}",
        still.body
    );

    stop.store(true, Ordering::Relaxed);
    let mut failures = Vec::new();
    for client in clients {
        failures.extend(client.await.unwrap());
    }
    let sent = sent.load(Ordering::Relaxed);
    assert!(sent > 20, "only {sent} requests were sent");
    assert!(
        failures.is_empty(),
        "{} of {sent} requests failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
    // One reload hands the listener over once: at most one unanswered request per client.
    let resent = resent.load(Ordering::Relaxed);
    assert!(
        resent <= 2,
        "{resent} of {sent} requests were never answered"
    );
}
