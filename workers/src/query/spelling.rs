//! Spelling: the words of a question the model reads better spelled out, spelled out from the
//! schema's own names.
//!
//! A small embedding model reads "pull request" far better than "PR", and "repository" better
//! than "repo", a word its vocabulary lacks and so reads as pieces (`rep`, `##o`); "how loud"
//! best as the volume it asks for, "who reacted" as the reactors it asks for, and "shopper",
//! a word it lacks and the schema never writes, as the dictionary's `customer`. The spellings
//! come from the catalog and a general English lexicon, never from a list written for a
//! schema:
//!
//! - An acronym, a word of two to five capitals with an optional plural `s`, is replaced when
//!   it is not itself the name of a type, field, argument or directive (an enum value may be
//!   spelled in capitals and still be an acronym: `PR` is also Puerto Rico's country code) and
//!   the initials of a type name of two or more words match it; of several such types, the one
//!   most fields and arguments use.
//! - A clipped word, one of three letters or more (with an optional plural `s`) that the
//!   model's vocabulary lacks as a whole word, is replaced by the name word of the catalog that
//!   it begins, at least three letters longer (so not an inflection of it), that the most
//!   members' names use, provided the names use it more often than the clipped word itself.
//! - An adjective after `how` asks for a degree (`how loud`): it is replaced by the noun
//!   naming what it measures, the first of its attributes in WordNet 3.1 (those of its most
//!   frequent sense that has any: `volume`, `loudness`, `intensity`) that a member's name
//!   uses (`volumePercent`). A general English table, the same for every schema, written by
//!   `scripts/wordnet.py`; the catalog only decides which of its nouns applies.
//! - The verb of a `who` question (`who reacted`, `who is following`) asks for whoever does
//!   it: it is followed by its agent noun as the names spell it (`reactors`, `followers`), the
//!   verb's stem with an English agent ending (`-er`, `-or`, `-r`) that the most members'
//!   names use; none when no name uses one.
//! - A word that neither the model reads whole nor the schema writes (`shopper`, read by the
//!   model as `shop` and `##per`) is replaced by the first word of its most frequent WordNet
//!   sense, the sense's own or else those of the sense it is a kind of, that the model reads
//!   whole and the schema writes (`customer`): the schema cannot match it as written, and the
//!   model reads its pieces.
//!
//! The tables are built from the whole catalog, so every tenant's query is spelled out alike;
//! spelling changes the words embedded, never what a tenant may see.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::{Arc, LazyLock};

use wayfinder_supergraph::{Catalog, MemberKind};

use crate::index::document::split_identifier;
use crate::query::intent::AUXILIARIES;

const MIN_LETTERS: usize = 2;
const MAX_LETTERS: usize = 5;
/// The fewest letters a clipped word has, and the fewest its spelling adds: `repo` ->
/// `repository`, but not `playlist` -> `playlists` or `sku` -> `skus`.
const MIN_CLIPPED: usize = 3;
/// The fewest letters of a word read through the dictionary: shorter ones are mostly function
/// words and abbreviations.
const MIN_DICTIONARY: usize = 4;

/// The words the embedding model reads whole, each as one token of its vocabulary.
pub type Vocabulary = HashSet<String>;

/// How a question's words are spelled out for the model, made on publishing a catalog.
#[derive(Debug)]
pub struct Spellings {
    /// Acronym (lower case) to the words it stands for.
    acronyms: HashMap<String, String>,
    /// Each word of the members' names (lower case), with how many members' names use it.
    name_words: BTreeMap<String, usize>,
    /// The model's whole words; without a model nothing is embedded, so no word is clipped.
    vocabulary: Option<Arc<Vocabulary>>,
    /// Every word the schema writes, in its members' names and descriptions (lower case);
    /// empty without a model, which reads no word through the dictionary either.
    written: HashSet<String>,
}

