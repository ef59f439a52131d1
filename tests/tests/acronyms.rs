//! Acronyms pinned with the real model: a question that says `PR` finds what the schema calls
//! a `PullRequest`, because the query is embedded with the acronym spelled out.

use wayfinder_tests::{indexed_engine, top_coordinates};

const CODE_REVIEW: &str = r#"
type Query {
  "A repository by owner and name."
  repository(owner: String!, name: String!): Repository
}

"A repository contains the content for a project."
type Repository {
  name: String!
  "A list of pull requests that have been opened in the repository."
  pullRequests(first: Int): [PullRequest!]!
  "A file at a path on the default branch."
  file(path: String!): File
}

"A repository pull request."
type PullRequest {
  "Identifies the pull request title."
  title: String!
  "The number of additions in this pull request."
  additions: Int!
  "The number of deletions in this pull request."
  deletions: Int!
  "The repository associated with this pull request."
  repository: Repository!
}

"A file in a repository."
type File {
  path: String!
  "Number of lines in the file."
  lineCount: Int
  "The line ranges changed in the file."
  changedLines: [Int!]
}
"#;

#[test]
fn an_acronym_of_a_type_name_reads_as_the_type() {
    // Checked to fail with the query embedded as written: `File.lineCount` comes first.
    let engine = indexed_engine(CODE_REVIEW, "code-review.graphql");
    let hits = top_coordinates(&engine, "how many lines were added in a PR", 3);
    assert_eq!(
        hits.first().map(String::as_str),
        Some("PullRequest.additions"),
        "{hits:?}"
    );
}
