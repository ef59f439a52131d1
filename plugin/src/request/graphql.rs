//! GraphQL over HTTP, the part the plugin needs before the router parses anything: whether a
//! request might use the new fields (a byte check, so other requests pay almost nothing), and
//! the GraphQL requests a POST body (one object or a batched array) or a GET query string holds.

use serde_json_bytes::{ByteString, Map, Value};

use crate::error::{Code, RequestError};

pub type JsonMap = Map<ByteString, Value>;

/// Root fields the plugin answers.
pub const SEARCH: &str = "__search";
pub const DEFINITIONS: &str = "__definitions";
pub const PROMPTS: &str = "__prompts";

/// Whether `bytes` could hold an operation using the new fields. False positives (the words in
/// a string) are fine: such requests are parsed and then passed through.
pub fn mentions_semantic_fields(bytes: &[u8]) -> bool {
    contains(bytes, SEARCH.as_bytes())
        || contains(bytes, DEFINITIONS.as_bytes())
        || contains(bytes, PROMPTS.as_bytes())
}

/// Whether `bytes` could be a request naming an operation by its persisted-query hash alone.
pub fn mentions_persisted_query(bytes: &[u8]) -> bool {
    contains(bytes, b"persistedQuery")
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// One GraphQL request: `query`, `operationName`, `variables`, `extensions`.
#[derive(Debug, Clone, Default)]
pub struct GraphqlRequest {
    pub query: Option<String>,
    pub operation_name: Option<String>,
    pub variables: JsonMap,
    pub extensions: JsonMap,
}

impl GraphqlRequest {
    /// The sha256 of a persisted query the request names, if any.
    pub fn persisted_query_hash(&self) -> Option<&str> {
        self.extensions
            .get("persistedQuery")?
            .as_object()?
            .get("sha256Hash")?
            .as_str()
    }

    pub fn to_json(&self) -> Value {
        let mut object = JsonMap::new();
        if let Some(query) = &self.query {
            object.insert("query", Value::String(query.as_str().into()));
        }
        if let Some(name) = &self.operation_name {
            object.insert("operationName", Value::String(name.as_str().into()));
        }
        if !self.variables.is_empty() {
            object.insert("variables", Value::Object(self.variables.clone()));
        }
        if !self.extensions.is_empty() {
            object.insert("extensions", Value::Object(self.extensions.clone()));
        }
        Value::Object(object)
    }

    fn from_json(value: Value) -> Result<Self, RequestError> {
        let Value::Object(mut object) = value else {
            return Err(invalid("a GraphQL request must be a JSON object"));
        };
        let query = match object.remove("query") {
            None | Some(Value::Null) => None,
            Some(Value::String(query)) => Some(query.as_str().to_string()),
            Some(_) => return Err(invalid("`query` must be a string")),
        };
        let operation_name = match object.remove("operationName") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.as_str().to_string()),
            Some(_) => return Err(invalid("`operationName` must be a string")),
        };
        let variables = object_field(&mut object, "variables")?;
        let extensions = object_field(&mut object, "extensions")?;
        Ok(GraphqlRequest {
            query,
            operation_name,
            variables,
            extensions,
        })
    }
}

fn object_field(object: &mut JsonMap, key: &str) -> Result<JsonMap, RequestError> {
    match object.remove(key) {
        None | Some(Value::Null) => Ok(JsonMap::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(invalid(format!("`{key}` must be a JSON object"))),
    }
}

fn invalid(message: impl Into<String>) -> RequestError {
    RequestError::new(Code::InvalidRequest, message)
}

/// What an HTTP request carries.
#[derive(Debug)]
pub enum Incoming {
    Single(GraphqlRequest),
    /// A batched array; each entry is answered on its own.
    Batch(Vec<Result<GraphqlRequest, RequestError>>),
}

/// Reads a POST body: one request object or a batched array of them.
pub fn from_body(body: &[u8]) -> Result<Incoming, RequestError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| invalid(format!("the request body is not valid JSON: {e}")))?;
    match value {
        Value::Array(entries) => Ok(Incoming::Batch(
            entries.into_iter().map(GraphqlRequest::from_json).collect(),
        )),
        value => GraphqlRequest::from_json(value).map(Incoming::Single),
    }
}

/// Reads a GET query string (`query`, `operationName`, and JSON-encoded `variables` and
/// `extensions`).
pub fn from_query_string(query_string: &str) -> Result<GraphqlRequest, RequestError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query_string)
        .map_err(|e| invalid(format!("the query string cannot be decoded: {e}")))?;
    let mut request = GraphqlRequest::default();
    for (key, value) in pairs {
        match key.as_str() {
            "query" => request.query = Some(value),
            "operationName" => request.operation_name = Some(value).filter(|v| !v.is_empty()),
            "variables" | "extensions" => {
                let parsed: Value = serde_json::from_str(&value)
                    .map_err(|e| invalid(format!("`{key}` is not valid JSON: {e}")))?;
                let map = match parsed {
                    Value::Object(map) => map,
                    Value::Null => JsonMap::new(),
                    _ => return Err(invalid(format!("`{key}` must be a JSON object"))),
                };
                if key == "variables" {
                    request.variables = map;
                } else {
                    request.extensions = map;
                }
            }
            _ => {}
        }
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_single_batch_and_get() {
        let Ok(Incoming::Single(single)) = from_body(
            br#"{"query":"{ __search(query: \"x\") { coordinate } }","variables":{"a":1}}"#,
        ) else {
            panic!("a single request");
        };
        assert!(single.query.as_deref().is_some_and(|q| q.contains(SEARCH)));
        assert_eq!(single.variables.get("a"), Some(&Value::from(1)));

        let Ok(Incoming::Batch(batch)) = from_body(br#"[{"query":"{a}"}, 3]"#) else {
            panic!("a batch");
        };
        assert!(batch[0].is_ok());
        assert_eq!(
            batch[1].as_ref().err().map(|e| e.code),
            Some(Code::InvalidRequest)
        );

        let get = from_query_string("query=%7B__typename%7D&variables=%7B%22q%22%3A%22x%22%7D")
            .expect("a GET request");
        assert_eq!(get.query.as_deref(), Some("{__typename}"));
        assert_eq!(get.variables.get("q"), Some(&Value::from("x")));

        for bad in [
            &b"{"[..],
            b"\"text\"",
            br#"{"query": 3}"#,
            br#"{"variables": []}"#,
        ] {
            let error = from_body(bad).expect_err("malformed");
            assert_eq!(error.code, Code::InvalidRequest, "{error}");
        }
    }
}
