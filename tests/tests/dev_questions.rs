//! Every coordinate a dev question expects exists in its schema's catalog, written the same way.

use wayfinder_tests::{catalog, questions, set_schema, DEV_SETS};

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
