//! Examples learned from traffic, through the real router: operations it ran without errors
//! become examples, counted and normalised, filtered by each tenant's contract, shared with a
//! second replica through a real Redis, and no value a client sent is kept anywhere (answers,
//! the routers' logs, the store on disk, Redis).

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::Router;
use wayfinder_tests::redis::RedisServer;

const PLUGIN: &str = "\
examples:
  from_traffic: true
tenants:
  default: public
  contracts:
    public: { exclude_tags: [internal] }
    staff: {}";

/// Mocks that answer every operation of the workload without errors.
const MOCKS: &str = "\
experimental_mock_subgraphs:
  accounts:
    query:
      me: { __typename: Customer, id: c1, displayName: Ada }
      customer: { __typename: Customer, id: c2, displayName: Bo }
  catalog:
    query:
      book: { __typename: Book, isbn: '978', title: Lathe }";

/// Values a client sends that must never be kept.
const SENTINELS: [&str; 3] = [
    "SENTINEL-LITERAL-4417",
    "SENTINEL-VARIABLE-9021",
    "SENTINEL-DEFAULT-3380",
];

const EXAMPLES: &str = "query($c: [String!]!) { __definitions(coordinates: $c) {
  ... on __Field { examples { operation description } }
  ... on __Type { examples { operation description } }
  ... on __InputValue { examples { operation description } }
} }";

