//! Catalog build time and member counts for the github, saleor and 191-subgraph schemas.
//! Goal: under 1 s each in release on the 2-core machine. Run with
//! `cargo bench -p wayfinder-bench --bench catalog` (set `WAYFINDER_BENCH_RUNS` for more runs).

use std::time::{Duration, Instant};

use wayfinder_bench::{millis, quantile};
use wayfinder_supergraph::{Catalog, CatalogOptions};
use wayfinder_tests::schema_path;

const SCHEMAS: [(&str, &str); 3] = [
    ("github", "monolithic/github/schema.graphql"),
    ("saleor", "monolithic/saleor/schema.graphql"),
    (
        "guild-191-subgraphs",
        "federated/guild-huge-schema-obfuscated/supergraph.graphql",
    ),
];
const GOAL: Duration = Duration::from_secs(1);

fn main() {
    let runs: usize = std::env::var("WAYFINDER_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    println!(
        "{:<22} {:>8} {:>9} {:>10} {:>10} {:>10}  goal < {} ms",
        "schema",
        "members",
        "subgraphs",
        "median ms",
        "min ms",
        "max ms",
        GOAL.as_millis()
    );
    let mut over_goal = Vec::new();
    for (name, relative) in SCHEMAS {
        let path = schema_path(relative);
        let sdl =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut samples = Vec::with_capacity(runs);
        let mut last = None;
        for _ in 0..runs {
            let started = Instant::now();
            let catalog = Catalog::from_sdl(&sdl, relative, CatalogOptions::default())
                .unwrap_or_else(|e| panic!("{e}"));
            samples.push(started.elapsed());
            last = Some(catalog);
        }
        let catalog = last.expect("at least one run");
        let median = quantile(&samples, 0.5);
        println!(
            "{:<22} {:>8} {:>9} {:>10.1} {:>10.1} {:>10.1}",
            name,
            catalog.members().len(),
            catalog.subgraphs().len(),
            millis(median),
            millis(quantile(&samples, 0.0)),
            millis(quantile(&samples, 1.0)),
        );
        let counts = catalog.counts_by_kind();
        let by_kind: Vec<String> = counts
            .iter()
            .map(|(k, n)| format!("{}={n}", k.as_str()))
            .collect();
        println!("  {}", by_kind.join(" "));
        if median > GOAL {
            over_goal.push(name);
        }
    }
    if !over_goal.is_empty() {
        println!("over the goal: {}", over_goal.join(", "));
    }
}
