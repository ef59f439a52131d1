//! The MCP endpoint against the real `wayfinder-router` (release) on 127.0.0.1 (issue 45):
//!
//! 1. Token economy, on github, saleor (each as a one-subgraph supergraph) and the spotify
//!    showcase, 10 questions each (the first ten of our own `bench/corpus/questions/*/reads.jsonl`):
//!    what one `__search(first: 5)` with the full `definition` selection answers (JSON, and the
//!    same JSON without nulls and emptied lists), against the MCP texts an agent needs for the
//!    same use (the `search` tool, and `introspect` of what the search text does not make
//!    usable), in characters and in o200k_base tokens (tiktoken-rs); and the `tools/list` an
//!    agent reads once per session. `usable` counts the hits an agent can use from the MCP
//!    texts alone: for a field (or an argument of one), an operation reaching it down its path
//!    with its required arguments as variables and a leaf of what it returns selected, written
//!    from the texts' SDL by this bench and called `valid` by the `validate` tool; for a type,
//!    an input field or an enum value, its definition. A hit the search text alone does not
//!    make usable is `introspect`ed (depth 2), as an agent would. `example`: hits whose example
//!    operation (issue 54), copied from the texts, `validate` calls valid. `expected`: the answers the
//!    questions want, when among the hits, defined in the texts.
//! 2. Latency on github and spotify: the `search` tool over HTTP (which sends `__search`
//!    through the router's HTTP entrance, then prints the slice) against `__search` selecting
//!    what the tool selects, in the same run, alternating which goes first, every query new
//!    text.
//!
//! `scripts/bench-mcp` builds the router and runs this (`tokens` or `latency` picks a part).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use apollo_compiler::ast::{Definition, FieldDefinition};

use serde_json::{json, Value};
use wayfinder_bench::{
    description_queries, p50_p99, quantile, router_binary, BenchRouter, Sections,
};
use wayfinder_supergraph::{Catalog, CatalogOptions};
use wayfinder_tests::{repo_path, schema_path, single_subgraph_supergraph};
use wayfinder_workers::eval::read_questions;

const QUESTIONS: usize = 10;
const LATENCY_SAMPLES: usize = 200;

