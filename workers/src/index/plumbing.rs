//! Plumbing: the types that wrap what an agent asks about rather than being it (connections,
//! edges, mutation payloads and what only they use). Documents describe plumbing through what
//! it wraps, and priors count it for less.

use wayfinder_supergraph::{Catalog, Member, MemberKind};

/// The type a member belongs to (`None` for directives and their arguments).
pub(crate) fn owner_type<'c>(catalog: &'c Catalog, member: &Member) -> Option<&'c Member> {
    catalog.container(member.id).filter(|c| c.kind.is_type())
}

/// The types that wrap what an agent asks about rather than being it: Relay connections
/// (`edges`/`nodes` with `pageInfo`), edges (`node` with `cursor`), mutation payloads (objects
/// only mutation root fields return), and then every type only plumbing uses (the error
/// objects of payloads, their error-code enums).
pub(crate) struct Plumbing {
    plumbing: Vec<bool>,
    /// By member: whether it is a mutation payload, which a document's `outcome` reads too.
    payloads: Vec<bool>,
}

impl Plumbing {
    pub(crate) fn of(catalog: &Catalog) -> Self {
        let members = catalog.members();
        let payloads: Vec<bool> = members.iter().map(|m| payload(catalog, m)).collect();
        let mut plumbing: Vec<bool> = members
            .iter()
            .zip(&payloads)
            .map(|(m, payload)| *payload || wraps(catalog, m))
            .collect();
        // Each pass marks the types whose every user is plumbing; few passes settle it.
        loop {
            let mut changed = false;
            for ty in members.iter().filter(|m| m.kind.is_type()) {
                if plumbing[ty.id.index()]
                    || ty.builtin
                    || catalog.roots().contains(ty.id)
                    || ty.referenced_by.is_empty()
                {
                    continue;
                }
                let only_plumbing = ty.referenced_by.iter().all(|user| {
                    owner_type(catalog, catalog.member(*user))
                        .is_some_and(|owner| plumbing[owner.id.index()])
                });
                if only_plumbing {
                    plumbing[ty.id.index()] = true;
                    changed = true;
                }
            }
            if !changed {
                return Plumbing { plumbing, payloads };
            }
        }
    }

    pub(crate) fn contains(&self, ty: &Member) -> bool {
        self.plumbing.get(ty.id.index()).copied().unwrap_or(false)
    }

    /// An object only mutation root fields return.
    pub(crate) fn is_payload(&self, ty: &Member) -> bool {
        self.payloads.get(ty.id.index()).copied().unwrap_or(false)
    }
}

/// A connection or an edge, by its shape alone.
fn wraps(catalog: &Catalog, ty: &Member) -> bool {
    if ty.kind != MemberKind::Object {
        return false;
    }
    let has = |name: &str| catalog.child(ty, name).is_some();
    let connection = has("pageInfo") && (has("edges") || has("nodes"));
    let edge = has("node") && has("cursor");
    connection || edge
}

/// A mutation payload: an object only mutation root fields return.
fn payload(catalog: &Catalog, ty: &Member) -> bool {
    ty.kind == MemberKind::Object
        && !ty.referenced_by.is_empty()
        && ty
            .referenced_by
            .iter()
            .all(|r| catalog.roots().is_mutation_field(catalog.member(*r)))
}
