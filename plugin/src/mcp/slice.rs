//! SDL slices: the few definitions an agent needs, printed as SDL from the API schema as one
//! tenant sees it. Members are added by coordinate ([`Slice::member`], [`Slice::hit`]); each
//! type is kept whole or as the fields asked for, and printed once, in the order first added,
//! with only `@deprecated` and `@oneOf` of its directives (what an operation's author needs).
//! What the tenant's contract hides is never added nor printed: no field, argument, enum value,
//! union member or interface of it appears.

use std::fmt::Write;

use apollo_compiler::collections::{HashMap, IndexMap, IndexSet};
use apollo_compiler::schema::{Component, ExtendedType, FieldDefinition, InputValueDefinition};
use apollo_compiler::{Name, Node};
use wayfinder_supergraph::MemberKind;

use crate::request::definitions::{fields_of, Scope};

/// Most fields of a type a search hit uses a slice lists: its leaves (or an input type's
/// required fields); the rest are counted in a comment that says how to see them.
pub const HIT_TYPE_FIELDS: usize = 8;

/// How many levels below a search hit's return type a slice goes to find a leaf to select,
/// when that type has none (a connection: its edges, then their nodes).
pub const LEAF_DEPTH: usize = 2;

/// How much of one type a slice shows.
#[derive(Default)]
struct Shown {
    /// Fields asked for by name: always listed; `true`: with their descriptions.
    fields: IndexMap<Name, bool>,
    /// Every field the tenant sees too: with descriptions or as signatures, at most `limit`.
    whole: Option<Whole>,
    /// Arguments, by (field, argument), printed with their descriptions.
    arguments: IndexSet<(Name, Name)>,
    /// A search hit: its own description is printed.
    hit: bool,
}

impl Shown {
    /// Whether the entry `name` is printed with its description.
    fn described(&self, name: &Name) -> bool {
        self.fields.get(name).copied().unwrap_or(false)
            || self.whole.is_some_and(|whole| whole.described)
    }
}

/// Which of a type's visible entries (fields, input fields or enum values, each with whether
/// it goes first: a leaf, a required input field) it lists, in schema order, and how many it
/// leaves out: every one of a whole type, but for one with a limit, only those asked for and
/// those that go first (any others when none does), up to the limit; else only the ones asked
/// for.
fn chosen<'e>(
    shown: &Shown,
    entries: impl Iterator<Item = (&'e Name, bool)>,
) -> (Vec<&'e Name>, usize) {
    let mut candidates: Vec<(usize, &Name, bool)> = entries
        .enumerate()
        .filter(|(_, (name, _))| shown.whole.is_some() || shown.fields.contains_key(*name))
        .map(|(i, (name, first))| (i, name, first))
        .collect();
    let total = candidates.len();
    let limit = shown.whole.map_or(usize::MAX, |whole| whole.limit);
    // A type cut to a few entries keeps the ones asked for and those that go first, if any.
    if limit < usize::MAX && candidates.iter().any(|(_, _, first)| *first) {
        candidates.retain(|(_, name, first)| *first || shown.fields.contains_key(*name));
    }
    if candidates.len() > limit {
        candidates.sort_by_key(|(_, name, first)| (!shown.fields.contains_key(*name), !first));
        candidates.truncate(limit.max(shown.fields.len()));
        candidates.sort_by_key(|(i, _, _)| *i);
    }
    let listed: Vec<&Name> = candidates.into_iter().map(|(_, name, _)| name).collect();
    let left_out = total - listed.len();
    (listed, left_out)
}

/// Opens a type's body, unless it lists nothing.
fn open(out: &mut String, empty: bool) {
    out.push_str(if empty { "" } else { " {\n" });
}

/// Closes a type's body, saying how to see what was left out.
fn close(out: &mut String, empty: bool, left_out: usize, what: &str, name: &str) {
    if left_out > 0 && !empty {
        let _ = writeln!(out, "  # {left_out} more {what}: introspect {name}");
    }
    out.push_str(if empty { "\n" } else { "}\n" });
}

#[derive(Clone, Copy)]
struct Whole {
    described: bool,
    limit: usize,
}

