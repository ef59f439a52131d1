//! Page: the ranked members a request sees, from its offset, at least its `minScore`, each
//! with the cursor that continues after it.

use wayfinder_supergraph::{Catalog, MemberId};

#[derive(Debug, Clone)]
pub struct SearchHit {
    pub member: MemberId,
    pub coordinate: String,
    /// In [0, 1], descending through the result set.
    pub score: f32,
    pub cursor: String,
}

/// The `first` members of `ranked` with at least `min_score` after the first `offset` of
/// them; `cursor` encodes a hit's position among those with at least `min_score`.
pub(crate) fn page(
    ranked: Vec<(MemberId, f32)>,
    catalog: &Catalog,
    min_score: f32,
    offset: usize,
    first: usize,
    cursor: impl Fn(u32) -> String,
) -> Vec<SearchHit> {
    ranked
        .into_iter()
        .filter(|(_, score)| *score >= min_score)
        .enumerate()
        .skip(offset)
        .take(first)
        .map(|(position, (member, score))| SearchHit {
            member,
            coordinate: catalog.member(member).coordinate.clone(),
            score,
            cursor: cursor(position as u32),
        })
        .collect()
}
