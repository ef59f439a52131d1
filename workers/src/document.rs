//! Documents: the text each catalog member is searched by, one document per coordinate.
//!
//! A document carries the words an agent's question points at, not only the member's name:
//! the identifier split into words, the member's description, its parent and what it returns
//! or takes, the values of an enum, the implementers of an interface, a field's arguments.
//! The same text feeds the embedding model and the lexical index; `title` (the name's words)
//! is indexed again on its own so that naming a member outranks mentioning it.

use std::fmt::Write as _;

use wayfinder_supergraph::{Catalog, Member, MemberId, MemberKind, SubgraphId};
use xxhash_rust::xxh3::{xxh3_128, xxh3_64};

/// The searchable text of one member.
#[derive(Debug, Clone)]
pub struct Document {
    pub member: MemberId,
    /// Stable across catalogs: the hash of the coordinate. Vector shards are keyed by it, so a
    /// shard built for an earlier catalog can serve a later one.
    pub key: u64,
    /// The member's own name (and its parent's), as words.
    pub title: String,
    /// The member's and its parent's identifiers as written (`timelineItems issue`), so a
    /// query that names a member matches it whole.
    pub names: String,
    /// Everything embedded and indexed.
    pub text: String,
    /// How likely the member is what an agent wants, before any query: 1 for root fields,
    /// less for the rest, least for the plumbing of GraphQL conventions (Relay connections
    /// and edges, mutation payloads).
    pub prior: f32,
    /// Hash of `text`: the vector cache's key, with the model.
    pub text_hash: u128,
    /// The shard the document lives in: its first owning subgraph. A member several
    /// subgraphs resolve is indexed once; `Member::subgraphs` keeps every owner.
    pub shard: SubgraphId,
}

/// Longest description excerpt taken from a related member (the member's own is kept whole).
const CONTEXT_CHARS: usize = 160;
/// Most related names listed (fields of a type, values of an enum, implementers).
const LIST_NAMES: usize = 12;

/// One document per member the catalog can show (built-ins of GraphQL itself included).
pub fn documents(catalog: &Catalog) -> Vec<Document> {
    catalog
        .members()
        .iter()
        .map(|member| {
            let (title, text) = member_text(catalog, member);
            let parent = member.parent.map(|p| catalog.member(p).name.as_str());
            Document {
                names: [Some(member.name.as_str()), parent]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" "),
                prior: prior(catalog, member),
                member: member.id,
                key: coordinate_key(&member.coordinate),
                text_hash: xxh3_128(text.as_bytes()),
                title,
                text,
                shard: member.subgraphs.first().copied().unwrap_or(SubgraphId(0)),
            }
        })
        .collect()
}

/// The vector-shard key of a coordinate.
pub fn coordinate_key(coordinate: &str) -> u64 {
    xxh3_64(coordinate.as_bytes())
}

/// Share of its score a member keeps that is not a root field: agents mostly look for an
/// operation to call first (measured on the three dev sets: 0.8 raised recall@10 on each).
const BELOW_ROOT_PRIOR: f32 = 0.8;
/// Further share a member of a plumbing type keeps.
const PLUMBING_PRIOR: f32 = 0.85;

fn prior(catalog: &Catalog, member: &Member) -> f32 {
    if member.kind == MemberKind::Field
        && member.parent.is_some_and(|p| catalog.roots().contains(p))
    {
        return 1.0;
    }
    // The type a member belongs to: a field's or input field's type, an argument's field's type.
    let mut owner = member;
    while !owner.kind.is_type() {
        match owner.parent {
            Some(parent) => owner = catalog.member(parent),
            None => return 1.0,
        }
    }
    if is_plumbing(catalog, owner) {
        BELOW_ROOT_PRIOR * PLUMBING_PRIOR
    } else {
        BELOW_ROOT_PRIOR
    }
}

/// A Relay connection (`edges`/`nodes` with `pageInfo`), an edge (`node` with `cursor`), or a
/// mutation payload (an object only mutation root fields return): types that wrap the thing
/// an agent asks about rather than being it.
fn is_plumbing(catalog: &Catalog, ty: &Member) -> bool {
    if ty.kind != MemberKind::Object {
        return false;
    }
    let has = |name: &str| ty.children.iter().any(|c| catalog.member(*c).name == name);
    let connection = has("pageInfo") && (has("edges") || has("nodes"));
    let edge = has("node") && has("cursor");
    let mutation = catalog.roots().mutation;
    let payload = mutation.is_some()
        && !ty.referenced_by.is_empty()
        && ty
            .referenced_by
            .iter()
            .all(|r| catalog.member(*r).parent == mutation);
    connection || edge || payload
}

