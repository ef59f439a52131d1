//! `wayfinder-router`: the Apollo Router with the `wayfinder.search` plugin compiled in.
//! It takes the router's own flags (`--config`, `--supergraph`, `--hot-reload`, `--dev`, ...).

// Linking the library registers the plugin (its `register_plugin!` lives there).
use wayfinder_plugin as _;

use std::time::Duration;

/// Longest the router waits at exit for calls in flight inside ONNX Runtime.
const RUNTIME_EXIT_WAIT: Duration = Duration::from_secs(30);

fn main() -> anyhow::Result<()> {
    let result = apollo_router::main();
    // The engine lives in a static and is never dropped, so its embedding threads may still
    // be loading or running a session: they must leave ONNX Runtime before the exit handlers
    // tear it down.
    wayfinder_workers::close_runtime(RUNTIME_EXIT_WAIT);
    result
}
