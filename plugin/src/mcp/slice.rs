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

use crate::definitions::Scope;

/// Most fields of a search hit's return type a slice lists (leaf fields first); the rest are
/// counted in a comment that says how to see them.
pub const HIT_TYPE_FIELDS: usize = 12;

/// How much of one type a slice shows.
#[derive(Default)]
struct Shown {
    /// Fields asked for by name: always listed, with their descriptions.
    fields: IndexSet<Name>,
    /// Every field the tenant sees too: with descriptions or as signatures, at most `limit`.
    whole: Option<Whole>,
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
            MemberKind::Field => {
                if let Some(parent) = parent {
                    self.field(&parent, &name, depth);
                }
            }
            MemberKind::Argument => {
                let field = member.parent.map(|id| self.scope.catalog.member(id));
                let owner = field
                    .and_then(|f| f.parent)
                    .map(|id| self.scope.catalog.member(id));
                if let (Some(field), Some(owner)) = (field, owner) {
                    let (field, owner) = (field.name.clone(), owner.name.clone());
                    self.field(&owner, &field, depth);
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

    /// Adds a search hit: the fields of `path` (from a root to it), the member itself, and what
    /// selecting it needs: a field's return type and its arguments' input types, as
    /// signatures.
    pub fn hit(&mut self, coordinate: &str, path: &[String]) {
        for step in path.iter().filter(|step| step.as_str() != coordinate) {
            self.member(step, 0);
        }
        if !self.member(coordinate, 0) {
            return;
        }
        let Some(member) = self.scope.member(coordinate) else {
            return;
        };
        let field = match member.kind {
            MemberKind::Field => Some(member),
            MemberKind::Argument => member.parent.map(|id| self.scope.catalog.member(id)),
            _ => None,
        };
        let Some(owner) = field
            .and_then(|f| f.parent)
            .map(|id| self.scope.catalog.member(id).name.clone())
        else {
            return;
        };
        let Some(field) = field.map(|f| f.name.clone()) else {
            return;
        };
        if let Some(definition) = self.field_definition(&owner, &field) {
            let mut referenced = vec![definition.ty.inner_named_type().clone()];
            referenced.extend(
                self.visible_arguments(&owner, definition)
                    .map(|a| a.ty.inner_named_type().clone()),
            );
            self.referenced(referenced, false, HIT_TYPE_FIELDS, 0);
        }
    }

    /// The slice as SDL; empty when nothing was added.
    pub fn sdl(&self) -> String {
        let mut out = String::new();
        let schema = self.scope.catalog.api_schema();
        for (name, shown) in &self.types {
            if let Some(ty) = schema.types.get(name) {
                if !out.is_empty() {
                    out.push('\n');
                }
                self.print_type(&mut out, ty, shown);
            }
        }
        for name in &self.directives {
            if let Some(definition) = schema.directive_definitions.get(name) {
                if !out.is_empty() {
                    out.push('\n');
                }
                description(&mut out, "", definition.description.as_deref());
                let _ = write!(out, "directive @{name}");
                self.print_arguments(&mut out, &definition.arguments, true);
                if definition.repeatable {
                    out.push_str(" repeatable");
                }
                let locations: Vec<&str> = definition.locations.iter().map(|l| l.name()).collect();
                let _ = writeln!(out, " on {}", locations.join(" | "));
            }
        }
        out
    }

    fn field(&mut self, owner: &str, field: &str, depth: usize) {
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
        self.types.entry(owner).or_default().fields.insert(field);
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
            let referenced: Vec<Name> = definition
                .arguments
                .iter()
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
        match scope.catalog.api_schema().types.get(owner)? {
            ExtendedType::Object(object) => object.fields.get(field),
            ExtendedType::Interface(interface) => interface.fields.get(field),
            _ => None,
        }
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
        let described = shown.whole.is_some_and(|whole| whole.described);
        if described {
            description(out, "", ty.description().map(|d| d.as_str()));
        }
        match ty {
            ExtendedType::Scalar(_) => {
                let _ = writeln!(out, "scalar {name}");
            }
            ExtendedType::Object(object) => {
                let _ = write!(out, "type {name}");
                self.print_implements(out, &object.implements_interfaces);
                self.print_fields(out, name, &object.fields, shown);
            }
            ExtendedType::Interface(interface) => {
                let _ = write!(out, "interface {name}");
                self.print_implements(out, &interface.implements_interfaces);
                self.print_fields(out, name, &interface.fields, shown);
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
                let values: Vec<_> = enumeration
                    .values
                    .values()
                    .filter(|v| self.scope.visible(&format!("{name}.{}", v.value)))
                    .collect();
                if values.is_empty() {
                    out.push('\n');
                    return;
                }
                out.push_str(" {\n");
                for value in values {
                    if described {
                        description(out, "  ", value.description.as_deref());
                    }
                    let _ = write!(out, "  {}", value.value);
                    kept_directives(out, value.directives.iter().map(|d| &**d));
                    out.push('\n');
                }
                out.push_str("}\n");
            }
            ExtendedType::InputObject(input) => {
                let _ = write!(out, "input {name}");
                kept_directives(out, input.directives.iter().map(|d| &***d));
                let fields: Vec<_> = input
                    .fields
                    .values()
                    .filter(|f| self.scope.visible(&format!("{name}.{}", f.name)))
                    .collect();
                if fields.is_empty() {
                    out.push('\n');
                    return;
                }
                out.push_str(" {\n");
                for field in fields {
                    if described {
                        description(out, "  ", field.description.as_deref());
                    }
                    out.push_str("  ");
                    input_value(out, field);
                    out.push('\n');
                }
                out.push_str("}\n");
            }
        }
    }

    fn print_implements(
        &self,
        out: &mut String,
        interfaces: &IndexSet<apollo_compiler::schema::ComponentName>,
    ) {
        let visible: Vec<&str> = interfaces
            .iter()
            .map(|i| i.name.as_str())
            .filter(|i| self.scope.visible(i))
            .collect();
        if !visible.is_empty() {
            let _ = write!(out, " implements {}", visible.join(" & "));
        }
    }

    fn print_fields(
        &self,
        out: &mut String,
        owner: &str,
        fields: &IndexMap<Name, Component<FieldDefinition>>,
        shown: &Shown,
    ) {
        let schema = self.scope.catalog.api_schema();
        let visible: Vec<&Component<FieldDefinition>> = fields
            .values()
            .filter(|f| self.scope.visible(&format!("{owner}.{}", f.name)))
            .filter(|f| shown.whole.is_some() || shown.fields.contains(&f.name))
            .collect();
        let limit = shown.whole.map_or(usize::MAX, |whole| whole.limit);
        let mut listed = visible.clone();
        if listed.len() > limit {
            // The fields asked for, then what an agent selects first: leaves (scalars and
            // enums); listed in schema order.
            listed.sort_by_key(|f| {
                let leaf = schema
                    .types
                    .get(f.ty.inner_named_type())
                    .is_some_and(|t| t.is_leaf());
                (!shown.fields.contains(&f.name), !leaf)
            });
            listed.truncate(limit.max(shown.fields.len()));
            listed.sort_by_key(|f| fields.get_index_of(&f.name));
        }
        if listed.is_empty() {
            out.push('\n');
            return;
        }
        out.push_str(" {\n");
        for field in &listed {
            let described = shown.fields.contains(&field.name)
                || shown.whole.is_some_and(|whole| whole.described);
            if described {
                description(out, "  ", field.description.as_deref());
            }
            let _ = write!(out, "  {}", field.name);
            let arguments: Vec<Node<InputValueDefinition>> =
                self.visible_arguments(owner, field).cloned().collect();
            self.print_arguments(out, &arguments, described);
            let _ = write!(out, ": {}", field.ty);
            kept_directives(out, field.directives.iter().map(|d| &**d));
            out.push('\n');
        }
        if listed.len() < visible.len() {
            let _ = writeln!(
                out,
                "  # {} more fields: introspect {owner}",
                visible.len() - listed.len()
            );
        }
        out.push_str("}\n");
    }

    /// `(a: T = 1, b: U)`, one a line when they carry descriptions to print.
    fn print_arguments(
        &self,
        out: &mut String,
        arguments: &[Node<InputValueDefinition>],
        described: bool,
    ) {
        if arguments.is_empty() {
            return;
        }
        let multiline = described && arguments.iter().any(|a| a.description.is_some());
        out.push('(');
        for (i, argument) in arguments.iter().enumerate() {
            if multiline {
                out.push('\n');
                description(out, "    ", argument.description.as_deref());
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
                for argument in &field.arguments {
                    found.push(format!("{name}.{}({}:)", field.name, argument.name));
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
                    found.extend(input.fields.iter().map(|f| format!("{name}.{}", f.name)))
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
            for depth in 0..=MAX_TEST_DEPTH {
                let mut slice = Slice::new(&public);
                let seen = slice.member(&member.coordinate, depth);
                assert_eq!(seen, public.member(&member.coordinate).is_some());
                slice.hit(&member.coordinate, &[]);
                let sdl = slice.sdl();
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

    const MAX_TEST_DEPTH: usize = 2;

    #[test]
    fn a_hit_shows_its_path_its_arguments_and_the_type_it_returns() {
        let all = scope("examples/bookshop/supergraph.graphql", None);
        let mut slice = Slice::new(&all);
        slice.hit(
            "Customer.orders",
            &["Query.me".to_string(), "Customer.orders".to_string()],
        );
        let sdl = slice.sdl();
        for expected in [
            "type Query {\n  \"The customer signed in with this request.\"\n  me: Customer\n}",
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
        let sdl = slice.sdl();
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
        }
    }
}
