//! The members of an API schema as the catalog records them: one [`Member`] per schema
//! coordinate, with the facts a ranking or an agent needs. Members only describe; the
//! relations between them (parents, possible types, paths) are ids into the same catalog.

use serde::Serialize;

/// Index of a member in its catalog (its position in [`crate::Catalog::members`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct MemberId(pub u32);

impl MemberId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a subgraph in its catalog (its position in [`crate::Catalog::subgraphs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct SubgraphId(pub u16);

impl SubgraphId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a member is, in the terms of the GraphQL type system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberKind {
    Object,
    Interface,
    Union,
    Enum,
    InputObject,
    Scalar,
    Field,
    Argument,
    InputField,
    EnumValue,
    Directive,
    DirectiveArgument,
}

impl MemberKind {
    pub const ALL: [MemberKind; 12] = [
        MemberKind::Object,
        MemberKind::Interface,
        MemberKind::Union,
        MemberKind::Enum,
        MemberKind::InputObject,
        MemberKind::Scalar,
        MemberKind::Field,
        MemberKind::Argument,
        MemberKind::InputField,
        MemberKind::EnumValue,
        MemberKind::Directive,
        MemberKind::DirectiveArgument,
    ];

    /// A named type (as opposed to a field, argument, value or directive).
    pub fn is_type(self) -> bool {
        matches!(
            self,
            MemberKind::Object
                | MemberKind::Interface
                | MemberKind::Union
                | MemberKind::Enum
                | MemberKind::InputObject
                | MemberKind::Scalar
        )
    }

    /// Object, interface or union: a type a selection set can be written on.
    pub fn is_composite(self) -> bool {
        matches!(
            self,
            MemberKind::Object | MemberKind::Interface | MemberKind::Union
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MemberKind::Object => "object",
            MemberKind::Interface => "interface",
            MemberKind::Union => "union",
            MemberKind::Enum => "enum",
            MemberKind::InputObject => "input_object",
            MemberKind::Scalar => "scalar",
            MemberKind::Field => "field",
            MemberKind::Argument => "argument",
            MemberKind::InputField => "input_field",
            MemberKind::EnumValue => "enum_value",
            MemberKind::Directive => "directive",
            MemberKind::DirectiveArgument => "directive_argument",
        }
    }
}

/// `@deprecated` on a member, with the replacement its reason names when that resolves to a
/// member of the same catalog.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Deprecation {
    pub reason: Option<String>,
    pub replacement: Option<MemberId>,
}

/// A `@key` of an entity type in one subgraph.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct EntityKey {
    pub subgraph: SubgraphId,
    /// The key's field set, as written (`id`, `upc sku`, `id organization { id }`).
    pub fields: String,
    /// `false` for a key a subgraph only references (`resolvable: false`).
    pub resolvable: bool,
}

/// Federation facts a ranking or an agent needs beyond ownership and keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct FederationFacts {
    /// A field that more than one subgraph resolves.
    pub shareable: bool,
    /// Subgraphs that declare the field `@external` (they reference it, another resolves it).
    pub external_in: Vec<SubgraphId>,
    /// `@override(from:)`: the subgraph named by `from`, and the one that took the field over.
    pub overrides: Vec<Override>,
    /// Subgraphs that see this interface as an object type (`@interfaceObject`).
    pub interface_object_in: Vec<SubgraphId>,
    /// `@requires` field sets, per subgraph.
    pub requires: Vec<(SubgraphId, String)>,
    /// `@provides` field sets, per subgraph.
    pub provides: Vec<(SubgraphId, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Override {
    /// The subgraph that resolves the field now.
    pub by: SubgraphId,
    /// The subgraph name it was taken from (it may no longer be part of the supergraph).
    pub from: String,
}

/// One member of the API schema.
#[derive(Debug, Clone, Serialize)]
pub struct Member {
    pub id: MemberId,
    /// Schema coordinate: `Type`, `Type.field`, `Type.field(arg:)`, `Input.field`, `Enum.VALUE`,
    /// `@directive`, `@directive(arg:)`.
    pub coordinate: String,
    pub kind: MemberKind,
    pub name: String,
    /// The type of a field, the field of an argument, the enum of a value, the input type of an
    /// input field, the directive of a directive argument.
    pub parent: Option<MemberId>,
    pub description: Option<String>,
    /// How the member reads in SDL, without its description and directives:
    /// `repository(owner: String!, name: String!): Repository`, `type User implements Node`.
    pub signature: String,
    /// The named type a field returns or an argument/input field takes (`Post` for `[Post!]!`).
    pub named_type: Option<MemberId>,
    pub deprecation: Option<Deprecation>,
    /// The subgraphs that resolve this member (all the catalog's subgraphs for a plain schema).
    pub subgraphs: Vec<SubgraphId>,
    /// `@key`s of an entity type, per subgraph.
    pub keys: Vec<EntityKey>,
    pub federation: FederationFacts,
    /// `@tag` names, as read from the supergraph.
    pub tags: Vec<String>,
    /// A built-in scalar or directive of GraphQL itself (`String`, `@skip`...).
    pub builtin: bool,
    /// Fields, arguments, enum values, input fields: the members this one contains, in order.
    pub children: Vec<MemberId>,
    /// Interfaces a type implements.
    pub interfaces: Vec<MemberId>,
    /// For an interface, its implementing object types; for a union, its members.
    pub possible_types: Vec<MemberId>,
    /// Fields, arguments and input fields whose named type is this type.
    pub referenced_by: Vec<MemberId>,
    /// Content hash over everything above that describes the member itself (not its relations),
    /// so a change anywhere in the member shows as a new hash.
    pub content_hash: u64,
}

impl Member {
    pub fn is_deprecated(&self) -> bool {
        self.deprecation.is_some()
    }
}

/// A subgraph of the supergraph (the whole schema, named `default`, for a plain schema).
#[derive(Debug, Clone, Serialize)]
pub struct Subgraph {
    pub id: SubgraphId,
    pub name: String,
    pub url: Option<String>,
    /// Members this subgraph resolves.
    pub members: Vec<MemberId>,
    /// Hash over the coordinates and content hashes of `members`: equal hashes, nothing to
    /// re-index.
    pub content_hash: u64,
}

/// The root operation types of the API schema.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    pub query: Option<MemberId>,
    pub mutation: Option<MemberId>,
    pub subscription: Option<MemberId>,
}

impl Roots {
    /// Query first, then mutation, then subscription: the order paths prefer.
    pub fn in_order(&self) -> impl Iterator<Item = MemberId> + '_ {
        [self.query, self.mutation, self.subscription]
            .into_iter()
            .flatten()
    }

    pub fn contains(&self, id: MemberId) -> bool {
        self.in_order().any(|root| root == id)
    }

    /// Whether `member` is a field of the mutation root.
    pub fn is_mutation_field(&self, member: &Member) -> bool {
        member.parent.is_some() && member.parent == self.mutation
    }
}
