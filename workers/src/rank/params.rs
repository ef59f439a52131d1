//! Every number that steers the ranking, and which of its stages run, in one typed place.
//!
//! [`Params`] reaches the engine from `plugins.wayfinder.search.index.ranking` in router.yaml
//! and from `wayfinder eval|search --params FILE`; `wayfinder eval --out` records the params a
//! run used. A field left out takes the default model's value ([`Params::default`]), so a file
//! may hold only what it changes. docs/RANKING.md gives each stage with its numbers, its tests
//! and the measurement that kept it.

use std::collections::HashSet;

use schemars::JsonSchema;

pub use crate::index::priors::Priors;
use serde::{Deserialize, Serialize};

/// A stage of the ranking. Listing it in [`Params::stages`] switches it on; the re-ranking
/// stages (`thin` to `named`) run in the order listed, the others where the search needs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Spell out the question's acronyms, clipped words, degrees, agents and unknown words
    /// from the schema's own names before the model reads it.
    Spelling,
    /// Read the question's shape: an action, a list narrowed down, how a change is made, a
    /// read after a change. Without it every question is a plain read (and the four stages
    /// that follow from it do nothing).
    Intent,
    /// In an action, score every visible mutation field, with the view of what its payload
    /// carries, rather than only those the vector graph returns.
    ActionCandidates,
    /// Weigh each member by its prior: root fields over what lies below them, types and
    /// plumbing below fields.
    Priors,
    /// A question for a list narrowed down weighs what narrows reads by `narrowing`.
    Narrowing,
    /// A change followed by a read gives what the mutation returns a root field's prior.
    Outcome,
    /// An action keeps `not_an_action` of the score of anything that is not a mutation field.
    Action,
    /// A thin member (its name is all it says) keeps `unnamed_thin` of its score unless the
    /// question uses its name.
    Thin,
    /// Blend in how well the question's words match the member's, token by token.
    Tokens,
    /// Lift members of the type most like the owner the question names.
    Owner,
    /// Lift members returning the type most like what a read asks for.
    Answer,
    /// Lift mutation fields by their likeness to an action's verb.
    Verb,
    /// Lift the field through which the best members are reached.
    Path,
    /// Put deprecated members below their replacements and keep `deprecated_factor` of
    /// their score.
    Deprecation,
    /// Put the members the question names outright (coordinates, identifiers) first.
    Named,
}

impl Stage {
    /// Every stage, in the order the engine applies them by default.
    pub const ALL: [Stage; 15] = [
        Stage::Spelling,
        Stage::Intent,
        Stage::ActionCandidates,
        Stage::Priors,
        Stage::Narrowing,
        Stage::Outcome,
        Stage::Action,
        Stage::Thin,
        Stage::Tokens,
        Stage::Owner,
        Stage::Answer,
        Stage::Verb,
        Stage::Path,
        Stage::Deprecation,
        Stage::Named,
    ];

    /// The name `stages` lists it by.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Spelling => "spelling",
            Stage::Intent => "intent",
            Stage::ActionCandidates => "action_candidates",
            Stage::Priors => "priors",
            Stage::Narrowing => "narrowing",
            Stage::Outcome => "outcome",
            Stage::Action => "action",
            Stage::Thin => "thin",
            Stage::Tokens => "tokens",
            Stage::Owner => "owner",
            Stage::Answer => "answer",
            Stage::Verb => "verb",
            Stage::Path => "path",
            Stage::Deprecation => "deprecation",
            Stage::Named => "named",
        }
    }
}

/// How lexical and vector evidence combine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "method")]
pub enum Fusion {
    /// Reciprocal rank fusion: `sum 1 / (k + rank)`, scaled so rank 1 in both lists is 1.0.
    Rrf { k: f32 },
    /// A weighted sum of the cosine similarity and the BM25 score relative to the query's best.
    Weighted { vector_weight: f32 },
}

/// Weighted at 0.95 measured best on the three dev sets once members had several vectors:
/// pooled recall@5 0.59 and MRR@10 0.46, against 0.57 and 0.43 at 0.8 (lexical evidence then
/// mostly breaks ties; exact names are handled before fusion).
impl Default for Fusion {
    fn default() -> Self {
        Fusion::Weighted {
            vector_weight: 0.95,
        }
    }
}

