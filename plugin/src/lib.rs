//! `wayfinder.search`: an Apollo Router plugin that answers the proposed semantic-introspection
//! fields, `__search(query, first, after, minScore)` and `__definitions(coordinates)`, at the
//! gateway.
//!
//! Data flows one way: the router hands [`Search::new`] the supergraph (at start and on every
//! reload) -> a catalog ([`wayfinder_supergraph`]) -> the engine, shared across reloads
//! (`runtime`), which indexes it in the background -> per request (`service`): HTTP ->
//! GraphQL requests (`request::graphql`) -> the tenant (`tenancy::tenant`) and what its
//! contract lets it run and introspect (`tenancy::gate`) -> a checked, split operation
//! (`request::operation`) -> answers (`request::answer`, `request::definitions`) merged
//! with the router's. The `mcp` endpoint's tools reach the same path through the router's own
//! HTTP entrance; the `insights` view lists what agents could not find.
//! Spans and `metrics` leave through the router's telemetry.

pub mod config;
pub(crate) mod error;
pub(crate) mod insights;
pub(crate) mod mcp;
pub(crate) mod metrics;
pub(crate) mod prompts;
pub(crate) mod request;
pub(crate) mod runtime;
pub(crate) mod service;
pub(crate) mod tenancy;

use std::sync::Arc;

use apollo_router::layers::ServiceBuilderExt;
use apollo_router::plugin::{Plugin, PluginInit};
use apollo_router::register_plugin;
use apollo_router::services::{router, supergraph};
use apollo_router::{Endpoint, ListenAddr};
use multimap::MultiMap;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use wayfinder_supergraph::{Catalog, CatalogError, CatalogOptions};
use wayfinder_workers::learned;

pub use config::Config;
// What the in-process contract bench (plugin/benches/gate.rs) drives, named at the root so the
// modules behind it can move.
pub use request::graphql::{from_body, mentions_semantic_fields, GraphqlRequest, Incoming};
use runtime::RuntimeError;
use service::{Instance, InstanceError};
pub use tenancy::gate::{Gate, Verdict};
pub use tenancy::tenant::{Tenant, TenantResolver};

