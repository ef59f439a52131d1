//! Executes the plugin's part of an operation: `__search` asks the engine, `__definitions`
//! looks coordinates up in the catalog the router serves, and apollo-compiler's execution
//! walks whatever selection the client made below them (through [`crate::request::definitions`]).
//! A bad argument becomes a field error that carries an `extensions.code`.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

use apollo_compiler::executable::Operation;
use apollo_compiler::resolvers::{Execution, FieldError, ObjectValue, ResolveInfo, ResolvedValue};
use apollo_compiler::response::ExecutionResponse;
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Node};
use serde_json_bytes::Value;
use wayfinder_supergraph::ContractFilter;
use wayfinder_workers::cursor::CursorError;
use wayfinder_workers::insights::{Hit, Insights, Search};
use wayfinder_workers::{Engine, SearchError, SearchHit, SearchMode, SearchRequest};

use crate::config::Limits;
use crate::error::{Code, RequestError};
use crate::metrics::Metrics;
use crate::prompts::{Prompt, Prompts};
use crate::request::definitions::{self, Scope};
use crate::request::graphql::{JsonMap, DEFINITIONS, PROMPTS, SEARCH};
use crate::request::operation::SemanticSchema;

/// Everything one execution reads.
pub struct Answering<'a> {
    pub schema: &'a SemanticSchema,
    pub document: &'a Valid<ExecutableDocument>,
    pub operation: &'a Node<Operation>,
    pub variables: &'a JsonMap,
    pub engine: &'a Engine,
    pub limits: &'a Limits,
    /// The tenant's filter for `__search`; `None` sees everything.
    pub filter: Option<&'a ContractFilter>,
    /// The catalog the router serves now, through the tenant's contract, for `__definitions`.
    pub definitions: &'a Scope,
    /// The tenant's name (empty when no tenants are configured), for the latency metric and
    /// the prompts it sees.
    pub tenant: &'a str,
    pub prompts: &'a Prompts,
    pub metrics: &'a Metrics,
    /// Where a first page's question is reported, with the client's key, when the tenant is
    /// opted in to insights.
    pub insights: Option<(&'a Insights, u64)>,
}

/// What the execution produced, with what the searches found, for the request's span.
#[derive(Default)]
pub struct Answered {
    pub data: Option<Value>,
    pub errors: Vec<RequestErrorOrField>,
    pub hits: usize,
    pub generation: Option<u64>,
    pub lexical_only: bool,
    /// A search was answered lexically because no search thread was free in time.
    pub overloaded: bool,
}

/// An error of the plugin's part: a request error (no data at all) or a field error.
pub enum RequestErrorOrField {
    Request(RequestError),
    Field(apollo_compiler::response::GraphQLError),
}

pub fn execute(answering: &Answering<'_>) -> Answered {
    let root = Root {
        answering,
        coded: RefCell::default(),
        hits: RefCell::new(0),
        generation: RefCell::new(None),
        lexical_only: RefCell::new(false),
        overloaded: RefCell::new(false),
    };
    let execution = Execution::new(&answering.schema.schema, answering.document)
        .operation(answering.operation)
        .raw_variable_values(answering.variables)
        .enable_schema_introspection(false);
    let response = execution.execute_sync(&root);
    let coded = root.coded.into_inner();
    let (data, errors) = match response {
        Ok(ExecutionResponse { data, errors }) => {
            let errors = errors
                .into_iter()
                .map(|mut error| {
                    // Execution prefixes resolver messages ("resolver error: ..."); an error
                    // raised here keeps its own words and gets its code.
                    let code = match coded
                        .iter()
                        .find(|(message, _)| error.message.ends_with(message.as_str()))
                    {
                        Some((message, code)) => {
                            error.message = message.clone();
                            *code
                        }
                        // Execution's own field errors coerce arguments: `first: $n` with
                        // `$n` null, for instance (found by bench/fuzz-http).
                        None if error.message.contains("argument") => Code::InvalidVariables,
                        None => Code::Internal,
                    };
                    error
                        .extensions
                        .insert("code", Value::String(code.as_str().into()));
                    RequestErrorOrField::Field(error)
                })
                .collect();
            (data.map(Value::Object), errors)
        }
        Err(error) => (
            None,
            vec![RequestErrorOrField::Request(RequestError::new(
                Code::InvalidVariables,
                error.message().to_string(),
            ))],
        ),
    };
    Answered {
        data,
        errors,
        hits: root.hits.into_inner(),
        generation: root.generation.into_inner(),
        lexical_only: root.lexical_only.into_inner(),
        overloaded: root.overloaded.into_inner(),
    }
}

