//! Ranking: fuse the lexical and vector candidate lists into one list, one entry per member,
//! with scores in [0, 1], re-score the best few by how well the query's words match theirs
//! token by token, weigh them by how much their type is like the owner the question names and
//! what they return like what it asks for, and the mutations by how much they do what an
//! action's verb says, lift the fields the best members are reached through, then let
//! replacements outrank what they deprecate and put members the query names outright first.
//!
//! Both lists arrive already filtered to what the caller may see, from every shard; a member
//! lives in one shard, but the merge is by member all the same, so evidence from several
//! sources for one coordinate always adds up to one result.

use std::collections::{HashMap, HashSet};

use wayfinder_supergraph::{Catalog, Member, MemberId, MemberKind};

use crate::index::document::Document;
use crate::index::thin::ThinNames;
use crate::index::visibility::Visibility;
use crate::query::intent::Intent;
use crate::rank::params::{Fusion, Params, Stage};

/// One member's evidence: rank (0-based) and raw score in each list it appears in.
#[derive(Debug, Clone, Copy, Default)]
struct Evidence {
    lexical: Option<(usize, f32)>,
    vector: Option<(usize, f32)>,
}

/// What a member's evidence counts for before the query's words are read: its prior, more when
/// it narrows a read and the question asks for a list narrowed down, a root field's when it is
/// what a change returns and the question reads that, and less when the query is an action and
/// the member is not a mutation field (nor, when the action says how to make its change,
/// something a mutation takes).
fn weight<'c>(
    catalog: &'c Catalog,
    documents: &'c [Document],
    intent: Intent,
    params: &'c Params,
) -> impl Fn(MemberId) -> f32 + 'c {
    let priors = params.runs(Stage::Priors);
    let narrowing = intent.filter && params.runs(Stage::Narrowing);
    let outcome = intent.outcome && params.runs(Stage::Outcome);
    let action = intent.action && params.runs(Stage::Action);
    move |member| {
        let document = documents.get(member.index());
        let mut prior = document.filter(|_| priors).map_or(1.0, |d| d.prior);
        if narrowing && document.is_some_and(|d| d.filter) {
            prior *= params.narrowing;
        }
        // The read that follows a change starts from what the mutation returns, as any other
        // read starts from a root field: its fields take a root field's prior.
        let outcome = outcome && document.is_some_and(|d| d.outcome);
        if outcome {
            prior = 1.0;
        }
        let wanted = catalog.roots().is_mutation_field(catalog.member(member))
            || (intent.manner && document.is_some_and(|d| d.change))
            || outcome;
        if action && !wanted {
            prior * params.not_an_action
        } else {
            prior
        }
    }
}

/// Fused scores times each member's [`weight`], best first, ties broken by coordinate so the
/// order is deterministic.
pub fn fuse(
    catalog: &Catalog,
    documents: &[Document],
    lexical: &[(MemberId, f32)],
    vector: &[(MemberId, f32)],
    intent: Intent,
    params: &Params,
) -> Vec<(MemberId, f32)> {
    let weight = weight(catalog, documents, intent, params);
    // Each list holds a member once (a member's views are already merged into one score).
    let mut evidence: HashMap<MemberId, Evidence> = HashMap::new();
    for (rank, &(member, score)) in lexical.iter().enumerate() {
        evidence.entry(member).or_default().lexical = Some((rank, score));
    }
    for (rank, &(member, score)) in vector.iter().enumerate() {
        evidence.entry(member).or_default().vector = Some((rank, score));
    }
    let best_lexical = lexical.iter().map(|(_, s)| *s).fold(0f32, f32::max);
    let has_vectors = !vector.is_empty();
    let mut fused: Vec<(MemberId, f32)> = evidence
        .into_iter()
        .map(|(member, e)| {
            let score = match params.fusion {
                Fusion::Rrf { k } => {
                    let part = |hit: Option<(usize, f32)>| {
                        hit.map_or(0.0, |(r, _)| 1.0 / (k + 1.0 + r as f32))
                    };
                    let lists = if has_vectors { 2.0 } else { 1.0 };
                    (part(e.lexical) + part(e.vector)) * (k + 1.0) / lists
                }
                Fusion::Weighted { vector_weight } => {
                    let lexical = e.lexical.map_or(0.0, |(_, s)| {
                        if best_lexical > 0.0 {
                            s / best_lexical
                        } else {
                            0.0
                        }
                    });
                    if has_vectors {
                        let cosine = e.vector.map_or(0.0, |(_, s)| s.max(0.0));
                        vector_weight * cosine + (1.0 - vector_weight) * lexical
                    } else {
                        lexical
                    }
                }
            };
            (member, (score * weight(member)).clamp(0.0, 1.0))
        })
        .collect();
    sort(catalog, &mut fused);
    fused
}

/// Blends the token match of each of the best [`Params::token_depth`] members (`matched`, in [0, 1];
/// `None` where the member's shard has no token vectors) into its score, counted with the
/// member's [`weight`] as fused evidence is, and re-sorts. Every other score keeps the same
/// share, so scores stay in [0, 1] and the order below the re-scored members is unchanged.
pub fn add_token_evidence(
    catalog: &Catalog,
    documents: &[Document],
    ranked: &mut [(MemberId, f32)],
    intent: Intent,
    params: &Params,
    matched: impl Fn(MemberId) -> Option<f32>,
) {
    let weight = weight(catalog, documents, intent, params);
    for (position, (member, score)) in ranked.iter_mut().enumerate() {
        let tokens = if position < params.token_depth {
            matched(*member).map_or(0.0, |m| m.clamp(0.0, 1.0) * weight(*member))
        } else {
            0.0
        };
        let share = params.token_share;
        *score = ((1.0 - share) * *score + share * tokens).clamp(0.0, 1.0);
    }
    sort(catalog, ranked);
}

