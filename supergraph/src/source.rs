//! Reading a schema document: a Federation supergraph (linked with the `join` spec) or a plain
//! GraphQL schema. Produces the API schema (what clients can see) beside the full document,
//! whose federation directives the catalog reads, and the names under which the document links
//! the federation specs (`@link(as:)` and imports can rename them).

use apollo_compiler::ast::Value;
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{Name, Node, Schema};
use apollo_federation::ApiSchemaOptions;

use crate::error::{CatalogError, SchemaProblem};

/// Versions of the join spec whose directives the catalog knows how to read.
const JOIN_VERSIONS: &[&str] = &["v0.1", "v0.2", "v0.3", "v0.4", "v0.5"];
const SPEC_HOST: &str = "https://specs.apollo.dev/";

/// A loaded schema document.
pub(crate) struct Source {
    /// The API schema: `@inaccessible` members and federation machinery removed.
    pub api: Valid<Schema>,
    /// The document as written, for directives the API schema drops (`@join__*`, `@tag`).
    pub document: Valid<Schema>,
    /// Present for a supergraph.
    pub federation: Option<FederationNames>,
    /// Problems the load recovered from.
    pub warnings: Vec<SchemaProblem>,
}

/// How the document names the federation specs' directives, and its subgraphs.
pub(crate) struct FederationNames {
    /// `join__` unless the join link says `as:`.
    pub join_prefix: String,
    /// The `@tag` directive's name in this document, if the tag spec is linked.
    pub tag: Option<String>,
    /// Subgraphs in `join__Graph` order: (enum value, subgraph name, url).
    pub graphs: Vec<(Name, String, Option<String>)>,
}

impl FederationNames {
    pub fn join(&self, directive: &str) -> String {
        format!("{}{directive}", self.join_prefix)
    }

    pub fn graph_index(&self, enum_value: &str) -> Option<usize> {
        self.graphs
            .iter()
            .position(|(value, _, _)| value == enum_value)
    }
}

/// One `@link` (or legacy `@core`) on the schema definition.
struct Link {
    url: String,
    alias: Option<String>,
    imports: Vec<(String, Option<String>)>,
    executes: bool,
    line: Option<usize>,
    column: Option<usize>,
}

impl Link {
    /// (spec name, version) for an `https://specs.apollo.dev/NAME/vX.Y` url.
    fn apollo_spec(&self) -> Option<(&str, &str)> {
        let rest = self.url.strip_prefix(SPEC_HOST)?;
        rest.split_once('/')
    }

    /// The name the document gives to the spec's directive `@name` (its root directive).
    fn root_directive_name(&self, name: &str) -> String {
        let imported = self
            .imports
            .iter()
            .find(|(import, _)| import.trim_start_matches('@') == name);
        match (imported, &self.alias) {
            (Some((_, Some(alias))), _) => alias.trim_start_matches('@').to_string(),
            (Some((_, None)), _) => name.to_string(),
            (None, Some(alias)) => alias.clone(),
            (None, None) => name.to_string(),
        }
    }
}

pub(crate) fn load(sdl: &str, source_name: &str) -> Result<Source, CatalogError> {
    let (document, warnings) = parse(sdl, source_name)?;
    let links = read_links(&document);
    let Some(join) = links
        .iter()
        .find(|link| matches!(link.apollo_spec(), Some(("join", _))))
    else {
        // A plain schema: it is its own API schema.
        return Ok(Source {
            api: document.clone(),
            document,
            federation: None,
            warnings,
        });
    };
    check_links(&links, source_name)?;

    let supergraph = apollo_federation::Supergraph::from_schema(
        document.clone(),
        Some(&apollo_federation::default_supported_supergraph_specs()),
    )
    .map_err(|error| CatalogError::InvalidSupergraph {
        source_name: source_name.to_string(),
        message: error.to_string(),
    })?;
    let api = supergraph
        .to_api_schema(ApiSchemaOptions {
            include_defer: true,
            include_stream: false,
        })
        .map_err(|error| CatalogError::InvalidSupergraph {
            source_name: source_name.to_string(),
            message: format!("cannot derive the API schema: {error}"),
        })?
        .schema()
        .clone();

    let join_prefix = format!("{}__", join.alias.as_deref().unwrap_or("join"));
    let tag = links
        .iter()
        .find(|link| matches!(link.apollo_spec(), Some(("tag", _))))
        .map(|link| link.root_directive_name("tag"));
    let graphs = read_graphs(&document, &join_prefix);
    Ok(Source {
        api,
        document,
        federation: Some(FederationNames {
            join_prefix,
            tag,
            graphs,
        }),
        warnings,
    })
}

