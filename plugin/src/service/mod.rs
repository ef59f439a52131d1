//! The request path, in `router_service` (the router would reject `__search` when it validates
//! the operation, which happens after this hook): a request that does not mention the new
//! fields, from a tenant whose contract hides nothing, goes on untouched; a restricted tenant's
//! is checked against its contract ([`crate::tenancy::gate`]) and goes on as sent when allowed; one that
//! uses the new fields (or a restricted tenant's standard introspection) is parsed, checked
//! against the plugin's own limits (the router's limits and introspection setting never see
//! it), answered, and what remains of a mixed operation is forwarded to the router and merged.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use apollo_router::services::router;
use apollo_router::Context;
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use lru::LruCache;
use serde_json_bytes::{json, Value};
use sha2::{Digest, Sha256};
use tower::BoxError;
use tracing::Instrument;
use wayfinder_supergraph::{Catalog, Contract};
use wayfinder_workers::index::visibility::Visibility;
use wayfinder_workers::Engine;

use crate::config::{Config, Enforce};
use crate::error::{Code, RequestError};
use crate::metrics::Metrics;
use crate::request::answer::{self, Answering, RequestErrorOrField};
use crate::request::definitions::Scope;
use crate::request::graphql::{self, GraphqlRequest, Incoming};
use crate::request::operation::{self, Parsed, Prepared, SemanticSchema, SemanticSchemaError};
use crate::request::relay::{self, probe_introspection, respond, through, Inner, Reply};
use crate::tenancy::admission::{admit, runs_as_sent, scrubbed, Admitted, Scrub};
use crate::tenancy::gate::{Gate, GateError};
use crate::tenancy::quota::Quotas;
use crate::tenancy::tenant::{Tenant, TenantResolver, TenantsError};

/// Operations remembered by their persisted-query hash (those using the new fields, and those
/// of restricted tenants).
const PERSISTED_KEPT: usize = 1024;

/// Longer operation texts are not remembered by their hash (memory stays bounded): a client
/// naming one by its hash alone is asked for the text again.
const PERSISTED_MAX_CHARS: usize = 64 * 1024;

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
    /// Each tenant's token bucket, for those with a `rate_limit`.
    pub quotas: Quotas,
    persisted: Mutex<LruCache<String, Arc<str>>>,
    /// Operation texts restricted tenants sent with a persisted-query hash.
    gated_persisted: Mutex<LruCache<String, Arc<str>>>,
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

/// What to do with one GraphQL request.
enum Outcome {
    Answered(Reply),
    /// Not the plugin's: the router answers it (as received, for a request of its own), and
    /// its data is scrubbed of values the tenant's contract hides when needed.
    PassThrough(GraphqlRequest, Option<Scrub>),
}

