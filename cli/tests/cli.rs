//! The `wayfinder` binary as a user runs it.

use std::path::Path;
use std::process::{Command, Output};

fn wayfinder(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wayfinder"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("wayfinder runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

#[test]
fn catalog_summarizes_counts_subgraphs_and_time() {
    let output = wayfinder(&["catalog", "examples/bookshop/supergraph.graphql"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("members  105"), "{text}");
    assert!(text.contains("field                45"), "{text}");
    assert!(text.contains("subgraphs 4"), "{text}");
    for subgraph in ["accounts", "catalog", "orders", "reviews"] {
        assert!(text.contains(subgraph), "{text}");
    }
    assert!(text.contains("built in "), "{text}");
}

#[test]
fn coordinates_prints_one_a_line() {
    let output = wayfinder(&[
        "catalog",
        "examples/bookshop/supergraph.graphql",
        "--coordinates",
    ]);
    assert!(output.status.success());
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 105);
    for coordinate in [
        "Query.book",
        "Query.book(isbn:)",
        "PlaceOrderInput.couponCode",
        "OrderStatus.SHIPPED",
        "@deprecated(reason:)",
    ] {
        assert!(lines.contains(&coordinate), "{coordinate} missing");
    }
}

#[test]
fn show_prints_paths() {
    let output = wayfinder(&[
        "catalog",
        "examples/bookshop/supergraph.graphql",
        "--show",
        "OrderStatus.SHIPPED",
    ]);
    assert!(output.status.success());
    assert!(stdout(&output)
        .contains("path         Query.me > Customer.orders > Order.status > OrderStatus.SHIPPED"));
    let missing = wayfinder(&[
        "catalog",
        "examples/bookshop/supergraph.graphql",
        "--show",
        "Nope.nothing",
    ]);
    assert!(!missing.status.success());
    assert!(stderr(&missing).contains("no member at `Nope.nothing`"));
}

#[test]
fn bad_input_exits_non_zero_naming_file_line_and_problem() {
    let missing = wayfinder(&["catalog", "does/not/exist.graphql"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("does/not/exist.graphql: cannot read the schema"),
        "{}",
        stderr(&missing)
    );

    let dir = std::env::temp_dir().join(format!("wayfinder-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.graphql");
    std::fs::write(&bad, "type Query {\n  a: String\n  b: Missing\n}\n").unwrap();
    let invalid = wayfinder(&["catalog", bad.to_str().unwrap()]);
    assert!(!invalid.status.success());
    let message = stderr(&invalid);
    assert!(
        message.contains("bad.graphql: invalid GraphQL schema"),
        "{message}"
    );
    assert!(message.contains("3:"), "{message}");
    assert!(message.contains("Missing"), "{message}");
    std::fs::remove_dir_all(&dir).ok();
}
