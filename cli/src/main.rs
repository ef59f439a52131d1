//! `wayfinder`: the engine's command line. A thin layer over the library crates; it never
//! depends on apollo-router, so it builds in minutes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};

mod engine;
use wayfinder_supergraph::{Catalog, CatalogOptions, MemberKind};

#[derive(Parser)]
#[command(
    name = "wayfinder",
    version,
    about = "Semantic search over a federated GraphQL API"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the catalog of a supergraph (or plain schema) and summarize it.
    Catalog {
        /// A supergraph SDL file, or a plain GraphQL schema (taken as one subgraph).
        schema: PathBuf,
        /// Print every schema coordinate, one a line, instead of the summary.
        #[arg(long)]
        coordinates: bool,
        /// Print every member's search document (the text that is embedded and indexed).
        #[arg(long)]
        documents: bool,
        /// Print one member's facts and paths to the roots (repeatable).
        #[arg(long = "show", value_name = "COORDINATE")]
        show: Vec<String>,
        /// Paths to the roots kept per member.
        #[arg(long, default_value_t = CatalogOptions::default().max_paths)]
        max_paths: usize,
    },
    /// Build or update the vector cache for a schema, with a progress bar and a summary.
    Index {
        schema: PathBuf,
        #[command(flatten)]
        engine: engine::EngineArgs,
    },
    /// Search a schema: prints score, coordinate and first path to a root.
    Search {
        schema: PathBuf,
        /// What you are looking for, in your own words.
        words: String,
        #[command(flatten)]
        search: engine::SearchArgs,
        #[command(flatten)]
        engine: engine::EngineArgs,
    },
    /// Run questions files (JSON lines) through the search and print recall and MRR by kind;
    /// with several sets, each set's and then the figures pooled over all their questions.
    Eval {
        /// A schema and its questions file; repeat the pair to measure and pool several sets.
        #[arg(required = true, num_args = 2.., value_names = ["SCHEMA", "QUESTIONS"])]
        sets: Vec<PathBuf>,
        /// Write `{"id": ..., "style": ..., "results": [top-10 coordinates], "deep_rank": ...,
        /// "found": [rank of each expected coordinate], "best_score": ...}` a line, for
        /// every question of every set, and the ranking params used to `FILE.params.json`.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write every question's candidates and their features (one JSON line each, after a
        /// line naming the features): what `bench/fit` fits the ranker on.
        #[arg(long)]
        features: Option<PathBuf>,
        #[command(flatten)]
        engine: engine::EngineArgs,
    },
    /// Print what agents could not find: the questions a router keeps for its opted-in tenants
    /// (`insights`), read from its cache folder, most asked first.
    Insights {
        /// The router's `index.cache_dir`, where it saves `insights.json`.
        cache_dir: PathBuf,
        /// Only this tenant.
        #[arg(long)]
        tenant: Option<String>,
        /// Questions per tenant.
        #[arg(long, default_value_t = 20)]
        first: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WAYFINDER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = run(cli.command);
    // Pool threads may still be inside ONNX Runtime; it must be left before the exit handlers
    // tear it down.
    wayfinder_workers::close_runtime(wayfinder_workers::EXIT_WAIT);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wayfinder: {}", chain(&error));
            ExitCode::FAILURE
        }
    }
}

/// The error and each cause it does not already quote: most of the engine's errors name their
/// cause in their own message, which `{:#}` would print twice.
fn chain(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Index { schema, engine } => engine::index(&schema, &engine),
        Command::Search {
            schema,
            words,
            search,
            engine,
        } => engine::search(&schema, &words, &search, &engine),
        Command::Eval {
            sets,
            out,
            features,
            engine,
        } => engine::eval(&sets, out.as_deref(), features.as_deref(), &engine),
        Command::Insights {
            cache_dir,
            tenant,
            first,
        } => insights(&cache_dir, tenant.as_deref(), first),
        Command::Catalog {
            schema,
            coordinates,
            documents,
            show,
            max_paths,
        } => {
            let started = Instant::now();
            let catalog = Catalog::from_file(&schema, CatalogOptions { max_paths })?;
            let elapsed = started.elapsed();
            for warning in catalog.warnings() {
                eprintln!("wayfinder: warning: {}:{warning}", catalog.source_name());
            }
            if !show.is_empty() {
                for coordinate in &show {
                    print_member(&catalog, coordinate)?;
                }
            } else if documents {
                let mut out = String::new();
                for document in
                    wayfinder_workers::index::document::documents(&catalog, &Default::default())
                {
                    let coordinate = &catalog.member(document.member).coordinate;
                    out.push_str(&format!("{coordinate}\t{}\n", document.text()));
                }
                print!("{out}");
            } else if coordinates {
                let mut out = String::with_capacity(catalog.members().len() * 32);
                for member in catalog.members() {
                    out.push_str(&member.coordinate);
                    out.push('\n');
                }
                print!("{out}");
            } else {
                print_summary(&catalog, elapsed);
            }
            Ok(())
        }
    }
}

