//! Query intent: what the shape of a question says about the kind of member it wants, before
//! any index is consulted.
//!
//! An imperative ("cancel an order", "log in", "put songs on a playlist") asks to change
//! something, which in GraphQL is a mutation. The test is grammatical, not topical: the
//! question opens with a base-form verb followed by a determiner or a particle. Only closed
//! classes of English words are listed (determiners, particles, auxiliaries, question words),
//! plus the verbs that read rather than write (`get`, `list`, `find`, ...), whose imperatives
//! ask for a query field. Nothing here depends on a schema's vocabulary.

/// Words that open a question rather than an imperative, or that qualify what follows.
const NOT_A_VERB: &[&str] = &[
    "a", "all", "am", "an", "any", "are", "be", "been", "can", "could", "did", "do", "does",
    "each", "every", "had", "has", "have", "how", "if", "is", "just", "may", "might", "must", "my",
    "no", "not", "only", "our", "shall", "should", "some", "that", "the", "their", "these", "this",
    "those", "was", "were", "what", "when", "where", "whether", "which", "who", "whom", "whose",
    "why", "will", "would", "your",
];

/// Verbs whose imperative reads (`list the forks`) or shapes what is read (`sort the
/// results`): they ask for a query field or its arguments.
const READING_VERBS: &[&str] = &[
    "browse", "check", "compare", "count", "display", "fetch", "filter", "find", "get", "give",
    "group", "limit", "list", "look", "lookup", "order", "paginate", "query", "read", "retrieve",
    "return", "search", "see", "show", "sort", "tell", "view",
];

/// What may follow an imperative verb: a determiner (`cancel an order`, `assign someone`) or a
/// particle of a phrasal verb (`log in`, `sign up`).
const AFTER_A_VERB: &[&str] = &[
    "a",
    "all",
    "an",
    "another",
    "any",
    "away",
    "back",
    "down",
    "each",
    "every",
    "her",
    "his",
    "in",
    "its",
    "my",
    "new",
    "off",
    "on",
    "our",
    "out",
    "over",
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
    "up",
    "your",
];

/// What a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Intent {
    /// The question asks to change something: mutation fields are what it wants.
    pub action: bool,
}

impl Intent {
    pub fn of(query: &str) -> Self {
        let mut words = query
            .split(|c: char| !(c.is_alphabetic() || c == '\''))
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase);
        let (Some(first), Some(second)) = (words.next(), words.next()) else {
            return Intent::default();
        };
        // A plural noun (`orders that ...`) is not a base-form verb; `dismiss`, `access` are.
        let plural = first.ends_with('s') && !first.ends_with("ss");
        let action = !plural
            && !NOT_A_VERB.contains(&first.as_str())
            && !READING_VERBS.contains(&first.as_str())
            && AFTER_A_VERB.contains(&second.as_str());
        Intent { action }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imperatives_that_write_are_actions() {
        for query in [
            "cancel an order",
            "log in and get a token",
            "assign someone to an issue",
            "Archive the repository",
        ] {
            assert!(Intent::of(query).action, "{query}");
        }
    }

    #[test]
    fn questions_descriptions_and_reads_are_not() {
        for query in [
            "is the pull request a draft",
            "how many stars does it have",
            "orders that were cancelled",
            "list the forks of a repository",
            "get the current user",
            "sort the results by date",
            "Repository.owner",
            "pause",
            "",
        ] {
            assert!(!Intent::of(query).action, "{query}");
        }
    }
}
