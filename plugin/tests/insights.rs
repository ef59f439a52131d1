//! What agents could not find, through the real router: a scripted workload of searches and
//! operations from several clients, then the insights view (`insights.view`) lists the
//! questions it should, with their reasons and best hits, for opted-in tenants only; two
//! replicas sharing a real Redis list the fleet's questions; with `hash_key`, no question text
//! leaves or stays (answers, file, Redis).

mod support;

use serde_json::{json, Value};
use support::Router;
use wayfinder_tests::redis::RedisServer;
use wayfinder_tests::router::free_port;

const SEARCH: &str = "query($q: String!, $min: Float) { __search(query: $q, first: 3, minScore: $min) { coordinate } }";

/// A router whose insights start empty (in a cache folder of its own) and are served on a
/// port of their own.
async fn start(extra_insights: &str, cache: &std::path::Path) -> (Router, u16) {
    start_sharing(extra_insights, cache, None).await
}

/// [`start`], sharing through `redis` when given.
async fn start_sharing(
    extra_insights: &str,
    cache: &std::path::Path,
    redis: Option<&RedisServer>,
) -> (Router, u16) {
    let view = free_port();
    let redis = redis.map_or(String::new(), |redis| {
        format!("\nredis:\n  urls: [\"{}\"]", redis.url())
    });
    let plugin = format!(
        "tenants:\n  contracts:\n    staff: {{}}\n    public: {{ exclude_tags: [internal] }}\n\
         insights:\n  tenants: [staff]\n  view: {{ listen: 127.0.0.1:{view} }}\n{extra_insights}"
    );
    let mut router = Router::start_indexing(
        &support::example_supergraph(),
        &format!("cache_dir: {}{redis}", cache.display()),
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

/// The view's listing for staff once `ready` holds for it (replicas sync every few seconds).
async fn staff_when(port: u16, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, listed) = view(port, "?tenant=staff").await;
        let staff = listed["tenants"]["staff"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if ready(&staff) || std::time::Instant::now() > deadline {
            return staff;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

fn counted(questions: &[Value]) -> Vec<(String, u64)> {
    questions
        .iter()
        .map(|q| {
            let text = q["text"].as_str().or(q["hash"].as_str()).unwrap_or("");
            (text.to_string(), q["count"].as_u64().unwrap_or(0))
        })
        .collect()
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
    let redis = RedisServer::start();
    let cache = tempfile::tempdir().unwrap();
    let (router, port) = start_sharing(
        "  hash_key: a-key-of-more-than-sixteen-characters\n",
        cache.path(),
        Some(&redis),
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
    // Nor in its file, nor in the fleet's Redis.
    let hash = staff[0]["hash"].as_str().unwrap();
    let saved = saved_with(cache.path(), hash).await;
    assert!(!saved.to_lowercase().contains("falcon"), "{saved}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let in_redis = loop {
        let mut in_redis = redis.keys("*").join("\n");
        for key in redis.keys("*insights*") {
            in_redis.push_str(&key);
            in_redis.push_str(&redis.cli(&["ZRANGE", &key, "0", "-1", "WITHSCORES"]));
            in_redis.push_str(&redis.cli(&["HGETALL", &key]));
        }
        if in_redis.contains(hash) || std::time::Instant::now() > deadline {
            break in_redis;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    assert!(in_redis.contains(":insights:hashes-"), "{in_redis}");
    assert!(in_redis.contains(hash), "{in_redis}");
    assert!(!in_redis.to_lowercase().contains("falcon"), "{in_redis}");
}

#[tokio::test]
async fn replicas_sharing_redis_list_the_fleets_questions() {
    let redis = RedisServer::start();
    let (a_cache, b_cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, a_port) = start_sharing("  low_score: 0\n", a_cache.path(), Some(&redis)).await;
    let (b, b_port) = start_sharing("  low_score: 0\n", b_cache.path(), Some(&redis)).await;
    // Nothing found: twice on one replica, once on the other.
    for (router, client) in [(&a, "a"), (&a, "b"), (&b, "c")] {
        ask(
            router,
            "staff",
            client,
            "Gift wrapping options?",
            Some(0.999),
        )
        .await;
    }
    // Searched again, on the first replica only: its best hits travel too.
    ask(&a, "staff", "d", "books by an author", None).await;
    ask(&a, "staff", "d", "who wrote a book", None).await;
    // Found nothing, on the second replica only.
    ask(&b, "staff", "e", "loyalty points balance", Some(0.999)).await;

    let expected = |staff: &[Value]| {
        counted(staff)
            == [
                ("gift wrapping options".to_string(), 3),
                ("books by an author".to_string(), 1),
                ("loyalty points balance".to_string(), 1),
            ]
    };
    let on_a = staff_when(a_port, expected).await;
    let on_b = staff_when(b_port, expected).await;
    assert!(expected(&on_a), "{on_a:?}");
    assert!(expected(&on_b), "{on_b:?}");
    assert_eq!(on_b[0]["reasons"], json!({ "empty": 3 }));
    assert_eq!(on_b[1]["reasons"], json!({ "searched_again": 1 }));
    // The second replica never answered it: its best hits come from Redis.
    assert_eq!(on_b[1]["best"], on_a[1]["best"]);
    assert!(on_b[1]["best"][0]["coordinate"].is_string(), "{on_b:?}");

    // A replica's later askings add to the fleet's count on the other.
    ask(&b, "staff", "f", "Gift wrapping options?", Some(0.999)).await;
    let on_a = staff_when(a_port, |staff| {
        counted(staff).first().is_some_and(|(_, n)| *n == 4)
    })
    .await;
    assert_eq!(counted(&on_a)[0], ("gift wrapping options".to_string(), 4));

    // Redis keeps questions and hits under the namespace, for opted-in tenants only.
    let keys = redis.keys("*insights*");
    assert!(!keys.is_empty());
    assert!(
        keys.iter().all(|k| k.contains(":insights:texts:{staff}:")),
        "{keys:?}"
    );
    drop((a, b));
}
