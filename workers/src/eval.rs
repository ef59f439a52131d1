//! Retrieval evaluation: run question sets through the engine's own search and score them the
//! way `../shared/eval/README.md` defines: a hit at k is any expected coordinate among the
//! first k results; MRR@10 takes the first expected coordinate found in the top 10.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::engine::{Engine, SearchError, SearchRequest};

/// One line of a questions file.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Question {
    pub id: String,
    #[serde(default)]
    pub schema: String,
    pub query: String,
    pub expected: Vec<String>,
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}:{line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
    #[error("question {id}: {source}")]
    Search { id: String, source: SearchError },
}

pub fn read_questions(path: &Path) -> Result<Vec<Question>, EvalError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::Read {
        path: shown.clone(),
        message: e.to_string(),
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| EvalError::Parse {
                path: shown.clone(),
                line: i + 1,
                message: e.to_string(),
            })
        })
        .collect()
}

/// Recall@1/5/10 and MRR@10 over some questions.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Metrics {
    pub questions: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub mrr_at_10: f64,
}

impl Metrics {
    /// From the 1-based rank of the first expected coordinate in each question's top 10.
    pub fn from_ranks(ranks: &[Option<usize>]) -> Self {
        let n = ranks.len().max(1) as f64;
        let within =
            |k: usize| ranks.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / n;
        Metrics {
            questions: ranks.len(),
            recall_at_1: within(1),
            recall_at_5: within(5),
            recall_at_10: within(10),
            mrr_at_10: ranks
                .iter()
                .map(|r| r.map_or(0.0, |r| 1.0 / r as f64))
                .sum::<f64>()
                / n,
        }
    }
}

/// One question's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub id: String,
    pub kind: String,
    /// The top-10 coordinates.
    pub results: Vec<String>,
    /// 1-based rank of the first expected coordinate in the top 10.
    pub rank: Option<usize>,
    /// 1-based rank of the first expected coordinate in the first [`DEEP_RANK`] results: how
    /// far a miss is from the top ten.
    pub deep_rank: Option<usize>,
}

/// How deep an answer is searched for [`Answer::deep_rank`].
pub const DEEP_RANK: usize = 100;

#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub overall: Metrics,
    pub by_kind: BTreeMap<String, Metrics>,
    pub answers: Vec<Answer>,
}

/// Searches every question (top 10, and up to [`DEEP_RANK`] for the deep rank) and scores the
/// answers.
pub fn evaluate(engine: &Engine, questions: &[Question]) -> Result<EvalReport, EvalError> {
    let mut answers = Vec::with_capacity(questions.len());
    for question in questions {
        let results = engine
            .search(&SearchRequest {
                query: &question.query,
                first: DEEP_RANK,
                ..SearchRequest::default()
            })
            .map_err(|source| EvalError::Search {
                id: question.id.clone(),
                source,
            })?;
        let mut results: Vec<String> = results.hits.into_iter().map(|h| h.coordinate).collect();
        let deep_rank = results
            .iter()
            .position(|c| question.expected.contains(c))
            .map(|i| i + 1);
        results.truncate(10);
        answers.push(Answer {
            id: question.id.clone(),
            kind: question.kind.clone(),
            results,
            rank: deep_rank.filter(|r| *r <= 10),
            deep_rank,
        });
    }
    Ok(score(answers))
}

/// Metrics overall and by kind for answered questions.
pub fn score(answers: Vec<Answer>) -> EvalReport {
    let ranks: Vec<Option<usize>> = answers.iter().map(|a| a.rank).collect();
    let mut by_kind: BTreeMap<String, Vec<Option<usize>>> = BTreeMap::new();
    for answer in &answers {
        by_kind
            .entry(answer.kind.clone())
            .or_default()
            .push(answer.rank);
    }
    EvalReport {
        overall: Metrics::from_ranks(&ranks),
        by_kind: by_kind
            .into_iter()
            .map(|(kind, ranks)| (kind, Metrics::from_ranks(&ranks)))
            .collect(),
        answers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_follow_the_eval_rules() {
        let m = Metrics::from_ranks(&[Some(1), Some(3), Some(7), None]);
        assert_eq!(m.recall_at_1, 0.25);
        assert_eq!(m.recall_at_5, 0.5);
        assert_eq!(m.recall_at_10, 0.75);
        assert!((m.mrr_at_10 - (1.0 + 1.0 / 3.0 + 1.0 / 7.0) / 4.0).abs() < 1e-12);
    }
}
