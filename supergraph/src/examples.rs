//! Examples made from the schema: for a member, the shortest operation that reaches it, as the
//! RFC's `__Example` carries it (an operation an agent can copy, and a line saying what it
//! shows).
//!
//! Flow: the view's paths to the roots ([`crate::paths`], `Query` first, shortest first) ->
//! one path chosen per member -> a tree of selections: each field on the path with its
//! required arguments as typed variables (a required input object written out with its own
//! required fields), an inline fragment where a step belongs to a possible type, the member
//! passed (an argument, an input field inside its object, an enum value as a literal) or
//! selected -> a selection that ends in leaves (identifiers, then names, then other leaves) ->
//! printed. Everything an example names is visible in the view it is made for (a contract's
//! paths only pass visible members, and every other name is checked), so it validates against
//! that view's API schema; `tests/examples.rs` validates every member of every eval schema.
//!
//! What no operation can reach (a type no root leads to, a directive of type-system
//! definitions) gets the introspection query that shows it, and says that nothing reaches it.
//!
//! Nothing is stored: an example is made when it is asked for, in microseconds, from the
//! paths the view already keeps.

use std::fmt::Write as _;

use apollo_compiler::schema::{
    DirectiveLocation, ExtendedType, FieldDefinition, InputValueDefinition, Type,
};

use crate::catalog::Catalog;
use crate::contract::Contract;
use crate::member::{Member, MemberId, MemberKind};
use crate::operation_text;

/// Leaves a selection ends in when the type has no identifier or name to show.
const MAX_LEAVES: usize = 2;
/// How deep a selection goes into composite fields to find leaves.
const MAX_SELECTION_DEPTH: usize = 2;

/// An operation that uses a member, and what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    pub operation: String,
    pub description: String,
}

/// Why a member has no example.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoExample {
    #[error("the view does not see it")]
    Hidden,
    #[error("no path to it can be written as an operation")]
    Unwritable,
}

/// What one view (the whole catalog, or a contract) lets an example touch.
pub(crate) struct View<'a> {
    catalog: &'a Catalog,
    contract: Option<&'a Contract>,
}

impl View<'_> {
    fn visible(&self, id: MemberId) -> bool {
        self.contract.is_none_or(|contract| contract.is_visible(id))
    }

    fn paths(&self, id: MemberId) -> &[Box<[MemberId]>] {
        match self.contract {
            Some(contract) => contract.paths_to_root(id),
            None => self.catalog.paths_to_root(id),
        }
    }
}

impl Catalog {
    /// An operation that uses the member, made from the schema.
    pub fn example(&self, id: MemberId) -> Result<Example, NoExample> {
        let view = View {
            catalog: self,
            contract: None,
        };
        example(self, &view, id)
    }
}

impl Contract {
    /// An operation that uses the member and only what this contract sees.
    pub fn example(&self, catalog: &Catalog, id: MemberId) -> Result<Example, NoExample> {
        let view = View {
            catalog,
            contract: Some(self),
        };
        example(catalog, &view, id)
    }
}

/// The example of `id` in `view`.
fn example(catalog: &Catalog, view: &View<'_>, id: MemberId) -> Result<Example, NoExample> {
    if !view.visible(id) {
        return Err(NoExample::Hidden);
    }
    let member = catalog.member(id);
    match member.kind {
        MemberKind::Directive | MemberKind::DirectiveArgument => directive(catalog, view, member),
        _ if catalog.roots().contains(id) => root_type(catalog, view, member),
        _ => {
            let paths = view.paths(id);
            if paths.is_empty() {
                return match member.kind {
                    kind if kind.is_type() => through_directive(catalog, view, member),
                    _ => Ok(introspection(catalog, member)),
                };
            }
            // An enum value shows best passed as an argument; a path that only selects the
            // field returning the enum comes after.
            let passes = |path: &[MemberId]| {
                member.kind != MemberKind::EnumValue
                    || path.len() < 2
                    || catalog.member(path[path.len() - 2]).kind != MemberKind::Field
            };
            let ordered = paths
                .iter()
                .filter(|p| passes(p))
                .chain(paths.iter().filter(|p| !passes(p)));
            let query = catalog.roots().query;
            let from_query = |path: &[MemberId]| catalog.member(path[0]).parent == query;
            if member.kind == MemberKind::Field && !paths.iter().any(|p| from_query(p)) {
                // A field read only after a mutation (`Starrable.stargazerCount` through
                // `addStar`): the same field of an implementer a query reaches, read rather
                // than changed.
                let read = implementers_field(catalog, view, member)
                    .find(|path| from_query(path))
                    .and_then(|path| Writer::new(catalog, view).path(path, member));
                if let Some(example) = read {
                    return Ok(example);
                }
            }
            ordered
                .filter_map(|path| Writer::new(catalog, view).path(path, member))
                .next()
                .ok_or(NoExample::Unwritable)
        }
    }
}

