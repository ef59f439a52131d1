//! Fuzzing the plugin in-process, through the router's own HTTP service (`TestHarness`) with
//! `wayfinder.search` in it: every case goes through the plugin's request handling (body or
//! query string, parse, validate, tenant, answer, forward, merge) and, for what it passes on,
//! through the router.
//!
//! Cases are made by a structure-aware generator (`proptest`) from valid requests: operations
//! built from the semantic fields, ordinary fields, aliases, fragments, variables and
//! directives, with edge-value arguments, real and damaged cursors, coordinates, persisted-query
//! hashes, batches, tenants and GET query strings; then mutated at the text level (cuts,
//! repeats, foreign tokens) and at the byte level (flips, truncation).
//!
//! What must hold for every case: no panic; no 5xx; a JSON answer whose every error has
//! `extensions.code`; and the router still answers an ordinary request afterwards. Over long runs
//! RSS after warm-up must stay flat (within 10%).
//!
//! `WAYFINDER_FUZZ_CASES` sets the number of cases (default 1,500, as in CI); a long run:
//! `WAYFINDER_FUZZ_CASES=1000000 cargo test --release -p wayfinder-plugin --test fuzz -- --nocapture`
//! `WAYFINDER_FUZZ_SEED` picks another sequence. An input that finds a bug goes into
//! [`REGRESSIONS`], which run first.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use apollo_router::services::router;
use apollo_router::TestHarness;
use http_body_util::BodyExt;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{json, Value};
use tower::{Service, ServiceExt};
// Linking the library registers the plugin with the router.
use wayfinder_plugin as _;
use wayfinder_tests::{repo_path, wayfinder_home};

/// One HTTP request.
#[derive(Debug, Clone)]
struct Case {
    get: bool,
    /// The body (POST) or the query string (GET).
    payload: Vec<u8>,
    content_type: &'static str,
    tenant: Option<String>,
}

/// Requests that once broke an invariant: (GET?, payload).
const REGRESSIONS: &[(bool, &str)] = &[
    // A null variable for an argument with a default was an INTERNAL_SERVER_ERROR.
    (
        false,
        r#"{"query":"query Op($v1: Int) { __search(query: \"books\", first: $v1) { coordinate } }","variables":{"v1":null}}"#,
    ),
    (
        false,
        r#"{"query":"query Op($v1: Int) { __search(query: \"books\", first: $v1) { coordinate } }"}"#,
    ),
];

const SELECTIONS: &[&str] = &[
    "coordinate",
    "score",
    "cursor",
    "pathsToRoot",
    "__typename",
    "definition { __typename }",
    "definition { ... on __Field { name args { name type { name kind ofType { name ofType { name } } } } } }",
    "definition { ... on __Type { name kind fields(includeDeprecated: true) { name isDeprecated } possibleTypes { name } enumValues { name } inputFields { name } } }",
    "definition { ... on __InputValue { name defaultValue } ... on __EnumValue { name } ... on __Directive { name } }",
    "definition { ...D }",
    "c: coordinate",
];

const DEFINITION_SELECTIONS: &[&str] = &[
    "__typename",
    "... on __Type { name fields { name type { ofType { ofType { ofType { name } } } } } }",
    "... on __Field { name type { name } }",
    "...D",
];

const COORDINATES: &[&str] = &[
    "Book",
    "Query.me",
    "Query.customer",
    "Book.reviews(first:)",
    "Customer.supportNotes",
    "OrderStatus.SHIPPED",
    "PlaceOrderInput.lines",
    "@deprecated",
    "@deprecated(reason:)",
    "Nope.nothing",
    "",
    " ",
    "Book..title",
    "Book.title(",
    "((((((((",
    "Query.me(x:)",
    "ÄÖÜ.ß",
    "\u{0}",
];

const QUERIES: &[&str] = &[
    "books a customer ordered",
    "renew a library loan",
    "who wrote this book",
    "",
    "   ",
    "\"quoted\" \\ backslash",
    "🦀🦀🦀 ünïcödé",
    "a",
    "how loud",
    "the the the the",
    "Query.me",
];

const ORDINARY: &[&str] = &[
    "me { displayName }",
    "__typename",
    "authors { name books { title } }",
    "book(isbn: \"978-0\") { title reviews { rating } }",
    "customer(id: \"c1\") { email }",
    "nope",
];

const TOKENS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    ":",
    "\"",
    "$",
    "...",
    "@",
    "!",
    "[",
    "]",
    "=",
    "__search",
    "__definitions",
    "query",
    "fragment",
    "on",
    "null",
    "\\u0000",
    "\u{1F980}",
    "\0",
    "#",
    "\n",
    ",",
    "99999999999999999999",
    "-1",
    "1e400",
    "@skip(if: true)",
    "__schema { types { name } }",
];

