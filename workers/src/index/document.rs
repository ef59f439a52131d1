//! Documents: the text each catalog member is searched by, one document per coordinate.
//!
//! A document carries the words an agent's question points at, not only the member's name:
//! the identifier split into words, the member's description, its parent and what it returns
//! or takes, the values of an enum, the implementers of an interface, a field's arguments.
//! The text feeds the lexical index; `title` (the name's words) is indexed again on its own so
//! that naming a member outranks mentioning it. The model embeds several views of a member
//! (the text, its name with its own summary, its name alone, and the text summed with the
//! summaries of its parent and type), and a member's vector evidence is the mean similarity
//! of its views. A mutation field whose payload carries one object is read in an action
//! against that object's summary too ([`Document::carries`]): `createIssue` says "Creates a new
//! issue", and only `Issue` says an issue is where bugs are reported.

use std::fmt::Write as _;
use std::sync::Arc;

use wayfinder_supergraph::{Catalog, Member, MemberId, MemberKind, SubgraphId};
use xxhash_rust::xxh3::{xxh3_128, xxh3_64};

use crate::embed::math::unit_sum;
use crate::index::plumbing::{owner_type, Plumbing};
use crate::index::priors::{prior, Priors};

/// The searchable text of one member.
#[derive(Debug, Clone)]
pub struct Document {
    pub member: MemberId,
    /// The member's own name (and its parent's), as words.
    pub title: String,
    /// The member's and its parent's identifiers as written (`timelineItems issue`), so a
    /// query that names a member matches it whole.
    pub names: String,
    /// The texts embedded for the member, each its own vector under its own shard key; the
    /// first is [`Document::text`]. A member's vector evidence is the mean similarity of its
    /// views. Never empty.
    pub views: Vec<View>,
    /// How likely the member is what an agent wants, before any query: 1 for root fields,
    /// less for the rest, least for the plumbing of GraphQL conventions (Relay connections
    /// and edges, mutation payloads).
    pub prior: f32,
    /// What narrows a read: an argument of a query or subscription field, or an input field or
    /// enum value such an argument takes, directly or through nested inputs.
    pub filter: bool,
    /// What a change takes: an argument of a mutation field, or an input field or enum value
    /// such an argument takes, directly or through nested inputs.
    pub change: bool,
    /// What a change returns: a field of a mutation payload.
    pub outcome: bool,
    /// For a mutation field that returns a payload, the object the payload carries: what the
    /// change makes or changes (`Issue`, through `CreateIssuePayload.issue`). An action is read
    /// against it too (see [`crate::index::generation`]); a read is not, or every change to an
    /// object would answer questions about it.
    pub carries: Option<MemberId>,
    /// Which of [`Document::views`] is the member's own `title. summary`: the text's, when the
    /// text adds nothing to it.
    pub summary_view: usize,
    /// `Some` when deprecated through what reaches it, though not deprecated itself: an
    /// argument of a deprecated field, or a type only deprecated members use
    /// (`TrackAudioFeatures`, which only deprecated fields return) and the members of such a
    /// type. Nothing reaches it but what an agent should no longer use. It holds what replaces
    /// the member, when found: the member of its name in what replaces what reaches it
    /// (`ProductVariantWhereInput.sku` for `ProductVariantFilterInput.sku`, whose type only the
    /// deprecated `filter` arguments take, replaced by `where`).
    pub deprecated_by_reach: Option<Option<MemberId>>,
    /// The shard the document lives in: its first owning subgraph. A member several
    /// subgraphs resolve is indexed once; `Member::subgraphs` keeps every owner.
    pub shard: SubgraphId,
}

impl Document {
    /// Everything indexed lexically: the first view's text.
    pub fn text(&self) -> &str {
        &self.text_view().parts[0].text
    }

    /// The view of the document text alone: its one part is what the lexical index holds and
    /// what token evidence matches.
    pub fn text_view(&self) -> &View {
        &self.views[0]
    }
}