/// The paths of the field of the same name on an interface's implementers.
fn implementers_field<'a>(
    catalog: &'a Catalog,
    view: &'a View<'a>,
    field: &'a Member,
) -> impl Iterator<Item = &'a Box<[MemberId]>> + 'a {
    field
        .parent
        .map(|parent| catalog.member(parent))
        .filter(|parent| parent.kind == MemberKind::Interface)
        .into_iter()
        .flat_map(|parent| parent.possible_types.iter())
        .filter_map(|ty| catalog.child(catalog.member(*ty), &field.name))
        .filter(|same| view.visible(same.id))
        .flat_map(|same| view.paths(same.id))
}

/// A type no field reaches (`Boolean` where only `@include(if:)` takes one): the example of a
/// directive argument that takes it.
fn through_directive(
    catalog: &Catalog,
    view: &View<'_>,
    ty: &Member,
) -> Result<Example, NoExample> {
    ty.referenced_by
        .iter()
        .map(|id| catalog.member(*id))
        .filter(|by| by.kind == MemberKind::DirectiveArgument && view.visible(by.id))
        .find_map(|argument| {
            let mut example = directive(catalog, view, argument).ok()?;
            example.description =
                format!("Passes a `{}` to `{}`.", ty.coordinate, argument.coordinate);
            Some(example)
        })
        .map_or_else(|| Ok(introspection(catalog, ty)), Ok)
}

/// What no operation can reach (a type no root leads to, and its members; a directive of
/// type-system definitions) is still shown by introspection: the only operation that touches
/// it, and one that tells an agent so.
fn introspection(catalog: &Catalog, member: &Member) -> Example {
    if matches!(
        member.kind,
        MemberKind::Directive | MemberKind::DirectiveArgument
    ) {
        return Example {
            operation: format!(
                "query {} {{\n  __schema {{\n    directives {{\n      name\n      locations\n      args {{\n        name\n        description\n      }}\n    }}\n  }}\n}}",
                operation_name(&member.coordinate)
            ),
            description: format!(
                "`{}` applies to type-system definitions, which no operation carries; \
                 introspection lists it.",
                member.coordinate
            ),
        };
    }
    let ty = catalog.container(member.id).unwrap_or(member);
    let part = match (ty.kind, member.kind) {
        (_, MemberKind::Argument) => {
            "fields {\n      name\n      args {\n        name\n        description\n      }\n    }"
        }
        (MemberKind::Object | MemberKind::Interface, _) => {
            "fields {\n      name\n      description\n    }"
        }
        (MemberKind::InputObject, _) => "inputFields {\n      name\n      description\n    }",
        (MemberKind::Enum, _) => "enumValues {\n      name\n      description\n    }",
        (MemberKind::Union, _) => "possibleTypes {\n      name\n    }",
        _ => "description",
    };
    Example {
        operation: format!(
            "query {} {{\n  __type(name: \"{}\") {{\n    name\n    {part}\n  }}\n}}",
            operation_name(&member.coordinate),
            ty.name
        ),
        description: format!(
            "No field or argument leads to `{}` from a root; introspection shows it.",
            ty.coordinate
        ),
    }
}