fn pick<T: Clone + std::fmt::Debug + 'static>(items: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(items)
}

fn int_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        pick(&[
            "0",
            "1",
            "10",
            "50",
            "51",
            "100",
            "-1",
            "2147483647",
            "2147483648",
            "null",
            "\"5\"",
            "1.5"
        ])
        .prop_map(str::to_string),
        any::<i32>().prop_map(|n| n.to_string()),
    ]
}

fn float_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        pick(&["0", "0.5", "1", "1.0001", "-0.1", "1e309", "null", "\"x\""])
            .prop_map(str::to_string),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:?}")),
    ]
}

fn string_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        pick(QUERIES).prop_map(|q| serde_json::to_string(q).unwrap()),
        ".{0,40}".prop_map(|q: String| serde_json::to_string(&q).unwrap()),
        (1usize..1200).prop_map(|n| format!("\"{}\"", "word ".repeat(n / 5 + 1))),
        Just("$q".to_string()),
    ]
}

/// A cursor: a real one's shape (base64url) with damage, or junk.
fn cursor_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_-]{0,40}".prop_map(|c| format!("\"{c}\"")),
        Just("\"AAAAAAAAAAEAAAAA\"".to_string()),
        Just("null".to_string()),
        Just("$after".to_string()),
    ]
}

fn search_field() -> impl Strategy<Value = String> {
    (
        string_literal(),
        proptest::option::of(int_literal()),
        proptest::option::of(cursor_literal()),
        proptest::option::of(float_literal()),
        proptest::collection::vec(pick(SELECTIONS), 1..4),
        proptest::option::of("[a-z]{1,6}"),
    )
        .prop_map(|(query, first, after, min_score, selections, alias)| {
            let mut arguments = format!("query: {query}");
            if let Some(first) = first {
                arguments.push_str(&format!(", first: {first}"));
            }
            if let Some(after) = after {
                arguments.push_str(&format!(", after: {after}"));
            }
            if let Some(min_score) = min_score {
                arguments.push_str(&format!(", minScore: {min_score}"));
            }
            let alias = alias.map(|a| format!("{a}: ")).unwrap_or_default();
            let selection = if selections.is_empty() {
                String::new()
            } else {
                format!(" {{ {} }}", selections.join(" "))
            };
            format!("{alias}__search({arguments}){selection}")
        })
}

fn definitions_field() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            proptest::collection::vec(pick(COORDINATES), 0..6)
                .prop_map(|c| serde_json::to_string(&c).unwrap()),
            (1usize..300).prop_map(|n| serde_json::to_string(&vec!["Book"; n]).unwrap()),
            Just("$coordinates".to_string()),
            Just("\"Book\"".to_string()),
        ],
        proptest::collection::vec(pick(DEFINITION_SELECTIONS), 1..3),
    )
        .prop_map(|(coordinates, selections)| {
            let selection = if selections.is_empty() {
                String::new()
            } else {
                format!(" {{ {} }}", selections.join(" "))
            };
            format!("__definitions(coordinates: {coordinates}){selection}")
        })
}

fn root_field() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => search_field(),
        2 => definitions_field(),
        2 => pick(ORDINARY).prop_map(str::to_string),
    ]
}

/// An operation, its variables and maybe a fragment, maybe under another operation's name.
fn operation() -> impl Strategy<Value = (String, Value, Option<String>)> {
    (
        proptest::collection::vec(root_field(), 1..4),
        any::<bool>(),
        (0u8..8).prop_map(|n| n == 0),
        proptest::option::of(pick(&["Q", "Other", ""])),
        prop_oneof![
            Just(json!({})),
            Just(json!({"q": "books", "after": "x", "coordinates": ["Book"], "b": true})),
            Just(json!({"q": 5})),
            Just(json!({"coordinates": null})),
            Just(json!([1, 2]))
        ],
    )
        .prop_map(
            |(fields, named, unused_fragment, operation_name, variables)| {
                // Fields of one name with other arguments conflict unless aliased.
                let fields: Vec<String> = fields
                    .iter()
                    .enumerate()
                    .map(|(i, field)| match field.starts_with("__") {
                        true => format!("f{i}: {field}"),
                        false => field.clone(),
                    })
                    .collect();
                let selection = format!("{{ {} }}", fields.join(" "));
                // Declares the variables the fields use (an operation that uses one must, and one
                // that declares an unused one is invalid), and the fragment they spread.
                let declared: Vec<&str> = [
                    ("$q", "$q: String = \"books\""),
                    ("$after", "$after: String"),
                    ("$coordinates", "$coordinates: [String!]! = [\"Book\"]"),
                ]
                .into_iter()
                .filter(|(name, _)| selection.contains(name))
                .map(|(_, declaration)| declaration)
                .collect();
                let mut text = if named || !declared.is_empty() {
                    format!("query Q({}) ", declared.join(", ")).replace("Q() ", "Q ")
                } else {
                    String::new()
                };
                text.push_str(&selection);
                if selection.contains("...D") || unused_fragment {
                    text.push_str(" fragment D on __Type { name }");
                }
                (text, variables, operation_name.map(str::to_string))
            },
        )
}

