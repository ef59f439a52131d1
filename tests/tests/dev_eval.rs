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

/// Recall@1, recall@5, recall@10 and MRR@10 below `floors`, each said in `failures`.
fn check_at_least(what: &str, metrics: &Metrics, floors: [f64; 4], failures: &mut Vec<String>) {
    let figures = [
        metrics.recall_at_1,
        metrics.recall_at_5,
        metrics.recall_at_10,
        metrics.mrr_at_10,
    ];
    let names = ["R@1", "R@5", "R@10", "MRR@10"];
    for ((name, figure), floor) in names.iter().zip(figures).zip(floors) {
        if figure < floor {
            failures.push(format!("{what} {name} {figure:.3} < {floor}: {metrics:?}"));
        }
    }
}

#[test]
fn the_dev_sets_keep_their_figures() {
    // Each set has 52-54 questions: one question is 0.019 of recall. The figures with the
    // tuned model and the ranker fitted on it (issue 53; the dev sets are among the questions
    // both were fitted on) (R@1, R@5, R@10, MRR@10): github 0.537 0.796 0.870 0.639, saleor
    // 0.642 0.887 0.925 0.742, spotify 0.538 0.904 0.942 0.682; pooled 0.572 0.862 0.912
    // 0.687. Each floor is two questions below. On a CPU without VNNI the int8 model's vectors
    // differ (`wayfinder_tests::exact_int8_products`): github 0.519 0.741 0.852 0.620, saleor
    // 0.679 0.887 0.906 0.763, spotify 0.538 0.885 0.942 0.685, pooled 0.579 0.836 0.899
    // 0.689; github's and the pooled R@5 floors are below those.
    let floors: BTreeMap<&str, [f64; 4]> = BTreeMap::from([
        ("github", [0.50, 0.72, 0.83, 0.60]),
        ("saleor", [0.60, 0.84, 0.88, 0.70]),
        ("spotify-supergraph", [0.50, 0.86, 0.90, 0.64]),
    ]);
    // Every set is measured before any floor fails, so a failure shows every figure.
    let mut failures = Vec::new();
    let mut pooled = Vec::new();
    for (set, floors) in &floors {
        let report = score(answers(set));
        println!("{set}: {:?}", report.overall);
        check_at_least(set, &report.overall, *floors, &mut failures);
        pooled.extend(report.answers);
    }
    let pooled = score(pooled);
    println!("pooled: {:?}", pooled.overall);
    // Pooled over 159 questions, one is 0.006 of recall: the floors are two to three questions
    // below (R@5 137 of 159, 133 without VNNI, 131 pass; R@10 145, 142 pass).
    check_at_least(
        "pooled",
        &pooled.overall,
        [0.55, 0.82, 0.89, 0.67],
        &mut failures,
    );
    // Issue 6: each kind's recall@10, pooled, at least 0.70.
    for (kind, metrics) in &pooled.by_kind {
        println!("{kind}: {metrics:?}");
        if metrics.recall_at_10 < 0.70 {
            failures.push(format!("{kind}: {metrics:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