/// Why an instance cannot be built from its configuration and catalog.
#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    #[error(transparent)]
    SemanticSchema(#[from] SemanticSchemaError),
    #[error(transparent)]
    Tenants(#[from] TenantsError),
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
        let kept = || {
            Mutex::new(LruCache::new(
                NonZeroUsize::new(PERSISTED_KEPT).unwrap_or(NonZeroUsize::MIN),
            ))
        };
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
            metrics: Metrics::default(),
            persisted: kept(),
            gated_persisted: kept(),
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
            Err(error) => return respond(Reply::error(&error), context),
        };
        let persisted = graphql::mentions_persisted_query(text) && !self.persisted_is_empty();
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

    fn persisted_is_empty(&self) -> bool {
        self.persisted.lock().map_or(true, |p| p.is_empty())
    }

    async fn reply_batch(
        &self,
        entries: Vec<Result<GraphqlRequest, RequestError>>,
        parts: &http::request::Parts,
        context: &Context,
        inner: &Inner,
        gate: Option<&Arc<Gate>>,
    ) -> Reply {
        let max = self.config.limits.max_batch;
        if entries.len() > max {
            return Reply::error(&RequestError::new(
                Code::BatchTooLarge,
                format!(
                    "the batch has {} operations; at most {max} are accepted",
                    entries.len()
                ),
            ));
        }
        let mut replies = Vec::with_capacity(entries.len());
        for entry in entries {
            let reply = match entry {
                Err(error) => Reply::error(&error),
                Ok(graphql) => match self.reply(graphql, parts, context, inner, gate).await {
                    Outcome::Answered(reply) => reply,
                    Outcome::PassThrough(graphql, scrub) => {
                        relay::send(graphql, parts, context, inner)
                            .await
                            .map(|mut reply| {
                                if let Some(scrub) = scrub {
                                    scrub.data(&mut reply.body);
                                }
                                reply
                            })
                            .unwrap_or_else(|error| Reply::error(&error))
                    }
                },
            };
            replies.push(reply.body);
        }
        Reply {
            status: StatusCode::OK,
            body: Value::Array(replies),
        }
    }

    /// Answers one GraphQL request, or hands it back when the router should.
    async fn reply(
        &self,
        mut graphql: GraphqlRequest,
        parts: &http::request::Parts,
        context: &Context,
        inner: &Inner,
        gate: Option<&Arc<Gate>>,
    ) -> Outcome {
        let hash = graphql.persisted_query_hash().map(str::to_ascii_lowercase);
        let query: Arc<str> = match (graphql.query.take(), &hash) {
            (Some(query), Some(hash)) => {
                if hex::encode(Sha256::digest(query.as_bytes())) != *hash {
                    return Outcome::Answered(Reply::error(&RequestError::new(
                        Code::PersistedQueryHashMismatch,
                        "the persisted query's sha256Hash does not match its query",
                    )));
                }
                Arc::from(query)
            }
            (Some(query), None) => Arc::from(query),
            (None, Some(hash)) => {
                let lookup = |kept: &Mutex<LruCache<String, Arc<str>>>| {
                    kept.lock().ok().and_then(|mut p| p.get(hash).cloned())
                };
                let known = lookup(&self.persisted)
                    .or_else(|| gate.and_then(|_| lookup(&self.gated_persisted)));
                match (known, gate) {
                    (Some(query), _) => query,
                    (None, None) => return Outcome::PassThrough(graphql, None),
                    // The text is needed to check it: the client sends it again (the
                    // automatic persisted queries protocol).
                    (None, Some(_)) => {
                        return Outcome::Answered(Reply::error(&RequestError::new(
                            Code::PersistedQueryNotFound,
                            "PersistedQueryNotFound",
                        )))
                    }
                }
            }
            (None, None) => return Outcome::PassThrough(graphql, None),
        };
        let Admitted {
            introspection: local_introspection,
            scrub,
        } = match gate.map(|gate| admit(gate, &query, &graphql)) {
            None => Admitted::default(),
            Some(Err(reply)) => return Outcome::Answered(reply),
            Some(Ok(admitted)) => {
                if let Some(hash) = hash.as_ref().filter(|_| query.len() <= PERSISTED_MAX_CHARS) {
                    if let Ok(mut kept) = self.gated_persisted.lock() {
                        kept.put(hash.clone(), Arc::clone(&query));
                    }
                }
                admitted
            }
        };
        if !local_introspection && !graphql::mentions_semantic_fields(query.as_bytes()) {
            graphql.query = Some(query.to_string());
            return Outcome::PassThrough(graphql, scrub);
        }
        let prepared = match operation::prepare(
            gate.map_or(&self.schema, |gate| &gate.semantic),
            &query,
            graphql.operation_name.as_deref(),
            &graphql.variables,
            local_introspection,
            &self.config.limits,
        ) {
            Err(refusal) => return Outcome::Answered(Reply::refused(&refusal)),
            Ok(Parsed::PassThrough) => {
                graphql.query = Some(query.to_string());
                return Outcome::PassThrough(graphql, scrub);
            }
            Ok(Parsed::Semantic(prepared)) => prepared,
        };
        if let Some(hash) = hash.filter(|_| query.len() <= PERSISTED_MAX_CHARS) {
            if let Ok(mut persisted) = self.persisted.lock() {
                persisted.put(hash, Arc::clone(&query));
            }
        }
        let mut reply = self
            .answer(prepared, graphql, parts, context, inner, gate)
            .await
            .unwrap_or_else(|error| Reply::error(&error));
        // The plugin's own part holds no value of the API's enums: the whole answer can be
        // scrubbed with the whole operation.
        if let Some(scrub) = scrub {
            scrub.data(&mut reply.body);
        }
        Outcome::Answered(reply)
    }

    async fn answer(
        &self,
        prepared: Prepared,
        graphql: GraphqlRequest,
        parts: &http::request::Parts,
        context: &Context,
        inner: &Inner,
        gate: Option<&Arc<Gate>>,
    ) -> Result<Reply, RequestError> {
        let span = tracing::Span::current();
        let tenant = match &self.tenants {
            None => Tenant {
                name: None,
                filter: Default::default(),
            },
            Some(tenants) => tenants.resolve(&parts.headers)?,
        };
        if let Some(name) = &tenant.name {
            span.record("tenant", name.as_str());
        }
        span.record("semantic_fields", prepared.semantic_fields);
        if prepared.introspection.is_some() {
            // As the router answers everyone else.
            if prepared.forwarded.is_some() {
                return Err(RequestError::new(
                    Code::MixedIntrospection,
                    "Mixed queries with both schema introspection and concrete fields are not \
                     supported yet: https://github.com/apollographql/router/issues/2789",
                ));
            }
            if !self.introspection_allowed(inner).await {
                return Err(RequestError::new(
                    Code::IntrospectionDisabled,
                    "introspection has been disabled",
                ));
            }
        }
        if prepared.semantic_fields > 0 && !self.introspection_allowed(inner).await {
            return Err(RequestError::new(
                Code::IntrospectionDisabled,
                "introspection has been disabled, and with it __search and __definitions",
            ));
        }
        if prepared.semantic_fields > self.config.limits.max_fields {
            return Err(RequestError::new(
                Code::TooManyFields,
                format!(
                    "the operation uses __search and __definitions {} times; at most {} are accepted",
                    prepared.semantic_fields, self.config.limits.max_fields
                ),
            ));
        }
        let checked = prepared
            .introspection
            .as_ref()
            .unwrap_or(&prepared.semantic);
        apollo_compiler::introspection::check_max_depth(&prepared.document, checked)
            .map_err(|e| RequestError::new(Code::DepthLimit, e.message().to_string()))?;
        if let Some(name) = tenant
            .name
            .as_ref()
            .filter(|_| prepared.semantic_fields > 0)
        {
            self.quotas.take(name, prepared.semantic_fields)?;
        }

        let forwarded = prepared
            .forwarded
            .as_ref()
            .map(|forwarded| relay::forward(forwarded, &graphql, parts, context, inner));
        let semantic = self.execute(&prepared, graphql.variables.clone(), &tenant, gate);
        let (answered, routed) = match forwarded {
            Some(forwarded) => {
                let (answered, routed) = tokio::join!(semantic, forwarded);
                (answered, Some(routed))
            }
            None => (semantic.await, None),
        };
        let answered = answered?;
        span.record("hits", answered.hits);
        if let Some(generation) = answered.generation {
            span.record("generation", generation);
            span.record("lexical_only", answered.lexical_only);
        }

        let mut errors: Vec<Value> = Vec::new();
        let mut request_error = None;
        for error in answered.errors {
            match error {
                RequestErrorOrField::Request(error) => {
                    errors.push(error.to_json());
                    request_error.get_or_insert(error.code);
                }
                RequestErrorOrField::Field(error) => {
                    errors.push(serde_json_bytes::to_value(&error).unwrap_or(Value::Null))
                }
            }
        }
        if let Some(code) = request_error {
            return Ok(Reply {
                status: code.status(),
                body: json!({ "errors": errors }),
            });
        }
        let router_data = match routed {
            None => None,
            Some(Err(error)) => return Err(error),
            Some(Ok(routed)) => {
                let Value::Object(mut body) = routed.body else {
                    return Err(RequestError::new(
                        Code::UnsupportedResponse,
                        "the router's answer to the rest of the operation is not a JSON object",
                    ));
                };
                if let Some(Value::Array(router_errors)) = body.remove("errors") {
                    errors.extend(router_errors);
                }
                match body.remove("data") {
                    // A request error on the router's side (its validation, for instance)
                    // means the operation as a whole did not run.
                    None => {
                        return Ok(Reply {
                            status: routed.status,
                            body: json!({ "errors": errors }),
                        })
                    }
                    Some(data) => Some(data),
                }
            }
        };
        let data = operation::merge_data(&prepared.response_keys, answered.data, router_data);
        let mut body = json!({ "data": data });
        if let Some(object) = body.as_object_mut() {
            if !errors.is_empty() {
                object.insert("errors", Value::Array(errors));
            }
            if answered.overloaded {
                object.insert(
                    "extensions",
                    json!({ "wayfinder": { "overloaded": true, "mode": "lexical" } }),
                );
            }
        }
        Ok(Reply {
            status: StatusCode::OK,
            body,
        })
    }

    /// Runs the plugin's part on the engine's background threads (it embeds, searches and
    /// walks the schema: milliseconds of CPU).
    async fn execute(
        &self,
        prepared: &Prepared,
        variables: graphql::JsonMap,
        tenant: &Tenant,
        gate: Option<&Arc<Gate>>,
    ) -> Result<answer::Answered, RequestError> {
        let introspection = gate.cloned().zip(prepared.introspection.clone());
        if prepared.semantic_fields == 0 {
            // Introspection alone: the engine's threads are for searches, which may be busy.
            let document = Arc::clone(&prepared.document);
            return self
                .blocking(move || {
                    let mut answered = answer::Answered {
                        data: Some(Value::Object(Default::default())),
                        ..Default::default()
                    };
                    introspect_into(&mut answered, introspection, &document, &variables);
                    answered
                })
                .await;
        }
        let schema = Arc::clone(gate.map_or(&self.schema, |gate| &gate.semantic));
        let document = Arc::clone(&prepared.document);
        let operation = Arc::clone(&prepared.semantic);
        let engine = Arc::clone(&self.engine);
        let limits = self.config.limits.clone();
        let filter = (!tenant.filter.is_unfiltered()).then(|| tenant.filter.clone());
        let definitions = self.scope(tenant.name.as_deref());
        let tenant = tenant.name.clone().unwrap_or_default();
        let metrics = self.metrics.clone();
        let span = tracing::Span::current();
        let (sender, answered) = tokio::sync::oneshot::channel();
        let queued = std::time::Instant::now();
        let job = move || {
            let _entered = span.enter();
            // Time spent waiting for a background thread counts against the search's wait.
            let mut limits = limits;
            limits.max_search_wait = limits.max_search_wait.saturating_sub(queued.elapsed());
            let mut answered = answer::execute(&Answering {
                schema: &schema,
                document: &document,
                operation: &operation,
                variables: &variables,
                engine: &engine,
                limits: &limits,
                filter: filter.as_ref(),
                definitions: &definitions,
                tenant: &tenant,
                metrics: &metrics,
            });
            introspect_into(&mut answered, introspection, &document, &variables);
            let _ = sender.send(answered);
        };
        // On the engine's low-priority threads: under a flood of searches, ordinary requests
        // keep the cores.
        self.engine.background().spawn(job).map_err(|full| {
            RequestError::new(
                Code::Overloaded,
                format!("the gateway is busy with other searches: {full}; retry later"),
            )
        })?;
        answered.await.map_err(|_| {
            RequestError::new(
                Code::Internal,
                "the search task failed (see the router's log)",
            )
        })
    }

    /// What the tenant named `tenant` sees.
    fn scope(&self, tenant: Option<&str>) -> Scope {
        Scope {
            catalog: Arc::clone(&self.catalog),
            visibility: Visibility::of(tenant.and_then(|name| self.contracts.get(name)).cloned()),
        }
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

    async fn introspection_allowed(&self, inner: &Inner) -> bool {
        if let Some(allowed) = self.config.introspection {
            return allowed;
        }
        // Only a definite answer is kept: a probe refused for another reason (not ready, a
        // coprocessor) counts as "off" for this request and is asked again on the next.
        self.introspection
            .get_or_try_init(|| async {
                let allowed = probe_introspection(inner).await.ok_or(())?;
                tracing::info!(
                    allowed,
                    "wayfinder.search: follows the router's introspection setting"
                );
                Ok::<bool, ()>(allowed)
            })
            .await
            .copied()
            .unwrap_or(false)
    }
}

/// Adds the answer to `__schema` and `__type` from the tenant's contract to `answered`.
fn introspect_into(
    answered: &mut answer::Answered,
    introspection: Option<(
        Arc<Gate>,
        apollo_compiler::Node<apollo_compiler::executable::Operation>,
    )>,
    document: &apollo_compiler::validation::Valid<apollo_compiler::ExecutableDocument>,
    variables: &graphql::JsonMap,
) {
    let Some((gate, operation)) = introspection else {
        return;
    };
    match gate.introspect(document, &operation, variables) {
        Ok(fields) => {
            if let Some(Value::Object(data)) = &mut answered.data {
                data.extend(fields);
            }
        }
        Err(error) => answered.errors.push(RequestErrorOrField::Request(error)),
    }
}