/// Text-level damage: cuts, repeats and foreign tokens.
fn damage_text(text: String) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (
            0usize..3,
            any::<prop::sample::Index>(),
            any::<prop::sample::Index>(),
            pick(TOKENS),
        ),
        0..3,
    )
    .prop_map(move |edits| {
        let mut chars: Vec<char> = text.chars().collect();
        for (kind, at, to, token) in edits {
            if chars.is_empty() {
                break;
            }
            let (a, b) = {
                let (x, y) = (at.index(chars.len()), to.index(chars.len()));
                (x.min(y), x.max(y))
            };
            match kind {
                0 => {
                    chars.drain(a..b);
                }
                1 => {
                    let copy: Vec<char> = chars[a..b].to_vec();
                    chars.splice(b..b, copy);
                }
                _ => {
                    chars.splice(a..a, token.chars());
                }
            }
        }
        chars.into_iter().collect()
    })
}

fn graphql_request() -> impl Strategy<Value = Value> {
    (operation(), 0u8..4, 0u8..8).prop_flat_map(|((text, variables, name), damage, persisted)| {
        let text = if damage == 0 {
            damage_text(text).boxed()
        } else {
            Just(text).boxed()
        };
        text.prop_map(move |text| {
            let mut request = json!({ "query": text, "variables": variables.clone() });
            if let Some(name) = &name {
                request["operationName"] = json!(name);
            }
            match persisted {
                1 => {
                    use sha2::Digest;
                    let hash = hex::encode(sha2::Sha256::digest(text.as_bytes()));
                    request["extensions"] =
                        json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } });
                }
                2 => {
                    request["extensions"] =
                        json!({ "persistedQuery": { "version": 1, "sha256Hash": "00ff" } });
                    if let Some(object) = request.as_object_mut() {
                        object.remove("query");
                    }
                }
                3 => request["extensions"] = json!({ "persistedQuery": "nonsense" }),
                _ => {}
            }
            request
        })
    })
}

/// Byte-level damage: flips and truncation.
fn damage_bytes(bytes: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        proptest::option::of(any::<prop::sample::Index>()),
    )
        .prop_map(move |(flips, cut)| {
            let mut bytes = bytes.clone();
            if bytes.is_empty() {
                return bytes;
            }
            for (at, value) in flips {
                let i = at.index(bytes.len());
                bytes[i] = value;
            }
            if let Some(cut) = cut {
                bytes.truncate(cut.index(bytes.len()));
            }
            bytes
        })
}

fn case() -> impl Strategy<Value = Case> {
    let tenant = proptest::option::of(
        pick(&["public", "staff", "partner", "nobody", "", "PUBLIC"]).prop_map(str::to_string),
    );
    let body = prop_oneof![
        6 => graphql_request().prop_map(|r| serde_json::to_vec(&r).unwrap()),
        2 => proptest::collection::vec(graphql_request(), 0..20).prop_map(|b| serde_json::to_vec(&b).unwrap()),
        1 => proptest::collection::vec(any::<u8>(), 0..64),
    ];
    (body, any::<bool>(), 0u8..10, tenant).prop_flat_map(|(body, get, damage, tenant)| {
        let body = if damage == 0 {
            damage_bytes(body).boxed()
        } else {
            Just(body).boxed()
        };
        body.prop_map(move |body| {
            if get {
                // The query string of the same request (batches and junk become junk).
                let query_string = match serde_json::from_slice::<Value>(&body) {
                    Ok(Value::Object(request)) => {
                        let mut pairs: Vec<(String, String)> = Vec::new();
                        for (key, value) in request {
                            let value = match value {
                                Value::String(s) => s,
                                other => other.to_string(),
                            };
                            pairs.push((key, value));
                        }
                        serde_urlencoded::to_string(pairs).unwrap_or_default()
                    }
                    _ => serde_urlencoded::to_string([("query", String::from_utf8_lossy(&body))])
                        .unwrap_or_default(),
                };
                Case {
                    get: true,
                    payload: query_string.into_bytes(),
                    content_type: "application/json",
                    tenant: tenant.clone(),
                }
            } else {
                let content_type = if damage == 1 {
                    "text/plain"
                } else {
                    "application/json"
                };
                Case {
                    get: false,
                    payload: body,
                    content_type,
                    tenant: tenant.clone(),
                }
            }
        })
    })
}