async fn examples(router: &Router, coordinate: &str, tenant: &str) -> Vec<(String, String)> {
    let response = router
        .query(
            EXAMPLES,
            json!({ "c": [coordinate] }),
            &[("x-wayfinder-tenant", tenant)],
        )
        .await;
    response.data()["__definitions"][0]["examples"]
        .as_array()
        .unwrap_or_else(|| panic!("{coordinate}: {}", response.body))
        .iter()
        .map(|e| {
            (
                e["operation"].as_str().unwrap().to_string(),
                e["description"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A replica learning from traffic, sharing through `redis`, with `cache` as its local store.
async fn replica(redis: &RedisServer, cache: &std::path::Path) -> Router {
    Router::start_indexing(
        &support::example_supergraph(),
        &format!(
            "cache_dir: {}\nredis:\n  urls: [\"{}\"]",
            cache.display(),
            redis.url()
        ),
        PLUGIN,
        MOCKS,
    )
    .await
}

/// The examples of `coordinate` once `ready` holds for them (the learner works beside the
/// requests, and replicas sync every few seconds).
async fn examples_when(
    router: &Router,
    coordinate: &str,
    tenant: &str,
    ready: impl Fn(&[(String, String)]) -> bool,
) -> Vec<(String, String)> {
    let started = Instant::now();
    loop {
        let found = examples(router, coordinate, tenant).await;
        if ready(&found) || started.elapsed() > Duration::from_secs(30) {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn operations_the_router_ran_become_examples_for_the_fleet_without_a_value() {
    let redis = RedisServer::start();
    let cache = tempfile::tempdir().unwrap();
    let router = replica(&redis, cache.path()).await;
    let mut answers: Vec<Value> = Vec::new();
    let run = |body: Value, tenant: &'static str| {
        let router = &router;
        async move {
            let response = router.post(&body, &[("x-wayfinder-tenant", tenant)]).await;
            assert!(
                response.body["errors"].is_null(),
                "{body}: {}",
                response.body
            );
            response.body
        }
    };
    // One shape, five texts: aliases, a fragment, another field order, another name.
    for text in [
        "query Mine { me { id displayName } }",
        "query Mine { me { id displayName } }",
        "{ who: me { displayName id } }",
        "query Other { me { ...Who } } fragment Who on Customer { id displayName }",
        "query { me { displayName ... on Customer { id } } }",
    ] {
        answers.push(run(json!({ "query": text }), "public").await);
    }
    // Values in a literal, in a variable, and as a variable's default.
    answers.push(
        run(
            json!({ "query": format!("{{ book(isbn: \"{}\") {{ title }} }}", SENTINELS[0]) }),
            "public",
        )
        .await,
    );
    answers.push(
        run(
            json!({ "query": "query Book($i: ID!) { book(isbn: $i) { title } }", "variables": { "i": SENTINELS[1] } }),
            "public",
        )
        .await,
    );
    answers.push(
        run(
            json!({ "query": format!("query Book($i: ID! = \"{}\") {{ book(isbn: $i) {{ title }} }}", SENTINELS[2]) }),
            "public",
        )
        .await,
    );
    // Staff runs what public may not see.
    answers.push(
        run(
            json!({ "query": "{ customer(id: \"c2\") { id displayName } }" }),
            "staff",
        )
        .await,
    );
    // An operation with errors is not learned.
    let failed = router
        .post(&json!({ "query": "{ me { nope } }" }), &[])
        .await;
    assert!(!failed.body["errors"].is_null());

    let me = examples_when(&router, "Query.me", "public", |e| e.len() > 1).await;
    assert_eq!(
        me[0],
        (
            "query {\n  me {\n    displayName\n    id\n  }\n}".to_string(),
            "Seen 5 times this week.".to_string()
        ),
        "{me:?}"
    );
    // Learned first, then the one made from the schema.
    assert!(me.last().unwrap().1.starts_with("Selects"), "{me:?}");

    let book = examples(&router, "Query.book(isbn:)", "staff").await;
    assert_eq!(
        book[0],
        (
            "query($isbn: ID!) {\n  book(isbn: $isbn) {\n    title\n  }\n}".to_string(),
            "Seen 3 times this week.".to_string()
        ),
        "{book:?}"
    );

    // Staff's operation is an example for staff only.
    let staff = examples(&router, "Customer.displayName", "staff").await;
    assert!(
        staff.iter().any(|(op, _)| op.contains("customer(id: $id)")),
        "{staff:?}"
    );
    let public = examples(&router, "Customer.displayName", "public").await;
    assert!(
        public.iter().all(|(op, _)| !op.contains("customer")),
        "{public:?}"
    );
    assert!(
        public.iter().any(|(_, d)| d == "Seen 5 times this week."),
        "{public:?}"
    );

    // The store is saved once the learner is idle.
    let store = cache.path().join("learned-examples.json");
    let started = Instant::now();
    while !store.is_file() && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let saved = std::fs::read_to_string(&store).expect("the store is saved");
    assert!(saved.contains("displayName"), "{saved}");
    answers.push(json!(me));
    answers.push(json!(book));

    // A second replica, which ran none of it, serves the fleet's counts.
    let other_cache = tempfile::tempdir().unwrap();
    let other = replica(&redis, other_cache.path()).await;
    let shared = examples_when(&other, "Query.me", "public", |e| {
        e.first()
            .is_some_and(|(_, d)| d == "Seen 5 times this week.")
    })
    .await;
    assert_eq!(shared[0], me[0], "{shared:?}");
    let shared_staff = examples(&other, "Customer.displayName", "staff").await;
    assert!(
        shared_staff
            .iter()
            .any(|(op, _)| op.contains("customer(id: $id)")),
        "{shared_staff:?}"
    );
    let shared_public = examples(&other, "Customer.displayName", "public").await;
    assert!(
        shared_public.iter().all(|(op, _)| !op.contains("customer")),
        "{shared_public:?}"
    );
    answers.push(json!(shared));
    // Its own run adds to the fleet's count, which the first replica then serves.
    let _ = other
        .post(&json!({ "query": "{ me { id displayName } }" }), &[])
        .await;
    let six = examples_when(&router, "Query.me", "public", |e| {
        e.first()
            .is_some_and(|(_, d)| d == "Seen 6 times this week.")
    })
    .await;
    assert_eq!(six[0].1, "Seen 6 times this week.", "{six:?}");

    let mut in_redis = String::new();
    for key in redis.keys("*examples*") {
        in_redis.push_str(&key);
        in_redis.push_str(&redis.cli(&["GET", &key]));
        in_redis.push_str(&redis.cli(&["ZRANGE", &key, "0", "-1", "WITHSCORES"]));
    }
    assert!(in_redis.contains("displayName"), "{in_redis}");
    let log = format!("{}{}", router.log(), other.log());
    for sentinel in SENTINELS {
        assert!(!saved.contains(sentinel), "the store keeps {sentinel}");
        assert!(!in_redis.contains(sentinel), "Redis keeps {sentinel}");
        assert!(!log.contains(sentinel), "a log shows {sentinel}");
        for answer in &answers {
            // The answers to the workload itself may carry data, never the values sent.
            assert!(!answer.to_string().contains(sentinel), "{answer}");
        }
    }
}
