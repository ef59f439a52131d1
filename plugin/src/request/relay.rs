//! The rest of the router's pipeline ([`Inner`]): a request passed on as received, a GraphQL
//! request of the plugin's sent through it and its JSON answer read back, the router's
//! introspection setting probed; and [`Reply`], the plugin's own answer, as HTTP.

use apollo_router::services::router;
use apollo_router::Context;
use futures::future::BoxFuture;
use http::{HeaderValue, Method, StatusCode};
use http_body_util::BodyExt;
use serde_json_bytes::{json, Value};
use tower::{BoxError, ServiceExt};

use crate::error::{Code, Refusal, RequestError};
use crate::request::graphql::GraphqlRequest;
use crate::request::operation::Forwarded;

/// The inner router service, cloneable.
pub type Inner = apollo_router::layers::unconstrained_buffer::UnconstrainedBuffer<
    router::Request,
    futures::future::BoxFuture<'static, Result<router::Response, BoxError>>,
>;

/// An answer for one GraphQL request.
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) body: Value,
}

impl Reply {
    pub(crate) fn refused(refusal: &Refusal) -> Self {
        Reply {
            status: refusal.status,
            body: refusal.body(),
        }
    }

    pub(crate) fn error(error: &RequestError) -> Self {
        Reply {
            status: error.code.status(),
            body: json!({ "errors": [error.to_json()] }),
        }
    }
}

/// Sends the router's part of a mixed operation through the rest of the pipeline.
pub(crate) async fn forward(
    forwarded: &Forwarded,
    graphql: &GraphqlRequest,
    parts: &http::request::Parts,
    context: &Context,
    inner: &Inner,
) -> Result<Reply, RequestError> {
    let mut extensions = graphql.extensions.clone();
    // The forwarded text is not the one the hash names.
    extensions.remove("persistedQuery");
    let body = GraphqlRequest {
        query: Some(forwarded.query.clone()),
        operation_name: forwarded.operation_name.clone(),
        variables: forwarded.variables.clone(),
        extensions,
    };
    send(body, parts, context, inner).await
}

pub(crate) async fn send(
    graphql: GraphqlRequest,
    parts: &http::request::Parts,
    context: &Context,
    inner: &Inner,
) -> Result<Reply, RequestError> {
    let body = serde_json::to_vec(&graphql.to_json()).map_err(|e| {
        RequestError::new(
            Code::Internal,
            format!("cannot encode the forwarded request: {e}"),
        )
    })?;
    let mut request = http::Request::builder()
        .method(Method::POST)
        .uri(parts.uri.path())
        .version(parts.version)
        .body(router::body::from_bytes(body))
        .map_err(|e| RequestError::new(Code::Internal, e.to_string()))?;
    *request.headers_mut() = parts.headers.clone();
    request.headers_mut().remove(http::header::CONTENT_LENGTH);
    request.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    call(
        router::Request::from((request, context.clone())),
        inner.clone(),
    )
    .await
}

/// Builds the HTTP response for a reply the plugin made.
pub(crate) fn respond(reply: Reply, context: Context) -> Result<router::Response, BoxError> {
    let mut response =
        http::Response::builder()
            .status(reply.status)
            .body(router::body::from_bytes(
                serde_json::to_vec(&reply.body).unwrap_or_default(),
            ))?;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    router::Response::http_response_builder()
        .response(response)
        .context(context)
        .build()
}

/// Asks the router itself whether it answers introspection (its setting, or `--dev`): `None`
/// when its answer says neither.
pub(crate) async fn probe_introspection(inner: &Inner) -> Option<bool> {
    let body = r#"{"query":"{ __schema { queryType { name } } }"}"#;
    let request = http::Request::builder()
        .method(Method::POST)
        .uri("/")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(router::body::from_bytes(body))
        .ok()?;
    let response = through(
        inner.clone(),
        router::Request::from((request, Context::new())),
    )
    .await
    .ok()?;
    let bytes = response.response.into_body().collect().await.ok()?;
    let answer = serde_json::from_slice::<serde_json::Value>(&bytes.to_bytes()).ok()?;
    if answer
        .pointer("/data/__schema/queryType/name")
        .is_some_and(|name| name.is_string())
    {
        return Some(true);
    }
    (answer.pointer("/errors/0/extensions/code")
        == Some(&serde_json::Value::from(
            Code::IntrospectionDisabled.as_str(),
        )))
    .then_some(false)
}

/// Sends `request` through the rest of the router and reads its JSON answer.
fn call(request: router::Request, inner: Inner) -> BoxFuture<'static, Result<Reply, RequestError>> {
    Box::pin(async move {
        let response = through(inner, request)
            .await
            .map_err(|e| RequestError::new(Code::Internal, format!("the router failed: {e}")))?;
        let (parts, body) = response.response.into_parts();
        let is_json = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_none_or(|v| v.contains("json"));
        if !is_json {
            return Err(RequestError::new(
                Code::UnsupportedResponse,
                "the router answered the rest of the operation with a stream (@defer?), which \
                 cannot be merged with __search or __definitions",
            ));
        }
        let bytes = body
            .collect()
            .await
            .map_err(|e| {
                RequestError::new(
                    Code::Internal,
                    format!("the router's answer broke off: {e}"),
                )
            })?
            .to_bytes();
        let body = serde_json::from_slice(&bytes).map_err(|e| {
            RequestError::new(
                Code::UnsupportedResponse,
                format!("the router's answer is not JSON: {e}"),
            )
        })?;
        Ok(Reply {
            status: parts.status,
            body,
        })
    })
}

/// The rest of the router. A named future, not an `async` block: rustc cannot prove an async
/// block holding the buffer's future `Send` for every lifetime (a known limitation).
pub(crate) fn through(
    inner: Inner,
    request: router::Request,
) -> BoxFuture<'static, Result<router::Response, BoxError>> {
    Box::pin(inner.oneshot(request))
}
