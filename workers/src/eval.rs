//! Retrieval evaluation: run question sets through the engine's own search and score them the
//! way `../shared/eval/README.md` defines: a hit at k is any expected coordinate among the
//! first k results; MRR@10 takes the first expected coordinate found in the top 10. A `task`
//! (bench/corpus/README.md) needs every member it lists: it is scored by field recall@K, the
//! share of them in the first K results.

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
    /// `question`, `keywords`, `task` or `action` (bench/corpus/README.md); a set written
    /// before styles has none, and its `mutation` kind is an action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
    /// An action's inputs: the arguments or input fields its values go to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
}

/// How a question is written, and so how it is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// A natural question for one member.
    Question,
    /// One to four words typed into a search box.
    Keywords,
    /// An agent's goal that needs every member listed: scored by field recall.
    Task,
    /// A change to make, with its inputs: a mutation.
    Action,
}

impl Style {
    pub const ALL: [Style; 4] = [Style::Question, Style::Keywords, Style::Task, Style::Action];

    pub fn as_str(self) -> &'static str {
        match self {
            Style::Question => "question",
            Style::Keywords => "keywords",
            Style::Task => "task",
            Style::Action => "action",
        }
    }
}

impl Question {
    /// The question's style; `None` for one that is not for evaluation (a `description`
    /// pair, kept as fitting data only) or of an unknown style.
    pub fn style(&self) -> Option<Style> {
        match self.style.as_deref() {
            None if self.kind == "mutation" => Some(Style::Action),
            None => Some(Style::Question),
            Some(name) => Style::ALL.into_iter().find(|s| s.as_str() == name),
        }
    }
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

/// Field recall of `task` questions: the mean share of their members in the first K.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct TaskMetrics {
    pub questions: usize,
    pub field_recall_at_20: f64,
    pub field_recall_at_50: f64,
    /// The share of tasks with every member in the first 20.
    pub complete_at_20: f64,
}

impl TaskMetrics {
    /// From the 1-based rank of each of a task's members within [`DEEP_RANK`], per task.
    pub fn from_found(found: &[&[Option<usize>]]) -> Self {
        let n = found.len().max(1) as f64;
        let share = |members: &[Option<usize>], k: usize| {
            let within = members.iter().filter(|r| r.is_some_and(|r| r <= k)).count();
            within as f64 / members.len().max(1) as f64
        };
        let mean = |k: usize| found.iter().map(|f| share(f, k)).sum::<f64>() / n;
        TaskMetrics {
            questions: found.len(),
            field_recall_at_20: mean(20),
            field_recall_at_50: mean(50),
            complete_at_20: found.iter().filter(|f| share(f, 20) == 1.0).count() as f64 / n,
        }
    }
}

/// One question's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub id: String,
    pub kind: String,
    pub style: Style,
    /// The top-10 coordinates.
    pub results: Vec<String>,
    /// 1-based rank of the first expected coordinate in the top 10.
    pub rank: Option<usize>,
    /// 1-based rank of the first expected coordinate in the first [`DEEP_RANK`] results: how
    /// far a miss is from the top ten.
    pub deep_rank: Option<usize>,
    /// 1-based rank of each expected coordinate within [`DEEP_RANK`], in `expected` order.
    pub found: Vec<Option<usize>>,
    /// Texts the search embedded (or found cached).
    pub texts: usize,
    /// The first hit's score, `None` when nothing was found: what `minScore` and the
    /// insights' `low_score` compare.
    pub best_score: Option<f64>,
}

/// How deep an answer is searched for [`Answer::deep_rank`].
pub const DEEP_RANK: usize = 100;

#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// Over the questions for one member (every style but `task`).
    pub overall: Metrics,
    /// The legacy kinds of questions for one member.
    pub by_kind: BTreeMap<String, Metrics>,
    /// Each style for one member.
    pub by_style: BTreeMap<Style, Metrics>,
    pub tasks: TaskMetrics,
    /// Texts embedded per question, on average.
    pub texts: f64,
    pub answers: Vec<Answer>,
}

