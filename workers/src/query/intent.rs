//! Query intent: what the shape of a question says about the kind of member it wants, before
//! any index is consulted.
//!
//! An imperative ("reserve a hotel room", "sign in", "set where a van parks") asks to change
//! something, which in GraphQL is a mutation. A plural noun qualified by a clause ("loans
//! that were renewed", "vans coming from a depot") asks for a list narrowed down, which is an
//! argument of a read, or a value or input field such an argument takes; so does a read that
//! says by what means it finds what it wants ("look up a booking by its number"). The tests
//! are grammatical, not topical: an imperative opens with a base-form verb followed by a
//! determiner, a particle or a question word; one that goes on to say how or on what condition
//! ("archive the guest list using the API") wants what the mutation takes too. A change
//! followed by a read ("restock then get the latest count", "after refreshing, show the new
//! forecast") wants what the mutation returns. A question about a property names what has it
//! (`a guest's room number`, `the seats left on a coach trip`): that owner is the type whose
//! fields it wants; a narrowed list's plural noun names what owns the members that narrow it.
//! A read names what it wants first (`my usual desserts based on ...`): that is the type its
//! answer returns. Only closed classes of English words are listed (determiners, particles,
//! prepositions, auxiliaries, question words, clause openers), plus the verbs that read rather
//! than write (`get`, `list`, `find`, ...), whose imperatives ask for a query field. Nothing
//! here depends on a schema's vocabulary.

use crate::query::words::Words;

/// Words that qualify what follows them rather than act: determiners and quantifiers, `if`,
/// `just`, `only`, `not`. With the auxiliaries and the question words, they cannot be an
/// imperative's verb ([`not_a_verb`]).
const QUALIFIERS: &[&str] = &[
    "a", "all", "an", "any", "each", "every", "if", "just", "my", "no", "not", "only", "our",
    "some", "that", "the", "their", "these", "this", "those", "your",
];

/// Verbs whose imperative reads (`list the rooms`) or shapes what is read (`sort the
/// results`): they ask for a query field or its arguments.
const READING_VERBS: &[&str] = &[
    "browse", "check", "compare", "count", "display", "fetch", "filter", "find", "get", "give",
    "group", "limit", "list", "look", "lookup", "order", "paginate", "query", "read", "retrieve",
    "return", "search", "see", "show", "sort", "tell", "view",
];

/// Words that open a clause qualifying the noun before them (participles, ending in -ed or
/// -ing, qualify it too).
const CLAUSE_OPENERS: &[&str] = &["that", "where", "which", "who", "whose", "with", "without"];

/// Words that may come before an imperative's verb.
const BEFORE_A_VERB: &[&str] = &["just", "only", "please"];

/// Words that open an adjunct saying by what means a read finds what it wants.
const MEANS: &[&str] = &["by", "using", "via"];

/// Words that open an adjunct saying how or on what condition a change is made.
const MANNER: &[&str] = &["if", "unless", "using", "via", "when", "whenever"];

/// Determiners that open the noun phrase of an owner after a preposition.
const DETERMINERS: &[&str] = &[
    "a", "an", "any", "each", "every", "her", "his", "its", "my", "our", "some", "that", "the",
    "their", "this", "your",
];

/// Words by which a question speaks of whoever calls the API.
const FIRST_PERSON: &[&str] = &["i", "me", "mine", "my", "myself"];

/// The caller, in the words APIs commonly describe it with: what a first-person question is
/// about when it names no other owner (`my saved recipes` are the authenticated user's).
const THE_CALLER: &str = "the authenticated user";

/// Prepositions that attach a property to its owner (`the seats left on a coach trip`).
const OWNER_PREPOSITIONS: &[&str] = &["for", "in", "of", "on"];

/// Words that say what is the case rather than what is wanted when they follow a noun phrase
/// (`coffee is being served`): auxiliaries and copulas.
pub(crate) const AUXILIARIES: &[&str] = &[
    "am", "are", "be", "been", "can", "could", "did", "do", "does", "had", "has", "have", "is",
    "may", "might", "must", "shall", "should", "was", "were", "will", "would",
];