fn http_request(case: &Case) -> http::Request<router::Body> {
    let mut builder = http::Request::builder();
    builder = if case.get {
        let query = String::from_utf8_lossy(&case.payload).replace(['#', ' '], "+");
        builder
            .method("GET")
            .uri(format!("http://127.0.0.1/?{query}"))
    } else {
        builder.method("POST").uri("http://127.0.0.1/")
    };
    builder = builder
        .header("content-type", case.content_type)
        .header("accept", "application/json");
    // Without it the router refuses a GET, or a POST that is not JSON, as a possible CSRF.
    if case.content_type == "application/json" {
        builder = builder.header("apollo-require-preflight", "true");
    }
    if let Some(tenant) = &case.tenant {
        builder = builder.header("x-wayfinder-tenant", tenant);
    }
    let body = if case.get {
        Vec::new()
    } else {
        case.payload.clone()
    };
    builder
        .body(router::body::from_bytes(body))
        .or_else(|_| {
            http::Request::builder()
                .method("GET")
                .uri("http://127.0.0.1/?query=%7B__typename%7D")
                .header("apollo-require-preflight", "true")
                .body(router::body::from_bytes(Vec::new()))
        })
        .expect("a request")
}

/// What is wrong with an answer, if anything.
fn problem(status: http::StatusCode, body: &[u8]) -> Option<String> {
    if status.is_server_error() {
        return Some(format!("status {status}"));
    }
    let answer: Value = match serde_json::from_slice(body) {
        Ok(answer) => answer,
        // Only the router's own refusals of a request it cannot read at all may be plain text.
        Err(_) if status.is_client_error() => return None,
        Err(e) => return Some(format!("status {status}, not JSON ({e})")),
    };
    let answers = match &answer {
        Value::Array(entries) => entries.iter().collect(),
        one => vec![one],
    };
    for answer in answers {
        if let Some(errors) = answer.get("errors").and_then(Value::as_array) {
            for error in errors {
                // A (mock) subgraph's own field error, passed on by the router as it is.
                let from_subgraph =
                    error["path"].is_array() && error["message"] == "Subgraph errors redacted";
                if !error["extensions"]["code"].is_string() && !from_subgraph {
                    return Some(format!("an error without extensions.code: {error}"));
                }
                if error["extensions"]["code"] == "INTERNAL_SERVER_ERROR" {
                    return Some(format!("an internal error: {error}"));
                }
            }
        }
    }
    None
}

/// `status code` of an answer: its first error's code, or `hits` when a search answered, or
/// `data` otherwise.
fn outcome(status: http::StatusCode, body: &[u8]) -> String {
    let answer: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let first = match &answer {
        Value::Array(entries) => entries.first().cloned().unwrap_or(Value::Null),
        one => one.clone(),
    };
    let what = match first["errors"][0]["extensions"]["code"].as_str() {
        Some(code) => code.to_string(),
        None if first["data"].to_string().contains("coordinate") => "hits".into(),
        None if first["data"].is_object() => "data".into(),
        None => "other".into(),
    };
    format!("{} {what}", status.as_u16())
}

fn rss_bytes() -> u64 {
    wayfinder_tests::router::resident_bytes(std::process::id())
}

