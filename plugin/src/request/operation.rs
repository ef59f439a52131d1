//! One operation that uses the new fields, taken apart: parsed and validated against the API
//! schema extended with the semantic-introspection additions, its root selection split into
//! the part the plugin answers (`__search`, `__definitions`, `__typename`) and the part the
//! router answers, and the two `data` objects merged back in the operation's own field order.
//!
//! Root fragments (named or inline) are split too: a spread whose fragment mixes both kinds
//! becomes an inline fragment on each side, and each side keeps only the fragments and
//! variables it still uses, so both are valid operations.

use std::collections::HashSet;
use std::sync::Arc;

use apollo_compiler::ast::{OperationType, Value as AstValue};
use apollo_compiler::executable::{
    DirectiveList, Fragment, InlineFragment, Operation, Selection, SelectionSet,
};
use apollo_compiler::validation::{DiagnosticList, Valid};
use apollo_compiler::{ExecutableDocument, Name, Node, Schema};
use serde_json_bytes::Value;

use crate::config::Limits;
use crate::error::{Code, Refusal, RequestError};
use crate::request::graphql::{JsonMap, DEFINITIONS, PROMPTS, SEARCH};

/// The file name the router gives an operation, which error messages may show.
pub(crate) const SOURCE_NAME: &str = "query.graphql";

/// The semantic-introspection additions (the RFC revision this plugin implements). `{query}`
/// is replaced by the name of the schema's query root.
const ADDITIONS: &str = r#"
"""
Represents a schema definition matched by semantic search.
"""
type __SearchResult {
  "Schema coordinate identifying the matched definition."
  coordinate: String!
  "The matched schema definition."
  definition: __SchemaDefinition!
  "Paths from a root field to the matched definition, each a list of schema coordinates."
  pathsToRoot: [[String!]!]!
  "Relevance score for the match, in [0, 1]."
  score: Float
  "Opaque pagination cursor for this result: pass it as `after` for the next page."
  cursor: String!
}

"""
Union of all introspectable schema definitions that can be discovered through semantic search.
"""
union __SchemaDefinition = __Type | __Field | __InputValue | __EnumValue | __Directive

"""
An example demonstrating how to use a schema definition.
"""
type __Example {
  "Example GraphQL operation demonstrating usage."
  operation: String!
  "Human-readable description of what this example demonstrates."
  description: String
}

extend type __Type {
  "Usage examples for this type."
  examples: [__Example!]
}

extend type __Field {
  "Usage examples for this field."
  examples: [__Example!]
}

extend type __InputValue {
  "Usage examples for this input."
  examples: [__Example!]
}

extend type __EnumValue {
  "Usage examples for this enum value."
  examples: [__Example!]
}

extend type __Directive {
  "Usage examples for this directive."
  examples: [__Example!]
}

extend type {query} {
  "Search the schema for capabilities matching the provided query."
  __search(
    "Natural language query or search term."
    query: String!
    "Maximum number of results to return."
    first: Int! = 10
    "Opaque cursor for forward pagination."
    after: String
    "Optional minimum score required for a result to be included."
    minScore: Float
  ): [__SearchResult!]!

  "Resolves schema definitions by their schema coordinates, in input order."
  __definitions(
    "List of schema coordinates to resolve."
    coordinates: [String!]!
  ): [__SchemaDefinition!]!

  """
  Retrieve all prompt templates defined in the schema.
  Prompts provide pre-defined interaction patterns for AI agents.
  """
  __prompts: [__Prompt!]!
}

"""
A prompt template that guides AI agent interaction with the API.
"""
type __Prompt {
  "Unique identifier for this prompt."
  name: String!
  "Human-readable description of what this prompt accomplishes."
  description: String
  "Arguments that can be passed to customize the prompt."
  arguments: [__InputValue!]!
}
"#;

/// The API schema with the additions, which operations using the new fields are checked
/// against.
pub struct SemanticSchema {
    pub schema: Valid<Schema>,
    pub query_root: Name,
}

