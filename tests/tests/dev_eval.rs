//! The whole retrieval pipeline on the three dev sets with the real model, as `wayfinder eval`
//! runs it: each set against floors a question or so below its figures (bench/README.md,
//! ablation step 38), and the pooled figures against the targets of issue 6 that they meet, so
//! a change to documents, intent or ranking cannot lose a gain on any set silently. Indexing
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
    // Each set has 52-54 questions: one question is 0.019 of recall. The figures now (R@1, R@5,
    // R@10, MRR@10): github 0.537 0.759 0.833 0.620, saleor 0.528 0.868 0.906 0.644, spotify
    // 0.615 0.865 0.904 0.706; pooled 0.560 0.830 0.881 0.656.
    let floors: BTreeMap<&str, [f64; 4]> = BTreeMap::from([
        ("github", [0.50, 0.74, 0.81, 0.60]),
        ("saleor", [0.50, 0.84, 0.88, 0.62]),
        ("spotify-supergraph", [0.59, 0.84, 0.88, 0.68]),
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
    // Pooled over 159 questions, one is 0.006 of recall. The floors hold issue 6's targets
    // (pooled R@1 0.50, R@5 0.80, R@10 0.88 and MRR@10 0.62; each set's R@5 0.70 above): R@10
    // is 140 of 159, exactly 0.88, so losing any answer from a top ten fails here.
    assert_at_least("pooled", &pooled.overall, [0.54, 0.81, 0.88, 0.64]);
    // Issue 6: each kind's recall@10, pooled, at least 0.70.
    for (kind, metrics) in &pooled.by_kind {
        println!("{kind}: {metrics:?}");
        assert!(metrics.recall_at_10 >= 0.70, "{kind}: {metrics:?}");
    }
}