async fn send(
    service: &mut apollo_router::test_harness::HttpService,
    request: http::Request<router::Body>,
) -> (http::StatusCode, Vec<u8>) {
    let response = service
        .ready()
        .await
        .expect("the router is ready")
        .call(request)
        .await
        .expect("an answer");
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn the_plugin_survives_generated_and_mutated_requests() {
    let cases: u32 = std::env::var("WAYFINDER_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1500);
    let seed: u64 = std::env::var("WAYFINDER_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(41);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let supergraph = std::fs::read_to_string(repo_path("examples/bookshop/supergraph.graphql"))
        .expect("the example");
    let supergraph: &'static str = Box::leak(supergraph.into_boxed_str());
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("wayfinder-cache");
    let config = json!({
        "supergraph": { "introspection": true },
        "plugins": { "wayfinder.search": {
            "tenants": {
                "header": "x-wayfinder-tenant",
                "default": "public",
                "contracts": {
                    "public": { "exclude_tags": ["internal"] },
                    "staff": {},
                    "partner": { "include_tags": ["partner"], "exclude_tags": ["internal"], "rate_limit": { "capacity": 50, "refill": 50, "interval": "1s" } },
                },
            },
            "index": { "home": wayfinder_home(), "cache_dir": cache },
        } },
        "experimental_mock_subgraphs": {
            "accounts": { "query": { "me": { "__typename": "Customer", "id": "c1", "displayName": "Ada" } } },
            "catalog": { "query": {
                "authors": [ { "__typename": "Author", "id": "a1", "name": "Le Guin",
                    "books": [ { "__typename": "Book", "isbn": "978-0", "title": "The Dispossessed" } ] } ],
                "book": { "__typename": "Book", "isbn": "978-0", "title": "The Dispossessed" },
            } },
            "reviews": { "entities": [ { "__typename": "Book", "isbn": "978-0", "reviews": [] } ] },
        },
    });
    let service = runtime.block_on(async {
        let mut service = TestHarness::builder()
            .configuration_json(config)
            .expect("a valid configuration")
            .schema(supergraph)
            .build_http_service()
            .await
            .expect("the router builds");
        // Until the example is indexed (searches answer without SEARCH_NOT_READY).
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let probe = Case {
                get: false,
                payload: br#"{"query":"{ __search(query: \"book\") { coordinate } }"}"#.to_vec(),
                content_type: "application/json",
                tenant: None,
            };
            let (_, body) = send(&mut service, http_request(&probe)).await;
            if !String::from_utf8_lossy(&body).contains("SEARCH_NOT_READY") {
                break;
            }
            assert!(Instant::now() < deadline, "the example is never indexed");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        service
    });
    let service = RefCell::new(service);
    // How the answers went (status and first error code, or hits), so a run shows which parts
    // of the request path the cases reached.
    let outcomes = RefCell::new(std::collections::BTreeMap::<String, u32>::new());
    let check = |case: &Case| -> Result<(), TestCaseError> {
        let (status, body) = runtime.block_on(send(&mut service.borrow_mut(), http_request(case)));
        *outcomes
            .borrow_mut()
            .entry(outcome(status, &body))
            .or_default() += 1;
        match problem(status, &body) {
            None => Ok(()),
            Some(problem) => Err(TestCaseError::fail(format!(
                "{problem}\nrequest: {} {}\nanswer: {}",
                if case.get { "GET" } else { "POST" },
                String::from_utf8_lossy(&case.payload),
                String::from_utf8_lossy(&body)
            ))),
        }
    };
    for (get, payload) in REGRESSIONS {
        let case = Case {
            get: *get,
            payload: payload.as_bytes().to_vec(),
            content_type: "application/json",
            tenant: None,
        };
        check(&case).unwrap_or_else(|e| panic!("regression: {e}"));
    }

    let started = Instant::now();
    let warm_rss = std::cell::Cell::new(0u64);
    let ran = std::cell::Cell::new(0u32);
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &{
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            bytes
        }),
    );
    let result = runner.run(&case(), |case| {
        let n = ran.get() + 1;
        ran.set(n);
        if n == cases / 10 {
            warm_rss.set(rss_bytes());
        }
        if n.is_multiple_of(100_000) {
            eprintln!(
                "{n} cases, {:.0} s, RSS {} MB",
                started.elapsed().as_secs_f64(),
                rss_bytes() >> 20
            );
        }
        check(&case)
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    // Still serving an ordinary request.
    let ordinary = Case {
        get: false,
        payload: br#"{"query":"{ me { displayName } }"}"#.to_vec(),
        content_type: "application/json",
        tenant: None,
    };
    let (status, body) = runtime.block_on(send(&mut service.borrow_mut(), http_request(&ordinary)));
    let answer: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        (status.as_u16(), &answer["data"]["me"]["displayName"]),
        (200, &json!("Ada")),
        "{answer}"
    );
    let (warm, end) = (warm_rss.get(), rss_bytes());
    eprintln!("fuzz outcomes: {:?}", outcomes.borrow());
    eprintln!(
        "fuzz: {} cases in {:.0} s; RSS {} MB after warm-up, {} MB at the end",
        ran.get(),
        started.elapsed().as_secs_f64(),
        warm >> 20,
        end >> 20
    );
    if cases >= 100_000 {
        assert!(
            end as f64 <= warm as f64 * 1.10,
            "RSS grew from {warm} to {end}"
        );
    }
    // The engine lives in a static: its threads must leave ONNX Runtime before the process's
    // exit handlers tear it down (as `wayfinder-router` does).
    drop(service);
    wayfinder_workers::close_runtime(wayfinder_workers::EXIT_WAIT);
}