/// Why an API schema cannot take the additions.
#[derive(Debug, thiserror::Error)]
pub enum SemanticSchemaError {
    #[error("the API schema has no query root type")]
    NoQueryRoot,
    #[error("cannot extend the API schema: {0}")]
    Extend(DiagnosticList),
}

impl SemanticSchema {
    pub fn new(api: &Valid<Schema>) -> Result<Self, SemanticSchemaError> {
        let query_root = api
            .schema_definition
            .query
            .as_ref()
            .map(|name| name.name.clone())
            .ok_or(SemanticSchemaError::NoQueryRoot)?;
        let sdl = format!("{api}\n{}", ADDITIONS.replace("{query}", &query_root));
        // Names starting with `__` are reserved for the specification, which these additions
        // extend; schema validation would refuse them, so the parse result is taken as valid
        // (the API schema itself was validated when the catalog was built).
        let schema = Schema::parse(sdl, "semantic-introspection.graphql")
            .map_err(|e| SemanticSchemaError::Extend(e.errors))?;
        Ok(SemanticSchema {
            schema: Valid::assume_valid(schema),
            query_root,
        })
    }
}

/// An operation that uses the new fields, checked and split.
pub struct Prepared {
    pub document: Arc<Valid<ExecutableDocument>>,
    /// The operation with only the fields the plugin answers at its root.
    pub semantic: Arc<Node<Operation>>,
    /// The rest, as a request for the router; `None` when nothing is left.
    pub forwarded: Option<Forwarded>,
    /// Root response keys in the operation's order (before `@skip`/`@include`).
    pub response_keys: Vec<String>,
    /// `__search` and `__definitions` fields at the root.
    pub semantic_fields: usize,
    /// The whole operation, when its `__schema` and `__type` fields are answered here.
    pub introspection: Option<Node<Operation>>,
}

/// The part of an operation the router answers.
#[derive(Debug)]
pub struct Forwarded {
    pub query: String,
    pub operation_name: Option<String>,
    pub variables: JsonMap,
}

/// What parsing found.
pub enum Parsed {
    /// The chosen operation has no semantic field at its root: pass the request through.
    PassThrough,
    Semantic(Prepared),
}

/// Takes `query` apart. With `local_introspection`, `__schema` and `__type` are answered here
/// (from a contract's schema) rather than by the router.
pub fn prepare(
    schema: &SemanticSchema,
    query: &str,
    operation_name: Option<&str>,
    variables: &JsonMap,
    local_introspection: bool,
    limits: &Limits,
) -> Result<Parsed, Refusal> {
    let document = parse_and_validate(&schema.schema, query, limits)?;
    let operation = document.operations.get(operation_name).map_err(|e| {
        Refusal::from(&RequestError::new(
            Code::UnknownOperation,
            e.message().to_string(),
        ))
    })?;
    if operation.operation_type != OperationType::Query {
        return Ok(Parsed::PassThrough);
    }
    let fragments = &document.fragments;
    let mut semantic_fields = 0;
    let mut introspection = false;
    visit_root_fields(&operation.selection_set, fragments, &mut |field| {
        semantic_fields += usize::from(is_semantic(field));
        introspection |= local_introspection && is_introspection(field);
    });
    if semantic_fields == 0 && !introspection {
        return Ok(Parsed::PassThrough);
    }
    let mut response_keys = Vec::new();
    visit_root_fields_keys(&operation.selection_set, fragments, &mut response_keys);

    let semantic = prune(operation, fragments, &|name| {
        is_semantic(name) || name == "__typename"
    });
    let forwarded = prune(operation, fragments, &|name| {
        !is_semantic(name)
            && name != "__typename"
            && !(local_introspection && is_introspection(name))
    });
    let forwarded = if forwarded.selection_set.selections.is_empty() {
        None
    } else {
        Some(forwarded_request(&document, forwarded, variables))
    };
    Ok(Parsed::Semantic(Prepared {
        introspection: introspection.then(|| operation.clone()),
        semantic: Arc::new(Node::new(semantic)),
        document: Arc::new(document),
        forwarded,
        response_keys,
        semantic_fields,
    }))
}

