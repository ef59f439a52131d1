//! A generation: one catalog with everything built for it so far (documents, the lexical
//! index, the vector shards that are ready). Searches read the current generation through an
//! atomic pointer; indexing never edits a generation, it publishes a new one, so a search
//! always sees one consistent state and a cursor can name the state it came from.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use wayfinder_supergraph::{Catalog, MemberId};

use crate::embed::math::{dot, unit_sum};
use crate::embed::tokens::{TokenFrequencies, TokenVectors};
use crate::index::document::Document;
use crate::index::lexical::LexicalIndex;
use crate::index::spellings::Spellings;
use crate::index::thin::ThinNames;
use crate::index::vector::{VectorError, VectorShard};
use crate::index::visibility::Visibility;

/// The vector side of one subgraph's shard in a generation.
#[derive(Clone)]
pub enum ShardState {
    /// The subgraph is the home of no document.
    Empty,
    /// Vectors are being made; the shard answers lexically meanwhile.
    Building,
    Ready(Arc<VectorShard>),
    /// Indexing failed (the error is logged and kept); the shard stays lexical-only.
    Failed(Arc<str>),
}

/// What a search could use, reported with every result set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Lexical and vector evidence for every shard.
    Hybrid,
    /// Vectors for some shards only: others are still building or failed.
    Partial,
    /// No vectors yet (or none could be made): lexical evidence only.
    Lexical,
}

impl SearchMode {
    /// The name used in metrics and logs (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Partial => "partial",
            SearchMode::Lexical => "lexical",
        }
    }
}

pub struct Generation {
    pub id: u64,
    pub catalog: Arc<Catalog>,
    pub(crate) documents: Arc<[Document]>,
    pub(crate) lexical: Arc<LexicalIndex>,
    /// By `SubgraphId` index.
    pub(crate) shards: Vec<ShardState>,
    /// View key (see `document::View`) to member, for this catalog.
    pub(crate) keys: Arc<HashMap<u64, MemberId>>,
    /// The mutation fields' views in one block, made on the first action query.
    pub(crate) mutation_views: OnceLock<ViewBlock>,
    /// How many members' document texts hold each token, over the ready shards; made on the
    /// first search that matches tokens.
    pub(crate) token_frequencies: OnceLock<TokenFrequencies>,
    /// The name of each thin member as the lexical index reads it, made on publishing the
    /// catalog ([`crate::rank::stages::thin_names`]).
    pub(crate) thin_names: Arc<ThinNames>,
    /// How questions are spelled out for the model, made on publishing the catalog.
    pub(crate) spellings: Arc<Spellings>,
    /// When it was made (the index's age on the dashboard).
    pub made: std::time::Instant,
}

/// Some members' view vectors in one contiguous block, so scoring every one of them is a
/// pass over memory rather than a lookup per view.
#[derive(Default)]
pub(crate) struct ViewBlock {
    members: Vec<BlockMember>,
    vectors: Vec<f32>,
    dimension: usize,
}

/// One member's rows in a [`ViewBlock`].
struct BlockMember {
    member: MemberId,
    /// The first row of its views and how many there are.
    first: usize,
    views: usize,
    /// The object the change is read against ([`Document::carries`]), whose row follows the
    /// views: the member's text blended with that object's summary.
    carries: Option<MemberId>,
}

impl ViewBlock {
    /// The views of `members` that are ready, as vectors of `dimension` (the model's), each
    /// followed by its change view when it has one.
    fn of(generation: &Generation, members: &[MemberId], dimension: usize) -> Self {
        let mut block = ViewBlock {
            dimension,
            ..ViewBlock::default()
        };
        for &member in members {
            let Some((document, shard)) = generation.ready_shard_of(member) else {
                continue;
            };
            let first = block.vectors.len() / dimension;
            let vectors = document.views.iter().filter_map(|v| shard.vector(v.key));
            for vector in vectors.filter(|v| v.len() == dimension) {
                block.vectors.extend_from_slice(vector);
            }
            let views = block.vectors.len() / dimension - first;
            if views == 0 {
                continue;
            }
            let carries = document.carries.and_then(|object| {
                let text = shard.vector(document.text_view().key)?;
                let change = generation.change_view(text, object)?;
                // A row of another width would shift every row after it.
                if change.len() != dimension {
                    return None;
                }
                block.vectors.extend_from_slice(&change);
                Some(object)
            });
            block.members.push(BlockMember {
                member,
                first,
                views,
                carries,
            });
        }
        block
    }