/// A question about a property names what has it (`a user's bio`, `the seats left on a coach
/// trip`), a list narrowed down names what it holds (`loans where ...`), and a question in the
/// first person is about the caller (all three [`crate::query::intent::Owner`]): each of the best
/// members whose type is the most like that owner gains [`Params::owner_share`] of the likeness
/// ([`add_likeness`]). `like_owner` is a type's similarity to the owner's words (`None` without
/// vectors). Which types a member has is [`owner_types`].
pub fn add_owner_evidence(
    catalog: &Catalog,
    ranked: &mut [(MemberId, f32)],
    listed: bool,
    params: &Params,
    like_owner: impl Fn(MemberId) -> Option<f32>,
) {
    let types = |member: &Member| owner_types(catalog, member, listed);
    let share = (params.owner_share, 0.0);
    add_likeness(catalog, ranked, params, share, types, like_owner);
}

/// A read names what it wants first ([`crate::query::intent::answer_phrase`]): `my saved
/// recipes` asks for recipes, which `User.savedRecipes` returns, not for what a recipe has
/// (`Recipe.ingredients`), however alike their words. Each of the best members that returns the
/// type most like that phrase gains [`Params::answer_share`] of the likeness ([`add_likeness`]); what
/// narrows such a list rises with it ([`answer_types`]).
pub fn add_answer_evidence(
    catalog: &Catalog,
    ranked: &mut [(MemberId, f32)],
    params: &Params,
    like_answer: impl Fn(MemberId) -> Option<f32>,
) {
    let types = |member: &Member| answer_types(catalog, member);
    let share = (params.answer_share, params.answer_least);
    add_likeness(catalog, ranked, params, share, types, like_answer);
}

/// An action names what it changes and what it does to it (`create a guest profile`); the
/// question's vector weighs the thing named far more than the verb, so a mutation that does
/// something else to that thing (`bookingProfileAttach`) passes the one that does what was
/// asked (`profileCreate`). Each mutation field among the best [`Params::likeness_depth`] gains
/// [`Params::verb_share`] of its similarity to the verb (`like_verb`, `None` without vectors), and
/// the ranking is re-sorted.
pub fn add_verb_evidence(
    catalog: &Catalog,
    ranked: &mut [(MemberId, f32)],
    params: &Params,
    like_verb: impl Fn(MemberId) -> Option<f32>,
) {
    let roots = catalog.roots();
    for (member, score) in ranked.iter_mut().take(params.likeness_depth) {
        if !roots.is_mutation_field(catalog.member(*member)) {
            continue;
        }
        if let Some(like) = like_verb(*member) {
            *score = (*score + params.verb_share * like).clamp(0.0, 1.0);
        }
    }
    sort(catalog, ranked);
}

/// Each of the best [`Params::likeness_depth`] members one of whose `types` is, within
/// [`Params::likeness_margin`], the most like a phrase of the question among those of the best gains
/// `share` of that likeness (`like`, a type's similarity to the phrase), provided the most like
/// is at least `least`. Only the likeliest types gain: the phrase names one thing, and every
/// type sharing some of its words would otherwise rise too.
fn add_likeness(
    catalog: &Catalog,
    ranked: &mut [(MemberId, f32)],
    params: &Params,
    (share, least): (f32, f32),
    types: impl Fn(&Member) -> Vec<MemberId>,
    like: impl Fn(MemberId) -> Option<f32>,
) {
    let mut likeness: HashMap<MemberId, Option<f32>> = HashMap::new();
    let best_of_types: Vec<Option<f32>> = ranked
        .iter()
        .take(params.likeness_depth)
        .map(|(member, _)| {
            types(catalog.member(*member))
                .into_iter()
                .filter_map(|ty| *likeness.entry(ty).or_insert_with(|| like(ty)))
                .reduce(f32::max)
        })
        .collect();
    let Some(best) = best_of_types.iter().flatten().copied().reduce(f32::max) else {
        return;
    };
    if best < least {
        return;
    }
    for ((_, score), like) in ranked.iter_mut().zip(best_of_types) {
        if let Some(like) = like.filter(|l| *l >= best - params.likeness_margin) {
            *score = (*score + share * like.max(0.0)).min(1.0);
        }
    }
    sort(catalog, ranked);
}

/// The types that can own a member: only object and interface types, since what a question
/// says something has is a thing with fields (`band` is more like the enum `AlbumGroup` than
/// `Artist`, and must not take `Artist`'s place). A field's is the type it belongs to, as an
/// argument's is its field's. An enum value's are the types with a field of its enum: the
/// values of `OrderStatus` are an order's, through `Order.status`. When the owner is what a
/// list holds, an argument belongs to what its field's list holds (`Repository.pullRequests(
/// headRefName:)` narrows pull requests, not the repository).
pub(crate) fn owner_types(catalog: &Catalog, member: &Member, listed: bool) -> Vec<MemberId> {
    let container = |id: MemberId| {
        catalog
            .container(id)
            .filter(|c| has_fields(c))
            .map(|c| c.id)
    };
    match member.kind {
        MemberKind::EnumValue => member
            .parent
            .map(|enumeration| catalog.member(enumeration))
            .into_iter()
            .flat_map(|enumeration| &enumeration.referenced_by)
            .filter(|user| catalog.member(**user).kind == MemberKind::Field)
            .filter_map(|user| container(*user))
            .collect(),
        MemberKind::Argument if listed => member
            .parent
            .and_then(|field| list_item(catalog, catalog.member(field)))
            .filter(|ty| has_fields(catalog.member(*ty)))
            .into_iter()
            .collect(),
        _ => container(member.id).into_iter().collect(),
    }
}

