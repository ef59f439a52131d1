//! The insights view: the questions agents could not find an answer to
//! ([`wayfinder_workers::insights`]), as JSON on `insights.view.listen` for the people who own
//! the schema, not for agents (no MCP tool, no GraphQL field).
//!
//! `GET <path>` lists every opted-in tenant; `?tenant=<name>` one of them; `&first=<n>` (1 to
//! 1000, default 50) how many questions each. Each question: its text (or, with `hash_key`, its
//! hash), how often it was counted over the window, why, and the best hits its last asking got.

use std::sync::Arc;

use apollo_router::services::router;
use apollo_router::{Endpoint, ListenAddr};
use http::StatusCode;
use serde_json::{json, Value};
use tower::ServiceExt;
use wayfinder_workers::insights::{Insights, InsightsView, Question};

const DEFAULT_FIRST: usize = 50;
const MAX_FIRST: usize = 1000;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    tenant: Option<String>,
    first: Option<usize>,
}

/// The view's listener and endpoint.
pub(crate) fn endpoint(view: &InsightsView, insights: Arc<Insights>) -> (ListenAddr, Endpoint) {
    let handler = tower::service_fn(move |request: router::Request| {
        let insights = Arc::clone(&insights);
        async move {
            let query = request.router_request.uri().query().unwrap_or_default();
            let (status, body) = answer(&insights, query);
            let response = http::Response::builder()
                .status(status)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(router::body::from_bytes(body.to_string()))?;
            router::Response::http_response_builder()
                .response(response)
                .context(request.context)
                .build()
        }
    })
    .boxed();
    (
        ListenAddr::from(view.listen),
        Endpoint::from_router_service(view.path.clone(), handler),
    )
}

fn answer(insights: &Insights, query: &str) -> (StatusCode, Value) {
    let params: Params = match serde_urlencoded::from_str(query) {
        Ok(params) => params,
        Err(error) => {
            return (
                StatusCode::BAD_REQUEST,
                json!({ "error": format!("{error}: the parameters are `tenant` and `first`") }),
            )
        }
    };
    let first = params.first.unwrap_or(DEFAULT_FIRST);
    if !(1..=MAX_FIRST).contains(&first) {
        return (
            StatusCode::BAD_REQUEST,
            json!({ "error": format!("`first` must be 1 to {MAX_FIRST}, got {first}") }),
        );
    }
    let tenants: Vec<String> = match params.tenant {
        Some(tenant) if !insights.keeps(&tenant) => {
            return (
                StatusCode::NOT_FOUND,
                json!({ "error": format!("`{tenant}` is not a tenant of insights.tenants") }),
            )
        }
        Some(tenant) => vec![tenant],
        None => insights.config().tenants.iter().cloned().collect(),
    };
    let listed: serde_json::Map<String, Value> = tenants
        .into_iter()
        .map(|tenant| {
            let questions: Vec<Value> = insights.top(&tenant, first).iter().map(question).collect();
            (tenant, Value::Array(questions))
        })
        .collect();
    (
        StatusCode::OK,
        json!({ "days": insights.config().days, "tenants": listed }),
    )
}

fn question(question: &Question) -> Value {
    let reasons: serde_json::Map<String, Value> = question
        .reasons
        .iter()
        .map(|(reason, count)| (reason.as_str().to_string(), json!(count)))
        .collect();
    json!({
        "text": question.text,
        "hash": question.hash,
        "count": question.count,
        "reasons": reasons,
        "best": question.best.iter().map(|hit| json!({
            "coordinate": hit.coordinate,
            "score": hit.score,
        })).collect::<Vec<_>>(),
    })
}
