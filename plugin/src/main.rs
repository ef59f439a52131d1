//! `wayfinder-router`: the Apollo Router with the `wayfinder.search` plugin compiled in.
//! It takes the router's own flags (`--config`, `--supergraph`, `--hot-reload`, `--dev`, ...).

// Linking the library registers the plugin (its `register_plugin!` lives there).
use wayfinder_plugin as _;

fn main() -> anyhow::Result<()> {
    let result = apollo_router::main();
    // The engine lives in a static and is never dropped, so its embedding threads may still
    // be loading or running a session: they must leave ONNX Runtime before the exit handlers
    // tear it down.
    wayfinder_workers::close_runtime(wayfinder_workers::EXIT_WAIT);
    result
}
