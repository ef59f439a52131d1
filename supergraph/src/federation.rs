//! Federation facts read from the supergraph's own directives: which subgraphs resolve a member
//! (`@join__type`, `@join__field`, `@join__enumValue`), entity keys, `@external`, `@override`,
//! `@requires`/`@provides`, `@interfaceObject`, and `@tag`s. The API schema has none of these,
//! and extracted subgraphs drop `@tag`, so they are read from the document as written.
//!
//! For a plain schema every member belongs to its single subgraph.

use apollo_compiler::ast::Directive;

use crate::member::{EntityKey, FederationFacts, Override, SubgraphId};
use crate::source::FederationNames;

/// The directives on a definition: types carry `schema::DirectiveList`, fields, arguments and
/// values carry `ast::DirectiveList`.
pub(crate) trait Directives {
    fn all(&self) -> impl Iterator<Item = &Directive>;
}

impl Directives for apollo_compiler::ast::DirectiveList {
    fn all(&self) -> impl Iterator<Item = &Directive> {
        self.iter().map(|directive| &**directive)
    }
}

impl Directives for apollo_compiler::schema::DirectiveList {
    fn all(&self) -> impl Iterator<Item = &Directive> {
        self.iter().map(|directive| &***directive)
    }
}

/// Reads federation facts under the names one document uses.
pub(crate) struct FactReader<'a> {
    names: Option<&'a FederationNames>,
    tag: Option<String>,
}

/// Ownership and keys of a type.
pub(crate) struct TypeFacts {
    pub owners: Vec<SubgraphId>,
    pub keys: Vec<EntityKey>,
    pub interface_object_in: Vec<SubgraphId>,
}

impl<'a> FactReader<'a> {
    /// `plain_tag`: the `@tag` directive name for a plain schema that defines one.
    pub fn new(names: Option<&'a FederationNames>, plain_tag: Option<String>) -> Self {
        let tag = match names {
            Some(names) => names.tag.clone(),
            None => plain_tag,
        };
        Self { names, tag }
    }

    pub fn subgraph_count(&self) -> usize {
        self.names.map_or(1, |names| names.graphs.len().max(1))
    }

    fn all_subgraphs(&self) -> Vec<SubgraphId> {
        (0..self.subgraph_count())
            .map(|index| SubgraphId(index as u16))
            .collect()
    }

    fn graph(&self, directive: &Directive) -> Option<SubgraphId> {
        let names = self.names?;
        let value = directive.specified_argument_by_name("graph")?;
        let index = names.graph_index(value.as_enum()?.as_str())?;
        Some(SubgraphId(index as u16))
    }

    fn joined<'d>(
        &self,
        directives: &'d impl Directives,
        which: &str,
    ) -> impl Iterator<Item = &'d Directive> + 'd {
        let name = self.names.map(|names| names.join(which));
        directives
            .all()
            .filter(move |directive| name.as_deref() == Some(directive.name.as_str()))
    }

    pub fn type_facts(&self, directives: &impl Directives) -> TypeFacts {
        let mut facts = TypeFacts {
            owners: Vec::new(),
            keys: Vec::new(),
            interface_object_in: Vec::new(),
        };
        for directive in self.joined(directives, "type") {
            let Some(graph) = self.graph(directive) else {
                continue;
            };
            push_unique(&mut facts.owners, graph);
            if let Some(fields) = string_argument(directive, "key") {
                facts.keys.push(EntityKey {
                    subgraph: graph,
                    fields,
                    resolvable: bool_argument(directive, "resolvable").unwrap_or(true),
                });
            }
            if bool_argument(directive, "isInterfaceObject") == Some(true) {
                push_unique(&mut facts.interface_object_in, graph);
            }
        }
        if facts.owners.is_empty() {
            facts.owners = self.all_subgraphs();
        }
        facts
    }

    /// Owners and facts of a field or input field; without `@join__field` a field belongs to
    /// every subgraph of its type.
    pub fn field_facts(
        &self,
        directives: &impl Directives,
        parent_owners: &[SubgraphId],
        on_object: bool,
    ) -> (Vec<SubgraphId>, FederationFacts) {
        let mut facts = FederationFacts::default();
        let mut resolving = Vec::new();
        let mut mentioned = Vec::new();
        for directive in self.joined(directives, "field") {
            let Some(graph) = self.graph(directive) else {
                continue;
            };
            push_unique(&mut mentioned, graph);
            let external = bool_argument(directive, "external") == Some(true);
            let overridden = bool_argument(directive, "usedOverridden") == Some(true);
            if external {
                push_unique(&mut facts.external_in, graph);
            }
            if !external && !overridden {
                push_unique(&mut resolving, graph);
            }
            if let Some(from) = string_argument(directive, "override") {
                facts.overrides.push(Override { by: graph, from });
            }
            if let Some(fields) = string_argument(directive, "requires") {
                facts.requires.push((graph, fields));
            }
            if let Some(fields) = string_argument(directive, "provides") {
                facts.provides.push((graph, fields));
            }
        }
        let owners = match (resolving.is_empty(), mentioned.is_empty()) {
            (false, _) => resolving,
            (true, false) => mentioned,
            (true, true) => parent_owners.to_vec(),
        };
        facts.shareable = on_object && owners.len() > 1;
        (owners, facts)
    }

    pub fn enum_value_owners(
        &self,
        directives: &impl Directives,
        parent_owners: &[SubgraphId],
    ) -> Vec<SubgraphId> {
        let mut owners = Vec::new();
        for directive in self.joined(directives, "enumValue") {
            if let Some(graph) = self.graph(directive) {
                push_unique(&mut owners, graph);
            }
        }
        if owners.is_empty() {
            parent_owners.to_vec()
        } else {
            owners
        }
    }

    pub fn tags(&self, directives: &impl Directives) -> Vec<String> {
        let Some(tag) = &self.tag else {
            return Vec::new();
        };
        let mut tags = Vec::new();
        for directive in directives.all().filter(|d| d.name == tag.as_str()) {
            if let Some(name) = string_argument(directive, "name") {
                if !tags.contains(&name) {
                    tags.push(name);
                }
            }
        }
        tags
    }
}

fn push_unique(list: &mut Vec<SubgraphId>, id: SubgraphId) {
    if !list.contains(&id) {
        list.push(id);
    }
}

fn string_argument(directive: &Directive, name: &str) -> Option<String> {
    directive
        .specified_argument_by_name(name)?
        .as_str()
        .map(str::to_string)
}

fn bool_argument(directive: &Directive, name: &str) -> Option<bool> {
    directive.specified_argument_by_name(name)?.to_bool()
}
