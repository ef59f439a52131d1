//! The real `wayfinder-router` on 127.0.0.1, over HTTP: answers, errors, mixed operations,
//! GET and batches, on the bundled example supergraph.

mod support;

use serde_json::{json, Value};
use support::Router;

const TENANTS: &str = "\
tenants:
  header: x-wayfinder-tenant
  default: public
  contracts:
    public: { exclude_tags: [internal] }
    staff: {}
    partner: { include_tags: [partner], exclude_tags: [internal] }
limits:
  max_first: 20
  max_query_chars: 200
  max_batch: 4
  max_coordinates: 8";

async fn example() -> Router {
    Router::start(
        &support::example_supergraph(),
        TENANTS,
        support::EXAMPLE_MOCKS,
    )
    .await
}

const SEARCH: &str = "query Find($q: String!, $first: Int!, $after: String) {
  __search(query: $q, first: $first, after: $after) {
    coordinate score cursor pathsToRoot
    definition { __typename ... on __Field { name args { name } } ... on __Type { name kind } }
  }
}";

#[tokio::test]
async fn search_results_have_the_rfc_shape_and_paginate() {
    let router = example().await;
    let first = router
        .query(
            SEARCH,
            json!({ "q": "books a customer ordered", "first": 4 }),
            &[],
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let hits = first.data()["__search"].as_array().expect("a list").clone();
    assert_eq!(hits.len(), 4, "{}", first.body);
    let mut previous = f64::INFINITY;
    for hit in &hits {
        let score = hit["score"].as_f64().expect("a score");
        assert!(
            (0.0..=1.0).contains(&score) && score <= previous,
            "{}",
            first.body
        );
        previous = score;
        let coordinate = hit["coordinate"].as_str().expect("a coordinate");
        for path in hit["pathsToRoot"].as_array().expect("paths") {
            let path: Vec<&str> = path
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert!(
                path[0].starts_with("Query.") || path[0].starts_with("Mutation."),
                "{path:?}"
            );
            assert_eq!(
                path.last().copied(),
                Some(coordinate)
                    .filter(|c| c.contains('.'))
                    .or(path.last().copied())
            );
        }
        assert!(hit["definition"]["__typename"]
            .as_str()
            .is_some_and(|t| t.starts_with("__")));
        assert!(hit["cursor"].as_str().is_some_and(|c| !c.is_empty()));
    }

    let cursor = hits[1]["cursor"].as_str().unwrap();
    let next = router
        .query(
            SEARCH,
            json!({ "q": "books a customer ordered", "first": 2, "after": cursor }),
            &[],
        )
        .await;
    let next: Vec<&Value> = next.data()["__search"]
        .as_array()
        .expect("a page")
        .iter()
        .collect();
    assert_eq!(next.len(), 2);
    assert_eq!(next[0]["coordinate"], hits[2]["coordinate"]);
    assert_eq!(next[1]["coordinate"], hits[3]["coordinate"]);

    let above = router
        .query(
            "{ __search(query: \"books a customer ordered\", minScore: 0.5) { score } }",
            json!({}),
            &[],
        )
        .await;
    for hit in above.data()["__search"].as_array().expect("a list") {
        assert!(hit["score"].as_f64().unwrap() >= 0.5);
    }
}

#[tokio::test]
async fn definitions_resolve_every_kind_in_input_order_with_full_introspection() {
    let router = example().await;
    let response = router
        .query(
            r#"{ __definitions(coordinates: ["Query.book", "Book", "Book.reviews(first:)", "BookFormat.EBOOK", "@deprecated", "PlaceOrderInput.lines", "Customer"]) {
                 __typename
                 ... on __Type { name kind fields(includeDeprecated: true) { name isDeprecated deprecationReason type { kind ofType { kind ofType { kind ofType { name } } } } } }
                 ... on __Field { name description args { name type { kind ofType { name } } } type { name kind } }
                 ... on __InputValue { name defaultValue type { kind name ofType { kind ofType { kind ofType { name } } } } }
                 ... on __EnumValue { name isDeprecated }
                 ... on __Directive { name isRepeatable locations args { name } }
               } }"#,
            json!({}),
            &[],
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let definitions = response.data()["__definitions"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", response.body));
    let kinds: Vec<&str> = definitions
        .iter()
        .map(|d| d["__typename"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "__Field",
            "__Type",
            "__InputValue",
            "__EnumValue",
            "__Directive",
            "__InputValue",
            "__Type"
        ]
    );
    assert_eq!(definitions[0]["name"], "book");
    assert_eq!(definitions[0]["args"][0]["type"]["kind"], "NON_NULL");
    assert_eq!(definitions[0]["args"][0]["type"]["ofType"]["name"], "ID");
    assert_eq!(definitions[2]["defaultValue"], "5");
    // [OrderLineInput!]!
    let lines = &definitions[5]["type"];
    assert_eq!(lines["kind"], "NON_NULL");
    assert_eq!(lines["ofType"]["kind"], "LIST");
    assert_eq!(lines["ofType"]["ofType"]["kind"], "NON_NULL");
    assert_eq!(
        lines["ofType"]["ofType"]["ofType"]["name"],
        "OrderLineInput"
    );
    assert_eq!(definitions[4]["name"], "deprecated");
    // The public tenant (the default) sees Customer without its internal field, and sees the
    // deprecated one only when asked for deprecated fields.
    let fields: Vec<&str> = definitions[6]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"name") && !fields.contains(&"supportNotes"),
        "{fields:?}"
    );
    let name = definitions[6]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "name")
        .unwrap();
    assert_eq!(name["isDeprecated"], true);
    assert_eq!(name["deprecationReason"], "Use `displayName` instead.");
}

