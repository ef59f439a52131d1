//! Paths from the roots to every member, computed once per catalog (and once per contract, over
//! the members that contract may see).
//!
//! A path is a list of member ids that starts with a root field and ends with the member. Each
//! next step belongs to what the previous one returns or accepts: a field of the returned type
//! (or of a type that shares possible types with it: a union member, an implementer, an
//! implemented interface), an argument of the field, an input field of the accepted input type,
//! a value of the accepted enum, or, as the last step, the returned or accepted type itself.
//!
//! The search is a shortest-first walk over types, once from `Query`, then `Mutation`, then
//! `Subscription`; a member's paths are listed `Query` paths first and, within a root, shorter
//! paths first; among paths of one length, a field that returns the type itself beats one that
//! returns a union or interface it belongs to (`Query.repository` before `Query.node`). Each type
//! keeps up to `max_paths` paths that reach it, each through a different last step, which keeps
//! the paths of its members varied. Interfaces that no field returns are reached through their
//! implementers. Members' paths are the paths of their type (or field) plus themselves. A path
//! is never extended to a type one of whose members it already passed through, so no coordinate
//! appears twice in one path.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;

use crate::member::Roots;
use crate::member::{Member, MemberId, MemberKind};

/// Paths to the roots of every member of a catalog (or of a contract's view of it).
#[derive(Debug, Default, Clone)]
pub struct PathIndex {
    paths: Vec<Vec<Box<[MemberId]>>>,
}

impl PathIndex {
    pub fn paths(&self, id: MemberId) -> &[Box<[MemberId]>] {
        self.paths
            .get(id.index())
            .map_or(&[], |paths| paths.as_slice())
    }

    /// Length of the shortest stored path.
    pub fn depth(&self, id: MemberId) -> Option<u32> {
        self.paths(id).iter().map(|path| path.len() as u32).min()
    }
}

pub(crate) fn compute(
    members: &[Member],
    roots: &Roots,
    visible: &dyn Fn(MemberId) -> bool,
    max_paths: usize,
) -> PathIndex {
    let mut walk = Walk {
        members,
        roots,
        visible,
        max_paths,
        reaching: vec![Vec::new(); members.len()],
        expanded: vec![false; members.len()],
        queue: BinaryHeap::new(),
        pushed: 0,
    };
    if max_paths > 0 {
        for root in roots.in_order().filter(|root| visible(*root)) {
            walk.expanded.fill(false);
            walk.expanded[root.index()] = true;
            walk.expand(root, &[]);
            walk.drain();
        }
        while walk.reach_interfaces_through_implementers() {}
    }
    walk.member_paths()
}

/// The breadth-first walk's state.
struct Walk<'a> {
    members: &'a [Member],
    roots: &'a Roots,
    visible: &'a dyn Fn(MemberId) -> bool,
    max_paths: usize,
    /// Per type: paths whose last step returns or accepts it.
    reaching: Vec<Vec<Rc<[MemberId]>>>,
    /// Per type: expanded in the current phase.
    expanded: Vec<bool>,
    queue: BinaryHeap<Reverse<Candidate>>,
    /// Candidates pushed so far: ties of cost go first in, first out.
    pushed: u64,
}

/// A path that reaches a type, waiting its turn: (cost, push order, type, path). The cost is
/// twice the path's length, plus one when the path reaches the type only as a possible type of
/// what its last step returns; the push order (unique) breaks ties first in, first out, so the
/// path itself is never compared.
type Candidate = (usize, u64, MemberId, Rc<[MemberId]>);

