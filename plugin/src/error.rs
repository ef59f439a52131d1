//! GraphQL errors the plugin answers with: every one carries an `extensions.code`, so a client
//! can tell a bad argument from an unknown tenant without reading the message.

use std::sync::Arc;

use apollo_compiler::validation::DiagnosticList;
use serde_json_bytes::{json, Map, Value};

/// The `extensions.code` of an error, and the HTTP status a request-level one is sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumIter)]
pub enum Code {
    /// The body is not a GraphQL request (not JSON, no `query`, wrong types).
    InvalidRequest,
    ParseFailed,
    ValidationFailed,
    UnknownOperation,
    InvalidVariables,
    BatchTooLarge,
    TooManyFields,
    DepthLimit,
    PersistedQueryHashMismatch,
    PersistedQueryNotFound,
    IntrospectionDisabled,
    /// `__schema` or `__type` beside routed fields, which the router does not answer either.
    MixedIntrospection,
    TenantRequired,
    UnknownTenant,
    Unauthenticated,
    QueryEmpty,
    QueryTooLong,
    FirstOutOfRange,
    MinScoreOutOfRange,
    InvalidCursor,
    StaleCursor,
    UnknownCoordinate,
    TooManyCoordinates,
    NotReady,
    /// No search thread was free in time and the overload policy is `refuse`.
    Overloaded,
    /// The tenant's quota is spent for now (`extensions.retryAfterMs` says for how long).
    RateLimited,
    /// An MCP tool call's arguments do not match its input schema.
    InvalidToolArguments,
    /// An MCP call names no tool of this server.
    UnknownTool,
    /// An MCP `prompts/get` names no prompt the caller sees.
    UnknownPrompt,
    /// The MCP `execute` tool runs no mutation unless `mcp.allow_mutations` says so.
    MutationRefused,
    /// The MCP `execute` tool runs no subscription.
    SubscriptionRefused,
    /// The router's GraphQL endpoint (`mcp.graphql_url`) could not be reached from an MCP tool.
    Unreachable,
    /// The router did not answer an MCP tool within `mcp.execute_timeout`.
    RouterTimeout,
    /// An MCP tool's answer would be longer than `mcp.max_text_chars`.
    AnswerTooLarge,
    /// The rest of a mixed operation could not be merged (a streamed or non-JSON answer).
    UnsupportedResponse,
    Internal,
}

impl Code {
    /// The code written `code`, if the plugin makes it (a subgraph's errors carry any code).
    pub fn parse(code: &str) -> Option<Code> {
        use strum::IntoEnumIterator;
        Code::iter().find(|c| c.as_str() == code)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidRequest => "INVALID_GRAPHQL_REQUEST",
            Code::ParseFailed => "PARSING_ERROR",
            Code::ValidationFailed => "GRAPHQL_VALIDATION_FAILED",
            Code::UnknownOperation => "GRAPHQL_UNKNOWN_OPERATION_NAME",
            Code::InvalidVariables => "VALIDATION_INVALID_TYPE_VARIABLE",
            Code::BatchTooLarge => "BATCH_LIMIT_EXCEEDED",
            Code::TooManyFields => "SEMANTIC_FIELD_LIMIT_EXCEEDED",
            Code::DepthLimit => "MAX_INTROSPECTION_DEPTH_EXCEEDED",
            Code::PersistedQueryHashMismatch => "PERSISTED_QUERY_HASH_MISMATCH",
            Code::PersistedQueryNotFound => "PERSISTED_QUERY_NOT_FOUND",
            Code::IntrospectionDisabled => "INTROSPECTION_DISABLED",
            Code::MixedIntrospection => "MIXED_INTROSPECTION",
            Code::TenantRequired => "TENANT_REQUIRED",
            Code::UnknownTenant => "UNKNOWN_TENANT",
            Code::Unauthenticated => "UNAUTHENTICATED",
            Code::QueryEmpty => "SEARCH_QUERY_EMPTY",
            Code::QueryTooLong => "SEARCH_QUERY_TOO_LONG",
            Code::FirstOutOfRange => "SEARCH_FIRST_OUT_OF_RANGE",
            Code::MinScoreOutOfRange => "SEARCH_MIN_SCORE_OUT_OF_RANGE",
            Code::InvalidCursor => "SEARCH_INVALID_CURSOR",
            Code::StaleCursor => "SEARCH_STALE_CURSOR",
            Code::UnknownCoordinate => "UNKNOWN_COORDINATE",
            Code::TooManyCoordinates => "COORDINATE_LIMIT_EXCEEDED",
            Code::NotReady => "SEARCH_NOT_READY",
            Code::RateLimited => "SEARCH_RATE_LIMITED",
            Code::Overloaded => "SEARCH_OVERLOADED",
            Code::UnsupportedResponse => "UNSUPPORTED_RESPONSE",
            Code::InvalidToolArguments => "MCP_INVALID_ARGUMENTS",
            Code::UnknownTool => "MCP_UNKNOWN_TOOL",
            Code::UnknownPrompt => "MCP_UNKNOWN_PROMPT",
            Code::MutationRefused => "MCP_MUTATION_REFUSED",
            Code::SubscriptionRefused => "MCP_SUBSCRIPTION_REFUSED",
            Code::Unreachable => "MCP_ROUTER_UNREACHABLE",
            Code::RouterTimeout => "MCP_ROUTER_TIMEOUT",
            Code::AnswerTooLarge => "MCP_ANSWER_TOO_LARGE",
            Code::Internal => "INTERNAL_SERVER_ERROR",
        }
    }

    /// Status of a response made of this error alone (GraphQL over HTTP: malformed requests
    /// are 4xx, anything that reached execution is 200).
    pub fn status(self) -> http::StatusCode {
        use http::StatusCode;
        match self {
            Code::InvalidRequest
            | Code::ParseFailed
            | Code::ValidationFailed
            | Code::UnknownOperation
            | Code::InvalidVariables
            | Code::BatchTooLarge
            | Code::PersistedQueryHashMismatch => StatusCode::BAD_REQUEST,
            Code::Unauthenticated => StatusCode::UNAUTHORIZED,
            Code::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::OK,
        }
    }
}