/// `__search` with the full `definition` selection: graphql-js's full introspection fragments
/// (`FullType`, `InputValue`, `TypeRef`, as `getIntrospectionQuery` writes them) on each kind of
/// definition, and on the type a field, argument or input value uses, so that one answer holds
/// what writing a selection down to each hit and below it needs: the hit, its arguments' input
/// types, the type it returns.
const FULL_SEARCH: &str = "
fragment FullType on __Type {
  kind name description specifiedByURL
  fields(includeDeprecated: true) { name description args(includeDeprecated: true) { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields(includeDeprecated: true) { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue isDeprecated deprecationReason }
fragment TypeRef on __Type {
  kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }
}
fragment Used on __Type { ...FullType ofType { ...FullType ofType { ...FullType ofType { ...FullType } } } }
query Full($q: String!) {
  __search(query: $q, first: 5) {
    coordinate score pathsToRoot
    definition {
      __typename
      ... on __Type { ...FullType }
      ... on __Field {
        name description isDeprecated deprecationReason
        args(includeDeprecated: true) { name description type { ...Used } defaultValue isDeprecated deprecationReason }
        type { ...Used }
      }
      ... on __InputValue { name description type { ...Used } defaultValue isDeprecated deprecationReason }
      ... on __EnumValue { name description isDeprecated deprecationReason }
      ... on __Directive { name description locations args { ...InputValue } }
    }
  }
}";

/// The schemas: (name, file under the shared schemas, one-subgraph supergraph needed).
const SCHEMAS: [(&str, &str, bool); 3] = [
    ("github", "monolithic/github/schema.graphql", true),
    ("saleor", "monolithic/saleor/schema.graphql", true),
    (
        "spotify",
        "federated/spotify-showcase/supergraph.graphql",
        false,
    ),
];

/// A router serving `schema` with the MCP endpoint, once fully indexed.
async fn router(
    binary: &Path,
    name: &str,
    schema: &Path,
    monolith: bool,
) -> (BenchRouter, PathBuf) {
    let supergraph = if monolith {
        let copy = std::env::temp_dir().join(format!(
            "wayfinder-mcp-{name}-{}.graphql",
            std::process::id()
        ));
        // A subgraph's own entry points (saleor has them) would clash with the router's.
        let sdl: String = single_subgraph_supergraph(schema)
            .lines()
            .filter(|line| {
                let line = line.trim_start();
                !line.starts_with("_entities(") && !line.starts_with("_service:")
            })
            .map(|line| format!("{line}\n"))
            .collect();
        std::fs::write(&copy, sdl).expect("writes the supergraph");
        copy
    } else {
        schema.to_path_buf()
    };
    let config = json!({
        "supergraph": { "introspection": true },
        "plugins": { "wayfinder.search": {
            "index": { "cache_dir": repo_path("target/wayfinder-bench-cache") },
            "mcp": { "enabled": true },
        } },
    });
    let mut router = BenchRouter::start(binary, &format!("mcp-{name}"), &supergraph, config).await;
    // The first start embeds the whole schema (minutes); later ones read the cache.
    router
        .process
        .wait_for("index ready", Duration::from_secs(1800))
        .await;
    (router, supergraph)
}

/// One MCP `tools/call`: the result's text, which must not be an error.
async fn call(client: &reqwest::Client, url: &str, tool: &str, arguments: Value) -> String {
    let answer: Value = client
        .post(format!("{url}mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments },
        }))
        .send()
        .await
        .expect("an MCP POST")
        .json()
        .await
        .expect("a JSON-RPC answer");
    let result = &answer["result"];
    assert!(
        result["isError"] == json!(false),
        "{tool} {arguments}: {answer}"
    );
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn graphql(client: &reqwest::Client, url: &str, query: &str, q: &str) -> Value {
    let answer: Value = client
        .post(url)
        .json(&json!({ "query": query, "variables": { "q": q } }))
        .send()
        .await
        .expect("a GraphQL POST")
        .json()
        .await
        .expect("a JSON answer");
    assert!(answer.get("errors").is_none(), "{answer}");
    answer
}

/// What an agent knows from the MCP texts it read: each type's fields with their arguments
/// (name, type as written, required) and the named type they return, in schema order; which
/// types are leaves (scalars, enums) or abstract (interfaces, unions); every coordinate
/// defined.
#[derive(Default)]
struct Known {
    fields: HashMap<String, Vec<KnownField>>,
    leaves: HashSet<String>,
    abstract_types: HashSet<String>,
    defined: HashSet<String>,
}

struct KnownField {
    name: String,
    arguments: Vec<(String, String, bool)>,
    returns: String,
}

impl Known {
    /// Reads the SDL in a tool's text (the search text holds it in a fence).
    fn read(&mut self, text: &str) {
        let sdl = match text.split_once("```graphql\n") {
            Some((_, rest)) => rest.split("```").next().unwrap_or_default(),
            None => text,
        };
        let document = apollo_compiler::ast::Document::parse(sdl, "mcp.graphql")
            .unwrap_or_else(|e| panic!("the MCP text is not SDL: {}\n{sdl}", e.errors));
        for definition in &document.definitions {
            let Some(name) = definition.name().map(|n| n.to_string()) else {
                continue;
            };
            self.defined.insert(name.clone());
            match definition {
                Definition::ObjectTypeDefinition(object) => self.add_fields(&name, &object.fields),
                Definition::InterfaceTypeDefinition(interface) => {
                    self.abstract_types.insert(name.clone());
                    self.add_fields(&name, &interface.fields);
                }
                Definition::UnionTypeDefinition(_) => {
                    self.abstract_types.insert(name);
                }
                Definition::ScalarTypeDefinition(_) => {
                    self.leaves.insert(name);
                }
                Definition::EnumTypeDefinition(enumeration) => {
                    for value in &enumeration.values {
                        self.defined.insert(format!("{name}.{}", value.value));
                    }
                    self.leaves.insert(name);
                }
                Definition::InputObjectTypeDefinition(input) => {
                    for field in &input.fields {
                        self.defined.insert(format!("{name}.{}", field.name));
                    }
                }
                _ => {}
            }
        }
    }

    fn add_fields(&mut self, owner: &str, fields: &[apollo_compiler::Node<FieldDefinition>]) {
        let known = self.fields.entry(owner.to_string()).or_default();
        for field in fields {
            self.defined.insert(format!("{owner}.{}", field.name));
            if known.iter().any(|k| k.name == field.name.as_str()) {
                continue;
            }
            known.push(KnownField {
                name: field.name.to_string(),
                arguments: field
                    .arguments
                    .iter()
                    .map(|a| {
                        let required = a.ty.is_non_null() && a.default_value.is_none();
                        (a.name.to_string(), a.ty.to_string(), required)
                    })
                    .collect(),
                returns: field.ty.inner_named_type().to_string(),
            });
        }
    }

    /// A selection of a leaf of the type `returned`, nested through fields without required
    /// arguments at most `depth` levels: empty for a leaf itself.
    fn below(&self, returned: &str, depth: usize) -> Option<String> {
        if self.is_leaf(returned) {
            return Some(String::new());
        }
        let fields = self.fields.get(returned);
        let plain = |f: &&KnownField| f.arguments.iter().all(|(_, _, required)| !required);
        if let Some(leaf) =
            fields.and_then(|fs| fs.iter().filter(plain).find(|f| self.is_leaf(&f.returns)))
        {
            return Some(format!(" {}", leaf.name));
        }
        if fields.is_none() && self.abstract_types.contains(returned) {
            return Some(" __typename".into());
        }
        let nested = fields?.iter().filter(plain).find_map(|f| {
            let below = self.below(&f.returns, depth.checked_sub(1)?)?;
            Some(format!(" {} {{{below} }}", f.name))
        });
        nested.or_else(|| {
            self.abstract_types
                .contains(returned)
                .then(|| " __typename".into())
        })
    }

    fn is_leaf(&self, name: &str) -> bool {
        matches!(name, "String" | "Int" | "Float" | "Boolean" | "ID") || self.leaves.contains(name)
    }

    /// An operation down `path` (field coordinates from a root; argument coordinates are
    /// skipped) selecting a leaf of what its last field returns, written from what is known
    /// alone: `None` when something it needs is not.
    fn operation(&self, path: &[String]) -> Option<String> {
        let steps: Vec<(&str, &str)> = path
            .iter()
            .filter(|step| !step.contains('('))
            .filter_map(|step| step.split_once('.'))
            .collect();
        let keyword = match steps.first()?.0 {
            root if root.contains("Mutation") => "mutation",
            root if root.contains("Subscription") => "subscription",
            _ => "query",
        };
        let (mut variables, mut opening, mut closing) = (Vec::new(), String::new(), String::new());
        let mut returned: Option<&str> = None;
        for (owner, name) in steps {
            if returned.is_some_and(|returned| returned != owner) {
                opening.push_str(&format!(" ... on {owner} {{"));
                closing.insert_str(0, " }");
            }
            let field = self.fields.get(owner)?.iter().find(|f| f.name == name)?;
            let required: Vec<String> = field
                .arguments
                .iter()
                .filter(|(_, _, required)| *required)
                .map(|(argument, ty, _)| {
                    let variable = format!("v{}", variables.len());
                    variables.push(format!("${variable}: {ty}"));
                    format!("{argument}: ${variable}")
                })
                .collect();
            opening.push_str(&format!(" {name}"));
            if !required.is_empty() {
                opening.push_str(&format!("({})", required.join(", ")));
            }
            if !self.is_leaf(&field.returns) {
                opening.push_str(" {");
                closing.insert_str(0, " }");
            }
            returned = Some(&field.returns);
        }
        opening.push_str(&self.below(returned?, 3)?);
        let variables = if variables.is_empty() {
            String::new()
        } else {
            format!("({})", variables.join(", "))
        };
        Some(format!(
            "{keyword} Check{variables} {{{opening}{closing} }}"
        ))
    }
}

/// The hits of a search text: (coordinate, its path from a root, itself included).
fn hits(search: &str) -> Vec<(String, Vec<String>)> {
    search
        .lines()
        .take_while(|line| !line.is_empty())
        .filter(|line| !line.starts_with("next page:") && !line.starts_with("no results"))
        .filter_map(|line| {
            let coordinate = line.split_whitespace().next()?.to_string();
            let mut path: Vec<String> = match line.split_once("  via ") {
                Some((_, way)) => way.split(" > ").map(str::to_string).collect(),
                None => Vec::new(),
            };
            path.push(coordinate.clone());
            Some((coordinate, path))
        })
        .collect()
}

/// Whether what `known` holds lets an agent use the hit: for a field (or an argument of one),
/// an operation down its path that the `validate` tool calls valid; for anything else, its
/// definition. The error says why not.
async fn usable(
    client: &reqwest::Client,
    url: &str,
    known: &Known,
    coordinate: &str,
    path: &[String],
) -> Result<(), String> {
    let field = coordinate.split('(').next().unwrap_or(coordinate);
    let is_field = field.split_once('.').is_some_and(|(owner, name)| {
        known
            .fields
            .get(owner)
            .is_some_and(|fields| fields.iter().any(|f| f.name == name))
    });
    if !is_field {
        return match known.defined.contains(coordinate) {
            true => Ok(()),
            false => Err("not defined".into()),
        };
    }
    // An argument's path runs through its field.
    let mut path: Vec<String> = path.iter().filter(|s| !s.contains('(')).cloned().collect();
    if path.last().map(String::as_str) != Some(field) {
        path.push(field.to_string());
    }
    let operation = known
        .operation(&path)
        .ok_or_else(|| format!("no operation down {path:?} can be written"))?;
    let answer = call(client, url, "validate", json!({ "operation": operation })).await;
    match answer == "valid" {
        true => Ok(()),
        false => Err(format!("{operation} -> {answer}")),
    }
}

/// The example operations a `search` or `introspect` text ends with, by the coordinate each
/// is for (`# Type.field: description` then the operation).
fn examples_in(text: &str) -> HashMap<String, String> {
    let mut found = HashMap::new();
    let block = match (
        text.split_once("Example operations:\n```graphql\n"),
        text.split_once("# Example operations\n"),
    ) {
        (Some((_, fenced)), _) => fenced.split("```").next().unwrap_or(""),
        (None, Some((_, rest))) => rest,
        (None, None) => return found,
    };
    let mut current: Option<(String, String)> = None;
    for line in block.lines() {
        if let Some(head) = line.strip_prefix("# ") {
            found.extend(current.take());
            let coordinate = head.split(": ").next().unwrap_or(head).to_string();
            current = Some((coordinate, String::new()));
        } else if let Some((_, operation)) = current.as_mut() {
            operation.push_str(line);
            operation.push('\n');
        }
    }
    found.extend(current);
    found
}

/// `value` without nulls, and without the lists and objects that leaves empty: the JSON a
/// client that drops what says nothing would keep.
fn compacted(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(items) => {
            let items: Vec<Value> = items.iter().filter_map(compacted).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(fields) => {
            let fields: serde_json::Map<String, Value> = fields
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), compacted(v)?)))
                .collect();
            (!fields.is_empty()).then_some(Value::Object(fields))
        }
        other => Some(other.clone()),
    }
}

