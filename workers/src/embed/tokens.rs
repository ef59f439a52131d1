//! Token evidence: a text's content words as the model's contextual token vectors, and how well
//! a query's words find their match among a member's (late interaction, in the manner of
//! ColBERT, over the same sentence model).
//!
//! A sentence vector averages a text into one point, so a member whose description says the
//! question's words in other company can sit far from it. Matching word by word recovers that:
//! each query word takes its best-matching word of the member's text, weighted by how rare the
//! word is among the catalog's members, and each of the member's words takes its best match
//! among the query's. The embedder keeps the vectors of content words only (no stop words, no
//! word-piece continuations, no punctuation) at the same forward pass that makes the sentence
//! vector; the cache stores them for each member's document text, quantised to one byte per
//! component; ranking re-scores the best few fused candidates with them.

use std::collections::{HashMap, HashSet};

use crate::embed::math::dot;

/// Token vectors that cannot be read from the cache's bytes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("token vectors cut short: {needed} bytes needed, {got} given")]
    CutShort { needed: usize, got: usize },
}

/// Content-token vectors of one text: token ids and unit vectors, each row quantised to `i8`
/// with its own scale.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenVectors {
    ids: Vec<u32>,
    scales: Vec<f32>,
    values: Vec<i8>,
}

impl TokenVectors {
    /// Quantises `rows` (one per id, each of the same width), made unit length first.
    pub fn new<'r>(ids: Vec<u32>, rows: impl IntoIterator<Item = &'r [f32]>) -> Self {
        let mut scales = Vec::with_capacity(ids.len());
        let mut values = Vec::new();
        for row in rows {
            let norm = row
                .iter()
                .map(|v| v * v)
                .sum::<f32>()
                .sqrt()
                .max(f32::EPSILON);
            let largest = row.iter().fold(0f32, |m, v| m.max(v.abs())) / norm;
            let scale = largest.max(f32::EPSILON) / 127.0;
            values.extend(row.iter().map(|v| (v / norm / scale).round() as i8));
            scales.push(scale);
        }
        TokenVectors {
            ids,
            scales,
            values,
        }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    fn dimension(&self) -> usize {
        self.values.len() / self.ids.len().max(1)
    }

    fn rows(&self) -> impl Iterator<Item = (f32, &[i8])> {
        let width = self.dimension().max(1);
        self.scales
            .iter()
            .copied()
            .zip(self.values.chunks_exact(width))
    }

    fn dequantised(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.values.len());
        for (scale, row) in self.rows() {
            out.extend(row.iter().map(|v| f32::from(*v) * scale));
        }
        out
    }

    /// Appends the cache encoding: count u32, then ids, scales and values.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.ids.len() as u32).to_le_bytes());
        for id in &self.ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
        for scale in &self.scales {
            out.extend_from_slice(&scale.to_le_bytes());
        }
        out.extend(self.values.iter().map(|v| *v as u8));
    }

    /// Reads one encoding of rows `dimension` wide from the front of `bytes`; returns it and
    /// the bytes it took.
    pub(crate) fn decode(bytes: &[u8], dimension: usize) -> Result<(Self, usize), DecodeError> {
        let short = |needed: usize| DecodeError::CutShort {
            needed,
            got: bytes.len(),
        };
        let count = bytes
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| short(4))?;
        let used = 4 + count * (8 + dimension);
        let body = bytes.get(4..used).ok_or_else(|| short(used))?;
        let (ids, rest) = body.split_at(4 * count);
        let (scales, values) = rest.split_at(4 * count);
        let word = |b: &[u8]| [b[0], b[1], b[2], b[3]];
        let vectors = TokenVectors {
            ids: ids
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes(word(b)))
                .collect(),
            scales: scales
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(word(b)))
                .collect(),
            values: values.iter().map(|v| *v as i8).collect(),
        };
        Ok((vectors, used))
    }
}

/// How many members' texts hold each token, for weighting a query's words by rarity.
#[derive(Debug, Default)]
pub struct TokenFrequencies {
    members: usize,
    holding: HashMap<u32, u32>,
}

impl TokenFrequencies {
    pub fn of<'t>(texts: impl IntoIterator<Item = &'t TokenVectors>) -> Self {
        let mut frequencies = TokenFrequencies::default();
        for text in texts {
            frequencies.members += 1;
            let distinct: HashSet<u32> = text.ids.iter().copied().collect();
            for id in distinct {
                *frequencies.holding.entry(id).or_default() += 1;
            }
        }
        frequencies
    }

    /// Inverse document frequency, `ln((n + 1) / (holding + 1))`: 0 for a word every member
    /// has, highest for one none has.
    pub fn weight(&self, id: u32) -> f32 {
        let holding = self.holding.get(&id).copied().unwrap_or(0) as f32;
        ((self.members as f32 + 1.0) / (holding + 1.0)).ln()
    }
}

