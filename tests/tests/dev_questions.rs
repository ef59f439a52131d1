//! Every coordinate a dev question or one of our own check questions (`bench/corpus/`)
//! expects exists in its schema's catalog, written the same way.

use wayfinder_tests::{catalog, questions, repo_path, set_schema, DEV_SETS};
use wayfinder_workers::eval::read_questions;

#[test]
fn every_expected_coordinate_is_in_the_catalog() {
    let mut checked = 0;
    for set in DEV_SETS {
        let catalog = catalog(set_schema(set));
        let questions = questions(set);
        assert!(
            questions.len() >= 50,
            "{set}: {} questions",
            questions.len()
        );
        let missing: Vec<String> = questions
            .iter()
            .flat_map(|q| q.expected.iter().map(move |c| (q, c)))
            .filter(|(_, coordinate)| catalog.get(coordinate).is_none())
            .map(|(q, coordinate)| format!("{}: {coordinate}", q.id))
            .collect();
        assert!(
            missing.is_empty(),
            "{set}: expected coordinates not in the catalog: {missing:?}"
        );
        checked += questions.iter().map(|q| q.expected.len()).sum::<usize>();
    }
    assert!(checked > 150);
}

/// The corpus's question files on the dev schemas (`bench/corpus/questions/`, see
/// bench/corpus/README.md), each with the schema it asks about.
fn own_sets() -> Vec<(String, &'static str)> {
    [
        ("github", "github"),
        ("saleor", "saleor"),
        ("spotify", "spotify-supergraph"),
    ]
    .into_iter()
    .flat_map(|(folder, set)| {
        ["actions", "reads", "blind"].map(|file| {
            (
                format!("bench/corpus/questions/{folder}/{file}.jsonl"),
                set_schema(set),
            )
        })
    })
    .collect()
}

#[test]
fn our_own_questions_are_new_and_expect_members_of_their_schemas() {
    let dev: Vec<String> = DEV_SETS
        .iter()
        .flat_map(|set| questions(set))
        .map(|q| q.query.to_lowercase())
        .collect();
    for (set, schema) in own_sets() {
        let own = read_questions(&repo_path(&set)).unwrap_or_else(|error| panic!("{set}: {error}"));
        assert!(own.len() >= 8, "{set}: {} questions", own.len());
        let catalog = catalog(schema);
        for question in &own {
            // A check of the method is only worth something on words it was not built on.
            assert!(
                !dev.contains(&question.query.to_lowercase()),
                "{}: a dev question",
                question.id
            );
            for coordinate in question.expected.iter().chain(&question.inputs) {
                assert!(
                    catalog.get(coordinate).is_some(),
                    "{}: {coordinate} is not in {schema}",
                    question.id
                );
            }
        }
    }
}
