//! A new replica joining a fleet, on the github schema, with the real model and a real
//! `redis-server` (issue 43): time from engine start to hybrid-ready
//! - cold: an empty local store and an empty Redis (the run that fills Redis);
//! - new replica: an empty local store, Redis warm (goal: 10 s or less);
//! - local vectors, no saved graphs: what building the graphs costs (whether sharing graphs
//!   through Redis would pay);
//! - restart: the local store and the saved graphs warm, Redis unused.
//!
//! Also the bytes a new replica pulls from Redis, and Redis's memory and keys for the schema.
//!
//! `cargo bench -p wayfinder-bench --bench fleet`; `WAYFINDER_BENCH_RUNS` (default 3) runs of
//! each warm case, medians reported.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wayfinder_bench::{quantile, seconds};
use wayfinder_supergraph::{Catalog, CatalogOptions};
use wayfinder_tests::redis::RedisServer;
use wayfinder_tests::{engine_config, schema_path, temp_dir};
use wayfinder_workers::{Engine, IndexReport, RedisConfig, RedisCounts};

const WAIT: Duration = Duration::from_secs(1800);

/// Starts an engine on `cache` (sharing through `redis` if given), publishes the catalog and
/// waits for vectors: the report, what Redis answered, and start-to-hybrid time.
fn hybrid(
    cache: &Path,
    redis: Option<&str>,
    catalog: &Arc<Catalog>,
) -> (IndexReport, RedisCounts, Duration) {
    let started = Instant::now();
    let mut config = engine_config(Some(cache));
    config.redis = redis.map(|url| RedisConfig::at(vec![url.to_string()]));
    let engine = Engine::start(config).expect("engine starts");
    assert!(engine.model_error().is_none(), "{:?}", engine.model_error());
    let published = engine.publish(Arc::clone(catalog)).expect("publishes");
    let report = engine
        .wait_indexed(published.publication, WAIT)
        .expect("indexes");
    let elapsed = started.elapsed();
    assert!(
        report.failed_shards.is_empty(),
        "{:?}",
        report.failed_shards
    );
    let counts = engine.redis_counts().unwrap_or_default();
    (report, counts, elapsed)
}

/// Removes the saved graphs of a cache folder, keeping its vectors.
fn remove_graphs(cache: &Path) {
    for entry in std::fs::read_dir(cache)
        .expect("the cache folder")
        .flatten()
    {
        if entry.file_name() != "vectors.lmdb" {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn main() {
    let runs = std::env::var("WAYFINDER_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3usize)
        .max(1);
    let sdl =
        std::fs::read_to_string(schema_path("monolithic/github/schema.graphql")).expect("schema");
    let github = Arc::new(
        Catalog::from_sdl(&sdl, "github.graphql", CatalogOptions::default()).expect("loads"),
    );
    let redis = RedisServer::start();
    let url = redis.url();

    let first = temp_dir("fleet-cold");
    let (report, counts, cold) = hybrid(&first, Some(&url), &github);
    println!(
        "cold (empty store, empty Redis)    {:.2} s, {} texts embedded, {} written to Redis",
        cold.as_secs_f64(),
        report.embedded,
        counts.written
    );
    let keys = redis.keys("wayfinder:vectors:*").len();
    println!(
        "Redis after github                  {:.1} MiB used_memory, {keys} vector keys",
        redis.used_memory() as f64 / (1 << 20) as f64
    );
    let _ = std::fs::remove_dir_all(&first);

    let (mut joining, mut pulled, mut graphs, mut restarts) = (vec![], vec![], vec![], vec![]);
    for run in 0..runs {
        let cache = temp_dir(&format!("fleet-new-{run}"));
        let (report, counts, elapsed) = hybrid(&cache, Some(&url), &github);
        assert_eq!(report.embedded, 0, "a new replica embeds nothing");
        joining.push(elapsed);
        pulled.push(counts.bytes_read);

        remove_graphs(&cache);
        let (_, _, elapsed) = hybrid(&cache, None, &github);
        graphs.push(elapsed);

        let (_, _, elapsed) = hybrid(&cache, None, &github);
        restarts.push(elapsed);
        let _ = std::fs::remove_dir_all(&cache);
    }
    pulled.sort_unstable();
    println!(
        "new replica (empty store, Redis warm) {}  goal <= 10 s",
        seconds(&joining)
    );
    println!(
        "  pulled from Redis                 {:.1} MiB",
        pulled[pulled.len() / 2] as f64 / (1 << 20) as f64
    );
    println!("local vectors, graphs built        {}", seconds(&graphs));
    println!("restart (store and graphs warm)    {}", seconds(&restarts));
    println!(
        "new replica / cold: {:.3}; new replica / restart: {:.2}",
        quantile(&joining, 0.5).as_secs_f64() / cold.as_secs_f64(),
        quantile(&joining, 0.5).as_secs_f64() / quantile(&restarts, 0.5).as_secs_f64()
    );
}
