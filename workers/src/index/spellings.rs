//! Spelling tables: how the words of a question are spelled out for the model, made from the
//! schema's own names and a general English lexicon when a catalog is published.
//!
//! [`crate::query::spelling`] says what is spelled out and walks a question with these tables;
//! they are built from the whole catalog, so every tenant's query is spelled out alike.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::{Arc, LazyLock};

use wayfinder_supergraph::{Catalog, MemberKind};

use crate::index::document::split_identifier;

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

    pub(crate) fn acronym(&self, word: &str) -> Option<String> {
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
    pub(crate) fn clipped(&self, word: &str) -> Option<String> {
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
    pub(crate) fn agent(&self, verb: &str) -> Option<String> {
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
    pub(crate) fn dictionary(&self, word: &str) -> Option<String> {
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
    pub(crate) fn degree(&self, before: &str, word: &str) -> Option<String> {
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
pub(crate) fn plural_of(word: &str) -> String {
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
