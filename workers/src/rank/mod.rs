//! Ranking: from one question to one ordered page of members, one entry per member, scores in
//! [0, 1], in four steps, one module each:
//!
//! 1. [`candidates`]: the question is read ([`crate::query::Analysis`]) and searched in the
//!    lexical index, in the vector shards and among the mutation fields, and phrase by phrase
//!    when it lists things ([`gather`]); what the best members lead to joins them.
//! 2. [`features`]: a row of numbers for each candidate.
//! 3. [`score`]: the fitted ranker scores the rows ([`order`]); deprecated members then go
//!    below their replacements and the members the question names outright first.
//! 4. [`page`]: the request's page, with its cursors.
//!
//! Without the question's vector (no model, vectors still being made, or an overloaded search
//! answered lexically), or with `learned: false`, [`stages::fuse`] combines the lists and the
//! re-ranking stages [`Params::stages`] lists run in order instead (docs/RANKING.md). Every
//! number either way is a field of [`Params`].

pub(crate) mod candidates;
pub mod features;
pub(crate) mod page;
pub mod params;
pub mod score;
pub mod stages;
pub mod trees;

use std::sync::Arc;

use wayfinder_supergraph::MemberId;

pub use params::{Fusion, Params, ParamsError, Priors, Stage};

use crate::embed::tokens::QueryTokens;
use crate::embed::Embedding;
use crate::index::generation::{Generation, SearchMode};
use crate::index::lexical::LexicalError;
use crate::index::vector::VectorError;
use crate::index::visibility::Visibility;
use crate::query::Analysis;
use candidates::Candidate;
use features::Row;
use score::Ranker;

/// An index failed while a question was searched.
#[derive(Debug, thiserror::Error)]
pub enum RankError {
    #[error(transparent)]
    Lexical(#[from] LexicalError),
    #[error(transparent)]
    Vector(#[from] VectorError),
}

/// What one question brings to the ranking: read once, searched in every index, embedded.
pub(crate) struct Gathered<'q> {
    pub analysis: Analysis<'q>,
    pub lexical: Vec<(MemberId, f32)>,
    pub vector: Vec<(MemberId, f32)>,
    /// The mutation fields most like the question, best first (the fitted ranker's only).
    pub mutations: Vec<(MemberId, f32)>,
    /// The nearest members of each phrase of a question that lists things.
    pub phrases: Vec<Vec<(MemberId, f32)>>,
    /// The question's embedding, its owner's, its answer's and its verb's.
    embedded: [Option<Arc<Embedding>>; 4],
    /// How many texts the search had embedded (or found in the query cache).
    pub texts: usize,
    pub mode: SearchMode,
}

impl Gathered<'_> {
    pub fn embedded(&self) -> Embedded<'_> {
        let [question, owner, answer, verb] = &self.embedded;
        Embedded {
            question: question.as_deref(),
            owner: owner.as_deref(),
            answer: answer.as_deref(),
            verb: verb.as_deref(),
        }
    }
}

/// Embeds some texts (a question and what is read from it), in order; `None` when the model
/// fails, and the search goes on lexically.
pub(crate) type Embed<'e> = dyn FnOnce(&[Option<&str>]) -> Option<Vec<Option<Arc<Embedding>>>> + 'e;