impl Walk<'_> {
    /// Takes candidates shortest first; a type expands with the first path it keeps.
    fn drain(&mut self) {
        while let Some(Reverse((_, _, ty, path))) = self.queue.pop() {
            if !self.wants(ty, path.last().copied()) {
                continue;
            }
            self.reaching[ty.index()].push(path.clone());
            if !self.expanded[ty.index()] {
                self.expanded[ty.index()] = true;
                self.expand(ty, &path);
            }
        }
    }

    fn push(&mut self, ty: MemberId, path: &Rc<[MemberId]>, indirect: bool) {
        // A path that already passed through one of the type's members would name that member
        // twice in its paths (`Query.me > Customer.orders > Order.customer > Customer.orders`).
        let revisits = |step: &MemberId| self.members[step.index()].parent == Some(ty);
        if !self.wants(ty, path.last().copied()) || path.iter().any(revisits) {
            return;
        }
        self.pushed += 1;
        let cost = path.len() * 2 + indirect as usize;
        self.queue
            .push(Reverse((cost, self.pushed, ty, path.clone())));
    }

    /// Steps from a type reached by `path` into its fields, their arguments, or its input fields.
    fn expand(&mut self, ty: MemberId, path: &[MemberId]) {
        let members = self.members;
        let member = &members[ty.index()];
        match member.kind {
            MemberKind::Object | MemberKind::Interface => {
                for &field in &member.children {
                    if !(self.visible)(field) {
                        continue;
                    }
                    self.reach(members[field.index()].named_type, path, &[field]);
                    for &argument in &members[field.index()].children {
                        if (self.visible)(argument) {
                            self.reach(
                                members[argument.index()].named_type,
                                path,
                                &[field, argument],
                            );
                        }
                    }
                }
            }
            MemberKind::InputObject => {
                for &field in &member.children {
                    if (self.visible)(field) {
                        self.reach(members[field.index()].named_type, path, &[field]);
                    }
                }
            }
            _ => {}
        }
    }

    /// `prefix + steps` reaches `ty` (and, for an abstract type, each of its possible types).
    fn reach(&mut self, ty: Option<MemberId>, prefix: &[MemberId], steps: &[MemberId]) {
        let Some(ty) = ty else { return };
        let last = steps.last().copied();
        let possible = &self.members[ty.index()].possible_types;
        if !self.wants(ty, last) && !possible.iter().any(|p| self.wants(*p, last)) {
            return;
        }
        let path: Rc<[MemberId]> = prefix.iter().chain(steps).copied().collect();
        self.push(ty, &path, false);
        for &possible in possible {
            self.push(possible, &path, true);
        }
    }

    fn wants(&self, ty: MemberId, last: Option<MemberId>) -> bool {
        let reaching = &self.reaching[ty.index()];
        (self.visible)(ty)
            && !self.roots.contains(ty)
            && reaching.len() < self.max_paths
            && !reaching.iter().any(|path| path.last().copied() == last)
    }

    /// Gives interfaces that no field returns the paths of their implementers, then walks on
    /// from them. Returns whether any interface gained a path.
    fn reach_interfaces_through_implementers(&mut self) -> bool {
        self.expanded.fill(false);
        let mut gained = false;
        let members = self.members;
        for member in members {
            let id = member.id;
            if member.kind != MemberKind::Interface
                || !self.reaching[id.index()].is_empty()
                || !self.wants(id, None)
            {
                continue;
            }
            let reaching = &self.reaching;
            let borrowed: Vec<Rc<[MemberId]>> = (0..self.max_paths)
                .flat_map(|rank| {
                    member
                        .possible_types
                        .iter()
                        .filter_map(move |p| reaching[p.index()].get(rank).cloned())
                })
                .collect();
            for path in borrowed {
                self.push(id, &path, true);
                gained = true;
            }
        }
        self.drain();
        gained
    }

    /// The place of the root a path starts from (by its first field) among the roots.
    fn root_rank(&self, first: MemberId) -> usize {
        let root = self.members[first.index()].parent;
        self.roots
            .in_order()
            .position(|r| Some(r) == root)
            .unwrap_or(usize::MAX)
    }

    /// Every member's paths: its type's (or field's) paths, plus itself, from `Query` first and
    /// shortest first within a root.
    fn member_paths(&self) -> PathIndex {
        let members = self.members;
        let mut paths: Vec<Vec<Box<[MemberId]>>> = vec![Vec::new(); members.len()];
        let extend = |base: &[MemberId], last: MemberId| -> Box<[MemberId]> {
            base.iter().copied().chain([last]).collect()
        };
        for member in members {
            let id = member.id;
            if !(self.visible)(id) {
                continue;
            }
            let own: Vec<Box<[MemberId]>> = match (member.kind, member.parent) {
                (kind, _) if kind.is_type() => self.reaching[id.index()]
                    .iter()
                    .map(|path| extend(path, id))
                    .collect(),
                (MemberKind::Field, Some(ty)) if self.roots.contains(ty) => vec![Box::new([id])],
                (MemberKind::Argument, Some(field)) => paths[field.index()]
                    .iter()
                    .map(|path| extend(path, id))
                    .collect(),
                (MemberKind::Field | MemberKind::InputField | MemberKind::EnumValue, Some(ty)) => {
                    self.reaching[ty.index()]
                        .iter()
                        .map(|path| extend(path, id))
                        .collect()
                }
                _ => Vec::new(),
            };
            // Interfaces reached through their implementers walk on after the first pass, and
            // may give a type a shorter path than one it already has.
            let mut own = own;
            own.sort_by_key(|path| (self.root_rank(path[0]), path.len()));
            paths[id.index()] = own;
        }
        PathIndex { paths }
    }
}
