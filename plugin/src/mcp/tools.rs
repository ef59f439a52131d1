//! The four tools: their arguments (whose doc comments become the input schemas a model
//! reads) and what each does with them. `search` and `introspect` send `__search` and
//! `__definitions` through the plugin's own GraphQL path (so the tenant's contract,
//! the introspection setting, limits and quota hold exactly as for a GraphQL client), then
//! print what was found as SDL ([`super::slice`]); `validate` checks an operation against the
//! tenant's schema; `execute` posts it to the router's GraphQL endpoint with the caller's
//! headers.

use apollo_compiler::ast::{Definition, OperationType};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json_bytes::{json, Value};

use super::slice::Slice;
use super::Caller;
use crate::error::{Code, Refusal, RequestError};
use crate::operation;
use crate::request::JsonMap;
use crate::service::View;

/// Results `search` returns when `first` is not given: a page a model reads at a glance.
pub const DEFAULT_FIRST: i64 = 5;

/// Deepest `introspect` walks from the members asked for.
pub const MAX_DEPTH: usize = 3;

/// What a tool answers: text for the model, or GraphQL errors (each with
/// `extensions.code`).
pub type Outcome = Result<String, Failure>;

/// A tool call that failed, as GraphQL errors.
#[derive(Debug)]
pub struct Failure(pub Vec<Value>);

impl Failure {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Failure(vec![RequestError::new(code, message).to_json()])
    }

    /// The first error's code.
    pub fn code(&self) -> &str {
        self.0
            .first()
            .and_then(|e| e.get("extensions")?.get("code")?.as_str())
            .unwrap_or(Code::Internal.as_str())
    }

    /// The errors as the model reads them.
    pub fn text(&self) -> String {
        serde_json::to_string(&json!({ "errors": self.0 })).unwrap_or_default()
    }
}

impl From<RequestError> for Failure {
    fn from(error: RequestError) -> Self {
        Failure(vec![error.to_json()])
    }
}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Self {
        Failure(refusal.errors.to_vec())
    }
}

/// Find what an operation needs, in plain words.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What you are looking for, in plain words or names: "books a customer ordered",
    /// "cancel a subscription", "repository stars".
    pub query: String,
    /// How many results (default 5, or the gateway's `limits.max_first` when lower).
    pub first: Option<i64>,
    /// The cursor a previous page ended with (its `next page` line), for the next page.
    pub after: Option<String>,
    /// Leave out results scoring below this (0 to 1).
    #[serde(rename = "minScore")]
    pub min_score: Option<f64>,
}

/// Show definitions by schema coordinate.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntrospectArgs {
    /// Type names or schema coordinates: `Customer`, `Customer.orders`,
    /// `Query.book(isbn:)`, `OrderStatus.SHIPPED`, `@deprecated`.
    pub coordinates: Vec<String>,
    /// How many levels of referenced types to include: 0 shows only the members asked for;
    /// 1 (the default) adds the types their fields and arguments use; at most 3.
    pub depth: Option<usize>,
}

/// Check an operation without running it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    /// The GraphQL operation text.
    pub operation: String,
}

/// Run an operation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// The GraphQL operation text.
    pub query: String,
    /// Values of the operation's variables, by name.
    pub variables: Option<serde_json::Map<String, serde_json::Value>>,
    /// Which operation of the text to run, when it holds several.
    #[serde(rename = "operationName")]
    pub operation_name: Option<String>,
}

pub const SEARCH_DESCRIPTION: &str = "Find the parts of this GraphQL API that do what you need, \
described in plain words (\"books a customer ordered\", \"cancel a subscription\"). Returns the \
best matches as schema coordinates (`Type.field`) with a score from 0 to 1 and the shortest path \
of fields from a root type, then the SDL of just those fields, the fields on their paths, and the \
types needed to select them. Start here; use `introspect` to see more of a type, `validate` to \
check the operation you write, and `execute` to run it.";

pub const INTROSPECT_DESCRIPTION: &str = "Show the SDL of types or fields by schema coordinate \
(`Customer`, `Customer.orders`, `Query.book(isbn:)`), with the types they reference `depth` \
levels deep (0: only them; default 1). Use it after `search` to see all fields of a type or the \
shape of an input type before writing an operation.";

pub const VALIDATE_DESCRIPTION: &str = "Check a GraphQL operation against this API without \
running it. Returns `valid`, or the errors as JSON with the line and column of each.";

pub fn execute_description(allow_mutations: bool) -> String {
    format!(
        "Run a GraphQL operation against this API and return its JSON response (`data` and \
         any `errors`). Pass variables as a JSON object. {} Subscriptions are refused. \
         `validate` first when unsure.",
        if allow_mutations {
            "Queries and mutations run."
        } else {
            "Only queries run: mutations are refused."
        }
    )
}