    /// Each visible member's mean similarity to `query` over its views, and over its change
    /// view too when the object it reads may be seen.
    fn scores<'b>(
        &'b self,
        query: &'b [f32],
        visibility: &'b Visibility,
    ) -> impl Iterator<Item = (MemberId, f32)> + 'b {
        let width = self.dimension;
        self.members
            .iter()
            .filter(|m| visibility.allows(m.member))
            .map(move |m| {
                let change = m.carries.is_some_and(|object| visibility.allows(object));
                let rows = m.views + usize::from(change);
                let sum: f32 = self.vectors[m.first * width..(m.first + rows) * width]
                    .chunks_exact(width)
                    .map(|row| dot(row, query))
                    .sum();
                (m.member, sum / rows as f32)
            })
    }
}

impl Generation {
    /// What this generation ranks with: its catalog's content, which shards answer with
    /// vectors, and this build of the ranking. Replicas at the same state rank alike, so each
    /// accepts the others' cursors; the process's generation counter does not enter it.
    pub fn state(&self) -> u64 {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
        hasher.update(&self.catalog.content_hash().to_le_bytes());
        for shard in &self.shards {
            hasher.update(&[match shard {
                ShardState::Empty => 0,
                ShardState::Building | ShardState::Failed(_) => 1,
                ShardState::Ready(_) => 2,
            }]);
        }
        hasher.digest()
    }

    pub fn mode(&self) -> SearchMode {
        let with_documents = self
            .shards
            .iter()
            .filter(|s| !matches!(s, ShardState::Empty))
            .count();
        let ready = self
            .shards
            .iter()
            .filter(|s| matches!(s, ShardState::Ready(_)))
            .count();
        match ready {
            0 if with_documents > 0 => SearchMode::Lexical,
            n if n == with_documents => SearchMode::Hybrid,
            _ => SearchMode::Partial,
        }
    }

    pub fn documents(&self) -> &[Document] {
        &self.documents
    }

    /// Shards left lexical-only because indexing them failed.
    pub fn failed_shards(&self) -> usize {
        self.shards
            .iter()
            .filter(|s| matches!(s, ShardState::Failed(_)))
            .count()
    }

    /// Whether any shard has vectors to search.
    pub(crate) fn has_vectors(&self) -> bool {
        self.shards
            .iter()
            .any(|s| matches!(s, ShardState::Ready(_)))
    }

    /// The visible members of the `depth` views nearest `query` (at most `depth` members),
    /// each scored by the mean similarity over all its views, best first. With `mutations`
    /// (an action), every visible mutation field however far it is, scored with its change
    /// view too ([`ViewBlock`]).
    pub(crate) fn vector_candidates(
        &self,
        query: &[f32],
        depth: usize,
        mutations: bool,
        visibility: &Visibility,
    ) -> Result<Vec<(MemberId, f32)>, VectorError> {
        let mut scored = Vec::new();
        let mut seen = HashSet::new();
        for shard in &self.shards {
            let ShardState::Ready(shard) = shard else {
                continue;
            };
            let allow = visibility.as_contract().map(|contract| {
                |key: u64| self.keys.get(&key).is_some_and(|m| contract.is_visible(*m))
            });
            // `depth` nearest views name at most `depth` members: as many keys again found
            // the same top ten on all dev sets at twice the search time.
            for (key, _) in shard.search(query, depth, allow)? {
                let Some(&member) = self.keys.get(&key) else {
                    continue;
                };
                // An action scores every mutation field from the block, change view and all.
                if mutations
                    && self
                        .catalog
                        .roots()
                        .is_mutation_field(self.catalog.member(member))
                {
                    continue;
                }
                let Some(document) = self.documents.get(member.index()) else {
                    continue;
                };
                if seen.insert(member) {
                    scored.push((member, views_of(shard, document, query).mean));
                }
            }
        }
        best_first(&mut scored);
        scored.truncate(depth);
        if mutations {
            // The graph's mutation fields were left to the block: none is in twice.
            scored.extend(self.mutation_scores(query, visibility));
            best_first(&mut scored);
        }
        Ok(scored)
    }