/// A query's content tokens with their rarity weights, ready to match members against.
pub struct QueryTokens {
    width: usize,
    /// The tokens' vectors, dequantised.
    rows: Vec<f32>,
    weights: Vec<f32>,
}

impl QueryTokens {
    /// `None` when the query has no content word to match.
    pub fn new(tokens: &TokenVectors, frequencies: &TokenFrequencies) -> Option<Self> {
        let weights: Vec<f32> = tokens
            .ids
            .iter()
            .map(|id| frequencies.weight(*id))
            .collect();
        (weights.iter().sum::<f32>() > 0.0).then(|| QueryTokens {
            width: tokens.dimension(),
            rows: tokens.dequantised(),
            weights,
        })
    }

    /// In [0, 1] for positive similarities: the mean of the rarity-weighted best match of each
    /// query word among the member's words and the plain mean of each member word's best match
    /// among the query's. Both directions, so a long text is not favoured for holding more
    /// words to match.
    pub fn match_score(&self, member: &TokenVectors) -> f32 {
        let width = self.width;
        if member.is_empty() || member.dimension() != width {
            return 0.0;
        }
        // Dequantised once per member: an f32 dot product vectorises far better than a
        // widening i8 one on a baseline x86-64 target.
        let member_rows = member.dequantised();
        let mut member_best = vec![f32::MIN; member.len()];
        let mut weighted = 0.0;
        for (query_row, weight) in self.rows.chunks_exact(width).zip(&self.weights) {
            let mut best = f32::MIN;
            for (member_row, member_best) in member_rows.chunks_exact(width).zip(&mut member_best) {
                let similarity = dot(query_row, member_row);
                best = best.max(similarity);
                *member_best = member_best.max(similarity);
            }
            weighted += weight * best;
        }
        let query_side = weighted / self.weights.iter().sum::<f32>();
        let member_side = member_best.iter().sum::<f32>() / member.len() as f32;
        0.5 * (query_side + member_side)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(ids: &[u32], rows: &[[f32; 3]]) -> TokenVectors {
        TokenVectors::new(ids.to_vec(), rows.iter().map(|r| r.as_slice()))
    }

    #[test]
    fn quantised_rows_keep_their_direction_and_survive_the_cache_encoding() {
        let text = vectors(&[7, 9], &[[3.0, 4.0, 0.0], [0.0, 0.0, -2.0]]);
        let mut bytes = vec![1, 2];
        text.encode(&mut bytes);
        let (decoded, used) = TokenVectors::decode(&bytes[2..], 3).unwrap();
        assert_eq!(used, bytes.len() - 2);
        assert_eq!(decoded, text);
        let rows: Vec<Vec<f32>> = decoded
            .rows()
            .map(|(s, r)| r.iter().map(|v| *v as f32 * s).collect())
            .collect();
        assert!((rows[0][0] - 0.6).abs() < 0.01 && (rows[0][1] - 0.8).abs() < 0.01);
        assert!((rows[1][2] + 1.0).abs() < 0.01);
        assert!(TokenVectors::decode(&bytes[2..bytes.len() - 1], 3).is_err());
    }

    #[test]
    fn a_member_holding_the_rare_query_word_matches_best() {
        // Token 1 is in every member, token 2 in one: the query's 2 decides.
        let query = vectors(&[1, 2], &[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]);
        let with_rare = vectors(&[1, 2], &[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]);
        let with_common = vectors(&[1, 3], &[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]);
        let unrelated = vectors(&[4], &[[0.0, 0.0, 1.0]]);
        let frequencies = TokenFrequencies::of([&with_rare, &with_common, &unrelated]);
        assert_eq!(frequencies.weight(5), (4.0f32).ln());
        let query = QueryTokens::new(&query, &frequencies).unwrap();
        let (rare, common, none) = (
            query.match_score(&with_rare),
            query.match_score(&with_common),
            query.match_score(&unrelated),
        );
        assert!((rare - 1.0).abs() < 0.01, "{rare}");
        assert!(rare > common && common > none, "{rare} {common} {none}");
        assert_eq!(query.match_score(&TokenVectors::new(vec![], [])), 0.0);
    }
}
