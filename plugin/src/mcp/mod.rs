//! The MCP endpoint: a router web endpoint (`mcp.path` on `mcp.listen`) speaking the Model
//! Context Protocol's streamable HTTP through the official SDK (`rmcp`), stateless, so any
//! replica of a fleet answers any call. A call flows: HTTP -> the SDK's JSON-RPC -> [`Server`]
//! (the tenant from the same header or JWT as `__search`, a `wayfinder.mcp.call` span, the
//! `wayfinder.mcp.calls` metric) -> a tool ([`tools`]), which reaches the API through the
//! router's own GraphQL endpoint with the caller's headers ([`Caller::graphql`]): a web
//! endpoint skips the router's pipeline, and only its HTTP entrance runs the router-stage
//! plugins before this one (authentication, coprocessors, telemetry, traffic shaping) -> text
//! for the model, or GraphQL errors with our codes in a tool result marked as an error. An
//! unknown tool is the one JSON-RPC error (`-32602`, `data.code` `MCP_UNKNOWN_TOOL`).

pub(crate) mod slice;
pub(crate) mod tools;

use std::sync::Arc;

use apollo_router::services::router;
use apollo_router::{Endpoint, ListenAddr};
use http_body_util::BodyExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InitializeResult, ListPromptsResult,
    ListToolsResult, PaginatedRequestParams, PromptArgument, PromptMessage, Role,
    ServerCapabilities,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json_bytes::Value;
use tower::{BoxError, ServiceExt};
use tracing::Instrument;

use crate::error::{Code, Refusal, RequestError};
use crate::service::{Instance, View};
use tools::{text, Outcome, Tool};

const INSTRUCTIONS: &str = "Tools for one GraphQL API. To answer a question with data: \
`search` for what you need in plain words, `introspect` the types you need more of, write one \
operation, `validate` it, then `execute` it.";

/// One plugin instance's MCP server (cheap to clone: the SDK makes one per request).
#[derive(Clone)]
pub struct Server {
    instance: Arc<Instance>,
    client: reqwest::Client,
    /// The router's GraphQL endpoint, `mcp.graphql_url`.
    url: reqwest::Url,
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
    pub client: &'a reqwest::Client,
    pub url: &'a reqwest::Url,
}

