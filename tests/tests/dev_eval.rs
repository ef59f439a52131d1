//! The whole retrieval pipeline on one dev set with the real model, against floors a question
//! or so below the figures `wayfinder eval` gives (bench/README.md, ablation step 15), so a
//! change to documents, intent or ranking cannot lose them silently. The spotify set indexes
//! in seconds; github and saleor take minutes and are measured with `wayfinder eval`.

use wayfinder_tests::{catalog, indexed_catalog, set_schema};
use wayfinder_workers::eval::{evaluate, read_questions};

#[test]
fn the_spotify_dev_set_keeps_its_figures() {
    let set = "spotify-supergraph";
    let engine = indexed_catalog(catalog(set_schema(set)));
    let questions_file =
        wayfinder_tests::shared_dir().join(format!("eval/questions/{set}.dev.jsonl"));
    let questions = read_questions(&questions_file).expect("the questions read");
    let report = evaluate(&engine, &questions).expect("every question answers");
    let overall = report.overall;
    println!("{overall:?}");
    // 52 questions: one question is 0.019 of recall.
    // Now 0.615 / 0.808 / 0.865 / 0.689.
    assert!(overall.recall_at_1 >= 0.59, "{overall:?}");
    assert!(overall.recall_at_5 >= 0.78, "{overall:?}");
    assert!(overall.recall_at_10 >= 0.84, "{overall:?}");
    assert!(overall.mrr_at_10 >= 0.66, "{overall:?}");
}