/// The definitions to print, by name.
pub struct Slice<'a> {
    scope: &'a Scope,
    types: IndexMap<Name, Shown>,
    directives: IndexSet<Name>,
    /// The depth each whole type was expanded to, so that a type reached twice is walked
    /// again only when reached with more depth left.
    expanded: HashMap<Name, usize>,
}

impl<'a> Slice<'a> {
    pub fn new(scope: &'a Scope) -> Self {
        Slice {
            scope,
            types: IndexMap::default(),
            directives: IndexSet::default(),
            expanded: HashMap::default(),
        }
    }

    /// Adds the member at `coordinate` with its descriptions, and the types it references,
    /// `depth` levels deep (0: the member alone). False when the tenant does not see it.
    pub fn member(&mut self, coordinate: &str, depth: usize) -> bool {
        let Some(member) = self.scope.member(coordinate) else {
            return false;
        };
        let parent = member
            .parent
            .map(|id| self.scope.catalog.member(id).name.clone());
        let name = member.name.clone();
        match member.kind {
            kind if kind.is_type() => self.whole(&name, true, usize::MAX, depth),
            MemberKind::Field | MemberKind::Argument => {
                if let Some((owner, field)) = self.field_of(coordinate) {
                    self.field(&owner, &field, depth, true);
                }
            }
            MemberKind::InputField | MemberKind::EnumValue => {
                if let Some(parent) = parent {
                    self.whole(&parent, true, usize::MAX, depth);
                }
            }
            MemberKind::Directive => self.directive(&name, depth),
            MemberKind::DirectiveArgument => {
                if let Some(parent) = parent {
                    self.directive(&parent, depth);
                }
            }
            _ => return false,
        }
        true
    }

    /// Adds a search hit compactly: the fields on `path` (from a root to it) as signatures,
    /// the member with its description, and what using it needs, as signatures cut to
    /// [`HIT_TYPE_FIELDS`]: a field's return type and its arguments' input types; the rest of
    /// an input field's type or a value's enum.
    pub fn hit(&mut self, coordinate: &str, path: &[String]) {
        for step in path.iter().filter(|step| step.as_str() != coordinate) {
            if let Some((owner, field)) = self.field_of(step) {
                self.field(&owner, &field, 0, false);
            } else if self
                .scope
                .member(step)
                .is_some_and(|m| m.kind == MemberKind::InputField)
            {
                self.in_compact_parent(step, false);
            }
        }
        let Some(member) = self.scope.member(coordinate) else {
            return;
        };
        match member.kind {
            MemberKind::Field | MemberKind::Argument => {
                let Some((owner, field)) = self.field_of(coordinate) else {
                    return;
                };
                let argument = (member.kind == MemberKind::Argument).then(|| member.name.clone());
                self.field(&owner, &field, 0, argument.is_none());
                let Some(definition) = self.field_definition(&owner, &field) else {
                    return;
                };
                // What an operation needs: a selection of what it returns, and values of its
                // required arguments (and of the argument hit).
                let returned = definition.ty.inner_named_type().clone();
                let mut used = vec![returned.clone()];
                used.extend(
                    self.visible_arguments(&owner, definition)
                        .filter(|a| {
                            (a.ty.is_non_null() && a.default_value.is_none())
                                || argument.as_deref() == Some(a.name.as_str())
                        })
                        .map(|a| a.ty.inner_named_type().clone()),
                );
                if let (Some(argument), Some(shown)) =
                    (argument, self.types.get_mut(owner.as_str()))
                {
                    if let Ok(argument) = Name::new(&argument) {
                        shown.arguments.insert((definition.name.clone(), argument));
                    }
                }
                self.referenced(used, false, HIT_TYPE_FIELDS, 0);
                self.down_to_leaves(&returned, LEAF_DEPTH);
            }
            MemberKind::InputField | MemberKind::EnumValue => {
                self.in_compact_parent(coordinate, true);
            }
            kind if kind.is_type() => {
                let name = member.name.clone();
                self.whole(&name, false, HIT_TYPE_FIELDS, 0);
                if let Some(shown) = self.types.get_mut(name.as_str()) {
                    shown.hit = true;
                }
            }
            _ => {
                self.member(coordinate, 0);
            }
        }
    }

