//! The four tools: their definitions (the argument structs' doc comments become the input
//! schemas a model reads) and what each does. `search` and `introspect` ask the router's
//! GraphQL endpoint for `__search` and `__definitions` as the caller (so the router's
//! authentication and the plugin's contract, introspection setting, limits and quota hold as
//! for any GraphQL client), then print what was found as SDL ([`super::slice`]); `validate`
//! checks an operation against the tenant's schema once the router admitted the caller;
//! `execute` posts the operation to the router.

use std::sync::Arc;

use apollo_compiler::ast::{Definition, OperationType};
use rmcp::model::ToolAnnotations;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json_bytes::Value;

use super::slice::Slice;
use super::Caller;
use crate::error::{Code, Refusal, RequestError};
use crate::request::definitions::normalized;
use crate::request::operation;

/// Results `search` returns when `first` is not given: a page a model reads at a glance.
pub const DEFAULT_FIRST: i32 = 5;

/// Deepest `introspect` walks from the members asked for.
pub const MAX_DEPTH: usize = 3;

/// What a tool answers: text for the model, or GraphQL errors (each with
/// `extensions.code`).
pub type Outcome = Result<String, Refusal>;

/// A tool's errors as the model reads them: `{"errors": [...]}`.
pub fn text(refusal: &Refusal) -> String {
    serde_json::to_string(&refusal.body()).unwrap_or_default()
}

/// Find what an operation needs, in plain words.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What you are looking for, in plain words or names: "books a customer ordered",
    /// "cancel a subscription", "repository stars".
    pub query: String,
    /// How many results (default 5, or the gateway's `limits.max_first` when lower).
    pub first: Option<i32>,
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
best matches as schema coordinates (`Type.field`) with a score from 0 to 1 and the shortest way \
to each from a root type, then the SDL of just those members, the fields on the way, and the \
types needed to use them, and an example operation for each (one clients run, else the shortest \
one that reaches it). Start here; use `introspect` to see more of a type, `validate` to \
check the operation you write, and `execute` to run it.";

pub const INTROSPECT_DESCRIPTION: &str = "Show the SDL of types or fields by schema coordinate \
(`Customer`, `Customer.orders`, `Query.book(isbn:)`), with the types they reference `depth` \
levels deep (0: only them; default 1), then an example operation for each. Use it after \
`search` to see all fields of a type or the shape of an input type before writing an operation.";

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
) -> Result<T, Refusal> {
    serde_json::from_value(serde_json::Value::Object(arguments.unwrap_or_default())).map_err(|e| {
        RequestError::new(
            Code::InvalidToolArguments,
            format!("`{tool}` arguments: {e}"),
        )
        .into()
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
    let max_first = i32::try_from(caller.instance.config.limits.max_first).unwrap_or(i32::MAX);
    let first = args.first.unwrap_or(DEFAULT_FIRST.min(max_first));
    let variables = serde_json::json!({
        "query": args.query,
        "first": first,
        "after": args.after,
        "minScore": args.min_score,
    });
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
    if let Some(cursor) =
        last_cursor.filter(|_| i32::try_from(hits.len()).is_ok_and(|n| n >= first))
    {
        text.push_str(&format!("next page: after \"{cursor}\"\n"));
    }
    let room = caller
        .instance
        .config
        .mcp
        .max_text_chars
        .saturating_sub(text.len());
    let sdl = slice.sdl(room);
    if !sdl.is_empty() {
        text.push_str(&format!("\n```graphql\n{sdl}```\n"));
    }
    let coordinates = hits
        .iter()
        .filter_map(|hit| hit.get("coordinate").and_then(Value::as_str));
    push_examples(caller, coordinates, EXAMPLES_FENCED, &mut text);
    Ok(text)
}

/// Around the examples of a `search` answer.
const EXAMPLES_FENCED: &str = "\nExample operations:\n```graphql\n{}```\n";
/// Around the examples of an `introspect` answer, which stays one GraphQL document.
const EXAMPLES_IN_DOCUMENT: &str = "\n# Example operations\n{}";

/// Each coordinate's best example (learned first, else made from the schema), once per
/// operation, in `frame`, as long as the text stays within `mcp.max_text_chars`.
fn push_examples<'c>(
    caller: &Caller<'_>,
    coordinates: impl Iterator<Item = &'c str>,
    frame: &str,
    text: &mut String,
) {
    let room = caller.instance.config.mcp.max_text_chars;
    let mut block = String::new();
    let mut shown = Vec::new();
    for coordinate in coordinates {
        let Some(example) = caller.view.scope.best_example(coordinate) else {
            continue;
        };
        if shown.contains(&example.operation) {
            continue;
        }
        let entry = format!(
            "# {coordinate}: {}\n{}\n",
            example.description, example.operation
        );
        if text.len() + block.len() + entry.len() + frame.len() > room {
            break;
        }
        block.push_str(&entry);
        shown.push(example.operation);
    }
    if !block.is_empty() {
        text.push_str(&frame.replace("{}", &block));
    }
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
        return Err(RequestError::new(
            Code::InvalidToolArguments,
            format!("`depth` is {depth}; at most {MAX_DEPTH} levels are walked"),
        )
        .into());
    }
    if args.coordinates.is_empty() {
        return Err(RequestError::new(
            Code::InvalidToolArguments,
            "`coordinates` is empty: name at least one type or coordinate",
        )
        .into());
    }
    // As `__definitions` reads them.
    let coordinates: Vec<String> = args.coordinates.iter().map(|c| normalized(c)).collect();
    // Resolving them as `__definitions` does is what makes a hidden coordinate read exactly
    // as an unknown one, and applies the same setting, limits and quota.
    caller
        .own(
            DEFINITIONS_OPERATION,
            serde_json::json!({ "coordinates": coordinates }),
        )
        .await?;
    let scope = caller.view.scope.clone();
    let room = caller.instance.config.mcp.max_text_chars;
    let asked = coordinates.clone();
    let mut text = caller
        .instance
        .blocking(move || {
            let mut slice = Slice::new(&scope);
            for coordinate in &coordinates {
                if !slice.member(coordinate, depth) {
                    return Err(RequestError::new(
                        Code::UnknownCoordinate,
                        format!("`{coordinate}` is not a coordinate of this schema"),
                    )
                    .into());
                }
            }
            Ok::<_, Refusal>(slice.sdl(room))
        })
        .await??;
    push_examples(
        caller,
        asked.iter().map(String::as_str),
        EXAMPLES_IN_DOCUMENT,
        &mut text,
    );
    Ok(text)
}