/// The JSON schema of `T`, as a tool's input schema.
pub fn input_schema<T: JsonSchema>() -> serde_json::Map<String, serde_json::Value> {
    let mut schema = match serde_json::to_value(schemars::schema_for!(T)) {
        Ok(serde_json::Value::Object(schema)) => schema,
        _ => serde_json::Map::new(),
    };
    schema.remove("$schema");
    schema.remove("title");
    schema
}

/// `arguments` read as `T`, or the error naming the tool and what is wrong.
pub fn arguments<T: for<'de> Deserialize<'de>>(
    tool: &str,
    arguments: Option<serde_json::Map<String, serde_json::Value>>,
) -> Result<T, Failure> {
    serde_json::from_value(serde_json::Value::Object(arguments.unwrap_or_default())).map_err(|e| {
        Failure::new(
            Code::InvalidToolArguments,
            format!("`{tool}` arguments: {e}"),
        )
    })
}

const SEARCH_OPERATION: &str = "query Search($query: String!, $first: Int!, $after: String, \
$minScore: Float) { __search(query: $query, first: $first, after: $after, minScore: $minScore) \
{ coordinate score cursor pathsToRoot } }";

const DEFINITIONS_OPERATION: &str =
    "query Introspect($coordinates: [String!]!) { __definitions(coordinates: $coordinates) { __typename } }";

/// One line per hit (coordinate, score, the shortest way to it from a root), the next page's
/// cursor when there may be one, and the SDL of the hits.
pub async fn search(caller: &Caller<'_>, args: SearchArgs) -> Outcome {
    let max_first = caller.instance.config.limits.max_first as i64;
    let first = args.first.unwrap_or(DEFAULT_FIRST.min(max_first));
    let mut variables = JsonMap::new();
    variables.insert("query", json!(args.query));
    variables.insert("first", json!(first));
    if let Some(after) = args.after {
        variables.insert("after", json!(after));
    }
    if let Some(min_score) = args.min_score {
        variables.insert("minScore", json!(min_score));
    }
    let data = caller.own(SEARCH_OPERATION, variables).await?;
    let hits = data
        .get("__search")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut slice = Slice::new(&caller.view.scope);
    let mut text = String::new();
    for hit in &hits {
        let coordinate = hit.get("coordinate").and_then(Value::as_str).unwrap_or("");
        let path = shortest_path(hit, &caller.view.schema.query_root);
        text.push_str(coordinate);
        if let Some(score) = hit.get("score").and_then(Value::as_f64) {
            text.push_str(&format!("  score {score:.3}"));
        }
        // The way from a root, down to the hit the line starts with.
        if let Some((_, way)) = path.split_last().filter(|(_, way)| !way.is_empty()) {
            text.push_str(&format!("  via {}", way.join(" > ")));
        }
        text.push('\n');
        slice.hit(coordinate, &path);
    }
    if hits.is_empty() {
        text.push_str("no results\n");
    }
    let last_cursor = hits
        .last()
        .and_then(|hit| hit.get("cursor"))
        .and_then(Value::as_str);
    if let Some(cursor) = last_cursor.filter(|_| hits.len() as i64 >= first) {
        text.push_str(&format!("next page: after \"{cursor}\"\n"));
    }
    let sdl = slice.sdl();
    if !sdl.is_empty() {
        text.push_str(&format!("\n```graphql\n{sdl}```\n"));
    }
    Ok(text)
}