fn is_introspection(name: &str) -> bool {
    name == "__schema" || name == "__type"
}

fn is_semantic(name: &str) -> bool {
    name == SEARCH || name == DEFINITIONS || name == PROMPTS
}

/// `query`'s syntax, within the parser limits: every syntax error, `PARSING_ERROR`.
pub fn parse(query: &str, limits: &Limits) -> Result<apollo_compiler::ast::Document, Refusal> {
    apollo_compiler::parser::Parser::new()
        .token_limit(limits.parser_max_tokens)
        .recursion_limit(limits.parser_max_recursion)
        .parse_ast(query, SOURCE_NAME)
        .map_err(|invalid| {
            Refusal::from_diagnostics(&invalid.errors, Code::ParseFailed, |message| {
                format!("parsing error: {message}")
            })
        })
}

/// [`parse_and_validate`] without its one leniency: every validation error counts, as for an
/// operation nothing validates again.
pub fn parse_and_validate_strictly(
    schema: &Valid<Schema>,
    query: &str,
    limits: &Limits,
) -> Result<Valid<ExecutableDocument>, Refusal> {
    parse(query, limits)?
        .to_executable_validate(schema)
        .map_err(|invalid| {
            Refusal::from_diagnostics(&invalid.errors, Code::ValidationFailed, str::to_string)
        })
}

/// As the router does, and with its errors (graphql-js's words): syntax first (every syntax
/// error, `PARSING_ERROR`), then the document against `schema` (every validation error,
/// `GRAPHQL_VALIDATION_FAILED`), so that a tenant is told what a router serving its schema
/// would tell it.
pub fn parse_and_validate(
    schema: &Valid<Schema>,
    query: &str,
    limits: &Limits,
) -> Result<Valid<ExecutableDocument>, Refusal> {
    match parse(query, limits)?.to_executable_validate(schema) {
        Ok(valid) => Ok(valid),
        // The specification's own introspection types differ in nullability (`__Type.name`
        // is `String`, `__Field.name` is `String!`), so a selection such as
        // `definition { ... on __Type { name } ... on __Field { name } }` (the RFC's own
        // example) breaks the same-response-shape rule although one definition is only
        // ever one of them. Those conflicts alone are let through; the part forwarded to
        // the router is validated again there.
        Err(invalid) if only_conflicting_types(&invalid.errors) => {
            Ok(Valid::assume_valid(invalid.partial))
        }
        Err(invalid) => Err(Refusal::from_diagnostics(
            &invalid.errors,
            Code::ValidationFailed,
            str::to_string,
        )),
    }
}

/// The one validation failure let through (see [`parse_and_validate`]).
fn only_conflicting_types(diagnostics: &apollo_compiler::validation::DiagnosticList) -> bool {
    diagnostics
        .iter()
        .all(|d| d.error.unstable_error_name() == Some("ConflictingFieldType"))
}

/// Calls `visit` with the name of every field at the root, through root fragments.
fn visit_root_fields(
    selection_set: &SelectionSet,
    fragments: &apollo_compiler::executable::FragmentMap,
    visit: &mut dyn FnMut(&str),
) {
    let mut seen = HashSet::new();
    walk_root(selection_set, fragments, &mut seen, &mut |field| {
        visit(field.name.as_str())
    });
}

fn visit_root_fields_keys(
    selection_set: &SelectionSet,
    fragments: &apollo_compiler::executable::FragmentMap,
    keys: &mut Vec<String>,
) {
    let mut seen = HashSet::new();
    walk_root(selection_set, fragments, &mut seen, &mut |field| {
        let key = field.response_key().as_str();
        if !keys.iter().any(|k| k == key) {
            keys.push(key.to_string());
        }
    });
}