/// Every tunable number of the ranking, and the stages that run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Rank with the fitted ranker (`ranker`) whenever the question has its vector; off ranks
    /// with the fused lists and the re-ranking stages, as before the ranker was fitted.
    /// `deprecation` and `named` apply either way.
    pub learned: bool,
    /// A ranker fitted by bench/fit/fit.py: its ONNX file, with the `.json` it writes beside
    /// it. Default: the one fitted for the default model, built in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranker: Option<std::path::PathBuf>,
    /// The stages that run; leave one out to switch it off. Re-ranking stages run in this
    /// order. Default: all of them (see [`Stage`]).
    pub stages: Vec<Stage>,
    /// How the lexical and vector scores combine.
    pub fusion: Fusion,
    /// Candidates taken from each list before fusion, at least (more when a page reaches
    /// deeper).
    pub candidate_depth: usize,
    /// Candidates taken from the lexical list of each phrase of a question that lists several
    /// things ([`crate::query::phrases`]).
    pub phrase_depth: usize,
    /// How many of a question's phrases are embedded and searched among the vectors.
    pub phrase_count: usize,
    /// The mutation fields most like the question that join the candidates, whatever its
    /// shape (an action may not read as one).
    pub mutation_depth: usize,
    /// How many of the best fields bring their arguments into the candidates.
    pub argument_depth: usize,
    /// Member priors (`priors` stage).
    pub priors: Priors,
    /// What a member that narrows reads counts for when the question asks for a list narrowed
    /// down (`narrowing` stage).
    pub narrowing: f32,
    /// Share of its score anything but a mutation field keeps when the question is an action
    /// (`action` stage).
    pub not_an_action: f32,
    /// How many of the best fused members are matched token by token (`tokens` stage).
    pub token_depth: usize,
    /// Share of a score the token match gives (`tokens` stage).
    pub token_share: f32,
    /// How many of the best members are weighed by their types' likeness to a phrase of the
    /// question (`owner`, `answer` and `verb` stages).
    pub likeness_depth: usize,
    /// How far below the type most like the phrase another type may be and still count as it.
    pub likeness_margin: f32,
    /// Share of the owner's likeness to its type a member gains (`owner` stage).
    pub owner_share: f32,
    /// Share of the answer's likeness to the type a member returns that it gains (`answer`).
    pub answer_share: f32,
    /// How like a type the answer's words must be to name it (`answer` stage).
    pub answer_least: f32,
    /// Share of its likeness to an action's verb a mutation field gains (`verb` stage).
    pub verb_share: f32,
    /// How many of the best members lift the field their path runs through (`path` stage).
    pub path_depth: usize,
    /// Share of a member's score the field before it on its path gains (`path` stage).
    pub path_share: f32,
    /// Share of its score a thin member keeps when the question does not use its name
    /// (`thin` stage).
    pub unnamed_thin: f32,
    /// How many fields must repeat an argument's name and description for it to count as
    /// thin (Relay's `first`, `after`, ...).
    pub generic_argument_fields: usize,
    /// Share of its score a deprecated member keeps (`deprecation` stage).
    pub deprecated_factor: f32,
}

impl Default for Params {
    /// The values measured for the default model (all-MiniLM-L6-v2, int8); the evidence for
    /// each is in docs/RANKING.md.
    fn default() -> Self {
        Params {
            learned: true,
            ranker: None,
            stages: Stage::ALL.to_vec(),
            fusion: Fusion::default(),
            candidate_depth: 100,
            phrase_depth: 30,
            phrase_count: 6,
            mutation_depth: 30,
            argument_depth: 20,
            priors: Priors::default(),
            narrowing: 1.1,
            not_an_action: 1.0 / 1.5,
            token_depth: 20,
            token_share: 0.27,
            likeness_depth: 50,
            likeness_margin: 0.05,
            owner_share: 0.05,
            answer_share: 0.02,
            answer_least: 0.4,
            verb_share: 0.1,
            path_depth: 50,
            path_share: 0.07,
            unnamed_thin: 0.9,
            generic_argument_fields: 20,
            deprecated_factor: 0.8,
        }
    }
}

/// The params measured for one model.
type Measured = fn() -> Params;

/// Params measured for particular models, by [`crate::embed::model_key`].
const MEASURED: &[(u64, Measured)] = &[(DEFAULT_MODEL_KEY, Params::default)];

/// The key of the default model as `scripts/setup` installs it (all-MiniLM-L6-v2, int8, mean
/// pooling, 384 dimensions, 256 tokens) with its built-in tuning.
pub const DEFAULT_MODEL_KEY: u64 = 0x8dc7_28be_c285_3f33;

/// A [`Params`] the engine cannot rank with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamsError {
    #[error("ranking parameter `{name}` is {value}, outside {range}")]
    OutOfRange {
        name: &'static str,
        value: f64,
        range: &'static str,
    },
    #[error("ranking stage `{0}` is listed twice")]
    Repeated(&'static str),
}

impl Params {
    /// The params measured for the model with `model_key`; the default model's for another.
    pub fn for_model(model_key: u64) -> Params {
        MEASURED
            .iter()
            .find(|(key, _)| *key == model_key)
            .map_or_else(Params::default, |(_, params)| params())
    }