    /// Adds the input field or enum value at `coordinate` to its type, shown compactly.
    fn in_compact_parent(&mut self, coordinate: &str, described: bool) {
        let Some(member) = self.scope.member(coordinate) else {
            return;
        };
        let Some(parent) = member.parent.map(|id| self.scope.catalog.member(id)) else {
            return;
        };
        let (parent, name) = (parent.name.clone(), member.name.clone());
        self.whole(&parent, false, HIT_TYPE_FIELDS, 0);
        if let (Some(shown), Ok(name)) = (self.types.get_mut(parent.as_str()), Name::new(&name)) {
            *shown.fields.entry(name).or_default() |= described;
        }
    }

    /// Adds, compactly, the types below `name` when it has no leaf to select (a connection's
    /// edges and nodes), until one does, at most `depth` levels down.
    fn down_to_leaves(&mut self, name: &Name, depth: usize) {
        let schema = self.scope.catalog.api_schema();
        let Some(fields) = schema.types.get(name).and_then(fields_of) else {
            return;
        };
        let plain: Vec<&Component<FieldDefinition>> = fields
            .values()
            .filter(|f| self.scope.visible(&format!("{name}.{}", f.name)))
            .filter(|f| {
                !f.arguments
                    .iter()
                    .any(|a| a.ty.is_non_null() && a.default_value.is_none())
            })
            .collect();
        if depth == 0 || plain.iter().any(|f| returns_leaf(schema, f)) {
            return;
        }
        let below: Vec<Name> = plain
            .iter()
            .map(|f| f.ty.inner_named_type().clone())
            .collect();
        for name in below {
            self.referenced(vec![name.clone()], false, HIT_TYPE_FIELDS, 0);
            self.down_to_leaves(&name, depth - 1);
        }
    }

    /// The (type, field) a field or argument coordinate belongs to, if the tenant sees it.
    fn field_of(&self, coordinate: &str) -> Option<(String, String)> {
        let member = self.scope.member(coordinate)?;
        let field = match member.kind {
            MemberKind::Field => member,
            MemberKind::Argument => self.scope.catalog.member(member.parent?),
            _ => return None,
        };
        let owner = self.scope.catalog.member(field.parent?);
        Some((owner.name.clone(), field.name.clone()))
    }

    /// The slice as SDL, at most about `room` characters: definitions past it are left out
    /// and counted in a closing comment. Empty when nothing was added.
    pub fn sdl(&self, room: usize) -> String {
        let mut out = String::new();
        let schema = self.scope.catalog.api_schema();
        let mut left_out = 0;
        for (name, shown) in &self.types {
            let Some(ty) = schema.types.get(name) else {
                continue;
            };
            let mut definition = String::new();
            self.print_type(&mut definition, ty, shown);
            if out.len() + definition.len() > room {
                left_out += 1;
                continue;
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&definition);
        }
        if left_out > 0 {
            let _ = writeln!(
                out,
                "\n# {left_out} more definitions left out (`mcp.max_text_chars`): ask for fewer \
                 coordinates or less depth"
            );
        }
        for name in &self.directives {
            if let Some(definition) = schema.directive_definitions.get(name) {
                if !out.is_empty() {
                    out.push('\n');
                }
                description(&mut out, "", definition.description.as_deref());
                let _ = write!(out, "directive @{name}");
                let arguments: Vec<Node<InputValueDefinition>> =
                    self.directive_arguments(definition).cloned().collect();
                self.print_arguments(&mut out, &arguments, |_| true);
                if definition.repeatable {
                    out.push_str(" repeatable");
                }
                let locations: Vec<&str> = definition.locations.iter().map(|l| l.name()).collect();
                let _ = writeln!(out, " on {}", locations.join(" | "));
            }
        }
        out
    }

    fn field(&mut self, owner: &str, field: &str, depth: usize, described: bool) {
        let Some(definition) = self.field_definition(owner, field) else {
            return;
        };
        let mut referenced = vec![definition.ty.inner_named_type().clone()];
        referenced.extend(
            self.visible_arguments(owner, definition)
                .map(|argument| argument.ty.inner_named_type().clone()),
        );
        let Ok(owner) = Name::new(owner) else {
            return;
        };
        let field = definition.name.clone();
        *self
            .types
            .entry(owner)
            .or_default()
            .fields
            .entry(field)
            .or_default() |= described;
        if depth > 0 {
            self.referenced(referenced, true, usize::MAX, depth - 1);
        }
    }