/// Words that open a question rather than name what it asks for.
pub(crate) const QUESTION_WORDS: &[&str] = &[
    "how", "what", "when", "where", "whether", "which", "who", "whom", "whose", "why",
];

/// Words that end an owner's noun phrase.
const PHRASE_ENDS: &[&str] = &[
    "and", "at", "by", "from", "i", "me", "or", "to", "we", "with", "without",
];

/// Particles of English phrasal verbs (`log in`, `back up`, `sign out`).
const PARTICLES: &[&str] = &[
    "away", "back", "down", "in", "off", "on", "out", "over", "up",
];

/// What may follow an imperative verb besides a particle ([`PARTICLES`]): a determiner
/// (`reserve a room`, `assign someone`), or a question word opening the clause that is the
/// verb's object (`set where the van parks`, `choose which guest pays`).
const AFTER_A_VERB: &[&str] = &[
    "a",
    "all",
    "an",
    "another",
    "any",
    "each",
    "every",
    "her",
    "his",
    "how",
    "its",
    "my",
    "new",
    "our",
    "some",
    "somebody",
    "someone",
    "something",
    "that",
    "the",
    "their",
    "these",
    "this",
    "those",
    "what",
    "where",
    "which",
    "your",
];

/// What a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Intent {
    /// The question asks to change something: mutation fields are what it wants.
    pub action: bool,
    /// The question asks for a list narrowed down, or says by what means a read finds what it
    /// wants (`look up a booking by its number`): what narrows reads is what it wants.
    pub filter: bool,
    /// The imperative says how or when to make its change (`archive the guest list using the
    /// API`, `bake the bread when the oven is hot`): what the mutation takes is wanted as much
    /// as it.
    pub manner: bool,
    /// The question makes a change and then reads what came of it (`restock then get the latest
    /// count`, `after refreshing, show the new forecast`): what the mutation returns is wanted.
    pub outcome: bool,
}

impl Intent {
    pub fn of(question: &Words<'_>) -> Self {
        let words = question.letters();
        let narrows = narrowing_clause(words).is_some();
        // `please renew my membership`, `only remove the loan if ...`: still imperatives.
        let words = from_the_verb(words);
        let (Some(first), Some(second)) = (words.first(), words.get(1)) else {
            return Intent {
                filter: narrows,
                ..Intent::default()
            };
        };
        // A plural noun (`loans that ...`) is not a base-form verb; `dismiss`, `access` are.
        let writes_first =
            !plural(first) && !not_a_verb(first) && !READING_VERBS.contains(&first.as_str());
        let later = |among: &[&str]| words[1..].iter().any(|w| among.contains(&w.as_str()));
        let action = writes_first && follows_a_verb(second);
        let manner = action && later(MANNER);
        // `after refreshing, ...`; or `restock then get ...`, a change and then a read.
        let after_a_change = first == "after" && second.len() > 4 && second.ends_with("ing");
        let outcome = after_a_change || (writes_first && later(&["then"]));
        // `look up a booking by its number`, `the next page using a cursor`: what the read goes
        // by is an argument, as what narrows a list is.
        let filter = narrows || (!action && later(MEANS));
        Intent {
            action,
            filter,
            manner,
            outcome,
        }
    }
}

/// What the members a question asks about belong to, in the question's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub phrase: String,
    /// The phrase names what a narrowed list holds (`loans` in `loans where the fee was partly
    /// paid`) rather than the holder of a property.
    pub listed: bool,
}

impl Owner {
    /// The owner a question names ([`owner_phrase`]); or else the words before a clause that
    /// narrows a list (`search results that expired` -> `search results`), since what narrows
    /// a list belongs to the things listed; or else, in a question in the first person (`my
    /// saved recipes`), the caller.
    pub fn of(question: &Words<'_>) -> Option<Owner> {
        if let Some(phrase) = owner_phrase(question) {
            return Some(Owner {
                phrase,
                listed: false,
            });
        }
        let words = question.letters();
        if let Some(clause) = narrowing_clause(words) {
            return Some(Owner {
                phrase: words[..clause].join(" "),
                listed: true,
            });
        }
        let first_person = words.iter().any(|w| FIRST_PERSON.contains(&w.as_str()));
        first_person.then(|| Owner {
            phrase: THE_CALLER.to_string(),
            listed: false,
        })
    }
}

