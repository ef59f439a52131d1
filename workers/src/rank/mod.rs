//! Ranking: from the candidates of the lexical index and the vector shards to one ordered list,
//! one entry per member, scores in [0, 1].
//!
//! [`stages::fuse`] combines both lists, each member's evidence weighed by its prior and by
//! what the question's shape asks for; then the re-ranking stages [`Params::stages`] lists run
//! in order, each re-sorting (ties by coordinate, so the order is deterministic). Every number
//! they use is a field of [`Params`]; docs/RANKING.md gives each stage with its numbers, its
//! tests and the measurement that kept it.

pub(crate) mod candidates;
pub mod features;
pub mod params;
pub mod stages;

use wayfinder_supergraph::MemberId;

pub use params::{Fusion, Params, ParamsError, Priors, Stage};

use crate::embed::tokens::QueryTokens;
use crate::embed::Embedding;
use crate::index::generation::Generation;
use crate::index::visibility::Visibility;
use crate::query::Analysis;

/// The question's embeddings: its own and those of the phrases [`Analysis`] read from it.
#[derive(Default)]
pub(crate) struct Embedded<'e> {
    pub question: Option<&'e Embedding>,
    pub owner: Option<&'e Embedding>,
    pub answer: Option<&'e Embedding>,
    pub verb: Option<&'e Embedding>,
}

/// Runs the re-ranking stages `params` lists, in its order, over the fused list `ranked`.
/// Stages that need an embedding the question lacks (no model, or no such phrase) do nothing.
/// Records on `span` which evidence was matched.
pub(crate) fn rerank(
    generation: &Generation,
    ranked: &mut Vec<(MemberId, f32)>,
    analysis: &Analysis<'_>,
    embedded: &Embedded<'_>,
    visibility: &Visibility,
    params: &Params,
    span: &tracing::Span,
) {
    let catalog = &generation.catalog;
    let documents = generation.documents();
    for stage in &params.stages {
        match stage {
            Stage::Thin => stages::demote_unnamed_thin(
                catalog,
                ranked,
                &analysis.terms,
                &generation.thin_names,
                params,
            ),
            Stage::Tokens => {
                let Some(tokens) = embedded
                    .question
                    .and_then(|q| QueryTokens::new(&q.tokens, generation.token_frequencies()))
                else {
                    continue;
                };
                stages::add_token_evidence(
                    catalog,
                    documents,
                    ranked,
                    analysis.intent,
                    params,
                    |m| generation.member_tokens(m).map(|t| tokens.match_score(t)),
                );
                span.record("token_matched", true);
            }
            Stage::Owner => {
                let (Some(owner), Some(vector)) = (&analysis.owner, embedded.owner) else {
                    continue;
                };
                stages::add_owner_evidence(
                    catalog,
                    ranked,
                    owner.listed,
                    params,
                    like(generation, vector),
                );
                span.record("owner_matched", true);
            }
            Stage::Answer => {
                let Some(vector) = embedded.answer else {
                    continue;
                };
                stages::add_answer_evidence(catalog, ranked, params, like(generation, vector));
                span.record("answer_matched", true);
            }
            Stage::Verb => {
                let Some(vector) = embedded.verb else {
                    continue;
                };
                stages::add_verb_evidence(catalog, ranked, params, like(generation, vector));
                span.record("verb_matched", true);
            }
            Stage::Path => stages::add_path_evidence(catalog, ranked, visibility, params),
            Stage::Deprecation => {
                stages::demote_deprecated(catalog, documents, ranked, visibility, params)
            }
            Stage::Named => {
                let named = stages::named_members(catalog, analysis.asked, visibility, ranked);
                stages::put_named_first(ranked, &named);
            }
            // Applied where the search reads the question, gathers candidates and fuses.
            Stage::Spelling
            | Stage::Intent
            | Stage::ActionCandidates
            | Stage::Priors
            | Stage::Narrowing
            | Stage::Outcome
            | Stage::Action => {}
        }
    }
}

/// A member's (or its type's) likeness to one of the question's phrases.
fn like<'a>(
    generation: &'a Generation,
    phrase: &'a Embedding,
) -> impl Fn(MemberId) -> Option<f32> + 'a {
    move |member| generation.similarity(member, &phrase.vector)
}
