//! Contracts beyond search: what a restricted tenant's standard introspection shows and which
//! operations it may run. The model is a router serving that contract alone: the same parse,
//! the same validation errors (graphql-js's words, `GRAPHQL_VALIDATION_FAILED`), the same
//! introspection, only over the contract's API schema.
//!
//! Flow: at instance build, each contract that hides something becomes a [`Gate`]: its API
//! schema ([`wayfinder_supergraph::Contract::api_schema`]), the same with the
//! semantic-introspection additions (what operations are validated against), and the input
//! types it narrows. Per request: operation text -> [`Gate::verdict`] (parsed and validated once
//! per text, the verdict kept in a bounded LRU keyed by the text's SHA-256) -> refused, or
//! allowed; variables whose types the contract narrows are coerced against it
//! ([`Gate::check_variables`]); `__schema` and `__type` are executed on the contract's schema
//! ([`Gate::introspect`]); and in the data of an operation that selects an enum the contract
//! narrows, a hidden value a subgraph returned becomes `null` ([`Gate::scrub`]), as the router
//! serving the contract would complete it.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use apollo_compiler::ast::Type;
use apollo_compiler::executable::{Operation, Selection, SelectionSet};
use apollo_compiler::schema::{ExtendedType, Implementers};
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Name, Schema};
use lru::LruCache;
use serde_json_bytes::Value;
use sha2::{Digest, Sha256};
use wayfinder_supergraph::{Catalog, Contract, ContractSchemaError};

use crate::config::Limits;
use crate::error::{Code, Refusal, RequestError};
use crate::request::graphql::JsonMap;
use crate::request::operation::{self, SemanticSchema, SemanticSchemaError};

/// Verdicts kept per contract. One is a hash, two flags or a few error messages: a thousand
/// cover the operations of most fleets of clients, and a miss costs one parse.
const VERDICTS_KEPT: usize = 1024;

/// Verdicts on longer texts are not kept (a refusal's messages may quote the text, and memory
/// stays bounded); such texts are checked each time.
const VERDICT_MAX_CHARS: usize = 16 * 1024;

/// One restricted contract's view of the API.
pub struct Gate {
    /// The contract's API schema: introspection answers from it.
    pub api: Valid<Schema>,
    /// The same with `__search` and `__definitions`: operations are validated against it.
    pub semantic: Arc<SemanticSchema>,
    implementers: apollo_compiler::collections::HashMap<Name, Implementers>,
    /// Input objects and enums that accept less than in the whole API (directly or through a
    /// field): a variable of one of them is coerced against the contract.
    narrowed: HashSet<Name>,
    /// The values each enum loses in the contract: a subgraph may still return them.
    hidden_values: HashMap<Name, HashSet<Name>>,
    verdicts: Mutex<LruCache<[u8; 32], Verdict>>,
    limits: Limits,
}

/// Whether a contract lets an operation text run.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// The response a router serving only the contract would give.
    Refused(Refusal),
    Allowed {
        /// Some operation of the document selects `__schema` or `__type`.
        introspection: bool,
        /// Some variable's type is narrowed by the contract: its values must be checked.
        narrowed_variables: bool,
        /// Some field selects an enum the contract narrows: the data must be scrubbed.
        narrowed_outputs: bool,
    },
}

/// Why a contract's view of the API cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Contract(#[from] ContractSchemaError),
    #[error(transparent)]
    SemanticSchema(#[from] SemanticSchemaError),
}

impl Gate {
    pub fn new(catalog: &Catalog, contract: &Contract, limits: &Limits) -> Result<Self, GateError> {
        let api = contract.api_schema(catalog)?;
        let semantic = Arc::new(SemanticSchema::new(&api)?);
        let hidden_values = hidden_enum_values(catalog.api_schema(), &api);
        let narrowed = narrowed_inputs(catalog.api_schema(), &api, &hidden_values);
        Ok(Gate {
            hidden_values,
            implementers: api.implementers_map(),
            api,
            semantic,
            narrowed,
            verdicts: Mutex::new(LruCache::new(
                NonZeroUsize::new(VERDICTS_KEPT).unwrap_or(NonZeroUsize::MIN),
            )),
            limits: limits.clone(),
        })
    }

