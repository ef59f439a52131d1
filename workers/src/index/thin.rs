//! Thin members: those whose name is all they say. The ranking's `thin` stage lets them yield
//! unless a question uses their name; which members are thin, and their names' words, are
//! worked out once per catalog, here.

use std::collections::HashMap;

use wayfinder_supergraph::{Catalog, Member, MemberId, MemberKind};

/// Each thin member's name, as the words `read` makes of it (the lexical index's analyzer).
pub type ThinNames = HashMap<MemberId, Vec<String>>;

/// The thin members of `catalog`, each with its name's words as `read` makes them: those whose
/// name is all they say (no description of their own and none on the field or type they belong
/// to), and generic arguments, whose name and description repeat on at least
/// `generic_argument_fields` fields (a ranking param) (Relay's `first`, `after`, ...): what they say is true of
/// every list, so a question about one list meets them through its field's words only.
pub fn thin_names(
    catalog: &Catalog,
    generic_argument_fields: usize,
    read: impl Fn(&str) -> Vec<String>,
) -> ThinNames {
    let thin = |member: &&Member| {
        member.description.is_none()
            && !member.builtin
            && member
                .parent
                .is_none_or(|parent| catalog.member(parent).description.is_none())
    };
    // What a schema's own argument says, if it is one: its name and its description.
    fn argument_said(member: &Member) -> Option<(&str, Option<&str>)> {
        (member.kind == MemberKind::Argument && !member.builtin)
            .then_some((&member.name, member.description.as_deref()))
    }
    let mut repeats: HashMap<(&str, Option<&str>), usize> = HashMap::new();
    for said in catalog.members().iter().filter_map(argument_said) {
        *repeats.entry(said).or_default() += 1;
    }
    let generic = |member: &Member| {
        argument_said(member)
            .and_then(|said| repeats.get(&said))
            .is_some_and(|&fields| fields >= generic_argument_fields)
    };
    catalog
        .members()
        .iter()
        .filter(|member| thin(member) || generic(member))
        .map(|member| (member.id, read(&member.name)))
        .collect()
}
