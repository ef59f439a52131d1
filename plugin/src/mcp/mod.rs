//! The MCP endpoint: a router web endpoint (`mcp.path` on `mcp.listen`) speaking the Model
//! Context Protocol's streamable HTTP through the official SDK (`rmcp`), stateless, so any
//! replica of a fleet answers any call. A call flows: HTTP -> the SDK's JSON-RPC -> [`Server`]
//! (the tenant from the same header or JWT as `__search`, a `wayfinder.mcp.call` span, the
//! `wayfinder.mcp.calls` metric) -> a tool ([`tools`]) -> text for the model, or GraphQL
//! errors with our codes in a tool result marked as an error. An unknown tool is the one
//! JSON-RPC error (`-32602`, `data.code` `MCP_UNKNOWN_TOOL`).

pub mod slice;
pub mod tools;

use std::sync::{Arc, OnceLock};

use apollo_router::services::router;
use apollo_router::{Endpoint, ListenAddr};
use http_body_util::BodyExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json_bytes::Value;
use tower::{BoxError, ServiceExt};
use tracing::Instrument;

use crate::error::Code;
use crate::request::{GraphqlRequest, JsonMap};
use crate::service::{Inner, Instance, View};
use tools::{Failure, Outcome, Tool};

const INSTRUCTIONS: &str = "Tools for one GraphQL API. To answer a question with data: \
`search` for what you need in plain words, `introspect` the types you need more of, write one \
operation, `validate` it, then `execute` it.";

/// One plugin instance's MCP server (cheap to clone: the SDK makes one per request).
#[derive(Clone)]
pub struct Server {
    instance: Arc<Instance>,
    /// The rest of this pipeline, which the plugin's GraphQL path needs (to learn the router's
    /// introspection setting); set when the router builds the pipeline.
    inner: Arc<OnceLock<Inner>>,
    client: reqwest::Client,
    tools: Arc<[rmcp::model::Tool]>,
}

/// The span of the HTTP request a tool call came in, which the SDK hands to the handler
/// with the request's parts.
#[derive(Clone)]
struct RequestSpan(tracing::Span);

/// What a tool call acts with: who calls, and what it sees.
pub struct Caller<'a> {
    pub instance: &'a Instance,
    pub view: View,
    pub parts: &'a http::request::Parts,
    pub inner: &'a Inner,
    pub client: &'a reqwest::Client,
}

impl Caller<'_> {
    /// `query` (of `__search` or `__definitions` alone) answered by the plugin's GraphQL path
    /// as if the caller had sent it: its data, or its errors.
    pub async fn own(&self, query: &str, variables: JsonMap) -> Result<Value, Failure> {
        let graphql = GraphqlRequest {
            query: Some(query.to_string()),
            variables,
            ..Default::default()
        };
        let body = self
            .instance
            .answer_own(graphql, self.parts, self.inner)
            .await;
        match body.get("errors").and_then(Value::as_array) {
            // Where they point is in a text the caller never wrote.
            Some(errors) if !errors.is_empty() => Err(Failure(
                errors
                    .iter()
                    .cloned()
                    .map(|mut error| {
                        if let Some(error) = error.as_object_mut() {
                            error.remove("locations");
                            error.remove("path");
                        }
                        error
                    })
                    .collect(),
            )),
            _ => Ok(body.get("data").cloned().unwrap_or(Value::Null)),
        }
    }
}

impl Server {
    pub fn new(instance: Arc<Instance>, inner: Arc<OnceLock<Inner>>) -> Result<Self, BoxError> {
        let mcp = &instance.config.mcp;
        let client = reqwest::Client::builder()
            .timeout(mcp.execute_timeout)
            .no_proxy()
            .build()?;
        let read_only = ToolAnnotations::new().read_only(true);
        let tools = [
            rmcp::model::Tool::new(
                Tool::Search.name(),
                tools::SEARCH_DESCRIPTION,
                tools::input_schema::<tools::SearchArgs>(),
            )
            .with_annotations(read_only.clone()),
            rmcp::model::Tool::new(
                Tool::Introspect.name(),
                tools::INTROSPECT_DESCRIPTION,
                tools::input_schema::<tools::IntrospectArgs>(),
            )
            .with_annotations(read_only.clone()),
            rmcp::model::Tool::new(
                Tool::Validate.name(),
                tools::VALIDATE_DESCRIPTION,
                tools::input_schema::<tools::ValidateArgs>(),
            )
            .with_annotations(read_only.clone()),
            rmcp::model::Tool::new(
                Tool::Execute.name(),
                tools::execute_description(mcp.allow_mutations),
                tools::input_schema::<tools::ExecuteArgs>(),
            )
            .with_annotations(ToolAnnotations::new().read_only(!mcp.allow_mutations)),
        ];
        Ok(Server {
            instance,
            inner,
            client,
            tools: Arc::from(tools),
        })
    }

