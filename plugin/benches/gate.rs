//! What the plugin adds to an ordinary request in process, without HTTP's noise (issue 42): for
//! a tenant that sees the whole API, the byte scan; for a restricted one, the tenant's header,
//! the body's JSON and the contract's verdict, remembered (`hit`) or parsed and validated
//! (`miss`: a text never seen). The operation is the router bench's typical one, on the
//! example supergraph. `cargo bench -p wayfinder-plugin --bench gate`.

use std::time::{Duration, Instant};

use http::HeaderMap;
use wayfinder_plugin::config::Tenants;
use wayfinder_plugin::{
    from_body, mentions_semantic_fields, Gate, Incoming, TenantResolver, Verdict,
};
use wayfinder_supergraph::{Catalog, CatalogOptions};

const SAMPLES: usize = 20_000;

fn body(name: &str) -> Vec<u8> {
    serde_json::json!({
        "query": format!("query {name}($isbn: ID!) {{ me {{ id displayName }} book(isbn: $isbn) {{ isbn title }} }}"),
        "variables": { "isbn": "978-0" },
    })
    .to_string()
    .into_bytes()
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let supergraph = wayfinder_tests::repo_path("examples/bookshop/supergraph.graphql");
    let catalog = Catalog::from_file(&supergraph, CatalogOptions::default()).expect("catalogs");
    let tenants: Tenants = serde_json::from_value(serde_json::json!({
        "default": "public",
        "contracts": { "public": { "exclude_tags": ["internal"] }, "staff": {} },
    }))
    .expect("tenants");
    let resolver = TenantResolver::new(&tenants).expect("a resolver");
    let filter = resolver.filter("public").expect("public").clone();
    let gate =
        Gate::new(&catalog, &catalog.contract(&filter), &Default::default()).expect("a gate");
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-wayfinder-tenant",
        "public".parse().expect("a header value"),
    );

    let restricted = |body: &[u8]| {
        let tenant = resolver.resolve(&headers).expect("a tenant");
        assert_eq!(tenant.name.as_deref(), Some("public"));
        let Ok(Incoming::Single(graphql)) = from_body(body) else {
            panic!("one request")
        };
        let query = graphql.query.expect("a query");
        assert!(matches!(gate.verdict(&query), Verdict::Allowed { .. }));
    };
    let typical = body("Ordinary");
    let misses: Vec<Vec<u8>> = (0..SAMPLES)
        .map(|i| body(&format!("Ordinary{i}")))
        .collect();
    let time = |run: &dyn Fn(usize)| -> Duration {
        p50((0..SAMPLES)
            .map(|i| {
                let started = Instant::now();
                run(i);
                started.elapsed()
            })
            .collect())
    };
    // Warm-up: allocator, caches, the typical text's verdict.
    for _ in 0..1000 {
        restricted(&typical);
    }
    let whole = time(&|_| assert!(!mentions_semantic_fields(&typical)));
    let hit = time(&|_| restricted(&typical));
    let miss = time(&|i| restricted(&misses[i]));
    println!(
        "whole API (byte scan)           p50 {:>8.1} µs",
        whole.as_secs_f64() * 1e6
    );
    println!(
        "restricted, verdict remembered  p50 {:>8.1} µs  (added {:.1} µs)",
        hit.as_secs_f64() * 1e6,
        (hit.saturating_sub(whole)).as_secs_f64() * 1e6
    );
    println!(
        "restricted, text never seen     p50 {:>8.1} µs  (added {:.1} µs)",
        miss.as_secs_f64() * 1e6,
        (miss.saturating_sub(whole)).as_secs_f64() * 1e6
    );
}