    fn directive(&mut self, name: &str, depth: usize) {
        let schema = self.scope.catalog.api_schema();
        let Some(definition) = schema.directive_definitions.get(name) else {
            return;
        };
        self.directives.insert(definition.name.clone());
        if depth > 0 {
            let referenced: Vec<Name> = self
                .directive_arguments(definition)
                .map(|argument| argument.ty.inner_named_type().clone())
                .collect();
            self.referenced(referenced, true, usize::MAX, depth - 1);
        }
    }

    /// Adds the type `name` whole (its visible fields, with descriptions when `described`,
    /// at most `limit` of them) and what its fields reference, `depth` levels deep.
    fn whole(&mut self, name: &str, described: bool, limit: usize, depth: usize) {
        let schema = self.scope.catalog.api_schema();
        let Some(ty) = schema.types.get(name) else {
            return;
        };
        if !self.scope.visible(name) {
            return;
        }
        let name = ty.name().clone();
        let shown = self.types.entry(name.clone()).or_default();
        shown.whole = Some(match shown.whole {
            Some(was) => Whole {
                described: was.described || described,
                limit: was.limit.max(limit),
            },
            None => Whole { described, limit },
        });
        if depth == 0 || self.expanded.get(&name).is_some_and(|done| *done >= depth) {
            return;
        }
        self.expanded.insert(name.clone(), depth);
        let referenced: Vec<Name> = match ty {
            ExtendedType::Object(object) => self.field_references(&name, &object.fields),
            ExtendedType::Interface(interface) => self.field_references(&name, &interface.fields),
            ExtendedType::Union(union) => union.members.iter().map(|m| m.name.clone()).collect(),
            ExtendedType::InputObject(input) => input
                .fields
                .iter()
                .filter(|(field, _)| self.scope.visible(&format!("{name}.{field}")))
                .map(|(_, field)| field.ty.inner_named_type().clone())
                .collect(),
            _ => Vec::new(),
        };
        self.referenced(referenced, described, limit, depth - 1);
    }

    /// Adds the types named in `names` as [`Slice::whole`] does, but for the built-in scalars,
    /// which every reader knows.
    fn referenced(&mut self, names: Vec<Name>, described: bool, limit: usize, depth: usize) {
        let schema = self.scope.catalog.api_schema();
        for name in names {
            if !schema.types.get(&name).is_some_and(|ty| ty.is_built_in()) {
                self.whole(&name, described, limit, depth);
            }
        }
    }

    fn field_references(
        &self,
        owner: &str,
        fields: &IndexMap<Name, Component<FieldDefinition>>,
    ) -> Vec<Name> {
        let mut referenced = Vec::new();
        for (name, field) in fields {
            if !self.scope.visible(&format!("{owner}.{name}")) {
                continue;
            }
            referenced.push(field.ty.inner_named_type().clone());
            referenced.extend(
                self.visible_arguments(owner, field)
                    .map(|argument| argument.ty.inner_named_type().clone()),
            );
        }
        referenced
    }