impl Spellings {
    pub fn of(catalog: &Catalog, vocabulary: Option<Arc<Vocabulary>>) -> Self {
        let mut name_words: BTreeMap<String, usize> = BTreeMap::new();
        for member in catalog.members().iter().filter(|m| !m.builtin) {
            let name = split_identifier(&member.name);
            let mut words: Vec<&str> = name.split(' ').collect();
            words.sort_unstable();
            words.dedup();
            for word in words {
                // Most words are already counted: allocate only for a new one.
                match name_words.get_mut(word) {
                    Some(uses) => *uses += 1,
                    None => {
                        name_words.insert(word.to_string(), 1);
                    }
                }
            }
        }
        // Read the lexicon now, not on the first question that needs it.
        LazyLock::force(&ATTRIBUTES);
        let written = match vocabulary {
            Some(_) => {
                LazyLock::force(&SENSES);
                written_words(catalog, &name_words)
            }
            None => HashSet::new(),
        };
        Spellings {
            acronyms: acronyms(catalog),
            name_words,
            vocabulary,
            written,
        }
    }

    /// `query` with each acronym, clipped word, degree, agent and unknown word spelled out,
    /// borrowed when it has none.
    pub fn expand<'q>(&self, query: &'q str) -> Cow<'q, str> {
        let mut out = String::new();
        let mut copied = 0;
        let mut previous = "";
        // After `who` and any auxiliaries (`who is following`), until its verb.
        let mut asks_who = false;
        for (start, word) in words(query) {
            let after = std::mem::replace(&mut previous, word);
            let verb_of_who = asks_who && !auxiliary(word);
            asks_who = word.eq_ignore_ascii_case("who") || (asks_who && !verb_of_who);
            let Some(words) = self
                .acronym(word)
                .or_else(|| self.clipped(word))
                .or_else(|| self.degree(after, word))
                .or_else(|| verb_of_who.then(|| self.agent(word)).flatten())
                .or_else(|| self.dictionary(word))
            else {
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

    fn acronym(&self, word: &str) -> Option<String> {
        let (letters, plural) = match word.strip_suffix('s') {
            Some(stem) if stem.len() >= MIN_LETTERS => (stem, true),
            _ => (word, false),
        };
        if !(MIN_LETTERS..=MAX_LETTERS).contains(&letters.len())
            || !letters.chars().all(|c| c.is_ascii_uppercase())
        {
            return None;
        }
        let words = self.acronyms.get(&letters.to_lowercase())?;
        Some(if plural {
            format!("{words}s")
        } else {
            words.clone()
        })
    }

    /// The name word a clipped `word` stands for (`repo` -> `repository`, `repos` ->
    /// `repositories`). Only a word in lower case, or capitalised as a sentence opens, is read:
    /// capitals are acronyms, and an identifier (`nameWithOwner`) is a name as written.
    fn clipped(&self, word: &str) -> Option<String> {
        let vocabulary = self.vocabulary.as_ref()?;
        let word = plain_word(word, MIN_CLIPPED)?;
        let (stem, plural) = match word.strip_suffix('s') {
            Some(stem) if stem.len() >= MIN_CLIPPED => (stem, true),
            _ => (word.as_ref(), false),
        };
        // The stem is as long as the word, or stripped of an `s` only when it stays that long.
        if vocabulary.contains(word.as_ref()) || vocabulary.contains(stem) {
            return None;
        }
        let uses = |name: &str| self.name_words.get(name).copied().unwrap_or(0);
        // The most used name word it begins; of equals, the first in alphabetical order.
        let (name, used) = self
            .name_words
            .range::<str, _>((Bound::Included(stem), Bound::Unbounded))
            .take_while(|(name, _)| name.starts_with(stem))
            .filter(|(name, _)| name.len() >= stem.len() + MIN_CLIPPED)
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))?;
        if *used <= uses(&word).max(uses(stem)) {
            return None;
        }
        Some(if plural {
            plural_of(name)
        } else {
            name.clone()
        })
    }

    /// `who reacted` asks for those who react: the verb of a `who` question is followed by its
    /// agent noun as the names spell it (`reacted reactors`, `is following followers`,
    /// `committed committer`), the verb's stem (less `-ing`, `-ed`, `-d`, `-es` or `-s`) with
    /// an English agent ending (`-er`, `-or`, `-r`, and their plurals) that the most members'
    /// names use; none when no name uses one (`made`, `wrote`).
    fn agent(&self, verb: &str) -> Option<String> {
        let lower = verb.to_ascii_lowercase();
        let stems = uninflected(&lower, VERB_ENDINGS);
        let uses = |name: &str| self.name_words.get(name).copied().unwrap_or(0);
        let (used, noun) = stems
            .iter()
            .flat_map(|(stem, _)| {
                AGENT_ENDINGS
                    .iter()
                    .map(move |ending| format!("{stem}{ending}"))
            })
            .filter(|noun| *noun != lower)
            .map(|noun| (uses(&noun), noun))
            // The most used; of equals, the first in alphabetical order.
            .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(&a.1)))?;
        (used > 0).then(|| format!("{verb} {noun}"))
    }

    /// How the dictionary reads a word that neither the model nor the schema knows (`shopper`,
    /// which the model reads as `shop` and `##per`, and no name or description writes): the
    /// first word of its most frequent sense in WordNet, the sense's own or else the words of
    /// the sense it is a kind of, that the model reads whole and the schema writes (`customer`;
    /// `customers` for `shoppers`). Only a word in lower case, or capitalised as a sentence
    /// opens, of four letters or more, is read: capitals are acronyms, identifiers are names.
    fn dictionary(&self, word: &str) -> Option<String> {
        let vocabulary = self.vocabulary.as_ref()?;
        let word = plain_word(word, MIN_DICTIONARY)?;
        let known = |form: &str| vocabulary.contains(form) || self.written.contains(form);
        // Most words are known as written: only the others have their forms made.
        if known(&word) {
            return None;
        }
        let forms = uninflected(&word, DICTIONARY_ENDINGS);
        if forms.iter().any(|(form, _)| known(form)) {
            return None;
        }
        let (senses, plural) = forms
            .iter()
            .find_map(|(form, plural)| Some((SENSES.get(form.as_str())?, *plural)))?;
        let reading = senses
            .iter()
            .find(|w| vocabulary.contains(**w) && self.written.contains(**w))?;
        Some(if plural {
            plural_of(reading)
        } else {
            reading.to_string()
        })
    }

    /// The attribute an adjective after `how` asks the degree of (`how loud` -> `how volume`,
    /// where names say `volumePercent`): of the nouns WordNet names as its attribute, the first
    /// that a member's name uses; none when no name uses any (`how many`: `numerousness`).
    fn degree(&self, before: &str, word: &str) -> Option<String> {
        if !before.eq_ignore_ascii_case("how") {
            return None;
        }
        let noun = ATTRIBUTES
            .get(word.to_ascii_lowercase().as_str())?
            .iter()
            .find(|noun| self.name_words.contains_key(**noun))?;
        Some(noun.to_string())
    }
}

