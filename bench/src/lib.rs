//! Shared helpers of Wayfinder's benchmarks: where the shared schemas are, and timing
//! statistics (medians and percentiles of repeated runs, since the machine is shared and noisy).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A path under `shared/eval/schemas/` (`$WAYFINDER_SHARED` or `../shared` beside the repo).
pub fn schema_path(relative: &str) -> PathBuf {
    let shared = std::env::var_os("WAYFINDER_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    shared.join("eval/schemas").join(relative)
}

/// The `q`-quantile (0.5 = median) of some durations, by nearest rank.
pub fn quantile(samples: &[Duration], q: f64) -> Duration {
    assert!(!samples.is_empty(), "no samples");
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[rank]
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}
