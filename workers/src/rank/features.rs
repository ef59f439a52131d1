//! Features: what the learned ranker reads of one (question, candidate) pair.
//!
//! Each row holds the question's own features (its length, shape, how much of it the schema
//! knows), then the candidate's: its evidence in the lexical and vector lists and in the
//! question's phrases, how its views, its name, its words token by token, its type and its
//! parent compare with the question, and what it is (kind, root, depth, prior, flags,
//! deprecation, whether the question names it, whether the best candidates are reached through
//! it), each also against the other candidates ([`RELATIVE`]). Every feature is a
//! plain number; the fitting script (bench/fit) reads them by the names [`NAMES`] gives, in
//! that order, so a new feature goes at the end of [`features!`] and the ranker is refitted.

use std::collections::HashMap;

use wayfinder_supergraph::{MemberId, MemberKind};

use crate::embed::tokens::QueryTokens;
use crate::index::generation::{Generation, ViewSimilarities};
use crate::index::lexical::term_hash;
use crate::index::visibility::Visibility;
use crate::query::Analysis;
use crate::rank::candidates::Candidate;
use crate::rank::params::Params;
use crate::rank::{stages, Embedded};

macro_rules! features {
    ($($name:ident: $doc:literal,)*) => {
        /// One feature: its place in a [`Row`].
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum F { $(#[doc = $doc] $name,)* }

        /// The features' names, in row order: what the fitting script and a fitted model
        /// file name them by.
        pub const NAMES: &[&str] = &[$(stringify!($name),)*];
    };
}

features! {
    q_words: "The question's words.",
    q_terms: "Its distinct lexical terms.",
    q_phrases: "The things it lists (1 when it lists none).",
    q_action: "It asks for a change.",
    q_filter: "It asks for a list narrowed down.",
    q_manner: "A change that says how it is made.",
    q_outcome: "A change followed by a read.",
    q_owner: "It names what has what it asks for.",
    q_question: "It opens with a question word or ends with a question mark.",
    q_known: "The share of its terms the schema's documents hold.",
    q_best_bm25: "ln(1 + the best BM25 score).",
    q_best_cos: "The best mean view similarity among the candidates.",
    lex_ratio: "BM25 over the question's best.",
    lex_rank: "1 / (1 + rank) in the lexical list; 0 outside it.",
    vec_rank: "1 / (1 + rank) in the vector list; 0 outside it.",
    cos: "Mean similarity of its views to the question.",
    cos_gap: "The best candidate's mean similarity less its own.",
    cos_text: "Similarity of its document text.",
    cos_summary: "Similarity of its own name and summary.",
    cos_max: "Its most similar view.",
    cos_min: "Its least similar view.",
    phrase_ratio: "Its best score in a phrase's lexical list over that list's best.",
    phrase_rank: "1 / (1 + its best rank in a phrase's list); 0 outside them.",
    phrase_share: "The share of the question's phrases whose lists hold it.",
    name_cover: "The share of its name's terms the question holds.",
    query_cover: "The share of the question's terms its name holds.",
    tokens: "The token match, for the best fused candidates (0 below them).",
    parent_cos: "Its parent type's similarity to the question.",
    type_cos: "Its own type's similarity to the question (what a field returns).",
    fused: "The fused score of both lists, weighed by prior and intent.",
    fused_rank: "1 / (1 + rank) by fused score.",
    prior: "Its prior: roots over what lies below them, plumbing least.",
    kind_field: "A field.",
    kind_argument: "An argument.",
    kind_enum_value: "An enum value.",
    kind_input_field: "An input field.",
    kind_type: "A type.",
    kind_directive: "A directive or a directive's argument.",
    root_query: "A field of the query root.",
    root_mutation: "A field of the mutation root.",
    root_subscription: "A field of the subscription root.",
    depth: "Its depth from a root, over 10.",
    narrows: "It narrows a read.",
    change_input: "A mutation takes it.",
    change_outcome: "A mutation's payload holds it.",
    thin: "Its name is all it says.",
    deprecated: "Deprecated itself.",
    deprecated_by_reach: "Only deprecated members reach it.",
    replaces: "The fused score of the deprecated candidate it replaces.",
    described: "It has a description.",
    named: "1 / (1 + its place among the members the question names); 0 when not named.",
    path_gain: "The best fused score among the candidates reached through it.",
    mutation_rank: "1 / (1 + rank) among the mutation fields most like the question; 0 outside.",
    mutation_cos: "Its similarity there, its change view included.",
    on_path: "The best fused score among the candidates whose first path runs through it.",
    parent_fused: "Its parent's fused score, when the parent is a candidate.",
    phrase_vec_rank: "1 / (1 + its best rank among the nearest members of a phrase); 0 outside.",
    phrase_vec_cos: "Its similarity to that phrase.",
    cos_top: "1 / (1 + its rank by `cos` among the candidates).",
    cos_max_top: "The same by `cos_max`.",
    cos_max_gap: "The best `cos_max` among the candidates less its own.",
    cos_summary_top: "1 / (1 + its rank by `cos_summary`).",
    cos_summary_gap: "The best `cos_summary` less its own.",
    tokens_top: "1 / (1 + its rank by `tokens`).",
    tokens_gap: "The best `tokens` less its own.",
    parent_cos_top: "1 / (1 + its rank by `parent_cos`).",
    parent_cos_gap: "The best `parent_cos` less its own.",
    type_cos_top: "1 / (1 + its rank by `type_cos`).",
    type_cos_gap: "The best `type_cos` less its own.",
    fused_gap: "The best `fused` less its own.",
}

/// Features read against the other candidates of the question: a tree sees one row at a time,
/// so how a candidate stands among the others is given to it (its rank, its distance to the
/// best), written into the `top` and `gap` features named beside each.
const RELATIVE: &[(F, Option<F>, Option<F>)] = &[
    (F::cos, Some(F::cos_top), None),
    (F::cos_max, Some(F::cos_max_top), Some(F::cos_max_gap)),
    (
        F::cos_summary,
        Some(F::cos_summary_top),
        Some(F::cos_summary_gap),
    ),
    (F::tokens, Some(F::tokens_top), Some(F::tokens_gap)),
    (
        F::parent_cos,
        Some(F::parent_cos_top),
        Some(F::parent_cos_gap),
    ),
    (F::type_cos, Some(F::type_cos_top), Some(F::type_cos_gap)),
    (F::fused, None, Some(F::fused_gap)),
];

/// Fills the [`RELATIVE`] features of `rows`, one question's candidates.
fn relative(rows: &mut [Row]) {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    for &(of, top, gap) in RELATIVE {
        let of = of as usize;
        order.sort_by(|a, b| rows[*b][of].total_cmp(&rows[*a][of]).then(a.cmp(b)));
        let best = order.first().map_or(0.0, |&i| rows[i][of]);
        for (rank, &i) in order.iter().enumerate() {
            if let Some(top) = top {
                rows[i][top as usize] = 1.0 / (1.0 + rank as f32);
            }
            if let Some(gap) = gap {
                rows[i][gap as usize] = best - rows[i][of];
            }
        }
    }
}

/// The number of features in a row.
pub const COUNT: usize = NAMES.len();

/// One candidate's features.
pub type Row = [f32; COUNT];

/// Everything a row is read from.
pub(crate) struct Inputs<'a> {
    pub generation: &'a Generation,
    pub analysis: &'a Analysis<'a>,
    pub embedded: &'a Embedded<'a>,
    pub visibility: &'a Visibility,
    pub params: &'a Params,
}

/// The rows of `candidates` (in `fused` order, as [`candidates::gather`] gives them).
pub(crate) fn rows(inputs: &Inputs<'_>, candidates: &[Candidate]) -> Vec<Row> {
    let Inputs {
        generation,
        analysis,
        embedded,
        visibility,
        params,
    } = inputs;
    let catalog = &generation.catalog;
    let documents = generation.documents();
    let roots = catalog.roots();
    let question = embedded.question.map(|e| &e.vector[..]);

    let views: Vec<Option<ViewSimilarities>> = candidates
        .iter()
        .map(|c| question.and_then(|q| generation.view_similarities(c.member, q)))
        .collect();
    // A type among the candidates has its similarity already.
    let mut type_cos: HashMap<MemberId, f32> = candidates
        .iter()
        .zip(&views)
        .filter_map(|(c, views)| Some((c.member, views.as_ref()?.mean)))
        .collect();
    let mut similarity_of_type = |ty: MemberId, to: &[f32]| {
        *type_cos
            .entry(ty)
            .or_insert_with(|| generation.similarity(ty, to).unwrap_or(0.0))
    };
    let cos: Vec<f32> = candidates
        .iter()
        .zip(&views)
        .map(|(c, views)| match (c.vector, views) {
            (Some((_, s)), _) => s,
            (None, Some(views)) => views.mean,
            (None, None) => 0.0,
        })
        .collect();
    let best_cos = cos.iter().copied().fold(0f32, f32::max);
    let best_bm25 = candidates
        .iter()
        .filter_map(|c| c.lexical.map(|(_, s)| s))
        .fold(0f32, f32::max);

    // The candidates come in fused order: "the best few" are the first few, and a candidate's
    // fused rank is its place.
    debug_assert!(candidates.windows(2).all(|w| w[0].fused >= w[1].fused));
    let at: HashMap<MemberId, usize> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| (c.member, i))
        .collect();

    let mut tokens = vec![0f32; candidates.len()];
    if let Some(query_tokens) = embedded
        .question
        .and_then(|q| QueryTokens::new(&q.tokens, generation.token_frequencies()))
    {
        for (i, c) in candidates.iter().enumerate().take(params.token_depth) {
            tokens[i] = generation
                .member_tokens(c.member)
                .map_or(0.0, |t| query_tokens.match_score(t));
        }
    }

    let mut path_gain = vec![0f32; candidates.len()];
    let mut on_path = vec![0f32; candidates.len()];
    let mut replaces = vec![0f32; candidates.len()];
    for c in candidates.iter().take(params.path_depth) {
        if let Some(through) = stages::through(catalog, visibility, c.member) {
            if let Some(&j) = at.get(&through) {
                path_gain[j] = path_gain[j].max(c.fused);
            }
        }
        if let Some(path) = visibility.paths_to_root(catalog, c.member).first() {
            for on_the_way in &path[..path.len().saturating_sub(1)] {
                if let Some(&j) = at.get(on_the_way) {
                    on_path[j] = on_path[j].max(c.fused);
                }
            }
        }
    }
    for c in candidates {
        let replacement = stages::replacement(catalog, documents, visibility, c.member).flatten();
        if let Some(&j) = replacement.as_ref().and_then(|r| at.get(r)) {
            replaces[j] = replaces[j].max(c.fused);
        }
    }
    let ranked: Vec<(MemberId, f32)> = candidates.iter().map(|c| (c.member, c.fused)).collect();
    let named: HashMap<MemberId, usize> =
        stages::named_members(catalog, analysis.asked, visibility, &ranked)
            .into_iter()
            .enumerate()
            .map(|(place, m)| (m, place))
            .collect();

    let terms = &analysis.terms;
    let lexical = &generation.lexical;
    let words = analysis.asked.split_whitespace().count();
    let first_word = analysis
        .asked
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_lowercase();
    let question_like = analysis.asked.ends_with('?')
        || crate::query::intent::QUESTION_WORDS.contains(&first_word.as_str());
    let known = lexical.known_share(terms);
    let term_hashes: Vec<u64> = terms.iter().map(|t| term_hash(t)).collect();

    let mut rows = Vec::with_capacity(candidates.len());
    for (i, c) in candidates.iter().enumerate() {
        let member = catalog.member(c.member);
        let document = documents.get(c.member.index());
        let mut row = [0f32; COUNT];
        let mut set = |f: F, value: f32| row[f as usize] = value;
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let inverse = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / (1.0 + r as f32));

        set(F::q_words, words as f32);
        set(F::q_terms, terms.len() as f32);
        set(F::q_phrases, analysis.phrases.len().max(1) as f32);
        set(F::q_action, flag(analysis.intent.action));
        set(F::q_filter, flag(analysis.intent.filter));
        set(F::q_manner, flag(analysis.intent.manner));
        set(F::q_outcome, flag(analysis.intent.outcome));
        set(F::q_owner, flag(analysis.owner.is_some()));
        set(F::q_question, flag(question_like));
        set(F::q_known, known);
        set(F::q_best_bm25, best_bm25.ln_1p());
        set(F::q_best_cos, best_cos);

        set(
            F::lex_ratio,
            c.lexical.map_or(
                0.0,
                |(_, s)| if best_bm25 > 0.0 { s / best_bm25 } else { 0.0 },
            ),
        );
        set(F::lex_rank, inverse(c.lexical.map(|(r, _)| r)));
        set(F::vec_rank, inverse(c.vector.map(|(r, _)| r)));
        set(F::cos, cos[i]);
        set(F::cos_gap, best_cos - cos[i]);
        if let Some(
            views @ ViewSimilarities {
                text: Some(text),
                summary: Some(summary),
                ..
            },
        ) = views[i]
        {
            set(F::cos_text, text);
            set(F::cos_summary, summary);
            set(F::cos_max, views.max);
            set(F::cos_min, views.min);
        }
        set(F::phrase_ratio, c.phrase.map_or(0.0, |(_, s)| s));
        set(F::phrase_rank, inverse(c.phrase.map(|(r, _)| r)));
        set(
            F::phrase_share,
            c.phrases as f32 / analysis.phrases.len().max(1) as f32,
        );
        if let Some((name, query)) = lexical.name_cover(c.member, &term_hashes) {
            set(F::name_cover, name);
            set(F::query_cover, query);
        }
        set(F::tokens, tokens[i]);
        let mutation_field = roots.is_mutation_field(member);
        if let Some(q) = question {
            if let Some(parent) = catalog.container(c.member) {
                set(F::parent_cos, similarity_of_type(parent.id, q));
            }
            let own_type = member
                .named_type
                .filter(|ty| !catalog.member(*ty).builtin)
                .or(member.kind.is_type().then_some(c.member));
            if let Some(ty) = own_type {
                set(F::type_cos, similarity_of_type(ty, q));
            }
        }
        set(F::fused, c.fused);
        set(F::fused_rank, inverse(Some(i)));
        set(F::prior, document.map_or(1.0, |d| d.prior));
        set(F::kind_field, flag(member.kind == MemberKind::Field));
        set(F::kind_argument, flag(member.kind == MemberKind::Argument));
        set(
            F::kind_enum_value,
            flag(member.kind == MemberKind::EnumValue),
        );
        set(
            F::kind_input_field,
            flag(member.kind == MemberKind::InputField),
        );
        set(F::kind_type, flag(member.kind.is_type()));
        set(
            F::kind_directive,
            flag(matches!(
                member.kind,
                MemberKind::Directive | MemberKind::DirectiveArgument
            )),
        );
        let root_of = |root: Option<MemberId>| {
            flag(member.kind == MemberKind::Field && root.is_some() && member.parent == root)
        };
        set(F::root_query, root_of(roots.query));
        set(F::root_mutation, flag(mutation_field));
        set(F::root_subscription, root_of(roots.subscription));
        set(
            F::depth,
            catalog
                .depth(c.member)
                .map_or(1.0, |d| (d as f32 / 10.0).min(1.0)),
        );
        set(F::narrows, flag(document.is_some_and(|d| d.filter)));
        set(F::change_input, flag(document.is_some_and(|d| d.change)));
        set(F::change_outcome, flag(document.is_some_and(|d| d.outcome)));
        set(F::thin, flag(generation.thin_names.contains_key(&c.member)));
        set(F::deprecated, flag(member.is_deprecated()));
        set(
            F::deprecated_by_reach,
            flag(document.is_some_and(|d| d.deprecated_by_reach.is_some())),
        );
        set(F::replaces, replaces[i]);
        set(F::described, flag(member.description.is_some()));
        set(F::named, inverse(named.get(&c.member).copied()));
        set(F::path_gain, path_gain[i]);
        set(F::mutation_rank, inverse(c.mutation.map(|(r, _)| r)));
        set(F::mutation_cos, c.mutation.map_or(0.0, |(_, s)| s));
        set(F::on_path, on_path[i]);
        let parent = member.parent.and_then(|p| at.get(&p));
        set(
            F::parent_fused,
            parent.map_or(0.0, |&j| candidates[j].fused),
        );
        set(F::phrase_vec_rank, inverse(c.phrase_vector.map(|(r, _)| r)));
        set(F::phrase_vec_cos, c.phrase_vector.map_or(0.0, |(_, s)| s));
        rows.push(row);
    }
    relative(&mut rows);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_candidate_learns_where_it_stands_among_the_others() {
        let mut rows = vec![[0f32; COUNT]; 3];
        for (row, cos) in rows.iter_mut().zip([0.2, 0.6, 0.4]) {
            row[F::cos as usize] = cos;
            row[F::fused as usize] = cos / 2.0;
        }
        relative(&mut rows);
        let top: Vec<f32> = rows.iter().map(|r| r[F::cos_top as usize]).collect();
        assert_eq!(top, [1.0 / 3.0, 1.0, 0.5]);
        let gap: Vec<f32> = rows.iter().map(|r| r[F::fused_gap as usize]).collect();
        for (gap, expected) in gap.iter().zip([0.2, 0.0, 0.1]) {
            assert!((gap - expected).abs() < 1e-6, "{gap} {expected}");
        }
    }

    #[test]
    fn every_feature_has_a_distinct_name() {
        let mut names = NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), COUNT);
    }
}