/// Adjective -> the nouns WordNet names as the attribute of its most frequent sense that has
/// one (`loud` -> `volume`, `loudness`, `intensity`; `huge`, a satellite of `large`, -> `size`),
/// from the table `scripts/wordnet.py` writes.
static ATTRIBUTES: LazyLock<HashMap<&str, Vec<&str>>> =
    LazyLock::new(|| table(include_str!("../../data/attributes.tsv")));

/// A table `scripts/wordnet.py` writes: a word, a tab and its words, a line each, after a
/// header of `#` lines.
fn table(text: &'static str) -> HashMap<&'static str, Vec<&'static str>> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once('\t'))
        .map(|(word, words)| (word, words.split(' ').collect()))
        .collect()
}

/// Word -> the words of its most frequent sense in WordNet 3.1 that the default model reads
/// whole (`shopper` -> `customer`, `client`), for the words the default model lacks, from the
/// table `scripts/wordnet.py` writes.
static SENSES: LazyLock<HashMap<&str, Vec<&str>>> =
    LazyLock::new(|| table(include_str!("../../data/senses.tsv")));

/// `word` in lower case if it is a plain word of at least `letters` letters: in lower case, or
/// capitalised as a sentence opens (capitals are acronyms, and an identifier, `nameWithOwner`,
/// is a name as written). Every word of every question comes here: only one that opens a
/// sentence is copied.
fn plain_word(word: &str, letters: usize) -> Option<Cow<'_, str>> {
    let mut rest = word.chars();
    let first = rest.next()?;
    if word.len() < letters || !first.is_ascii_alphabetic() || !rest.all(|c| c.is_ascii_lowercase())
    {
        return None;
    }
    Some(if first.is_ascii_uppercase() {
        Cow::Owned(word.to_ascii_lowercase())
    } else {
        Cow::Borrowed(word)
    })
}

