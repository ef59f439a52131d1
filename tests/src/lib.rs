//! Helpers for Wayfinder's cross-crate tests and benchmarks: where the shared evaluation data lives, and
//! loading its schemas and question sets. The data is read in place from `../shared` beside the
//! repository (never copied into it); `WAYFINDER_SHARED` points elsewhere. [`router`] runs the
//! real `wayfinder-router` for the plugin's tests and the router bench; [`redis`] and
//! [`prometheus`] the real servers its fleet and dashboard tests need.

pub mod operations;
pub mod prometheus;
pub mod redis;
pub mod router;

use std::path::{Path, PathBuf};

use wayfinder_supergraph::{Catalog, CatalogOptions};
use wayfinder_workers::eval::{read_questions, Question};
use wayfinder_workers::{Engine, EngineConfig, SearchRequest};

/// The shared folder: `$WAYFINDER_SHARED`, or `../shared` beside the repository.
pub fn shared_dir() -> PathBuf {
    let dir = match std::env::var_os("WAYFINDER_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    assert!(
        dir.join("eval").is_dir(),
        "the shared evaluation data is missing: expected {}/eval (set WAYFINDER_SHARED)",
        dir.display()
    );
    dir
}

/// A path under `shared/eval/schemas/`.
pub fn schema_path(relative: &str) -> PathBuf {
    shared_dir().join("eval/schemas").join(relative)
}

