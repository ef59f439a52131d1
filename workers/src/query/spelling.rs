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

use crate::index::spellings::Spellings;
use crate::query::intent::AUXILIARIES;
use crate::query::words::Words;

/// The question with each acronym, clipped word, degree, agent and unknown word spelled out,
/// borrowed when it has none. Only identifier-like words are read ([`Words::identifiers`]).
pub fn spell_out<'q>(spellings: &Spellings, question: &Words<'q>) -> Cow<'q, str> {
    let query = question.text();
    let mut out = String::new();
    let mut copied = 0;
    let mut previous = "";
    // After `who` and any auxiliaries (`who is following`), until its verb.
    let mut asks_who = false;
    for (start, word) in question.identifiers() {
        let after = std::mem::replace(&mut previous, word);
        let verb_of_who = asks_who && !auxiliary(word);
        asks_who = word.eq_ignore_ascii_case("who") || (asks_who && !verb_of_who);
        let Some(words) = spellings
            .acronym(word)
            .or_else(|| spellings.clipped(word))
            .or_else(|| spellings.degree(after, word))
            .or_else(|| verb_of_who.then(|| spellings.agent(word)).flatten())
            .or_else(|| spellings.dictionary(word))
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

/// Whether `word` stands between `who` and its verb (`who is following`, `who's following`): an
/// auxiliary, or the `s` of a contraction.
fn auxiliary(word: &str) -> bool {
    word.eq_ignore_ascii_case("s") || AUXILIARIES.iter().any(|a| a.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wayfinder_supergraph::Catalog;

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
            assert_eq!(
                spell_out(spellings, &Words::of(question)),
                *read,
                "{question}"
            );
        }
    }

    fn assert_unchanged(spellings: &Spellings, texts: &[&str]) {
        for text in texts {
            assert!(
                matches!(spell_out(spellings, &Words::of(text)), Cow::Borrowed(_)),
                "{text}"
            );
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
            spell_out(&acronyms, &Words::of("approve a PR, or list PRs.")),
            "approve a pull request, or list pull requests."
        );
        assert_eq!(
            spell_out(&acronyms, &Words::of("PRR on the CMS")),
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
        assert_eq!(spell_out(&acronyms, &Words::of("the PRR")), "the PRR");
        assert_eq!(
            spell_out(&acronyms, &Words::of("the PR")),
            "the pull request"
        );
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
            spell_out(&spellings, &Words::of("the name of my repo")),
            "the name of my repository"
        );
        assert_eq!(
            spell_out(&spellings, &Words::of("Repos in a report")),
            "repositories in a report"
        );
        // Of `policy` and `polygon`, in three names and in one.
        assert_eq!(spell_out(&spellings, &Words::of("a pol")), "a policy");
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
        assert_eq!(
            spell_out(&without_model(REPOSITORIES), &Words::of("my repo")),
            "my repo"
        );
    }

    #[test]
    fn an_adjective_after_how_is_read_as_the_attribute_names_use() {
        let sdl = r#"
            type Query { device: Device, flight: Flight, file: File }
            type Device { volumePercent: Int, weight: Float }
            type Flight { durationMs: Int, length: Int }
            type File { sizeBytes: Int }
        "#;
        let spellings = without_model(sdl);
        assert_reads(
            &spellings,
            &[
                // `loud`: volume, loudness, intensity; the names use only `volume`.
                ("How loud is the alarm?", "How volume is the alarm?"),
                // `long`: duration, then length; both named, WordNet's order decides.
                ("how long is the flight", "how duration is the flight"),
                // `huge` has no attribute of its own: it is a satellite of `large`, whose is size.
                ("how huge is the file", "how size is the file"),
            ],
        );
        let unchanged = [
            // Not after `how`: an adjective describes, it does not ask for a degree.
            "a loud alarm",
            // `many`: numerousness, which no name uses.
            "how many alarms",
            // Not an adjective WordNet gives an attribute.
            "how often",
        ];
        assert_unchanged(&spellings, &unchanged);
    }

    #[test]
    fn the_verb_of_a_who_question_is_followed_by_its_agent_as_names_spell_it() {
        let sdl = r#"
            type Query { group: VisitGroup, user: User, commit: Commit }
            type VisitGroup { visitors: [User], content: String }
            type User { followers: [User], name: String }
            type Commit { committer: User, committedDate: String }
        "#;
        let spellings = without_model(sdl);
        assert_reads(
            &spellings,
            &[
                (
                    "who visited with an audio guide",
                    "who visited visitors with an audio guide",
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
            assert_eq!(crate::index::spellings::plural_of(word), plural);
        }
    }
}