/// The noun phrase naming what a question's subject belongs to, as written: a possessive with
/// up to two content words before it (`current guest's room number` -> `current guest`), or
/// the words after `of`, `on`, `for` or `in` and a determiner, up to three and up to a function
/// word (`remaining seats on a coach trip` -> `coach trip`); the first in the question.
fn owner_phrase(question: &Words<'_>) -> Option<String> {
    let words = question.alphanumeric();
    for (i, word) in words.iter().enumerate() {
        if let Some(owner) = word.strip_suffix("'s").filter(|o| !o.is_empty()) {
            let before = words[..i]
                .iter()
                .rev()
                .take(2)
                .take_while(|w| !function_word(w));
            let mut phrase: Vec<&str> = before.map(String::as_str).collect();
            phrase.reverse();
            phrase.push(owner);
            return Some(phrase.join(" "));
        }
        let opens = OWNER_PREPOSITIONS.contains(&word.as_str())
            && words
                .get(i + 1)
                .is_some_and(|d| DETERMINERS.contains(&d.as_str()));
        if opens {
            let phrase: Vec<&str> = words[i + 2..]
                .iter()
                .take_while(|w| !function_word(w))
                .take(3)
                .map(|w| w.strip_suffix("'s").unwrap_or(w))
                .collect();
            if !phrase.is_empty() {
                return Some(phrase.join(" "));
            }
        }
    }
    None
}

/// The noun phrase naming what a read asks for, as written: the words it opens with, after a
/// reading verb (`get`, `list`, ...) and what may follow a verb (`the`, `my`, `all`, `up`),
/// up to three and up to a function word, a clause opener, a word of means or a participle
/// (`my usual desserts based on past visits` -> `usual desserts`, `get cabins priced for a
/// weekend` -> `cabins`); after a possessive, which names what owns the answer (`a chef's best
/// known cakes` -> `best known cakes`). `None` for a question that opens with a question word
/// or an auxiliary, and for a noun phrase followed by an auxiliary or copula (`coffee is being
/// served from a kiosk`): that states what is the case, and the question asks about it.
pub fn answer_phrase(question: &Words<'_>) -> Option<String> {
    let words = question.alphanumeric();
    let mut rest = match words.split_first() {
        Some((first, rest)) if READING_VERBS.contains(&first.as_str()) => rest,
        _ => words,
    };
    let opening = |w: &str| (follows_a_verb(w) || w == "me") && !QUESTION_WORDS.contains(&w);
    while let Some((_, tail)) = rest.split_first().filter(|(w, _)| opening(w)) {
        rest = tail;
    }
    if not_a_verb(rest.first()?) {
        return None;
    }
    let ends = |w: &str| {
        function_word(w) || CLAUSE_OPENERS.contains(&w) || MEANS.contains(&w) || participle(w)
    };
    let length = rest.iter().take_while(|w| !ends(w)).count();
    if rest
        .get(length)
        .is_some_and(|w| AUXILIARIES.contains(&w.as_str()))
    {
        return None;
    }
    // What a possessive names owns the answer (`a chef's best known cakes`): the answer follows it.
    let phrase = &rest[..length];
    let owned = phrase.iter().rposition(|w| w.ends_with("'s"));
    let phrase = &phrase[owned.map_or(0, |p| p + 1)..];
    let phrase: Vec<&str> = phrase.iter().take(3).map(String::as_str).collect();
    (!phrase.is_empty()).then(|| phrase.join(" "))
}

/// What an action does, whatever it does it to: the verb of a question [`Intent::of`] reads as
/// an action, with the particle of a phrasal verb (`log in`, `sign up`).
pub fn action_verb(question: &Words<'_>) -> Option<String> {
    let words = question.letters();
    let words = from_the_verb(words);
    let verb = words.first()?;
    Some(match words.get(1) {
        Some(particle) if PARTICLES.contains(&particle.as_str()) => format!("{verb} {particle}"),
        _ => verb.clone(),
    })
}

