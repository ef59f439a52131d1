//! Starts the real `wayfinder-router` process on 127.0.0.1 and speaks HTTP to it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wayfinder_tests::router::{free_port, RouterProcess};
use wayfinder_tests::{repo_path, schema_path};

/// The example's subgraphs do not run: the router answers `me` and `authors` from these.
pub const EXAMPLE_MOCKS: &str = "\
experimental_mock_subgraphs:
  accounts:
    query:
      me: { __typename: Customer, id: c1, displayName: Ada }
  catalog:
    query:
      authors:
        - { __typename: Author, id: a1, name: Le Guin }";

/// The plugin's MCP endpoint, on the router's own port (`{port}`: see [`Router::start`]).
pub const MCP_ON: &str = "\
mcp:
  enabled: true
  listen: 127.0.0.1:{port}";

pub fn example_supergraph() -> PathBuf {
    repo_path("examples/bookshop/supergraph.graphql")
}

pub fn spotify_supergraph() -> PathBuf {
    schema_path("federated/spotify-showcase/supergraph.graphql")
}

/// A running router, killed on drop.
pub struct Router {
    process: RouterProcess,
    pub url: String,
    pub dir: tempfile::TempDir,
    pub supergraph: PathBuf,
    client: reqwest::Client,
}

pub struct Response {
    pub status: u16,
    pub body: Value,
}

impl Response {
    pub fn data(&self) -> &Value {
        &self.body["data"]
    }

