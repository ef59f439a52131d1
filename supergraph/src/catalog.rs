//! The catalog: every member of an API schema, keyed by schema coordinate, with its federation
//! facts, its relations to other members, content hashes, and paths to the roots.
//!
//! Data flow: a schema document -> [`crate::source`] (API schema + supergraph directives) ->
//! members in schema order (types, then their fields/arguments/values, then directives) ->
//! relations and deprecation replacements (which need every coordinate) -> federation facts ->
//! content hashes -> per-subgraph member lists -> paths ([`crate::paths`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use apollo_compiler::ast::{FieldDefinition, InputValueDefinition, OperationType};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::Schema;

use crate::error::{CatalogError, SchemaProblem};
use crate::federation::FactReader;
use crate::hash::ContentHasher;
use crate::member::Roots;
use crate::member::{Deprecation, Member, MemberId, MemberKind, Subgraph, SubgraphId};
use crate::paths::{self, PathIndex};
use crate::source;

/// The name of the one subgraph of a plain (non-federated) schema.
pub const PLAIN_SUBGRAPH: &str = "default";

/// Directives the GraphQL specification defines.
const SPEC_DIRECTIVES: &[&str] = &["skip", "include", "deprecated", "specifiedBy", "oneOf"];

/// Choices made when building a catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogOptions {
    /// How many paths to the roots to keep per member (shortest first, `Query` first).
    pub max_paths: usize,
}

impl Default for CatalogOptions {
    fn default() -> Self {
        Self { max_paths: 3 }
    }
}

/// Every member of one API schema. Immutable once built; cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Catalog {
    source_name: String,
    api_schema: Arc<Valid<Schema>>,
    members: Vec<Member>,
    by_coordinate: HashMap<String, MemberId>,
    /// Every member by its own name (`nameWithOwner`: each type's field of that name), in
    /// schema order.
    by_name: HashMap<String, Vec<MemberId>>,
    /// Every member by its coordinate in lower case (`repository.namewithowner`).
    by_folded_coordinate: HashMap<String, Vec<MemberId>>,
    subgraphs: Vec<Subgraph>,
    roots: Roots,
    paths: PathIndex,
    options: CatalogOptions,
    content_hash: u64,
    warnings: Vec<SchemaProblem>,
}

