//! Tenant contracts through the real router, on the spotify showcase and the example
//! supergraphs: a restricted tenant never sees a hidden member (`Query.user` is tagged
//! `internal` in spotify) in any response, of `__search`, `__definitions` or standard
//! introspection, and no operation of its that touches one reaches a subgraph; `staff` sees
//! and runs everything; `tenants.enforce: search_only` limits contracts to search.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{json, Value};
use support::{CountingSubgraph, Router};
use wayfinder_supergraph::{Catalog, CatalogOptions, ContractFilter};
use wayfinder_tests::operations::{Operations, Rng};

const TENANTS: &str = "\
tenants:
  default: public
  contracts:
    public: { exclude_tags: [internal] }
    staff: {}";

const SEARCH: &str = "query Find($q: String!) {
  __search(query: $q, first: 20) {
    coordinate pathsToRoot
    definition {
      ... on __Type { name fields { name args { name } } possibleTypes { name } interfaces { name } enumValues { name } inputFields { name } }
      ... on __Field { name args { name } type { name ofType { name ofType { name ofType { name } } } } }
      ... on __InputValue { name }
      ... on __EnumValue { name }
    }
  }
}";

/// Coordinates the public contract hides.
fn hidden_from_public() -> BTreeSet<String> {
    let catalog = Catalog::from_file(&support::spotify_supergraph(), CatalogOptions::default())
        .expect("catalogs spotify");
    let contract = catalog.contract(&ContractFilter {
        exclude_tags: ["internal".to_string()].into(),
        ..Default::default()
    });
    catalog
        .members()
        .iter()
        .filter(|m| !contract.is_visible(m.id))
        .map(|m| m.coordinate.clone())
        .collect()
}