impl Caller<'_> {
    /// `body`, a GraphQL request, posted to the router's GraphQL endpoint with the caller's
    /// headers: the router's JSON answer, whatever its status. A read-only request is sent
    /// once more when the router dropped it unanswered, as it may on a reload when it hands its
    /// listener to a new server (apollographql/router#5185).
    pub async fn graphql(
        &self,
        body: &serde_json::Value,
        read_only: bool,
    ) -> Result<Value, Refusal> {
        let mcp = &self.instance.config.mcp;
        let url = self.url;
        let send = || {
            self.client
                .post(url.clone())
                .headers(forwarded_headers(&self.parts.headers))
                .json(body)
                .send()
        };
        let response = match send().await {
            Err(e) if read_only && !e.is_timeout() && (e.is_connect() || e.is_request()) => {
                send().await
            }
            sent => sent,
        }
        .map_err(|e| unanswered(&e, url, mcp.execute_timeout))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| unanswered(&e, url, mcp.execute_timeout))?;
        if bytes.len() > mcp.max_text_chars {
            return Err(RequestError::new(
                Code::AnswerTooLarge,
                format!(
                    "the answer has {} bytes; at most {} are returned: select less",
                    bytes.len(),
                    mcp.max_text_chars
                ),
            )
            .into());
        }
        serde_json::from_slice(&bytes).map_err(|_| {
            RequestError::new(
                Code::UnsupportedResponse,
                format!(
                    "{url} answered {status} with a body that is not JSON: is `mcp.graphql_url` \
                     the router's GraphQL endpoint?"
                ),
            )
            .into()
        })
    }

    /// `query`, a read-only operation the tool writes (`__search`, `__definitions`, a probe),
    /// with `variables`, answered as the caller's own request would be: its data, or its
    /// errors.
    pub async fn own(&self, query: &str, variables: serde_json::Value) -> Result<Value, Refusal> {
        let answer = self
            .graphql(
                &serde_json::json!({ "query": query, "variables": variables }),
                true,
            )
            .await?;
        match answer.get("errors").and_then(Value::as_array) {
            // Where they point is in a text the caller never wrote.
            Some(errors) if !errors.is_empty() => Err(Refusal::of(
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
            _ => Ok(answer.get("data").cloned().unwrap_or(Value::Null)),
        }
    }
}

/// The error for a request to the router that got no answer.
fn unanswered(error: &reqwest::Error, url: &reqwest::Url, timeout: std::time::Duration) -> Refusal {
    if error.is_timeout() {
        return RequestError::new(
            Code::RouterTimeout,
            format!(
                "{url} did not answer within {} (`mcp.execute_timeout`)",
                humantime::format_duration(timeout)
            ),
        )
        .into();
    }
    RequestError::new(
        Code::Unreachable,
        format!("the router's GraphQL endpoint {url} did not answer: {error}"),
    )
    .into()
}

/// The caller's headers, for the router to see the same client (its credentials, tenant and
/// trace), without those of the MCP exchange and of the connection (hop by hop).
fn forwarded_headers(headers: &http::HeaderMap) -> http::HeaderMap {
    let mut forwarded = headers.clone();
    let named_by_connection: Vec<http::HeaderName> = headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| http::HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named_by_connection {
        forwarded.remove(name);
    }
    for name in [
        http::header::HOST,
        http::header::CONTENT_LENGTH,
        http::header::CONTENT_TYPE,
        http::header::ACCEPT,
        http::header::ACCEPT_ENCODING,
        http::header::CONNECTION,
        http::header::TRANSFER_ENCODING,
        http::header::UPGRADE,
        http::header::TE,
        http::header::TRAILER,
        http::header::PROXY_AUTHORIZATION,
    ] {
        forwarded.remove(name);
    }
    for name in [
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
        "keep-alive",
        "proxy-connection",
    ] {
        forwarded.remove(name);
    }
    forwarded
}

impl Server {
    pub fn new(instance: Arc<Instance>) -> Result<Self, BoxError> {
        let mcp = &instance.config.mcp;
        let client = reqwest::Client::builder()
            .timeout(mcp.execute_timeout)
            .no_proxy()
            .build()?;
        let tools = Tool::ALL.map(|tool| tool.definition(mcp.allow_mutations));
        let url = reqwest::Url::parse(&mcp.graphql_url())?;
        Ok(Server {
            instance,
            client,
            url,
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

    /// What the caller of an MCP request sees (its tenant, from its HTTP request's headers).
    fn caller_view(&self, context: &RequestContext<RoleServer>) -> Result<View, ErrorData> {
        let Some(parts) = context.extensions.get::<http::request::Parts>() else {
            return Err(ErrorData::internal_error(
                "the MCP call came without its HTTP request",
                Some(serde_json::json!({ "code": Code::Internal.as_str() })),
            ));
        };
        self.instance.view(&parts.headers).map_err(|error| {
            ErrorData::invalid_request(
                error.message.clone(),
                Some(serde_json::json!({ "code": error.code.as_str() })),
            )
        })
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
        let caller = Caller {
            instance: &self.instance,
            view,
            parts,
            client: &self.client,
            url: &self.url,
        };
        let name = tool.name();
        match tool {
            Tool::Search => tools::search(&caller, tools::arguments(name, arguments)?).await,
            Tool::Introspect => {
                tools::introspect(&caller, tools::arguments(name, arguments)?).await
            }
            Tool::Validate => tools::validate(&caller, tools::arguments(name, arguments)?).await,
            Tool::Execute => tools::execute(&caller, tools::arguments(name, arguments)?).await,
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .build(),
        )
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

    /// The prompts of the `prompts` folder the caller's tenant sees.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let view = self.caller_view(&context)?;
        let prompts = self
            .instance
            .prompts
            .visible_to(view.tenant.as_deref())
            .map(|prompt| {
                let arguments = prompt
                    .arguments
                    .iter()
                    .map(|argument| {
                        let mut listed = PromptArgument::new(argument.name.as_str())
                            .with_required(argument.required);
                        if let Some(description) = &argument.description {
                            listed = listed.with_description(description.as_str());
                        }
                        listed
                    })
                    .collect();
                rmcp::model::Prompt::new(
                    prompt.name.as_str(),
                    prompt.description.as_deref(),
                    Some(arguments),
                )
            })
            .collect();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    /// A prompt filled in with the call's arguments, as one user message.
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let view = self.caller_view(&context)?;
        let Some(prompt) = self
            .instance
            .prompts
            .get(&request.name, view.tenant.as_deref())
        else {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt `{}`", request.name),
                Some(serde_json::json!({ "code": Code::UnknownPrompt.as_str() })),
            ));
        };
        let text = prompt
            .fill(&request.arguments.unwrap_or_default())
            .map_err(|error| {
                ErrorData::invalid_params(
                    error.to_string(),
                    Some(serde_json::json!({ "code": Code::InvalidToolArguments.as_str() })),
                )
            })?;
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        if let Some(description) = &prompt.description {
            result = result.with_description(description.as_str());
        }
        Ok(result.into())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.instance.metrics.serving();
        let tool = Tool::named(&request.name);
        // The SDK hands every call its HTTP request's parts; without them there is no tenant.
        let Some(parts) = context.extensions.get::<http::request::Parts>() else {
            return Err(ErrorData::internal_error(
                "the MCP call came without its HTTP request",
                Some(serde_json::json!({ "code": Code::Internal.as_str() })),
            ));
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
            Err(refused) => refused.code(),
        };
        let tenant = tenant.unwrap_or_default();
        span.record("tenant", tenant.as_str());
        span.record("outcome", code);
        self.instance
            .metrics
            .record_mcp_call(tool.name(), &tenant, code);
        Ok(match outcome {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(refused) => CallToolResult::error(vec![ContentBlock::text(text(&refused))]),
        }
        .into())
    }
}