/// A root type: the example of its first field that has one.
fn root_type(catalog: &Catalog, view: &View<'_>, root: &Member) -> Result<Example, NoExample> {
    root.children
        .iter()
        .filter(|field| view.visible(**field))
        .find_map(|field| {
            let path = view.paths(*field).first()?;
            let mut example = Writer::new(catalog, view).path(path, catalog.member(*field))?;
            example.description = format!(
                "Selects `{}`, a field of `{}`.",
                catalog.member(*field).coordinate,
                root.name
            );
            Some(example)
        })
        .ok_or(NoExample::Unwritable)
}

/// A directive an operation can carry is shown on the first query field; the specification's
/// type-system directives through the introspection fields that report them.
fn directive(catalog: &Catalog, view: &View<'_>, member: &Member) -> Result<Example, NoExample> {
    let (directive, argument) = match member.kind {
        MemberKind::DirectiveArgument => {
            let directive = catalog.member(member.parent.ok_or(NoExample::Unwritable)?);
            (directive, Some(member))
        }
        _ => (member, None),
    };
    let spec = |operation: &str, shows: &str| {
        Ok(Example {
            operation: operation.to_string(),
            description: format!("Shows where `{}` applies: {shows}.", member.coordinate),
        })
    };
    match directive.name.as_str() {
        "deprecated" if directive.builtin => {
            return spec(
                "query DeprecatedFields {\n  __schema {\n    types {\n      name\n      fields(includeDeprecated: true) {\n        name\n        isDeprecated\n        deprecationReason\n      }\n    }\n  }\n}",
                "introspection reports deprecated fields and their reasons",
            )
        }
        "specifiedBy" if directive.builtin => {
            return spec(
                "query ScalarSpecifications {\n  __schema {\n    types {\n      name\n      specifiedByURL\n    }\n  }\n}",
                "introspection reports each scalar's specification URL",
            )
        }
        "oneOf" if directive.builtin => {
            return spec(
                "query OneOfInputs {\n  __schema {\n    types {\n      name\n      isOneOf\n    }\n  }\n}",
                "introspection reports which input objects take exactly one field",
            )
        }
        _ => {}
    }
    let schema = catalog.api_schema();
    let definition = schema
        .directive_definitions
        .get(directive.name.as_str())
        .ok_or(NoExample::Unwritable)?;
    let locations = &definition.locations;
    let place = if locations.contains(&DirectiveLocation::Field) {
        Place::Field
    } else if locations.contains(&DirectiveLocation::InlineFragment) {
        Place::InlineFragment
    } else if locations.contains(&DirectiveLocation::Query) {
        Place::Query
    } else {
        return Ok(introspection(catalog, member));
    };
    let query = catalog.roots().query.ok_or(NoExample::Unwritable)?;
    catalog
        .member(query)
        .children
        .iter()
        .filter(|field| view.visible(**field))
        .find_map(|field| {
            let path = view.paths(*field).first()?;
            let mut writer = Writer::new(catalog, view);
            let mut arguments = Vec::new();
            for (def, id) in definition.arguments.iter().filter_map(|def| {
                let child = catalog.child(directive, &def.name)?;
                view.visible(child.id).then_some((def, child))
            }) {
                let focused = argument.is_some_and(|a| a.id == id.id);
                if focused || is_required(def) {
                    // A string a directive takes is written in place: some must be static
                    // (`@defer(label:)`).
                    let value = if def.ty.inner_named_type() == "String" {
                        format!("\"{}\"", def.name)
                    } else {
                        writer.variable(&def.name, &def.ty)
                    };
                    arguments.push((def.name.to_string(), value));
                }
            }
            let usage = format!(
                "@{}{}",
                directive.name,
                operation_text::arguments(&arguments)
            );
            let mut operation = writer.operation(path, catalog.member(*field))?;
            operation.name = operation_name(&member.coordinate);
            let on = match place {
                Place::Field => {
                    operation.levels[0].directive = Some(usage);
                    "a field"
                }
                Place::InlineFragment => {
                    operation.levels.insert(
                        0,
                        Level {
                            head: "...".into(),
                            arguments: Vec::new(),
                            directive: Some(usage),
                        },
                    );
                    "an inline fragment"
                }
                Place::Query => {
                    operation.directive = Some(usage);
                    "a query"
                }
            };
            Some(Example {
                operation: operation.print(&writer.variables),
                description: format!("Uses `{}` on {on}.", member.coordinate),
            })
        })
        .ok_or(NoExample::Unwritable)
}