/// The types a member's answer returns, when they have fields: what a field returns or its
/// list holds; an argument's field's; and for an enum value or input field, that of each field
/// whose arguments take it, directly or through input objects (`RepositoryOrderField.STARGAZERS`
/// orders the repositories `User.repositories(orderBy:)` lists).
pub(crate) fn answer_types(catalog: &Catalog, member: &Member) -> Vec<MemberId> {
    let fields = match member.kind {
        MemberKind::Field => vec![member.id],
        MemberKind::Argument => member.parent.into_iter().collect(),
        MemberKind::EnumValue | MemberKind::InputField => fields_taking(catalog, member),
        _ => Vec::new(),
    };
    let mut types: Vec<MemberId> = fields
        .into_iter()
        .filter_map(|field| list_item(catalog, catalog.member(field)))
        .filter(|ty| has_fields(catalog.member(*ty)))
        .collect();
    types.sort_unstable();
    types.dedup();
    types
}

/// The fields with an argument that takes `member` (an enum value or input field): through its
/// enum or input object, and through the input objects that take those in turn.
fn fields_taking(catalog: &Catalog, member: &Member) -> Vec<MemberId> {
    let mut fields = Vec::new();
    let mut seen = HashSet::new();
    let mut to_visit: Vec<MemberId> = member.parent.into_iter().collect();
    while let Some(ty) = to_visit.pop() {
        if !seen.insert(ty) {
            continue;
        }
        for user in &catalog.member(ty).referenced_by {
            let user = catalog.member(*user);
            match user.kind {
                MemberKind::Argument => fields.extend(user.parent),
                MemberKind::InputField => to_visit.extend(user.parent),
                _ => {}
            }
        }
    }
    fields
}

/// What a question says something has, or asks for, is a thing with fields.
fn has_fields(ty: &Member) -> bool {
    matches!(ty.kind, MemberKind::Object | MemberKind::Interface)
}

/// What a field's list holds: the node type of a Relay connection (through `nodes`, or
/// `edges` and `node`), or else the field's own type.
fn list_item(catalog: &Catalog, field: &Member) -> Option<MemberId> {
    let ty = catalog.member(field.named_type?);
    let child_type = |parent: &Member, name: &str| catalog.child(parent, name)?.named_type;
    child_type(ty, "nodes")
        .or_else(|| child_type(catalog.member(child_type(ty, "edges")?), "node"))
        .or(Some(ty.id))
}

/// A field rises with what is found through it: each of the best [`Params::path_depth`] members adds
/// [`Params::path_share`] of its score to the field its first path to a root (within the caller's
/// contract) runs through just before it: the field that takes an argument, returns the type
/// a field belongs to, or returns the enum of a value. A field gains once, from its best such
/// member; one outside the list comes in with that gain alone. Root fields gain nothing: they
/// begin every path of their subgraph and already carry the full prior.
///
/// A question about the bytes of each language in a code base asks for `Repository.languages`,
/// though `LanguageEdge.size` matches its words best.
pub fn add_path_evidence(
    catalog: &Catalog,
    ranked: &mut Vec<(MemberId, f32)>,
    visibility: &Visibility,
    params: &Params,
) {
    let mut gains: HashMap<MemberId, f32> = HashMap::new();
    for &(member, score) in ranked.iter().take(params.path_depth) {
        if let Some(through) = through(catalog, visibility, member) {
            let gain = gains.entry(through).or_default();
            *gain = gain.max(params.path_share * score);
        }
    }
    if gains.is_empty() {
        return;
    }
    for (member, score) in ranked.iter_mut() {
        if let Some(gain) = gains.remove(member) {
            *score = (*score + gain).min(1.0);
        }
    }
    ranked.extend(gains);
    sort(catalog, ranked);
}