fn walk_root<'a>(
    selection_set: &'a SelectionSet,
    fragments: &'a apollo_compiler::executable::FragmentMap,
    seen: &mut HashSet<&'a str>,
    visit: &mut dyn FnMut(&'a apollo_compiler::executable::Field),
) {
    for selection in &selection_set.selections {
        match selection {
            Selection::Field(field) => visit(field),
            Selection::InlineFragment(inline) => {
                walk_root(&inline.selection_set, fragments, seen, visit)
            }
            Selection::FragmentSpread(spread) => {
                if let Some(fragment) = fragments.get(&spread.fragment_name) {
                    if seen.insert(fragment.name.as_str()) {
                        walk_root(&fragment.selection_set, fragments, seen, visit);
                    }
                }
            }
        }
    }
}

/// The operation with only the root fields `keep` accepts; root fragment spreads become
/// inline fragments holding what they keep.
fn prune(
    operation: &Operation,
    fragments: &apollo_compiler::executable::FragmentMap,
    keep: &dyn Fn(&str) -> bool,
) -> Operation {
    let mut pruned = operation.clone();
    pruned.selection_set = prune_selection_set(&operation.selection_set, fragments, keep, 0);
    pruned
}

fn prune_selection_set(
    selection_set: &SelectionSet,
    fragments: &apollo_compiler::executable::FragmentMap,
    keep: &dyn Fn(&str) -> bool,
    depth: usize,
) -> SelectionSet {
    let mut pruned = SelectionSet {
        ty: selection_set.ty.clone(),
        selections: Vec::new(),
    };
    // Validation refuses fragment cycles; the depth bound is a second guard.
    if depth > 64 {
        return pruned;
    }
    for selection in &selection_set.selections {
        match selection {
            Selection::Field(field) => {
                if keep(field.name.as_str()) {
                    pruned.selections.push(selection.clone());
                }
            }
            Selection::InlineFragment(inline) => {
                let inner = prune_selection_set(&inline.selection_set, fragments, keep, depth + 1);
                if !inner.selections.is_empty() {
                    let mut inline = inline.as_ref().clone();
                    inline.selection_set = inner;
                    pruned
                        .selections
                        .push(Selection::InlineFragment(Node::new(inline)));
                }
            }
            Selection::FragmentSpread(spread) => {
                let Some(fragment) = fragments.get(&spread.fragment_name) else {
                    continue;
                };
                let inner =
                    prune_selection_set(&fragment.selection_set, fragments, keep, depth + 1);
                if inner.selections.is_empty() {
                    continue;
                }
                if inner == fragment.selection_set {
                    pruned.selections.push(selection.clone());
                } else {
                    pruned
                        .selections
                        .push(Selection::InlineFragment(Node::new(InlineFragment {
                            type_condition: Some(fragment.selection_set.ty.clone()),
                            directives: spread.directives.clone(),
                            selection_set: inner,
                        })));
                }
            }
        }
    }
    pruned
}

/// The document holding only `operation`, the fragments it uses and the variables it uses.
fn forwarded_request(
    document: &ExecutableDocument,
    mut operation: Operation,
    variables: &JsonMap,
) -> Forwarded {
    let mut used = Used::default();
    used.directives(&operation.directives);
    used.selection_set(&operation.selection_set, &document.fragments);
    operation
        .variables
        .retain(|definition| used.variables.contains(definition.name.as_str()));
    let mut forwarded = ExecutableDocument::new();
    forwarded.fragments = document
        .fragments
        .iter()
        .filter(|(name, _)| used.fragments.contains(name.as_str()))
        .map(|(name, fragment)| (name.clone(), fragment.clone()))
        .collect();
    let operation_name = operation.name.as_ref().map(|n| n.to_string());
    match operation.name.clone() {
        Some(name) => {
            forwarded
                .operations
                .named
                .insert(name, Node::new(operation));
        }
        None => forwarded.operations.anonymous = Some(Node::new(operation)),
    }
    Forwarded {
        query: forwarded.to_string(),
        operation_name,
        variables: variables
            .iter()
            .filter(|(name, _)| used.variables.contains(name.as_str()))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
    }
}

