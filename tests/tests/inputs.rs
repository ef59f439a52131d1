//! Bad input is rejected with the file, line and problem; content hashes move exactly with
//! content.

use wayfinder_supergraph::{Catalog, CatalogError, CatalogOptions};
use wayfinder_tests::repo_path;

fn load(sdl: &str) -> Result<Catalog, CatalogError> {
    Catalog::from_sdl(sdl, "test.graphql", CatalogOptions::default())
}

#[test]
fn a_missing_file_names_the_file() {
    let error = Catalog::from_file("no/such/schema.graphql".as_ref(), CatalogOptions::default())
        .unwrap_err();
    assert!(matches!(error, CatalogError::Read { .. }));
    assert!(
        error.to_string().contains("no/such/schema.graphql"),
        "{error}"
    );
}

#[test]
fn a_syntax_error_names_file_and_line() {
    let error =
        load("type Query {\n  ok: String\n}\n\ntype Broken {\n  field String\n}\n").unwrap_err();
    let CatalogError::InvalidSchema {
        source_name,
        problems,
    } = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!(source_name, "test.graphql");
    assert_eq!(problems[0].line, Some(6), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("test.graphql: invalid GraphQL schema:\n  6:"),
        "{error}"
    );
}

#[test]
fn an_undefined_type_is_a_validation_error_with_its_line() {
    let error = load("type Query {\n  user: User\n}\n").unwrap_err();
    let CatalogError::InvalidSchema { problems, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(problems[0].line, Some(2));
    assert!(problems[0].message.contains("User"), "{error}");
}

#[test]
fn an_unsupported_join_version_names_the_link_line() {
    let sdl = std::fs::read_to_string(repo_path("examples/bookshop/supergraph.graphql")).unwrap();
    let bad = sdl.replace("specs.apollo.dev/join/v0.3", "specs.apollo.dev/join/v9.9");
    let error = load(&bad).unwrap_err();
    let CatalogError::UnsupportedSpec { problem, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(problem.line, Some(3), "{error}");
    assert!(
        error
            .to_string()
            .contains("join spec v9.9 is not supported"),
        "{error}"
    );
}

#[test]
fn an_unknown_execution_spec_is_refused() {
    let sdl = std::fs::read_to_string(repo_path("examples/bookshop/supergraph.graphql")).unwrap();
    let bad = sdl.replacen(
        "@link(url: \"https://specs.apollo.dev/tag/v0.3\")",
        "@link(url: \"https://specs.apollo.dev/tag/v0.3\")\n  @link(url: \"https://example.com/secret/v1.0\", for: SECURITY)",
        1,
    );
    let error = load(&bad).unwrap_err();
    assert!(
        matches!(error, CatalogError::UnsupportedSpec { .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("https://example.com/secret/v1.0"),
        "{error}"
    );
    assert!(error.to_string().starts_with("test.graphql:5:"), "{error}");
}

#[test]
fn a_plain_schema_is_one_subgraph() {
    let catalog = load("\"People\"\ntype Query { people(first: Int = 10): [Person!]! }\ntype Person { name: String! }\n").unwrap();
    assert_eq!(catalog.subgraphs().len(), 1);
    assert_eq!(
        catalog.get("Person.name").unwrap().subgraphs,
        vec![catalog.subgraphs()[0].id]
    );
    assert_eq!(
        catalog.get("Query.people").unwrap().signature,
        "people(first: Int = 10): [Person!]!"
    );
    assert_eq!(
        catalog.get("Query.people(first:)").unwrap().signature,
        "first: Int = 10"
    );
}

#[test]
fn content_hashes_follow_content() {
    let sdl = std::fs::read_to_string(repo_path("examples/bookshop/supergraph.graphql")).unwrap();
    let before = load(&sdl).unwrap();
    let again = load(&sdl).unwrap();
    assert_eq!(before.content_hash(), again.content_hash());

    // Change one description in the reviews subgraph's Review type.
    let edited = sdl.replace(
        "\"\"\"A customer's opinion of a book.\"\"\"",
        "\"\"\"What a customer thought of a book.\"\"\"",
    );
    assert_ne!(edited, sdl, "the edit applies");
    let after = load(&edited).unwrap();
    assert_ne!(before.content_hash(), after.content_hash());
    let changed: Vec<&str> = before
        .members()
        .iter()
        .filter(|m| after.get(&m.coordinate).unwrap().content_hash != m.content_hash)
        .map(|m| m.coordinate.as_str())
        .collect();
    assert_eq!(changed, ["Review"]);
    let changed_subgraphs: Vec<&str> = before
        .subgraphs()
        .iter()
        .zip(after.subgraphs())
        .filter(|(b, a)| b.content_hash != a.content_hash)
        .map(|(b, _)| b.name.as_str())
        .collect();
    assert_eq!(changed_subgraphs, ["reviews"]);
}