impl Catalog {
    /// Reads and catalogs a schema file (a supergraph or a plain schema).
    pub fn from_file(path: &Path, options: CatalogOptions) -> Result<Self, CatalogError> {
        let sdl = std::fs::read_to_string(path).map_err(|source| CatalogError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_sdl(&sdl, &path.display().to_string(), options)
    }

    /// Catalogs a schema document; `source_name` names it in errors.
    pub fn from_sdl(
        sdl: &str,
        source_name: &str,
        options: CatalogOptions,
    ) -> Result<Self, CatalogError> {
        let source = source::load(sdl, source_name)?;
        Ok(Builder::new(&source, options).build(source_name))
    }

    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// Problems in the document that the load recovered from (a field defined twice...).
    pub fn warnings(&self) -> &[SchemaProblem] {
        &self.warnings
    }

    /// The API schema the members come from (for introspection of definitions).
    pub fn api_schema(&self) -> &Arc<Valid<Schema>> {
        &self.api_schema
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn member(&self, id: MemberId) -> &Member {
        &self.members[id.index()]
    }

    /// The member at a schema coordinate, written as the catalog writes them.
    pub fn get(&self, coordinate: &str) -> Option<&Member> {
        self.by_coordinate
            .get(coordinate)
            .map(|id| self.member(*id))
    }

    /// The members whose coordinate is `coordinate` in any case (`repository.NameWithOwner`,
    /// `issueState`), in schema order: several only where the schema's names differ by case alone.
    pub fn get_ignoring_case(&self, coordinate: &str) -> &[MemberId] {
        self.by_folded_coordinate
            .get(&coordinate.to_lowercase())
            .map_or(&[], Vec::as_slice)
    }

    /// The members whose own name is `name`, in schema order: the fields, arguments, input
    /// fields and values of that name on any parent, or the type or directive itself.
    pub fn named(&self, name: &str) -> &[MemberId] {
        self.by_name.get(name).map_or(&[], Vec::as_slice)
    }

    /// The child of `parent` named `name`: a type's field, input field or value, a field's or
    /// directive's argument.
    pub fn child(&self, parent: &Member, name: &str) -> Option<&Member> {
        parent
            .children
            .iter()
            .map(|id| self.member(*id))
            .find(|child| child.name == name)
    }

    /// The type or directive a member belongs to: itself for a type or directive, a field's or
    /// input field's type, an argument's field's type or directive.
    pub fn container(&self, id: MemberId) -> Option<&Member> {
        let mut member = self.member(id);
        while !(member.kind.is_type() || member.kind == MemberKind::Directive) {
            member = self.member(member.parent?);
        }
        Some(member)
    }

    pub fn subgraphs(&self) -> &[Subgraph] {
        &self.subgraphs
    }

    pub fn subgraph(&self, id: SubgraphId) -> &Subgraph {
        &self.subgraphs[id.index()]
    }

    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    pub fn options(&self) -> &CatalogOptions {
        &self.options
    }

    /// Paths from a root field to the member, each a list of member ids ending with the member.
    /// Empty for root types, directives, and what no root reaches.
    pub fn paths_to_root(&self, id: MemberId) -> &[Box<[MemberId]>] {
        self.paths.paths(id)
    }

    /// Length of the member's shortest stored path (a root field is 1, a root type 0); `None`
    /// when no root reaches it.
    pub fn depth(&self, id: MemberId) -> Option<u32> {
        if self.roots.contains(id) {
            return Some(0);
        }
        self.paths.depth(id)
    }

    /// The coordinates of a path.
    pub fn path_coordinates(&self, path: &[MemberId]) -> Vec<&str> {
        path.iter()
            .map(|id| self.member(*id).coordinate.as_str())
            .collect()
    }

    /// Hash over every member's coordinate and content hash: equal catalogs, equal hashes.
    pub fn content_hash(&self) -> u64 {
        self.content_hash
    }

    pub fn counts_by_kind(&self) -> BTreeMap<MemberKind, usize> {
        let mut counts = BTreeMap::new();
        for member in &self.members {
            *counts.entry(member.kind).or_insert(0) += 1;
        }
        counts
    }

    pub(crate) fn compute_paths(&self, visible: &dyn Fn(MemberId) -> bool) -> PathIndex {
        paths::compute(&self.members, &self.roots, visible, self.options.max_paths)
    }
}

/// Builds a catalog from a loaded source in the passes the module doc lists.
struct Builder<'s> {
    source: &'s source::Source,
    options: CatalogOptions,
    members: Vec<Member>,
    by_coordinate: HashMap<String, MemberId>,
}

impl<'s> Builder<'s> {
    fn new(source: &'s source::Source, options: CatalogOptions) -> Self {
        Self {
            source,
            options,
            members: Vec::new(),
            by_coordinate: HashMap::new(),
        }
    }