    /// Whether `query` may run under this contract; parsed and validated on the first sight of
    /// the text only.
    pub fn verdict(&self, query: &str) -> Verdict {
        if query.len() > VERDICT_MAX_CHARS {
            return self.judge(query);
        }
        let key: [u8; 32] = Sha256::digest(query.as_bytes()).into();
        if let Some(verdict) = self
            .verdicts
            .lock()
            .ok()
            .and_then(|mut v| v.get(&key).cloned())
        {
            return verdict;
        }
        let verdict = self.judge(query);
        if let Ok(mut verdicts) = self.verdicts.lock() {
            verdicts.put(key, verdict.clone());
        }
        verdict
    }

    fn judge(&self, query: &str) -> Verdict {
        let document =
            match operation::parse_and_validate(&self.semantic.schema, query, &self.limits) {
                Ok(document) => document,
                Err(refusal) => return Verdict::Refused(refusal),
            };
        let operations = document.operations.iter();
        let mut introspection = false;
        let mut narrowed_variables = false;
        let mut narrowed_outputs = false;
        let mut selects_narrowed = |selection_set: &SelectionSet| {
            narrowed_outputs |= selects_any(selection_set, &self.hidden_values);
        };
        for fragment in document.fragments.values() {
            selects_narrowed(&fragment.selection_set);
        }
        for operation in operations {
            selects_narrowed(&operation.selection_set);
            introspection |= operation
                .root_fields(&document)
                .any(|f| f.name == "__schema" || f.name == "__type");
            narrowed_variables |= operation
                .variables
                .iter()
                .any(|v| self.narrowed.contains(v.ty.inner_named_type()));
        }
        Verdict::Allowed {
            introspection,
            narrowed_variables,
            narrowed_outputs,
        }
    }

    /// `query` (which [`Gate::verdict`] allowed) parsed again, for what its verdict does not
    /// keep: its variables' values and its data are checked per request.
    fn document(&self, query: &str) -> Result<ExecutableDocument, RequestError> {
        ExecutableDocument::parse(&self.semantic.schema, query, operation::SOURCE_NAME).map_err(
            |invalid| RequestError::new(Code::ValidationFailed, invalid.errors.to_string()),
        )
    }

    /// Coerces the variables of the operation `operation_name` selects against the contract, so
    /// that no hidden input field or enum value passes as a variable's value. `query` must have
    /// been allowed by [`Gate::verdict`].
    pub fn check_variables(
        &self,
        query: &str,
        operation_name: Option<&str>,
        variables: &JsonMap,
    ) -> Result<(), RequestError> {
        let document = self.document(query)?;
        let operation = document
            .operations
            .get(operation_name)
            .map_err(|e| RequestError::new(Code::UnknownOperation, e.message().to_string()))?;
        apollo_compiler::request::coerce_variable_values(&self.api, operation, variables)
            .map(drop)
            .map_err(|e| RequestError::new(Code::InvalidVariables, e.message().to_string()))
    }

    /// Makes `null` every value in `data` that the contract hides from the enum its field
    /// selects, for the operation `operation_name` selects in `query` (which
    /// [`Gate::verdict`] allowed); a null in a non-null place propagates to the nearest
    /// nullable one, as GraphQL's completion does.
    pub fn scrub(&self, query: &str, operation_name: Option<&str>, data: &mut Value) {
        let Ok(document) = self.document(query) else {
            return;
        };
        let Ok(operation) = document.operations.get(operation_name) else {
            return;
        };
        if let Value::Object(object) = data {
            if self.scrub_object(&document, &operation.selection_set, object, 0) {
                *data = Value::Null;
            }
        }
    }