/// Variables and fragments a selection uses.
#[derive(Default)]
struct Used {
    variables: HashSet<String>,
    fragments: HashSet<String>,
}

impl Used {
    fn selection_set(
        &mut self,
        selection_set: &SelectionSet,
        fragments: &apollo_compiler::executable::FragmentMap,
    ) {
        for selection in &selection_set.selections {
            match selection {
                Selection::Field(field) => {
                    for argument in &field.arguments {
                        self.value(&argument.value);
                    }
                    self.directives(&field.directives);
                    self.selection_set(&field.selection_set, fragments);
                }
                Selection::InlineFragment(inline) => {
                    self.directives(&inline.directives);
                    self.selection_set(&inline.selection_set, fragments);
                }
                Selection::FragmentSpread(spread) => {
                    self.directives(&spread.directives);
                    if self.fragments.insert(spread.fragment_name.to_string()) {
                        if let Some(fragment) = fragments.get(&spread.fragment_name) {
                            self.fragment(fragment, fragments);
                        }
                    }
                }
            }
        }
    }

    fn fragment(
        &mut self,
        fragment: &Node<Fragment>,
        fragments: &apollo_compiler::executable::FragmentMap,
    ) {
        self.directives(&fragment.directives);
        self.selection_set(&fragment.selection_set, fragments);
    }

    fn directives(&mut self, directives: &DirectiveList) {
        for directive in directives.iter() {
            for argument in &directive.arguments {
                self.value(&argument.value);
            }
        }
    }

    fn value(&mut self, value: &AstValue) {
        match value {
            AstValue::Variable(name) => {
                self.variables.insert(name.to_string());
            }
            AstValue::List(items) => items.iter().for_each(|item| self.value(item)),
            AstValue::Object(fields) => fields.iter().for_each(|(_, item)| self.value(item)),
            _ => {}
        }
    }
}

