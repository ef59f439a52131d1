//! Helpers for Wayfinder's cross-crate tests and benchmarks: where the shared evaluation data lives, and
//! loading its schemas and question sets. The data is read in place from `../shared` beside the
//! repository (never copied into it); `WAYFINDER_SHARED` points elsewhere. [`router`] runs the
//! real `wayfinder-router` for the plugin's tests and the router bench.

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
    let engine = Engine::start(engine_config(None)).expect("the engine starts");
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
