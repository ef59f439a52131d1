//! Tenant contracts through the real router, on the spotify showcase supergraph: the `public`
//! tenant never sees a member tagged `internal` (`Query.user` is one) in any field of any
//! response, while `staff` does.

mod support;

use std::collections::BTreeSet;

use serde_json::{json, Value};
use support::Router;
use wayfinder_supergraph::{Catalog, CatalogOptions, ContractFilter};

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
