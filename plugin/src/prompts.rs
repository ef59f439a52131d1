//! Prompt templates (the RFC's `__prompts`, and MCP's `prompts/list` and `prompts/get`), read
//! from the Markdown files of the `prompts` folder at start and on every reload.
//!
//! A file is a YAML front matter and a body:
//!
//! ```markdown
//! ---
//! name: review-a-book
//! description: Write a review of a book the customer bought.
//! arguments:
//!   - name: isbn
//!     description: The book's ISBN.
//!     required: true
//! tenants: [public, staff]
//! ---
//! Find the book with ISBN {{isbn}}, then ...
//! ```
//!
//! `tenants` (optional) names the tenants that see the prompt; without it every tenant does.
//! Every `{{argument}}` of the body (braces around a GraphQL name, no spaces) must be declared;
//! `prompts/get` fills them in, in one pass (a missing optional one is left empty). Braces
//! around anything else are text. A file that breaks a rule stops the start (or the reload) with
//! an error naming the file.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use apollo_compiler::ast::{InputValueDefinition, Type};
use apollo_compiler::{Name, Node};
use serde::Deserialize;

/// Most prompt files a folder may hold, and the largest one, in bytes.
const MAX_PROMPTS: usize = 200;
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// One argument of a prompt.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Argument {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    arguments: Vec<Argument>,
    #[serde(default)]
    tenants: Option<BTreeSet<String>>,
}

/// One prompt template.
#[derive(Debug)]
pub struct Prompt {
    pub name: String,
    pub description: Option<String>,
    pub arguments: Vec<Argument>,
    /// The arguments as `__InputValue`s answer them: `String`, or `String!` when required.
    pub definitions: Vec<Node<InputValueDefinition>>,
    /// The tenants that see it; `None`: every tenant.
    tenants: Option<BTreeSet<String>>,
    template: String,
}

/// The prompts of the configured folder.
#[derive(Debug, Default, Clone)]
pub struct Prompts(Arc<[Prompt]>);

/// Why the prompts cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PromptsError {
    #[error("prompts: cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("prompts: {path}: {problem}")]
    Invalid { path: PathBuf, problem: String },
    #[error("prompts: {path} holds more than {MAX_PROMPTS} prompt files")]
    TooMany { path: PathBuf },
}

/// Why a prompt cannot be filled in.
#[derive(Debug, thiserror::Error)]
pub enum FillError {
    #[error("prompt `{prompt}` needs the argument `{argument}`")]
    Missing { prompt: String, argument: String },
    #[error("prompt `{prompt}` has no argument `{argument}`")]
    Unknown { prompt: String, argument: String },
    #[error("the argument `{argument}` of prompt `{prompt}` must be a string")]
    NotText { prompt: String, argument: String },
}

impl Prompts {
    /// Reads every `*.md` file of `dir`, in name order; `tenants` are the configured tenant
    /// names (`None` without tenants), which a prompt's `tenants` must be among.
    pub fn load(dir: &Path, tenants: Option<&BTreeSet<String>>) -> Result<Self, PromptsError> {
        let read_error = |path: &Path, e: std::io::Error| PromptsError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| read_error(dir, e))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|e| e == "md") && path.is_file())
            .collect();
        files.sort();
        if files.len() > MAX_PROMPTS {
            return Err(PromptsError::TooMany {
                path: dir.to_path_buf(),
            });
        }
        let mut prompts = Vec::with_capacity(files.len());
        let mut names = HashSet::new();
        for path in files {
            let invalid = |problem: String| PromptsError::Invalid {
                path: path.clone(),
                problem,
            };
            let size = std::fs::metadata(&path)
                .map_err(|e| read_error(&path, e))?
                .len();
            if size > MAX_FILE_BYTES {
                return Err(invalid(format!("larger than {MAX_FILE_BYTES} bytes")));
            }
            let text = std::fs::read_to_string(&path).map_err(|e| read_error(&path, e))?;
            let prompt = parse(&text, tenants).map_err(invalid)?;
            if !names.insert(prompt.name.clone()) {
                return Err(invalid(format!(
                    "another file names a prompt `{}`",
                    prompt.name
                )));
            }
            prompts.push(prompt);
        }
        Ok(Prompts(prompts.into()))
    }

    /// The prompts `tenant` sees (`None`: a request without tenants, which sees every prompt).
    pub fn visible_to<'a>(
        &'a self,
        tenant: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Prompt> + 'a {
        self.0
            .iter()
            .filter(move |prompt| prompt.visible_to(tenant))
    }

    /// The prompt `name`, if `tenant` sees it.
    pub fn get(&self, name: &str, tenant: Option<&str>) -> Option<&Prompt> {
        self.0
            .iter()
            .find(|prompt| prompt.name == name && prompt.visible_to(tenant))
    }
}