/// The query root, answering the two new fields.
struct Root<'a> {
    answering: &'a Answering<'a>,
    /// Messages of the field errors raised here, with their codes.
    coded: RefCell<Vec<(String, Code)>>,
    hits: RefCell<usize>,
    generation: RefCell<Option<u64>>,
    lexical_only: RefCell<bool>,
    overloaded: RefCell<bool>,
}

impl Root<'_> {
    fn fail(&self, error: RequestError) -> FieldError {
        self.coded
            .borrow_mut()
            .push((error.message.clone(), error.code));
        FieldError {
            message: error.message,
        }
    }

    fn search<'b>(&'b self, arguments: &JsonMap) -> Result<ResolvedValue<'b>, RequestError> {
        let limits = self.answering.limits;
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
        if query.trim().is_empty() {
            return Err(RequestError::new(
                Code::QueryEmpty,
                "`query` must not be empty",
            ));
        }
        let chars = query.chars().count();
        if chars > limits.max_query_chars {
            return Err(RequestError::new(
                Code::QueryTooLong,
                format!(
                    "`query` has {chars} characters; at most {} are accepted",
                    limits.max_query_chars
                ),
            ));
        }
        let first = arguments.get("first").and_then(Value::as_i64).unwrap_or(10);
        if first < 1 || first > limits.max_first as i64 {
            return Err(RequestError::new(
                Code::FirstOutOfRange,
                format!(
                    "`first` must be between 1 and {}, got {first}",
                    limits.max_first
                ),
            ));
        }
        let min_score = arguments.get("minScore").and_then(Value::as_f64);
        let after = arguments.get("after").and_then(Value::as_str);
        let request = SearchRequest {
            query,
            first: first as usize,
            after,
            min_score,
            contract: self.answering.filter,
            admission: limits.admission(),
        };
        let started = Instant::now();
        let results = self.answering.engine.search(&request).map_err(|error| {
            if matches!(error, SearchError::Overloaded(_)) {
                self.answering
                    .metrics
                    .record_overload(self.answering.tenant, "refused");
            }
            search_error(error)
        })?;
        if results.overloaded.is_some() {
            *self.overloaded.borrow_mut() = true;
            self.answering
                .metrics
                .record_overload(self.answering.tenant, "lexical");
        }
        self.answering.metrics.record_search(
            started.elapsed(),
            self.answering.tenant,
            results.mode,
            !results.hits.is_empty(),
        );
        if let (Some((insights, client)), None) = (self.answering.insights, after) {
            let hits: Vec<Hit> = results
                .hits
                .iter()
                .map(|hit| Hit {
                    coordinate: hit.coordinate.clone(),
                    score: f64::from(hit.score),
                })
                .collect();
            let search = Search {
                tenant: self.answering.tenant,
                client,
                question: query,
                hits: &hits,
            };
            for reason in insights.searched(&search) {
                self.answering
                    .metrics
                    .record_unanswered(self.answering.tenant, reason);
            }
        }
        *self.hits.borrow_mut() += results.hits.len();
        *self.generation.borrow_mut() = Some(results.generation);
        *self.lexical_only.borrow_mut() |= results.mode == SearchMode::Lexical;
        let definitions = &self.answering.definitions;
        // The examples made for the instance's catalog serve the hits when the search ran on
        // it (not on a newer one, during a reload): a member's id is its catalog's.
        let made = match Arc::ptr_eq(&results.catalog, &definitions.catalog) {
            true => Arc::clone(&definitions.made),
            false => Arc::default(),
        };
        let scope = Arc::new(Scope {
            catalog: Arc::clone(&results.catalog),
            visibility: results.visibility.clone(),
            learned: definitions.learned.clone(),
            made,
        });
        let items: Vec<SearchResult> = results
            .hits
            .iter()
            .map(|hit| SearchResult {
                scope: Arc::clone(&scope),
                paths: results.paths_to_root(hit.member),
                hit: hit.clone(),
            })
            .collect();
        Ok(ResolvedValue::list(
            items.into_iter().map(ResolvedValue::object),
        ))
    }

    fn definitions<'b>(&'b self, arguments: &JsonMap) -> Result<ResolvedValue<'b>, RequestError> {
        let coordinates: Vec<&str> = match arguments.get("coordinates") {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            Some(Value::String(one)) => vec![one.as_str()],
            _ => Vec::new(),
        };
        let max = self.answering.limits.max_coordinates;
        if coordinates.len() > max {
            return Err(RequestError::new(
                Code::TooManyCoordinates,
                format!(
                    "`coordinates` has {} entries; at most {max} are resolved at once",
                    coordinates.len()
                ),
            ));
        }
        let scope = self.answering.definitions;
        let mut definitions = Vec::with_capacity(coordinates.len());
        for coordinate in coordinates {
            let normalized = definitions::normalized(coordinate);
            // A member the tenant may not see is reported exactly as one that does not exist.
            let definition = scope
                .member(&normalized)
                .and_then(|member| scope.definition(member))
                .ok_or_else(|| {
                    RequestError::new(
                        Code::UnknownCoordinate,
                        format!("`{coordinate}` is not a coordinate of this schema"),
                    )
                })?;
            definitions.push(definition);
        }
        Ok(ResolvedValue::list(definitions))
    }
}