/// One text the model embeds, shared by every view it is part of.
#[derive(Debug, Clone)]
pub struct Text {
    pub text: Arc<str>,
    /// The vector cache's key, with the model.
    pub hash: u128,
}

impl Text {
    fn new(text: String) -> Self {
        Text {
            hash: xxh3_128(text.as_bytes()),
            text: text.into(),
        }
    }
}

/// One vector of a member: the sum of one or more embedded texts' vectors, made unit length.
#[derive(Debug, Clone)]
pub struct View {
    /// The vector-shard key: the hash of the coordinate and the view's place. Stable across
    /// catalogs, so a shard built for an earlier catalog serves a later one.
    pub key: u64,
    /// The texts summed; one for the views of a member's own words.
    pub parts: Vec<Text>,
    /// Identity of the view's vector: its parts' hashes.
    pub hash: u128,
}

impl View {
    fn new(key: u64, parts: Vec<Text>) -> Self {
        let hash = match parts.as_slice() {
            [text] => text.hash,
            _ => {
                let bytes: Vec<u8> = parts.iter().flat_map(|t| t.hash.to_le_bytes()).collect();
                xxh3_128(&bytes)
            }
        };
        View { key, parts, hash }
    }

    /// The view's vector from its parts' vectors (`None` when one is missing or widths differ).
    pub fn blend(&self, vector_of: impl Fn(u128) -> Option<Arc<[f32]>>) -> Option<Arc<[f32]>> {
        if let [text] = self.parts.as_slice() {
            return vector_of(text.hash);
        }
        let vectors = self
            .parts
            .iter()
            .map(|text| vector_of(text.hash))
            .collect::<Option<Vec<_>>>()?;
        unit_sum(vectors.iter().map(|v| &v[..])).map(Into::into)
    }
}

/// Longest description excerpt taken from a related member (the member's own is kept whole).
const CONTEXT_CHARS: usize = 160;
/// Most related names listed (fields of a type, values of an enum, implementers).
const LIST_NAMES: usize = 12;

/// One document per member the catalog can show (built-ins of GraphQL itself included).
pub fn documents(catalog: &Catalog, priors: &Priors) -> Vec<Document> {
    let plumbing = Plumbing::of(catalog);
    let filters = filters(catalog);
    let changes = changes(catalog);
    let reach = deprecated_by_reach(catalog);
    let descriptions: Vec<Option<&str>> = catalog
        .members()
        .iter()
        .map(|member| own_description(catalog, member))
        .collect();
    let titles: Vec<String> = catalog
        .members()
        .iter()
        .map(|member| title(catalog, member))
        .collect();
    // `title. summary`: a member's own words, also blended into the context of its users.
    let summaries: Vec<Text> = catalog
        .members()
        .iter()
        .zip(&titles)
        .map(|(member, title)| {
            let mut text = format!("{title}.");
            if let Some(description) = descriptions[member.id.index()] {
                push_sentence(&mut text, summary(description), usize::MAX);
            }
            Text::new(text)
        })
        .collect();
    catalog
        .members()
        .iter()
        .zip(titles)
        .map(|(member, title)| {
            let own = &summaries[member.id.index()];
            let described = descriptions[member.id.index()].is_some();
            let text = member_text(catalog, &plumbing, member, described, &own.text);
            let (views, summary_view) = views(
                catalog, &plumbing, &summaries, member, described, &title, text,
            );
            let parent = member.parent.map(|p| catalog.member(p).name.as_str());
            Document {
                names: [Some(member.name.as_str()), parent]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" "),
                prior: prior(catalog, &plumbing, member, priors),
                filter: filters[member.id.index()],
                change: changes[member.id.index()],
                outcome: member.kind == MemberKind::Field
                    && owner_type(catalog, member).is_some_and(|ty| plumbing.is_payload(ty)),
                carries: carried(catalog, &plumbing, member),
                summary_view,
                deprecated_by_reach: reach[member.id.index()],
                member: member.id,
                title,
                views,
                shard: member.subgraphs.first().copied().unwrap_or(SubgraphId(0)),
            }
        })
        .collect()
}

