//! Examples against the corpus's `task` questions (issue 54): for each question, whether every
//! member it needs is used by the examples of its first five hits (every example `__definitions`
//! would serve for each), with the examples made from the schema only, then with examples
//! learned from a scripted workload as well. Per schema and pooled.
//!
//! The workload is written from each schema alone, blind to the questions, as a client that
//! shows what it fetches would run it: for every field of the query root, one operation
//! passing all its arguments as variables and selecting, down to [`DEPTH`] levels, the leaves
//! of what it returns (at most [`LEAVES`] a type) and of the composite fields that take no
//! required argument; each operation runs once. Made examples are measured too: the time to
//! make every member's on github.
//!
//! `cargo bench -p wayfinder-bench --bench examples` (vectors from `.wayfinder/cache`, which
//! `bench/fit/run.py` fills; a schema not in it is embedded first).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use apollo_compiler::schema::ExtendedType;
use apollo_compiler::Schema;
use serde_json::Value;
use wayfinder_supergraph::{usage, Catalog, CatalogOptions};
use wayfinder_tests::{engine_config, repo_path, shared_dir, wayfinder_home};
use wayfinder_workers::eval::read_questions;
use wayfinder_workers::learned::{Learned, LearnedConfig};
use wayfinder_workers::{Engine, SearchRequest};

/// Hits whose examples are read.
const HITS: usize = 5;
/// Levels a workload operation selects below its root field.
const DEPTH: usize = 3;
/// Leaves a workload operation selects on one type.
const LEAVES: usize = 12;

/// (name, schema file, question files) of each corpus schema, as `bench/fit/run.py` reads them.
fn corpus() -> Vec<(String, PathBuf, Vec<PathBuf>)> {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("bench/corpus/schemas.json")).expect("the manifest"),
    )
    .expect("JSON");
    let mut sets = Vec::new();
    for (name, entry) in manifest["schemas"].as_object().expect("schemas") {
        let source = &entry["source"];
        let schema = if source["registry"] == "shared" {
            shared_dir()
                .join("eval")
                .join(source["path"].as_str().unwrap())
        } else {
            wayfinder_home().join(format!("schemas/{name}.graphql"))
        };
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(repo_path(&format!("bench/corpus/questions/{name}")))
                .map(|dir| dir.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
        files.sort();
        if let Some(dev) = entry["dev_set"].as_str() {
            files.insert(0, shared_dir().join("eval").join(dev));
        }
        sets.push((name.clone(), schema, files));
    }
    sets
}

/// The workload's operations for `schema` (see the module doc).
fn workload(schema: &Schema) -> Vec<String> {
    let Some(query) = schema.schema_definition.query.as_ref() else {
        return Vec::new();
    };
    let Some(ExtendedType::Object(root)) = schema.types.get(query.name.as_str()) else {
        return Vec::new();
    };
    let mut operations = Vec::new();
    for (name, field) in &root.fields {
        if name.starts_with("__") {
            continue;
        }
        let mut variables = Vec::new();
        let mut arguments = Vec::new();
        for argument in &field.arguments {
            variables.push(format!("${}: {}", argument.name, argument.ty));
            arguments.push(format!("{0}: ${0}", argument.name));
        }
        let mut text = String::from("query");
        if !variables.is_empty() {
            let _ = write!(text, "({})", variables.join(", "));
        }
        let _ = write!(text, " {{ {name}");
        if !arguments.is_empty() {
            let _ = write!(text, "({})", arguments.join(", "));
        }
        let selection = select(schema, field.ty.inner_named_type().as_str(), DEPTH);
        if selection.is_none() && !is_leaf(schema, field.ty.inner_named_type().as_str()) {
            continue;
        }
        text.push_str(&selection.unwrap_or_default());
        text.push_str(" }");
        operations.push(text);
    }
    operations
}

fn is_leaf(schema: &Schema, name: &str) -> bool {
    matches!(
        schema.types.get(name),
        Some(ExtendedType::Scalar(_) | ExtendedType::Enum(_))
    )
}

