//! Contracts: which members a tenant may see, decided by `@tag` include/exclude filters with
//! Apollo contract semantics, and the paths to the roots within that view.
//!
//! 1. Tags. A tag on an object or interface type applies to each of its fields. Excluded tags
//!    hide what carries them (exclude wins over include). With include tags, an object or
//!    interface field is visible only when it (or its type) carries one, and a union only when
//!    it carries one; other kinds are only ever hidden by exclusion.
//! 2. Consequences, to a fixed point: what has a hidden type is hidden; a field loses itself
//!    with a required argument, an input type with a required field; a type with no visible
//!    fields, values or members is hidden; children go with their parent; an interface's field
//!    or argument that a visible implementation hides is hidden in the interface too.
//! 3. Reachability: types no visible root (or directive) reaches are hidden, with their members.
//!
//! A contract with no tags sees the whole API schema.

use std::collections::{BTreeSet, VecDeque};

use crate::catalog::Catalog;
use crate::member::{Member, MemberId, MemberKind};
use crate::paths::PathIndex;

/// A tenant's `@tag` filter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ContractFilter {
    pub include_tags: BTreeSet<String>,
    pub exclude_tags: BTreeSet<String>,
}

impl ContractFilter {
    pub fn is_unfiltered(&self) -> bool {
        self.include_tags.is_empty() && self.exclude_tags.is_empty()
    }
}

/// The members one contract may see, and their paths within that view.
#[derive(Debug, Clone)]
pub struct Contract {
    visible: Vec<bool>,
    paths: PathIndex,
}

impl Contract {
    pub fn is_visible(&self, id: MemberId) -> bool {
        self.visible.get(id.index()).copied().unwrap_or(false)
    }

    pub fn visible_count(&self) -> usize {
        self.visible.iter().filter(|v| **v).count()
    }

    /// Paths made only of visible members.
    pub fn paths_to_root(&self, id: MemberId) -> &[Box<[MemberId]>] {
        self.paths.paths(id)
    }

    pub(crate) fn build(catalog: &Catalog, filter: &ContractFilter) -> Self {
        let visible = if filter.is_unfiltered() {
            vec![true; catalog.members().len()]
        } else {
            Visibility::new(catalog, filter).decide()
        };
        let paths = catalog.compute_paths(&|id| visible[id.index()]);
        Self { visible, paths }
    }
}

struct Visibility<'a> {
    catalog: &'a Catalog,
    visible: Vec<bool>,
}

impl<'a> Visibility<'a> {
    fn new(catalog: &'a Catalog, filter: &ContractFilter) -> Self {
        let members = catalog.members();
        let carries = |id: MemberId, tags: &BTreeSet<String>| {
            members[id.index()]
                .tags
                .iter()
                .any(|tag| tags.contains(tag))
        };
        // Object and interface tags apply to their fields.
        let carries_with_type = |id: MemberId, tags: &BTreeSet<String>| {
            let member = &members[id.index()];
            carries(id, tags)
                || (member.kind == MemberKind::Field
                    && member.parent.is_some_and(|ty| carries(ty, tags)))
        };
        let include = !filter.include_tags.is_empty();
        let visible = members
            .iter()
            .map(|member| {
                let id = member.id;
                if carries_with_type(id, &filter.exclude_tags) {
                    return false;
                }
                match member.kind {
                    MemberKind::Field if include => carries_with_type(id, &filter.include_tags),
                    MemberKind::Union if include => carries(id, &filter.include_tags),
                    _ => true,
                }
            })
            .collect();
        Self { catalog, visible }
    }

    fn decide(mut self) -> Vec<bool> {
        while self.propagate() {}
        self.hide_unreachable();
        self.visible
    }

    fn hidden(&self, id: Option<MemberId>) -> bool {
        id.is_some_and(|id| !self.visible[id.index()])
    }

