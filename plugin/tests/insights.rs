//! What agents could not find, through the real router: a scripted workload of searches and
//! operations from several clients, then the insights view (`insights.view`) lists the
//! questions it should, with their reasons and best hits, for opted-in tenants only; with
//! `hash_key`, no question text leaves or stays.

mod support;

use serde_json::{json, Value};
use support::Router;
use wayfinder_tests::router::free_port;

const SEARCH: &str = "query($q: String!, $min: Float) { __search(query: $q, first: 3, minScore: $min) { coordinate } }";

/// A router whose insights start empty (in a cache folder of its own) and are served on a
/// port of their own.
async fn start(extra_insights: &str, cache: &std::path::Path) -> (Router, u16) {
    let view = free_port();
    let plugin = format!(
        "tenants:\n  contracts:\n    staff: {{}}\n    public: {{ exclude_tags: [internal] }}\n\
         insights:\n  tenants: [staff]\n  view: {{ listen: 127.0.0.1:{view} }}\n{extra_insights}"
    );
    let mut router = Router::start_indexing(
        &support::example_supergraph(),
        &format!("cache_dir: {}", cache.display()),
        &plugin,
        support::EXAMPLE_MOCKS,
    )
    .await;
    router.wait_for_log("index ready").await;
    (router, view)
}

async fn ask(router: &Router, tenant: &str, client: &str, question: &str, min_score: Option<f64>) {
    let answer = router
        .query(
            SEARCH,
            json!({ "q": question, "min": min_score }),
            &[
                ("x-wayfinder-tenant", tenant),
                ("apollographql-client-name", client),
            ],
        )
        .await;
    assert!(answer.codes().is_empty(), "{}", answer.body);
}

/// The saved store, once it holds `text`.
async fn saved_with(cache: &std::path::Path, text: &str) -> String {
    let file = cache.join("insights.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let saved = std::fs::read_to_string(&file).unwrap_or_default();
        if saved.contains(text) {
            return saved;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} without {text}: {saved}",
            file.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

async fn view(port: u16, query: &str) -> (u16, Value) {
    let response = reqwest::get(format!("http://127.0.0.1:{port}/wayfinder/insights{query}"))
        .await
        .expect("the insights view answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

#[tokio::test]
async fn the_view_lists_what_agents_could_not_find() {
    // Low scores are not counted here: which questions score low is the ranker's business.
    let cache = tempfile::tempdir().unwrap();
    let (router, port) = start("  low_score: 0\n", cache.path()).await;
    // Nothing found, three times by two clients.
    for client in ["a", "b", "a"] {
        ask(
            &router,
            "staff",
            client,
            "Gift wrapping options?",
            Some(0.999),
        )
        .await;
    }
    // Client c searches, then searches again for something else: the first led nowhere.
    ask(&router, "staff", "c", "books by an author", None).await;
    ask(&router, "staff", "c", "who wrote a book", None).await;
    // Client d searches, runs an operation, then searches again: nothing to count.
    ask(&router, "staff", "d", "the signed-in customer's name", None).await;
    let ran = router
        .query(
            "{ me { displayName } }",
            json!({}),
            &[
                ("x-wayfinder-tenant", "staff"),
                ("apollographql-client-name", "d"),
            ],
        )
        .await;
    assert!(ran.codes().is_empty(), "{}", ran.body);
    ask(&router, "staff", "d", "reviews of a book", None).await;
    // Not opted in: never kept.
    ask(
        &router,
        "public",
        "e",
        "Gift wrapping options?",
        Some(0.999),
    )
    .await;

    let (status, listed) = view(port, "").await;
    assert_eq!(status, 200, "{listed}");
    let staff = listed["tenants"]["staff"]
        .as_array()
        .expect("staff's questions");
    let counted: Vec<(&str, u64)> = staff
        .iter()
        .map(|q| (q["text"].as_str().unwrap(), q["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        counted,
        [("gift wrapping options", 3), ("books by an author", 1)],
        "{listed}"
    );
    assert_eq!(staff[0]["reasons"], json!({ "empty": 3 }));
    assert_eq!(staff[1]["reasons"], json!({ "searched_again": 1 }));
    assert!(staff[1]["best"][0]["coordinate"].is_string(), "{listed}");
    assert!(staff[1]["best"][0]["score"].is_number(), "{listed}");
    assert!(listed["tenants"].get("public").is_none(), "{listed}");

    let (status, _) = view(port, "?tenant=public").await;
    assert_eq!(status, 404);
    let (status, error) = view(port, "?first=0").await;
    assert_eq!(status, 400);
    assert!(
        error["error"].as_str().unwrap().contains("first"),
        "{error}"
    );
    let (status, one) = view(port, "?tenant=staff&first=1").await;
    assert_eq!(status, 200);
    assert_eq!(
        one["tenants"]["staff"].as_array().unwrap().len(),
        1,
        "{one}"
    );

    // Saved in the cache folder (every few seconds: the test kills the router), and read back
    // by the next router there.
    saved_with(cache.path(), "books by an author").await;
    drop(router);
    let (again, port) = start("  low_score: 0\n", cache.path()).await;
    let (_, listed_again) = view(port, "").await;
    assert_eq!(listed_again["tenants"], listed["tenants"]);
    drop(again);
}

#[tokio::test]
async fn with_a_hash_key_no_question_text_is_shown() {
    let cache = tempfile::tempdir().unwrap();
    let (router, port) = start(
        "  hash_key: a-key-of-more-than-sixteen-characters\n",
        cache.path(),
    )
    .await;
    for client in ["a", "b"] {
        ask(
            &router,
            "staff",
            client,
            "Falcon project budget",
            Some(0.999),
        )
        .await;
    }
    let (status, listed) = view(port, "").await;
    assert_eq!(status, 200);
    let staff = listed["tenants"]["staff"]
        .as_array()
        .expect("staff's questions");
    assert_eq!(staff.len(), 1, "{listed}");
    assert_eq!(staff[0]["count"], 2);
    assert!(staff[0]["text"].is_null());
    assert_eq!(staff[0]["hash"].as_str().map(str::len), Some(64));
    assert!(
        !listed.to_string().to_lowercase().contains("falcon"),
        "{listed}"
    );
    // Nor in its file.
    let saved = saved_with(cache.path(), staff[0]["hash"].as_str().unwrap()).await;
    assert!(!saved.to_lowercase().contains("falcon"), "{saved}");
}