/// Where an example puts an executable directive.
#[derive(Clone, Copy)]
enum Place {
    Field,
    InlineFragment,
    Query,
}

/// One field (or inline fragment) on the way to the member.
struct Level {
    head: String,
    arguments: Vec<(String, String)>,
    directive: Option<String>,
}

/// A selection below the last level.
enum Selection {
    Leaf(String),
    Nested(String, Vec<Selection>),
}

/// An operation before printing.
struct Operation {
    keyword: &'static str,
    name: String,
    directive: Option<String>,
    levels: Vec<Level>,
    selection: Vec<Selection>,
}

impl Operation {
    fn print(&self, variables: &[(String, String)]) -> String {
        let mut out = format!(
            "{} {}{}",
            self.keyword,
            self.name,
            operation_text::definitions(variables)
        );
        if let Some(directive) = &self.directive {
            let _ = write!(out, " {directive}");
        }
        out.push_str(" {\n");
        for (depth, level) in self.levels.iter().enumerate() {
            indent(&mut out, depth + 1);
            out.push_str(&level.head);
            out.push_str(&operation_text::arguments(&level.arguments));
            if let Some(directive) = &level.directive {
                let _ = write!(out, " {directive}");
            }
            let last = depth + 1 == self.levels.len();
            if last && self.selection.is_empty() {
                out.push('\n');
            } else {
                out.push_str(" {\n");
            }
        }
        print_selection(&mut out, &self.selection, self.levels.len() + 1);
        for depth in (0..self.levels.len()).rev() {
            let last = depth + 1 == self.levels.len();
            if !(last && self.selection.is_empty()) {
                indent(&mut out, depth + 1);
                out.push_str("}\n");
            }
        }
        out.push('}');
        out
    }
}

fn print_selection(out: &mut String, selection: &[Selection], depth: usize) {
    for item in selection {
        indent(out, depth);
        match item {
            Selection::Leaf(name) => {
                out.push_str(name);
                out.push('\n');
            }
            Selection::Nested(head, inner) => {
                out.push_str(head);
                out.push_str(" {\n");
                print_selection(out, inner, depth + 1);
                indent(out, depth);
                out.push_str("}\n");
            }
        }
    }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

/// Required: non-null without a default, so an operation must pass it.
fn is_required(def: &InputValueDefinition) -> bool {
    def.ty.is_non_null() && def.default_value.is_none()
}

/// Writes one example; holds the variables it declares.
struct Writer<'a> {
    catalog: &'a Catalog,
    view: &'a View<'a>,
    variables: Vec<(String, String)>,
}

impl<'a> Writer<'a> {
    fn new(catalog: &'a Catalog, view: &'a View<'a>) -> Self {
        Writer {
            catalog,
            view,
            variables: Vec::new(),
        }
    }

    fn visible(&self, id: MemberId) -> bool {
        self.view.visible(id)
    }

    /// Declares a variable named after `wanted` (numbered when the name is taken).
    fn variable(&mut self, wanted: &str, ty: &Type) -> String {
        format!(
            "${}",
            operation_text::declare(&mut self.variables, wanted, ty)
        )
    }

    /// The example that follows `path` to `member`.
    fn path(mut self, path: &[MemberId], member: &Member) -> Option<Example> {
        let operation = self.operation(path, member)?;
        Some(Example {
            operation: operation.print(&self.variables),
            description: self.describe(path, member),
        })
    }