    fn field_definition(&self, owner: &str, field: &str) -> Option<&'a Component<FieldDefinition>> {
        let scope: &'a Scope = self.scope;
        fields_of(scope.catalog.api_schema().types.get(owner)?)?.get(field)
    }

    fn directive_arguments<'d>(
        &'d self,
        directive: &'d apollo_compiler::schema::DirectiveDefinition,
    ) -> impl Iterator<Item = &'d Node<InputValueDefinition>> + 'd {
        directive.arguments.iter().filter(move |argument| {
            self.scope
                .visible(&format!("@{}({}:)", directive.name, argument.name))
        })
    }

    fn visible_arguments<'f>(
        &'f self,
        owner: &'f str,
        field: &'f FieldDefinition,
    ) -> impl Iterator<Item = &'f Node<InputValueDefinition>> + 'f {
        field.arguments.iter().filter(move |argument| {
            self.scope
                .visible(&format!("{owner}.{}({}:)", field.name, argument.name))
        })
    }

    fn print_type(&self, out: &mut String, ty: &ExtendedType, shown: &Shown) {
        let name = ty.name();
        if shown.hit || shown.whole.is_some_and(|whole| whole.described) {
            description(out, "", ty.description().map(|d| d.as_str()));
        }
        let schema = self.scope.catalog.api_schema();
        let visible = |entry: &Name| self.scope.visible(&format!("{name}.{entry}"));
        match ty {
            ExtendedType::Scalar(_) => {
                let _ = writeln!(out, "scalar {name}");
            }
            ExtendedType::Object(_) | ExtendedType::Interface(_) => {
                let (keyword, interfaces, fields) = match ty {
                    ExtendedType::Object(o) => ("type", &o.implements_interfaces, &o.fields),
                    ExtendedType::Interface(i) => {
                        ("interface", &i.implements_interfaces, &i.fields)
                    }
                    _ => return,
                };
                let _ = write!(out, "{keyword} {name}");
                self.print_implements(out, interfaces, shown);
                // Leaves (scalars and enums) first: what an agent selects.
                let entries = fields
                    .values()
                    .filter(|f| visible(&f.name))
                    .map(|f| (&f.name, returns_leaf(schema, f)));
                let (listed, left_out) = chosen(shown, entries);
                open(out, listed.is_empty());
                for field in listed.iter().filter_map(|n| fields.get(*n)) {
                    let described = shown.described(&field.name);
                    if described {
                        description(out, "  ", field.description.as_deref());
                    }
                    let _ = write!(out, "  {}", field.name);
                    let arguments: Vec<Node<InputValueDefinition>> =
                        self.visible_arguments(name, field).cloned().collect();
                    self.print_arguments(out, &arguments, |argument| {
                        described
                            || shown
                                .arguments
                                .contains(&(field.name.clone(), argument.clone()))
                    });
                    let _ = write!(out, ": {}", field.ty);
                    kept_directives(out, field.directives.iter().map(|d| &**d));
                    out.push('\n');
                }
                close(out, listed.is_empty(), left_out, "fields", name);
            }
            ExtendedType::Union(union) => {
                let members: Vec<&str> = union
                    .members
                    .iter()
                    .map(|m| m.name.as_str())
                    .filter(|m| self.scope.visible(m))
                    .collect();
                let _ = write!(out, "union {name}");
                if !members.is_empty() {
                    let _ = write!(out, " = {}", members.join(" | "));
                }
                out.push('\n');
            }
            ExtendedType::Enum(enumeration) => {
                let _ = write!(out, "enum {name}");
                let entries = enumeration
                    .values
                    .values()
                    .filter(|v| visible(&v.value))
                    .map(|v| (&v.value, false));
                let (listed, left_out) = chosen(shown, entries);
                open(out, listed.is_empty());
                for value in listed.iter().filter_map(|n| enumeration.values.get(*n)) {
                    if shown.described(&value.value) {
                        description(out, "  ", value.description.as_deref());
                    }
                    let _ = write!(out, "  {}", value.value);
                    kept_directives(out, value.directives.iter().map(|d| &**d));
                    out.push('\n');
                }
                close(out, listed.is_empty(), left_out, "values", name);
            }
            ExtendedType::InputObject(input) => {
                let _ = write!(out, "input {name}");
                kept_directives(out, input.directives.iter().map(|d| &***d));
                // Required fields first: a value must have them.
                let entries = input
                    .fields
                    .values()
                    .filter(|f| visible(&f.name))
                    .map(|f| (&f.name, f.ty.is_non_null() && f.default_value.is_none()));
                let (listed, left_out) = chosen(shown, entries);
                open(out, listed.is_empty());
                for field in listed.iter().filter_map(|n| input.fields.get(*n)) {
                    if shown.described(&field.name) {
                        description(out, "  ", field.description.as_deref());
                    }
                    out.push_str("  ");
                    input_value(out, field);
                    out.push('\n');
                }
                close(out, listed.is_empty(), left_out, "fields", name);
            }
        }
    }

    /// `implements A & B`, for a type shown whole: a few of its fields need none of it.
    fn print_implements(
        &self,
        out: &mut String,
        interfaces: &IndexSet<apollo_compiler::schema::ComponentName>,
        shown: &Shown,
    ) {
        if shown.whole.is_none() {
            return;
        }
        let visible: Vec<&str> = interfaces
            .iter()
            .map(|i| i.name.as_str())
            .filter(|i| self.scope.visible(i))
            .collect();
        if !visible.is_empty() {
            let _ = write!(out, " implements {}", visible.join(" & "));
        }
    }

    /// `(a: T = 1, b: U)`, one a line when some carry descriptions to print.
    fn print_arguments(
        &self,
        out: &mut String,
        arguments: &[Node<InputValueDefinition>],
        described: impl Fn(&Name) -> bool,
    ) {
        if arguments.is_empty() {
            return;
        }
        let multiline = arguments
            .iter()
            .any(|a| a.description.is_some() && described(&a.name));
        out.push('(');
        for (i, argument) in arguments.iter().enumerate() {
            if multiline {
                out.push('\n');
                if described(&argument.name) {
                    description(out, "    ", argument.description.as_deref());
                }
                out.push_str("    ");
            } else if i > 0 {
                out.push_str(", ");
            }
            input_value(out, argument);
        }
        if multiline {
            out.push_str("\n  ");
        }
        out.push(')');
    }
}

