//! A real `redis-server` (Debian's, installed by `scripts/setup`) for the fleet tests and the
//! fleet bench: on a free loopback port, in a temporary folder, without persistence, stopped on
//! drop, with a password (so that the routers authenticate, and their logs can be checked not
//! to show it). `redis-cli` reads and damages what the routers wrote.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::router::free_port;

/// The test server's password.
pub const PASSWORD: &str = "a-redis-password-for-tests";

pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts a server and waits until it answers.
    pub fn start() -> RedisServer {
        let dir = std::env::temp_dir().join(format!(
            "wayfinder-redis-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).expect("a folder for redis-server");
        let mut server = RedisServer {
            child: None,
            port: free_port(),
            dir,
        };
        server.restart();
        server
    }

    /// `redis://:<password>@127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("redis://:{PASSWORD}@127.0.0.1:{}", self.port)
    }

    /// Kills the server (as a crash would: no shutdown, nothing saved).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port, empty (it persists nothing), once it was
    /// killed; waits until it answers.
    pub fn restart(&mut self) {
        self.kill();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--requirepass",
                PASSWORD,
            ])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (scripts/setup installs it)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.cli(&["PING"]) != "PONG" {
            assert!(
                Instant::now() < deadline,
                "redis-server does not answer on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs `redis-cli` against the server; its output, trimmed.
    pub fn cli(&self, args: &[&str]) -> String {
        let output = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-a", PASSWORD, "--no-auth-warning"])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// The keys matching `pattern`.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        self.cli(&["--scan", "--pattern", pattern])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Bytes the server uses (`used_memory`).
    pub fn used_memory(&self) -> u64 {
        self.cli(&["INFO", "memory"])
            .lines()
            .find_map(|line| line.strip_prefix("used_memory:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