    fn operation(&mut self, path: &[MemberId], member: &Member) -> Option<Operation> {
        let catalog = self.catalog;
        let roots = catalog.roots();
        let root = catalog.member(*path.first()?).parent?;
        let keyword = if Some(root) == roots.query {
            "query"
        } else if Some(root) == roots.mutation {
            "mutation"
        } else {
            "subscription"
        };
        let mut levels: Vec<Level> = Vec::new();
        let mut on = root;
        let mut returned: Option<MemberId> = None;
        let mut selected_type: Option<MemberId> = None;
        for (i, &step) in path.iter().enumerate() {
            let step_member = catalog.member(step);
            match step_member.kind {
                MemberKind::Field => {
                    // An argument the path goes on to is written by its own step.
                    let focused = path
                        .get(i + 1)
                        .map(|next| catalog.member(*next))
                        .filter(|next| next.kind == MemberKind::Argument)
                        .map(|next| next.name.as_str());
                    let mut field = step_member;
                    let parent = field.parent?;
                    if parent != on {
                        // A field of a type that shares possible types with the one selected
                        // on: the same field of that type when it has one (its own return
                        // type may be narrower), else through an inline fragment.
                        match self.visible_field(on, &field.name) {
                            Some(same) if focused.is_none() => field = same,
                            _ => levels.push(Level {
                                head: format!("... on {}", catalog.member(parent).name),
                                arguments: Vec::new(),
                                directive: None,
                            }),
                        }
                    }
                    let def = self.field_definition(field)?;
                    let arguments = self.required_arguments(field, def, focused)?;
                    levels.push(Level {
                        head: field.name.clone(),
                        arguments,
                        directive: None,
                    });
                    returned = field.named_type;
                    on = returned?;
                }
                MemberKind::Argument => {
                    let field = catalog.member(step_member.parent?);
                    let def = self
                        .field_definition(field)?
                        .arguments
                        .iter()
                        .find(|a| a.name == step_member.name.as_str())?;
                    let value = self.value(step_member, def, &path[i + 1..])?;
                    let level = levels.last_mut()?;
                    match level
                        .arguments
                        .iter_mut()
                        .find(|(n, _)| *n == step_member.name)
                    {
                        Some(existing) => existing.1 = value,
                        None => level.arguments.push((step_member.name.clone(), value)),
                    }
                    break;
                }
                // The value of the enum the last field returns: the field is the example.
                MemberKind::EnumValue => break,
                kind if kind.is_type() => {
                    selected_type = Some(step);
                    break;
                }
                _ => return None,
            }
        }
        let returned = returned?;
        let selection = match selected_type {
            // A possible type of the union or interface the field returns.
            Some(ty) if ty != returned && catalog.member(ty).kind.is_composite() => {
                vec![Selection::Nested(
                    format!("... on {}", catalog.member(ty).name),
                    self.leaves(ty, 0),
                )]
            }
            _ => self.leaves(returned, 0),
        };
        Some(Operation {
            keyword,
            name: operation_name(&member.coordinate),
            directive: None,
            levels,
            selection,
        })
    }

    fn describe(&self, path: &[MemberId], member: &Member) -> String {
        let catalog = self.catalog;
        let before = |n: usize| {
            path.len()
                .checked_sub(n + 1)
                .map(|i| catalog.member(path[i]))
        };
        let coordinate = &member.coordinate;
        match member.kind {
            MemberKind::Field if member.parent == catalog.roots().mutation => {
                format!("Calls `{coordinate}`.")
            }
            MemberKind::Field => format!("Selects `{coordinate}`."),
            MemberKind::Argument => format!("Passes `{coordinate}`."),
            MemberKind::InputField => format!("Passes `{coordinate}` in an argument."),
            MemberKind::EnumValue => match before(1) {
                Some(field) if field.kind == MemberKind::Field => format!(
                    "Selects `{}`, which may return `{coordinate}`.",
                    field.coordinate
                ),
                _ => format!("Passes `{coordinate}`."),
            },
            MemberKind::InputObject => format!("Passes a `{coordinate}`."),
            _ => match before(1) {
                Some(step) if step.kind == MemberKind::Field => {
                    format!("Selects a `{coordinate}` through `{}`.", step.coordinate)
                }
                _ => format!("Passes a `{coordinate}`."),
            },
        }
    }

