//! A real Prometheus (Debian's, installed by `scripts/setup`) for the dashboard test: on a free
//! loopback port, in a temporary folder, scraping the targets it is given every second and
//! evaluating the rule files it is given every second, stopped on drop. Queries go through its
//! HTTP API, as Grafana's do.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::router::free_port;

pub struct Prometheus {
    child: Child,
    pub port: u16,
    dir: PathBuf,
    client: reqwest::Client,
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (`host:port`) at `metrics_path`, with `rules`
    /// (rule files) evaluated; waits until it is ready.
    pub async fn start(targets: &[String], metrics_path: &str, rules: &[&Path]) -> Prometheus {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "wayfinder-prometheus-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a folder for prometheus");
        let targets: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
        let rules: Vec<String> = rules
            .iter()
            .map(|r| format!("\"{}\"", r.display()))
            .collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files: [{}]\n\
             scrape_configs:\n  - job_name: wayfinder\n    metrics_path: {metrics_path}\n    \
             static_configs:\n      - targets: [{}]\n",
            rules.join(", "),
            targets.join(", ")
        );
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, config).expect("writes prometheus.yml");
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("a log file");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus runs (scripts/setup installs it)");
        let prometheus = Prometheus {
            child,
            port,
            dir,
            client: reqwest::Client::new(),
        };
        let ready = format!("http://127.0.0.1:{port}/-/ready");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(response) = prometheus.client.get(&ready).send().await {
                if response.status().is_success() {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "prometheus is not ready on {port}: {}",
                prometheus.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        prometheus
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    async fn get(&self, path: &str, params: &[(&str, &str)]) -> Value {
        let response = self
            .client
            .get(format!("http://127.0.0.1:{}{path}", self.port))
            .query(params)
            .send()
            .await
            .expect("prometheus answers");
        let body: Value = response.json().await.expect("a JSON answer");
        assert_eq!(body["status"], "success", "{path} {params:?}: {body}");
        body["data"].clone()
    }

    /// The series an instant query returns now.
    pub async fn query(&self, expression: &str) -> Vec<Value> {
        self.get("/api/v1/query", &[("query", expression)]).await["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The alerts pending or firing: (name, state).
    pub async fn alerts(&self) -> Vec<(String, String)> {
        self.get("/api/v1/alerts", &[]).await["alerts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|alert| {
                (
                    alert["labels"]["alertname"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    alert["state"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// The health of each scrape target (`up`, `down` and the error).
    pub async fn targets(&self) -> Vec<String> {
        self.get("/api/v1/targets", &[]).await["activeTargets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| format!("{} {} {}", t["scrapeUrl"], t["health"], t["lastError"]))
            .collect()
    }
}

/// `promtool check rules <file>`: Ok, or what it printed.
pub fn check_rules(file: &Path) -> Result<String, String> {
    let output = Command::new("promtool")
        .arg("check")
        .arg("rules")
        .arg(file)
        .output()
        .expect("promtool runs (scripts/setup installs it with prometheus)");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() {
        Ok(printed)
    } else {
        Err(printed)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