/// A path under the repository root.
/// Every schema of the shared eval data (each `supergraph.graphql` or `schema.graphql`), as
/// paths relative to its `schemas` folder, sorted.
pub fn every_eval_schema() -> Vec<String> {
    let root = schema_path("");
    let mut found = Vec::new();
    let mut folders = vec![root.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() && name != "subgraphs" {
                folders.push(path);
            } else if name == "supergraph.graphql" || name == "schema.graphql" {
                found.push(path.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// Catalogs a shared schema with default options, panicking with the error if it does not load.
pub fn catalog(relative: &str) -> Catalog {
    let path = schema_path(relative);
    Catalog::from_file(&path, CatalogOptions::default())
        .unwrap_or_else(|error| panic!("{} does not load: {error}", path.display()))
}

/// The directories of the federation-gateway-audit suites, sorted.
pub fn audit_suites() -> Vec<PathBuf> {
    let root = schema_path("federated/federation-gateway-audit");
    let mut suites: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.join("supergraph.graphql").is_file())
        .collect();
    suites.sort();
    suites
}

/// The three dev question sets, by set name.
pub const DEV_SETS: [&str; 3] = ["github", "saleor", "spotify-supergraph"];

/// The schema file of a question set, relative to `eval/schemas/`.
pub fn set_schema(set: &str) -> &'static str {
    match set {
        "github" => "monolithic/github/schema.graphql",
        "saleor" => "monolithic/saleor/schema.graphql",
        "spotify-supergraph" => "federated/spotify-showcase/supergraph.graphql",
        other => panic!("unknown question set {other}"),
    }
}

/// The questions of a dev set, as `wayfinder eval` reads them.
pub fn questions(set: &str) -> Vec<Question> {
    let path = shared_dir().join(format!("eval/questions/{set}.dev.jsonl"));
    read_questions(&path).unwrap_or_else(|error| panic!("{set}: {error}"))
}

/// Where `scripts/setup` put the runtime and model: `$WAYFINDER_HOME`, or `.wayfinder/` in the
/// repository.
pub fn wayfinder_home() -> PathBuf {
    std::env::var_os("WAYFINDER_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path(".wayfinder"))
}

/// The default engine configuration with its cache in `cache_dir` (`None`: in memory).
pub fn engine_config(cache_dir: Option<&Path>) -> EngineConfig {
    let mut config = EngineConfig::default_in(&wayfinder_home());
    config.cache_dir = cache_dir.map(Path::to_path_buf);
    config
}

/// An engine without a cache over the schema `sdl`, indexed (vectors ready) before it returns.
pub fn indexed_engine(sdl: &str, file_name: &str) -> Engine {
    let catalog = Catalog::from_sdl(sdl, file_name, CatalogOptions::default())
        .unwrap_or_else(|e| panic!("{file_name} is a valid schema: {e}"));
    indexed_catalog(catalog)
}

/// An engine without a cache over `catalog`, indexed (vectors ready) before it returns. The
/// wait allows for github, the largest dev set, on a slow machine.
pub fn indexed_catalog(catalog: Catalog) -> Engine {
    indexed_catalog_with(catalog, engine_config(None))
}

/// [`indexed_engine`] ranking with the stages (`learned: false`), as a search without the
/// question's vector does: what the tests of the stages pin. The model is the untuned one the
/// stages were chosen with, as before issue 53 (`--model-tuning none`).
pub fn staged_engine(sdl: &str, file_name: &str) -> Engine {
    let catalog = Catalog::from_sdl(sdl, file_name, CatalogOptions::default())
        .unwrap_or_else(|e| panic!("{file_name} is a valid schema: {e}"));
    staged_catalog(catalog)
}

/// [`indexed_catalog`] ranking with the stages ([`staged_engine`]).
pub fn staged_catalog(catalog: Catalog) -> Engine {
    let mut config = engine_config(None);
    config.model.tuning = wayfinder_workers::ModelTuning::Untuned;
    config.ranking = Some(wayfinder_workers::Params {
        learned: false,
        ..Default::default()
    });
    indexed_catalog_with(catalog, config)
}

/// [`indexed_catalog`] with an engine made from `config` (other ranking params, say).
pub fn indexed_catalog_with(catalog: Catalog, config: EngineConfig) -> Engine {
    let engine = Engine::start(config).expect("the engine starts");
    let published = engine
        .publish(std::sync::Arc::new(catalog))
        .expect("published");
    engine
        .wait_indexed(published.publication, std::time::Duration::from_secs(900))
        .expect("indexing finishes");
    engine
}

/// The coordinates of the first `first` results for `query`, best first.
pub fn top_coordinates(engine: &Engine, query: &str, first: usize) -> Vec<String> {
    engine
        .search(&SearchRequest {
            query,
            first,
            ..SearchRequest::default()
        })
        .unwrap_or_else(|e| panic!("search for {query:?} answers: {e}"))
        .hits
        .into_iter()
        .map(|hit| hit.coordinate)
        .collect()
}

/// Whether `above` is among the first `within` of `hits` and `below` comes after it, if at all.
pub fn ranks_above(hits: &[String], above: &str, within: usize, below: &str) -> bool {
    let rank = |c: &str| hits.iter().position(|h| h == c);
    let above = rank(above).filter(|r| *r < within);
    above.is_some() && rank(below).is_none_or(|below| above < Some(below))
}

/// Whether the first of `hits` whose coordinate starts with `prefix` (`Mutation.`, `Enum.`) is
/// `expected`, among the first `within`.
pub fn first_of_is(hits: &[String], prefix: &str, within: usize, expected: &str) -> bool {
    hits.iter()
        .take(within)
        .find(|c| c.starts_with(prefix))
        .is_some_and(|c| c == expected)
}

/// A fresh, empty folder under the system's temporary folder, unique to this process.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wayfinder-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// A monolithic schema as a supergraph of one subgraph (`monolith`, at an address nobody
/// serves), so the router can run it: its API schema as the catalog reads it (github's file
/// repeats two fields, which the router refuses), with every type joined to that subgraph.
pub fn single_subgraph_supergraph(schema: &Path) -> String {
    use apollo_compiler::ast::{Argument, Directive, Value};
    use apollo_compiler::schema::{Component, ExtendedType};
    use apollo_compiler::{Name, Node};

    let catalog = Catalog::from_file(schema, CatalogOptions::default())
        .unwrap_or_else(|error| panic!("{} does not load: {error}", schema.display()));
    let mut api = catalog.api_schema().as_ref().clone().into_inner();
    let graph = |name: &str, extra: Option<(&str, &str)>| {
        let mut arguments = vec![Node::new(Argument {
            name: Name::new_unchecked("graph"),
            value: Node::new(Value::Enum(Name::new_unchecked("MONOLITH"))),
        })];
        if let Some((key, value)) = extra {
            arguments.push(Node::new(Argument {
                name: Name::new_unchecked(key),
                value: Node::new(Value::String(value.into())),
            }));
        }
        Component::new(Directive {
            name: Name::new_unchecked(name),
            arguments,
        })
    };
    for ty in api.types.values_mut() {
        if ty.is_built_in() {
            continue;
        }
        // Each type joins the one subgraph, with what it implements or its union's members.
        let (directives, joins): (_, Vec<(&str, &str, String)>) = match ty {
            ExtendedType::Object(object) => {
                let object = object.make_mut();
                let interfaces = object.implements_interfaces.iter();
                let joins = interfaces.map(|i| ("join__implements", "interface", i.to_string()));
                (&mut object.directives, joins.collect())
            }
            ExtendedType::Interface(interface) => {
                let interface = interface.make_mut();
                let parents = interface.implements_interfaces.iter();
                let joins = parents.map(|i| ("join__implements", "interface", i.to_string()));
                (&mut interface.directives, joins.collect())
            }
            ExtendedType::Union(union) => {
                let union = union.make_mut();
                let members = union.members.iter();
                let joins = members.map(|m| ("join__unionMember", "member", m.to_string()));
                (&mut union.directives, joins.collect())
            }
            ExtendedType::Enum(e) => (&mut e.make_mut().directives, Vec::new()),
            ExtendedType::InputObject(i) => (&mut i.make_mut().directives, Vec::new()),
            ExtendedType::Scalar(s) => (&mut s.make_mut().directives, Vec::new()),
        };
        directives.push(graph("join__type", None));
        for (name, key, value) in joins {
            directives.push(graph(name, Some((key, &value))));
        }
    }
    let roots = &api.schema_definition;
    let root = |kind: &str, name: &Option<apollo_compiler::schema::ComponentName>| {
        name.as_ref()
            .map(|n| format!("  {kind}: {}\n", n.name))
            .unwrap_or_default()
    };
    let header = format!(
        "schema\n  @link(url: \"https://specs.apollo.dev/link/v1.0\")\n  @link(url: \"https://specs.apollo.dev/join/v0.3\", for: EXECUTION)\n{{\n{}{}{}}}\n\n{}",
        root("query", &roots.query),
        root("mutation", &roots.mutation),
        root("subscription", &roots.subscription),
        r#"directive @join__enumValue(graph: join__Graph!) repeatable on ENUM_VALUE
directive @join__field(graph: join__Graph, requires: join__FieldSet, provides: join__FieldSet, type: String, external: Boolean, override: String, usedOverridden: Boolean) repeatable on FIELD_DEFINITION | INPUT_FIELD_DEFINITION
directive @join__graph(name: String!, url: String!) on ENUM_VALUE
directive @join__implements(graph: join__Graph!, interface: String!) repeatable on OBJECT | INTERFACE
directive @join__type(graph: join__Graph!, key: join__FieldSet, extension: Boolean! = false, resolvable: Boolean! = true, isInterfaceObject: Boolean! = false) repeatable on OBJECT | INTERFACE | UNION | ENUM | INPUT_OBJECT | SCALAR
directive @join__unionMember(graph: join__Graph!, member: String!) repeatable on UNION
directive @link(url: String, as: String, for: link__Purpose, import: [link__Import]) repeatable on SCHEMA
scalar join__FieldSet
enum join__Graph {
  MONOLITH @join__graph(name: "monolith", url: "http://127.0.0.1:9/graphql")
}
scalar link__Import
enum link__Purpose {
  SECURITY
  EXECUTION
}
"#
    );
    let mut sdl = header;
    for (name, ty) in &api.types {
        if !ty.is_built_in() && !name.starts_with("join__") && !name.starts_with("link__") {
            sdl.push('\n');
            sdl.push_str(&ty.to_string());
        }
    }
    for (name, directive) in &api.directive_definitions {
        if !directive.is_built_in() && !["link", "join__"].iter().any(|p| name.starts_with(p)) {
            sdl.push('\n');
            sdl.push_str(&directive.to_string());
        }
    }
    sdl
}

/// Whether this CPU computes the default model's int8 products exactly. The model file is
/// quantized for AVX-512 VNNI (u8 activations times s8 weights); on a CPU without VNNI, ONNX
/// Runtime multiplies with AVX2's `vpmaddubsw`, which saturates pairs of products at 16 bits,
/// so the vectors differ and rank otherwise (on such a host, github's dev R@5 is .741 rather
/// than .796; bench/HISTORY.md, issue 55). The tuning and the ranker were fitted on exact
/// vectors; tests of single rankings they settle hold only where the vectors are the same.
pub fn exact_int8_products() -> bool {
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let exact = flags
        .lines()
        .filter(|line| line.starts_with("flags"))
        .any(|line| {
            line.split_whitespace()
                .any(|flag| flag == "avx512_vnni" || flag == "avx_vnni")
        });
    if !exact {
        eprintln!(
            "this CPU has no VNNI: the int8 model's vectors are not the ones the ranking was \
             fitted on; this ranking is not checked here"
        );
    }
    exact
}