/// `valid`, or the errors the gateway would answer the caller's operation with, once the
/// router admitted the caller.
pub async fn validate(caller: &Caller<'_>, args: ValidateArgs) -> Outcome {
    // The router's authentication and coprocessors decide who may ask, as for `execute`.
    caller.own("{ __typename }", serde_json::json!({})).await?;
    let schema = Arc::clone(&caller.view.schema);
    let limits = caller.instance.config.limits.clone();
    let verdict = caller
        .instance
        .blocking(move || {
            operation::parse_and_validate_strictly(&schema.schema, &args.operation, &limits)
                .map(|_| ())
        })
        .await?;
    Ok(match verdict {
        Ok(()) => "valid".to_string(),
        Err(refusal) => text(&refusal),
    })
}

/// What kind of operation `query` runs (`operation_name` picks one of several): the parse
/// errors, or an error when it cannot be told.
fn operation_type(
    query: &str,
    operation_name: Option<&str>,
    limits: &crate::config::Limits,
) -> Result<OperationType, Refusal> {
    let document = operation::parse(query, limits)?;
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
            return Err(RequestError::new(
                Code::UnknownOperation,
                format!(
                    "the text holds {} operations: name the one to run with `operationName`",
                    operations.len()
                ),
            )
            .into())
        }
    };
    chosen.map(|o| o.operation_type).ok_or_else(|| {
        RequestError::new(
            Code::UnknownOperation,
            format!(
                "no operation named `{}` in the text",
                operation_name.unwrap_or_default()
            ),
        )
        .into()
    })
}

/// The router's JSON answer to the operation; its errors when it has no data.
pub async fn execute(caller: &Caller<'_>, args: ExecuteArgs) -> Outcome {
    let allow_mutations = caller.instance.config.mcp.allow_mutations;
    let kind = operation_type(
        &args.query,
        args.operation_name.as_deref(),
        &caller.instance.config.limits,
    )?;
    match kind {
        OperationType::Query => {}
        OperationType::Mutation if allow_mutations => {}
        OperationType::Mutation => {
            return Err(RequestError::new(
                Code::MutationRefused,
                "mutations are not run through MCP here (`mcp.allow_mutations` is false)",
            )
            .into())
        }
        OperationType::Subscription => {
            return Err(RequestError::new(
                Code::SubscriptionRefused,
                "subscriptions are not run through MCP",
            )
            .into())
        }
    }
    let read_only = kind == OperationType::Query;
    let answer = caller
        .graphql(
            &serde_json::json!({
                "query": args.query,
                "variables": args.variables,
                "operationName": args.operation_name,
            }),
            read_only,
        )
        .await?;
    let has_data = answer.get("data").is_some_and(|d| !d.is_null());
    match answer.get("errors").and_then(Value::as_array) {
        Some(errors) if !has_data && !errors.is_empty() => Err(Refusal::of(errors.clone())),
        _ => Ok(serde_json::to_string(&answer).unwrap_or_default()),
    }
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

    /// What `tools/list` says of it.
    pub fn definition(self, allow_mutations: bool) -> rmcp::model::Tool {
        let (description, schema) = match self {
            Tool::Search => (SEARCH_DESCRIPTION.into(), input_schema::<SearchArgs>()),
            Tool::Introspect => (
                INTROSPECT_DESCRIPTION.into(),
                input_schema::<IntrospectArgs>(),
            ),
            Tool::Validate => (VALIDATE_DESCRIPTION.into(), input_schema::<ValidateArgs>()),
            Tool::Execute => (
                execute_description(allow_mutations),
                input_schema::<ExecuteArgs>(),
            ),
        };
        let read_only = self != Tool::Execute || !allow_mutations;
        rmcp::model::Tool::new(self.name(), description, schema)
            .with_annotations(ToolAnnotations::new().read_only(read_only))
    }
}