/// One GraphQL error with its code (and, from validation, where in the operation it is).
#[derive(Debug, Clone)]
pub struct RequestError {
    pub code: Code,
    pub message: String,
    pub locations: Vec<(usize, usize)>,
    /// When the client may try again (`extensions.retryAfterMs`).
    pub retry_after: Option<std::time::Duration>,
}

impl RequestError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        RequestError {
            code,
            message: message.into(),
            locations: Vec::new(),
            retry_after: None,
        }
    }

    pub fn to_json(&self) -> Value {
        let mut error = json!({
            "message": self.message,
            "extensions": { "code": self.code.as_str() },
        });
        if let (Some(wait), Some(extensions)) = (
            self.retry_after,
            error.get_mut("extensions").and_then(Value::as_object_mut),
        ) {
            extensions.insert("retryAfterMs", json!(wait.as_millis() as u64));
        }
        if !self.locations.is_empty() {
            if let Some(object) = error.as_object_mut() {
                object.insert(
                    "locations",
                    Value::Array(
                        self.locations
                            .iter()
                            .map(|(line, column)| json!({ "line": line, "column": column }))
                            .collect(),
                    ),
                );
            }
        }
        error
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.as_str())
    }
}

/// As the router: at most this many validation errors in one response.
const MAX_VALIDATION_ERRORS: usize = 100;

/// Errors answered instead of running an operation, with their HTTP status.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub status: http::StatusCode,
    pub errors: Arc<[Value]>,
}

impl Refusal {
    /// The router's errors for an operation that does not parse or validate: graphql-js's
    /// words (`message` shapes them), every location, `code`.
    pub fn from_diagnostics(
        diagnostics: &DiagnosticList,
        code: Code,
        message: impl Fn(&str) -> String,
    ) -> Self {
        let errors = diagnostics
            .iter()
            .take(MAX_VALIDATION_ERRORS)
            .map(|diagnostic| {
                let error = diagnostic.unstable_to_json_compat();
                let mut value = Map::new();
                value.insert("message", message(&error.message).into());
                if !error.locations.is_empty() {
                    let locations = error
                        .locations
                        .iter()
                        .map(|l| json!({ "line": l.line, "column": l.column }))
                        .collect();
                    value.insert("locations", Value::Array(locations));
                }
                value.insert("extensions", json!({ "code": code.as_str() }));
                Value::Object(value)
            })
            .collect();
        Refusal {
            status: code.status(),
            errors,
        }
    }

    pub fn body(&self) -> Value {
        json!({ "errors": Value::Array(self.errors.to_vec()) })
    }
}

impl Refusal {
    /// Errors another answer carried (the router's, for an MCP tool), as they are.
    pub fn of(errors: Vec<Value>) -> Self {
        Refusal {
            status: http::StatusCode::OK,
            errors: errors.into(),
        }
    }

    /// The first error's code.
    pub fn code(&self) -> &str {
        self.errors
            .first()
            .and_then(|e| e.get("extensions")?.get("code")?.as_str())
            .unwrap_or(Code::Internal.as_str())
    }
}

impl From<RequestError> for Refusal {
    fn from(error: RequestError) -> Self {
        Refusal::from(&error)
    }
}

impl From<&RequestError> for Refusal {
    fn from(error: &RequestError) -> Self {
        Refusal {
            status: error.code.status(),
            errors: Arc::from([error.to_json()]),
        }
    }
}