/// A question's words from where an imperative's verb would be: past a leading `please`,
/// `just` or `only`.
fn from_the_verb(words: &[String]) -> &[String] {
    match words.split_first() {
        Some((first, rest)) if BEFORE_A_VERB.contains(&first.as_str()) => rest,
        _ => words,
    }
}

/// Whether `word` may follow an imperative verb: one of [`AFTER_A_VERB`] or a particle.
fn follows_a_verb(word: &str) -> bool {
    AFTER_A_VERB.contains(&word) || PARTICLES.contains(&word)
}

/// Words that open a question or qualify what follows, never an imperative's verb.
fn not_a_verb(word: &str) -> bool {
    QUALIFIERS.contains(&word) || AUXILIARIES.contains(&word) || QUESTION_WORDS.contains(&word)
}

/// A word that ends a noun phrase: a determiner, a preposition that attaches one, a
/// conjunction or pronoun, or a word that opens a question.
fn function_word(word: &str) -> bool {
    not_a_verb(word)
        || DETERMINERS.contains(&word)
        || OWNER_PREPOSITIONS.contains(&word)
        || PHRASE_ENDS.contains(&word)
}

/// Ends like an English participle (`created`, `coming`), long enough not to be `red` or `king`.
fn participle(word: &str) -> bool {
    word.len() > 4 && (word.ends_with("ed") || word.ends_with("ing"))
}

/// Ends like an English plural noun (`loans`), not like `dismiss` or `access`.
fn plural(word: &str) -> bool {
    word.ends_with('s') && !word.ends_with("ss")
}

