//! Candidates: every member one question's ranking weighs, with the evidence that brought it.
//!
//! The lexical index and the vector shards each give their best `candidate_depth` members for
//! the whole question. A question that names several things (`each order's number, its
//! customer's email and the items' prices`) is also searched lexically phrase by phrase
//! ([`crate::query::Analysis::phrases`]), so that every thing it names can reach the page, not
//! only the most prominent one. The mutation fields most like the question join them whatever
//! its shape, since an action need not read as one. Then what the best members lead to: the
//! fields each is reached through from a root (the root field included), the arguments of the
//! best fields, the live replacement of a deprecated member, and any member the question names
//! outright. The features ([`super::features`]) are read for each candidate.

use std::collections::HashMap;

use wayfinder_supergraph::{Catalog, MemberId, MemberKind};

use crate::index::document::Document;
use crate::index::lexical::{LexicalError, LexicalIndex};
use crate::index::visibility::Visibility;
use crate::query::Analysis;
use crate::rank::params::Params;
use crate::rank::stages;

/// One candidate member and what found it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub member: MemberId,
    /// Rank (0-based) and BM25 score in the whole question's lexical list.
    pub lexical: Option<(usize, f32)>,
    /// Rank and mean view similarity in the question's vector list.
    pub vector: Option<(usize, f32)>,
    /// Rank and similarity (with its change view) among the mutation fields most like the
    /// question.
    pub mutation: Option<(usize, f32)>,
    /// The best rank in one phrase's lexical list, and its score over that list's best.
    pub phrase: Option<(usize, f32)>,
    /// How many of the question's phrases' lists hold it.
    pub phrases: usize,
    /// The best rank in one phrase's vector list, and its similarity to that phrase.
    pub phrase_vector: Option<(usize, f32)>,
    /// The fused score of both lists, weighed by prior and intent ([`stages::fuse`]): the
    /// order the features that look at "the best few" read.
    pub fused: f32,
}

impl Candidate {
    fn new(member: MemberId) -> Self {
        Candidate {
            member,
            lexical: None,
            vector: None,
            mutation: None,
            phrase: None,
            phrases: 0,
            phrase_vector: None,
            fused: 0.0,
        }
    }
}

/// The candidates of one question in fused order: the fused members best first (ties by
/// coordinate), then those that joined them, at fused score 0, in the order they joined.
#[allow(clippy::too_many_arguments)]
pub fn gather(
    catalog: &Catalog,
    documents: &[Document],
    lexical_index: &LexicalIndex,
    analysis: &Analysis<'_>,
    lexical: &[(MemberId, f32)],
    vector: &[(MemberId, f32)],
    mutations: &[(MemberId, f32)],
    phrase_vectors: &[Vec<(MemberId, f32)>],
    visibility: &Visibility,
    params: &Params,
) -> Result<Vec<Candidate>, LexicalError> {
    let fused = stages::fuse(catalog, documents, lexical, vector, analysis.intent, params);
    let mut at: HashMap<MemberId, usize> = HashMap::with_capacity(fused.len() * 2);
    let mut candidates: Vec<Candidate> = Vec::with_capacity(fused.len() * 2);
    let mut slot = |candidates: &mut Vec<Candidate>, member: MemberId| -> usize {
        *at.entry(member).or_insert_with(|| {
            candidates.push(Candidate::new(member));
            candidates.len() - 1
        })
    };
    for &(member, score) in &fused {
        let i = slot(&mut candidates, member);
        candidates[i].fused = score;
    }
    for (rank, &(member, score)) in lexical.iter().enumerate() {
        let i = slot(&mut candidates, member);
        candidates[i].lexical = Some((rank, score));
    }
    for (rank, &(member, score)) in vector.iter().enumerate() {
        let i = slot(&mut candidates, member);
        candidates[i].vector = Some((rank, score));
    }
    for (rank, &(member, score)) in mutations.iter().enumerate() {
        let i = slot(&mut candidates, member);
        candidates[i].mutation = Some((rank, score));
    }
    if analysis.phrases.len() > 1 {
        for phrase in &analysis.phrases {
            let terms = lexical_index.terms(phrase);
            let found = lexical_index.search_terms(&terms, params.phrase_depth, visibility)?;
            let best = found.first().map_or(0.0, |(_, s)| *s);
            for (rank, &(member, score)) in found.iter().enumerate() {
                let i = slot(&mut candidates, member);
                let c = &mut candidates[i];
                c.phrases += 1;
                let ratio = if best > 0.0 { score / best } else { 0.0 };
                if c.phrase.is_none_or(|(r, _)| rank < r) {
                    c.phrase = Some((rank, ratio));
                }
            }
        }
    }
    for found in phrase_vectors {
        for (rank, &(member, score)) in found.iter().enumerate() {
            let i = slot(&mut candidates, member);
            let c = &mut candidates[i];
            if c.phrase_vector
                .is_none_or(|(r, s)| (rank, -score) < (r, -s))
            {
                c.phrase_vector = Some((rank, score));
            }
        }
    }
    // What the best members lead to.
    let best: Vec<MemberId> = fused
        .iter()
        .take(params.path_depth)
        .map(|(m, _)| *m)
        .collect();
    for &member in &best {
        if let Some(path) = visibility.paths_to_root(catalog, member).first() {
            for &on_the_way in &path[..path.len().saturating_sub(1)] {
                slot(&mut candidates, on_the_way);
            }
        }
    }
    for &field in best
        .iter()
        .filter(|m| catalog.member(**m).kind == MemberKind::Field)
        .take(params.argument_depth)
    {
        for &argument in &catalog.member(field).children {
            if visibility.allows(argument) {
                slot(&mut candidates, argument);
            }
        }
    }
    let found: Vec<MemberId> = candidates.iter().map(|c| c.member).collect();
    for member in found {
        if let Some(replacement) =
            stages::replacement(catalog, documents, visibility, member).flatten()
        {
            slot(&mut candidates, replacement);
        }
    }
    for member in stages::named_members(catalog, analysis.asked, visibility, &fused) {
        slot(&mut candidates, member);
    }
    Ok(candidates)
}