/// By member: whether it narrows a read (see [`Document::filter`]). Mutation arguments and what
/// they take describe a change, not a selection.
fn filters(catalog: &Catalog) -> Vec<bool> {
    taken_by(catalog, |field| !catalog.roots().is_mutation_field(field))
}

/// By member: whether a mutation takes it (see [`Document::change`]).
fn changes(catalog: &Catalog) -> Vec<bool> {
    taken_by(catalog, |field| catalog.roots().is_mutation_field(field))
}

/// By member: [`Document::deprecated_by_reach`]. A member's own deprecation is not repeated
/// here.
fn deprecated_by_reach(catalog: &Catalog) -> Vec<Option<Option<MemberId>>> {
    let members = catalog.members();
    let mut reach: Vec<Option<Option<MemberId>>> = vec![None; members.len()];
    // A member's deprecation, its own or by reach: `Some` with its replacement.
    let deprecation =
        |reach: &[Option<Option<MemberId>>], member: &Member| match &member.deprecation {
            Some(own) => Some(own.replacement),
            None => reach[member.id.index()],
        };
    // Each pass reaches one level further (nested inputs, their fields); few passes settle it.
    loop {
        let mut changed = false;
        for member in members {
            if member.deprecation.is_some() || reach[member.id.index()].is_some() {
                continue;
            }
            let reached = if member.kind.is_type() {
                // Deprecated when every user is; replaced by what a user's replacement takes.
                let users = &member.referenced_by;
                let used = !users.is_empty() && !catalog.roots().contains(member.id);
                // `None` as soon as one user is live.
                let replacing = |found: Option<MemberId>, user: &MemberId| {
                    let replacement = deprecation(&reach, catalog.member(*user))?;
                    Some(found.or_else(|| replacement.and_then(|r| catalog.member(r).named_type)))
                };
                used.then(|| users.iter().try_fold(None, replacing))
                    .flatten()
                    .map(|ty| ty.filter(|ty| *ty != member.id))
            } else {
                // Deprecated when what holds it is; replaced by its namesake in the replacement
                // (a field's holds arguments, a type's its members).
                member.parent.and_then(|parent| {
                    let replacement = deprecation(&reach, catalog.member(parent))?;
                    Some(
                        replacement.and_then(|r| {
                            catalog.child(catalog.member(r), &member.name).map(|c| c.id)
                        }),
                    )
                })
            };
            if reached.is_some() {
                reach[member.id.index()] = reached;
                changed = true;
            }
        }
        if !changed {
            return reach;
        }
    }
}

/// By member: whether it is an argument of a field `of` picks, or an input field or enum value
/// such an argument takes, directly or through nested inputs.
fn taken_by(catalog: &Catalog, of: impl Fn(&Member) -> bool) -> Vec<bool> {
    let members = catalog.members();
    // The arguments, then what they take: input objects and enums, their fields and values,
    // and the types those take in turn.
    let mut reached = vec![false; members.len()];
    let mut to_visit: Vec<MemberId> = members
        .iter()
        .filter(|m| m.kind == MemberKind::Argument)
        .filter(|m| m.parent.is_some_and(|field| of(catalog.member(field))))
        .map(|m| m.id)
        .collect();
    while let Some(id) = to_visit.pop() {
        if std::mem::replace(&mut reached[id.index()], true) {
            continue;
        }
        let member = catalog.member(id);
        match member.kind {
            MemberKind::Argument | MemberKind::InputField => to_visit.extend(member.named_type),
            MemberKind::InputObject | MemberKind::Enum => to_visit.extend(&member.children),
            _ => {}
        }
    }
    members
        .iter()
        .map(|m| {
            reached[m.id.index()]
                && matches!(
                    m.kind,
                    MemberKind::Argument | MemberKind::InputField | MemberKind::EnumValue
                )
        })
        .collect()
}

