//! Warnings that repeat, logged as episodes. A condition such as a cache folder that cannot be
//! written or a Redis that is away fails every batch while it lasts, and a line per failure
//! buries the log. An [`Episode`] logs a warning when the condition starts, a count at most once
//! every [`REPORT_EVERY`] while it lasts, and one line when it ends.

use std::fmt::Display;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often an episode under way says it still lasts.
pub const REPORT_EVERY: Duration = Duration::from_secs(60);

/// One condition that may fail repeatedly (see the module doc).
pub struct Episode {
    /// What fails, as the log says it, e.g. "the vector cache cannot be written".
    what: &'static str,
    /// What still works while it fails.
    meanwhile: &'static str,
    ongoing: Mutex<Option<Ongoing>>,
}

struct Ongoing {
    started: Instant,
    failures: u64,
    reported: Instant,
}

impl Episode {
    pub const fn new(what: &'static str, meanwhile: &'static str) -> Self {
        Episode {
            what,
            meanwhile,
            ongoing: Mutex::new(None),
        }
    }

    /// Records one failure: a warning if the episode starts, a count if the last was
    /// [`REPORT_EVERY`] ago, else nothing.
    pub fn failed(&self, error: &dyn Display) {
        let now = Instant::now();
        let mut ongoing = self.ongoing.lock().unwrap_or_else(|p| p.into_inner());
        match ongoing.as_mut() {
            None => {
                *ongoing = Some(Ongoing {
                    started: now,
                    failures: 1,
                    reported: now,
                });
                tracing::warn!(%error, "wayfinder: {}; {}", self.what, self.meanwhile);
            }
            Some(episode) => {
                episode.failures += 1;
                if now.duration_since(episode.reported) >= REPORT_EVERY {
                    episode.reported = now;
                    tracing::warn!(
                        failures = episode.failures,
                        seconds = episode.started.elapsed().as_secs(),
                        %error,
                        "wayfinder: {} (still); {}",
                        self.what,
                        self.meanwhile
                    );
                }
            }
        }
    }

    /// Ends the episode under way, if any, with one line.
    pub fn recovered(&self) {
        let ended = self
            .ongoing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(episode) = ended {
            tracing::info!(
                failures = episode.failures,
                seconds = episode.started.elapsed().as_secs(),
                "wayfinder: {}: no longer",
                self.what
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_warns_once_then_ends_once() {
        let episode = Episode::new("the thing fails", "the rest works");
        let ongoing = || episode.ongoing.lock().unwrap().is_some();
        assert!(!ongoing());
        for _ in 0..100 {
            episode.failed(&"boom");
        }
        {
            let ongoing = episode.ongoing.lock().unwrap();
            let ongoing = ongoing.as_ref().unwrap();
            assert_eq!(ongoing.failures, 100);
            // Started and reported together: no second warning within REPORT_EVERY.
            assert_eq!(ongoing.reported, ongoing.started);
        }
        episode.recovered();
        assert!(!ongoing());
        episode.recovered(); // nothing to end: no line
        assert!(!ongoing());
    }
}
