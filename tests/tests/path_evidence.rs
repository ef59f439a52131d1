//! Path evidence pinned with the real model: a question whose words best match a member deep
//! inside a connection asks for the field that connection is reached through.

use wayfinder_supergraph::{Catalog, CatalogOptions};
use wayfinder_tests::{engine_config, indexed_catalog_with, top_coordinates};
use wayfinder_workers::{ModelTuning, Params, Stage};

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
    // `LanguageEdge.size` and `LanguageConnection.totalSize` match the words best and are
    // reached through `Repository.languages`, which the question's words alone leave out of
    // the first ten: the `path` stage lifts it in.
    let question = "size in bytes of each programming language used in a project's code";
    let rank = |stages: Vec<Stage>| {
        let catalog = Catalog::from_sdl(CODE_HOST, "code_host.graphql", CatalogOptions::default())
            .expect("a valid schema");
        let mut config = engine_config(None);
        // The model as the stages were chosen on: the tuned one already puts the field among
        // the first ten from the question's words alone.
        config.model.tuning = ModelTuning::Untuned;
        // The stage ranks when the question has no vector, or with the fitted ranker off.
        config.ranking = Some(Params {
            learned: false,
            stages,
            ..Params::default()
        });
        let hits = top_coordinates(&indexed_catalog_with(catalog, config), question, 10);
        let rank = hits.iter().position(|c| c == "Repository.languages");
        (rank, hits)
    };
    let (with_path, hits) = rank(Stage::ALL.to_vec());
    let (without, hits_without) = rank(
        Stage::ALL
            .into_iter()
            .filter(|s| *s != Stage::Path)
            .collect(),
    );
    assert!(with_path.is_some_and(|r| r < 5), "{hits:?}");
    assert!(
        without.is_none_or(|r| Some(r) > with_path),
        "{hits_without:?}"
    );
}