fn search_error(error: SearchError) -> RequestError {
    let code = match &error {
        SearchError::NotReady => Code::NotReady,
        SearchError::QueryTooLong { .. } => Code::QueryTooLong,
        SearchError::FirstTooLarge { .. } => Code::FirstOutOfRange,
        SearchError::MinScore(_) => Code::MinScoreOutOfRange,
        SearchError::Cursor(CursorError::Stale { .. }) => Code::StaleCursor,
        SearchError::Cursor(_) => Code::InvalidCursor,
        SearchError::Overloaded(_) => Code::Overloaded,
        SearchError::Lexical(_) | SearchError::Vector(_) => Code::Internal,
    };
    RequestError::new(code, error.to_string())
}

impl ObjectValue for Root<'_> {
    fn type_name(&self) -> &str {
        self.answering.schema.query_root.as_str()
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        let result = match info.field_name() {
            SEARCH => self.search(info.arguments()),
            DEFINITIONS => self.definitions(info.arguments()),
            PROMPTS => {
                let tenant = Some(self.answering.tenant).filter(|t| !t.is_empty());
                let scope = self.answering.definitions;
                return Ok(ResolvedValue::list(
                    self.answering
                        .prompts
                        .visible_to(tenant)
                        .map(move |prompt| ResolvedValue::object(PromptValue { scope, prompt })),
                ));
            }
            // The operation handed over holds no other root field.
            _ => return Err(self.unknown_field_error(info)),
        };
        result.map_err(|error| self.fail(error))
    }
}

/// One `__SearchResult`.
struct SearchResult {
    scope: Arc<Scope>,
    hit: SearchHit,
    paths: Vec<Vec<String>>,
}

impl ObjectValue for SearchResult {
    fn type_name(&self) -> &str {
        "__SearchResult"
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        Ok(match info.field_name() {
            "coordinate" => ResolvedValue::leaf(self.hit.coordinate.as_str()),
            "definition" => {
                let member = self.scope.catalog.member(self.hit.member);
                self.scope.definition(member).ok_or_else(|| FieldError {
                    message: format!("`{}` has no definition in the schema", self.hit.coordinate),
                })?
            }
            "pathsToRoot" => ResolvedValue::list(self.paths.iter().map(|path| {
                ResolvedValue::list(path.iter().map(|c| ResolvedValue::leaf(c.as_str())))
            })),
            // Four decimals say all a score can: more would print f32 noise.
            "score" => ResolvedValue::leaf((f64::from(self.hit.score) * 1e4).round() / 1e4),
            "cursor" => ResolvedValue::leaf(self.hit.cursor.as_str()),
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}

/// One `__Prompt`.
struct PromptValue<'a> {
    scope: &'a Scope,
    prompt: &'a Prompt,
}

impl ObjectValue for PromptValue<'_> {
    fn type_name(&self) -> &str {
        "__Prompt"
    }

    fn resolve_field<'b>(
        &'b self,
        info: &'b ResolveInfo<'b>,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        Ok(match info.field_name() {
            "name" => ResolvedValue::leaf(self.prompt.name.as_str()),
            "description" => ResolvedValue::leaf(self.prompt.description.as_deref()),
            "arguments" => ResolvedValue::list(
                self.prompt
                    .definitions
                    .iter()
                    .map(|def| self.scope.prompt_argument(def)),
            ),
            _ => return Err(self.unknown_field_error(info)),
        })
    }
}