/// The distinct texts the documents `members` embed, in first-seen order.
pub(crate) fn distinct_texts<'d>(documents: &'d [Document], members: &[usize]) -> Vec<&'d Text> {
    let mut seen = std::collections::HashSet::new();
    members
        .iter()
        .flat_map(|&i| documents[i].views.iter())
        .flat_map(|view| view.parts.iter())
        .filter(|text| seen.insert(text.hash))
        .collect()
}

/// The vectors a member is searched by, its score being their mean similarity to the query,
/// and which of them is its name with its own summary:
/// 1. its document text;
/// 2. its name with its own summary (what a question naming the member's purpose matches),
///    unless that is the whole text;
/// 3. for a described member, its text summed with the summaries of its parent and type
///    (what a question in the words of the surrounding domain matches);
/// 4. for a described member, its name alone (what a question naming the thing matches).
///
/// One text dilutes each of these with the others under mean pooling; averaging several
/// vectors measured better on all three dev sets. The context view sums vectors rather than
/// embedding a longer text, so editing a type's description re-embeds that type's texts only.
fn views(
    catalog: &Catalog,
    plumbing: &Plumbing,
    summaries: &[Text],
    member: &Member,
    described: bool,
    title: &str,
    text: String,
) -> (Vec<View>, usize) {
    // The view's place is part of the hashed bytes, not a seed: xxh3 mixes a seed into a short
    // input linearly, and `Uri`'s text view and `Url`'s summary view had one key.
    let key = |place: u8| {
        let mut bytes = Vec::with_capacity(member.coordinate.len() + 2);
        bytes.extend_from_slice(member.coordinate.as_bytes());
        bytes.extend_from_slice(&[0, place]);
        xxh3_64(&bytes)
    };
    let text = Text::new(text);
    let own = &summaries[member.id.index()];
    let mut views = vec![View::new(key(0), vec![text.clone()])];
    // The summary has a view of its own when the text adds to it, and is the text's otherwise.
    let summary_view = usize::from(own.hash != text.hash);
    if summary_view == 1 {
        views.push(View::new(key(1), vec![own.clone()]));
    }
    // Without a description, the document text already has the context and the summary is
    // the name alone.
    if described {
        let mut parts = vec![text];
        for id in [member.parent, member.named_type].into_iter().flatten() {
            let related = catalog.member(id);
            if related.description.is_some() && describes_users(catalog, plumbing, related) {
                parts.push(summaries[id.index()].clone());
            }
        }
        if parts.len() > 1 {
            views.push(View::new(key(2), parts));
        }
        views.push(View::new(key(3), vec![Text::new(format!("{title}."))]));
    }
    (views, summary_view)
}