    /// Scrubs `object`; true when it must become null.
    fn scrub_object(
        &self,
        document: &ExecutableDocument,
        selection_set: &SelectionSet,
        object: &mut JsonMap,
        depth: usize,
    ) -> bool {
        // Validation refuses fragment cycles; the bound is a second guard.
        if depth > 64 {
            return false;
        }
        selection_set
            .selections
            .iter()
            .any(|selection| match selection {
                Selection::Field(field) => object
                    .get_mut(field.response_key().as_str())
                    .is_some_and(|value| {
                        self.scrub_value(document, field.ty(), &field.selection_set, value, depth)
                    }),
                // Without `__typename` the object's type is unknown: every fragment applies (a
                // value is only nulled at a field whose enum hides it).
                Selection::InlineFragment(inline) => {
                    self.scrub_object(document, &inline.selection_set, object, depth + 1)
                }
                Selection::FragmentSpread(spread) => document
                    .fragments
                    .get(&spread.fragment_name)
                    .is_some_and(|fragment| {
                        self.scrub_object(document, &fragment.selection_set, object, depth + 1)
                    }),
            })
    }

    /// Scrubs `value` of type `ty`; true when it must become null but `ty` is non-null (its
    /// parent then becomes null in its place).
    fn scrub_value(
        &self,
        document: &ExecutableDocument,
        ty: &Type,
        selection_set: &SelectionSet,
        value: &mut Value,
        depth: usize,
    ) -> bool {
        let invalid = match (ty, &mut *value) {
            (Type::List(item) | Type::NonNullList(item), Value::Array(items)) => {
                let mut invalid = false;
                for value in items {
                    invalid |= self.scrub_value(document, item, selection_set, value, depth);
                }
                invalid
            }
            (Type::Named(name) | Type::NonNullNamed(name), Value::String(text)) => self
                .hidden_values
                .get(name)
                .is_some_and(|hidden| hidden.contains(text.as_str())),
            (Type::Named(_) | Type::NonNullNamed(_), Value::Object(object)) => {
                self.scrub_object(document, selection_set, object, depth + 1)
            }
            _ => false,
        };
        if invalid && !ty.is_non_null() {
            *value = Value::Null;
            return false;
        }
        invalid
    }

    /// The `__schema`, `__type` and root `__typename` fields of `operation`, executed on the
    /// contract's schema as the router executes them on the whole API's (other root fields are
    /// skipped). Errors are request errors.
    pub fn introspect(
        &self,
        document: &Valid<ExecutableDocument>,
        operation: &Operation,
        variables: &JsonMap,
    ) -> Result<JsonMap, RequestError> {
        let request_error = |code: Code| {
            move |e: apollo_compiler::request::RequestError| {
                let error = e.to_graphql_error(&document.sources);
                let mut request = RequestError::new(code, error.message);
                request.locations = error.locations.iter().map(|l| (l.line, l.column)).collect();
                request
            }
        };
        let variables =
            apollo_compiler::request::coerce_variable_values(&self.api, operation, variables)
                .map_err(request_error(Code::InvalidVariables))?;
        let response = apollo_compiler::introspection::partial_execute(
            &self.api,
            &self.implementers,
            document,
            operation,
            &variables,
        )
        .map_err(request_error(Code::Internal))?;
        Ok(response.data.unwrap_or_default())
    }
}

/// Whether a field of `selection_set` (at any depth, fragment spreads aside: their fragments
/// are checked on their own) returns one of `enums`.
fn selects_any(selection_set: &SelectionSet, enums: &HashMap<Name, HashSet<Name>>) -> bool {
    selection_set
        .selections
        .iter()
        .any(|selection| match selection {
            Selection::Field(field) => {
                enums.contains_key(field.ty().inner_named_type())
                    || selects_any(&field.selection_set, enums)
            }
            Selection::InlineFragment(inline) => selects_any(&inline.selection_set, enums),
            Selection::FragmentSpread(_) => false,
        })
}

