//! Path evidence pinned with the real model: a question whose words best match a member deep
//! inside a connection asks for the field that connection is reached through.

use wayfinder_tests::{indexed_engine, ranks_above, top_coordinates};

const CODE_HOST: &str = r#"
type Query {
  "A repository by its owner and name."
  repository(owner: String!, name: String!): Repository
}

"A project's code and its history."
type Repository {
  "The repository's name."
  name: String!
  "A short description of the repository."
  description: String
  "The number of users who starred the repository."
  stargazerCount: Int!
  "A list containing a breakdown of the language composition of the repository."
  languages(first: Int, after: String): LanguageConnection
  "The primary language of the repository's code."
  primaryLanguage: Language
  "How many bytes of code the repository holds."
  diskUsage: Int
}

"A programming language."
type Language {
  "The name of the language."
  name: String!
  "The color defined for the language."
  color: String
}

"A list of languages associated with the parent."
type LanguageConnection {
  edges: [LanguageEdge]
  pageInfo: PageInfo!
  "The total size in bytes of files written in that language."
  totalSize: Int!
}

"Represents the language of a repository."
type LanguageEdge {
  cursor: String!
  node: Language!
  "The number of bytes of code written in the language."
  size: Int!
}

type PageInfo {
  hasNextPage: Boolean!
  endCursor: String
}
"#;

#[test]
fn a_field_rises_with_the_members_found_through_it() {
    let engine = indexed_engine(CODE_HOST, "code_host.graphql");
    // `LanguageEdge.size` and `LanguageConnection.totalSize` match the words best and are
    // reached through `Repository.languages`; `diskUsage` matches better than `languages`
    // itself, with nothing found through it.
    let hits = top_coordinates(
        &engine,
        "how the code base splits across programming languages, with sizes in bytes",
        10,
    );
    assert!(
        ranks_above(&hits, "Repository.languages", 4, "Repository.diskUsage"),
        "{hits:?}"
    );
}