    fn build(mut self, source_name: &str) -> Catalog {
        let api = &self.source.api;
        let plain_tag = api
            .directive_definitions
            .contains_key("tag")
            .then(|| "tag".to_string());
        let facts = FactReader::new(self.source.federation.as_ref(), plain_tag);

        for (name, ty) in &api.types {
            if name.starts_with("__") {
                continue;
            }
            self.add_type(name.as_str(), ty);
        }
        for (name, definition) in &api.directive_definitions {
            let directive = self.push(
                format!("@{name}"),
                MemberKind::Directive,
                name.as_str(),
                None,
                definition.description.as_deref(),
                directive_signature(definition),
            );
            self.members[directive.index()].builtin = SPEC_DIRECTIVES.contains(&name.as_str());
            for argument in &definition.arguments {
                self.add_input_value(
                    format!("@{name}({}:)", argument.name),
                    MemberKind::DirectiveArgument,
                    directive,
                    argument,
                );
            }
        }

        self.link_relations();
        self.read_federation(&facts);
        self.resolve_replacements();
        let subgraph_names = self.subgraph_names();
        let hashes: Vec<u64> = self
            .members
            .iter()
            .map(|member| ContentHasher::member(member, &self.members, &subgraph_names))
            .collect();
        for (member, hash) in self.members.iter_mut().zip(hashes) {
            member.content_hash = hash;
        }
        let subgraphs = self.subgraphs(&subgraph_names);

        let roots = Roots {
            query: self.root(OperationType::Query),
            mutation: self.root(OperationType::Mutation),
            subscription: self.root(OperationType::Subscription),
        };
        let content_hash = ContentHasher::members(&self.members, self.members.iter().map(|m| m.id));
        let mut by_name: HashMap<String, Vec<MemberId>> = HashMap::new();
        let mut by_folded_coordinate: HashMap<String, Vec<MemberId>> = HashMap::new();
        for member in &self.members {
            by_name
                .entry(member.name.clone())
                .or_default()
                .push(member.id);
            by_folded_coordinate
                .entry(member.coordinate.to_lowercase())
                .or_default()
                .push(member.id);
        }
        let mut catalog = Catalog {
            source_name: source_name.to_string(),
            api_schema: Arc::new(self.source.api.clone()),
            members: self.members,
            by_coordinate: self.by_coordinate,
            by_name,
            by_folded_coordinate,
            subgraphs,
            roots,
            paths: PathIndex::default(),
            options: self.options,
            content_hash,
            warnings: self.source.warnings.clone(),
        };
        catalog.paths = catalog.compute_paths(&|_| true);
        catalog
    }

    fn root(&self, operation: OperationType) -> Option<MemberId> {
        let name = self.source.api.root_operation(operation)?;
        self.by_coordinate.get(name.as_str()).copied()
    }

    fn push(
        &mut self,
        coordinate: String,
        kind: MemberKind,
        name: &str,
        parent: Option<MemberId>,
        description: Option<&str>,
        signature: String,
    ) -> MemberId {
        let id = MemberId(self.members.len() as u32);
        if let Some(parent) = parent {
            self.members[parent.index()].children.push(id);
        }
        self.by_coordinate.insert(coordinate.clone(), id);
        self.members.push(Member {
            id,
            coordinate,
            kind,
            name: name.to_string(),
            parent,
            description: description.map(str::to_string),
            signature,
            named_type: None,
            deprecation: None,
            subgraphs: Vec::new(),
            keys: Vec::new(),
            federation: Default::default(),
            tags: Vec::new(),
            builtin: false,
            children: Vec::new(),
            interfaces: Vec::new(),
            possible_types: Vec::new(),
            referenced_by: Vec::new(),
            content_hash: 0,
        });
        id
    }

    fn add_type(&mut self, name: &str, ty: &ExtendedType) {
        let (kind, signature) = match ty {
            ExtendedType::Object(object) => (
                MemberKind::Object,
                format!(
                    "type {name}{}",
                    implements(object.implements_interfaces.iter())
                ),
            ),
            ExtendedType::Interface(interface) => (
                MemberKind::Interface,
                format!(
                    "interface {name}{}",
                    implements(interface.implements_interfaces.iter())
                ),
            ),
            ExtendedType::Union(union) => (
                MemberKind::Union,
                format!(
                    "union {name} = {}",
                    union
                        .members
                        .iter()
                        .map(|m| m.as_str())
                        .collect::<Vec<_>>()
                        .join(" | ")
                ),
            ),
            ExtendedType::Enum(_) => (MemberKind::Enum, format!("enum {name}")),
            ExtendedType::InputObject(_) => (MemberKind::InputObject, format!("input {name}")),
            ExtendedType::Scalar(_) => (MemberKind::Scalar, format!("scalar {name}")),
        };
        let id = self.push(
            name.to_string(),
            kind,
            name,
            None,
            ty.description().map(|d| d.as_str()),
            signature,
        );
        self.members[id.index()].builtin = ty.is_built_in();
        let fields = match ty {
            ExtendedType::Object(object) => Some(&object.fields),
            ExtendedType::Interface(interface) => Some(&interface.fields),
            _ => None,
        };
        for field in fields.into_iter().flat_map(|fields| fields.values()) {
            self.add_field(name, id, field);
        }
        match ty {
            ExtendedType::Enum(enumeration) => {
                for value in enumeration.values.values() {
                    let value_id = self.push(
                        format!("{name}.{}", value.value),
                        MemberKind::EnumValue,
                        value.value.as_str(),
                        Some(id),
                        value.description.as_deref(),
                        value.value.to_string(),
                    );
                    self.members[value_id.index()].deprecation = deprecation(&value.directives);
                }
            }
            ExtendedType::InputObject(input) => {
                for field in input.fields.values() {
                    self.add_input_value(
                        format!("{name}.{}", field.name),
                        MemberKind::InputField,
                        id,
                        field,
                    );
                }
            }
            _ => {}
        }
    }