/// The object a mutation field's payload carries: the one field of the payload that returns
/// an object or interface other than plumbing (its errors are plumbing), when there is one.
fn carried(catalog: &Catalog, plumbing: &Plumbing, field: &Member) -> Option<MemberId> {
    // Only mutation fields return payloads (`Plumbing::is_payload`).
    let payload = catalog.member(field.named_type?);
    if !plumbing.is_payload(payload) {
        return None;
    }
    let mut carried = payload.children.iter().filter_map(|child| {
        let ty = catalog.member(catalog.member(*child).named_type?);
        let object = matches!(ty.kind, MemberKind::Object | MemberKind::Interface);
        (object && !plumbing.contains(ty)).then_some(ty.id)
    });
    match (carried.next(), carried.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// A member's name and its parent's, as words: `repository stargazers`.
fn title(catalog: &Catalog, member: &Member) -> String {
    let mut title = String::new();
    if let Some(parent) = member.parent.map(|id| catalog.member(id)) {
        title.push_str(&split_identifier(&parent.name));
        title.push(' ');
    }
    title.push_str(&split_identifier(&member.name));
    title
}

/// The document text of a member: its `title. summary` text, then its surroundings.
fn member_text(
    catalog: &Catalog,
    plumbing: &Plumbing,
    member: &Member,
    described: bool,
    summary: &str,
) -> String {
    let parent = member.parent.map(|id| catalog.member(id));
    let mut text = String::with_capacity(256);
    text.push_str(summary);
    // Related descriptions stand in for a missing one only: mean pooling dilutes a member's
    // own words with every sentence added (the context view blends them in instead).
    let context = !described;
    let names = |ids: &[MemberId]| list_names(catalog, ids);
    match member.kind {
        MemberKind::Field => {
            push_type(&mut text, catalog, plumbing, member, "returns", context);
            let args = names(&member.children);
            if !args.is_empty() {
                let _ = write!(text, " Arguments: {args}.");
            }
            push_parent(&mut text, catalog, plumbing, parent, context);
        }
        MemberKind::Argument | MemberKind::InputField | MemberKind::DirectiveArgument => {
            push_type(&mut text, catalog, plumbing, member, "takes", context);
            push_parent(&mut text, catalog, plumbing, parent, context);
        }
        MemberKind::EnumValue => push_parent(&mut text, catalog, plumbing, parent, context),
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
    text
}

/// Whether a type's description says something about the members that use it: not for
/// GraphQL's own scalars, the root types or plumbing (their descriptions are boilerplate).
fn describes_users(catalog: &Catalog, plumbing: &Plumbing, ty: &Member) -> bool {
    !ty.builtin && !catalog.roots().contains(ty.id) && !plumbing.contains(ty)
}

/// `returns pull request: A repository pull request.` (the description only with `context`)
fn push_type(
    text: &mut String,
    catalog: &Catalog,
    plumbing: &Plumbing,
    member: &Member,
    verb: &str,
    context: bool,
) {
    let Some(ty) = member.named_type.map(|id| catalog.member(id)) else {
        return;
    };
    let _ = write!(text, " {verb} {}", split_identifier(&ty.name));
    match ty.kind {
        MemberKind::Enum => {
            let _ = write!(text, " ({})", list_names(catalog, &ty.children));
        }
        _ if context && describes_users(catalog, plumbing, ty) => {
            if let Some(description) = &ty.description {
                text.push(':');
                push_sentence(text, summary(description), CONTEXT_CHARS);
                return;
            }
        }
        _ => {}
    }
    text.push('.');
}

/// `In repository: A repository contains the content for a project.` (the description only
/// with `context`)
fn push_parent(
    text: &mut String,
    catalog: &Catalog,
    plumbing: &Plumbing,
    parent: Option<&Member>,
    context: bool,
) {
    let Some(parent) = parent else { return };
    let _ = write!(text, " In {}", split_identifier(&parent.name));
    let description = parent
        .description
        .as_ref()
        .filter(|_| context && describes_users(catalog, plumbing, parent));
    match description {
        Some(description) => {
            text.push(':');
            push_sentence(text, summary(description), CONTEXT_CHARS);
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

/// A member's own description; for an enum value without one, its entry in its enum's
/// description. Many schemas document the values as a list there (saleor's
/// `OrderAuthorizeStatusEnum`: `PARTIAL - the funds that are authorized and charged don't
/// cover fully the order.total`), which says what the value means better than the enum's
/// summary its document would otherwise borrow.
fn own_description<'c>(catalog: &'c Catalog, member: &'c Member) -> Option<&'c str> {
    match (&member.description, member.kind) {
        (Some(own), _) => Some(own),
        (None, MemberKind::EnumValue) => {
            let enumeration = catalog.member(member.parent?);
            listed_entry(enumeration.description.as_deref()?, &member.name)
        }
        (None, _) => None,
    }
}

/// The text of `name`'s entry in a description that lists entries a line each (`NAME - text`,
/// `NAME: text`, `` * `NAME` - text ``), with the lines that continue it, up to a blank line or
/// the next entry.
fn listed_entry<'d>(description: &'d str, name: &str) -> Option<&'d str> {
    let mut lines = description.split_inclusive('\n');
    let mut end = 0;
    // An entry's text runs to the end of its line: it starts that far before the line's end.
    let start = lines.by_ref().find_map(|line| {
        end += line.len();
        let (listed, text) = entry(line)?;
        (listed == name).then(|| end - text.len())
    })?;
    for line in lines {
        if line.trim().is_empty() || entry(line).is_some() {
            break;
        }
        end += line.len();
    }
    let text = description[start..end].trim();
    (!text.is_empty()).then_some(text)
}

/// A line that opens a list entry: an optional bullet, a name in capitals (optionally in
/// backticks), then a dash or a colon; the name and the text after the separator.
fn entry(line: &str) -> Option<(&str, &str)> {
    let line = line.trim_start();
    let line = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .unwrap_or(line)
        .trim_start();
    let (name, rest) = match line.strip_prefix('`') {
        Some(quoted) => quoted.split_once('`')?,
        None => line.split_at(line.find(|c: char| !c.is_alphanumeric() && c != '_')?),
    };
    let is_value_name = name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    let rest = rest.trim_start();
    let text = ["- ", "– ", "— ", ": "]
        .iter()
        .find_map(|separator| rest.strip_prefix(separator))?;
    is_value_name.then_some((name, text))
}

/// A description's first paragraph: its summary. Later paragraphs hold notes that repeat
/// across many members (required permissions, events triggered, the version that added it),
/// which pull every member's vector towards the same place.
fn summary(description: &str) -> &str {
    let description = description.trim_start();
    let mut offset = 0;
    for line in description.split_inclusive('\n') {
        if line.trim().is_empty() && offset > 0 {
            return &description[..offset];
        }
        offset += line.len();
    }
    description
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
    fn no_two_views_share_a_key() {
        // Seeded, xxh3 gave `Uri`'s text view and `Url`'s summary view one key, and the
        // vector shard of the whole schema failed to build.
        let catalog = Catalog::from_sdl(
            r#"
            type Query { uri: Uri url: Url }
            "An identifier." type Uri { value: String }
            "A web address." type Url { value: String }
            "#,
            "test.graphql",
            wayfinder_supergraph::CatalogOptions::default(),
        )
        .unwrap();
        let keys: Vec<u64> = documents(&catalog, &Priors::default())
            .iter()
            .flat_map(|d| d.views.iter().map(|v| v.key))
            .collect();
        let distinct: std::collections::HashSet<u64> = keys.iter().copied().collect();
        assert_eq!(distinct.len(), keys.len());
    }

    #[test]
    fn what_only_deprecated_members_reach_is_deprecated_by_reach() {
        let catalog = Catalog::from_sdl(
            r#"
            type Query {
              track: Track
              variants(
                filter: VariantFilter @deprecated(reason: "Use `where` instead.")
                where: VariantWhere
              ): [String]
              features(ids: [ID!]): Features @deprecated(reason: "Gone.")
            }
            type Track { name: String features: Features @deprecated }
            type Features { tempo: Float }
            input VariantFilter { sku: String range: Range }
            input Range { gte: Int }
            input VariantWhere { sku: String }
            "#,
            "test.graphql",
            wayfinder_supergraph::CatalogOptions::default(),
        )
        .unwrap();
        let documents = documents(&catalog, &Priors::default());
        let reach = |coordinate: &str| {
            let d = &documents[catalog.get(coordinate).expect(coordinate).id.index()];
            let replacement = d
                .deprecated_by_reach
                .flatten()
                .map(|r| catalog.member(r).coordinate.as_str());
            (d.deprecated_by_reach.is_some(), replacement)
        };
        assert_eq!(reach("VariantFilter"), (true, Some("VariantWhere")));
        assert_eq!(reach("VariantFilter.sku"), (true, Some("VariantWhere.sku")));
        // Nested, and without a namesake in the replacement.
        assert_eq!(reach("Range.gte"), (true, None));
        // An argument of a deprecated field; a type only deprecated fields return.
        assert_eq!(reach("Query.features(ids:)"), (true, None));
        assert_eq!(reach("Features.tempo"), (true, None));
        // Deprecated in its own right, or reached by a live member: not by reach.
        assert_eq!(reach("Query.variants(filter:)"), (false, None));
        assert_eq!(reach("VariantWhere.sku"), (false, None));
        assert_eq!(reach("Track.name"), (false, None));
    }

    #[test]
    fn a_payload_carries_its_one_object_and_the_summary_view_is_found() {
        let catalog = Catalog::from_sdl(
            r#"
            type Query { issue: Issue column: Column }
            type Mutation {
              "Opens an issue."
              createIssue(title: String!): CreateIssuePayload
              moveIssue(id: ID!): MoveIssuePayload
              closeIssue(id: ID!): Issue
            }
            "A problem to fix."
            type Issue { "Its title." title: String }
            "A board column."
            type Column { name: String }
            type UserError { message: String }
            type CreateIssuePayload { errors: [UserError!]! issue: Issue clientMutationId: String }
            type MoveIssuePayload { issue: Issue column: Column }
            "#,
            "test.graphql",
            wayfinder_supergraph::CatalogOptions::default(),
        )
        .unwrap();
        let documents = documents(&catalog, &Priors::default());
        let document = |coordinate: &str| &documents[catalog.get(coordinate).unwrap().id.index()];
        let carries = |coordinate: &str| {
            document(coordinate)
                .carries
                .map(|ty| catalog.member(ty).name.as_str())
        };
        // The errors are plumbing; a payload with two objects says neither is the change's;
        // an object returned as it is needs no payload read through.
        assert_eq!(carries("Mutation.createIssue"), Some("Issue"));
        assert_eq!(carries("Mutation.moveIssue"), None);
        assert_eq!(carries("Mutation.closeIssue"), None);
        assert_eq!(carries("Query.issue"), None);
        for coordinate in [
            "Issue",
            "Issue.title",
            "Mutation.createIssue",
            "Column.name",
        ] {
            let d = document(coordinate);
            let view = &d.views[d.summary_view];
            assert_eq!(view.parts.len(), 1, "{coordinate}");
            assert!(view.parts[0].text.starts_with(&*d.title), "{coordinate}");
            assert!(
                !view.parts[0].text.contains(" In "),
                "{coordinate}: {}",
                view.parts[0].text
            );
        }
    }

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

    #[test]
    fn a_value_takes_its_entry_in_its_enums_description() {
        let description = "Where a shipment is.\n\n    WAITING - not sent yet\n    MOVING: \
                           on the way,\n      by road\n    * `LOST` \u{2014} gone\n\n\
                           Some notes.\n  - EVENT (async): not an entry";
        assert_eq!(listed_entry(description, "WAITING"), Some("not sent yet"));
        assert_eq!(
            listed_entry(description, "MOVING"),
            Some("on the way,\n      by road")
        );
        assert_eq!(listed_entry(description, "LOST"), Some("gone"));
        assert_eq!(listed_entry(description, "EVENT"), None);
        assert_eq!(listed_entry(description, "WAIT"), None);

        let catalog = Catalog::from_sdl(
            &format!(
                "type Query {{ status: Status }}\n\"\"\"{description}\"\"\"\n\
                 enum Status {{ WAITING \"Its own.\" MOVING LOST EVENT }}"
            ),
            "test.graphql",
            wayfinder_supergraph::CatalogOptions::default(),
        )
        .unwrap();
        let own = |coordinate: &str| {
            own_description(&catalog, catalog.get(coordinate).expect(coordinate))
        };
        assert_eq!(own("Status.WAITING"), Some("not sent yet"));
        assert_eq!(own("Status.MOVING"), Some("Its own."));
        assert_eq!(own("Status.EVENT"), None);
    }
}
