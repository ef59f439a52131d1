//! The MCP endpoint through the real `wayfinder-router` on the example supergraph, spoken to
//! by the official MCP Python SDK (`tests/mcp/client.py`, in the venv `scripts/setup` makes)
//! over streamable HTTP: the tools, what each answers, the `public` tenant's contract through
//! every tool, bad input, and a second replica answering without the first one's session.
//! Policies the SDK adds nothing to (introspection setting, tenant required, quota) are checked
//! with raw JSON-RPC.

mod support;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::json;
use support::{mcp_code, mcp_text, Router, EXAMPLE_MOCKS, MCP_ON};
use wayfinder_tests::{repo_path, wayfinder_home};

const TENANTS: &str = "\
tenants:
  default: public
  contracts:
    public: { exclude_tags: [internal] }
    staff: {}";

/// The example's tenants, with the MCP endpoint.
fn plugin() -> String {
    format!("{TENANTS}\n{MCP_ON}")
}

/// Runs `tests/mcp/client.py CHECK URLS...` (as `tenant`) and fails with its output unless
/// every assertion held.
fn sdk_check(check: &str, urls: &[&str], tenant: Option<&str>) {
    let python = wayfinder_home().join("mcp-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup",
        python.display()
    );
    let mut command = Command::new(&python);
    command.arg(repo_path("tests/mcp/client.py"));
    if let Some(tenant) = tenant {
        command.args(["--tenant", tenant]);
    }
    let output = command
        .arg(check)
        .args(urls)
        .output()
        .expect("runs the MCP client");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "MCP client check `{check}` failed:\n{printed}"
    );
    assert!(printed.contains("\npassed: "), "{printed}");
}

#[tokio::test]
async fn the_python_sdk_uses_every_tool_within_the_tenant_contract() {
    let example = support::example_supergraph();
    let first = Router::start(&example, &plugin(), EXAMPLE_MOCKS).await;
    let url = format!("{}mcp", first.url);
    sdk_check("all", &[&url], None);
    sdk_check("contract", &[&url], Some("public"));
    sdk_check("contract-staff", &[&url], Some("staff"));

    let second = Arc::new(Router::start(&example, &plugin(), EXAMPLE_MOCKS).await);
    let second_url = format!("{}mcp", second.url);
    sdk_check("replica", &[&url, &second_url], None);

    // After a hot reload the new pipeline's endpoint answers from the new supergraph, and
    // the calls made meanwhile all reach the router (none `MCP_ROUTER_UNREACHABLE`).
    let reloading = Arc::new(AtomicBool::new(true));
    let callers: Vec<_> = (0..4)
        .map(|_| {
            let (router, reloading) = (Arc::clone(&second), Arc::clone(&reloading));
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                while reloading.load(Ordering::Relaxed) {
                    let answer = router
                        .mcp_call("search", json!({ "query": "books by an author" }), &[])
                        .await;
                    let (error, _) = mcp_text(&answer);
                    outcomes.push(if error {
                        mcp_code(&answer)
                    } else {
                        "ok".into()
                    });
                }
                outcomes
            })
        })
        .collect();
    let original = std::fs::read_to_string(&second.supergraph).unwrap();
    let changed = original.replacen(
        "  \"\"\"Every author, alphabetically.\"\"\"",
        "  \"\"\"Books that arrived this week.\"\"\"\n  newArrivals: [Book!]! @join__field(graph: CATALOG)\n\n  \"\"\"Every author, alphabetically.\"\"\"",
        1,
    );
    assert_ne!(changed, original, "the fixture has the anchor line");
    std::fs::write(&second.supergraph, &changed).unwrap();
    let introspect = json!({ "coordinates": ["Query.newArrivals"], "depth": 0 });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let answer = second.mcp_call("introspect", introspect.clone(), &[]).await;
        if mcp_text(&answer).1.contains("newArrivals: [Book!]!") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the reloaded endpoint never showed the new field: {answer}\n{}",
            second.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    reloading.store(false, Ordering::Relaxed);
    let mut outcomes = Vec::new();
    for caller in callers {
        outcomes.extend(caller.await.expect("a caller"));
    }
    assert!(!outcomes.is_empty());
    assert!(outcomes.iter().all(|o| o == "ok"), "{outcomes:?}");
    for router in [&first, &*second] {
        assert!(!router.log().contains("panicked"), "{}", router.log());
    }
}

