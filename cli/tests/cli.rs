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
    assert!(text.contains("members  106"), "{text}");
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
    assert_eq!(lines.len(), 106);
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
    // The cause is said once, though the message quotes it and anyhow's chain holds it too.
    assert_eq!(
        stderr(&missing)
            .matches("No such file or directory")
            .count(),
        1,
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

#[test]
fn eval_scores_each_set_and_pools_them() {
    let dir = std::env::temp_dir().join(format!("wayfinder-cli-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let found = dir.join("found.jsonl");
    std::fs::write(
        &found,
        r#"{"id": "a", "query": "Book.title", "expected": ["Book.title"], "kind": "exact"}"#,
    )
    .unwrap();
    let lost = dir.join("lost.jsonl");
    std::fs::write(
        &lost,
        r#"{"id": "b", "query": "Book.isbn", "expected": ["Nope.nothing"], "kind": "exact"}"#,
    )
    .unwrap();
    let out = dir.join("answers.jsonl");
    let schema = "examples/bookshop/supergraph.graphql";
    // No model in an empty home: the search is lexical, which finds a coordinate by name.
    let home = dir.join("home");
    let output = wayfinder(&[
        "eval",
        schema,
        found.to_str().unwrap(),
        schema,
        lost.to_str().unwrap(),
        "--home",
        home.to_str().unwrap(),
        "--no-cache",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    // Settings only a router fleet needs are not the command line's business.
    assert!(
        !stderr(&output).contains("cursors.secret"),
        "{}",
        stderr(&output)
    );
    let text = stdout(&output);
    let overall: Vec<&str> = text.lines().filter(|l| l.starts_with("overall")).collect();
    assert_eq!(overall.len(), 3, "{text}");
    assert!(overall[0].contains("1  1.000"), "{text}");
    assert!(overall[1].contains("1  0.000"), "{text}");
    let pooled = text.split("pooled over 2 sets").nth(1).expect(&text);
    assert!(
        pooled.contains("overall                   2  0.500  0.500  0.500   0.500"),
        "{text}"
    );
    let answers = std::fs::read_to_string(&out).unwrap();
    assert_eq!(answers.lines().count(), 2, "{answers}");

    let odd = wayfinder(&["eval", schema, found.to_str().unwrap(), schema]);
    assert!(!odd.status.success());
    assert!(
        stderr(&odd).contains(&format!("`{schema}` has no questions file")),
        "{}",
        stderr(&odd)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_model_flags_run_another_model() {
    let schema = "examples/bookshop/supergraph.graphql";
    let model =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../.wayfinder/models/all-MiniLM-L6-v2-int8");
    let onnx = model.join("model.onnx");
    let tokenizer = model.join("tokenizer.json");
    let search = |onnx: &Path, dimension: &str| {
        wayfinder(&[
            "search",
            schema,
            "title of a book",
            "--no-cache",
            "--model-onnx",
            onnx.to_str().unwrap(),
            "--model-tokenizer",
            tokenizer.to_str().unwrap(),
            "--model-dimension",
            dimension,
        ])
    };

    // The default model's own files named by the flags: the search is hybrid.
    let output = search(&onnx, "384");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("Hybrid mode"),
        "{}",
        stderr(&output)
    );
    assert!(
        !stderr(&output).contains("cursors.secret"),
        "{}",
        stderr(&output)
    );

    // A width the model does not give: the engine read the flags, says so and searches lexically.
    let output = search(&onnx, "768");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("gives vectors of width 384, the configuration says 768"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("Lexical mode"),
        "{}",
        stderr(&output)
    );

    // `index` needs the model: a missing file is an error that names it.
    let missing = model.join("missing.onnx");
    let output = wayfinder(&[
        "index",
        schema,
        "--no-cache",
        "--model-onnx",
        missing.to_str().unwrap(),
        "--model-tokenizer",
        tokenizer.to_str().unwrap(),
        "--model-dimension",
        "384",
    ]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("missing.onnx"),
        "{}",
        stderr(&output)
    );

    // Half a model is refused before anything starts.
    let output = wayfinder(&[
        "search",
        schema,
        "title",
        "--model-onnx",
        onnx.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("--model-tokenizer"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn insights_prints_what_a_router_saved() {
    use wayfinder_workers::insights::{Hit, Insights, InsightsConfig, Search};
    let dir = std::env::temp_dir().join(format!("wayfinder-cli-insights-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = InsightsConfig {
        tenants: ["partner".to_string()].into(),
        ..Default::default()
    };
    let (store, _) = Insights::open(config, Some(&dir)).unwrap();
    let hits = [Hit {
        coordinate: "Query.giftCards".into(),
        score: 0.12,
    }];
    for client in 0..3 {
        store.searched(&Search {
            tenant: "partner",
            client,
            question: "Can I pay with a gift card?",
            hits: &hits,
        });
    }
    store.save().unwrap();
    drop(store);

    let output = wayfinder(&["insights", dir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("partner:"), "{text}");
    assert!(
        text.contains("     3  can i pay with a gift card"),
        "{text}"
    );
    assert!(
        text.contains("low_score 3; best: Query.giftCards 0.12"),
        "{text}"
    );

    let output = wayfinder(&["insights", dir.to_str().unwrap(), "--tenant", "public"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("no insights of tenant `public`"),
        "{}",
        stderr(&output)
    );
    let output = wayfinder(&["insights", "does/not/exist"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("does/not/exist/insights.json"),
        "{}",
        stderr(&output)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