/// Parses and validates the document. A field or value defined twice in one type (published
/// schemas have such slips) is a warning, not a failure: the first definition stands, as it
/// does for GraphQL servers that accept them. Every other problem fails the load.
fn parse(
    sdl: &str,
    source_name: &str,
) -> Result<(Valid<Schema>, Vec<SchemaProblem>), CatalogError> {
    let (schema, warnings) = match Schema::parse(sdl, source_name) {
        Ok(schema) => (schema, Vec::new()),
        Err(invalid) => {
            let problems = problems(&invalid.errors);
            if !problems.iter().all(|p| p.message.starts_with(RECOVERABLE)) {
                return Err(CatalogError::InvalidSchema {
                    source_name: source_name.to_string(),
                    problems,
                });
            }
            (invalid.partial, problems)
        }
    };
    let document = schema
        .validate()
        .map_err(|invalid| CatalogError::InvalidSchema {
            source_name: source_name.to_string(),
            problems: problems(&invalid.errors),
        })?;
    Ok((document, warnings))
}

/// The build error of a definition repeated inside one type, where the first one is kept.
const RECOVERABLE: &str = "duplicate definitions for the";

fn problems(errors: &apollo_compiler::validation::DiagnosticList) -> Vec<SchemaProblem> {
    errors
        .iter()
        .map(|diagnostic| {
            let at = diagnostic.line_column_range().map(|range| range.start);
            SchemaProblem {
                line: at.map(|at| at.line),
                column: at.map(|at| at.column),
                message: diagnostic.error.to_string(),
            }
        })
        .collect()
}

/// Rejects, with the link's line, what the catalog cannot interpret: a join version it does not
/// know, or any spec linked `for: EXECUTION`/`SECURITY` that federation does not support (its
/// semantics would change what clients see).
fn check_links(links: &[Link], source_name: &str) -> Result<(), CatalogError> {
    let supported: Vec<String> = apollo_federation::default_supported_supergraph_specs()
        .iter()
        .map(ToString::to_string)
        .collect();
    for link in links {
        let problem = match link.apollo_spec() {
            Some(("join", version)) if !JOIN_VERSIONS.contains(&version) => Some(format!(
                "join spec {version} is not supported (supported: {})",
                JOIN_VERSIONS.join(", ")
            )),
            _ if link.executes && !supported.contains(&link.url) => Some(format!(
                "`{}` is linked for EXECUTION or SECURITY, and Wayfinder does not know its semantics",
                link.url
            )),
            _ => None,
        };
        if let Some(message) = problem {
            return Err(CatalogError::UnsupportedSpec {
                source_name: source_name.to_string(),
                problem: SchemaProblem {
                    line: link.line,
                    column: link.column,
                    message,
                },
            });
        }
    }
    Ok(())
}

fn read_links(document: &Valid<Schema>) -> Vec<Link> {
    let definition = &document.schema_definition;
    definition
        .directives
        .iter()
        .filter_map(|directive| {
            let url_argument = match directive.name.as_str() {
                "link" => "url",
                "core" => "feature",
                _ => return None,
            };
            let url = directive
                .specified_argument_by_name(url_argument)?
                .as_str()?
                .to_string();
            let alias = directive
                .specified_argument_by_name("as")
                .and_then(|value| value.as_str())
                .map(str::to_string);
            let executes = directive
                .specified_argument_by_name("for")
                .and_then(|value| value.as_enum())
                .is_some_and(|purpose| purpose == "EXECUTION" || purpose == "SECURITY");
            let imports = directive
                .specified_argument_by_name("import")
                .and_then(|value| value.as_list())
                .map(|items| items.iter().filter_map(read_import).collect())
                .unwrap_or_default();
            let at = directive
                .line_column_range(&document.sources)
                .map(|range| range.start);
            Some(Link {
                url,
                alias,
                imports,
                executes,
                line: at.map(|at| at.line),
                column: at.map(|at| at.column),
            })
        })
        .collect()
}

/// An import is `"@name"` or `{ name: "@name", as: "@other" }`.
fn read_import(item: &Node<Value>) -> Option<(String, Option<String>)> {
    if let Some(name) = item.as_str() {
        return Some((name.to_string(), None));
    }
    let fields = item.as_object()?;
    let field = |key: &str| {
        fields
            .iter()
            .find(|(name, _)| name == key)
            .and_then(|(_, value)| value.as_str())
            .map(str::to_string)
    };
    Some((field("name")?, field("as")))
}

fn read_graphs(document: &Valid<Schema>, join_prefix: &str) -> Vec<(Name, String, Option<String>)> {
    let graph_directive = format!("{join_prefix}graph");
    let Some(ExtendedType::Enum(graphs)) =
        document.types.get(format!("{join_prefix}Graph").as_str())
    else {
        return Vec::new();
    };
    graphs
        .values
        .values()
        .map(|value| {
            let directive = value.directives.get(&graph_directive);
            let argument = |key: &str| {
                directive
                    .and_then(|d| d.specified_argument_by_name(key))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            };
            let name = argument("name").unwrap_or_else(|| value.value.as_str().to_lowercase());
            (value.value.clone(), name, argument("url"))
        })
        .collect()
}
