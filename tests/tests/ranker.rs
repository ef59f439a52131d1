//! The fitted ranker on the search path, with the real model: it orders what a search answers,
//! a question that lists things gets candidates for each, an action that does not read as one
//! still meets the mutations, and a cursor names the ranker it was ranked with. How well it
//! ranks is measured on the corpus (bench/fit), not pinned here.

use std::sync::OnceLock;

use wayfinder_supergraph::{Catalog, CatalogOptions};
use wayfinder_tests::{engine_config, indexed_catalog_with, indexed_engine, temp_dir};
use wayfinder_workers::rank::score::Ranker;
use wayfinder_workers::{Engine, Params, SearchError, SearchRequest};

const LIBRARY: &str = r#"
type Query {
  "A member of the library by their card number."
  member(card: ID!): Member
  "Books in the catalogue, by title."
  books(title: String, first: Int): [Book!]!
}

type Mutation {
  "Lends a book to a member until its due date."
  lendBook(card: ID!, isbn: ID!): Loan
  "Takes a lent book back."
  returnBook(loan: ID!): Loan
  "Adds a book to the catalogue."
  addBook(title: String!, isbn: ID!): Book
}

"Someone who may borrow books."
type Member {
  "The member's full name."
  name: String!
  "Where the member lives."
  address: String
  "The books the member has borrowed and not yet returned."
  loans: [Loan!]!
}

"A book in the catalogue."
type Book {
  "The book's title."
  title: String!
  "Who wrote it."
  author: String!
  "How many pages it has."
  pages: Int
}

"A book lent to a member."
type Loan {
  id: ID!
  "The book lent."
  book: Book!
  "When it must be back."
  due: String!
}
"#;

fn library() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| indexed_engine(LIBRARY, "library.graphql"))
}

fn search(query: &str, first: usize) -> SearchRequest<'_> {
    SearchRequest {
        query,
        first,
        ..SearchRequest::default()
    }
}

#[test]
fn the_fitted_ranker_orders_what_a_search_answers() {
    let engine = library();
    assert!(engine.params().learned);
    let query = "how long is a book";
    let explained = engine.explain(query).expect("explains");
    let scores = Ranker::load(None)
        .expect("the built-in ranker loads")
        .score(&explained.rows);
    assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{scores:?}");
    let best = scores
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| &explained.coordinates[i])
        .expect("candidates");
    let hits = engine.search(&search(query, 5)).expect("answers").hits;
    assert_eq!(&hits[0].coordinate, best, "{hits:?}");
    assert!(
        (hits[0].score - scores.iter().copied().fold(0.0, f32::max)).abs() < 1e-6,
        "{hits:?}"
    );
    assert!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "{hits:?}"
    );
}

#[test]
fn every_thing_a_question_lists_reaches_the_first_page() {
    let engine = library();
    let hits: Vec<String> = engine
        .search(&search(
            "for a member: where they live, the books they borrowed and when each is due",
            10,
        ))
        .expect("answers")
        .hits
        .into_iter()
        .map(|h| h.coordinate)
        .collect();
    for wanted in ["Member.address", "Member.loans", "Loan.due"] {
        assert!(hits.iter().any(|h| h == wanted), "{wanted}: {hits:?}");
    }
}

#[test]
fn a_change_that_does_not_read_as_an_imperative_still_meets_the_mutations() {
    let engine = library();
    let explained = engine
        .explain("the novel came back to the desk today")
        .expect("explains");
    assert!(
        explained
            .coordinates
            .iter()
            .any(|c| c == "Mutation.returnBook"),
        "{:?}",
        explained.coordinates
    );
}

#[test]
fn a_cursor_names_the_ranker_it_was_ranked_with() {
    // The built-in ranker written to a file with another calibration: the same trees, a
    // different ranker for cursors.
    let dir = temp_dir("ranker-cursor");
    let built_in = wayfinder_tests::repo_path("workers/src/rank/fitted/all-MiniLM-L6-v2-int8.onnx");
    let onnx = dir.join("other.onnx");
    std::fs::copy(&built_in, &onnx).expect("copies the model");
    let meta = std::fs::read_to_string(built_in.with_extension("onnx.json")).expect("meta");
    let mut meta: serde_json::Value = serde_json::from_str(&meta).expect("json");
    meta["calibration"][1] = serde_json::json!(meta["calibration"][1].as_f64().unwrap() + 0.5);
    std::fs::write(dir.join("other.onnx.json"), meta.to_string()).expect("writes");

    let catalog =
        || Catalog::from_sdl(LIBRARY, "library.graphql", CatalogOptions::default()).unwrap();
    let other = {
        let mut config = engine_config(None);
        config.ranking = Some(Params {
            ranker: Some(onnx),
            ..Params::default()
        });
        indexed_catalog_with(catalog(), config)
    };
    let built = indexed_catalog_with(catalog(), engine_config(None));
    let query = "a book's author";
    let page = built.search(&search(query, 2)).expect("answers");
    let cursor = &page.hits[1].cursor;
    let next = SearchRequest {
        after: Some(cursor),
        ..search(query, 2)
    };
    assert!(built.search(&next).is_ok());
    assert!(
        matches!(other.search(&next), Err(SearchError::Cursor(_))),
        "a cursor of the built-in ranker continues under another"
    );
    let _ = std::fs::remove_dir_all(dir);
}