    /// One pass of consequences; returns whether anything changed.
    fn propagate(&mut self) -> bool {
        let mut changed = false;
        for member in self.catalog.members() {
            let id = member.id;
            if !self.visible[id.index()] {
                continue;
            }
            let visible_children = || member.children.iter().any(|c| self.visible[c.index()]);
            let required_child_hidden = || {
                member.children.iter().any(|&child| {
                    let child = self.catalog.member(child);
                    !self.visible[child.id.index()] && is_required(&child.signature)
                })
            };
            let hide = self.hidden(member.parent)
                || self.hidden(member.named_type)
                || match member.kind {
                    MemberKind::Object | MemberKind::Interface => !visible_children(),
                    MemberKind::Enum => !visible_children(),
                    MemberKind::InputObject => !visible_children() || required_child_hidden(),
                    MemberKind::Union => !member
                        .possible_types
                        .iter()
                        .any(|p| self.visible[p.index()]),
                    MemberKind::Field => {
                        required_child_hidden() || self.hidden_in_an_implementation(member)
                    }
                    MemberKind::Argument => self.hidden_in_an_implementation(member),
                    MemberKind::Directive => required_child_hidden(),
                    _ => false,
                };
            if hide {
                self.visible[id.index()] = false;
                changed = true;
            }
        }
        changed
    }

    /// Whether an interface's field, or a field argument of one, is hidden in a visible object
    /// that implements the interface: an object keeps every field and argument of its
    /// interfaces, so the interface loses it too.
    fn hidden_in_an_implementation(&self, member: &Member) -> bool {
        let catalog = self.catalog;
        let (field, argument) = match member.kind {
            MemberKind::Field => (member, None),
            MemberKind::Argument => match member.parent {
                Some(field) => (catalog.member(field), Some(member.name.as_str())),
                None => return false,
            },
            _ => return false,
        };
        let Some(interface) = field.parent.map(|p| catalog.member(p)) else {
            return false;
        };
        if interface.kind != MemberKind::Interface {
            return false;
        }
        interface
            .possible_types
            .iter()
            .filter(|object| self.visible[object.index()])
            .filter_map(|&object| catalog.child(catalog.member(object), &field.name))
            .filter_map(|implementation| match argument {
                None => Some(implementation),
                Some(name) => catalog.child(implementation, name),
            })
            .any(|implementation| !self.visible[implementation.id.index()])
    }

    /// Hides types that no visible root or directive reaches, and their members.
    fn hide_unreachable(&mut self) {
        let catalog = self.catalog;
        let members = catalog.members();
        let mut reached = vec![false; members.len()];
        let mut queue: VecDeque<MemberId> = catalog
            .roots()
            .in_order()
            .chain(
                members
                    .iter()
                    .filter(|m| m.kind == MemberKind::Directive || m.builtin)
                    .map(|m| m.id),
            )
            .filter(|id| self.visible[id.index()])
            .collect();
        for id in &queue {
            reached[id.index()] = true;
        }
        let visible = &self.visible;
        while let Some(id) = queue.pop_front() {
            let member = catalog.member(id);
            let children = member.children.iter().flat_map(|&child| {
                let child = catalog.member(child);
                // A field's arguments lead to their types as well.
                std::iter::once(child.named_type)
                    .chain(
                        child
                            .children
                            .iter()
                            .map(|&arg| catalog.member(arg).named_type),
                    )
                    .flatten()
                    .filter(move |_| visible[child.id.index()])
            });
            let next: Vec<MemberId> = children
                .chain(member.possible_types.iter().copied())
                .chain(member.interfaces.iter().copied())
                .filter(|next| visible[next.index()])
                .collect();
            for next in next {
                if !reached[next.index()] {
                    reached[next.index()] = true;
                    queue.push_back(next);
                }
            }
        }
        for member in members {
            let container = catalog.container(member.id);
            if container.is_some_and(|c| !reached[c.id.index()]) {
                self.visible[member.id.index()] = false;
            }
        }
    }
}

/// A non-null argument or input field without a default must be given: hiding it hides its
/// owner. Read from the signature (`name: Type!` with no `= default`).
fn is_required(signature: &str) -> bool {
    !signature.contains(" = ") && signature.ends_with('!')
}

impl Catalog {
    /// The members a tenant with this `@tag` filter may see, and their paths within that view.
    pub fn contract(&self, filter: &ContractFilter) -> Contract {
        Contract::build(self, filter)
    }
}