fn print_summary(catalog: &Catalog, elapsed: std::time::Duration) {
    println!("catalog  {}", catalog.source_name());
    println!("members  {}", catalog.members().len());
    let counts = catalog.counts_by_kind();
    for kind in MemberKind::ALL {
        if let Some(count) = counts.get(&kind) {
            println!("  {:<20} {count}", kind.as_str());
        }
    }
    let deprecated = catalog
        .members()
        .iter()
        .filter(|m| m.is_deprecated())
        .count();
    let unreachable = catalog
        .members()
        .iter()
        .filter(|m| m.kind != MemberKind::Directive && m.kind != MemberKind::DirectiveArgument)
        .filter(|m| catalog.depth(m.id).is_none())
        .count();
    println!("  {:<20} {deprecated}", "(deprecated)");
    println!("  {:<20} {unreachable}", "(no path to a root)");
    println!("subgraphs {}", catalog.subgraphs().len());
    for subgraph in catalog.subgraphs() {
        let entities = subgraph
            .members
            .iter()
            .filter(|id| {
                catalog
                    .member(**id)
                    .keys
                    .iter()
                    .any(|k| k.subgraph == subgraph.id)
            })
            .count();
        println!(
            "  {:<24} {:>6} members {:>4} entities  {:016x}",
            subgraph.name,
            subgraph.members.len(),
            entities,
            subgraph.content_hash
        );
    }
    println!("built in {:.1} ms", elapsed.as_secs_f64() * 1e3);
}

fn print_member(catalog: &Catalog, coordinate: &str) -> anyhow::Result<()> {
    let member = catalog.get(coordinate).ok_or_else(|| {
        anyhow::anyhow!("no member at `{coordinate}` in {}", catalog.source_name())
    })?;
    let names = |ids: &[wayfinder_supergraph::SubgraphId]| {
        ids.iter()
            .map(|id| catalog.subgraph(*id).name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("{}  ({})", member.coordinate, member.kind.as_str());
    println!("  signature    {}", member.signature);
    if let Some(description) = &member.description {
        println!("  description  {}", description.replace('\n', " "));
    }
    println!("  subgraphs    {}", names(&member.subgraphs));
    for key in &member.keys {
        println!(
            "  key          {} in {}{}",
            key.fields,
            catalog.subgraph(key.subgraph).name,
            if key.resolvable {
                ""
            } else {
                " (not resolvable)"
            }
        );
    }
    if !member.tags.is_empty() {
        println!("  tags         {}", member.tags.join(", "));
    }
    if let Some(deprecation) = &member.deprecation {
        let replacement = deprecation
            .replacement
            .map(|id| catalog.member(id).coordinate.as_str());
        println!(
            "  deprecated   {} -> {}",
            deprecation.reason.as_deref().unwrap_or("(no reason)"),
            replacement.unwrap_or("(no replacement named)")
        );
    }
    println!(
        "  depth        {}",
        catalog
            .depth(member.id)
            .map_or("-".to_string(), |d| d.to_string())
    );
    for path in catalog.paths_to_root(member.id) {
        println!(
            "  path         {}",
            catalog.path_coordinates(path).join(" > ")
        );
    }
    Ok(())
}

fn insights(cache_dir: &std::path::Path, tenant: Option<&str>, first: usize) -> anyhow::Result<()> {
    let insights = wayfinder_workers::insights::Insights::read(cache_dir)?;
    let tenants = match tenant {
        Some(tenant) if !insights.keeps(tenant) => {
            anyhow::bail!(
                "no insights of tenant `{tenant}` in {}",
                cache_dir.display()
            )
        }
        Some(tenant) => vec![tenant.to_string()],
        None => insights.tenants(),
    };
    let days = insights.config().days;
    for tenant in tenants {
        let shown = if tenant.is_empty() {
            "(no tenant)"
        } else {
            &tenant
        };
        println!("{shown}: the questions most asked in the last {days} days without an answer");
        for question in insights.top(&tenant, first) {
            let text = question
                .text
                .or(question.hash.map(|hash| format!("hash {hash}")))
                .unwrap_or_default();
            let reasons: Vec<String> = question
                .reasons
                .iter()
                .map(|(reason, count)| format!("{} {count}", reason.as_str()))
                .collect();
            let best: Vec<String> = question
                .best
                .iter()
                .map(|hit| format!("{} {:.2}", hit.coordinate, hit.score))
                .collect();
            println!("{:>6}  {text}", question.count);
            println!(
                "        {}; best: {}",
                reasons.join(", "),
                if best.is_empty() {
                    "nothing".to_string()
                } else {
                    best.join(", ")
                }
            );
        }
    }
    Ok(())
}