    /// The `extensions.code` of every error.
    pub fn codes(&self) -> Vec<String> {
        self.body["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| e["extensions"]["code"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Router {
    /// Starts the router on `supergraph` (copied, so a test can rewrite it) with the plugin's
    /// section `plugin` (YAML, indented under `wayfinder.search:`) and `extra` top-level YAML.
    pub async fn start(supergraph: &Path, plugin: &str, extra: &str) -> Router {
        Self::start_indexing(supergraph, "", plugin, extra).await
    }

    /// [`Router::start`], with `index` keys (YAML, one a line) beside the test cache's.
    pub async fn start_indexing(
        supergraph: &Path,
        index: &str,
        plugin: &str,
        extra: &str,
    ) -> Router {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let copy = dir.path().join("supergraph.graphql");
        std::fs::copy(supergraph, &copy).expect("copies the supergraph");
        let port = free_port();
        // The test cache unless `index` names another.
        let cache = if index.contains("cache_dir:") {
            String::new()
        } else {
            let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wayfinder-cache");
            format!("      cache_dir: {}\n", cache.display())
        };
        // `{port}` in either section stands for the router's port.
        let plugin = indent(&plugin.replace("{port}", &port.to_string()), 4);
        let extra = extra.replace("{port}", &port.to_string());
        let index = indent(index, 6);
        let config = format!(
            "supergraph:\n  listen: 127.0.0.1:{port}\n  introspection: true\n\
             health_check:\n  enabled: false\n\
             homepage:\n  enabled: false\n\
             plugins:\n  wayfinder.search:\n    index:\n{cache}      workers: 1\n{index}\n{plugin}\n\
             {extra}\n",
        );
        let config_path = dir.path().join("router.yaml");
        std::fs::write(&config_path, config).expect("writes router.yaml");
        let process = RouterProcess::start(
            Path::new(env!("CARGO_BIN_EXE_wayfinder-router")),
            port,
            &config_path,
            &copy,
            &["--hot-reload"],
            dir.path().join("router.log"),
        )
        .await;
        Router {
            url: process.url.clone(),
            process,
            dir,
            supergraph: copy,
            // One connection per request: on a reload the router closes idle keep-alive
            // connections, and a request a client races onto one of them fails in transport
            // (hyper `IncompleteMessage`) with or without this plugin. The tests count what
            // the router answers, not that race.
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("an HTTP client"),
        }
    }

    pub fn log(&self) -> String {
        self.process.log()
    }

    /// The router's resident memory now, in bytes.
    pub fn rss_bytes(&self) -> u64 {
        self.process.rss_bytes()
    }

    /// Waits up to three minutes until the router's log contains `line` `count` times.
    pub async fn wait_for_lines(&self, line: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(180);
        while self.log().matches(line).count() < count {
            assert!(
                Instant::now() < deadline,
                "`{line}` {count} times:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Adds the root field `name` to the router's copy of the example supergraph: a hot
    /// reload with one new member to index.
    pub fn add_root_field(&self, name: &str) {
        let original = std::fs::read_to_string(&self.supergraph).unwrap();
        let changed = original.replacen(
            "  \"\"\"Every author, alphabetically.\"\"\"",
            &format!(
                "  \"\"\"Books chosen for the {name} shelf.\"\"\"\n  {name}: [Book!]! @join__field(graph: CATALOG)\n\n  \"\"\"Every author, alphabetically.\"\"\""
            ),
            1,
        );
        assert_ne!(changed, original, "the fixture has the anchor line");
        std::fs::write(&self.supergraph, changed).unwrap();
    }

    /// Waits up to two minutes until the router's log contains `line`.
    pub async fn wait_for_log(&mut self, line: &str) {
        self.process
            .wait_for(line, std::time::Duration::from_secs(120))
            .await;
    }

    pub async fn try_post(
        &self,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> Result<Response, reqwest::Error> {
        let mut request = self.client.post(&self.url).json(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        read(request.send().await?).await
    }

    /// [`Router::try_post`], sent once more when the router reset the connection without an
    /// answer, as a load balancer would: on every reload the router hands its listener to a
    /// new server and drops a connection it had accepted but not read
    /// (apollographql/router#5185). Each resend is counted in `resent`.
    pub async fn post_resending(
        &self,
        body: &Value,
        headers: &[(&str, &str)],
        resent: &AtomicUsize,
    ) -> Result<Response, reqwest::Error> {
        let response = self.try_post(body, headers).await;
        if response.as_ref().is_err_and(|e| e.status().is_none()) {
            resent.fetch_add(1, Ordering::Relaxed);
            return self.try_post(body, headers).await;
        }
        response
    }

    pub async fn post(&self, body: &Value, headers: &[(&str, &str)]) -> Response {
        self.try_post(body, headers)
            .await
            .unwrap_or_else(|e| panic!("POST failed: {e}\n{}", self.log()))
    }

    /// A POST of `query` with `variables`.
    pub async fn query(&self, query: &str, variables: Value, headers: &[(&str, &str)]) -> Response {
        self.post(&json!({ "query": query, "variables": variables }), headers)
            .await
    }

    /// A POST of raw bytes (malformed bodies).
    pub async fn post_raw(&self, body: &str) -> Response {
        let response = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("POST");
        read(response).await.expect("a response")
    }

    pub async fn get(&self, params: &[(&str, &str)]) -> Response {
        self.get_as(params, &[]).await
    }

    /// A GET with `headers` beside the CSRF preflight header.
    pub async fn get_as(&self, params: &[(&str, &str)], headers: &[(&str, &str)]) -> Response {
        let mut request = self
            .client
            .get(&self.url)
            .query(params)
            .header("apollo-require-preflight", "true");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        read(request.send().await.expect("GET"))
            .await
            .expect("a response")
    }
}

impl Router {
    /// One MCP `tools/call` of `tool` with `arguments` to the endpoint at `/mcp`, as raw
    /// JSON-RPC (the endpoint is stateless: no handshake first): the JSON-RPC response. Sent
    /// once more when the router reset the connection without an answer, as
    /// [`Router::post_resending`] does.
    pub async fn mcp_call(&self, tool: &str, arguments: Value, headers: &[(&str, &str)]) -> Value {
        let send = || {
            let mut request = self
                .client
                .post(format!("{}mcp", self.url))
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-06-18")
                .json(&json!({
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": { "name": tool, "arguments": arguments },
                }));
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            request.send()
        };
        let response = match send().await {
            Err(e) if e.status().is_none() => send().await,
            sent => sent,
        }
        .unwrap_or_else(|e| panic!("MCP POST failed: {e}\n{}", self.log()));
        let status = response.status();
        let text = response.text().await.expect("an MCP answer");
        assert!(status.is_success(), "MCP answered {status}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

/// An MCP tool result's text and whether it is an error.
pub fn mcp_text(response: &Value) -> (bool, String) {
    let result = &response["result"];
    (
        result["isError"].as_bool().unwrap_or(false),
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

/// The code of a failed MCP tool call (`extensions.code` of its first error).
pub fn mcp_code(response: &Value) -> String {
    let (error, text) = mcp_text(response);
    assert!(error, "expected a tool error, got {response}");
    let errors: Value = serde_json::from_str(&text).expect("errors as JSON");
    errors["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn read(response: reqwest::Response) -> Result<Response, reqwest::Error> {
    let status = response.status().as_u16();
    let text = response.text().await?;
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok(Response { status, body })
}

fn indent(text: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    text.lines()
        .map(|line| format!("{pad}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits until `check` holds, asking every 250 ms; fails with the router's log after `timeout`.
pub async fn wait_for<F, Fut>(router: &Arc<Router>, timeout: Duration, mut check: F)
where
    F: FnMut(Arc<Router>) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check(Arc::clone(router)).await {
        assert!(
            Instant::now() < deadline,
            "timed out; router log:\n{}",
            router.log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A subgraph that records the query of every request it receives and answers `{"data": {}}`
/// (every field null); a router's subgraphs point at it through [`CountingSubgraph::overrides`].
pub struct CountingSubgraph {
    pub url: String,
    received: Arc<std::sync::Mutex<Vec<String>>>,
}

impl CountingSubgraph {
    pub async fn start() -> CountingSubgraph {
        let received = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = Arc::clone(&received);
        let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
            let record = Arc::clone(&record);
            async move {
                let query = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v["query"].as_str().map(str::to_string))
                    .unwrap_or_default();
                record.lock().expect("not poisoned").push(query);
                axum::Json(json!({ "data": {} }))
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds a loopback port");
        let url = format!("http://{}/", listener.local_addr().expect("an address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        CountingSubgraph { url, received }
    }

    /// How many requests reached the subgraph so far.
    pub fn count(&self) -> usize {
        self.received.lock().expect("not poisoned").len()
    }

    /// The queries received from the `from`th request on.
    pub fn received_since(&self, from: usize) -> Vec<String> {
        self.received.lock().expect("not poisoned")[from..].to_vec()
    }

    /// `override_subgraph_url` (router.yaml) sending every subgraph of `supergraph` here.
    pub fn overrides(&self, supergraph: &Path) -> String {
        let sdl = std::fs::read_to_string(supergraph).expect("reads the supergraph");
        let mut yaml = String::from("override_subgraph_url:\n");
        for line in sdl.lines() {
            if let Some(rest) = line.split("@join__graph(name: \"").nth(1) {
                let name = rest.split('"').next().unwrap_or_default();
                yaml.push_str(&format!("  {name}: {}\n", self.url));
            }
        }
        yaml
    }
}

/// graphql-js's own introspection query (with deprecated arguments and input fields).
pub fn introspection_query() -> String {
    let output = node(&["--query"], "");
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// graphql-js's `buildClientSchema` (and `validateSchema`) on an introspection response: the
/// schema's SDL, or why it was refused.
pub fn build_client_schema(introspection: &Value) -> Result<String, String> {
    let output = node(&[], &introspection.to_string());
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

fn node(arguments: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write as _;
    let script = repo_path("tests/js/build-client-schema.mjs");
    let mut child = std::process::Command::new("node")
        .arg(&script)
        .args(arguments)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node runs (scripts/setup installs it and graphql-js)");
    child
        .stdin
        .take()
        .expect("a stdin")
        .write_all(stdin.as_bytes())
        .expect("writes to node");
    child.wait_with_output().expect("node finishes")
}
