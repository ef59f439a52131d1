//! Typed errors of catalog building. Each names the input it rejects: the schema's source name,
//! and where known the line and column of the problem.

use std::fmt;
use std::path::PathBuf;

/// One problem in a schema document, at a place when the problem has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    /// 1-based line, when the problem has a location.
    pub line: Option<usize>,
    /// 1-based column, when the problem has a location.
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "{line}:{column}: {}", self.message),
            (Some(line), None) => write!(f, "{line}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// Why a schema could not be turned into a catalog.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{}: cannot read the schema: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The document is not valid GraphQL SDL (syntax or schema validation).
    #[error("{source_name}: invalid GraphQL schema:{}", list(problems))]
    InvalidSchema {
        source_name: String,
        problems: Vec<SchemaProblem>,
    },

    /// The supergraph links a spec (or a version of one) that Wayfinder cannot interpret.
    #[error("{source_name}:{problem}: unsupported link spec")]
    UnsupportedSpec {
        source_name: String,
        problem: SchemaProblem,
    },

    /// A syntactically valid supergraph that federation rejects (inconsistent join metadata...).
    #[error("{source_name}: invalid supergraph: {message}")]
    InvalidSupergraph {
        source_name: String,
        message: String,
    },
}

fn list(problems: &[SchemaProblem]) -> String {
    problems.iter().map(|p| format!("\n  {p}")).collect()
}