/// The values each enum of `contract` lacks that it has in `whole`.
fn hidden_enum_values(whole: &Schema, contract: &Schema) -> HashMap<Name, HashSet<Name>> {
    contract
        .types
        .iter()
        .filter_map(|(name, ty)| match (ty, whole.types.get(name)) {
            (ExtendedType::Enum(c), Some(ExtendedType::Enum(w))) => {
                let hidden: HashSet<Name> = w
                    .values
                    .keys()
                    .filter(|v| !c.values.contains_key(*v))
                    .cloned()
                    .collect();
                (!hidden.is_empty()).then(|| (name.clone(), hidden))
            }
            _ => None,
        })
        .collect()
}

/// The enums with hidden values, the input objects of `contract` that accept fewer fields than
/// in `whole`, and the input objects that reach one of them through their fields.
fn narrowed_inputs(
    whole: &Schema,
    contract: &Schema,
    hidden_values: &HashMap<Name, HashSet<Name>>,
) -> HashSet<Name> {
    let mut narrowed: HashSet<Name> = contract
        .types
        .iter()
        .filter(|(name, ty)| match (ty, whole.types.get(*name)) {
            (ExtendedType::InputObject(c), Some(ExtendedType::InputObject(w))) => {
                c.fields.len() < w.fields.len()
            }
            _ => hidden_values.contains_key(*name),
        })
        .map(|(name, _)| name.clone())
        .collect();
    let inputs: HashMap<&Name, Vec<&Name>> = contract
        .types
        .iter()
        .filter_map(|(name, ty)| match ty {
            ExtendedType::InputObject(input) => Some((
                name,
                input
                    .fields
                    .values()
                    .map(|f| f.ty.inner_named_type())
                    .collect(),
            )),
            _ => None,
        })
        .collect();
    loop {
        let grown: Vec<Name> = inputs
            .iter()
            .filter(|(name, fields)| {
                !narrowed.contains(**name) && fields.iter().any(|f| narrowed.contains(*f))
            })
            .map(|(name, _)| (*name).clone())
            .collect();
        if grown.is_empty() {
            return narrowed;
        }
        narrowed.extend(grown);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json_bytes::json;
    use wayfinder_supergraph::{CatalogOptions, ContractFilter};

    const SDL: &str = r#"
directive @tag(name: String!) repeatable on FIELD_DEFINITION | OBJECT | INTERFACE | UNION | ARGUMENT_DEFINITION | SCALAR | ENUM | ENUM_VALUE | INPUT_OBJECT | INPUT_FIELD_DEFINITION
type Query {
  orders(filter: OrderFilter, status: Status): [Order]
  wrapped(w: Wrapper): [Order]
  secret: String @tag(name: "internal")
}
type Order { id: ID! status: Status }
input OrderFilter { status: Status note: String @tag(name: "internal") }
input Wrapper { inner: OrderFilter }
enum Status { OPEN CLOSED REVIEW @tag(name: "internal") }
"#;

    fn gate() -> Gate {
        let catalog =
            Catalog::from_sdl(SDL, "test.graphql", CatalogOptions::default()).expect("catalogs");
        let contract = catalog.contract(&ContractFilter {
            exclude_tags: ["internal".to_string()].into(),
            ..Default::default()
        });
        Gate::new(&catalog, &contract, &Limits::default()).expect("a valid contract schema")
    }

    fn variables(value: Value) -> JsonMap {
        match value {
            Value::Object(map) => map,
            _ => JsonMap::new(),
        }
    }

    #[test]
    fn hidden_members_are_refused_as_a_router_serving_the_contract_would() {
        let gate = gate();
        let refused = |query: &str| match gate.verdict(query) {
            Verdict::Refused(refusal) => refusal.body(),
            Verdict::Allowed { .. } => panic!("allowed {query}"),
        };
        let body = refused("{ secret }");
        assert_eq!(
            body["errors"][0]["message"],
            "Cannot query field \"secret\" on type \"Query\"."
        );
        assert_eq!(
            body["errors"][0]["extensions"]["code"],
            "GRAPHQL_VALIDATION_FAILED"
        );
        assert_eq!(
            body["errors"][0]["locations"],
            json!([{ "line": 1, "column": 3 }])
        );
        for query in [
            "{ orders(status: REVIEW) { id } }",
            "{ orders(filter: { note: \"x\" }) { id } }",
            "query($s: Status = REVIEW) { orders(status: $s) { id } }",
        ] {
            refused(query);
        }
        assert_eq!(
            refused("{ orders { id ")["errors"][0]["extensions"]["code"],
            "PARSING_ERROR"
        );
    }

    #[test]
    fn variables_of_narrowed_types_are_coerced_against_the_contract() {
        let gate = gate();
        assert_eq!(
            gate.narrowed,
            ["Status", "OrderFilter", "Wrapper"]
                .into_iter()
                .map(Name::new_unchecked)
                .collect()
        );
        let by_status = "query($s: Status) { orders(status: $s) { id } }";
        let by_filter = "query($f: OrderFilter) { orders(filter: $f) { id } }";
        for query in [by_status, by_filter] {
            assert!(matches!(
                gate.verdict(query),
                Verdict::Allowed {
                    narrowed_variables: true,
                    ..
                }
            ));
        }
        let check =
            |query: &str, value: Value| gate.check_variables(query, None, &variables(value));
        assert!(check(by_status, json!({ "s": "OPEN" })).is_ok());
        assert_eq!(
            check(by_status, json!({ "s": "REVIEW" })).map_err(|e| e.code),
            Err(Code::InvalidVariables)
        );
        assert!(check(by_filter, json!({ "f": { "status": "OPEN" } })).is_ok());
        assert_eq!(
            check(by_filter, json!({ "f": { "note": "x" } })).map_err(|e| e.code),
            Err(Code::InvalidVariables)
        );
        assert!(matches!(
            gate.verdict("{ orders { id status } }"),
            Verdict::Allowed {
                narrowed_variables: false,
                introspection: false,
                narrowed_outputs: true,
            }
        ));
    }

    #[test]
    fn hidden_enum_values_a_subgraph_returns_become_null() {
        let gate = gate();
        let query = "query Q { orders { id status ...F } } fragment F on Order { s: status }";
        assert!(matches!(
            gate.verdict(query),
            Verdict::Allowed {
                narrowed_outputs: true,
                ..
            }
        ));
        let mut data = json!({ "orders": [
            { "id": "1", "status": "REVIEW", "s": "REVIEW" },
            { "id": "2", "status": "OPEN", "s": "OPEN" },
        ] });
        gate.scrub(query, Some("Q"), &mut data);
        assert_eq!(
            data,
            json!({ "orders": [
                { "id": "1", "status": null, "s": null },
                { "id": "2", "status": "OPEN", "s": "OPEN" },
            ] })
        );
    }

    #[test]
    fn introspection_shows_the_contract() {
        let gate = gate();
        let query = r#"{ __type(name: "Status") { enumValues { name } } q: __type(name: "Query") { fields { name } } }"#;
        assert!(matches!(
            gate.verdict(query),
            Verdict::Allowed {
                introspection: true,
                ..
            }
        ));
        let document =
            ExecutableDocument::parse_and_validate(&gate.semantic.schema, query, "q.graphql")
                .expect("valid");
        let operation = document.operations.get(None).expect("one operation");
        let data = gate
            .introspect(&document, operation, &JsonMap::new())
            .expect("introspects");
        assert_eq!(
            Value::Object(data),
            json!({
                "__type": { "enumValues": [{ "name": "OPEN" }, { "name": "CLOSED" }] },
                "q": { "fields": [{ "name": "orders" }, { "name": "wrapped" }] },
            })
        );
    }
}