/// Members the query names outright, by coordinate (`Repository`, `Repository.owner`,
/// `Query.user(login:)`, `@deprecated`) or by a directive's name: an agent that writes an
/// identifier wants that member first. Only identifier-shaped words are looked up (an inner
/// capital, a `.`, `_`, `@` or `(`, or a capital not at the start of the query), so everyday
/// words never match a type by accident.
///
/// A named type followed by the names of its members (`RoomBooking checkInDate`, `Weekday
/// SATURDAY SUNDAY`) is a coordinate written with spaces: one such member is what the query
/// names and comes before the type; several are the type's description and come after it.
///
/// A member's bare name, in camel case or with underscores (`nameWithOwner`, `TOO_HEATED`), or
/// a field's with one of its arguments (`repository(owner:)`), names every visible member of
/// that name: the agent wrote an identifier, but not whose. They follow the members named
/// outright, in the order `ranked` gives them (the question's other words pick the parent), and
/// those `ranked` misses after them, shallowest first. Capitals alone (`SKU`, `PR`) are as
/// often an everyday abbreviation as an enum value's name, so they name nothing by themselves.
///
/// An identifier that names nothing as written, as a coordinate or a bare name, names the one
/// visible member whose coordinate it is in another case (`issueState`, `user.Login`).
pub fn named_members(
    catalog: &Catalog,
    query: &str,
    visibility: &Visibility,
    ranked: &[(MemberId, f32)],
) -> Vec<MemberId> {
    let visible = |coordinate: &str| {
        catalog
            .get(coordinate)
            .filter(|m| visibility.allows(m.id))
            .map(|m| m.id)
    };
    // Capitals alone (`OPEN`) name nothing this way either.
    let visible_ignoring_case = |word: &str| {
        if !word.contains(char::is_lowercase) {
            return None;
        }
        let mut visible = catalog
            .get_ignoring_case(word)
            .iter()
            .filter(|m| visibility.allows(**m));
        match (visible.next(), visible.next()) {
            (Some(only), None) => Some(*only),
            _ => None,
        }
    };
    let words: Vec<&str> = query
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '"' | '\'' | '`'))
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_end_matches(['?', '!', '.', ':']))
        .collect();
    let mut named = Vec::new();
    let mut by_bare_name = Vec::new();
    let mut position = 0;
    while position < words.len() {
        let word = words[position];
        position += 1;
        let mut rest = word.chars().skip(1);
        let capitalized = position > 1 && word.starts_with(char::is_uppercase);
        let identifier =
            capitalized || rest.any(char::is_uppercase) || word.contains(['.', '_', '@', '(']);
        if !identifier {
            continue;
        }
        let found = visible(word)
            .or_else(|| visible(&format!("@{word}")))
            .or_else(|| {
                let bare = bare_name(catalog, word);
                if bare.is_empty() {
                    return visible_ignoring_case(word);
                }
                by_bare_name.extend(bare.into_iter().filter(|m| visibility.allows(*m)));
                None
            });
        let Some(found) = found else {
            continue;
        };
        let mut members = Vec::new();
        let parent = catalog.member(found);
        if parent.kind.is_type() {
            while let Some(member) = words
                .get(position)
                .and_then(|next| visible(&format!("{}.{next}", parent.coordinate)))
            {
                members.push(member);
                position += 1;
            }
        }
        // One member is what the query names; several describe the type.
        let order = match members[..] {
            [member] => vec![member, found],
            _ => [found].into_iter().chain(members).collect(),
        };
        for member in order {
            if !named.contains(&member) {
                named.push(member);
            }
        }
    }
    if !by_bare_name.is_empty() {
        let rank: HashMap<MemberId, usize> = ranked
            .iter()
            .enumerate()
            .map(|(rank, (member, _))| (*member, rank))
            .collect();
        by_bare_name.sort_by_cached_key(|m| {
            let member = catalog.member(*m);
            let depth = catalog.depth(*m).unwrap_or(u32::MAX);
            (
                rank.get(m).copied().unwrap_or(usize::MAX),
                depth,
                &member.coordinate,
            )
        });
        by_bare_name.dedup();
        let outright: HashSet<MemberId> = named.iter().copied().collect();
        named.extend(by_bare_name.into_iter().filter(|m| !outright.contains(m)));
    }
    named
}

/// The members a word names by their bare name ([`named_members`]): `nameWithOwner`,
/// `TOO_HEATED`, `repository(owner:)`. Empty for any other word.
fn bare_name(catalog: &Catalog, word: &str) -> Vec<MemberId> {
    if let Some((field, argument)) = word.strip_suffix(":)").and_then(|w| w.split_once('(')) {
        return catalog
            .named(field)
            .iter()
            .filter_map(|id| catalog.child(catalog.member(*id), argument))
            .filter(|child| child.kind == MemberKind::Argument)
            .map(|argument| argument.id)
            .collect();
    }
    let letters = word.as_bytes();
    let camel = letters
        .windows(2)
        .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    let snake = letters
        .windows(3)
        .any(|w| w[0].is_ascii_alphanumeric() && w[1] == b'_' && w[2].is_ascii_alphanumeric());
    if camel || snake {
        catalog.named(word).to_vec()
    } else {
        Vec::new()
    }
}

/// Puts the named members first, at score 1, in the order [`named_members`] gives them.
pub fn put_named_first(ranked: &mut Vec<(MemberId, f32)>, named: &[MemberId]) {
    if named.is_empty() {
        return;
    }
    // A bare name can name hundreds of members (`clientMutationId`: 494 on github).
    let set: HashSet<MemberId> = named.iter().copied().collect();
    ranked.retain(|(m, _)| !set.contains(m));
    let mut front: Vec<(MemberId, f32)> = named.iter().map(|m| (*m, 1.0)).collect();
    front.append(ranked);
    *ranked = front;
}

/// A thin member ([`thin_names`](crate::index::thin::thin_names)) is found through the words its name shares with its parent's:
/// `SaleType.PERCENTAGE` matches a question about stock left to sell through `sale`. Unless
/// the question uses its own name (`Precision.YEAR` for a question that says `year`), it keeps
/// [`Params::unnamed_thin`] of its score. `asked` holds the question's words and `thin_names`
/// each thin member's name words, both as the lexical index reads them (stemmed).
pub fn demote_unnamed_thin(
    catalog: &Catalog,
    ranked: &mut [(MemberId, f32)],
    asked: &[String],
    thin_names: &ThinNames,
    params: &Params,
) {
    let mut changed = false;
    for (member, score) in ranked.iter_mut() {
        let Some(name) = thin_names.get(member) else {
            continue;
        };
        if !name.iter().any(|word| asked.contains(word)) {
            *score *= params.unnamed_thin;
            changed = true;
        }
    }
    if changed {
        sort(catalog, ranked);
    }
}

