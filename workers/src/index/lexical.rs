//! The lexical index: BM25 over the same documents the vectors are made from (tantivy, in
//! memory). English stemming and stop words; a document's title (its name's words) is a
//! second field weighted above the body, so naming a member beats mentioning it.
//!
//! Queries are not parsed as tantivy syntax: an agent's words go through the index's own
//! analyzer and become a disjunction of term queries, so no input is a syntax error.

use std::collections::HashMap;
use std::sync::Arc;

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{doc, Index, IndexReader, ReloadPolicy, Term};
use wayfinder_supergraph::{Catalog, MemberId};
use xxhash_rust::xxh3::xxh3_64;

use crate::index::document::{split_identifier, Document};
use crate::index::visibility::Visibility;

const ANALYZER: &str = "wayfinder_en";
const MEMBER: &str = "member";
/// How much more a query word in a member's name counts than one in its context.
const TITLE_BOOST: f32 = 2.0;
/// A query word that is a whole identifier (`timelineItems`) counts most.
const NAMES_BOOST: f32 = 3.0;

#[derive(Debug, thiserror::Error)]
#[error("lexical index: {0}")]
pub struct LexicalError(#[from] tantivy::TantivyError);

pub struct LexicalIndex {
    reader: IndexReader,
    analyzer: TextAnalyzer,
    title: Field,
    names: Field,
    text: Field,
    /// Each member's name as [`LexicalIndex::terms`] reads it, hashed ([`term_hash`]), by
    /// member index: read for every candidate of every search, so analysed once here.
    name_terms: Vec<Arc<[u64]>>,
}

/// A term as [`LexicalIndex::name_cover`] compares it.
pub(crate) fn term_hash(term: &str) -> u64 {
    xxh3_64(term.as_bytes())
}

impl LexicalIndex {
    pub fn build(catalog: &Catalog, documents: &[Document]) -> Result<Self, LexicalError> {
        let mut schema = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs);
        let options = TextOptions::default().set_indexing_options(indexing);
        let title = schema.add_text_field("title", options.clone());
        let names = schema.add_text_field("names", options.clone());
        let text = schema.add_text_field("text", options);
        let member = schema.add_u64_field(MEMBER, INDEXED | FAST);
        let index = Index::create_in_ram(schema.build());
        let analyzer = analyzer();
        index.tokenizers().register(ANALYZER, analyzer.clone());

        // One thread and a budget large enough for one segment: building is a few hundred
        // milliseconds even for the largest schemas, and a single segment searches fastest.
        let mut writer = index.writer_with_num_threads(1, 200_000_000)?;
        for document in documents {
            writer.add_document(doc!(
                title => document.title.as_str(),
                names => document.names.as_str(),
                text => document.text(),
                member => u64::from(document.member.0),
            ))?;
        }
        writer.commit()?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let mut lexical = LexicalIndex {
            reader,
            analyzer,
            title,
            names,
            text,
            name_terms: Vec::new(),
        };
        // Names repeat (`id`, `nodes`, `clientMutationId`): each is analysed once.
        let mut by_name: HashMap<&str, Arc<[u64]>> = HashMap::new();
        lexical.name_terms = catalog
            .members()
            .iter()
            .map(|member| {
                by_name
                    .entry(member.name.as_str())
                    .or_insert_with(|| {
                        lexical
                            .terms(&member.name)
                            .iter()
                            .map(|t| term_hash(t))
                            .collect()
                    })
                    .clone()
            })
            .collect();
        Ok(lexical)
    }

    /// How far `member`'s name and the question's terms (hashed, [`term_hash`]) overlap: the
    /// share of the name's terms the question holds and the share of the question's the name
    /// holds; `None` when either has no terms.
    pub(crate) fn name_cover(&self, member: MemberId, question: &[u64]) -> Option<(f32, f32)> {
        let name = self.name_terms.get(member.index())?;
        if name.is_empty() || question.is_empty() {
            return None;
        }
        let held = name.iter().filter(|t| question.contains(t)).count() as f32;
        Some((held / name.len() as f32, held / question.len() as f32))
    }

    /// The best `limit` visible members for `query`, with their BM25 scores, best first.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        visibility: &Visibility,
    ) -> Result<Vec<(MemberId, f32)>, LexicalError> {
        self.search_terms(&self.terms(query), limit, visibility)
    }

    /// [`LexicalIndex::search`] for words already read by [`LexicalIndex::terms`].
    pub(crate) fn search_terms(
        &self,
        terms: &[String],
        limit: usize,
        visibility: &Visibility,
    ) -> Result<Vec<(MemberId, f32)>, LexicalError> {
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(terms.len() * 3);
        for word in terms {
            for (field, boost) in [
                (self.title, TITLE_BOOST),
                (self.names, NAMES_BOOST),
                (self.text, 1.0),
            ] {
                let term = TermQuery::new(
                    Term::from_field_text(field, word),
                    IndexRecordOption::WithFreqs,
                );
                clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(term), boost)),
                ));
            }
        }
        let query = BooleanQuery::new(clauses);
        let visibility = visibility.clone();
        let collector = FilterCollector::new(
            MEMBER.to_string(),
            move |member: u64| visibility.allows(MemberId(member as u32)),
            TopDocs::with_limit(limit).order_by_score(),
        );
        let searcher = self.reader.searcher();
        let hits = searcher.search(&query, &collector)?;
        let mut results = Vec::with_capacity(hits.len());
        for (score, address) in hits {
            let column = searcher
                .segment_reader(address.segment_ord)
                .fast_fields()
                .u64(MEMBER)?;
            if let Some(member) = column.first(address.doc_id) {
                results.push((MemberId(member as u32), score));
            }
        }
        Ok(results)
    }

    /// The share of `terms` that some document holds (0 for none).
    pub(crate) fn known_share(&self, terms: &[String]) -> f32 {
        if terms.is_empty() {
            return 0.0;
        }
        let searcher = self.reader.searcher();
        let known = terms
            .iter()
            .filter(|word| {
                [self.title, self.names, self.text]
                    .into_iter()
                    .any(|field| {
                        let term = Term::from_field_text(field, word);
                        searcher.doc_freq(&term).is_ok_and(|n| n > 0)
                    })
            })
            .count();
        known as f32 / terms.len() as f32
    }

    /// The query's distinct words after the analyzer (lower case, stemmed, no stop words),
    /// identifiers in it both whole and split into words (`timelineItems`: `timelineitem`,
    /// `timelin`, `item`).
    pub(crate) fn terms(&self, query: &str) -> Vec<String> {
        let mut analyzer = self.analyzer.clone();
        let expanded = format!("{query} {}", split_identifier(query));
        let mut stream = analyzer.token_stream(&expanded);
        let mut terms = Vec::new();
        while let Some(token) = stream.next() {
            if !terms.contains(&token.text) {
                terms.push(token.text.clone());
            }
        }
        terms
    }
}