/// Sums over a schema's questions.
#[derive(Default)]
struct Tally {
    full: (usize, usize),
    compact: (usize, usize),
    mcp: (usize, usize),
    hits: usize,
    usable: usize,
    /// Hits whose example operation in the texts `validate` calls valid.
    by_example: usize,
    introspected: usize,
    expected: usize,
    expected_defined: usize,
}

async fn tokens(binary: &Path) {
    let bpe = tiktoken_rs::o200k_base().expect("the o200k_base ranks");
    let measure = |text: &str| (text.chars().count(), bpe.encode_ordinary(text).len());
    println!(
        "{:<8} {:>16} {:>16} {:>12} {:>14} {:>14} {:>7} {:>7} {:>11} {:>9}",
        "schema",
        "__search ch/tok",
        "compact ch/tok",
        "MCP ch/tok",
        "ratio ch/tok",
        "compact ratio",
        "usable",
        "example",
        "introspect",
        "expected"
    );
    for (name, file, monolith) in SCHEMAS {
        let (router, _supergraph) = router(binary, name, &schema_path(file), monolith).await;
        let url = router.process.url.clone();
        let client = reqwest::Client::new();
        if name == SCHEMAS[0].0 {
            let list = tools_list(&client, &url).await;
            let (chars, tokens) = measure(&list);
            println!("tools/list, once per session: {chars} chars, {tokens} tokens");
        }
        let questions = read_questions(&repo_path(&format!(
            "bench/corpus/questions/{name}/reads.jsonl"
        )))
        .expect("our own questions");
        let mut tally = Tally::default();
        let add = |sum: &mut (usize, usize), (chars, tokens): (usize, usize)| {
            sum.0 += chars;
            sum.1 += tokens;
        };
        for question in questions.iter().take(QUESTIONS) {
            let full = graphql(&client, &url, FULL_SEARCH, &question.query).await;
            let full_text = serde_json::to_string(&full).expect("JSON");
            let compact_text =
                serde_json::to_string(&compacted(&full).unwrap_or(Value::Null)).expect("JSON");

            let search = call(
                &client,
                &url,
                "search",
                json!({ "query": question.query, "first": 5 }),
            )
            .await;
            let mut known = Known::default();
            known.read(&search);
            let mut mcp_text = search.clone();
            // A hit the search text does not let an agent use is introspected, as an agent
            // would: its coordinate, two levels deep.
            let mut introspected = false;
            let hits = hits(&search);
            for (coordinate, path) in &hits {
                tally.hits += 1;
                if usable(&client, &url, &known, coordinate, path)
                    .await
                    .is_err()
                {
                    let text = call(
                        &client,
                        &url,
                        "introspect",
                        json!({ "coordinates": [coordinate], "depth": 2 }),
                    )
                    .await;
                    known.read(&text);
                    mcp_text.push_str(&text);
                    introspected = true;
                }
                match usable(&client, &url, &known, coordinate, path).await {
                    Ok(()) => tally.usable += 1,
                    Err(why) => println!("  {name} {:?}: {coordinate}: {why}", question.query),
                }
                // The example the texts show for the hit, copied as it is.
                if let Some(operation) = examples_in(&mcp_text).get(coordinate.as_str()) {
                    let answer =
                        call(&client, &url, "validate", json!({ "operation": operation })).await;
                    tally.by_example += usize::from(answer == "valid");
                }
            }
            // The answer the question wants, when the search found it: defined in the texts.
            for expected in &question.expected {
                if hits.iter().any(|(hit, _)| hit == expected) {
                    tally.expected += 1;
                    tally.expected_defined +=
                        usize::from(known.defined.contains(expected.as_str()));
                }
            }
            tally.introspected += usize::from(introspected);
            add(&mut tally.full, measure(&full_text));
            add(&mut tally.compact, measure(&compact_text));
            add(&mut tally.mcp, measure(&mcp_text));
        }
        let n = QUESTIONS.min(questions.len());
        let ratio = |a: (usize, usize), b: (usize, usize)| {
            format!(
                "{:.1}x/{:.1}x",
                a.0 as f64 / b.0 as f64,
                a.1 as f64 / b.1 as f64
            )
        };
        println!(
            "{name:<8} {:>16} {:>16} {:>12} {:>14} {:>14} {:>4}/{:<2} {:>4}/{:<2} {:>8}/{n} {:>6}/{}",
            format!("{}/{}", tally.full.0 / n, tally.full.1 / n),
            format!("{}/{}", tally.compact.0 / n, tally.compact.1 / n),
            format!("{}/{}", tally.mcp.0 / n, tally.mcp.1 / n),
            ratio(tally.full, tally.mcp),
            ratio(tally.compact, tally.mcp),
            tally.usable,
            tally.hits,
            tally.by_example,
            tally.hits,
            tally.introspected,
            tally.expected_defined,
            tally.expected,
        );
    }
    println!(
        "(per question means, characters/o200k tokens; ratio = __search / MCP; compact: the JSON \
         without nulls and emptied lists; usable: hits an agent can use from the MCP texts alone \
         (a field: an operation reaching it, written from them, that `validate` calls valid); \
         example: hits whose example operation in the texts, copied as it is, `validate` calls \
         valid; introspect: questions that needed it after `search`; expected: answers the questions \
         want, among the hits, defined in the MCP texts)"
    );
}

