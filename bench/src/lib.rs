//! Shared helpers of Wayfinder's benchmarks: timing statistics (medians and percentiles of repeated runs, since the machine is shared and noisy). The
//! shared schemas are found through `wayfinder_tests::schema_path`.

use std::time::Duration;

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
