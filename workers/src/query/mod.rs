//! Query analysis: what a question says before any index is read.
//!
//! [`intent`] reads its shape (an action, a list narrowed down, an owner, what a read asks
//! for); [`spelling`] spells out the words the model reads better written in full, from the
//! schema's own names. Both read the question's [`words`], scanned once. [`phrases`] splits
//! a question that lists several things into them.

pub mod intent;
pub mod phrases;
pub mod spelling;
pub mod words;

use std::borrow::Cow;

use crate::index::spellings::Spellings;
use intent::{action_verb, answer_phrase, Intent, Owner};
use words::Words;

/// One question, read once: every ranking stage reads its words from here.
#[derive(Debug, Clone)]
pub struct Analysis<'q> {
    /// The question as written, trimmed: the named-member rule reads identifiers from it.
    pub asked: &'q str,
    /// Its words as the lexical index reads them (stemmed), for the lexical search and for
    /// thin members the question names.
    pub terms: Vec<String>,
    /// The question as the model reads it: acronyms, clipped words, degrees, agents and
    /// unknown words spelled out ([`spelling`]); the phrases below are read from it.
    pub read: Cow<'q, str>,
    /// Its shape, read from the words as written.
    pub intent: Intent,
    /// What the members it asks about belong to.
    pub owner: Option<Owner>,
    /// What a read asks for (`None` for an action).
    pub answer: Option<String>,
    /// What an action does, when it does not say how ([`Intent::manner`]).
    pub verb: Option<String>,
    /// The things the question lists, each searched on its own ([`phrases`]).
    pub phrases: Vec<String>,
}

impl<'q> Analysis<'q> {
    /// Reads `asked` (trimmed), whose lexical `terms` the index gave; spelled out when
    /// `spellings` are given, its shape read only when `intent` is.
    pub fn of(
        asked: &'q str,
        terms: Vec<String>,
        spellings: Option<&Spellings>,
        intent: bool,
    ) -> Self {
        let written = Words::of(asked);
        let read = match spellings {
            Some(spellings) => spelling::spell_out(spellings, &written),
            None => Cow::Borrowed(asked),
        };
        let intent = if intent {
            Intent::of(&written)
        } else {
            Intent::default()
        };
        // The phrases are read from the words spelled out.
        let spelled;
        let words = match read {
            Cow::Borrowed(_) => &written,
            Cow::Owned(ref text) => {
                spelled = Words::of(text);
                &spelled
            }
        };
        let owner = Owner::of(words);
        // An action asks for a change, whatever its object's words name.
        let answer = (!intent.action).then(|| answer_phrase(words)).flatten();
        // An action that says how to make its change wants what the mutation takes as much as
        // the mutation, so its verb does not favour mutations.
        let verb = (intent.action && !intent.manner)
            .then(|| action_verb(words))
            .flatten();
        Analysis {
            asked,
            terms,
            read,
            intent,
            owner,
            answer,
            verb,
            phrases: phrases::of(asked),
        }
    }
}