/// ` { leaves... composite { ... } }` on `name`, or `None` when nothing can be selected.
fn select(schema: &Schema, name: &str, depth: usize) -> Option<String> {
    let fields = match schema.types.get(name)? {
        ExtendedType::Object(def) => &def.fields,
        ExtendedType::Interface(def) => &def.fields,
        ExtendedType::Union(_) => return Some(" { __typename }".into()),
        _ => return None,
    };
    let free = fields.values().filter(|f| {
        !f.arguments
            .iter()
            .any(|a| a.ty.is_non_null() && a.default_value.is_none())
            && f.directives.get("deprecated").is_none()
    });
    let mut parts: Vec<String> = Vec::new();
    let mut leaves = 0;
    for field in free {
        let inner = field.ty.inner_named_type();
        if is_leaf(schema, inner) {
            if leaves < LEAVES {
                parts.push(field.name.to_string());
                leaves += 1;
            }
        } else if depth > 0 {
            if let Some(below) = select(schema, inner, depth - 1) {
                parts.push(format!("{}{below}", field.name));
            }
        }
    }
    (!parts.is_empty()).then(|| format!(" {{ {} }}", parts.join(" ")))
}

/// Whether the examples of the first [`HITS`] hits use every member `expected` names.
fn covered(
    engine: &Engine,
    catalog: &Catalog,
    learned: Option<&Learned>,
    query: &str,
    expected: &[String],
) -> bool {
    let Ok(results) = engine.search(&SearchRequest {
        query,
        first: HITS,
        ..SearchRequest::default()
    }) else {
        return false;
    };
    let schema = catalog.api_schema();
    let mut used = BTreeSet::new();
    for hit in &results.hits {
        let mut operations: Vec<String> = learned
            .map(|learned| {
                learned
                    .examples(&hit.coordinate, &|c| catalog.get(c).is_some())
                    .into_iter()
                    .map(|e| e.operation.to_string())
                    .collect()
            })
            .unwrap_or_default();
        operations.extend(catalog.example(hit.member).ok().map(|e| e.operation));
        for operation in operations {
            if let Ok(shape) = usage(schema, &operation, None) {
                used.extend(shape.coordinates);
            }
        }
    }
    expected.iter().all(|member| used.contains(member))
}

fn main() {
    let github = wayfinder_tests::catalog("monolithic/github/schema.graphql");
    let started = Instant::now();
    let made = github
        .members()
        .iter()
        .filter(|m| github.example(m.id).is_ok())
        .count();
    println!(
        "made examples, github: {made} of {} members in {:.0} ms",
        github.members().len(),
        started.elapsed().as_secs_f64() * 1e3
    );

    let cache = wayfinder_home().join("cache");
    println!(
        "{:<12} {:>6} {:>10} {:>10} {:>10}",
        "schema", "tasks", "made", "+learned", "workload"
    );
    let (mut tasks, mut made_total, mut learned_total) = (0, 0, 0);
    for (name, schema_file, files) in corpus() {
        let questions: Vec<_> = files
            .iter()
            .flat_map(|file| read_questions(file).unwrap_or_default())
            .filter(|q| q.style.as_deref() == Some("task"))
            .collect();
        if questions.is_empty() {
            continue;
        }
        let catalog = match Catalog::from_file(&schema_file, CatalogOptions::default()) {
            Ok(catalog) => Arc::new(catalog),
            Err(error) => {
                println!("{name}: skipped ({error})");
                continue;
            }
        };
        let engine = Engine::start(engine_config(Some(&cache))).expect("the engine starts");
        let published = engine.publish(Arc::clone(&catalog)).expect("published");
        engine
            .wait_indexed(published.publication, std::time::Duration::from_secs(3600))
            .expect("indexed");
        let operations = workload(catalog.api_schema());
        let learned = Learned::new(
            LearnedConfig {
                from_traffic: true,
                ..LearnedConfig::default()
            },
            None,
        );
        for operation in &operations {
            if let Ok(shape) = usage(catalog.api_schema(), operation, None) {
                learned.record(&shape);
            }
        }
        let made = questions
            .iter()
            .filter(|q| covered(&engine, &catalog, None, &q.query, &q.expected))
            .count();
        let with_learned = questions
            .iter()
            .filter(|q| covered(&engine, &catalog, Some(&learned), &q.query, &q.expected))
            .count();
        println!(
            "{name:<12} {:>6} {:>10} {:>10} {:>10}",
            questions.len(),
            format!("{:.3}", made as f64 / questions.len() as f64),
            format!("{:.3}", with_learned as f64 / questions.len() as f64),
            learned.len()
        );
        tasks += questions.len();
        made_total += made;
        learned_total += with_learned;
    }
    println!(
        "{:<12} {tasks:>6} {:>10} {:>10}",
        "all",
        format!("{:.3}", made_total as f64 / tasks.max(1) as f64),
        format!("{:.3}", learned_total as f64 / tasks.max(1) as f64),
    );
    println!(
        "(made: the share of task questions whose needed members are all used by the examples \
         made from the schema for their first {HITS} hits; +learned: with the examples learned \
         from the workload too; workload: distinct operation shapes learned)"
    );
}