/// Whether `word` stands between `who` and its verb (`who is following`, `who's following`): an
/// auxiliary, or the `s` of a contraction.
fn auxiliary(word: &str) -> bool {
    word.eq_ignore_ascii_case("s") || AUXILIARIES.iter().any(|a| a.eq_ignore_ascii_case(word))
}

/// An ending a word may be inflected with, what its stem takes back (`-ies` -> `-y`), and
/// whether it makes a plural; the empty ending is the word as written.
type Ending = (&'static str, &'static str, bool);

/// A verb's endings, less which its stem takes an agent ending (`reacted` -> `react`).
const VERB_ENDINGS: &[Ending] = &[
    ("", "", false),
    ("ing", "", false),
    ("ed", "", false),
    ("d", "", false),
    ("es", "", false),
    ("s", "", false),
];

/// The endings less which a word may be in the dictionary, the word itself first:
/// `shoppers` -> `shopper` (plural), `restocked` -> `restock`, `restocke`.
const DICTIONARY_ENDINGS: &[Ending] = &[
    ("", "", false),
    ("ies", "y", true),
    ("es", "", true),
    ("s", "", true),
    ("ed", "", false),
    ("ed", "e", false),
    ("ing", "", false),
    ("ing", "e", false),
];

/// `word` less each of `endings` it ends in, in their order, each with whether the ending made
/// a plural; only stems of [`MIN_CLIPPED`] letters or more.
fn uninflected(word: &str, endings: &[Ending]) -> Vec<(String, bool)> {
    endings
        .iter()
        .filter_map(|(ending, base, plural)| {
            let stem = word.strip_suffix(ending)?;
            (stem.len() >= MIN_CLIPPED).then(|| (format!("{stem}{base}"), *plural))
        })
        .collect()
}

/// Every word of the members' names and descriptions, lower case.
fn written_words(catalog: &Catalog, name_words: &BTreeMap<String, usize>) -> HashSet<String> {
    let mut written: HashSet<String> = name_words.keys().cloned().collect();
    let descriptions = catalog.members().iter().filter(|m| !m.builtin);
    for text in descriptions.filter_map(|m| m.description.as_deref()) {
        for word in text.split(|c: char| !c.is_ascii_alphabetic()) {
            // Most words are already in: allocate only for a new one.
            if !word.is_empty() && !written.contains(word) {
                written.insert(word.to_ascii_lowercase());
            }
        }
    }
    written
}

/// English endings that make a verb's agent noun (`react` -> `reactor`, `follow` ->
/// `followers`, `use` -> `user`).
const AGENT_ENDINGS: &[&str] = &["er", "or", "r", "ers", "ors", "rs"];

/// The catalog's acronyms: for each, the words of the most used type whose initials it is.
fn acronyms(catalog: &Catalog) -> HashMap<String, String> {
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
        let spelled =
            words.split(' ').count() >= 2 && words.chars().all(|c| c.is_alphabetic() || c == ' ');
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
    best.into_iter().map(|(a, (_, words))| (a, words)).collect()
}

