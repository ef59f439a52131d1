//! Shared helpers of Wayfinder's benchmarks: timing statistics (medians and percentiles of repeated runs, since the machine is shared and noisy), and the
//! release router the HTTP benches start. The shared schemas are found through
//! `wayfinder_tests::schema_path`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use wayfinder_supergraph::Catalog;
use wayfinder_tests::repo_path;
use wayfinder_tests::router::{free_port, RouterProcess};

/// The router binary the HTTP benches run: `$WAYFINDER_ROUTER`, or the release build, which
/// `script` builds.
pub fn router_binary(script: &str) -> PathBuf {
    let binary = std::env::var_os("WAYFINDER_ROUTER")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("target/release/wayfinder-router"));
    assert!(
        binary.is_file(),
        "{} is missing: build it with `cargo build --release --locked -p wayfinder-plugin --bin wayfinder-router` ({script} does)",
        binary.display()
    );
    binary
}

/// A router with its own temporary folder (configuration, log), removed when done.
pub struct BenchRouter {
    pub process: RouterProcess,
    dir: PathBuf,
}

impl BenchRouter {
    /// Starts `binary` on `supergraph` with `config` (JSON is YAML) plus a listen address.
    pub async fn start(binary: &Path, name: &str, supergraph: &Path, mut config: Value) -> Self {
        let dir =
            std::env::temp_dir().join(format!("wayfinder-bench-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let port = free_port();
        config["supergraph"]["listen"] = json!(format!("127.0.0.1:{port}"));
        // An MCP endpoint shares the router's port.
        if let Some(mcp) = config.pointer_mut("/plugins/wayfinder.search/mcp") {
            mcp["listen"] = json!(format!("127.0.0.1:{port}"));
        }
        config["health_check"] = json!({ "enabled": false });
        config["homepage"] = json!({ "enabled": false });
        let config_path = dir.join("router.yaml");
        std::fs::write(&config_path, config.to_string()).expect("writes the configuration");
        let process = RouterProcess::start(
            binary,
            port,
            &config_path,
            supergraph,
            &[],
            dir.join("router.log"),
        )
        .await;
        BenchRouter { process, dir }
    }
}

impl Drop for BenchRouter {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Which sections of a bench run: `cargo bench --bench NAME -- WORD...` runs those whose name
/// contains a word; no word, all of them.
pub struct Sections(Vec<String>);

impl Sections {
    pub fn from_args() -> Self {
        Sections(
            std::env::args()
                .skip(1)
                .filter(|a| !a.starts_with("--"))
                .collect(),
        )
    }

    pub fn runs(&self, section: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|word| section.contains(word.as_str()))
    }
}

/// The `q`-quantile (0.5 = median) of some durations, by nearest rank.
pub fn quantile(samples: &[Duration], q: f64) -> Duration {
    assert!(!samples.is_empty(), "no samples");
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[rank]
}

/// Median, min and max of `samples` in seconds, with their count.
pub fn seconds(samples: &[Duration]) -> String {
    format!(
        "median {:.2} s (min {:.2}, max {:.2}, n={})",
        quantile(samples, 0.5).as_secs_f64(),
        quantile(samples, 0.0).as_secs_f64(),
        quantile(samples, 1.0).as_secs_f64(),
        samples.len()
    )
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// "p50 X ms  p99 Y ms (n=N)" of some latencies.
pub fn p50_p99(samples: &[Duration]) -> String {
    format!(
        "p50 {:>7.3} ms  p99 {:>7.3} ms  (n={})",
        millis(quantile(samples, 0.5)),
        millis(quantile(samples, 0.99)),
        samples.len()
    )
}

/// `count` distinct queries of three words drawn (seeded by `seed`) from the schema's
/// descriptions: texts no cache has seen, so each search embeds its query.
pub fn description_queries(catalog: &Catalog, count: usize, seed: u64) -> Vec<String> {
    let words: Vec<&str> = catalog
        .members()
        .iter()
        .filter_map(|m| m.description.as_deref())
        .flat_map(str::split_whitespace)
        .filter(|w| w.len() > 3 && w.chars().all(char::is_alphabetic))
        .collect();
    assert!(
        !words.is_empty(),
        "the schema has no descriptions to draw from"
    );
    let mut state = 0x2545_f491_4f6c_dd1du64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        words[(state % words.len() as u64) as usize]
    };
    (0..count)
        .map(|i| format!("{} {} {} {i}", next(), next(), next()))
        .collect()
}