    fn add_field(&mut self, type_name: &str, parent: MemberId, field: &FieldDefinition) {
        let coordinate = format!("{type_name}.{}", field.name);
        let id = self.push(
            coordinate.clone(),
            MemberKind::Field,
            field.name.as_str(),
            Some(parent),
            field.description.as_deref(),
            field_signature(field),
        );
        self.members[id.index()].deprecation = deprecation(&field.directives);
        for argument in &field.arguments {
            self.add_input_value(
                format!("{coordinate}({}:)", argument.name),
                MemberKind::Argument,
                id,
                argument,
            );
        }
    }

    fn add_input_value(
        &mut self,
        coordinate: String,
        kind: MemberKind,
        parent: MemberId,
        value: &InputValueDefinition,
    ) {
        let id = self.push(
            coordinate,
            kind,
            value.name.as_str(),
            Some(parent),
            value.description.as_deref(),
            input_value_signature(value),
        );
        self.members[id.index()].deprecation = deprecation(&value.directives);
    }

    /// Named types, interfaces, possible types and back-references: needs every member.
    fn link_relations(&mut self) {
        let api = &self.source.api;
        let implementers = api.implementers_map();
        for index in 0..self.members.len() {
            let member = &self.members[index];
            let id = member.id;
            match member.kind {
                MemberKind::Field
                | MemberKind::Argument
                | MemberKind::InputField
                | MemberKind::DirectiveArgument => {
                    let named = self.named_type_of(member);
                    if let Some(named) = named {
                        self.members[index].named_type = Some(named);
                        self.members[named.index()].referenced_by.push(id);
                    }
                }
                MemberKind::Object | MemberKind::Interface | MemberKind::Union => {
                    let name = member.name.clone();
                    let ty = &api.types[name.as_str()];
                    let interfaces: Vec<MemberId> = match ty {
                        ExtendedType::Object(object) => {
                            self.ids(object.implements_interfaces.iter().map(|i| i.as_str()))
                        }
                        ExtendedType::Interface(interface) => {
                            self.ids(interface.implements_interfaces.iter().map(|i| i.as_str()))
                        }
                        _ => Vec::new(),
                    };
                    let possible: Vec<MemberId> = match ty {
                        ExtendedType::Union(union) => {
                            self.ids(union.members.iter().map(|m| m.as_str()))
                        }
                        ExtendedType::Interface(_) => implementers
                            .get(name.as_str())
                            .map(|found| self.ids(found.objects.iter().map(|o| o.as_str())))
                            .unwrap_or_default(),
                        _ => Vec::new(),
                    };
                    self.members[index].interfaces = interfaces;
                    self.members[index].possible_types = possible;
                }
                _ => {}
            }
        }
    }

    fn ids<'n>(&self, names: impl Iterator<Item = &'n str>) -> Vec<MemberId> {
        names
            .filter_map(|name| self.by_coordinate.get(name).copied())
            .collect()
    }

    /// The type named in a field's, argument's or input field's signature.
    fn named_type_of(&self, member: &Member) -> Option<MemberId> {
        let api = &self.source.api;
        let parent = &self.members[member.parent?.index()];
        let ty = match member.kind {
            MemberKind::Field => api.type_field(&parent.name, &member.name).ok()?.ty.clone(),
            MemberKind::Argument => {
                let owner = &self.members[parent.parent?.index()];
                let field = api.type_field(&owner.name, &parent.name).ok()?;
                field.argument_by_name(&member.name)?.ty.as_ref().clone()
            }
            MemberKind::InputField => match api.types.get(parent.name.as_str())? {
                ExtendedType::InputObject(input) => {
                    input.fields.get(member.name.as_str())?.ty.as_ref().clone()
                }
                _ => return None,
            },
            MemberKind::DirectiveArgument => {
                let definition = api.directive_definitions.get(parent.name.as_str())?;
                definition
                    .argument_by_name(&member.name)?
                    .ty
                    .as_ref()
                    .clone()
            }
            _ => return None,
        };
        self.by_coordinate
            .get(ty.inner_named_type().as_str())
            .copied()
    }