/// The shortest of a hit's paths from a root, as coordinates: from the query root when one
/// is, since reading is what an agent does first.
fn shortest_path(hit: &Value, query_root: &str) -> Vec<String> {
    let from_query = |path: &Vec<Value>| {
        path.first()
            .and_then(Value::as_str)
            .and_then(|step| step.split_once('.'))
            .is_some_and(|(root, _)| root == query_root)
    };
    hit.get("pathsToRoot")
        .and_then(Value::as_array)
        .and_then(|paths| {
            paths
                .iter()
                .filter_map(Value::as_array)
                .min_by_key(|path| (!from_query(path), path.len()))
        })
        .map(|path| {
            path.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The SDL of the members asked for and what they reference, `depth` levels deep.
pub async fn introspect(caller: &Caller<'_>, args: IntrospectArgs) -> Outcome {
    let depth = args.depth.unwrap_or(1);
    if depth > MAX_DEPTH {
        return Err(Failure::new(
            Code::InvalidToolArguments,
            format!("`depth` is {depth}; at most {MAX_DEPTH} levels are walked"),
        ));
    }
    if args.coordinates.is_empty() {
        return Err(Failure::new(
            Code::InvalidToolArguments,
            "`coordinates` is empty: name at least one type or coordinate",
        ));
    }
    // Resolving them as `__definitions` does is what makes a hidden coordinate read exactly
    // as an unknown one, and applies the same setting, limits and quota.
    let mut variables = JsonMap::new();
    variables.insert("coordinates", json!(args.coordinates));
    caller.own(DEFINITIONS_OPERATION, variables).await?;
    let mut slice = Slice::new(&caller.view.scope);
    for coordinate in &args.coordinates {
        slice.member(coordinate, depth);
    }
    Ok(slice.sdl())
}

/// `valid`, or the errors a router serving the tenant's schema would answer with.
pub fn validate(view: &View, limits: &crate::config::Limits, args: ValidateArgs) -> Outcome {
    Ok(
        match operation::parse_and_validate(&view.schema.schema, &args.operation, limits) {
            Ok(_) => "valid".to_string(),
            Err(refusal) => Failure::from(refusal).text(),
        },
    )
}

/// What kind of operation `query` runs (`operation_name` picks one of several): the parse
/// errors, or an error when it cannot be told.
fn operation_type(
    query: &str,
    operation_name: Option<&str>,
    limits: &crate::config::Limits,
) -> Result<OperationType, Failure> {
    let document = apollo_compiler::parser::Parser::new()
        .token_limit(limits.parser_max_tokens)
        .recursion_limit(limits.parser_max_recursion)
        .parse_ast(query, "operation.graphql")
        .map_err(|invalid| {
            Failure::from(Refusal::from_diagnostics(
                &invalid.errors,
                Code::ParseFailed,
                |message| format!("parsing error: {message}"),
            ))
        })?;
    let operations: Vec<_> = document
        .definitions
        .iter()
        .filter_map(|definition| match definition {
            Definition::OperationDefinition(operation) => Some(operation),
            _ => None,
        })
        .collect();
    let chosen = match operation_name {
        Some(name) => operations
            .iter()
            .find(|o| o.name.as_ref().is_some_and(|n| n == name)),
        None if operations.len() == 1 => operations.first(),
        None => {
            return Err(Failure::new(
                Code::UnknownOperation,
                format!(
                    "the text holds {} operations: name the one to run with `operationName`",
                    operations.len()
                ),
            ))
        }
    };
    chosen.map(|o| o.operation_type).ok_or_else(|| {
        Failure::new(
            Code::UnknownOperation,
            format!(
                "no operation named `{}` in the text",
                operation_name.unwrap_or_default()
            ),
        )
    })
}

/// The router's JSON answer to the operation; its errors when it has no data.
pub async fn execute(caller: &Caller<'_>, args: ExecuteArgs) -> Outcome {
    let mcp = &caller.instance.config.mcp;
    match operation_type(
        &args.query,
        args.operation_name.as_deref(),
        &caller.instance.config.limits,
    )? {
        OperationType::Query => {}
        OperationType::Mutation if mcp.allow_mutations => {}
        OperationType::Mutation => {
            return Err(Failure::new(
                Code::MutationRefused,
                "mutations are not run through MCP here (`mcp.allow_mutations` is false)",
            ))
        }
        OperationType::Subscription => {
            return Err(Failure::new(
                Code::SubscriptionRefused,
                "subscriptions are not run through MCP",
            ))
        }
    }
    let mut body = serde_json::json!({ "query": args.query });
    if let Some(variables) = args.variables {
        body["variables"] = serde_json::Value::Object(variables);
    }
    if let Some(name) = args.operation_name {
        body["operationName"] = serde_json::Value::String(name);
    }
    let url = mcp.graphql_url();
    let response = caller
        .client
        .post(&url)
        .headers(forwarded_headers(&caller.parts.headers))
        .json(&body)
        .send()
        .await
        .map_err(|e| {
            Failure::new(
                Code::Unreachable,
                format!("the router's GraphQL endpoint {url} did not answer: {e}"),
            )
        })?;
    let status = response.status();
    let bytes = response.bytes().await.map_err(|e| {
        Failure::new(
            Code::Unreachable,
            format!("the router's answer broke off: {e}"),
        )
    })?;
    let answer: Value = serde_json::from_slice(&bytes).map_err(|_| {
        Failure::new(
            Code::UnsupportedResponse,
            format!("the router answered {status} with a body that is not JSON"),
        )
    })?;
    let has_data = answer.get("data").is_some_and(|d| !d.is_null());
    match answer.get("errors").and_then(Value::as_array) {
        Some(errors) if !has_data && !errors.is_empty() => Err(Failure(errors.clone())),
        _ => Ok(serde_json::to_string(&answer).unwrap_or_default()),
    }
}

/// The caller's headers, for the router to see the same client: its credentials and
/// tenant, without those of the MCP exchange and the connection.
fn forwarded_headers(headers: &http::HeaderMap) -> http::HeaderMap {
    let mut forwarded = headers.clone();
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
    ] {
        forwarded.remove(name);
    }
    for name in [
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
        "keep-alive",
    ] {
        forwarded.remove(name);
    }
    forwarded
}

/// Which tools exist, for the caller to dispatch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Search,
    Introspect,
    Validate,
    Execute,
}

impl Tool {
    pub const ALL: [Tool; 4] = [
        Tool::Search,
        Tool::Introspect,
        Tool::Validate,
        Tool::Execute,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Search => "search",
            Tool::Introspect => "introspect",
            Tool::Validate => "validate",
            Tool::Execute => "execute",
        }
    }

    pub fn named(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }
}