/// The English plural of a name word (`repository` -> `repositories`, `branch` -> `branches`).
fn plural_of(word: &str) -> String {
    let consonant_y = word
        .strip_suffix('y')
        .filter(|stem| stem.chars().last().is_some_and(|c| !"aeiou".contains(c)));
    match consonant_y {
        Some(stem) => format!("{stem}ies"),
        None if ["s", "x", "z", "ch", "sh"]
            .iter()
            .any(|e| word.ends_with(e)) =>
        {
            format!("{word}es")
        }
        None => format!("{word}s"),
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

    fn catalog(sdl: &str) -> Catalog {
        Catalog::from_sdl(sdl, "test.graphql", CatalogOptions::default()).unwrap()
    }

    fn spellings(sdl: &str, vocabulary: &[&str]) -> Spellings {
        let vocabulary = vocabulary.iter().map(|w| w.to_string()).collect();
        Spellings::of(&catalog(sdl), Some(Arc::new(vocabulary)))
    }

    /// Spellings as an engine without a model makes them.
    fn without_model(sdl: &str) -> Spellings {
        Spellings::of(&catalog(sdl), None)
    }

    /// Each question is read as its pair says.
    fn assert_reads(spellings: &Spellings, reads: &[(&str, &str)]) {
        for (question, read) in reads {
            assert_eq!(spellings.expand(question), *read, "{question}");
        }
    }

    fn assert_unchanged(spellings: &Spellings, texts: &[&str]) {
        for text in texts {
            assert!(matches!(spellings.expand(text), Cow::Borrowed(_)), "{text}");
        }
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
        let acronyms = without_model(SDL);
        // `PullRequest` is used three times, `PublicRecord` twice; `PR` is also an enum value.
        assert_eq!(
            acronyms.expand("approve a PR, or list PRs."),
            "approve a pull request, or list pull requests."
        );
        assert_eq!(
            acronyms.expand("PRR on the CMS"),
            "pull request review on the content management system"
        );
        assert_unchanged(
            &acronyms,
            &[
                "no capitals here, pr",
                "PRX or P or PROVE or UI",
                "PR_BODY or PR2",
            ],
        );
    }

    #[test]
    fn an_acronym_that_names_a_field_is_left_as_written() {
        let acronyms =
            without_model(&SDL.replace("repo: Repository", "repo: Repository, prr: Int"));
        assert_eq!(acronyms.expand("the PRR"), "the PRR");
        assert_eq!(acronyms.expand("the PR"), "the pull request");
    }

    const REPOSITORIES: &str = r#"
        type Query { repository(name: String!): Repository, repositories: [Repository], report: Report }
        type Repository { name: String, repositoryTopics: [String], sku: String, skus: [String], policy: Policy }
        type Report { reported: Boolean }
        type Policy { policyBody: String, polygon: String, administrator: String, admin: Boolean, admins: [String], adminCount: Int }
    "#;
    /// The whole words of a model's vocabulary these tests need: `repo`, `pol`, `admin` and
    /// `sku` are not among them.
    const VOCABULARY: &[&str] = &["my", "the", "in", "a", "of", "policy", "report", "name"];

    #[test]
    fn a_clipped_word_is_spelled_out_as_the_most_used_name_word_it_begins() {
        let spellings = spellings(REPOSITORIES, VOCABULARY);
        // `repository` is in three names, `repositories` and `reported` in one each (`report` is
        // not three letters longer than `repo`).
        assert_eq!(
            spellings.expand("the name of my repo"),
            "the name of my repository"
        );
        assert_eq!(
            spellings.expand("Repos in a report"),
            "repositories in a report"
        );
        // Of `policy` and `polygon`, in three names and in one.
        assert_eq!(spellings.expand("a pol"), "a policy");
    }

    #[test]
    fn a_word_the_model_reads_whole_an_inflection_or_a_name_as_written_is_left_alone() {
        let spellings = spellings(REPOSITORIES, VOCABULARY);
        let unchanged = [
            // Read whole by the model.
            "the report",
            // `skus` only inflects `sku`, which names use as often.
            "a sku of the skus",
            // The names use `admin` (twice) more than `administrator` (once).
            "the admin",
            // Too short to be clipped, or no name word begins it.
            "re or zzz",
            // Identifiers and acronyms are names and initials, not clipped words.
            "repoName or REPO",
        ];
        assert_unchanged(&spellings, &unchanged);
        // Without a model nothing is embedded, and no word is taken for clipped.
        assert_eq!(without_model(REPOSITORIES).expand("my repo"), "my repo");
    }

    #[test]
    fn an_adjective_after_how_is_read_as_the_attribute_names_use() {
        let sdl = r#"
            type Query { device: Device, track: Track, file: File }
            type Device { volumePercent: Int, weight: Float }
            type Track { durationMs: Int, length: Int }
            type File { sizeBytes: Int }
        "#;
        let spellings = without_model(sdl);
        assert_reads(
            &spellings,
            &[
                // `loud`: volume, loudness, intensity; the names use only `volume`.
                ("How loud is the speaker?", "How volume is the speaker?"),
                // `long`: duration, then length; both named, WordNet's order decides.
                ("how long is the song", "how duration is the song"),
                // `huge` has no attribute of its own: it is a satellite of `large`, whose is size.
                ("how huge is the file", "how size is the file"),
            ],
        );
        let unchanged = [
            // Not after `how`: an adjective describes, it does not ask for a degree.
            "a loud song",
            // `many`: numerousness, which no name uses.
            "how many songs",
            // Not an adjective WordNet gives an attribute.
            "how often",
        ];
        assert_unchanged(&spellings, &unchanged);
    }

    #[test]
    fn the_verb_of_a_who_question_is_followed_by_its_agent_as_names_spell_it() {
        let sdl = r#"
            type Query { group: ReactionGroup, user: User, commit: Commit }
            type ReactionGroup { reactors: [User], content: String }
            type User { followers: [User], name: String }
            type Commit { committer: User, committedDate: String }
        "#;
        let spellings = without_model(sdl);
        assert_reads(
            &spellings,
            &[
                (
                    "who reacted with an emoji",
                    "who reacted reactors with an emoji",
                ),
                // After auxiliaries; the verb's `-ing` or `-s` goes before the agent ending.
                ("Who is following me?", "Who is following followers me?"),
                ("who's following me", "who's following followers me"),
                (
                    "people who follow the user",
                    "people who follow followers the user",
                ),
                // `committed` less `-ed` is `committ`: `committer`.
                ("who committed it", "who committed committer it"),
            ],
        );
        let unchanged = [
            // No name spells an agent of `made` or `wrote`.
            "who made it, who wrote it",
            // Not the verb of a `who`.
            "the users it followed",
            "when was it committed",
        ];
        assert_unchanged(&spellings, &unchanged);
    }

    #[test]
    fn a_word_neither_the_model_nor_the_schema_knows_is_read_as_the_dictionary_reads_it() {
        let sdl = r#"
            type Query { customer: Customer }
            "A customer of the shop."
            type Customer { "Addresses the customer saved." addresses: [String], coupon: String }
        "#;
        // The model reads every word of these questions whole but `shopper` and `coupons`.
        let vocabulary = [
            "a",
            "the",
            "saved",
            "addresses",
            "customer",
            "client",
            "of",
            "my",
        ];
        let spellings = spellings(sdl, &vocabulary);
        assert_reads(
            &spellings,
            &[
                // WordNet's first sense of `shopper` is a kind of {customer, client}.
                (
                    "a shopper's saved addresses",
                    "a customer's saved addresses",
                ),
                ("Shoppers of the shop", "customers of the shop"),
            ],
        );
        let unchanged = [
            // The schema writes `coupon`: it is matched as written.
            "my coupons",
            // The model reads `customer` whole; an identifier or capitals are names.
            "the customer, shopperName, SHOPPER",
        ];
        assert_unchanged(&spellings, &unchanged);
        // Without a model nothing is embedded, and nothing is read through the dictionary.
        assert_unchanged(&without_model(sdl), &["a shopper's saved addresses"]);
    }

    #[test]
    fn plurals_follow_english_spelling() {
        for (word, plural) in [
            ("repository", "repositories"),
            ("day", "days"),
            ("branch", "branches"),
            ("status", "statuses"),
            ("box", "boxes"),
            ("artist", "artists"),
        ] {
            assert_eq!(plural_of(word), plural);
        }
    }
}
