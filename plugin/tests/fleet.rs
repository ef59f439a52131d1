//! A fleet of real `wayfinder-router` processes on the spotify showcase supergraph: replicas
//! given the same `cursors.secret` accept each other's `__search` cursors and give the same
//! next page; a replica with another key refuses them, saying why; a replica serving another
//! supergraph says the cursor is stale.

mod support;

use serde_json::{json, Value};
use support::Router;

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
