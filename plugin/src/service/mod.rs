//! The plugin instance, the hub a request re-enters: built per supergraph and configuration
//! ([`Instance::new`]), it takes every request in `router_service` (the router would reject
//! `__search` when it validates the operation, which happens after this hook). A request that
//! does not mention the new fields, from a tenant whose contract hides nothing, goes on
//! untouched; a restricted tenant's is checked against its contract
//! ([`crate::tenancy::admission`]) and goes on as sent when allowed; the rest goes to
//! [`dispatch`], request by request, and what the plugin answers to [`semantic`]: parsed,
//! checked against the plugin's own limits (the router's limits and introspection setting
//! never see it), answered, and what remains of a mixed operation forwarded to the router
//! ([`crate::request::relay`]) and merged.

mod dispatch;
mod persisted;
mod semantic;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use apollo_router::services::router;
use bytes::Bytes;
use http::Method;
use http_body_util::BodyExt;
use tower::BoxError;
use tracing::Instrument;
use wayfinder_supergraph::{Catalog, Contract};
use wayfinder_workers::index::visibility::Visibility;
use wayfinder_workers::insights::Insights;
use wayfinder_workers::learned::{Learned, Learner};
use wayfinder_workers::Engine;

use crate::config::{Config, Enforce};
use crate::error::{Code, RequestError};
use crate::metrics::Metrics;
use crate::prompts::{Prompts, PromptsError};
use crate::request::definitions::{MadeExamples, Scope};
use crate::request::graphql::{self, Incoming};
use crate::request::operation::{SemanticSchema, SemanticSchemaError};
use crate::request::relay::{respond, through, Inner, Reply};
use crate::tenancy::admission::{runs_as_sent, scrubbed};
use crate::tenancy::gate::{Gate, GateError};
use crate::tenancy::quota::Quotas;
use crate::tenancy::tenant::{TenantResolver, TenantsError};
use dispatch::Outcome;
use persisted::Persisted;

/// One plugin instance: a configuration and the supergraph it was built with.
pub struct Instance {
    pub config: Config,
    pub engine: Arc<Engine>,
    pub schema: Arc<SemanticSchema>,
    pub catalog: Arc<Catalog>,
    pub tenants: Option<TenantResolver>,
    /// Each configured contract over `catalog`, for `__definitions`.
    pub contracts: std::collections::HashMap<String, Arc<Contract>>,
    /// What each contract that hides something lets its tenants introspect and run; empty
    /// with `tenants.enforce: search_only`.
    pub gates: std::collections::HashMap<String, Arc<Gate>>,
    /// The router's introspection setting, learnt from the router on first use.
    pub introspection: tokio::sync::OnceCell<bool>,
    pub metrics: Metrics,
    /// Learns examples from the operations the router runs (`examples.from_traffic`).
    pub learner: Option<Arc<Learner>>,
    /// What agents could not find, when a tenant is opted in.
    pub insights: Option<Arc<Insights>>,
    /// The prompt templates of the `prompts` folder.
    pub prompts: Prompts,
    /// Each tenant's token bucket, for those with a `rate_limit`.
    pub quotas: Quotas,
    persisted: Persisted,
    /// The examples made so far, per tenant (`""`: a router without tenants).
    made: Mutex<HashMap<String, Arc<MadeExamples>>>,
    /// Introspections answered from a contract at once: one per core, the rest wait.
    introspecting: tokio::sync::Semaphore,
}

/// One tenant's view of the API.
#[derive(Clone)]
pub struct View {
    /// `None` without `tenants`.
    pub tenant: Option<String>,
    /// What its operations are validated against: its contract's API schema with the new
    /// fields (the whole API's unless the contract is enforced beyond search).
    pub schema: Arc<SemanticSchema>,
    /// What its contract lets it see.
    pub scope: Scope,
}