    /// Owners, keys, federation facts and tags, read from the document as written.
    fn read_federation(&mut self, facts: &FactReader<'_>) {
        let document = &self.source.document;
        for index in 0..self.members.len() {
            let member = &self.members[index];
            match member.kind {
                kind if kind.is_type() => {
                    let Some(ty) = document.types.get(member.name.as_str()) else {
                        continue;
                    };
                    let type_facts = facts.type_facts(ty.directives());
                    let tags = facts.tags(ty.directives());
                    let member = &mut self.members[index];
                    member.subgraphs = type_facts.owners;
                    member.keys = type_facts.keys;
                    member.federation.interface_object_in = type_facts.interface_object_in;
                    member.tags = tags;
                }
                MemberKind::Field | MemberKind::InputField => {
                    let parent = &self.members[member.parent.expect("fields have a type").index()];
                    let on_object = parent.kind == MemberKind::Object;
                    let directives = match document.types.get(parent.name.as_str()) {
                        Some(ExtendedType::Object(t)) => {
                            t.fields.get(member.name.as_str()).map(|f| &f.directives)
                        }
                        Some(ExtendedType::Interface(t)) => {
                            t.fields.get(member.name.as_str()).map(|f| &f.directives)
                        }
                        Some(ExtendedType::InputObject(t)) => {
                            t.fields.get(member.name.as_str()).map(|f| &f.directives)
                        }
                        _ => None,
                    };
                    let parent_owners = parent.subgraphs.clone();
                    let Some(directives) = directives else {
                        self.members[index].subgraphs = parent_owners;
                        continue;
                    };
                    let (owners, federation) =
                        facts.field_facts(directives, &parent_owners, on_object);
                    let tags = facts.tags(directives);
                    let member = &mut self.members[index];
                    member.subgraphs = owners;
                    member.federation = federation;
                    member.tags = tags;
                }
                MemberKind::Argument => {
                    let field =
                        &self.members[member.parent.expect("arguments have a field").index()];
                    let ty = &self.members[field.parent.expect("fields have a type").index()];
                    let owners = field.subgraphs.clone();
                    let tags = document
                        .type_field(&ty.name, &field.name)
                        .ok()
                        .and_then(|f| f.argument_by_name(&member.name))
                        .map(|argument| facts.tags(&argument.directives))
                        .unwrap_or_default();
                    let member = &mut self.members[index];
                    member.subgraphs = owners;
                    member.tags = tags;
                }
                MemberKind::EnumValue => {
                    let parent = &self.members[member.parent.expect("values have an enum").index()];
                    let parent_owners = parent.subgraphs.clone();
                    let value = match document.types.get(parent.name.as_str()) {
                        Some(ExtendedType::Enum(e)) => e.values.get(member.name.as_str()),
                        _ => None,
                    };
                    let (owners, tags) = match value {
                        Some(value) => (
                            facts.enum_value_owners(&value.directives, &parent_owners),
                            facts.tags(&value.directives),
                        ),
                        None => (parent_owners, Vec::new()),
                    };
                    let member = &mut self.members[index];
                    member.subgraphs = owners;
                    member.tags = tags;
                }
                // Directive definitions are the gateway's, not a subgraph's.
                _ => {}
            }
        }
    }

    /// The member a deprecation reason names in backticks: a coordinate, a sibling of the
    /// deprecated member, or a type.
    fn resolve_replacements(&mut self) {
        for index in 0..self.members.len() {
            let member = &self.members[index];
            let Some(reason) = member
                .deprecation
                .as_ref()
                .and_then(|d| d.reason.as_deref())
            else {
                continue;
            };
            let parent = member
                .parent
                .map(|p| self.members[p.index()].coordinate.as_str());
            let replacement = quoted_names(reason)
                .filter(|name| *name != member.name)
                .find_map(|name| {
                    let sibling = parent.map(|parent| match member.kind {
                        MemberKind::Argument | MemberKind::DirectiveArgument => {
                            format!("{parent}({name}:)")
                        }
                        _ => format!("{parent}.{name}"),
                    });
                    [sibling, Some(name.to_string())]
                        .into_iter()
                        .flatten()
                        .find_map(|candidate| self.by_coordinate.get(&candidate).copied())
                })
                .filter(|found| *found != member.id);
            if let Some(deprecation) = self.members[index].deprecation.as_mut() {
                deprecation.replacement = replacement;
            }
        }
    }