/// Deprecated members rank below their replacement (named in the deprecation reason and
/// visible): a replacement the search did not find is brought in at the deprecated member's
/// score. Deprecated members are never dropped. Members only deprecated members reach are
/// deprecated alike ([`Document::deprecated_by_reach`]), below their own replacements.
pub fn demote_deprecated(
    catalog: &Catalog,
    documents: &[Document],
    ranked: &mut Vec<(MemberId, f32)>,
    visibility: &Visibility,
    params: &Params,
) {
    let mut position: HashMap<MemberId, usize> = ranked
        .iter()
        .enumerate()
        .map(|(i, (m, _))| (*m, i))
        .collect();
    for i in 0..ranked.len() {
        let (member, score) = ranked[i];
        let Some(replacement) = replacement(catalog, documents, visibility, member) else {
            continue;
        };
        let Some(replacement) = replacement else {
            ranked[i].1 = score * params.deprecated_factor;
            continue;
        };
        let replacement_score = match position.get(&replacement) {
            Some(&at) => {
                let lifted = ranked[at].1.max(score);
                ranked[at].1 = lifted;
                lifted
            }
            None => {
                position.insert(replacement, ranked.len());
                ranked.push((replacement, score));
                score
            }
        };
        ranked[i].1 = score.min(replacement_score) * params.deprecated_factor;
    }
    sort(catalog, ranked);
}

/// The field `member`'s first visible path from a root runs through just before it (never
/// the root field itself): the field that takes an argument, returns the type a field belongs
/// to, or returns the enum of a value.
pub(crate) fn through(
    catalog: &Catalog,
    visibility: &Visibility,
    member: MemberId,
) -> Option<MemberId> {
    let paths = visibility.paths_to_root(catalog, member);
    let &[_root, .., through, _member] = paths.first().map(|path| &path[..])? else {
        return None;
    };
    (catalog.member(through).kind == MemberKind::Field).then_some(through)
}

/// `None` when `member` is live; for a member deprecated itself or by reach, its visible live
/// replacement, if it has one.
pub(crate) fn replacement(
    catalog: &Catalog,
    documents: &[Document],
    visibility: &Visibility,
    member: MemberId,
) -> Option<Option<MemberId>> {
    let by_reach = documents
        .get(member.index())
        .and_then(|d| d.deprecated_by_reach);
    let replacement = match (&catalog.member(member).deprecation, by_reach) {
        (Some(own), _) => own.replacement,
        (None, Some(replacement)) => replacement,
        (None, None) => return None,
    };
    Some(replacement.filter(|r| *r != member && visibility.allows(*r)))
}

/// Best score first, ties by coordinate, so every order is deterministic.
pub(crate) fn sort(catalog: &Catalog, ranked: &mut [(MemberId, f32)]) {
    ranked.sort_by(|(a, sa), (b, sb)| {
        sb.total_cmp(sa).then_with(|| {
            catalog
                .member(*a)
                .coordinate
                .cmp(&catalog.member(*b).coordinate)
        })
    });
}

#[cfg(test)]
mod tests {
    use wayfinder_supergraph::CatalogOptions;

    use super::*;
    use crate::index::thin::thin_names;

    fn p() -> Params {
        Params::default()
    }

    const SCHEMA: &str = r#"
        type Query { repository(name: String!): Repository }
        type Repository {
          name: String!
          languages(first: Int): LanguageConnection
        }
        type LanguageConnection { totalSize: Int! }
    "#;

    fn catalog_of(sdl: &str) -> Catalog {
        Catalog::from_sdl(sdl, "test.graphql", CatalogOptions::default()).unwrap()
    }

    /// The member at `coordinate`, which the test's schema declares.
    fn id(catalog: &Catalog, coordinate: &str) -> MemberId {
        catalog.get(coordinate).map(|m| m.id).expect(coordinate)
    }

    fn ranked(catalog: &Catalog, scored: &[(&str, f32)]) -> Vec<(MemberId, f32)> {
        scored.iter().map(|(c, s)| (id(catalog, c), *s)).collect()
    }