/// Merges the plugin's `data` and the router's in the order of `keys`. `None` for the router's
/// part means it was not asked; `Some(Value::Null)` means it failed as a whole.
pub fn merge_data(keys: &[String], ours: Option<Value>, router: Option<Value>) -> Value {
    let (Some(Value::Object(ours)), router) = (ours, router) else {
        return Value::Null;
    };
    let router = match router {
        None => JsonMap::new(),
        Some(Value::Object(router)) => router,
        Some(_) => return Value::Null,
    };
    let mut merged = JsonMap::new();
    for key in keys {
        if let Some(value) = ours.get(key.as_str()).or_else(|| router.get(key.as_str())) {
            merged.insert(key.as_str(), value.clone());
        }
    }
    Value::Object(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json_bytes::json;

    fn schema() -> SemanticSchema {
        let api = Schema::parse_and_validate(
            "type Query { user(id: ID!): User users: [User] }
             type User { id: ID! name: String }",
            "api.graphql",
        )
        .expect("valid");
        SemanticSchema::new(&api).expect("extends")
    }

    fn prepared(query: &str, name: Option<&str>, variables: JsonMap) -> Prepared {
        match prepare(
            &schema(),
            query,
            name,
            &variables,
            false,
            &Limits::default(),
        ) {
            Ok(Parsed::Semantic(prepared)) => prepared,
            Ok(Parsed::PassThrough) => panic!("passed through"),
            Err(e) => panic!("{}", e.body()),
        }
    }

    #[test]
    fn splits_a_mixed_operation_with_fragments_and_variables() {
        let variables = json!({ "q": "find users", "id": "1", "unused": 3 });
        let Value::Object(variables) = variables else {
            unreachable!()
        };
        let prepared = prepared(
            "query Mixed($q: String!, $id: ID!) {
               ...Both
               users { id }
               hits: __search(query: $q) { coordinate }
             }
             fragment Both on Query { user(id: $id) { ...UserName } __definitions(coordinates: [\"User\"]) { __typename } }
             fragment UserName on User { name }",
            None,
            variables,
        );
        assert_eq!(prepared.semantic_fields, 2);
        assert_eq!(
            prepared.response_keys,
            ["user", "__definitions", "users", "hits"]
        );
        let forwarded = prepared.forwarded.expect("router part");
        assert_eq!(forwarded.operation_name.as_deref(), Some("Mixed"));
        assert!(!forwarded.query.contains("__search"), "{}", forwarded.query);
        assert!(
            !forwarded.query.contains("__definitions"),
            "{}",
            forwarded.query
        );
        assert!(!forwarded.query.contains("$q"), "{}", forwarded.query);
        assert!(
            forwarded.query.contains("fragment UserName"),
            "{}",
            forwarded.query
        );
        assert!(
            !forwarded.query.contains("fragment Both"),
            "{}",
            forwarded.query
        );
        assert_eq!(forwarded.variables.len(), 1);
        // The forwarded part is itself a valid operation.
        let api = Schema::parse_and_validate(
            "type Query { user(id: ID!): User users: [User] } type User { id: ID! name: String }",
            "api.graphql",
        )
        .expect("valid");
        ExecutableDocument::parse_and_validate(&api, &forwarded.query, "f.graphql")
            .unwrap_or_else(|e| panic!("{}\n{}", forwarded.query, e.errors));
    }

    #[test]
    fn only_semantic_fields_forward_nothing() {
        let prepared = prepared(
            "{ __typename __search(query: \"x\") { coordinate } }",
            None,
            JsonMap::new(),
        );
        assert!(prepared.forwarded.is_none());
    }

    #[test]
    fn errors_carry_codes_and_other_operations_pass() {
        let schema = schema();
        let error = |query: &str, name: Option<&str>| match prepare(
            &schema,
            query,
            name,
            &JsonMap::new(),
            false,
            &Limits::default(),
        ) {
            Err(e) => e.errors[0]["extensions"]["code"]
                .as_str()
                .map(str::to_string),
            Ok(_) => panic!("accepted {query}"),
        };
        let code = |code: Code| Some(code.as_str().to_string());
        assert_eq!(
            error("{ __search(query: \"x\"", None),
            code(Code::ParseFailed)
        );
        assert_eq!(
            error("{ __search(query: \"x\", bogus: 1) { coordinate } }", None),
            code(Code::ValidationFailed)
        );
        assert_eq!(
            error("{ __search { coordinate } }", None),
            code(Code::ValidationFailed)
        );
        assert_eq!(
            error(
                "query A { __search(query: \"x\") { coordinate } } query B { users { id } }",
                Some("C")
            ),
            code(Code::UnknownOperation)
        );
        let other = prepare(
            &schema,
            "query A { __search(query: \"x\") { coordinate } } query B { users { id } }",
            Some("B"),
            &JsonMap::new(),
            false,
            &Limits::default(),
        );
        assert!(matches!(other, Ok(Parsed::PassThrough)));
    }

    #[test]
    fn the_rfc_example_selection_is_accepted() {
        prepared(
            "{ __definitions(coordinates: [\"Query.user\", \"User\"]) {
                 ... on __Type { name kind fields { name } }
                 ... on __Field { name description args { name } }
             } }",
            None,
            JsonMap::new(),
        );
    }

    #[test]
    fn merges_in_operation_order() {
        let keys = ["a", "b", "c"].map(String::from);
        let merged = merge_data(
            &keys,
            Some(json!({ "c": 3, "a": 1 })),
            Some(json!({ "b": 2 })),
        );
        assert_eq!(merged.to_string(), r#"{"a":1,"b":2,"c":3}"#);
        assert_eq!(
            merge_data(&keys, Some(json!({ "a": 1 })), Some(Value::Null)),
            Value::Null
        );
    }
}