/// Every coordinate a response mentions: results, paths, and the members listed inside
/// definitions (a type's fields and their arguments, possible types...).
fn mentioned(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            if let Some(c) = object.get("coordinate").and_then(Value::as_str) {
                out.insert(c.to_string());
            }
            if let Some(paths) = object.get("pathsToRoot").and_then(Value::as_array) {
                for step in paths.iter().filter_map(Value::as_array).flatten() {
                    out.extend(step.as_str().map(str::to_string));
                }
            }
            if let (Some(name), Some(fields)) = (
                object.get("name").and_then(Value::as_str),
                object.get("fields").and_then(Value::as_array),
            ) {
                for field in fields {
                    let Some(field_name) = field["name"].as_str() else {
                        continue;
                    };
                    out.insert(format!("{name}.{field_name}"));
                    for arg in field["args"].as_array().into_iter().flatten() {
                        out.extend(
                            arg["name"]
                                .as_str()
                                .map(|a| format!("{name}.{field_name}({a}:)")),
                        );
                    }
                }
            }
            for key in ["possibleTypes", "interfaces"] {
                for t in object
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.extend(t["name"].as_str().map(str::to_string));
                }
            }
            object.values().for_each(|v| mentioned(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| mentioned(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn public_never_sees_internal_members_and_staff_does() {
    let hidden = hidden_from_public();
    assert!(
        hidden.contains("Query.user"),
        "the fixture tags Query.user internal"
    );
    let router = Router::start(&support::spotify_supergraph(), TENANTS, "").await;

    let queries = [
        "look up a user by id",
        "user",
        "get the profile of another user",
        "users who follow a playlist",
        "current user's saved tracks",
        "Query.user",
    ];
    let mut staff_saw_user = false;
    for q in queries {
        let public = router.query(SEARCH, json!({ "q": q }), &[]).await;
        assert_eq!(public.status, 200, "{q}: {}", public.body);
        assert!(public.body["errors"].is_null(), "{q}: {}", public.body);
        let mut seen = BTreeSet::new();
        mentioned(&public.body, &mut seen);
        let leaked: Vec<&String> = seen.intersection(&hidden).collect();
        assert!(leaked.is_empty(), "public saw {leaked:?} for {q:?}");
        // Only root types and directives have no path from a root.
        for hit in public.data()["__search"].as_array().unwrap() {
            let coordinate = hit["coordinate"].as_str().unwrap();
            let rootless = ["Query", "Mutation", "Subscription"].contains(&coordinate)
                || coordinate.starts_with('@');
            assert!(
                rootless || !hit["pathsToRoot"].as_array().unwrap().is_empty(),
                "a public result without a visible path: {hit}"
            );
        }

        let staff = router
            .query(
                SEARCH,
                json!({ "q": q }),
                &[("x-wayfinder-tenant", "staff")],
            )
            .await;
        let mut seen = BTreeSet::new();
        mentioned(&staff.body, &mut seen);
        staff_saw_user |= seen.contains("Query.user");
    }
    assert!(staff_saw_user, "staff searches never surfaced Query.user");

    let definitions =
        r#"{ __definitions(coordinates: ["Query"]) { ... on __Type { fields { name } } } }"#;
    let names = |response: &support::Response| -> Vec<String> {
        response.data()["__definitions"][0]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect()
    };
    let public = router.query(definitions, json!({}), &[]).await;
    assert!(!names(&public).contains(&"user".to_string()));
    let staff = router
        .query(definitions, json!({}), &[("x-wayfinder-tenant", "staff")])
        .await;
    assert!(names(&staff).contains(&"user".to_string()));

    // An invisible coordinate is reported exactly as an unknown one.
    let query = |c: &str| format!(r#"{{ __definitions(coordinates: ["{c}"]) {{ __typename }} }}"#);
    let hidden_one = router.query(&query("Query.user"), json!({}), &[]).await;
    let unknown_one = router
        .query(&query("Query.nosuchfield"), json!({}), &[])
        .await;
    assert_eq!(hidden_one.codes(), ["UNKNOWN_COORDINATE"]);
    let strip = |r: &support::Response| {
        r.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .replace("Query.user", "X")
            .replace("Query.nosuchfield", "X")
    };
    assert_eq!(strip(&hidden_one), strip(&unknown_one));
    let staff_one = router
        .query(
            &query("Query.user"),
            json!({}),
            &[("x-wayfinder-tenant", "staff")],
        )
        .await;
    assert_eq!(
        staff_one.data()["__definitions"][0]["__typename"],
        "__Field"
    );
}

/// The example's tenants (as `router.yaml`), with room for one `__definitions` per member.
const EXAMPLE_TENANTS: &str = "\
tenants:
  default: public
  contracts:
    public: { exclude_tags: [internal] }
    staff: {}
    partner: { include_tags: [partner], exclude_tags: [internal] }";

/// Room for a hundred `__definitions` in a batch.
const LIMITS: &str = "limits:\n  max_batch: 100";

/// A supergraph, its tenants' section, and each tenant's filter.
type Case = (
    std::path::PathBuf,
    String,
    Vec<(&'static str, ContractFilter)>,
);

fn cases() -> Vec<Case> {
    let filter = |include: &[&str], exclude: &[&str]| ContractFilter {
        include_tags: include.iter().map(|t| t.to_string()).collect(),
        exclude_tags: exclude.iter().map(|t| t.to_string()).collect(),
    };
    vec![
        (
            support::example_supergraph(),
            format!("{EXAMPLE_TENANTS}\n{LIMITS}"),
            vec![
                ("public", filter(&[], &["internal"])),
                ("staff", filter(&[], &[])),
                ("partner", filter(&["partner"], &["internal"])),
            ],
        ),
        (
            support::spotify_supergraph(),
            format!("{TENANTS}\n{LIMITS}"),
            vec![
                ("public", filter(&[], &["internal"])),
                ("staff", filter(&[], &[])),
            ],
        ),
    ]
}

/// Coordinates a contract hides.
fn hidden(catalog: &Catalog, filter: &ContractFilter) -> BTreeSet<String> {
    let contract = catalog.contract(filter);
    catalog
        .members()
        .iter()
        .filter(|m| !contract.is_visible(m.id))
        .map(|m| m.coordinate.clone())
        .collect()
}

/// Every member an introspection response lists, as catalog coordinates (the introspection
/// types themselves left out).
fn introspected(response: &Value) -> BTreeSet<String> {
    let schema = &response["data"]["__schema"];
    let list = |value: &Value| value.as_array().cloned().unwrap_or_default();
    let name = |value: &Value| value["name"].as_str().unwrap_or_default().to_string();
    let mut out = BTreeSet::new();
    for ty in list(&schema["types"]) {
        let ty_name = name(&ty);
        if ty_name.starts_with("__") {
            continue;
        }
        for field in list(&ty["fields"]) {
            let field_name = name(&field);
            for argument in list(&field["args"]) {
                out.insert(format!("{ty_name}.{field_name}({}:)", name(&argument)));
            }
            out.insert(format!("{ty_name}.{field_name}"));
        }
        for member in list(&ty["inputFields"])
            .into_iter()
            .chain(list(&ty["enumValues"]))
        {
            out.insert(format!("{ty_name}.{}", name(&member)));
        }
        out.insert(ty_name);
    }
    for directive in list(&schema["directives"]) {
        let directive_name = name(&directive);
        for argument in list(&directive["args"]) {
            out.insert(format!("@{directive_name}({}:)", name(&argument)));
        }
        out.insert(format!("@{directive_name}"));
    }
    out
}

/// The coordinates of `all` that `__definitions` resolves for `tenant`, one request each (an
/// unknown coordinate fails its whole operation), batched.
async fn resolvable(router: &Router, tenant: &str, all: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for chunk in all.chunks(100) {
        let batch: Vec<Value> = chunk
            .iter()
            .map(|c| json!({ "query": format!("{{ __definitions(coordinates: [{c:?}]) {{ __typename }} }}") }))
            .collect();
        let response = router
            .post(&Value::Array(batch), &[("x-wayfinder-tenant", tenant)])
            .await;
        for (i, coordinate) in chunk.iter().enumerate() {
            if response.body[i]["data"]["__definitions"].is_array() {
                out.insert(coordinate.clone());
            }
        }
    }
    out
}

#[tokio::test]
async fn introspection_lists_exactly_what_definitions_resolve_and_graphql_js_builds_it() {
    let introspection = support::introspection_query();
    for (supergraph, tenants, filters) in cases() {
        let catalog = Catalog::from_file(&supergraph, CatalogOptions::default()).expect("catalogs");
        let all: Vec<String> = catalog
            .members()
            .iter()
            .map(|m| m.coordinate.clone())
            .collect();
        let router = Router::start(&supergraph, &tenants, "").await;
        for (tenant, filter) in &filters {
            let response = router
                .query(&introspection, json!({}), &[("x-wayfinder-tenant", tenant)])
                .await;
            assert!(
                response.body["errors"].is_null(),
                "{tenant}: {}",
                response.body
            );
            let listed = introspected(&response.body);
            let resolved = resolvable(&router, tenant, &all).await;
            let disagree: Vec<String> = all
                .iter()
                .filter(|c| listed.contains(*c) != resolved.contains(*c))
                .map(|c| {
                    format!(
                        "{c} (listed {}, resolved {})",
                        listed.contains(c),
                        resolved.contains(c)
                    )
                })
                .collect();
            assert!(
                disagree.is_empty(),
                "{} {tenant}: introspection and __definitions disagree on {} members: {:?}",
                supergraph.display(),
                disagree.len(),
                &disagree[..disagree.len().min(20)]
            );
            let hidden = hidden(&catalog, filter);
            assert_eq!(
                resolved.len() + hidden.len(),
                all.len(),
                "{tenant}: __definitions resolves every visible member"
            );
            let strays: Vec<&String> = listed.iter().filter(|c| !all.contains(c)).collect();
            assert!(
                strays.is_empty(),
                "{tenant} lists members the catalog lacks: {strays:?}"
            );
            let sdl = support::build_client_schema(&response.body)
                .unwrap_or_else(|e| panic!("graphql-js refuses {tenant}'s introspection: {e}"));
            assert!(sdl.contains("type Query"), "{tenant}: {sdl}");
        }
    }
}

/// Every hidden field, argument, input field and enum value, each in an operation that is
/// valid on the whole API and reaches it by a shortest path. A field or argument of a type no
/// path reaches (an orphan type) cannot be used by any operation and has none.
fn operations_on_hidden(
    catalog: &Catalog,
    hidden: &BTreeSet<String>,
) -> Vec<(String, String, Value)> {
    let operations = Operations::new(catalog.api_schema());
    let mut built = Vec::new();
    for coordinate in hidden.iter().filter(|c| c.contains('.')) {
        match operations.reaching(coordinate) {
            Some(operation) => {
                built.push((coordinate.clone(), operation.query, operation.variables))
            }
            None => {
                let owner = coordinate.split('.').next().unwrap_or_default();
                let is_field = catalog.api_schema().types.get(owner).is_some_and(|t| {
                    matches!(
                        t,
                        apollo_compiler::schema::ExtendedType::Object(_)
                            | apollo_compiler::schema::ExtendedType::Interface(_)
                    )
                });
                assert!(
                    !(is_field && operations.reaches(owner)),
                    "no operation built for {coordinate}, whose type is reachable"
                );
            }
        }
    }
    built
}

const REFUSED: [&str; 2] = [
    "GRAPHQL_VALIDATION_FAILED",
    "VALIDATION_INVALID_TYPE_VARIABLE",
];

#[tokio::test]
async fn operations_on_hidden_members_are_refused_before_any_subgraph_and_staff_runs_them() {
    for (supergraph, tenants, filters) in cases() {
        let catalog = Catalog::from_file(&supergraph, CatalogOptions::default()).expect("catalogs");
        let subgraph = CountingSubgraph::start().await;
        let router = Router::start(&supergraph, &tenants, &subgraph.overrides(&supergraph)).await;
        for (tenant, filter) in filters.iter().filter(|(_, f)| !f.is_unfiltered()) {
            let hidden = hidden(&catalog, filter);
            let operations = operations_on_hidden(&catalog, &hidden);
            assert!(!operations.is_empty(), "{tenant} hides no reachable member");
            let before = subgraph.count();
            for (coordinate, query, variables) in &operations {
                let response = router
                    .query(query, variables.clone(), &[("x-wayfinder-tenant", tenant)])
                    .await;
                assert_eq!(
                    response.status, 400,
                    "{tenant} {coordinate}: {query}\n{}",
                    response.body
                );
                assert!(
                    response.data().is_null(),
                    "{tenant} {coordinate}: {}",
                    response.body
                );
                let codes = response.codes();
                assert!(
                    !codes.is_empty() && codes.iter().all(|c| REFUSED.contains(&c.as_str())),
                    "{tenant} {coordinate}: {query}\n{}",
                    response.body
                );
            }
            assert_eq!(
                subgraph.received_since(before),
                Vec::<String>::new(),
                "{tenant}: operations on hidden members reached a subgraph"
            );
            // The whole API's tenant runs each of them: the subgraph is asked.
            for (coordinate, query, variables) in &operations {
                let before = subgraph.count();
                let response = router
                    .query(query, variables.clone(), &[("x-wayfinder-tenant", "staff")])
                    .await;
                assert!(
                    !response
                        .codes()
                        .iter()
                        .any(|c| REFUSED.contains(&c.as_str())),
                    "staff {coordinate}: {query}\n{}",
                    response.body
                );
                assert!(
                    subgraph.count() > before,
                    "staff {coordinate}: no subgraph request"
                );
            }
        }
    }
}

/// Sends `query` as `tenant` in the ways a client may: POST, GET, in a batch, as an automatic
/// persisted query (hash alone first, then with its text, then the hash alone again).
async fn every_way(router: &Router, tenant: &str, query: &str) -> Vec<(&'static str, Value)> {
    use sha2::Digest as _;
    let headers = [("x-wayfinder-tenant", tenant)];
    let mut out = vec![("post", router.query(query, json!({}), &headers).await.body)];
    let get = router.get_as(&[("query", query)], &headers).await;
    out.push(("get", get.body));
    let batch = router
        .post(
            &json!([{ "query": "{ __typename }" }, { "query": query }]),
            &headers,
        )
        .await;
    assert_eq!(
        batch.body[0]["data"]["__typename"], "Query",
        "{}",
        batch.body
    );
    out.push(("batch", batch.body[1].clone()));
    let hash = hex::encode(sha2::Sha256::digest(query.as_bytes()));
    let extensions = json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } });
    let unknown = router
        .post(&json!({ "extensions": extensions }), &headers)
        .await;
    assert_eq!(
        unknown.codes(),
        ["PERSISTED_QUERY_NOT_FOUND"],
        "{}",
        unknown.body
    );
    let with_text = router
        .post(
            &json!({ "query": query, "extensions": extensions }),
            &headers,
        )
        .await;
    // A refused text is not remembered: its hash alone is unknown again.
    let hash_alone = router
        .post(&json!({ "extensions": extensions }), &headers)
        .await;
    if with_text.codes().is_empty() {
        out.push(("persisted hash alone", hash_alone.body));
    } else {
        assert_eq!(
            hash_alone.codes(),
            ["PERSISTED_QUERY_NOT_FOUND"],
            "{}",
            hash_alone.body
        );
    }
    out.push(("persisted with text", with_text.body));
    out
}

#[tokio::test]
async fn every_way_in_holds_the_contract_and_search_only_restores_the_whole_api() {
    let supergraph = support::example_supergraph();
    let subgraph = CountingSubgraph::start().await;
    let overrides = subgraph.overrides(&supergraph);
    let router = Router::start(
        &supergraph,
        &format!("{EXAMPLE_TENANTS}\n{LIMITS}"),
        &overrides,
    )
    .await;
    let hidden_field = r#"{ customer(id: "c1") { email } }"#;
    let fields_of_query = r#"{ __type(name: "Query") { fields { name } } }"#;
    let names = |body: &Value| body["data"]["__type"]["fields"].to_string();

    for (way, body) in every_way(&router, "public", hidden_field).await {
        assert_eq!(
            body["errors"][0]["message"], "Cannot query field \"customer\" on type \"Query\".",
            "{way}: {body}"
        );
        assert_eq!(
            body["errors"][0]["extensions"]["code"],
            "GRAPHQL_VALIDATION_FAILED"
        );
    }
    assert_eq!(subgraph.count(), 0, "{:?}", subgraph.received_since(0));
    for (way, body) in every_way(&router, "public", fields_of_query).await {
        assert!(!names(&body).contains("customer"), "{way}: {body}");
        assert!(names(&body).contains("book"), "{way}: {body}");
    }
    // Mixed with search; beside a routed field, refused as the router refuses everyone.
    let public = [("x-wayfinder-tenant", "public")];
    let mixed = router
        .query(
            r#"{ __schema { queryType { fields { name } } } __search(query: "customer by id") { coordinate } }"#,
            json!({}),
            &public,
        )
        .await;
    assert!(mixed.body["errors"].is_null(), "{}", mixed.body);
    let text = mixed.body.to_string();
    assert!(
        !text.contains("\"customer\"") && !text.contains("Query.customer"),
        "{text}"
    );
    assert!(
        text.contains("\"me\"") && text.contains("__search"),
        "{text}"
    );
    for tenant in ["public", "staff"] {
        let beside_routed = router
            .query(
                r#"{ me { id } __type(name: "Query") { name } }"#,
                json!({}),
                &[("x-wayfinder-tenant", tenant)],
            )
            .await;
        assert_eq!(
            beside_routed.codes(),
            ["MIXED_INTROSPECTION"],
            "{tenant}: {}",
            beside_routed.body
        );
    }
    // A tenant header sent twice (a proxy appending instead of replacing) is refused.
    let twice = router
        .query(
            fields_of_query,
            json!({}),
            &[
                ("x-wayfinder-tenant", "staff"),
                ("x-wayfinder-tenant", "public"),
            ],
        )
        .await;
    assert_eq!(twice.codes(), ["UNKNOWN_TENANT"], "{}", twice.body);
    // Hidden in variables or fragments.
    for (query, variables) in [
        (
            "query($id: ID!) { customer(id: $id) { id } }",
            json!({ "id": "c1" }),
        ),
        (
            "{ me { ...Notes } } fragment Notes on Customer { supportNotes }",
            json!({}),
        ),
        (
            "{ __typename ... on Query { customer(id: \"c1\") { id } } }",
            json!({}),
        ),
    ] {
        let response = router.query(query, variables, &public).await;
        let codes = response.codes();
        assert!(
            !codes.is_empty() && codes.iter().all(|c| c == "GRAPHQL_VALIDATION_FAILED"),
            "{query}: {}",
            response.body
        );
    }
    assert_eq!(
        subgraph.count(),
        0,
        "nothing was routed: {:?}",
        subgraph.received_since(0)
    );

    // Staff: the router's own answers.
    let staff_sees = router
        .query(
            fields_of_query,
            json!({}),
            &[("x-wayfinder-tenant", "staff")],
        )
        .await;
    assert!(
        names(&staff_sees.body).contains("customer"),
        "{}",
        staff_sees.body
    );
    // An unknown tenant is refused: passing it through would show it the whole API.
    let nobody = router
        .query(
            fields_of_query,
            json!({}),
            &[("x-wayfinder-tenant", "nobody")],
        )
        .await;
    assert_eq!(nobody.codes(), ["UNKNOWN_TENANT"], "{}", nobody.body);

    let introspection = support::introspection_query();
    let staff_before = router
        .query(
            &introspection,
            json!({}),
            &[("x-wayfinder-tenant", "staff")],
        )
        .await;
    drop(router);
    let search_only = Router::start(
        &supergraph,
        &format!("{EXAMPLE_TENANTS}\n  enforce: search_only\n{LIMITS}"),
        &overrides,
    )
    .await;
    assert!(
        search_only.log().contains("tenants.enforce is search_only"),
        "the start-up log says contracts hold for search only:\n{}",
        search_only.log()
    );
    let staff_after = search_only
        .query(
            &introspection,
            json!({}),
            &[("x-wayfinder-tenant", "staff")],
        )
        .await;
    assert_eq!(
        staff_before.body, staff_after.body,
        "staff's introspection is the router's own"
    );
    let public_after = search_only.query(&introspection, json!({}), &public).await;
    assert_eq!(
        public_after.body, staff_after.body,
        "search_only: public sees the whole API"
    );
    let before = subgraph.count();
    let reached = search_only.query(hidden_field, json!({}), &public).await;
    assert!(
        reached
            .codes()
            .iter()
            .all(|c| c != "GRAPHQL_VALIDATION_FAILED"),
        "{}",
        reached.body
    );
    assert!(
        subgraph.count() > before,
        "search_only: the operation reaches the subgraph"
    );
    let definitions = search_only
        .query(
            r#"{ __definitions(coordinates: ["Query.customer"]) { __typename } }"#,
            json!({}),
            &public,
        )
        .await;
    assert_eq!(
        definitions.codes(),
        ["UNKNOWN_COORDINATE"],
        "search stays filtered"
    );
    drop(search_only);

    // Introspection off for the plugin: a restricted tenant's is refused, never forwarded.
    let off = Router::start(
        &supergraph,
        &format!("introspection: false\n{EXAMPLE_TENANTS}\n{LIMITS}"),
        &overrides,
    )
    .await;
    let refused = off.query(fields_of_query, json!({}), &public).await;
    assert_eq!(
        refused.codes(),
        ["INTROSPECTION_DISABLED"],
        "{}",
        refused.body
    );
}

/// Coordinates of hidden members a response's data mentions (introspection lists included).
fn leaked(body: &Value, hidden: &BTreeSet<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    mentioned(&body["data"], &mut seen);
    seen.intersection(hidden).cloned().collect()
}

#[tokio::test]
async fn a_sweep_of_random_operations_leaks_no_hidden_member() {
    const PER_CASE: usize = 150;
    let mut totals: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    for (supergraph, tenants, filters) in cases() {
        let catalog = Catalog::from_file(&supergraph, CatalogOptions::default()).expect("catalogs");
        let operations = Operations::new(catalog.api_schema());
        let subgraph = CountingSubgraph::start().await;
        let router = Router::start(&supergraph, &tenants, &subgraph.overrides(&supergraph)).await;
        let mut rng = Rng::new(0x5eed ^ supergraph.as_os_str().len() as u64);
        let name = supergraph_name(&supergraph);
        for round in 0..PER_CASE {
            let built = operations.random(&mut rng, 3);
            let staff = router
                .query(
                    &built.query,
                    built.variables.clone(),
                    &[("x-wayfinder-tenant", "staff")],
                )
                .await;
            // Every operation is valid on the whole API, so a refusal is the contract's.
            assert!(
                !staff.codes().iter().any(|c| REFUSED.contains(&c.as_str())),
                "{name} round {round}: {}\n{}",
                built.query,
                staff.body
            );
            for (tenant, filter) in &filters {
                let hidden = hidden(&catalog, filter);
                let touches = built.uses.iter().any(|c| hidden.contains(c));
                let before = subgraph.count();
                let response = router
                    .query(
                        &built.query,
                        built.variables.clone(),
                        &[("x-wayfinder-tenant", tenant)],
                    )
                    .await;
                let refused = response
                    .codes()
                    .iter()
                    .any(|c| REFUSED.contains(&c.as_str()));
                let reached = subgraph.count() > before;
                let context = || {
                    format!(
                        "{name} round {round} {tenant}: {}\n{}\n{}",
                        built.query, built.variables, response.body
                    )
                };
                assert!(
                    leaked(&response.body, &hidden).is_empty(),
                    "leaked {:?}: {}",
                    leaked(&response.body, &hidden),
                    context()
                );
                if touches {
                    assert!(
                        refused && response.data().is_null(),
                        "not refused: {}",
                        context()
                    );
                    assert!(!reached, "reached a subgraph: {}", context());
                } else {
                    assert!(!refused, "refused a visible operation: {}", context());
                }
                let total = totals.entry(format!("{name} {tenant}")).or_default();
                total[0] += 1;
                total[1] += usize::from(touches);
                total[2] += usize::from(refused);
                total[3] += usize::from(reached);
            }
        }
    }
    for (case, [sent, touching, refused, reached]) in &totals {
        eprintln!("sweep {case}: {sent} operations, {touching} touch hidden members, {refused} refused, {reached} reached a subgraph");
    }
    let touching: usize = totals
        .iter()
        .filter(|(c, _)| !c.ends_with("staff"))
        .map(|(_, t)| t[1])
        .sum();
    assert!(
        touching >= 20,
        "the sweep exercised too few hidden members: {totals:?}"
    );
}

fn supergraph_name(path: &Path) -> String {
    path.parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn hidden_enum_values_a_subgraph_returns_become_null_for_a_restricted_tenant() {
    let mocks = "\
experimental_mock_subgraphs:
  accounts:
    query:
      me: { __typename: Customer, id: c1, displayName: Ada, tier: STAFF }";
    let router = Router::start(
        &support::example_supergraph(),
        &format!("{EXAMPLE_TENANTS}\n{LIMITS}"),
        mocks,
    )
    .await;
    let tier = "query Tier { me { id tier } }";
    let public = [("x-wayfinder-tenant", "public")];
    let staff = router
        .query(tier, json!({}), &[("x-wayfinder-tenant", "staff")])
        .await;
    assert_eq!(staff.data()["me"]["tier"], "STAFF", "{}", staff.body);
    // `tier` is non-null: its null makes `me` null, as GraphQL completes a value.
    let hidden = router.query(tier, json!({}), &public).await;
    assert_eq!(hidden.data(), &json!({ "me": null }), "{}", hidden.body);
    let batch = router
        .post(
            &json!([{ "query": tier }, { "query": "{ me { id } }" }]),
            &public,
        )
        .await;
    assert_eq!(
        batch.body[0]["data"],
        json!({ "me": null }),
        "{}",
        batch.body
    );
    assert_eq!(batch.body[1]["data"]["me"]["id"], "c1", "{}", batch.body);
    assert!(
        !hidden.body.to_string().contains("STAFF") && !batch.body.to_string().contains("STAFF")
    );
}

/// Every kind of definition, with its examples.
const EXAMPLES: &str = "{ __definitions(coordinates: [COORDINATE]) {
  ... on __Type { examples { operation description } }
  ... on __Field { examples { operation description } }
  ... on __InputValue { examples { operation description } }
  ... on __EnumValue { examples { operation description } }
  ... on __Directive { examples { operation description } }
} }";

#[tokio::test]
async fn every_definition_a_tenant_resolves_has_an_example_valid_in_its_contract() {
    for (supergraph, tenants, filters) in cases() {
        let catalog = Catalog::from_file(&supergraph, CatalogOptions::default()).expect("catalogs");
        let router = Router::start(&supergraph, &tenants, "").await;
        for (tenant, filter) in &filters {
            let contract = catalog.contract(filter);
            let schema = contract
                .api_schema(&catalog)
                .expect("a valid contract schema");
            let visible: Vec<String> = catalog
                .members()
                .iter()
                .filter(|m| contract.is_visible(m.id))
                .map(|m| m.coordinate.clone())
                .collect();
            let mut checked = 0;
            for chunk in visible.chunks(100) {
                let batch: Vec<Value> = chunk
                    .iter()
                    .map(|c| json!({ "query": EXAMPLES.replace("COORDINATE", &format!("{c:?}")) }))
                    .collect();
                let response = router
                    .post(&Value::Array(batch), &[("x-wayfinder-tenant", tenant)])
                    .await;
                for (i, coordinate) in chunk.iter().enumerate() {
                    let examples = &response.body[i]["data"]["__definitions"][0]["examples"];
                    let examples = examples.as_array().unwrap_or_else(|| {
                        panic!(
                            "{tenant}: {coordinate} has no examples: {}",
                            response.body[i]
                        )
                    });
                    assert!(!examples.is_empty(), "{tenant}: {coordinate}");
                    for example in examples {
                        let operation = example["operation"].as_str().expect("an operation");
                        if let Err(errors) = apollo_compiler::ExecutableDocument::parse_and_validate(
                            &schema,
                            operation,
                            "example.graphql",
                        ) {
                            panic!("{tenant}: {coordinate}: {operation}\n{}", errors.errors);
                        }
                        assert!(example["description"]
                            .as_str()
                            .is_some_and(|d| !d.is_empty()));
                        checked += 1;
                    }
                }
            }
            println!(
                "{}: {tenant}: {checked} examples valid",
                supergraph.display()
            );
            assert!(
                checked >= visible.len(),
                "{tenant}: {checked} of {}",
                visible.len()
            );
        }
        // A search result's definition carries its examples too.
        let found = router
            .query(
                // Any kind of definition may rank first, so ask every kind.
                "{ __search(query: \"name\", first: 3) { definition {
                  ... on __Type { examples { operation } }
                  ... on __Field { examples { operation } }
                  ... on __InputValue { examples { operation } }
                  ... on __EnumValue { examples { operation } }
                  ... on __Directive { examples { operation } }
                } } }",
                json!({}),
                &[],
            )
            .await;
        let hits = found.data()["__search"].as_array().expect("hits").clone();
        assert!(
            hits.iter().all(|hit| hit["definition"]["examples"]
                .as_array()
                .is_some_and(|e| !e.is_empty())),
            "{}",
            found.body
        );
    }
}
