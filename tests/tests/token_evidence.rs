//! Token evidence pinned with the real model: a member whose description says the question's
//! rare words, under a name that does not, is found by matching word by word.

use wayfinder_tests::{indexed_engine, top_coordinates};

const LIBRARY: &str = r#"
type Query {
  "A member of the library by their card number."
  member(card: String!): Member
  "Books in the catalogue."
  books(first: Int): [Book!]!
}

"A person who can borrow books."
type Member {
  card: String!
  "The member's full name."
  name: String!
  "How many books the member has borrowed and not yet returned."
  loans: Int!
  "Fines owed for books returned late, in cents."
  balance: Int!
  "The date the membership ends."
  expires: String
}

"A title the library holds."
type Book {
  "The title as printed on the cover."
  title: String!
  "The person who wrote it."
  author: String!
  "How many copies are on the shelves now."
  available: Int!
  "Readers waiting for a copy to come back."
  holds: Int!
}
"#;

#[test]
fn a_description_holding_the_questions_words_outranks_a_nearer_name() {
    // By sentence vectors alone `Query.books` comes first (0.481 against 0.480): "book" is
    // in its name. `Book.holds` says "readers waiting for a copy", and "queued" finds
    // "waiting" word by word. Checked to fail with token evidence switched off.
    let engine = indexed_engine(LIBRARY, "library.graphql");
    let hits = top_coordinates(&engine, "people queued for a book", 3);
    assert_eq!(
        hits.first().map(String::as_str),
        Some("Book.holds"),
        "{hits:?}"
    );
}
