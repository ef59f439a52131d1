//! Starts the real `wayfinder-router` process on 127.0.0.1 and speaks HTTP to it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("plugin/ has a parent")
        .to_path_buf()
}

pub fn example_supergraph() -> PathBuf {
    repo().join("examples/bookshop/supergraph.graphql")
}

/// The shared evaluation data beside the repository (or `$WAYFINDER_SHARED`).
pub fn shared() -> PathBuf {
    std::env::var_os("WAYFINDER_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared"))
}

pub fn spotify_supergraph() -> PathBuf {
    shared().join("eval/schemas/federated/spotify-showcase/supergraph.graphql")
}

/// A running router, killed on drop.
pub struct Router {
    child: Child,
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
        let dir = tempfile::tempdir().expect("a temporary folder");
        let copy = dir.path().join("supergraph.graphql");
        std::fs::copy(supergraph, &copy).expect("copies the supergraph");
        let port = free_port();
        let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wayfinder-cache");
        let plugin = indent(plugin, 4);
        let config = format!(
            "supergraph:\n  listen: 127.0.0.1:{port}\n  introspection: true\n\
             health_check:\n  enabled: false\n\
             homepage:\n  enabled: false\n\
             plugins:\n  wayfinder.search:\n    index:\n      cache_dir: {cache}\n      workers: 1\n{plugin}\n\
             {extra}\n",
            cache = cache.display(),
        );
        let config_path = dir.path().join("router.yaml");
        std::fs::write(&config_path, config).expect("writes router.yaml");
        let log = std::fs::File::create(dir.path().join("router.log")).expect("a log file");
        let child = Command::new(env!("CARGO_BIN_EXE_wayfinder-router"))
            .arg("--config")
            .arg(&config_path)
            .arg("--supergraph")
            .arg(&copy)
            .arg("--hot-reload")
            .env("WAYFINDER_HOME", repo().join(".wayfinder"))
            .env("APOLLO_TELEMETRY_DISABLED", "true")
            .env("APOLLO_ROUTER_LOG", "info")
            .stdout(Stdio::from(log.try_clone().expect("log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("starts wayfinder-router");
        let mut router = Router {
            child,
            url: format!("http://127.0.0.1:{port}/"),
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
        };
        router.wait_ready().await;
        router
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("router.log")).unwrap_or_default()
    }

    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the router exited ({status}):\n{}", self.log());
            }
            if let Ok(response) = self
                .try_post(&json!({ "query": "{ __typename }" }), &[])
                .await
            {
                if response.status == 200 {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the router did not start:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
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
        let response = self
            .client
            .get(&self.url)
            .query(params)
            .header("apollo-require-preflight", "true")
            .send()
            .await
            .expect("GET");
        read(response).await.expect("a response")
    }
}

async fn read(response: reqwest::Response) -> Result<Response, reqwest::Error> {
    let status = response.status().as_u16();
    let text = response.text().await?;
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok(Response { status, body })
}

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

fn indent(text: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    text.lines()
        .map(|line| format!("{pad}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