    fn subgraph_names(&self) -> Vec<String> {
        match &self.source.federation {
            Some(names) if !names.graphs.is_empty() => names
                .graphs
                .iter()
                .map(|(_, name, _)| name.clone())
                .collect(),
            _ => vec![PLAIN_SUBGRAPH.to_string()],
        }
    }

    fn subgraphs(&self, names: &[String]) -> Vec<Subgraph> {
        let url = |index: usize| {
            let graphs = &self.source.federation.as_ref()?.graphs;
            graphs.get(index)?.2.clone()
        };
        let mut subgraphs: Vec<Subgraph> = names
            .iter()
            .enumerate()
            .map(|(index, name)| Subgraph {
                id: SubgraphId(index as u16),
                name: name.clone(),
                url: url(index),
                members: Vec::new(),
                content_hash: 0,
            })
            .collect();
        for member in &self.members {
            for owner in &member.subgraphs {
                if let Some(subgraph) = subgraphs.get_mut(owner.index()) {
                    subgraph.members.push(member.id);
                }
            }
        }
        for subgraph in &mut subgraphs {
            subgraph.content_hash =
                ContentHasher::members(&self.members, subgraph.members.iter().copied());
        }
        subgraphs
    }
}

fn implements<'a>(
    interfaces: impl Iterator<Item = &'a apollo_compiler::schema::ComponentName>,
) -> String {
    let names: Vec<&str> = interfaces.map(|i| i.as_str()).collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" implements {}", names.join(" & "))
    }
}

fn input_value_signature(value: &InputValueDefinition) -> String {
    match &value.default_value {
        Some(default) => format!("{}: {} = {}", value.name, value.ty, default),
        None => format!("{}: {}", value.name, value.ty),
    }
}

fn arguments_signature(arguments: &[apollo_compiler::Node<InputValueDefinition>]) -> String {
    if arguments.is_empty() {
        return String::new();
    }
    let list: Vec<String> = arguments.iter().map(|a| input_value_signature(a)).collect();
    format!("({})", list.join(", "))
}

fn field_signature(field: &FieldDefinition) -> String {
    format!(
        "{}{}: {}",
        field.name,
        arguments_signature(&field.arguments),
        field.ty
    )
}

fn directive_signature(definition: &apollo_compiler::ast::DirectiveDefinition) -> String {
    let locations: Vec<&str> = definition.locations.iter().map(|l| l.name()).collect();
    format!(
        "directive @{}{}{} on {}",
        definition.name,
        arguments_signature(&definition.arguments),
        if definition.repeatable {
            " repeatable"
        } else {
            ""
        },
        locations.join(" | ")
    )
}

fn deprecation(directives: &apollo_compiler::ast::DirectiveList) -> Option<Deprecation> {
    let directive = directives.get("deprecated")?;
    let reason = directive
        .specified_argument_by_name("reason")
        .and_then(|value| value.as_str())
        .map(str::to_string);
    Some(Deprecation {
        reason,
        replacement: None,
    })
}

/// Names quoted in backticks, stripped of `@` and a trailing `()`.
fn quoted_names(text: &str) -> impl Iterator<Item = &str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|name| name.trim().trim_start_matches('@').trim_end_matches("()"))
        .filter(|name| !name.is_empty() && !name.contains(char::is_whitespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_names_are_found_in_order() {
        let names: Vec<&str> =
            quoted_names("`changedFiles` will be removed. Use `changedFilesIfAvailable` instead.")
                .collect();
        assert_eq!(names, ["changedFiles", "changedFilesIfAvailable"]);
        assert_eq!(quoted_names("no quotes").count(), 0);
    }
}