    /// The web endpoint serving this server.
    pub fn endpoint(&self) -> (ListenAddr, Endpoint) {
        let mcp = &self.instance.config.mcp;
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_allowed_hosts(mcp.allowed_hosts.clone())
            .with_max_request_body_bytes(mcp.max_request_bytes);
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let path = mcp.path.clone();
        let handler = tower::service_fn(move |request: router::Request| {
            let service = service.clone();
            // The router's sampler starts traces only at spans it knows by name: this request's
            // root takes the name of its HTTP request span, and each tool call is a child.
            let root = tracing::info_span!(
                "request",
                "otel.kind" = "SERVER",
                "http.request.method" = %request.router_request.method(),
                "http.route" = %path,
            );
            let mut http_request = request.router_request;
            http_request
                .extensions_mut()
                .insert(RequestSpan(root.clone()));
            async move {
                let context = request.context;
                let response = match service.oneshot(http_request).instrument(root).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                let response = response.map(|body| {
                    body.map_err(|never: std::convert::Infallible| match never {})
                        .boxed_unsync()
                });
                router::Response::http_response_builder()
                    .response(response)
                    .context(context)
                    .build()
            }
        })
        .boxed();
        (
            ListenAddr::from(mcp.listen),
            Endpoint::from_router_service(mcp.path.clone(), handler),
        )
    }

    async fn run(
        &self,
        tool: Tool,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        parts: &http::request::Parts,
        tenant: &mut Option<String>,
    ) -> Outcome {
        let view = self.instance.view(&parts.headers)?;
        tenant.clone_from(&view.tenant);
        let inner = self.inner.get().ok_or_else(|| {
            Failure::new(Code::NotReady, "the router's pipeline is not ready yet")
        })?;
        let caller = Caller {
            instance: &self.instance,
            view,
            parts,
            inner,
            client: &self.client,
        };
        let limits = &self.instance.config.limits;
        match tool {
            Tool::Search => tools::search(&caller, tools::arguments("search", arguments)?).await,
            Tool::Introspect => {
                tools::introspect(&caller, tools::arguments("introspect", arguments)?).await
            }
            Tool::Validate => tools::validate(
                &caller.view,
                limits,
                tools::arguments("validate", arguments)?,
            ),
            Tool::Execute => tools::execute(&caller, tools::arguments("execute", arguments)?).await,
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("wayfinder", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = Tool::named(&request.name);
        let no_parts;
        let parts = match context.extensions.get::<http::request::Parts>() {
            Some(parts) => parts,
            None => {
                no_parts = http::Request::new(()).into_parts().0;
                &no_parts
            }
        };
        let parent = parts.extensions.get::<RequestSpan>().and_then(|s| s.0.id());
        let span = tracing::info_span!(
            parent: parent,
            "wayfinder.mcp.call",
            tool = tool.map_or("unknown", Tool::name),
            tenant = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let Some(tool) = tool else {
            let code = Code::UnknownTool.as_str();
            span.record("outcome", code);
            self.instance.metrics.record_mcp_call("unknown", "", code);
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`: the tools are search, introspect, validate and execute",
                    request.name
                ),
                Some(serde_json::json!({ "code": code })),
            ));
        };
        let mut tenant = None;
        let outcome = self
            .run(tool, request.arguments, parts, &mut tenant)
            .instrument(span.clone())
            .await;
        let code = match &outcome {
            Ok(_) => "ok",
            Err(failure) => failure.code(),
        };
        let tenant = tenant.unwrap_or_default();
        span.record("tenant", tenant.as_str());
        span.record("outcome", code);
        self.instance.metrics.record_mcp_call(
            tool.name(),
            &tenant,
            if code == "ok" { "ok" } else { "error" },
        );
        Ok(match outcome {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(failure) => CallToolResult::error(vec![ContentBlock::text(failure.text())]),
        }
        .into())
    }
}
