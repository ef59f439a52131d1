//! `wayfinder-router`: the Apollo Router with the `wayfinder.search` plugin compiled in.
//! It takes the router's own flags (`--config`, `--supergraph`, `--hot-reload`, `--dev`, ...).

// Linking the library registers the plugin (its `register_plugin!` lives there).
use wayfinder_plugin as _;

fn main() -> anyhow::Result<()> {
    apollo_router::main()
}
