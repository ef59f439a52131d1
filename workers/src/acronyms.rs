//! Acronyms: an all-capitals word of a question (`PR`, `PRs`) spelled out as the schema's own
//! multi-word type whose initials it is (`PullRequest` -> `pull request`).
//!
//! A small embedding model reads "pull request" far better than "PR". The spellings come from
//! the catalog, never from a list: a word of two to five capitals, with an optional plural
//! `s`, is replaced when it is not itself the name of a type, field, argument or directive (an
//! enum value may be spelled in capitals and still be an acronym: `PR` is also Puerto Rico's
//! country code) and the initials of a type name of two or more words match it; of several such
//! types, the one most fields and arguments use. The table is built from the whole catalog, so
//! every tenant's query is spelled out alike; it changes the words embedded, never what a
//! tenant may see.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use wayfinder_supergraph::{Catalog, MemberKind};

use crate::document::split_identifier;

const MIN_LETTERS: usize = 2;
const MAX_LETTERS: usize = 5;

/// Acronym (lower case) to the words it stands for.
#[derive(Debug, Default)]
pub(crate) struct Acronyms(HashMap<String, String>);

impl Acronyms {
    pub(crate) fn of(catalog: &Catalog) -> Self {
        let names: HashSet<String> = catalog
            .members()
            .iter()
            .filter(|m| m.kind != MemberKind::EnumValue)
            .map(|m| m.name.to_lowercase())
            .collect();
        // Acronym -> (uses, words) of the best type so far.
        let mut best: HashMap<String, (usize, String)> = HashMap::new();
        for ty in catalog
            .members()
            .iter()
            .filter(|m| m.kind.is_type() && !m.builtin)
        {
            let words = split_identifier(&ty.name);
            let initials: String = words.split(' ').filter_map(|w| w.chars().next()).collect();
            let spelled = words.split(' ').count() >= 2
                && words.chars().all(|c| c.is_alphabetic() || c == ' ');
            if !spelled
                || !(MIN_LETTERS..=MAX_LETTERS).contains(&initials.len())
                || names.contains(&initials)
            {
                continue;
            }
            let uses = ty.referenced_by.len();
            // Most used first; the words break a tie, so the choice never depends on order.
            let better = |(best_uses, best_words): &(usize, String)| {
                uses > *best_uses || (uses == *best_uses && words < *best_words)
            };
            match best.get(&initials) {
                Some(current) if !better(current) => {}
                _ => {
                    best.insert(initials, (uses, words));
                }
            }
        }
        Acronyms(best.into_iter().map(|(a, (_, words))| (a, words)).collect())
    }

    /// `query` with each acronym spelled out, borrowed when it has none.
    pub(crate) fn expand<'q>(&self, query: &'q str) -> Cow<'q, str> {
        if self.0.is_empty() {
            return Cow::Borrowed(query);
        }
        let mut out = String::new();
        let mut copied = 0;
        for (start, word) in words(query) {
            let Some(words) = self.spelled(word) else {
                continue;
            };
            out.push_str(&query[copied..start]);
            out.push_str(&words);
            copied = start + word.len();
        }
        if copied == 0 {
            return Cow::Borrowed(query);
        }
        out.push_str(&query[copied..]);
        Cow::Owned(out)
    }

    fn spelled(&self, word: &str) -> Option<String> {
        let (letters, plural) = match word.strip_suffix('s') {
            Some(stem) if stem.len() >= MIN_LETTERS => (stem, true),
            _ => (word, false),
        };
        if !(MIN_LETTERS..=MAX_LETTERS).contains(&letters.len())
            || !letters.chars().all(|c| c.is_ascii_uppercase())
        {
            return None;
        }
        let words = self.0.get(&letters.to_lowercase())?;
        Some(if plural {
            format!("{words}s")
        } else {
            words.clone()
        })
    }
}

/// The identifier-like runs of `text` (ASCII letters, digits, `_`), with their byte offsets,
/// so a part of `PR_BODY` or `PR2` is never taken for a word.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while rest.next_if(|(_, c)| !is_word(*c)).is_some() {}
        let (start, _) = *rest.peek()?;
        let mut end = start;
        while let Some((i, c)) = rest.next_if(|(_, c)| is_word(*c)) {
            end = i + c.len_utf8();
        }
        Some((start, &text[start..end]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wayfinder_supergraph::CatalogOptions;

    fn acronyms(sdl: &str) -> Acronyms {
        Acronyms::of(&Catalog::from_sdl(sdl, "test.graphql", CatalogOptions::default()).unwrap())
    }

    const SDL: &str = r#"
        type Query { pullRequest(id: ID!): PullRequest, repo: Repository }
        type PullRequest { title: String, review: PullRequestReview, author: PublicRecord }
        type PullRequestReview { body: String, pullRequest: PullRequest }
        type PublicRecord { name: String }
        type ContentManagementSystem { url: String }
        enum CountryCode { PR US }
        type Repository { pullRequests: [PullRequest], owner: PublicRecord, country: CountryCode }
    "#;

    #[test]
    fn capitals_are_spelled_out_as_the_most_used_type_they_are_the_initials_of() {
        let acronyms = acronyms(SDL);
        // `PullRequest` is used three times, `PublicRecord` twice; `PR` is also an enum value.
        assert_eq!(
            acronyms.expand("approve a PR, or list PRs."),
            "approve a pull request, or list pull requests."
        );
        assert_eq!(
            acronyms.expand("PRR on the CMS"),
            "pull request review on the content management system"
        );
        for unchanged in [
            "no capitals here, pr",
            "PRX or P or PROVE or UI",
            "PR_BODY or PR2",
        ] {
            assert!(
                matches!(acronyms.expand(unchanged), Cow::Borrowed(_)),
                "{unchanged}"
            );
        }
    }

    #[test]
    fn an_acronym_that_names_a_field_is_left_as_written() {
        let acronyms = acronyms(&SDL.replace("repo: Repository", "repo: Repository, prr: Int"));
        assert_eq!(acronyms.expand("the PRR"), "the PRR");
        assert_eq!(acronyms.expand("the PR"), "the pull request");
    }
}