/// Searches every question for evaluation (top 10, and up to [`DEEP_RANK`] for the deep rank
/// and a task's members) and scores the answers.
pub fn evaluate(engine: &Engine, questions: &[Question]) -> Result<EvalReport, EvalError> {
    let mut answers = Vec::with_capacity(questions.len());
    for question in questions {
        let Some(style) = question.style() else {
            continue;
        };
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
        let texts = results.texts;
        let best_score = results.hits.first().map(|h| f64::from(h.score));
        let mut results: Vec<String> = results.hits.into_iter().map(|h| h.coordinate).collect();
        let found: Vec<Option<usize>> = question
            .expected
            .iter()
            .map(|e| results.iter().position(|c| c == e).map(|i| i + 1))
            .collect();
        let deep_rank = found.iter().flatten().copied().min();
        results.truncate(10);
        answers.push(Answer {
            id: question.id.clone(),
            kind: question.kind.clone(),
            style,
            results,
            rank: deep_rank.filter(|r| *r <= 10),
            deep_rank,
            found,
            texts,
            best_score,
        });
    }
    Ok(score(answers))
}

/// Metrics overall, by kind and by style for answered questions.
pub fn score(answers: Vec<Answer>) -> EvalReport {
    let single: Vec<&Answer> = answers.iter().filter(|a| a.style != Style::Task).collect();
    let ranks: Vec<Option<usize>> = single.iter().map(|a| a.rank).collect();
    let mut by_kind: BTreeMap<String, Vec<Option<usize>>> = BTreeMap::new();
    let mut by_style: BTreeMap<Style, Vec<Option<usize>>> = BTreeMap::new();
    for answer in &single {
        if !answer.kind.is_empty() {
            by_kind
                .entry(answer.kind.clone())
                .or_default()
                .push(answer.rank);
        }
        by_style.entry(answer.style).or_default().push(answer.rank);
    }
    let tasks: Vec<&[Option<usize>]> = answers
        .iter()
        .filter(|a| a.style == Style::Task)
        .map(|a| &a.found[..])
        .collect();
    let metrics = |ranks: Vec<Option<usize>>| Metrics::from_ranks(&ranks);
    EvalReport {
        overall: Metrics::from_ranks(&ranks),
        by_kind: by_kind.into_iter().map(|(k, r)| (k, metrics(r))).collect(),
        by_style: by_style.into_iter().map(|(s, r)| (s, metrics(r))).collect(),
        tasks: TaskMetrics::from_found(&tasks),
        texts: answers.iter().map(|a| a.texts as f64).sum::<f64>() / answers.len().max(1) as f64,
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

    #[test]
    fn a_task_counts_the_share_of_its_members_found() {
        let whole = [Some(1), Some(20)];
        let half = [Some(3), Some(40), None, None];
        let m = TaskMetrics::from_found(&[&whole, &half]);
        assert_eq!(m.field_recall_at_20, (1.0 + 0.25) / 2.0);
        assert_eq!(m.field_recall_at_50, (1.0 + 0.5) / 2.0);
        assert_eq!(m.complete_at_20, 0.5);
    }

    #[test]
    fn a_legacy_mutation_question_is_an_action_and_a_description_pair_is_not_scored() {
        let q = |style: Option<&str>, kind: &str| Question {
            id: "q".into(),
            schema: String::new(),
            query: "q".into(),
            expected: vec!["Query.a".into()],
            kind: kind.into(),
            style: style.map(Into::into),
            inputs: Vec::new(),
        };
        assert_eq!(q(None, "mutation").style(), Some(Style::Action));
        assert_eq!(q(None, "paraphrase").style(), Some(Style::Question));
        assert_eq!(q(Some("task"), "").style(), Some(Style::Task));
        assert_eq!(q(Some("description"), "").style(), None);
    }
}