/// Why the plugin cannot be built for a supergraph; the router stays on its previous pipeline.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error("wayfinder.search: cannot catalog the supergraph: {0}")]
    Catalog(#[source] CatalogError),
    #[error("wayfinder.search: cannot start the engine: {0}")]
    Engine(#[source] RuntimeError),
    #[error("wayfinder.search: {0}")]
    Instance(#[source] InstanceError),
    #[error("wayfinder.search: {0}")]
    Insights(#[source] wayfinder_workers::insights::InsightsConfigError),
}

/// The plugin; `None` inside when `enabled: false`.
pub struct Search {
    instance: Option<Arc<Instance>>,
    mcp: Option<mcp::Server>,
}

#[async_trait::async_trait]
impl Plugin for Search {
    type Config = Config;

    async fn new(init: PluginInit<Config>) -> Result<Self, BoxError> {
        let config = init.config;
        config.check()?;
        if !config.enabled {
            if config.mcp.enabled {
                tracing::warn!("wayfinder.search: enabled is false, so mcp.enabled is ignored");
            }
            return Ok(Search {
                instance: None,
                mcp: None,
            });
        }
        let sdl = Arc::clone(&init.supergraph_sdl);
        // Cataloguing, contracts and the lexical index take a fraction of a second for large
        // schemas: off the async threads. An error leaves the router on its previous pipeline.
        // The router samples a span by the current one; its span for this plugin's creation
        // lets the indexing trace (`runtime`) be sampled and linked to it.
        let span = tracing::Span::current();
        let instance = tokio::task::spawn_blocking(move || -> Result<Instance, StartError> {
            let _entered = span.enter();
            let catalog = Catalog::from_sdl(&sdl, "supergraph", CatalogOptions::default())
                .map_err(StartError::Catalog)?;
            for warning in catalog.warnings() {
                tracing::warn!(%warning, "wayfinder.search: supergraph");
            }
            let catalog = Arc::new(catalog);
            let engine_config = config.engine();
            let engine =
                runtime::engine_serving(&engine_config, &catalog).map_err(StartError::Engine)?;
            let learner = runtime::learner(
                &config.examples,
                engine_config.cache_dir.as_deref(),
                engine_config.redis.as_ref(),
            );
            if let Some(learner) = &learner {
                learner.serve(&catalog);
            }
            let insights = runtime::insights(
                &config.insights,
                engine_config.cache_dir.as_deref(),
                engine_config.redis.as_ref(),
            )
            .map_err(StartError::Insights)?;
            Instance::new(config, engine, catalog, learner, insights).map_err(StartError::Instance)
        })
        .await??;
        metrics::register_gauges();
        let instance = Arc::new(instance);
        let mcp = instance
            .config
            .mcp
            .enabled
            .then(|| mcp::Server::new(Arc::clone(&instance)))
            .transpose()?;
        Ok(Search {
            instance: Some(instance),
            mcp,
        })
    }

    fn router_service(&self, service: router::BoxService) -> router::BoxService {
        let Some(instance) = &self.instance else {
            return service;
        };
        let instance = Arc::clone(instance);
        let inner = ServiceBuilder::new().buffered().service(service);
        ServiceBuilder::new()
            .service_fn(move |request: router::Request| {
                Arc::clone(&instance).handle(request, inner.clone())
            })
            .boxed()
    }

    /// With `examples.from_traffic`, offers every operation whose first response has no
    /// error to the learner; the response itself is passed on unchanged and never waits. With
    /// `insights`, tells it the client ran an operation.
    fn supergraph_service(&self, service: supergraph::BoxService) -> supergraph::BoxService {
        let Some(instance) = &self.instance else {
            return service;
        };
        // An operation the router runs ends its client's search for insights: it found
        // something to run.
        let service = match instance.insights.clone() {
            None => service,
            Some(insights) => ServiceBuilder::new()
                .map_request(move |request: supergraph::Request| {
                    insights
                        .ran_operation(service::client_key(request.supergraph_request.headers()));
                    request
                })
                .service(service)
                .boxed(),
        };
        let Some(learner) = instance.learner.clone() else {
            return service;
        };
        let catalog = Arc::clone(&instance.catalog);
        ServiceBuilder::new()
            .map_future_with_request_data(
                |request: &supergraph::Request| {
                    let body = request.supergraph_request.body();
                    body.query
                        .as_ref()
                        .filter(|query| query.len() <= learned::MAX_OFFERED_BYTES)
                        .map(|query| (query.clone(), body.operation_name.clone()))
                },
                move |operation: Option<(String, Option<String>)>, future| {
                    let learner = Arc::clone(&learner);
                    let catalog = Arc::clone(&catalog);
                    async move {
                        let response: supergraph::Response = future.await?;
                        let mut operation = operation;
                        Ok::<_, BoxError>(response.map_stream(move |chunk| {
                            // The first response decides; the text moves to the learner.
                            if let Some((text, name)) = operation.take() {
                                if chunk.errors.is_empty() && chunk.data.is_some() {
                                    learner.offer(&catalog, text, name);
                                }
                            }
                            chunk
                        }))
                    }
                },
            )
            .service(service)
            .boxed()
    }

    fn web_endpoints(&self) -> MultiMap<ListenAddr, Endpoint> {
        let mut endpoints = MultiMap::new();
        if let Some(mcp) = &self.mcp {
            let (listen, endpoint) = mcp.endpoint();
            endpoints.insert(listen, endpoint);
        }
        if let Some(instance) = &self.instance {
            if let (Some(view), Some(insights)) =
                (&instance.config.insights.view, &instance.insights)
            {
                let (listen, endpoint) = insights::endpoint(view, Arc::clone(insights));
                endpoints.insert(listen, endpoint);
            }
        }
        endpoints
    }
}

register_plugin!("wayfinder", "search", Search);
