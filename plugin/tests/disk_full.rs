//! A full disk under the cache folder while the router indexes: a small tmpfs mounted on the
//! cache folder fills up. The log names the full disk once, search answers with the vectors in
//! memory, and once the disk is grown the cache is written whole: a router started afterwards
//! on the same folder embeds nothing.
//!
//! Mounting needs root (as the set-up and CI machines run); the test says so if it cannot.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::Router;

/// A tmpfs of `size` mounted on a folder, unmounted on drop.
struct SmallDisk {
    path: PathBuf,
    _parent: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let parent = tempfile::tempdir().expect("a temporary folder");
        let path = parent.path().join("cache");
        std::fs::create_dir_all(&path).unwrap();
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output()
            .expect("mount runs");
        assert!(
            output.status.success(),
            "this test mounts a small tmpfs and needs root (or CAP_SYS_ADMIN): {}",
            String::from_utf8_lossy(&output.stderr)
        );
        SmallDisk {
            path,
            _parent: parent,
        }
    }

    fn grow(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.path)
            .status()
            .expect("mount runs");
        assert!(status.success(), "remount {}", self.path.display());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// The log lines of level WARN that contain `text`.
fn warnings<'a>(log: &'a str, text: &str) -> Vec<&'a str> {
    log.lines()
        .filter(|line| line.contains("\"WARN\"") && line.contains(text))
        .collect()
}

fn embedded_by_last_run(log: &str) -> u64 {
    let line = log
        .lines()
        .rfind(|line| line.contains("index ready"))
        .expect("an index ready line");
    let value: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
    value["embedded"]
        .as_u64()
        .unwrap_or_else(|| panic!("`embedded` in {line}"))
}

async fn start(cache: &Path) -> Router {
    Router::start_indexing(
        &support::example_supergraph(),
        &format!("cache_dir: {}", cache.display()),
        "",
        "",
    )
    .await
}

#[tokio::test]
async fn a_full_cache_disk_is_named_once_search_answers_and_the_cache_recovers() {
    // Room for the store's first pages, not for the example's vectors.
    let disk = SmallDisk::mount("256k");
    let router = start(&disk.path).await;
    router.wait_for_lines("index ready", 1).await;

    let log = router.log();
    let full = warnings(&log, "no space left on device");
    assert_eq!(full.len(), 1, "one warning for the full disk:\n{log}");
    assert!(
        full[0].contains(&disk.path.display().to_string())
            && full[0].contains("the vector cache cannot be written")
            && full[0].contains("search go on"),
        "the warning names the folder and what still works: {}",
        full[0]
    );
    assert!(
        warnings(&log, "cannot").len() == 1,
        "no other warning about writing:\n{log}"
    );

    // Search answers, with the vectors in memory.
    let answer = router
        .query(
            "{ __search(query: \"what a reader thought of a book\", first: 3) { coordinate } }",
            json!({}),
            &[],
        )
        .await;
    assert!(
        answer.data()["__search"][0]["coordinate"].is_string(),
        "{}",
        answer.body
    );

    // Space is freed; the next indexing run (a reload) writes what was left unsaved.
    disk.grow("64m");
    router.add_root_field("staffPicks");
    router.wait_for_lines("index ready", 2).await;
    router
        .wait_for_lines("the vector cache cannot be written: no longer", 1)
        .await;
    drop(router);

    // The cache holds every vector: a new router on the folder embeds nothing.
    let again = start(&disk.path).await;
    again.wait_for_lines("index ready", 1).await;
    assert_eq!(embedded_by_last_run(&again.log()), 0, "{}", again.log());
}