/// Why an instance cannot be built from its configuration and catalog.
#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    #[error(transparent)]
    SemanticSchema(#[from] SemanticSchemaError),
    #[error(transparent)]
    Tenants(#[from] TenantsError),
    #[error(transparent)]
    Prompts(#[from] PromptsError),
    #[error("tenants.contracts.{name}: {source}")]
    Contract {
        name: String,
        #[source]
        source: GateError,
    },
}

impl Instance {
    pub fn new(
        config: Config,
        engine: Arc<Engine>,
        catalog: Arc<Catalog>,
        learner: Option<Arc<Learner>>,
        insights: Option<Arc<Insights>>,
    ) -> Result<Self, InstanceError> {
        let schema = Arc::new(SemanticSchema::new(catalog.api_schema())?);
        let tenants = config
            .tenants
            .as_ref()
            .map(TenantResolver::new)
            .transpose()?;
        let contracts: std::collections::HashMap<String, Arc<Contract>> = tenants
            .iter()
            .flat_map(|t| t.contract_names().map(|name| (name, t.filter(name))))
            .filter_map(|(name, filter)| {
                let filter = filter.filter(|f| !f.is_unfiltered())?;
                Some((name.to_string(), Arc::new(catalog.contract(filter))))
            })
            .collect();
        let gates = match config.tenants.as_ref().map(|t| t.enforce) {
            Some(Enforce::All) => contracts
                .iter()
                .map(|(name, contract)| {
                    let gate = Gate::new(&catalog, contract, &config.limits).map_err(|source| {
                        InstanceError::Contract {
                            name: name.clone(),
                            source,
                        }
                    })?;
                    Ok((name.clone(), Arc::new(gate)))
                })
                .collect::<Result<_, InstanceError>>()?,
            Some(Enforce::SearchOnly) => {
                tracing::warn!(
                    "wayfinder.search: tenants.enforce is search_only: contracts filter \
                     __search and __definitions only; standard introspection and operations \
                     of every tenant see the whole API"
                );
                Default::default()
            }
            None => Default::default(),
        };
        let quotas = Quotas::new(config.tenants.as_ref());
        let prompts = match &config.prompts {
            Some(dir) => {
                let names: Option<std::collections::BTreeSet<String>> = config
                    .tenants
                    .as_ref()
                    .map(|t| t.contracts.keys().cloned().collect());
                Prompts::load(dir, names.as_ref())?
            }
            None => Prompts::default(),
        };
        let metrics = Metrics::new(match &config.tenants {
            Some(tenants) => tenants.contracts.keys().cloned().collect(),
            None => vec![String::new()],
        });
        Ok(Instance {
            quotas,
            config,
            engine,
            schema,
            catalog,
            tenants,
            contracts,
            gates,
            introspection: tokio::sync::OnceCell::new(),
            metrics,
            learner,
            insights,
            prompts,
            persisted: Persisted::new(),
            made: Mutex::default(),
            introspecting: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(1, |n| n.get()),
            ),
        })
    }

    /// Handles one HTTP request.
    pub async fn handle(
        self: Arc<Self>,
        request: router::Request,
        inner: Inner,
    ) -> Result<router::Response, BoxError> {
        self.metrics.serving();
        let context = request.context;
        let (parts, body) = request.router_request.into_parts();
        let bytes = if parts.method == Method::GET {
            Bytes::new()
        } else {
            body.collect().await?.to_bytes()
        };
        let query_string = parts.uri.query().unwrap_or("").to_string();
        let text: &[u8] = if parts.method == Method::GET {
            query_string.as_bytes()
        } else {
            &bytes
        };
        let gate = match self.gate(&parts.headers) {
            Ok(gate) => gate,
            Err(error) => {
                let reply = Reply::error(&error);
                self.metrics.record_refusals(String::new, &reply.body);
                return respond(reply, context);
            }
        };
        let persisted = graphql::mentions_persisted_query(text) && !self.persisted.is_empty();
        let semantic = graphql::mentions_semantic_fields(text);
        if gate.is_none() && !semantic && !persisted {
            let request = http::Request::from_parts(parts, router::body::from_bytes(bytes));
            return through(inner, router::Request::from((request, context))).await;
        }
        let incoming = if parts.method == Method::GET {
            graphql::from_query_string(&query_string).map(Incoming::Single)
        } else {
            graphql::from_body(&bytes)
        };
        // A restricted tenant's ordinary operations are only checked, and then the router
        // batches and answers them as it would anyone's (one context per entry, its `batching`
        // setting), with nothing more on their way: no span, no state of the plugin's.
        if let (Some(gate), Ok(incoming), false) = (&gate, &incoming, semantic || persisted) {
            if runs_as_sent(gate, incoming) {
                let request = http::Request::from_parts(parts, router::body::from_bytes(bytes));
                return through(inner, router::Request::from((request, context))).await;
            }
        }

        let span = tracing::info_span!(
            "wayfinder.request",
            tenant = tracing::field::Empty,
            hits = tracing::field::Empty,
            generation = tracing::field::Empty,
            lexical_only = tracing::field::Empty,
            semantic_fields = tracing::field::Empty,
        );
        let this = Arc::clone(&self);
        async move {
            let reply = match incoming {
                Err(error) => Reply::error(&error),
                Ok(Incoming::Single(graphql)) => {
                    match this
                        .reply(graphql, &parts, &context, &inner, gate.as_ref())
                        .await
                    {
                        Outcome::Answered(reply) => reply,
                        Outcome::PassThrough(_, scrub) => {
                            let request =
                                http::Request::from_parts(parts, router::body::from_bytes(bytes));
                            let response =
                                through(inner, router::Request::from((request, context))).await?;
                            return match scrub {
                                None => Ok(response),
                                Some(scrub) => scrubbed(response, &scrub).await,
                            };
                        }
                    }
                }
                Ok(Incoming::Batch(entries)) => {
                    this.reply_batch(entries, &parts, &context, &inner, gate.as_ref())
                        .await
                }
            };
            this.metrics
                .record_refusals(|| this.tenant_label(&parts.headers), &reply.body);
            respond(reply, context)
        }
        .instrument(span)
        .await
    }

    /// The gate of the request's tenant when its contract hides something and is enforced
    /// beyond search. With gates, a request must name a known tenant: passing an unknown one
    /// through would show it the whole API.
    fn gate(&self, headers: &http::HeaderMap) -> Result<Option<Arc<Gate>>, RequestError> {
        let Some(tenants) = self.tenants.as_ref().filter(|_| !self.gates.is_empty()) else {
            return Ok(None);
        };
        let tenant = tenants.resolve(headers)?;
        Ok(tenant
            .name
            .as_ref()
            .and_then(|name| self.gates.get(name))
            .cloned())
    }

    /// The tenant `headers` name, as a metric's label: a configured tenant, or empty.
    fn tenant_label(&self, headers: &http::HeaderMap) -> String {
        self.tenants
            .as_ref()
            .and_then(|tenants| tenants.resolve(headers).ok()?.name)
            .unwrap_or_default()
    }

    /// What the tenant named `tenant` sees.
    fn scope(&self, tenant: Option<&str>) -> Scope {
        // Tenants are a configured set, so this map stays as small; a tenant's name is copied
        // only the first time.
        let made = {
            let name = tenant.unwrap_or("");
            let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
            match made.get(name) {
                Some(made) => Arc::clone(made),
                None => Arc::clone(made.entry(name.to_string()).or_default()),
            }
        };
        Scope {
            catalog: Arc::clone(&self.catalog),
            visibility: Visibility::of(tenant.and_then(|name| self.contracts.get(name)).cloned()),
            learned: self.learned(),
            made,
        }
    }

    /// The examples learned from traffic, when they are.
    pub fn learned(&self) -> Option<Arc<Learned>> {
        self.learner
            .as_ref()
            .map(|learner| Arc::clone(learner.learned()))
    }

    /// The tenant a request with `headers` acts for, and what it sees (for the MCP tools).
    pub fn view(&self, headers: &http::HeaderMap) -> Result<View, RequestError> {
        let tenant = match &self.tenants {
            None => None,
            Some(tenants) => tenants.resolve(headers)?.name,
        };
        let gate = tenant.as_ref().and_then(|name| self.gates.get(name));
        Ok(View {
            schema: Arc::clone(gate.map_or(&self.schema, |gate| &gate.semantic)),
            scope: self.scope(tenant.as_deref()),
            tenant,
        })
    }

    /// Runs `work` (CPU-bound schema walking) on a blocking thread, as one of the
    /// introspections answered at once (one per core; the rest wait).
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, RequestError> {
        let _permit = self
            .introspecting
            .acquire()
            .await
            .map_err(|_| RequestError::new(Code::Internal, "the plugin is shutting down"))?;
        tokio::task::spawn_blocking(work).await.map_err(|_| {
            RequestError::new(
                Code::Internal,
                "a schema task failed (see the router's log)",
            )
        })
    }
}

/// Who sent a request, as far as its headers tell (its token, tenant, client name, MCP session,
/// forwarding address), hashed: the searches and operations of one client, for insights. Never
/// stored or exported, only compared.
pub(crate) fn client_key(headers: &http::HeaderMap) -> u64 {
    use std::hash::{Hash, Hasher};
    const IDENTITY: [&str; 7] = [
        "authorization",
        "x-wayfinder-tenant",
        "apollographql-client-name",
        "mcp-session-id",
        "x-forwarded-for",
        "forwarded",
        "user-agent",
    ];
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for name in IDENTITY {
        for value in headers.get_all(name) {
            value.as_bytes().hash(&mut hasher);
        }
    }
    hasher.finish()
}
