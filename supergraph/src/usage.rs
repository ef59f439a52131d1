//! An executed operation reduced to its shape, so that what clients run can become examples
//! without keeping anything they sent: the members it uses and an operation that uses them
//! the same way, with no value in it.
//!
//! Flow: the operation text -> parsed and validated against the API schema -> its selection
//! walked with fragments inlined (a fragment on the same type merged into its parent, one on
//! another type kept as an inline fragment), aliases and directives dropped, fields ordered by
//! name and merged -> every argument value rewritten: a variable is renamed after where it is
//! used, an object literal keeps its fields (ordered) and every other literal (string,
//! number, enum, list, null) becomes a new variable typed as its place; default values of
//! variables are dropped -> printed, with the coordinates of the fields, arguments, input
//! fields and types it touches. Equal shapes print equal, whatever the aliases, fragments,
//! field order, variable names or values of the text.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use apollo_compiler::ast::{OperationType, Type, Value};
use apollo_compiler::executable::{Selection, SelectionSet};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};

use crate::operation_text;

/// An operation's shape and what it touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    /// The normalised operation: anonymous, its variables declared in name order.
    pub operation: String,
    /// Coordinates of the fields, arguments, input fields and named types it uses, sorted.
    pub coordinates: BTreeSet<String>,
}

/// Why an operation has no usage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// The text names a value only in the diagnostics, which are not kept.
    #[error("the operation does not validate against the API schema")]
    Invalid,
    #[error("the document has no operation of that name")]
    NoOperation,
    #[error("a subscription, or only introspection: nothing to learn")]
    NothingToLearn,
    #[error("the operation selects more than {MAX_SELECTIONS} fields, fragments included")]
    TooLarge,
    /// Aliases dropped can leave two fields of one name with other arguments.
    #[error("the operation's shape does not validate")]
    InvalidShape,
}

/// The usage of the operation `operation_name` of `text`.
pub fn usage(
    schema: &Valid<Schema>,
    text: &str,
    operation_name: Option<&str>,
) -> Result<Usage, UsageError> {
    let document = ExecutableDocument::parse_and_validate(schema, text, "operation.graphql")
        .map_err(|_| UsageError::Invalid)?;
    let operation = document
        .operations
        .get(operation_name)
        .map_err(|_| UsageError::NoOperation)?;
    let keyword = match operation.operation_type {
        OperationType::Query => "query",
        OperationType::Mutation => "mutation",
        OperationType::Subscription => return Err(UsageError::NothingToLearn),
    };
    let mut shape = Shape {
        schema,
        document: &document,
        declared: operation
            .variables
            .iter()
            .map(|v| (v.name.as_str(), &*v.ty))
            .collect(),
        renamed: HashMap::new(),
        variables: Vec::new(),
        coordinates: BTreeSet::new(),
        selections: 0,
    };
    let mut root = Tree::default();
    shape.select(&operation.selection_set, &mut root, 0);
    if shape.selections > MAX_SELECTIONS {
        return Err(UsageError::TooLarge);
    }
    // `{ __typename }` (a health check) uses no member: nothing to show.
    if root.0.is_empty() || shape.coordinates.is_empty() {
        return Err(UsageError::NothingToLearn);
    }
    // Declared in name order, so that the order fields come in does not make another shape.
    shape.variables.sort();
    let mut out = format!(
        "{keyword}{} {{\n",
        operation_text::definitions(&shape.variables)
    );
    root.print(&mut out, 1);
    out.push('}');
    ExecutableDocument::parse_and_validate(schema, &out, "shape.graphql")
        .map_err(|_| UsageError::InvalidShape)?;
    Ok(Usage {
        operation: out,
        coordinates: shape.coordinates,
    })
}

/// Deepest selection kept; deeper ones are cut (an operation that deep is no example).
const MAX_DEPTH: usize = 32;
/// Most selections walked, fragments spread as many times as they are used: fragments that
/// spread each other twice would otherwise take exponential time.
const MAX_SELECTIONS: usize = 10_000;

/// Selections by their printed head (`issues(first: $first)`, `... on Issue`), ordered.
#[derive(Default)]
struct Tree(BTreeMap<String, Tree>);

