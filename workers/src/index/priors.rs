//! Priors: what each member's evidence counts for before a question is read, by where it sits
//! in the schema. Computed once per catalog into each [`Document`](crate::index::document::Document)
//! from the [`Priors`] factors of the ranking's params; the ranking multiplies fused evidence by
//! them (its `priors` stage).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wayfinder_supergraph::{Catalog, Member, MemberId, MemberKind};

use crate::index::plumbing::{owner_type, Plumbing};

/// What a member's evidence counts for before the question is read, by where it sits in the
/// schema (`priors` stage). Root fields count fully; the factors multiply.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Priors {
    /// A member below the roots, or a root field that looks one thing up by its key.
    pub below_root: f32,
    /// A member of a plumbing type (paging, payload wrappers, metadata), what only
    /// subscriptions reach, a mutation's input wrapper or its ID argument.
    pub plumbing: f32,
    /// A type, against its fields.
    pub types: f32,
    /// A field that repeats what an interface it implements declares.
    pub repeated: f32,
}

impl Default for Priors {
    fn default() -> Self {
        Priors {
            below_root: 0.8,
            plumbing: 0.8,
            types: 0.85,
            repeated: 0.9,
        }
    }
}

/// What a member's evidence counts for before the question is read ([`Priors`]): agents
/// mostly look for an operation to call first, so root fields keep it whole; a lookup of one
/// object by its key is the first step of a path, as what lies below the roots is; plumbing,
/// what only subscriptions reach, a mutation's input wrapper and ID arguments, repeats of an
/// interface's fields and types count for less; the language's own directives count as
/// plumbing below the roots.
pub(crate) fn prior(
    catalog: &Catalog,
    plumbing: &Plumbing,
    member: &Member,
    priors: &Priors,
) -> f32 {
    if member.kind == MemberKind::Field {
        let roots = catalog.roots();
        // Subscription fields go on below, to what only subscriptions reach.
        match member.parent {
            Some(p) if roots.query == Some(p) && looks_up_one(catalog, plumbing, member) => {
                return priors.below_root
            }
            Some(p) if roots.query == Some(p) || roots.mutation == Some(p) => return 1.0,
            _ => {}
        }
    }
    let spec_directive = match member.kind {
        MemberKind::Directive => member.builtin,
        MemberKind::DirectiveArgument => member.parent.is_some_and(|d| catalog.member(d).builtin),
        _ => false,
    };
    if spec_directive {
        return priors.below_root * priors.plumbing;
    }
    let mut prior = match owner_type(catalog, member) {
        Some(owner) if plumbing.contains(owner) => priors.below_root * priors.plumbing,
        Some(_) => priors.below_root,
        None => 1.0,
    };
    if only_streamed(catalog, member) {
        prior *= priors.plumbing;
    }
    if repeats_an_interface(catalog, member) {
        prior *= priors.repeated;
    }
    if frames_a_mutation(catalog, member) {
        prior *= priors.plumbing;
    }
    if member.kind.is_type() {
        prior * priors.types
    } else {
        prior
    }
}

/// Whether only subscriptions reach the member: a subscription field, and an event's payload
/// (saleor's `ProductCreated` under `Subscription.event`), which is streamed as the field is
/// and which no query or mutation answers with. Paths are found from `Query` and `Mutation`
/// before `Subscription`, so the first one starts at a subscription field only when no other
/// root reaches the member.
fn only_streamed(catalog: &Catalog, member: &Member) -> bool {
    let roots = catalog.roots();
    catalog
        .paths_to_root(member.id)
        .first()
        .and_then(|path| path.first())
        .and_then(|field| catalog.member(*field).parent)
        .is_some_and(|root| roots.subscription == Some(root))
}

/// Whether the member is a mutation field's argument that says nothing of what the change
/// takes: the wrapper of its input (an input object nothing else takes, Relay's `input:
/// CreateIssueInput!`), whose fields say it instead, or an ID (`id: ID!`), which says which
/// object to change, as nearly every change's does. A question names the change or what its
/// input holds. (A lookup's ID is kept: "look up an album by its id" asks for it.)
fn frames_a_mutation(catalog: &Catalog, member: &Member) -> bool {
    let of_a_mutation = member.kind == MemberKind::Argument
        && member
            .parent
            .is_some_and(|field| catalog.roots().is_mutation_field(catalog.member(field)));
    let ty = member.named_type.map(|ty| catalog.member(ty));
    of_a_mutation
        && ty.is_some_and(|ty| {
            ty.name == "ID" || (ty.kind == MemberKind::InputObject && ty.referenced_by.len() == 1)
        })
}

/// Whether the member is a field of an object type (or an argument of one) that an interface
/// of the type declares, with no description or the interface's own.
fn repeats_an_interface(catalog: &Catalog, member: &Member) -> bool {
    let field = match member.kind {
        MemberKind::Argument => member.parent.map(|field| catalog.member(field)),
        _ => Some(member),
    };
    let Some(field) = field.filter(|field| field.kind == MemberKind::Field) else {
        return false;
    };
    owner_type(catalog, field).is_some_and(|ty| {
        ty.kind == MemberKind::Object
            && ty.interfaces.iter().any(|interface| {
                catalog
                    .child(catalog.member(*interface), &field.name)
                    .is_some_and(|declared| {
                        field.description.is_none() || field.description == declared.description
                    })
            })
    })
}

/// A field that takes a required argument and returns one object that is not plumbing
/// (`playlist(id: ID!): Playlist`): on the query root, the entry to that object's fields.
fn looks_up_one(catalog: &Catalog, plumbing: &Plumbing, field: &Member) -> bool {
    let returns = field.signature.rsplit(':').next().unwrap_or_default();
    let required = |id: &MemberId| catalog.member(*id).signature.ends_with('!');
    !returns.contains('[')
        && field.children.iter().any(required)
        && field
            .named_type
            .map(|ty| catalog.member(ty))
            .is_some_and(|ty| ty.kind == MemberKind::Object && !plumbing.contains(ty))
}