    /// Every visible mutation field, scored by its mean similarity to `query` over its views
    /// and its change view ([`ViewBlock`]), in no particular order.
    pub(crate) fn mutation_scores(
        &self,
        query: &[f32],
        visibility: &Visibility,
    ) -> Vec<(MemberId, f32)> {
        let Some(mutation) = self.catalog.roots().mutation else {
            return Vec::new();
        };
        let fields = &self.catalog.member(mutation).children;
        let block = self
            .mutation_views
            .get_or_init(|| ViewBlock::of(self, fields, query.len()));
        block.scores(query, visibility).collect()
    }

    /// A change view: a mutation field's `text` vector summed with the summary vector of the
    /// object its payload carries, made unit length (`None` while that object's shard has no
    /// vectors).
    fn change_view(&self, text: &[f32], object: MemberId) -> Option<Vec<f32>> {
        let (document, shard) = self.ready_shard_of(object)?;
        let summary = shard.vector(document.views.get(document.summary_view)?.key)?;
        unit_sum([text, summary])
    }

    pub(crate) fn token_frequencies(&self) -> &TokenFrequencies {
        self.token_frequencies.get_or_init(|| {
            TokenFrequencies::of(self.ready_shards().flat_map(|shard| shard.all_tokens()))
        })
    }

    /// The content-token vectors of `member`'s document text, when its shard has them.
    pub(crate) fn member_tokens(&self, member: MemberId) -> Option<&TokenVectors> {
        let (document, shard) = self.ready_shard_of(member)?;
        shard.tokens(document.text_view().key)
    }

    /// `member`'s document and its shard, when that shard has vectors.
    fn ready_shard_of(&self, member: MemberId) -> Option<(&Document, &VectorShard)> {
        let document = self.documents.get(member.index())?;
        match self.shards.get(document.shard.index())? {
            ShardState::Ready(shard) => Some((document, shard)),
            _ => None,
        }
    }

    fn ready_shards(&self) -> impl Iterator<Item = &VectorShard> {
        self.shards.iter().filter_map(|shard| match shard {
            ShardState::Ready(shard) => Some(&**shard),
            _ => None,
        })
    }

    /// `member`'s mean similarity over its views to `query`, when its shard has vectors.
    pub(crate) fn similarity(&self, member: MemberId, query: &[f32]) -> Option<f32> {
        self.view_similarities(member, query)
            .map(|views| views.mean)
    }

    /// How `member`'s views compare with `query`, when its shard has vectors.
    pub(crate) fn view_similarities(
        &self,
        member: MemberId,
        query: &[f32],
    ) -> Option<ViewSimilarities> {
        let (document, shard) = self.ready_shard_of(member)?;
        Some(views_of(shard, document, query))
    }
}

/// How `document`'s views in `shard` compare with `query`: one pass over them, each vector read
/// once (reading them is most of what scoring a candidate costs).
fn views_of(shard: &VectorShard, document: &Document, query: &[f32]) -> ViewSimilarities {
    let mut found = ViewSimilarities {
        mean: 0.0,
        text: None,
        summary: None,
        max: f32::MIN,
        min: f32::MAX,
    };
    let mut count = 0;
    for (place, view) in document.views.iter().enumerate() {
        let Some(vector) = shard.vector(view.key) else {
            continue;
        };
        let cos = dot(vector, query);
        if place == 0 {
            found.text = Some(cos);
        }
        if place == document.summary_view {
            found.summary = Some(cos);
        }
        found.mean += cos;
        found.max = found.max.max(cos);
        found.min = found.min.min(cos);
        count += 1;
    }
    if count > 0 {
        found.mean /= count as f32;
    }
    found
}

/// A member's views against one question.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ViewSimilarities {
    /// Over the views that have vectors (0 without any): the member's vector evidence, as
    /// [`Generation::similarity`] gives it.
    pub mean: f32,
    /// Its document text's ([`Document::text_view`]).
    pub text: Option<f32>,
    /// Its own name and summary's.
    pub summary: Option<f32>,
    pub max: f32,
    pub min: f32,
}

/// Highest score first, ties by member so the order is deterministic.
fn best_first(scored: &mut [(MemberId, f32)]) {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}