#[tokio::test]
async fn search_and_introspect_follow_the_introspection_setting_tenants_and_quota() {
    let plugin = format!(
        "introspection: false\n\
         tenants:\n  contracts:\n    public: {{ exclude_tags: [internal] }}\n    staff: {{}}\n\
         {MCP_ON}"
    );
    let router = Router::start(&support::example_supergraph(), &plugin, EXAMPLE_MOCKS).await;
    let staff = [("x-wayfinder-tenant", "staff")];
    let search = json!({ "query": "books a customer ordered" });

    // No tenant and no default: the code `__search` answers with, for every tool.
    for (tool, arguments) in [
        ("search", search.clone()),
        ("validate", json!({ "operation": "{ me { id } }" })),
        ("execute", json!({ "query": "{ me { id } }" })),
    ] {
        let answer = router.mcp_call(tool, arguments, &[]).await;
        assert_eq!(mcp_code(&answer), "TENANT_REQUIRED", "{tool}: {answer}");
    }
    // Introspection is off: search and introspect are too; validate and execute are not.
    for (tool, arguments) in [
        ("search", search.clone()),
        ("introspect", json!({ "coordinates": ["Customer"] })),
    ] {
        let answer = router.mcp_call(tool, arguments, &staff).await;
        assert_eq!(
            mcp_code(&answer),
            "INTROSPECTION_DISABLED",
            "{tool}: {answer}"
        );
    }
    let answer = router
        .mcp_call("validate", json!({ "operation": "{ me { id } }" }), &staff)
        .await;
    assert_eq!(mcp_text(&answer), (false, "valid".to_string()), "{answer}");
    let answer = router
        .mcp_call(
            "execute",
            json!({ "query": "{ me { displayName } }" }),
            &staff,
        )
        .await;
    let (error, text) = mcp_text(&answer);
    assert!(!error && text.contains("Ada"), "{answer}");

    // A body over `mcp.max_request_bytes` is refused before it is read whole: 413, not a 5xx.
    let oversized = reqwest::Client::new()
        .post(format!("{}mcp", router.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"search","arguments":{{"query":"{}"}}}}}}"#,
            "x".repeat(3 << 20)
        ))
        .send()
        .await
        .expect("an answer");
    assert_eq!(oversized.status(), 413);

    // Out-of-range arguments are the tools' errors, with our codes.
    for (tool, arguments, code) in [
        (
            "introspect",
            json!({ "coordinates": ["Customer"], "depth": 9 }),
            "MCP_INVALID_ARGUMENTS",
        ),
        (
            "introspect",
            json!({ "coordinates": [] }),
            "MCP_INVALID_ARGUMENTS",
        ),
        (
            "search",
            json!({ "query": "x", "terms": ["x"] }),
            "MCP_INVALID_ARGUMENTS",
        ),
        (
            "execute",
            json!({ "query": "{ me { id } } { me { id } }" }),
            "GRAPHQL_UNKNOWN_OPERATION_NAME",
        ),
        ("execute", json!({ "query": "{ me { id " }), "PARSING_ERROR"),
    ] {
        let answer = router.mcp_call(tool, arguments, &staff).await;
        assert_eq!(mcp_code(&answer), code, "{tool}: {answer}");
    }
}

#[tokio::test]
async fn mutations_run_when_allowed_and_the_quota_counts_mcp_searches() {
    let plugin = format!(
        "tenants:\n  default: staff\n  contracts:\n    \
         staff: {{ rate_limit: {{ capacity: 8, refill: 1, interval: 1h }} }}\n\
         {MCP_ON}\n  allow_mutations: true"
    );
    let router = Router::start(&support::example_supergraph(), &plugin, EXAMPLE_MOCKS).await;
    // The mutation reaches the router (its mock subgraphs answer no mutation): not refused.
    let answer = router
        .mcp_call(
            "execute",
            json!({ "query": "mutation { updateDisplayName(name: \"Bob\") { displayName } }" }),
            &[],
        )
        .await;
    let (_, text) = mcp_text(&answer);
    assert!(!text.contains("MCP_MUTATION_REFUSED"), "{answer}");

    // Eight searches take the bucket; the ninth is told when to retry.
    for _ in 0..8 {
        let answer = router
            .mcp_call("search", json!({ "query": "orders" }), &[])
            .await;
        assert!(!mcp_text(&answer).0, "{answer}");
    }
    let answer = router
        .mcp_call("search", json!({ "query": "orders" }), &[])
        .await;
    assert_eq!(mcp_code(&answer), "SEARCH_RATE_LIMITED", "{answer}");
}