fn member_text(catalog: &Catalog, member: &Member) -> (String, String) {
    let parent = member.parent.map(|id| catalog.member(id));
    let mut title = String::new();
    if let Some(parent) = parent {
        title.push_str(&split_identifier(&parent.name));
        title.push(' ');
    }
    title.push_str(&split_identifier(&member.name));

    let mut text = String::with_capacity(256);
    text.push_str(&title);
    text.push('.');
    if let Some(description) = &member.description {
        push_sentence(&mut text, description, usize::MAX);
    }
    // Related descriptions stand in for a missing one only: mean pooling dilutes a member's
    // own words with every sentence added, which measured worse on the dev sets.
    let context = member.description.is_none();
    let names = |ids: &[MemberId]| list_names(catalog, ids);
    match member.kind {
        MemberKind::Field => {
            push_type(&mut text, catalog, member, "returns", context);
            let args = names(&member.children);
            if !args.is_empty() {
                let _ = write!(text, " Arguments: {args}.");
            }
            push_parent(&mut text, catalog, parent, context);
        }
        MemberKind::Argument | MemberKind::InputField | MemberKind::DirectiveArgument => {
            push_type(&mut text, catalog, member, "takes", context);
            push_parent(&mut text, catalog, parent, context);
        }
        MemberKind::EnumValue => push_parent(&mut text, catalog, parent, context),
        MemberKind::Object | MemberKind::Interface | MemberKind::InputObject => {
            let fields = names(&member.children);
            if !fields.is_empty() {
                let _ = write!(text, " Fields: {fields}.");
            }
            let interfaces = names(&member.interfaces);
            if !interfaces.is_empty() {
                let _ = write!(text, " Implements {interfaces}.");
            }
            let implementers = names(&member.possible_types);
            if !implementers.is_empty() {
                let _ = write!(text, " Implemented by {implementers}.");
            }
        }
        MemberKind::Union => {
            let _ = write!(text, " One of {}.", names(&member.possible_types));
        }
        MemberKind::Enum => {
            let _ = write!(text, " Values: {}.", names(&member.children));
        }
        MemberKind::Directive => {
            let args = names(&member.children);
            if !args.is_empty() {
                let _ = write!(text, " Arguments: {args}.");
            }
        }
        MemberKind::Scalar => {}
    }
    (title, text)
}

/// Whether a type's description says something about the members that use it: not for
/// GraphQL's own scalars, the root types or plumbing (their descriptions are boilerplate).
fn describes_users(catalog: &Catalog, ty: &Member) -> bool {
    !ty.builtin && !catalog.roots().contains(ty.id) && !is_plumbing(catalog, ty)
}

/// `returns pull request: A repository pull request.` (the description only with `context`)
fn push_type(text: &mut String, catalog: &Catalog, member: &Member, verb: &str, context: bool) {
    let Some(ty) = member.named_type.map(|id| catalog.member(id)) else {
        return;
    };
    let _ = write!(text, " {verb} {}", split_identifier(&ty.name));
    match ty.kind {
        MemberKind::Enum => {
            let _ = write!(text, " ({})", list_names(catalog, &ty.children));
        }
        _ if context && describes_users(catalog, ty) => {
            if let Some(description) = &ty.description {
                text.push(':');
                push_sentence(text, description, CONTEXT_CHARS);
                return;
            }
        }
        _ => {}
    }
    text.push('.');
}

/// `In repository: A repository contains the content for a project.` (the description only
/// with `context`)
fn push_parent(text: &mut String, catalog: &Catalog, parent: Option<&Member>, context: bool) {
    let Some(parent) = parent else { return };
    let _ = write!(text, " In {}", split_identifier(&parent.name));
    let description = parent
        .description
        .as_ref()
        .filter(|_| context && describes_users(catalog, parent));
    match description {
        Some(description) => {
            text.push(':');
            push_sentence(text, description, CONTEXT_CHARS);
        }
        None => text.push('.'),
    }
}

fn list_names(catalog: &Catalog, ids: &[MemberId]) -> String {
    let mut out = String::new();
    for (i, id) in ids.iter().take(LIST_NAMES).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&split_identifier(&catalog.member(*id).name));
    }
    if ids.len() > LIST_NAMES {
        out.push_str(", ...");
    }
    out
}

/// Appends ` description` cut to at most `limit` characters at a sentence or word end, ending
/// with a full stop; whitespace runs (SDL descriptions wrap) become single spaces.
fn push_sentence(text: &mut String, description: &str, limit: usize) {
    let start = text.len();
    text.push(' ');
    for word in description.split_whitespace() {
        if text.len() - start + word.len() > limit {
            break;
        }
        if text.len() > start + 1 {
            text.push(' ');
        }
        text.push_str(word);
        if limit != usize::MAX && word.ends_with('.') && text.len() - start > limit / 2 {
            break;
        }
    }
    if text.len() == start + 1 {
        text.truncate(start);
    }
    if !text.ends_with(['.', '!', '?']) {
        text.push('.');
    }
}

/// `markPullRequestReadyForReview` -> `mark pull request ready for review`; `HTTPServer_v2` ->
/// `http server v 2`; `ORDER_BY_DATE` -> `order by date`.
pub fn split_identifier(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            continue;
        }
        if i > 0 && !out.is_empty() && !out.ends_with(' ') {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let boundary = (c.is_uppercase() && prev.is_lowercase())
                || (c.is_uppercase() && prev.is_uppercase() && next_is_lower)
                || (c.is_ascii_digit() != prev.is_ascii_digit() && prev.is_alphanumeric());
            if boundary {
                out.push(' ');
            }
        }
        out.extend(c.to_lowercase());
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(
            split_identifier("markPullRequestReadyForReview"),
            "mark pull request ready for review"
        );
        assert_eq!(split_identifier("HTTPServer_v2"), "http server v 2");
        assert_eq!(split_identifier("ORDER_BY_DATE"), "order by date");
        assert_eq!(split_identifier("__typename"), "typename");
        assert_eq!(split_identifier("id"), "id");
    }

    #[test]
    fn sentences_are_cut_at_a_word_and_end_with_a_stop() {
        let mut text = String::from("x.");
        push_sentence(&mut text, "A  list of\n users who starred it", 14);
        assert_eq!(text, "x. A list of.");
        let mut text = String::from("x.");
        push_sentence(&mut text, "   ", 100);
        assert_eq!(text, "x.");
    }
}
