//! What a restricted tenant's contract lets one GraphQL request do: the gate's verdict becomes
//! [`Admitted`] (introspection answered from the contract, data to scrub) or a refusal;
//! [`runs_as_sent`] is the fast path for a request the router may answer as it is, and
//! [`scrubbed`] takes out of the router's answer the enum values the contract hides.

use std::sync::Arc;

use apollo_router::services::router;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json_bytes::Value;
use tower::BoxError;

use crate::request::graphql::{GraphqlRequest, Incoming};
use crate::request::relay::Reply;
use crate::tenancy::gate::{Gate, Verdict};

/// A restricted tenant's operation whose data may hold enum values its contract hides.
pub(crate) struct Scrub {
    gate: Arc<Gate>,
    query: Arc<str>,
    operation_name: Option<String>,
}

impl Scrub {
    pub(crate) fn data(&self, body: &mut Value) {
        if let Some(data) = body.get_mut("data") {
            self.gate
                .scrub(&self.query, self.operation_name.as_deref(), data);
        }
    }
}

/// What a restricted tenant's contract lets one operation do.
#[derive(Default)]
pub(crate) struct Admitted {
    /// Its `__schema` and `__type` are answered from the contract: never the router's to
    /// answer, which would show the whole API.
    pub(crate) introspection: bool,
    /// How its data must be scrubbed, if at all.
    pub(crate) scrub: Option<Scrub>,
}

/// The contract's verdict on `query` (the text of `graphql`), with its variables' values
/// checked when their types are narrowed; the reply when it is refused.
pub(crate) fn admit(
    gate: &Arc<Gate>,
    query: &str,
    graphql: &GraphqlRequest,
) -> Result<Admitted, Reply> {
    match gate.verdict(query) {
        Verdict::Refused(refusal) => Err(Reply::refused(&refusal)),
        Verdict::Allowed {
            introspection,
            narrowed_variables,
            narrowed_outputs,
        } => {
            if narrowed_variables {
                gate.check_variables(query, graphql.operation_name.as_deref(), &graphql.variables)
                    .map_err(|error| Reply::error(&error))?;
            }
            Ok(Admitted {
                introspection,
                scrub: narrowed_outputs.then(|| Scrub {
                    gate: Arc::clone(gate),
                    query: Arc::from(query),
                    operation_name: graphql.operation_name.clone(),
                }),
            })
        }
    }
}

/// Whether every operation of a restricted tenant's request is one the router may run and
/// answer as it is: its text sent (no hash alone), admitted, without introspection or data to
/// scrub.
pub(crate) fn runs_as_sent(gate: &Arc<Gate>, incoming: &Incoming) -> bool {
    let requests: Vec<Option<&GraphqlRequest>> = match incoming {
        Incoming::Single(graphql) => vec![Some(graphql)],
        Incoming::Batch(entries) => entries.iter().map(|e| e.as_ref().ok()).collect(),
    };
    requests.into_iter().all(|graphql| {
        let Some(graphql) = graphql.filter(|g| g.persisted_query_hash().is_none()) else {
            return false;
        };
        let Some(query) = graphql.query.as_deref() else {
            return false;
        };
        matches!(
            admit(gate, query, graphql),
            Ok(Admitted {
                introspection: false,
                scrub: None
            })
        )
    })
}

/// The router's `response` with its data scrubbed. A streamed answer (`@defer`, a
/// subscription) is passed on as it is.
pub(crate) async fn scrubbed(
    response: router::Response,
    scrub: &Scrub,
) -> Result<router::Response, BoxError> {
    let router::Response {
        response, context, ..
    } = response;
    let (mut parts, body) = response.into_parts();
    let is_json = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"));
    let rebuilt = |response| {
        router::Response::http_response_builder()
            .response(response)
            .context(context)
            .build()
    };
    if !is_json {
        return rebuilt(http::Response::from_parts(parts, body));
    }
    let bytes = body.collect().await?.to_bytes();
    let body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut value) => {
            scrub.data(&mut value);
            parts.headers.remove(http::header::CONTENT_LENGTH);
            Bytes::from(serde_json::to_vec(&value)?)
        }
        Err(_) => bytes,
    };
    rebuilt(http::Response::from_parts(
        parts,
        router::body::from_bytes(body),
    ))
}