/// Reads `query` (trimmed) and searches it lexically; with `embed`, embeds it and searches the
/// vector shards. For the fitted ranker (`learned`), it also scores the mutation fields and, when
/// the question lists things, embeds and searches each phrase; for the stages, it embeds the
/// owner, answer and verb the question names: the fitted ranker does as well without them
/// (bench/RESULTS.md), and a search embeds one text fewer for each.
pub(crate) fn gather<'q>(
    generation: &Generation,
    query: &'q str,
    depth: usize,
    visibility: &Visibility,
    params: &Params,
    learned: bool,
    embed: Option<Box<Embed<'_>>>,
) -> Result<Gathered<'q>, RankError> {
    let query = query.trim();
    let mut mode = generation.mode();
    let analysis = Analysis::of(
        query,
        generation.lexical.terms(query),
        params
            .runs(Stage::Spelling)
            .then_some(&*generation.spellings),
        params.runs(Stage::Intent),
    );
    let lexical = {
        let span = tracing::info_span!(
            "wayfinder.lexical_search",
            candidates = tracing::field::Empty
        );
        let _entered = span.enter();
        let lexical = generation
            .lexical
            .search_terms(&analysis.terms, depth, visibility)?;
        span.record("candidates", lexical.len());
        lexical
    };
    let mut vector = Vec::new();
    let mut mutations = Vec::new();
    let mut phrases = Vec::new();
    let mut embedded = [None, None, None, None];
    let mut embedded_texts = 0;
    if let Some(embed) = embed {
        // A question that lists things is searched thing by thing too.
        let listed = analysis.phrases.len() > 1;
        fn staged(phrase: Option<&str>, learned: bool) -> Option<&str> {
            phrase.filter(|_| !learned)
        }
        let texts: Vec<Option<&str>> = [
            Some(analysis.read.as_ref()),
            staged(analysis.owner.as_ref().map(|o| o.phrase.as_str()), learned),
            staged(analysis.answer.as_deref(), learned),
            staged(analysis.verb.as_deref(), learned),
        ]
        .into_iter()
        .chain(
            analysis
                .phrases
                .iter()
                .filter(|_| listed && learned)
                .take(params.phrase_count)
                .map(|p| Some(p.as_str())),
        )
        .collect();
        embedded_texts = texts.iter().flatten().count();
        let found = embed(&texts);
        match found.as_deref() {
            Some([Some(q), owner, answer, verb, listed @ ..]) => {
                let span = tracing::info_span!(
                    "wayfinder.vector_search",
                    shards = generation.shards.len(),
                    candidates = tracing::field::Empty
                );
                let _entered = span.enter();
                // An action wants a mutation field, however far its words are from the
                // question's.
                let actions = analysis.intent.action && params.runs(Stage::ActionCandidates);
                vector = generation.vector_candidates(&q.vector, depth, actions, visibility)?;
                // Only the fitted ranker's candidates take them.
                if learned {
                    mutations = generation.mutation_scores(&q.vector, visibility);
                    mutations.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                    mutations.truncate(params.mutation_depth);
                }
                for phrase in listed.iter().flatten() {
                    phrases.push(generation.vector_candidates(
                        &phrase.vector,
                        params.phrase_depth,
                        false,
                        visibility,
                    )?);
                }
                span.record("candidates", vector.len());
                embedded = [
                    Some(Arc::clone(q)),
                    owner.clone(),
                    answer.clone(),
                    verb.clone(),
                ];
            }
            _ => mode = SearchMode::Lexical,
        }
    }
    Ok(Gathered {
        analysis,
        lexical,
        vector,
        mutations,
        phrases,
        embedded,
        texts: embedded_texts,
        mode,
    })
}

/// The candidates of a gathered question and their features.
pub(crate) fn features(
    generation: &Generation,
    gathered: &Gathered<'_>,
    visibility: &Visibility,
    params: &Params,
) -> Result<(Vec<Candidate>, Vec<Row>), RankError> {
    let candidates = candidates::gather(
        &generation.catalog,
        generation.documents(),
        &generation.lexical,
        &gathered.analysis,
        &gathered.lexical,
        &gathered.vector,
        &gathered.mutations,
        &gathered.phrases,
        visibility,
        params,
    )?;
    let embedded = gathered.embedded();
    let inputs = features::Inputs {
        generation,
        analysis: &gathered.analysis,
        embedded: &embedded,
        visibility,
        params,
    };
    let rows = features::rows(&inputs, &candidates);
    Ok((candidates, rows))
}

/// Every candidate of a gathered question, best first (ties by coordinate): scored by the
/// `ranker` when the question has its vector, else fused and re-ranked by the stages; either
/// way deprecated members then rank below their replacements and the members the question
/// names outright come first, as the product promises whatever a model says.
pub(crate) fn order(
    generation: &Generation,
    gathered: &Gathered<'_>,
    ranker: Option<&Ranker>,
    visibility: &Visibility,
    params: &Params,
) -> Result<Vec<(MemberId, f32)>, RankError> {
    let span = tracing::info_span!(
        "wayfinder.merge",
        results = tracing::field::Empty,
        learned = false,
        token_matched = false,
        owner_matched = false,
        answer_matched = false,
        verb_matched = false
    );
    let _entered = span.enter();
    let catalog = &generation.catalog;
    let embedded = gathered.embedded();
    let mut ranked = match ranker.filter(|_| embedded.question.is_some()) {
        Some(ranker) => {
            span.record("learned", true);
            let (candidates, rows) = features(generation, gathered, visibility, params)?;
            let scores = ranker.score(&rows);
            let mut ranked: Vec<(MemberId, f32)> = candidates
                .iter()
                .zip(scores)
                .map(|(c, score)| (c.member, score))
                .collect();
            stages::sort(catalog, &mut ranked);
            ranked
        }
        None => {
            let mut ranked = stages::fuse(
                catalog,
                generation.documents(),
                &gathered.lexical,
                &gathered.vector,
                gathered.analysis.intent,
                params,
            );
            rerank(
                generation,
                &mut ranked,
                &gathered.analysis,
                &embedded,
                visibility,
                params,
                &span,
            );
            ranked
        }
    };
    if params.runs(Stage::Deprecation) {
        stages::demote_deprecated(
            catalog,
            generation.documents(),
            &mut ranked,
            visibility,
            params,
        );
    }
    if params.runs(Stage::Named) {
        let named = stages::named_members(catalog, gathered.analysis.asked, visibility, &ranked);
        stages::put_named_first(&mut ranked, &named);
    }
    span.record("results", ranked.len());
    Ok(ranked)
}

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
fn rerank(
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
            // Applied where the search reads the question, gathers candidates and fuses, or
            // after either ranking ([`order`]).
            Stage::Deprecation
            | Stage::Named
            | Stage::Spelling
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