/// Whether `field` returns a scalar or an enum: what a selection ends with.
fn returns_leaf(schema: &apollo_compiler::Schema, field: &FieldDefinition) -> bool {
    schema
        .types
        .get(field.ty.inner_named_type())
        .is_some_and(|t| t.is_leaf())
}

/// `name: Type = default @deprecated(...)`
fn input_value(out: &mut String, value: &InputValueDefinition) {
    let _ = write!(out, "{}: {}", value.name, value.ty);
    if let Some(default) = &value.default_value {
        let _ = write!(out, " = {default}");
    }
    kept_directives(out, value.directives.iter().map(|d| &**d));
}

/// The directives an operation's author needs: `@deprecated` and `@oneOf`.
fn kept_directives<'d>(
    out: &mut String,
    directives: impl IntoIterator<Item = &'d apollo_compiler::ast::Directive>,
) {
    for directive in directives {
        if matches!(directive.name.as_str(), "deprecated" | "oneOf") {
            let _ = write!(out, " {directive}");
        }
    }
}

/// A description as one GraphQL string line (a JSON string is a valid GraphQL string).
fn description(out: &mut String, indent: &str, text: Option<&str>) {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return;
    };
    if let Ok(quoted) = serde_json::to_string(text) {
        let _ = writeln!(out, "{indent}{quoted}");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wayfinder_supergraph::{Catalog, CatalogOptions, ContractFilter};
    use wayfinder_workers::index::visibility::Visibility;

    use super::*;

    fn scope(path: &str, exclude: Option<&str>) -> Scope {
        let catalog = Arc::new(
            Catalog::from_file(&wayfinder_tests::repo_path(path), CatalogOptions::default())
                .expect("catalogs the supergraph"),
        );
        let contract = exclude.map(|tag| {
            Arc::new(catalog.contract(&ContractFilter {
                include_tags: Default::default(),
                exclude_tags: [tag.to_string()].into(),
            }))
        });
        Scope {
            catalog,
            visibility: Visibility::of(contract),
            learned: None,
            made: Default::default(),
        }
    }

    /// Every coordinate an SDL text defines.
    fn coordinates_in(document: &apollo_compiler::ast::Document) -> Vec<String> {
        use apollo_compiler::ast::Definition;
        let mut found = Vec::new();
        for definition in &document.definitions {
            let Some(name) = definition.name() else {
                continue;
            };
            found.push(name.to_string());
            let fields = match definition {
                Definition::ObjectTypeDefinition(object) => object.fields.clone(),
                Definition::InterfaceTypeDefinition(interface) => interface.fields.clone(),
                _ => Vec::new(),
            };
            for field in fields {
                found.push(format!("{name}.{}", field.name));
                found.push(field.ty.inner_named_type().to_string());
                for argument in &field.arguments {
                    found.push(format!("{name}.{}({}:)", field.name, argument.name));
                    found.push(argument.ty.inner_named_type().to_string());
                }
            }
            if let Definition::DirectiveDefinition(directive) = definition {
                for argument in &directive.arguments {
                    found.push(format!("@{name}({}:)", argument.name));
                    found.push(argument.ty.inner_named_type().to_string());
                }
            }
            match definition {
                Definition::EnumTypeDefinition(enumeration) => found.extend(
                    enumeration
                        .values
                        .iter()
                        .map(|v| format!("{name}.{}", v.value)),
                ),
                Definition::InputObjectTypeDefinition(input) => {
                    for field in &input.fields {
                        found.push(format!("{name}.{}", field.name));
                        found.push(field.ty.inner_named_type().to_string());
                    }
                }
                Definition::UnionTypeDefinition(union) => {
                    found.extend(union.members.iter().map(|m| m.to_string()))
                }
                _ => {}
            }
        }
        found
    }

    #[test]
    fn every_slice_parses_as_sdl_and_shows_nothing_the_contract_hides() {
        let public = scope("examples/bookshop/supergraph.graphql", Some("internal"));
        let hidden = |coordinate: &str| {
            public.catalog.get(coordinate).is_some() && public.member(coordinate).is_none()
        };
        assert!(hidden("Book.costCents"));
        for member in public.catalog.members() {
            for depth in 0..=super::super::tools::MAX_DEPTH {
                let mut slice = Slice::new(&public);
                let seen = slice.member(&member.coordinate, depth);
                assert_eq!(seen, public.member(&member.coordinate).is_some());
                slice.hit(&member.coordinate, &[]);
                let sdl = slice.sdl(usize::MAX);
                assert_eq!(sdl.is_empty(), !seen, "{}:\n{sdl}", member.coordinate);
                if !seen {
                    continue;
                }
                let document = apollo_compiler::ast::Document::parse(&sdl, "slice.graphql")
                    .unwrap_or_else(|e| {
                        panic!(
                            "{} at depth {depth}: {}\n{sdl}",
                            member.coordinate, e.errors
                        )
                    });
                for shown in coordinates_in(&document) {
                    assert!(
                        !hidden(&shown),
                        "{} shows {shown}:\n{sdl}",
                        member.coordinate
                    );
                }
            }
        }
    }

    #[test]
    fn a_hit_shows_its_path_its_arguments_and_the_type_it_returns() {
        let all = scope("examples/bookshop/supergraph.graphql", None);
        let mut slice = Slice::new(&all);
        slice.hit(
            "Customer.orders",
            &["Query.me".to_string(), "Customer.orders".to_string()],
        );
        let sdl = slice.sdl(usize::MAX);
        for expected in [
            // The path's fields as signatures.
            "type Query {\n  me: Customer\n}",
            "\"Orders placed by this customer, newest first.\"\n  orders: [Order!]!",
            "type Order {",
            "totalCents: Int!",
        ] {
            assert!(sdl.contains(expected), "{expected}\n---\n{sdl}");
        }
        // A hit's return type is listed as signatures, without descriptions.
        assert!(!sdl.contains("A purchase by one customer."), "{sdl}");
    }

    #[test]
    fn a_large_return_type_is_cut_to_its_leaves_with_a_pointer_to_the_rest() {
        let github = scope_of_schema("monolithic/github/schema.graphql");
        let mut slice = Slice::new(&github);
        slice.hit("Query.repository", &["Query.repository".to_string()]);
        let sdl = slice.sdl(usize::MAX);
        let repository = sdl
            .split("\n\n")
            .find(|block| block.starts_with("type Repository"))
            .unwrap_or_else(|| panic!("{sdl}"));
        assert!(
            repository.contains("more fields: introspect Repository"),
            "{repository}"
        );
        assert_eq!(
            repository
                .lines()
                .filter(|l| l.starts_with("  ") && !l.starts_with("  #"))
                .count(),
            HIT_TYPE_FIELDS,
            "{repository}"
        );
    }

    fn scope_of_schema(path: &str) -> Scope {
        let catalog = Arc::new(
            Catalog::from_file(
                &wayfinder_tests::schema_path(path),
                CatalogOptions::default(),
            )
            .expect("catalogs the schema"),
        );
        Scope {
            catalog,
            visibility: Visibility::of(None),
            learned: None,
            made: Default::default(),
        }
    }
}