fn analyzer() -> TextAnalyzer {
    let builder = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser);
    match StopWordFilter::new(Language::English) {
        Some(stop_words) => builder
            .filter(stop_words)
            .filter(Stemmer::new(Language::English))
            .build(),
        None => builder.filter(Stemmer::new(Language::English)).build(),
    }
}

#[cfg(test)]
mod tests {
    use wayfinder_supergraph::CatalogOptions;

    use super::*;
    use crate::index::document::documents;
    use crate::index::priors::Priors;

    #[test]
    fn a_name_is_covered_as_its_analysed_terms_are() {
        let catalog = Catalog::from_sdl(
            "type Query { pullRequest: PullRequest }\ntype PullRequest { reviewDecision: String }",
            "test.graphql",
            CatalogOptions::default(),
        )
        .unwrap();
        let lexical =
            LexicalIndex::build(&catalog, &documents(&catalog, &Priors::default())).unwrap();
        let hashed = |query: &str| -> Vec<u64> {
            lexical.terms(query).iter().map(|t| term_hash(t)).collect()
        };
        let member = catalog.get("PullRequest.reviewDecision").unwrap().id;
        // `reviewDecision` reads as `reviewdecis`, `review` and `decis`: two of the three are
        // in the question, and both of the question's terms are in the name.
        assert_eq!(
            lexical.name_cover(member, &hashed("review decisions")),
            Some((2.0 / 3.0, 1.0))
        );
        assert_eq!(lexical.name_cover(member, &hashed("the")), None);
    }
}