/// Where a clause narrowing a list opens: after a plural noun, in the first three words and
/// after content words only, a word that opens a clause about it (`reviews that ...`,
/// `loaves baked from ...`). After `of` the plural is not what is asked for: `share of loans
/// that lapse` asks for a share.
fn narrowing_clause(words: &[String]) -> Option<usize> {
    let opens_clause = |word: &str| CLAUSE_OPENERS.contains(&word) || participle(word);
    (1..words.len().min(4)).find(|&i| {
        opens_clause(&words[i])
            && words[i - 1].len() > 2
            && plural(&words[i - 1])
            && words[..i].iter().all(|w| w != "of" && !not_a_verb(w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `flag` holds for every query of `yes` and for none of `no`.
    fn holds(flag: fn(Intent) -> bool, yes: &[&str], no: &[&str]) {
        for query in yes {
            assert!(flag(Intent::of(&Words::of(query))), "{query}");
        }
        for query in no {
            assert!(!flag(Intent::of(&Words::of(query))), "{query}");
        }
    }

    #[test]
    fn imperatives_that_write_are_actions() {
        holds(
            |i| i.action,
            &[
                "reserve a hotel room",
                "sign in and fetch a session key",
                "assign someone to the night shift",
                "Archive the guest list",
                "set where the van should park",
                "choose which room type to book",
                "please renew my membership",
                "only remove the loan if the book is unchanged",
            ],
            &[
                "loans where the fee was only partly paid",
                "check whether the guest has these rooms on hold",
                "show which rooms are booked out",
                "how old is the oven",
                "only returned books",
                "just the vans that were serviced",
            ],
        );
    }

    #[test]
    fn an_action_may_say_how_or_when_to_make_its_change() {
        holds(
            |i| i.manner,
            &[
                "archive a guest list using the API",
                "bake the bread when the oven is hot",
                "delete the booking if it is expired",
            ],
            &[
                "reserve a hotel room",
                "bring the catalogue up to date with the archive",
                // Not an action: a condition on what is read.
                "vans that leave when loaded",
            ],
        );
    }

    #[test]
    fn a_change_then_a_read_asks_for_what_the_change_returns() {
        holds(
            |i| i.outcome,
            &[
                "after refreshing, show the new forecast",
                "restock then get the latest count",
                "Archive a guest list then list its rooms",
            ],
            &[
                "sign in and fetch a session key",
                "after the van departed, its route number",
                "what then",
                "loans then members",
            ],
        );
    }

    #[test]
    fn a_plural_noun_with_a_clause_about_it_narrows_a_list() {
        holds(
            |i| i.filter,
            &[
                "reviews that already have a staff reply",
                "late fees that someone waived",
                "loaves baked from frozen dough",
                "vans coming from a regional depot",
                "members with staff privileges",
                // A read that says what it goes by.
                "look up a guest by email",
                "the last page of guests using a cursor",
            ],
            &[
                "reserve a room by its number",
                "share of loans that should lapse",
                "is the reservation confirmed",
                "the loans that were renewed",
                "rooms I can stay in",
                "reserve a hotel room",
                "address",
                "",
            ],
        );
    }

    #[test]
    fn a_narrowed_list_or_the_first_person_names_an_owner() {
        let owner = |q: &str| Owner::of(&Words::of(q)).map(|o| (o.phrase, o.listed));
        assert_eq!(
            owner("search results that expired"),
            Some(("search results".to_string(), true))
        );
        assert_eq!(
            owner("late fees that someone waived"),
            Some(("late fees".to_string(), true))
        );
        // A named owner comes first.
        assert_eq!(
            owner("animals that were fed in the enclosure"),
            Some(("enclosure".to_string(), false))
        );
        assert_eq!(owner("reserve a hotel room"), None);
        // The first person speaks of the caller, unless it names another owner.
        assert_eq!(
            owner("my saved recipes"),
            Some((THE_CALLER.to_string(), false))
        );
        assert_eq!(
            owner("pastries stocked in my bakery"),
            Some(("bakery".to_string(), false))
        );
    }

    #[test]
    fn an_owner_is_a_possessive_or_follows_a_preposition_and_a_determiner() {
        for (query, owner) in [
            ("current guest's room number", Some("current guest")),
            ("get the signed in guest's booking", Some("guest")),
            ("remaining seats on a coach trip", Some("coach trip")),
            (
                "how long baking takes for a sourdough loaf",
                Some("sourdough loaf"),
            ),
            (
                "only certain animal types in a zoo's records",
                Some("zoo records"),
            ),
            ("staff signed up to alerts for a library", Some("library")),
            ("reserve a hotel room", None),
            ("loaves in bread baskets", None),
            ("'s", None),
        ] {
            assert_eq!(owner_phrase(&Words::of(query)).as_deref(), owner, "{query}");
        }
    }

    #[test]
    fn a_read_names_what_it_wants_first() {
        for (query, answer) in [
            (
                "my usual desserts based on past visits",
                Some("usual desserts"),
            ),
            ("get cabins priced for a given weekend", Some("cabins")),
            ("look up a pastry by its name", Some("pastry")),
            ("show me all open hotel rooms", Some("open hotel rooms")),
            (
                "phone number to call a bakery in the town",
                Some("phone number"),
            ),
            ("late fees that someone waived", Some("late fees")),
            ("a chef's best known cakes", Some("best known cakes")),
            ("a guest's saved preferences", None),
            // A question, or a statement about a noun phrase, asks about it.
            ("how old is the oven", None),
            ("show which rooms are booked out", None),
            ("coffee is being served from a kiosk", None),
            ("only returned books", None),
            ("my", None),
            ("'s", None),
            ("", None),
        ] {
            assert_eq!(
                answer_phrase(&Words::of(query)).as_deref(),
                answer,
                "{query}"
            );
        }
    }

    #[test]
    fn an_action_does_what_its_verb_says() {
        for (query, verb) in [
            ("create a guest profile", Some("create")),
            ("Sign in and fetch a session key", Some("sign in")),
            ("please renew my membership", Some("renew")),
            ("back up the database", Some("back up")),
            (
                "only remove the loan if the book is unchanged",
                Some("remove"),
            ),
            ("", None),
        ] {
            assert_eq!(action_verb(&Words::of(query)).as_deref(), verb, "{query}");
        }
    }

    #[test]
    fn questions_descriptions_and_reads_are_not() {
        for query in [
            "is the reservation confirmed",
            "how warm does the oven get",
            "loans that were renewed",
            "list the rooms of a hotel",
            "get the current user",
            "sort the results by date",
            "Hotel.manager",
            "snooze",
            "",
        ] {
            assert!(!Intent::of(&Words::of(query)).action, "{query}");
        }
    }
}