impl Tree {
    fn print(&self, out: &mut String, depth: usize) {
        for (head, inner) in &self.0 {
            for _ in 0..depth {
                out.push_str("  ");
            }
            out.push_str(head);
            if inner.0.is_empty() {
                out.push('\n');
            } else {
                out.push_str(" {\n");
                inner.print(out, depth + 1);
                for _ in 0..depth {
                    out.push_str("  ");
                }
                out.push_str("}\n");
            }
        }
    }
}

struct Shape<'a> {
    schema: &'a Valid<Schema>,
    document: &'a Valid<ExecutableDocument>,
    /// The text's variables and their types.
    declared: HashMap<&'a str, &'a Type>,
    /// A text variable -> its new name.
    renamed: HashMap<String, String>,
    /// The new variables, in order of first use, with their types.
    variables: Vec<(String, String)>,
    coordinates: BTreeSet<String>,
    /// Selections walked so far.
    selections: usize,
}

impl Shape<'_> {
    fn select(&mut self, set: &SelectionSet, into: &mut Tree, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let on = set.ty.as_str();
        for selection in &set.selections {
            self.selections += 1;
            if self.selections > MAX_SELECTIONS {
                return;
            }
            match selection {
                Selection::Field(field) => {
                    let name = field.name.as_str();
                    if name.starts_with("__") {
                        if name == "__typename" {
                            into.0.entry(name.to_string()).or_default();
                        }
                        // Introspection is not the API's usage.
                        continue;
                    }
                    let coordinate = format!("{on}.{name}");
                    self.touch_type(field.definition.ty.inner_named_type().as_str());
                    let mut sorted: Vec<_> = field.arguments.iter().collect();
                    sorted.sort_by(|a, b| a.name.cmp(&b.name));
                    let mut arguments: Vec<(&str, String)> = Vec::new();
                    for argument in sorted {
                        let Some(def) = field
                            .definition
                            .arguments
                            .iter()
                            .find(|a| a.name == argument.name)
                        else {
                            continue;
                        };
                        self.coordinates
                            .insert(format!("{coordinate}({}:)", argument.name));
                        let value = self.value(&argument.name, &def.ty, &argument.value);
                        arguments.push((argument.name.as_str(), value));
                    }
                    self.coordinates.insert(coordinate);
                    let head = format!("{name}{}", operation_text::arguments(&arguments));
                    let inner = into.0.entry(head).or_default();
                    self.select(&field.selection_set, inner, depth + 1);
                }
                Selection::FragmentSpread(spread) => {
                    if let Some(fragment) = self.document.fragments.get(&spread.fragment_name) {
                        self.fragment(on, &fragment.selection_set, into, depth);
                    }
                }
                Selection::InlineFragment(inline) => {
                    self.fragment(on, &inline.selection_set, into, depth);
                }
            }
        }
    }

    /// A fragment's selection: merged when it is on the type selected on, else kept as an
    /// inline fragment on its type.
    fn fragment(&mut self, on: &str, set: &SelectionSet, into: &mut Tree, depth: usize) {
        if set.ty.as_str() == on {
            self.select(set, into, depth + 1);
        } else {
            self.touch_type(set.ty.as_str());
            let inner = into.0.entry(format!("... on {}", set.ty)).or_default();
            self.select(set, inner, depth + 1);
        }
    }

    fn touch_type(&mut self, name: &str) {
        if !name.starts_with("__") {
            self.coordinates.insert(name.to_string());
        }
    }

    /// `value`, passed where `name` of type `ty` is expected, without any value of the text.
    fn value(&mut self, name: &str, ty: &Type, value: &Value) -> String {
        match value {
            Value::Variable(variable) => {
                if let Some(renamed) = self.renamed.get(variable.as_str()) {
                    return format!("${renamed}");
                }
                let declared = self
                    .declared
                    .get(variable.as_str())
                    .copied()
                    .unwrap_or(ty)
                    .clone();
                let renamed = self.fresh(name, &declared);
                self.renamed.insert(variable.to_string(), renamed.clone());
                format!("${renamed}")
            }
            Value::Object(fields) => {
                let input = ty.inner_named_type();
                let Some(ExtendedType::InputObject(object)) = self.schema.types.get(input) else {
                    return format!("${}", self.fresh(name, ty));
                };
                let mut sorted: Vec<_> = fields.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                let mut written: Vec<(String, String)> = Vec::new();
                for (field, inner) in sorted {
                    let Some(def) = object.fields.get(field) else {
                        continue;
                    };
                    self.coordinates.insert(format!("{input}.{field}"));
                    self.touch_type(def.ty.inner_named_type().as_str());
                    written.push((field.to_string(), self.value(field, &def.ty, inner)));
                }
                let object = operation_text::object(&written);
                // An object where a list is expected (input coercion) stays one item.
                match ty {
                    Type::List(_) | Type::NonNullList(_) => format!("[{object}]"),
                    _ => object,
                }
            }
            _ => format!("${}", self.fresh(name, ty)),
        }
    }

    /// A new variable named after its place (numbered when taken), of type `ty`.
    fn fresh(&mut self, name: &str, ty: &Type) -> String {
        self.touch_type(ty.inner_named_type().as_str());
        operation_text::declare(&mut self.variables, name, ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SDL: &str = r#"
        type Query { repository(owner: String!, name: String!): Repository, me: User }
        type Repository { id: ID!, name: String!, issues(first: Int, states: [State!], filter: Filter): [Issue!]! }
        type Issue { id: ID!, title: String!, state: State! }
        type User { id: ID!, login: String! }
        enum State { OPEN CLOSED }
        input Filter { label: String, since: Int }
        type Mutation { close(id: ID!): Issue }
    "#;

    fn schema() -> Valid<Schema> {
        Schema::parse_and_validate(SDL, "schema.graphql").unwrap()
    }

    #[test]
    fn equal_shapes_print_equal_and_keep_no_value() {
        let schema = schema();
        let one = usage(
            &schema,
            r#"query Mine($o: String!) { r: repository(owner: $o, name: "sentinel-1") {
                 ...Parts issues(first: 3, states: [OPEN], filter: {since: 7, label: "sentinel-2"}) { title id }
               } }
               fragment Parts on Repository { name }"#,
            None,
        )
        .unwrap();
        let two = usage(
            &schema,
            r#"query Other($n: String!, $owner: String! = "sentinel-3") { repository(name: $n, owner: $owner) {
                 issues(filter: {label: "x", since: 1}, states: CLOSED, first: 10) { id title } name
               } }"#,
            None,
        )
        .unwrap();
        assert_eq!(one.operation, two.operation);
        for sentinel in ["sentinel", "OPEN", "CLOSED", "3", "7", "10"] {
            assert!(!one.operation.contains(sentinel), "{}", one.operation);
        }
        assert!(
            one.operation.starts_with(
                "query($first: Int, $label: String, $name: String!, $owner: String!, $since: Int, \
                 $states: [State!]) {\n  repository(name: $name, owner: $owner) {\n    issues(\
                 filter: {label: $label, since: $since}, first: $first, states: $states) {"
            ),
            "{}",
            one.operation
        );
        assert!(one.coordinates.contains("Filter.label"));
        assert!(one.coordinates.contains("Repository.issues(states:)"));
        assert!(one.coordinates.contains("State"));
    }

    #[test]
    fn fragments_that_spread_each_other_twice_are_cut_short() {
        let schema = schema();
        let mut text = String::from("{ ...F0 }\n");
        for level in 0..24 {
            text.push_str(&format!(
                "fragment F{level} on Query {{ ...F{next} ...F{next} }}\n",
                next = level + 1
            ));
        }
        text.push_str("fragment F24 on Query { me { id } }");
        let started = std::time::Instant::now();
        assert_eq!(usage(&schema, &text, None), Err(UsageError::TooLarge));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn what_is_not_api_usage_has_none() {
        let schema = schema();
        assert_eq!(usage(&schema, "{ nope }", None), Err(UsageError::Invalid));
        assert_eq!(
            usage(&schema, "{ __schema { types { name } } }", None),
            Err(UsageError::NothingToLearn)
        );
        assert_eq!(
            usage(&schema, "{ __typename }", None),
            Err(UsageError::NothingToLearn)
        );
        // Two aliases of one field with other arguments cannot share a name.
        assert_eq!(
            usage(
                &schema,
                r#"{ repository(owner: "a", name: "b") { x: issues(first: 1) { id } y: issues(first: 2) { id } } }"#,
                None
            ),
            Err(UsageError::InvalidShape)
        );
        assert!(usage(&schema, "mutation { close(id: 1) { id } }", None)
            .unwrap()
            .operation
            .starts_with("mutation($id: ID!)"));
    }
}