    /// The coordinates of the members `query` names ([`named_members`]).
    fn named<'c>(
        catalog: &'c Catalog,
        query: &str,
        visibility: &Visibility,
        ranked: &[(MemberId, f32)],
    ) -> Vec<&'c str> {
        named_members(catalog, query, visibility, ranked)
            .iter()
            .map(|m| catalog.member(*m).coordinate.as_str())
            .collect()
    }

    /// What a tenant whose contract excludes the `internal` tag may see.
    fn without_internal(catalog: &Catalog) -> Visibility {
        let internal = wayfinder_supergraph::ContractFilter {
            exclude_tags: ["internal".to_string()].into(),
            ..Default::default()
        };
        Visibility::of(Some(std::sync::Arc::new(catalog.contract(&internal))))
    }

    fn coordinates<'c>(catalog: &'c Catalog, ranked: &[(MemberId, f32)]) -> Vec<&'c str> {
        ranked
            .iter()
            .map(|(m, _)| catalog.member(*m).coordinate.as_str())
            .collect()
    }

    #[test]
    fn a_bare_name_names_every_member_of_that_name_in_ranked_order() {
        let catalog = catalog_of(
            r#"
            type Query { issue(id: ID!): Issue, repository(ownerLogin: String!): Repository }
            type Issue { createdAt: String, state: IssueState }
            type Repository { createdAt: String, stargazerCount: Int }
            type Pin { createdAt: String @tag(name: "internal") }
            directive @tag(name: String!) repeatable on FIELD_DEFINITION
            enum IssueState { OPEN, NOT_PLANNED, SKU }
            "#,
        );
        let all = Visibility::all();
        let list = ranked(
            &catalog,
            &[
                ("Repository.stargazerCount", 0.6),
                ("Repository.createdAt", 0.5),
                ("Issue.createdAt", 0.4),
            ],
        );
        let names = |query: &str| named(&catalog, query, &all, &list);
        // The ranking orders those it found; one it missed comes after them.
        assert_eq!(
            names("when was it createdAt"),
            ["Repository.createdAt", "Issue.createdAt", "Pin.createdAt"]
        );
        // Named outright first, then by bare name.
        assert_eq!(
            names("Issue.state and stargazerCount"),
            ["Issue.state", "Repository.stargazerCount"]
        );
        assert_eq!(names("NOT_PLANNED"), ["IssueState.NOT_PLANNED"]);
        assert_eq!(
            names("what does repository(ownerLogin:) take"),
            ["Query.repository(ownerLogin:)"]
        );
        // Capitals alone, lower case and unknown names name nothing.
        for query in [
            "find by SKU",
            "createdat",
            "modifiedAt",
            "issue(id:)x",
            "state(id:)",
        ] {
            assert!(names(query).is_empty(), "{query}");
        }
        // Nor does a member the caller may not see.
        let seen = named(&catalog, "createdAt", &without_internal(&catalog), &list);
        assert_eq!(seen.len(), 2);
        assert!(seen.iter().all(|c| *c != "Pin.createdAt"));
    }

    #[test]
    fn a_coordinate_in_another_case_names_its_member() {
        let catalog = catalog_of(
            r#"
            type Query { viewer: User, pageInfo: PageInfo, note: InternalNote }
            type User { login: String, state: IssueState }
            type PageInfo { hasNextPage: Boolean }
            type InternalNote @tag(name: "internal") { text: String }
            directive @tag(name: String!) repeatable on OBJECT | FIELD_DEFINITION
            enum IssueState { OPEN }
            "#,
        );
        let all = Visibility::all();
        let none: &[&str] = &[];
        for (query, members) in [
            ("issueState values", &["IssueState"][..]),
            ("user.Login", &["User.login"]),
            ("pageinfo.hasnextpage", &["PageInfo.hasNextPage"]),
            ("internalNote", &["InternalNote"]),
            // Folded, a type is followed by its member's name as when written as declared.
            ("issueState OPEN", &["IssueState.OPEN", "IssueState"]),
            // A member's own name, as written, comes before a type of that name in another case.
            ("pageInfo", &["Query.pageInfo"]),
            // Capitals alone and everyday words name nothing.
            ("ISSUESTATE", none),
            ("pageinfo", none),
        ] {
            assert_eq!(named(&catalog, query, &all, &[]), members, "{query}");
        }
        let tenant = without_internal(&catalog);
        assert!(named(&catalog, "internalNote", &tenant, &[]).is_empty());
    }

    #[test]
    fn a_field_rises_with_what_is_found_through_it() {
        let catalog = catalog_of(SCHEMA);
        let mut list = ranked(
            &catalog,
            &[
                ("LanguageConnection.totalSize", 0.5),
                ("Repository.name", 0.48),
                ("Repository.languages", 0.45),
                ("Query.repository", 0.3),
            ],
        );
        add_path_evidence(&catalog, &mut list, &Visibility::all(), &p());
        assert_eq!(
            coordinates(&catalog, &list),
            [
                "LanguageConnection.totalSize",
                "Repository.languages",
                "Repository.name",
                "Query.repository"
            ]
        );
        assert!((list[1].1 - (0.45 + p().path_share * 0.5)).abs() < 1e-6);
        // The root field every path starts from gains nothing from `Repository.name`.
        assert_eq!(list[3].1, 0.3);
    }

    #[test]
    fn what_only_deprecated_members_reach_yields_to_its_replacement() {
        let catalog = catalog_of(
            r#"
            type Query {
              variants(
                filter: VariantFilter @deprecated(reason: "Use `where` instead.")
                where: VariantWhere
              ): [String]
            }
            input VariantFilter { sku: String }
            input VariantWhere { sku: String }
            "#,
        );
        let documents = crate::index::document::documents(&catalog, &p().priors);
        let mut list = ranked(
            &catalog,
            &[("VariantFilter.sku", 0.6), ("VariantWhere.sku", 0.5)],
        );
        demote_deprecated(&catalog, &documents, &mut list, &Visibility::all(), &p());
        assert_eq!(
            coordinates(&catalog, &list),
            ["VariantWhere.sku", "VariantFilter.sku"]
        );
        assert!((list[1].1 - 0.6 * p().deprecated_factor).abs() < 1e-6);
    }

    #[test]
    fn a_field_the_search_missed_comes_in_with_its_gain() {
        let catalog = catalog_of(SCHEMA);
        let mut list = ranked(&catalog, &[("Repository.languages(first:)", 0.4)]);
        add_path_evidence(&catalog, &mut list, &Visibility::all(), &p());
        assert_eq!(
            coordinates(&catalog, &list),
            ["Repository.languages(first:)", "Repository.languages"]
        );
        assert!((list[1].1 - p().path_share * 0.4).abs() < 1e-6);
    }

    #[test]
    fn values_belong_to_the_types_with_their_enum_and_list_arguments_to_what_is_listed() {
        let catalog = catalog_of(
            r#"
            type Query { repository: Repository }
            type Repository { pullRequests(state: PullRequestState): PullRequestConnection }
            type PullRequestConnection { nodes: [PullRequest] pageInfo: PageInfo! }
            type PageInfo { hasNextPage: Boolean! }
            type PullRequest { state: PullRequestState title: String }
            enum PullRequestState { OPEN MERGED }
            "#,
        );
        let scored = [
            ("Repository.pullRequests(state:)", 0.5),
            ("PullRequestState.MERGED", 0.49),
            ("PullRequest.title", 0.3),
        ];
        let pull_request = id(&catalog, "PullRequest");
        let like = |ty: MemberId| Some(if ty == pull_request { 0.6 } else { 0.2 });
        // "merged pull requests on a repository" names the repository's pull requests.
        let mut owned = ranked(&catalog, &scored);
        add_owner_evidence(&catalog, &mut owned, false, &p(), like);
        assert_eq!(
            coordinates(&catalog, &owned),
            [
                "PullRequestState.MERGED",
                "Repository.pullRequests(state:)",
                "PullRequest.title"
            ]
        );
        assert_eq!(owned[1].1, 0.5);
        // "pull requests that were merged": the argument narrows the pull requests listed.
        let mut listed = ranked(&catalog, &scored);
        add_owner_evidence(&catalog, &mut listed, true, &p(), like);
        assert_eq!(
            coordinates(&catalog, &listed)[..2],
            ["Repository.pullRequests(state:)", "PullRequestState.MERGED"]
        );
        assert!((listed[0].1 - (0.5 + p().owner_share * 0.6)).abs() < 1e-6);
    }

    #[test]
    fn only_a_type_with_fields_can_own_what_the_question_asks_for() {
        let catalog = catalog_of(
            r#"
            type Query { artist(id: ID!): Artist }
            type Artist { topTracks: [String!]! albums(group: AlbumGroup): [String!]! }
            enum AlbumGroup { SINGLE ALBUM }
            "#,
        );
        let mut list = ranked(
            &catalog,
            &[
                ("AlbumGroup.SINGLE", 0.5),
                ("Artist.topTracks", 0.48),
                ("Artist.albums(group:)", 0.4),
            ],
        );
        let like = |c: &str| catalog.get(c).map(|m| m.id).expect(c);
        let (artist, album_group) = (like("Artist"), like("AlbumGroup"));
        add_owner_evidence(&catalog, &mut list, false, &p(), |ty| {
            (ty == artist)
                .then_some(0.5)
                .or((ty == album_group).then_some(0.7))
        });
        assert_eq!(
            coordinates(&catalog, &list),
            [
                "Artist.topTracks",
                "AlbumGroup.SINGLE",
                "Artist.albums(group:)"
            ]
        );
        assert!((list[0].1 - (0.48 + p().owner_share * 0.5)).abs() < 1e-6);
        assert_eq!(list[1].1, 0.5);
        // An argument belongs to its field's type.
        assert!((list[2].1 - (0.4 + p().owner_share * 0.5)).abs() < 1e-6);
    }

    #[test]
    fn what_returns_the_type_a_read_asks_for_rises_with_what_narrows_it() {
        let catalog = catalog_of(
            r#"
            type Query { me: User artist(id: ID!): Artist }
            type User {
              topArtists(order: ArtistOrder): ArtistConnection
              name: String
            }
            type ArtistConnection { nodes: [Artist] }
            type Artist { genres: [String] popularity: Int }
            input ArtistOrder { field: ArtistOrderField }
            enum ArtistOrderField { POPULARITY NAME }
            "#,
        );
        let scored = [
            ("Artist.genres", 0.49),
            ("Artist.popularity", 0.488),
            ("User.topArtists", 0.485),
            ("ArtistOrderField.POPULARITY", 0.48),
            ("User.topArtists(order:)", 0.479),
            ("Query.me", 0.45),
        ];
        let artist = id(&catalog, "Artist");
        // Words no type is much like name a property, not what is returned: nothing moves.
        let mut list = ranked(&catalog, &scored);
        add_answer_evidence(&catalog, &mut list, &p(), |ty| {
            Some(if ty == artist {
                p().answer_least - 0.01
            } else {
                0.1
            })
        });
        assert_eq!(list, ranked(&catalog, &scored));
        let mut list = ranked(&catalog, &scored);
        // A phrase most like `Artist`, and `User` is too far below it to count.
        add_answer_evidence(&catalog, &mut list, &p(), |ty| {
            Some(if ty == artist { 0.6 } else { 0.3 })
        });
        assert_eq!(
            coordinates(&catalog, &list),
            [
                "User.topArtists",
                "ArtistOrderField.POPULARITY",
                "User.topArtists(order:)",
                "Artist.genres",
                "Artist.popularity",
                "Query.me",
            ]
        );
        // The list's field through its connection, the value through the argument's input.
        assert!((list[0].1 - (0.485 + p().answer_share * 0.6)).abs() < 1e-6);
        assert!((list[1].1 - (0.48 + p().answer_share * 0.6)).abs() < 1e-6);
        assert_eq!(list[3].1, 0.49);
        assert_eq!(list[5].1, 0.45);
    }

    #[test]
    fn an_actions_verb_moves_only_mutation_fields() {
        let catalog = catalog_of(
            r#"
            type Query { voucher(code: String!): Voucher }
            type Mutation { orderDiscountAdd: Voucher voucherCreate: Voucher }
            type Voucher { code: String }
            "#,
        );
        let scored = [
            ("Mutation.orderDiscountAdd", 0.5),
            ("Voucher.code", 0.45),
            ("Mutation.voucherCreate", 0.44),
        ];
        let create = id(&catalog, "Mutation.voucherCreate");
        let mut list = ranked(&catalog, &scored);
        // Asked to create one: `create` is like the mutation that creates, not the one
        // that adds; `Voucher.code` is no mutation, however like the verb its words are.
        add_verb_evidence(&catalog, &mut list, &p(), |m| {
            Some(if m == create {
                0.4
            } else if catalog.member(m).name == "code" {
                0.9
            } else {
                0.0
            })
        });
        assert_eq!(
            coordinates(&catalog, &list),
            [
                "Mutation.orderDiscountAdd",
                "Mutation.voucherCreate",
                "Voucher.code"
            ]
        );
        assert!((list[1].1 - (0.44 + p().verb_share * 0.4)).abs() < 1e-6);
        assert_eq!(list[2].1, 0.45);
    }

    #[test]
    fn a_thin_member_the_question_does_not_name_yields() {
        let catalog = catalog_of(
            r#"
            type Query { sale: Sale variant: Variant }
            type Sale { type: SaleType }
            enum SaleType { PERCENTAGE FIXED }
            type Variant {
              "Quantity of the variant available for sale."
              quantityAvailable: Int
              precision: Precision
            }
            "How precise a date is."
            enum Precision { YEAR DAY }
            "#,
        );
        let words = |text: &str| -> Vec<String> {
            crate::index::document::split_identifier(text)
                .split_whitespace()
                .map(str::to_lowercase)
                .collect()
        };
        let thin_names = thin_names(&catalog, p().generic_argument_fields, words);
        // The values of an undescribed enum are thin, those of a described one are not; a
        // described field is not.
        let coordinate = |id: &MemberId| catalog.member(*id).coordinate.as_str();
        let mut thin: Vec<&str> = thin_names.keys().map(coordinate).collect();
        thin.sort();
        assert_eq!(
            thin,
            [
                "Query",
                "Query.sale",
                "Query.variant",
                "Sale",
                "Sale.type",
                "SaleType",
                "SaleType.FIXED",
                "SaleType.PERCENTAGE",
                "Variant",
                "Variant.precision"
            ]
        );
        let scored = [
            ("SaleType.PERCENTAGE", 0.5),
            ("Precision.DAY", 0.49),
            ("Variant.quantityAvailable", 0.48),
        ];

        let mut list = ranked(&catalog, &scored);
        let asked = words("how many seats are still free to book");
        demote_unnamed_thin(&catalog, &mut list, &asked, &thin_names, &p());
        assert_eq!(
            coordinates(&catalog, &list),
            [
                "Precision.DAY",
                "Variant.quantityAvailable",
                "SaleType.PERCENTAGE"
            ]
        );
        assert!((list[2].1 - 0.5 * p().unnamed_thin).abs() < 1e-6);

        // Named by the question, a thin member keeps its score.
        let mut list = ranked(&catalog, &scored);
        demote_unnamed_thin(
            &catalog,
            &mut list,
            &words("percentage off"),
            &thin_names,
            &p(),
        );
        assert_eq!(list[0], ranked(&catalog, &scored)[0]);
    }

    #[test]
    fn an_argument_repeated_on_many_fields_is_thin() {
        // Twenty described lists, each taking the same described paging argument and one of
        // its own.
        let lists: String = (0..p().generic_argument_fields)
            .map(|n| {
                format!(
                    "\"Things of kind {n}.\" things{n}(\
                       \"Returns the first n elements.\" first: Int, \
                       \"Only those tagged so.\" tag{n}: String): [Int]\n"
                )
            })
            .collect();
        let root = |fields: &str| catalog_of(&format!("\"The root.\" type Query {{ {fields} }}"));
        let words = |text: &str| vec![text.to_lowercase()];
        let catalog = root(&lists);
        let thin_names = thin_names(&catalog, p().generic_argument_fields, words);
        let thin = |coordinate: &str| thin_names.contains_key(&id(&catalog, coordinate));
        assert!(thin("Query.things0(first:)"));
        assert!(thin("Query.things19(first:)"));
        assert!(!thin("Query.things0(tag0:)"));
        assert!(!thin("Query.things0"));

        // One field fewer and the argument says as much as any other.
        let catalog = root(&lists.lines().skip(1).collect::<Vec<_>>().join("\n"));
        let first = id(&catalog, "Query.things1(first:)");
        let generic = p().generic_argument_fields;
        assert!(!crate::index::thin::thin_names(&catalog, generic, words).contains_key(&first));
    }
}