#[tokio::test]
async fn bad_input_gets_coded_errors_never_a_500() {
    let router = example().await;
    let cases: Vec<(&str, Value, &str)> = vec![
        ("{ __search(query: \"x\", bogus: 1) { coordinate } }", json!({}), "GRAPHQL_VALIDATION_FAILED"),
        ("{ __search(query: \"x\", first: 0) { coordinate } }", json!({}), "SEARCH_FIRST_OUT_OF_RANGE"),
        ("{ __search(query: \"x\", first: 21) { coordinate } }", json!({}), "SEARCH_FIRST_OUT_OF_RANGE"),
        ("query($q: String!) { __search(query: $q) { coordinate } }", json!({ "q": "x".repeat(201) }), "SEARCH_QUERY_TOO_LONG"),
        ("{ __search(query: \"  \") { coordinate } }", json!({}), "SEARCH_QUERY_EMPTY"),
        ("{ __search(query: \"x\", after: \"not-a-cursor\") { coordinate } }", json!({}), "SEARCH_INVALID_CURSOR"),
        ("{ __search(query: \"x\", minScore: 1.5) { coordinate } }", json!({}), "SEARCH_MIN_SCORE_OUT_OF_RANGE"),
        ("{ __definitions(coordinates: [\"Nope.nothing\"]) { __typename } }", json!({}), "UNKNOWN_COORDINATE"),
        ("{ __definitions(coordinates: [\"A\", \"B\", \"C\", \"D\", \"E\", \"F\", \"G\", \"H\", \"I\"]) { __typename } }", json!({}), "COORDINATE_LIMIT_EXCEEDED"),
        ("{ __search(query: \"x\") { coordinate }", json!({}), "PARSING_ERROR"),
        ("query($q: String!) { __search(query: $q) { coordinate } }", json!({}), "VALIDATION_INVALID_TYPE_VARIABLE"),
    ];
    for (query, variables, code) in cases {
        let response = router.query(query, variables, &[]).await;
        assert!(response.status < 500, "{query}: {}", response.body);
        assert_eq!(response.codes(), [code], "{query}: {}", response.body);
    }

    // A cursor of another search is refused too.
    let page = router
        .query(SEARCH, json!({ "q": "books", "first": 1 }), &[])
        .await;
    let cursor = page.data()["__search"][0]["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    let other = router
        .query(
            SEARCH,
            json!({ "q": "reviews", "first": 1, "after": cursor }),
            &[],
        )
        .await;
    assert_eq!(other.codes(), ["SEARCH_INVALID_CURSOR"], "{}", other.body);

    let unknown = router
        .query(
            "{ __search(query: \"x\") { coordinate } }",
            json!({}),
            &[("x-wayfinder-tenant", "nobody")],
        )
        .await;
    assert_eq!(unknown.codes(), ["UNKNOWN_TENANT"]);

    for body in [
        "{\"query\": \"{ __search",
        "[{\"query\": \"{ __search",
        "{\"query\": 3, \"x\": \"__search\"}",
    ] {
        let response = router.post_raw(body).await;
        assert_eq!(response.status, 400, "{body}: {}", response.body);
        assert_eq!(
            response.codes(),
            ["INVALID_GRAPHQL_REQUEST"],
            "{body}: {}",
            response.body
        );
    }

    let batch: Vec<Value> = (0..5)
        .map(|_| json!({ "query": "{ __search(query: \"x\") { coordinate } }" }))
        .collect();
    let response = router.post(&Value::Array(batch), &[]).await;
    assert_eq!(
        response.codes(),
        ["BATCH_LIMIT_EXCEEDED"],
        "{}",
        response.body
    );

    // A persisted-query hash alone: unknown to the plugin, so the router says it does not
    // know it; once the client sent the text with the hash, the hash alone works.
    let query = "{ __search(query: \"price of a book\", first: 1) { coordinate } }";
    let hash = sha256(query);
    let pq = json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } });
    let alone = router.post(&json!({ "extensions": pq }), &[]).await;
    assert!(alone.status < 500);
    assert_eq!(
        alone.codes(),
        ["PERSISTED_QUERY_NOT_FOUND"],
        "{}",
        alone.body
    );
    let registered = router
        .post(&json!({ "query": query, "extensions": pq }), &[])
        .await;
    assert!(
        registered.data()["__search"].is_array(),
        "{}",
        registered.body
    );
    let again = router.post(&json!({ "extensions": pq }), &[]).await;
    assert_eq!(again.body, registered.body);
    let wrong = router
        .post(
            &json!({ "query": "{ __search(query: \"other\") { coordinate } }", "extensions": pq }),
            &[],
        )
        .await;
    assert_eq!(
        wrong.codes(),
        ["PERSISTED_QUERY_HASH_MISMATCH"],
        "{}",
        wrong.body
    );
}