    fn field_definition(&self, field: &Member) -> Option<&'a FieldDefinition> {
        let parent = self.catalog.member(field.parent?);
        let fields = match self.catalog.api_schema().types.get(parent.name.as_str())? {
            ExtendedType::Object(def) => &def.fields,
            ExtendedType::Interface(def) => &def.fields,
            _ => return None,
        };
        fields.get(field.name.as_str()).map(|c| &***c)
    }

    fn visible_field(&self, ty: MemberId, name: &str) -> Option<&'a Member> {
        self.catalog
            .child(self.catalog.member(ty), name)
            .filter(|field| field.kind == MemberKind::Field && self.visible(field.id))
    }

    /// A field's required arguments, each with a variable (a required input object written
    /// out with its required fields).
    /// `focused` gets a place in the order but no value: its step writes it.
    fn required_arguments(
        &mut self,
        field: &Member,
        def: &FieldDefinition,
        focused: Option<&str>,
    ) -> Option<Vec<(String, String)>> {
        let mut arguments = Vec::new();
        for argument in def.arguments.iter().filter(|a| is_required(a)) {
            if focused == Some(argument.name.as_str()) {
                arguments.push((argument.name.to_string(), String::new()));
                continue;
            }
            let member = self.catalog.child(field, &argument.name)?;
            if !self.visible(member.id) {
                return None;
            }
            let value = self.required_value(member, argument)?;
            arguments.push((argument.name.to_string(), value));
        }
        Some(arguments)
    }

    fn required_value(&mut self, member: &Member, def: &InputValueDefinition) -> Option<String> {
        let catalog = self.catalog;
        let input = match (&*def.ty, member.named_type.map(|t| catalog.member(t))) {
            (Type::NonNullNamed(_), Some(input)) if input.kind == MemberKind::InputObject => input,
            _ => return Some(self.variable(&member.name, &def.ty)),
        };
        self.input_object(input, None)
    }

    /// An input object's literal: its required fields as variables (of a `@oneOf` input,
    /// one field), and `focus`, the field a path goes on to, with the value the rest of the
    /// path needs.
    fn input_object(
        &mut self,
        input: &Member,
        focus: Option<(&Member, &[MemberId])>,
    ) -> Option<String> {
        let catalog = self.catalog;
        let Some(ExtendedType::InputObject(object)) =
            catalog.api_schema().types.get(input.name.as_str())
        else {
            return None;
        };
        let one_of = object.directives.get("oneOf").is_some();
        let mut fields = Vec::new();
        for (name, field) in &object.fields {
            let Some(child) = catalog.child(input, name) else {
                continue;
            };
            let value = match focus {
                Some((next, rest)) if next.name == name.as_str() => {
                    self.value(next, field, rest)?
                }
                // A `@oneOf` input takes one field: the focus, else its first visible one.
                _ if one_of => {
                    if focus.is_some() || !fields.is_empty() || !self.visible(child.id) {
                        continue;
                    }
                    self.variable(name, &field.ty)
                }
                _ if is_required(field) => {
                    if !self.visible(child.id) {
                        return None;
                    }
                    self.variable(name, &field.ty)
                }
                _ => continue,
            };
            fields.push((name.to_string(), value));
        }
        Some(operation_text::object(&fields))
    }

    /// The value passed for `owner` (an argument or input field) on the way to what `rest`
    /// reaches: a variable, an object with the input field the path goes on to, or an enum
    /// value.
    fn value(
        &mut self,
        owner: &Member,
        def: &InputValueDefinition,
        rest: &[MemberId],
    ) -> Option<String> {
        let catalog = self.catalog;
        let Some(next) = rest.first().map(|id| catalog.member(*id)) else {
            return Some(self.variable(&owner.name, &def.ty));
        };
        let inner = match next.kind {
            MemberKind::InputField => {
                self.input_object(catalog.member(next.parent?), Some((next, &rest[1..])))?
            }
            MemberKind::EnumValue => next.name.clone(),
            _ => return Some(self.variable(&owner.name, &def.ty)),
        };
        Some(in_lists(&def.ty, inner))
    }

    /// Leaves to select on `ty`: its identifiers and names, else a few leaves, else one
    /// composite field's, else `__typename`.
    fn leaves(&mut self, ty: MemberId, depth: usize) -> Vec<Selection> {
        let catalog = self.catalog;
        let member = catalog.member(ty);
        match member.kind {
            MemberKind::Union => {
                let mut selection = vec![Selection::Leaf("__typename".into())];
                if depth < MAX_SELECTION_DEPTH {
                    if let Some(&possible) =
                        member.possible_types.iter().find(|p| self.visible(**p))
                    {
                        selection.push(Selection::Nested(
                            format!("... on {}", catalog.member(possible).name),
                            self.leaves(possible, depth + 1),
                        ));
                    }
                }
                selection
            }
            MemberKind::Object | MemberKind::Interface => {
                let key_fields: Vec<&str> = member
                    .keys
                    .iter()
                    .flat_map(|key| key.fields.split_whitespace())
                    .filter(|name| name.chars().all(|c| c.is_alphanumeric() || c == '_'))
                    .collect();
                let fields: Vec<(&Member, &FieldDefinition)> = member
                    .children
                    .iter()
                    .map(|id| catalog.member(*id))
                    .filter(|field| self.visible(field.id) && !field.is_deprecated())
                    .filter_map(|field| Some((field, self.field_definition(field)?)))
                    .filter(|(_, def)| !def.arguments.iter().any(|a| is_required(a)))
                    .collect();
                let is_leaf = |field: &Member| {
                    field.named_type.is_some_and(|t| {
                        matches!(
                            catalog.member(t).kind,
                            MemberKind::Scalar | MemberKind::Enum
                        )
                    })
                };
                let is_identifier = |field: &Member| {
                    key_fields.contains(&field.name.as_str())
                        || field.named_type.is_some_and(|t| {
                            let t = catalog.member(t);
                            t.builtin && t.name == "ID"
                        })
                };
                let is_name = |field: &Member| {
                    field.name == "name" || field.name == "title" || field.name.ends_with("Name")
                };
                let mut picked: Vec<&Member> = Vec::new();
                if let Some((field, _)) =
                    fields.iter().find(|(f, _)| is_leaf(f) && is_identifier(f))
                {
                    picked.push(field);
                }
                if let Some((field, _)) = fields.iter().find(|(f, _)| is_leaf(f) && is_name(f)) {
                    picked.push(field);
                }
                let mut selection: Vec<Selection> = picked
                    .iter()
                    .map(|f| Selection::Leaf(f.name.clone()))
                    .collect();
                if selection.is_empty() && depth < MAX_SELECTION_DEPTH {
                    // No identifier or name here: the first composite field's, if it has one.
                    for (field, _) in fields.iter().filter(|(f, _)| !is_leaf(f)) {
                        let Some(inner) = field.named_type else {
                            continue;
                        };
                        let nested = self.leaves(inner, depth + 1);
                        let shows_something = nested
                            .iter()
                            .any(|s| !matches!(s, Selection::Leaf(name) if name == "__typename"));
                        if shows_something {
                            selection.push(Selection::Nested(field.name.clone(), nested));
                            break;
                        }
                    }
                }
                if selection.is_empty() {
                    selection.extend(
                        fields
                            .iter()
                            .filter(|(f, _)| is_leaf(f))
                            .take(MAX_LEAVES)
                            .map(|(f, _)| Selection::Leaf(f.name.clone())),
                    );
                }
                if selection.is_empty() {
                    selection.push(Selection::Leaf("__typename".into()));
                }
                selection
            }
            _ => Vec::new(),
        }
    }
}

/// `value` inside as many lists as `ty` has.
fn in_lists(ty: &Type, value: String) -> String {
    match ty {
        Type::List(inner) | Type::NonNullList(inner) => format!("[{}]", in_lists(inner, value)),
        _ => value,
    }
}

/// An operation name from a coordinate: `Query.repository(owner:)` -> `QueryRepositoryOwner`.
fn operation_name(coordinate: &str) -> String {
    coordinate
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|part| !part.is_empty())
        .map(|part| {
            let part = part.trim_start_matches('_');
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => String::new(),
            }
        })
        .collect()
}