#[tokio::test]
async fn every_tool_passes_the_routers_own_router_stage_plugins() {
    // A Rhai script at the router stage (which runs before this plugin, and never for a web
    // endpoint) refuses some callers, as authentication or a coprocessor would: every tool
    // reaches the API through the router's entrance, so every tool is refused with it.
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(
        dir.path().join("main.rhai"),
        r#"
fn router_service(service) {
    service.map_request(|request| {
        if request.headers.contains("x-blocked") {
            throw #{ status: 403, message: "blocked by the router's own policy" };
        }
    });
}
"#,
    )
    .expect("writes the script");
    let rhai = format!(
        "{EXAMPLE_MOCKS}\nrhai:\n  scripts: {}\n  main: main.rhai",
        dir.path().display()
    );
    let router = Router::start(&support::example_supergraph(), &plugin(), &rhai).await;
    for (tool, arguments) in [
        ("search", json!({ "query": "books a customer ordered" })),
        ("introspect", json!({ "coordinates": ["Customer"] })),
        ("validate", json!({ "operation": "{ me { id } }" })),
        ("execute", json!({ "query": "{ me { displayName } }" })),
    ] {
        let refused = router
            .mcp_call(tool, arguments.clone(), &[("x-blocked", "yes")])
            .await;
        let (error, text) = mcp_text(&refused);
        assert!(
            error && text.contains("blocked by the router's own policy"),
            "{tool}: {refused}"
        );
        let admitted = router.mcp_call(tool, arguments, &[]).await;
        assert!(!mcp_text(&admitted).0, "{tool}: {admitted}");
    }
}

#[tokio::test]
async fn prompts_are_served_to_their_tenants_by_graphql_and_the_python_sdk() {
    let prompts = repo_path("examples/bookshop/prompts");
    let router = Router::start(
        &support::example_supergraph(),
        &format!("{}\nprompts: {}", plugin(), prompts.display()),
        EXAMPLE_MOCKS,
    )
    .await;
    let url = format!("{}mcp", router.url);
    sdk_check("prompts", &[&url], Some("public"));
    sdk_check("prompts", &[&url], Some("staff"));

    let query = "{ __prompts { name description arguments { name description type { kind name ofType { name } } defaultValue } } }";
    let public = router.query(query, json!({}), &[]).await;
    assert!(public.body["errors"].is_null(), "{}", public.body);
    let listed = public.data()["__prompts"]
        .as_array()
        .expect("a list")
        .clone();
    assert_eq!(listed.len(), 1, "{}", public.body);
    assert_eq!(listed[0]["name"], "find-a-book");
    let words = &listed[0]["arguments"][0];
    assert_eq!(words["name"], "words");
    assert_eq!(words["type"]["kind"], "NON_NULL");
    assert_eq!(words["type"]["ofType"]["name"], "String");
    assert_eq!(listed[0]["arguments"][1]["type"]["name"], "String");
    let staff = router
        .query(query, json!({}), &[("x-wayfinder-tenant", "staff")])
        .await;
    let names: Vec<&str> = staff.data()["__prompts"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["find-a-book", "moderate-reviews"]);
}

#[tokio::test]
async fn search_and_introspect_show_an_example_operation_for_each_member() {
    let router = Router::start(&support::example_supergraph(), &plugin(), EXAMPLE_MOCKS).await;
    let (error, text) = mcp_text(
        &router
            .mcp_call(
                "search",
                json!({ "query": "books a customer ordered", "first": 3 }),
                &[],
            )
            .await,
    );
    assert!(!error, "{text}");
    let (_, examples) = text
        .split_once("Example operations:\n```graphql\n")
        .expect(&text);
    assert!(examples.starts_with("# "), "{text}");
    assert!(examples.contains("query "), "{text}");
    // The public tenant's examples name nothing its contract hides.
    assert!(
        !text.contains("costCents") && !text.contains("supportNotes"),
        "{text}"
    );

    let (error, text) = mcp_text(
        &router
            .mcp_call(
                "introspect",
                json!({ "coordinates": ["Query.book"], "depth": 0 }),
                &[],
            )
            .await,
    );
    assert!(!error, "{text}");
    assert!(
        text.contains("# Example operations\n# Query.book: Selects `Query.book`.\nquery QueryBook($isbn: ID!) {"),
        "{text}"
    );
}