    /// Tells params apart: 0 for the defaults (so cursors stay valid across a rollout that
    /// keeps them), a hash of their JSON otherwise.
    pub fn fingerprint(&self) -> u64 {
        if *self == Params::default() {
            return 0;
        }
        serde_json::to_vec(self).map_or(1, |json| xxhash_rust::xxh3::xxh3_64(&json))
    }

    /// Whether `stage` runs.
    pub fn runs(&self, stage: Stage) -> bool {
        self.stages.contains(&stage)
    }

    /// Checks every number is in its range and no stage is listed twice.
    pub fn validate(&self) -> Result<(), ParamsError> {
        let mut seen = HashSet::new();
        for stage in &self.stages {
            if !seen.insert(*stage) {
                return Err(ParamsError::Repeated(stage.name()));
            }
        }
        let shares = [
            ("priors.below_root", self.priors.below_root),
            ("priors.plumbing", self.priors.plumbing),
            ("priors.types", self.priors.types),
            ("priors.repeated", self.priors.repeated),
            ("not_an_action", self.not_an_action),
            ("token_share", self.token_share),
            ("likeness_margin", self.likeness_margin),
            ("owner_share", self.owner_share),
            ("answer_share", self.answer_share),
            ("answer_least", self.answer_least),
            ("verb_share", self.verb_share),
            ("path_share", self.path_share),
            ("unnamed_thin", self.unnamed_thin),
            ("deprecated_factor", self.deprecated_factor),
        ];
        for (name, value) in shares {
            if !(0.0..=1.0).contains(&value) {
                return Err(out_of_range(name, value, "[0, 1]"));
            }
        }
        if !(1.0..=2.0).contains(&self.narrowing) {
            return Err(out_of_range("narrowing", self.narrowing, "[1, 2]"));
        }
        match self.fusion {
            Fusion::Weighted { vector_weight } if !(0.0..=1.0).contains(&vector_weight) => {
                return Err(out_of_range(
                    "fusion.vector_weight",
                    vector_weight,
                    "[0, 1]",
                ));
            }
            Fusion::Rrf { k } if !(k >= 0.0 && k.is_finite()) => {
                return Err(out_of_range("fusion.k", k, "[0, inf)"));
            }
            _ => {}
        }
        let depths = [
            ("candidate_depth", self.candidate_depth),
            ("phrase_depth", self.phrase_depth),
            ("phrase_count", self.phrase_count),
            ("mutation_depth", self.mutation_depth),
            ("argument_depth", self.argument_depth),
            ("token_depth", self.token_depth),
            ("likeness_depth", self.likeness_depth),
            ("path_depth", self.path_depth),
            ("generic_argument_fields", self.generic_argument_fields),
        ];
        for (name, value) in depths {
            if !(1..=10_000).contains(&value) {
                return Err(ParamsError::OutOfRange {
                    name,
                    value: value as f64,
                    range: "[1, 10000]",
                });
            }
        }
        Ok(())
    }
}

fn out_of_range(name: &'static str, value: f32, range: &'static str) -> ParamsError {
    ParamsError::OutOfRange {
        name,
        value: f64::from(value),
        range,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_holds_only_what_it_changes_and_defaults_round_trip() {
        let params: Params =
            serde_json::from_str(r#"{"stages": ["tokens", "named"], "path_share": 0.1}"#)
                .expect("parses");
        assert_eq!(params.stages, [Stage::Tokens, Stage::Named]);
        assert_eq!(params.path_share, 0.1);
        assert_eq!(params.token_share, Params::default().token_share);
        let text = serde_json::to_string(&Params::default()).expect("serializes");
        let back: Params = serde_json::from_str(&text).expect("parses back");
        assert_eq!(back, Params::default());
    }

    #[test]
    fn bad_params_name_the_field() {
        let error = serde_json::from_str::<Params>(r#"{"path_shares": 0.1}"#)
            .expect_err("an unknown field");
        assert!(error.to_string().contains("path_shares"), "{error}");
        let error = serde_json::from_str::<Params>(r#"{"stages": ["tokns"]}"#)
            .expect_err("an unknown stage");
        assert!(error.to_string().contains("tokns"), "{error}");
        let params = Params {
            owner_share: 1.5,
            ..Params::default()
        };
        assert_eq!(
            params.validate().expect_err("out of range").to_string(),
            "ranking parameter `owner_share` is 1.5, outside [0, 1]"
        );
        let params = Params {
            stages: vec![Stage::Path, Stage::Path],
            ..Params::default()
        };
        assert_eq!(params.validate(), Err(ParamsError::Repeated("path")));
        assert_eq!(Params::default().validate(), Ok(()));
    }

    #[test]
    fn an_unmeasured_model_ranks_with_the_default_models_params() {
        assert_eq!(Params::for_model(0x1234_5678), Params::default());
        assert_eq!(Params::for_model(DEFAULT_MODEL_KEY), Params::default());
    }
}