impl Prompt {
    fn visible_to(&self, tenant: Option<&str>) -> bool {
        match (&self.tenants, tenant) {
            (None, _) => true,
            (Some(tenants), Some(tenant)) => tenants.contains(tenant),
            (Some(_), None) => false,
        }
    }

    /// The template with `arguments` in place of their `{{name}}`s.
    pub fn fill(
        &self,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, FillError> {
        for name in arguments.keys() {
            if !self.arguments.iter().any(|a| a.name == *name) {
                return Err(FillError::Unknown {
                    prompt: self.name.clone(),
                    argument: name.clone(),
                });
            }
        }
        let mut values = HashMap::new();
        for argument in &self.arguments {
            let value = match arguments.get(&argument.name) {
                Some(serde_json::Value::String(value)) => value.as_str(),
                Some(_) => {
                    return Err(FillError::NotText {
                        prompt: self.name.clone(),
                        argument: argument.name.clone(),
                    })
                }
                None if argument.required => {
                    return Err(FillError::Missing {
                        prompt: self.name.clone(),
                        argument: argument.name.clone(),
                    })
                }
                None => "",
            };
            values.insert(argument.name.as_str(), value);
        }
        // One pass: a value that holds `{{another}}` stays as it is.
        let mut text = String::with_capacity(self.template.len());
        let mut rest = self.template.as_str();
        while let Some((before, name, after)) = placeholder(rest) {
            text.push_str(before);
            text.push_str(values.get(name).copied().unwrap_or(""));
            rest = after;
        }
        text.push_str(rest);
        Ok(text)
    }
}

/// A GraphQL name: arguments are `__InputValue`s.
fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The first `{{name}}` of `text` whose name is a GraphQL name: the text before it, the name,
/// and the text after it. Braces around anything else are text.
fn placeholder(text: &str) -> Option<(&str, &str, &str)> {
    let mut from = 0;
    while let Some(start) = text[from..].find("{{").map(|i| from + i) {
        let inner = &text[start + 2..];
        if let Some(end) = inner.find("}}") {
            let name = &inner[..end];
            if is_name(name) {
                return Some((&text[..start], name, &inner[end + 2..]));
            }
        }
        from = start + 2;
    }
    None
}

/// Whether `line` is a front matter fence (`---`, trailing spaces and `\r` allowed).
fn is_fence(line: &str) -> bool {
    line.trim_end() == "---"
}

fn parse(text: &str, tenants: Option<&BTreeSet<String>>) -> Result<Prompt, String> {
    let text = text.trim_start_matches('\u{feff}');
    let mut lines = text.split_inclusive('\n');
    if !lines.next().is_some_and(is_fence) {
        return Err("no front matter: the file must start with a `---` line".into());
    }
    let mut front = String::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if is_fence(line) {
            closed = true;
            break;
        }
        front.push_str(line);
    }
    if !closed {
        return Err("the front matter has no closing `---` line".into());
    }
    let front: FrontMatter =
        serde_yaml::from_str(&front).map_err(|e| format!("front matter: {e}"))?;
    let body: String = lines.collect();
    if front.name.is_empty()
        || !front
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "name `{}` must be letters, digits, `_` and `-`",
            front.name
        ));
    }
    let mut seen = HashSet::new();
    for argument in &front.arguments {
        if !is_name(&argument.name) {
            return Err(format!(
                "argument `{}` is not a GraphQL name",
                argument.name
            ));
        }
        if !seen.insert(argument.name.as_str()) {
            return Err(format!("argument `{}` is declared twice", argument.name));
        }
    }
    let mut rest = body.as_str();
    while let Some((_, name, after)) = placeholder(rest) {
        if !seen.contains(name) {
            return Err(format!(
                "the body uses `{{{{{name}}}}}`, which is not a declared argument"
            ));
        }
        rest = after;
    }
    if let Some(named) = &front.tenants {
        let Some(configured) = tenants else {
            return Err("names tenants, but no tenants are configured".into());
        };
        if let Some(unknown) = named.iter().find(|t| !configured.contains(*t)) {
            return Err(format!("tenant `{unknown}` is not configured"));
        }
    }
    let definitions = front
        .arguments
        .iter()
        .map(|argument| {
            let string = Name::new_static_unchecked("String");
            Node::new(InputValueDefinition {
                description: argument.description.as_deref().map(Into::into),
                // Checked above to be a GraphQL name.
                name: Name::new_unchecked(&argument.name),
                ty: Node::new(match argument.required {
                    true => Type::NonNullNamed(string),
                    false => Type::Named(string),
                }),
                default_value: None,
                directives: Default::default(),
            })
        })
        .collect();
    Ok(Prompt {
        name: front.name,
        description: front.description,
        definitions,
        arguments: front.arguments,
        tenants: front.tenants,
        template: body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REVIEW: &str = "---\nname: review-a-book\ndescription: Write a review.\narguments:\n  - name: isbn\n    description: The book's ISBN.\n    required: true\n  - name: tone\ntenants: [staff]\n---\nFind the book {{isbn}}; write it {{tone}}.\n";

    fn staff() -> BTreeSet<String> {
        ["staff".to_string(), "public".to_string()].into()
    }

    #[test]
    fn a_prompt_is_filled_in_and_seen_by_its_tenants_only() {
        let prompt = parse(REVIEW, Some(&staff())).unwrap();
        let arguments = serde_json::json!({ "isbn": "978" });
        assert_eq!(
            prompt.fill(arguments.as_object().unwrap()).unwrap(),
            "Find the book 978; write it .\n"
        );
        assert!(prompt.visible_to(Some("staff")) && !prompt.visible_to(Some("public")));
        let missing = prompt.fill(&serde_json::Map::new()).unwrap_err();
        assert!(missing.to_string().contains("`isbn`"), "{missing}");
        let unknown = serde_json::json!({ "isbn": "1", "nope": "x" });
        assert!(prompt.fill(unknown.as_object().unwrap()).is_err());
        // A value is never filled in again, and braces around other text stay.
        let crlf = "---\r\nname: x\r\narguments: [{ name: a }, { name: b }]\r\n---  \r\n{{a}} {{b}} {{ not one }}\r\n";
        let prompt = parse(crlf, None).unwrap();
        let values = serde_json::json!({ "a": "{{b}}", "b": "B" });
        assert_eq!(
            prompt.fill(values.as_object().unwrap()).unwrap(),
            "{{b}} B {{ not one }}\r\n"
        );
    }

    #[test]
    fn a_broken_file_is_refused_with_the_reason() {
        for (text, reason) in [
            ("name: x\n", "no front matter"),
            ("---\nname: x\n", "closing"),
            ("---\nname: x\n---\n{{who}}", "`{{who}}`"),
            ("---\nname: x\n----\n", "closing"),
            ("---\nname: x y\n---\n", "must be letters"),
            (
                "---\nname: x\narguments: [{ name: 1a }]\n---\n",
                "not a GraphQL name",
            ),
            (
                "---\nname: x\ntenants: [nobody]\n---\n",
                "`nobody` is not configured",
            ),
            ("---\nname: x\nsurprise: 1\n---\n", "surprise"),
        ] {
            let error = parse(text, Some(&staff())).unwrap_err();
            assert!(error.contains(reason), "{text:?}: {error}");
        }
        assert!(parse("---\nname: x\ntenants: [staff]\n---\n", None)
            .unwrap_err()
            .contains("no tenants are configured"));
    }
}