/// The `tools/list` answer an agent reads once per session.
async fn tools_list(client: &reqwest::Client, url: &str) -> String {
    client
        .post(format!("{url}mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }))
        .send()
        .await
        .expect("an MCP POST")
        .text()
        .await
        .expect("an answer")
}

async fn latency(binary: &Path) {
    for (name, file, monolith) in [SCHEMAS[0], SCHEMAS[2]] {
        let schema = schema_path(file);
        let catalog = Catalog::from_file(&schema, CatalogOptions::default()).expect("a catalog");
        let (router, _supergraph) = router(binary, name, &schema, monolith).await;
        let url = router.process.url.clone();
        let client = reqwest::Client::new();
        let selection = "query Find($q: String!) { __search(query: $q, first: 5) { coordinate score cursor pathsToRoot } }";
        // Warm-up: connections, allocator, the model's first runs.
        for query in description_queries(&catalog, 20, 3) {
            graphql(&client, &url, selection, &query).await;
            call(&client, &url, "search", json!({ "query": query })).await;
        }
        let queries = description_queries(&catalog, 2 * LATENCY_SAMPLES, 45);
        let (mut graphql_samples, mut mcp_samples) = (Vec::new(), Vec::new());
        // Each pair in turn starts with the other, so neither gains from going first.
        for (i, pair) in queries.chunks(2).enumerate() {
            for turn in 0..2 {
                let started = Instant::now();
                if (i + turn) % 2 == 0 {
                    graphql(&client, &url, selection, &pair[0]).await;
                    graphql_samples.push(started.elapsed());
                } else {
                    call(
                        &client,
                        &url,
                        "search",
                        json!({ "query": pair[1], "first": 5 }),
                    )
                    .await;
                    mcp_samples.push(started.elapsed());
                }
            }
        }
        println!("{name:<8} __search          {}", p50_p99(&graphql_samples));
        println!("{name:<8} MCP search tool   {}", p50_p99(&mcp_samples));
        println!(
            "{name:<8} ratio of p50s (tool / __search): {:.2}",
            quantile(&mcp_samples, 0.5).as_secs_f64()
                / quantile(&graphql_samples, 0.5).as_secs_f64()
        );
    }
}

fn main() {
    let binary = router_binary("scripts/bench-mcp");
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let sections = Sections::from_args();
    runtime.block_on(async {
        if sections.runs("tokens") {
            tokens(&binary).await;
        }
        if sections.runs("latency") {
            latency(&binary).await;
        }
    });
}
