//! A `wayfinder-router` process on a loopback port, shared by the plugin's integration tests and
//! the router bench: it runs with the set-up's model and without usage reporting, logs to a
//! file, is ready once it answers a plain query, and is killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::wayfinder_home;

/// A free port on 127.0.0.1, for a configuration to listen on.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// Process `pid`'s resident memory now, in bytes (Linux: `VmRSS` of `/proc/PID/status`; 0
/// when it cannot be read).
pub fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

pub struct RouterProcess {
    child: Child,
    /// `http://127.0.0.1:<port>/`
    pub url: String,
    log: PathBuf,
}

impl RouterProcess {
    /// Runs `binary --config <config> --supergraph <supergraph> <extra>` (the configuration
    /// listens on `port`), logging to `log`, and waits up to two minutes until it answers.
    pub async fn start(
        binary: &Path,
        port: u16,
        config: &Path,
        supergraph: &Path,
        extra: &[&str],
        log: PathBuf,
    ) -> Self {
        let out = std::fs::File::create(&log).expect("a log file");
        let child = Command::new(binary)
            .arg("--config")
            .arg(config)
            .arg("--supergraph")
            .arg(supergraph)
            .args(extra)
            .env("WAYFINDER_HOME", wayfinder_home())
            // The router's anonymous usage reporting would try to reach the internet.
            .env("APOLLO_TELEMETRY_DISABLED", "true")
            .env("APOLLO_ROUTER_LOG", "info")
            .stdout(Stdio::from(out.try_clone().expect("log handle")))
            .stderr(Stdio::from(out))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut router = RouterProcess {
            child,
            url: format!("http://127.0.0.1:{port}/"),
            log,
        };
        router.wait_for("", Duration::from_secs(120)).await;
        router
    }

    /// The process's resident memory now, in bytes.
    pub fn rss_bytes(&self) -> u64 {
        resident_bytes(self.child.id())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the router answers a plain query and its log contains `line`.
    pub async fn wait_for(&mut self, line: &str, limit: Duration) {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the router exited ({status}):\n{}", self.log());
            }
            let up = client
                .post(&self.url)
                .json(&json!({ "query": "{ __typename }" }))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if up && self.log().contains(line) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the router is not ready:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for RouterProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
