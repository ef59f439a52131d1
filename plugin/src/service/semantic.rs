//! An operation the plugin answers: the router's introspection setting, the plugin's limits,
//! depth and the tenant's quota checked; its part run on the engine's background threads with
//! a gated introspection, while the rest is forwarded to the router; both `data` merged.

use std::sync::Arc;

use apollo_router::Context;
use http::StatusCode;
use serde_json_bytes::{json, Value};

use crate::error::{Code, RequestError};
use crate::request::answer::{self, Answering, RequestErrorOrField};
use crate::request::graphql::{self, GraphqlRequest};
use crate::request::operation::{self, Prepared};
use crate::request::relay::{self, probe_introspection, Inner, Reply};
use crate::tenancy::gate::Gate;
use crate::tenancy::tenant::Tenant;

use super::Instance;

impl Instance {
    pub(super) async fn answer(
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
        // Who asked, only for insights.
        let client = self
            .insights
            .as_ref()
            .map(|_| super::client_key(&parts.headers));
        let semantic = self.execute(&prepared, graphql.variables.clone(), &tenant, gate, client);
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
        client: Option<u64>,
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
        let insights = self
            .insights
            .clone()
            .filter(|i| i.keeps(&tenant))
            .zip(client);
        let metrics = self.metrics.clone();
        let prompts = self.prompts.clone();
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
                prompts: &prompts,
                metrics: &metrics,
                insights: insights
                    .as_ref()
                    .map(|(insights, client)| (&**insights, *client)),
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