#[tokio::test]
async fn a_mixed_operation_is_merged_in_field_order() {
    let router = example().await;
    let response = router
        .query(
            "query Mixed($q: String!) {
               authors { name }
               hits: __search(query: $q, first: 2) { coordinate }
               ...Me
               __typename
             }
             fragment Me on Query { me { displayName } __definitions(coordinates: [\"Book\"]) { ... on __Type { name } } }",
            json!({ "q": "average rating" }),
            &[],
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let data = response.data().as_object().expect("data");
    let keys: Vec<&str> = data.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["authors", "hits", "me", "__definitions", "__typename"],
        "{}",
        response.body
    );
    assert_eq!(data["authors"][0]["name"], "Le Guin");
    assert_eq!(data["me"]["displayName"], "Ada");
    assert_eq!(data["__definitions"][0]["name"], "Book");
    assert_eq!(data["hits"].as_array().map(Vec::len), Some(2));

    // The router's own errors are kept: here its validation of the ordinary part.
    let invalid = router
        .query(
            "{ authors { nope } __search(query: \"x\") { coordinate } }",
            json!({}),
            &[],
        )
        .await;
    assert!(
        invalid
            .codes()
            .contains(&"GRAPHQL_VALIDATION_FAILED".to_string()),
        "{}",
        invalid.body
    );

    // Requests that do not use the new fields pass through untouched.
    let plain = router.query("{ authors { name } }", json!({}), &[]).await;
    assert_eq!(
        plain.body,
        json!({ "data": { "authors": [{ "name": "Le Guin" }] } })
    );
}

#[tokio::test]
async fn get_and_batched_requests_are_answered() {
    let router = example().await;
    let get = router
        .get(&[
            (
                "query",
                "query($q: String!) { __search(query: $q, first: 1) { coordinate } }",
            ),
            ("variables", "{\"q\": \"loyalty tier\"}"),
        ])
        .await;
    assert_eq!(get.status, 200, "{}", get.body);
    assert_eq!(get.data()["__search"].as_array().map(Vec::len), Some(1));

    let batch = router
        .post(
            &json!([
                { "query": "{ __search(query: \"review rating\", first: 1) { coordinate } }" },
                { "query": "{ authors { name } }" },
                { "query": "query A { __definitions(coordinates: [\"Book\"]) { __typename } } query B { authors { name } }", "operationName": "A" },
                "not a request"
            ]),
            &[],
        )
        .await;
    assert_eq!(batch.status, 200, "{}", batch.body);
    let entries = batch.body.as_array().expect("an array");
    assert_eq!(entries.len(), 4);
    assert_eq!(
        entries[0]["data"]["__search"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(entries[1]["data"]["authors"][0]["name"], "Le Guin");
    assert_eq!(
        entries[2]["data"]["__definitions"][0]["__typename"],
        "__Type"
    );
    assert_eq!(
        entries[3]["errors"][0]["extensions"]["code"],
        "INVALID_GRAPHQL_REQUEST"
    );
}

fn sha256(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// Apollo Client (core, with its normalising cache) reads the new fields, their examples and
/// the prompts through the router as it reads anything else (`tests/js/apollo-client.mjs`).
#[tokio::test]
async fn apollo_client_reads_examples_and_prompts() {
    let router = Router::start(
        &support::example_supergraph(),
        &format!(
            "{TENANTS}\nprompts: {}",
            wayfinder_tests::repo_path("examples/bookshop/prompts").display()
        ),
        support::EXAMPLE_MOCKS,
    )
    .await;
    let output = std::process::Command::new("node")
        .arg(wayfinder_tests::repo_path("tests/js/apollo-client.mjs"))
        .arg(&router.url)
        .output()
        .expect("node runs (scripts/setup installs it and the client)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answered: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        answered["ordinary"]["me"]["displayName"], "Ada",
        "{answered}"
    );
    let hits = answered["search"]["__search"].as_array().expect("hits");
    assert!(!hits.is_empty());
    for hit in hits {
        let examples = hit["definition"]["examples"].as_array().expect("examples");
        assert!(
            examples[0]["operation"]
                .as_str()
                .is_some_and(|o| !o.is_empty()),
            "{hit}"
        );
        assert_eq!(examples[0]["__typename"], "__Example", "{hit}");
    }
    let book = &answered["definitions"]["__definitions"][0];
    assert!(book["examples"][0]["operation"]
        .as_str()
        .is_some_and(|o| o.contains("book(isbn: $isbn)")));
    assert_eq!(answered["prompts"]["__prompts"][0]["name"], "find-a-book");
}
