//! The whole retrieval pipeline on the three dev sets with the real model, as `wayfinder eval`
//! runs it: each set and the pooled figures against floors about two questions below the
//! figures (bench/RESULTS.md), so a change to documents, intent or ranking cannot lose a gain
//! on any set silently, while one answer moving a place does not fail CI. Indexing
//! github and saleor without a cache takes a few minutes; the sets are measured one after the
//! other, so only one engine is in memory at a time.

use std::collections::BTreeMap;

use wayfinder_tests::{catalog, indexed_catalog, questions, set_schema};
use wayfinder_workers::eval::{evaluate, score, Answer, Metrics};

/// One set's answers, indexed from its schema with no cache.
fn answers(set: &str) -> Vec<Answer> {
    let engine = indexed_catalog(catalog(set_schema(set)));
    evaluate(&engine, &questions(set))
        .expect("every question answers")
        .answers
}

/// Recall@1, recall@5, recall@10 and MRR@10 no lower than `floors`.
fn assert_at_least(what: &str, metrics: &Metrics, floors: [f64; 4]) {
    let figures = [
        metrics.recall_at_1,
        metrics.recall_at_5,
        metrics.recall_at_10,
        metrics.mrr_at_10,
    ];
    let names = ["R@1", "R@5", "R@10", "MRR@10"];
    for ((name, figure), floor) in names.iter().zip(figures).zip(floors) {
        assert!(
            figure >= floor,
            "{what} {name} {figure:.3} < {floor}: {metrics:?}"
        );
    }
}

#[test]
fn the_dev_sets_keep_their_figures() {
    // Each set has 52-54 questions: one question is 0.019 of recall. The figures with the
    // tuned model and the ranker fitted on it (issue 53; the dev sets are among the questions
    // both were fitted on) (R@1, R@5, R@10, MRR@10): github 0.463 0.704 0.778 0.570, saleor
    // 0.604 0.868 0.906 0.715, spotify 0.538 0.846 0.904 0.671; pooled 0.535 0.805 0.862
    // 0.651. Each floor is two questions below.
    let floors: BTreeMap<&str, [f64; 4]> = BTreeMap::from([
        ("github", [0.42, 0.66, 0.74, 0.53]),
        ("saleor", [0.56, 0.83, 0.86, 0.67]),
        ("spotify-supergraph", [0.50, 0.80, 0.86, 0.63]),
    ]);
    let mut pooled = Vec::new();
    for (set, floors) in &floors {
        let report = score(answers(set));
        println!("{set}: {:?}", report.overall);
        assert_at_least(set, &report.overall, *floors);
        pooled.extend(report.answers);
    }
    let pooled = score(pooled);
    println!("pooled: {:?}", pooled.overall);
    // Pooled over 159 questions, one is 0.006 of recall: the floors are two questions below
    // (R@5 128 of 159 now, 126 pass; R@10 137, 135 pass).
    assert_at_least("pooled", &pooled.overall, [0.52, 0.79, 0.84, 0.63]);
    // Issue 6: each kind's recall@10, pooled, at least 0.70.
    for (kind, metrics) in &pooled.by_kind {
        println!("{kind}: {metrics:?}");
        assert!(metrics.recall_at_10 >= 0.70, "{kind}: {metrics:?}");
    }
}
