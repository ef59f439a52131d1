//! The search threads: where every search that uses vectors runs, each lending one of the
//! engine's query sessions (an ONNX session that embeds the question) to the search it runs.
//!
//! Searches arrive from any thread (the router's blocking pool, the CLI) and wait here for one of
//! `query_sessions` threads. Waiting is bounded in count ([`Admission::max_pending`]) and in time
//! ([`Admission::max_wait`]); a search over either bound is not run here, and the engine answers
//! it as [`Admission::overload`] says. So a burst of searches cannot build a queue, and the work
//! the engine does at once is bounded by the thread count, which is also the number of searches a
//! vector shard is prepared to serve at once (usearch refuses more).
//!
//! The threads run at a lower priority than the router's own ([`BACKGROUND_NICENESS`]): under a
//! flood of searches the cores still go first to ordinary requests. Sessions are loaded on first
//! need, so a router that searches little holds one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::{Admission, ModelConfig, BACKGROUND_NICENESS};
use crate::embed::{EmbedError, Embedder};

/// Why a search did not get a search thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Overloaded {
    /// `max_pending` searches were already waiting.
    Queue { pending: usize },
    /// The search waited `max_wait` without a thread.
    Wait { waited: Duration },
}

pub(crate) struct SearchPool {
    threads: rayon::ThreadPool,
    size: usize,
    model: ModelConfig,
    /// Sessions no search holds now.
    idle: Mutex<Vec<Embedder>>,
    /// Searches admitted and not yet done (waiting or running).
    admitted: AtomicUsize,
}

impl SearchPool {
    /// `size` threads, with `first` as the first session.
    pub fn new(model: ModelConfig, first: Embedder, size: usize) -> Result<Self, String> {
        let size = size.max(1);
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(size)
            .thread_name(|i| format!("wayfinder-search-{i}"))
            .start_handler(|_| lower_priority())
            .build()
            .map_err(|e| format!("cannot start the search threads: {e}"))?;
        Ok(SearchPool {
            threads,
            size,
            model,
            idle: Mutex::new(vec![first]),
            admitted: AtomicUsize::new(0),
        })
    }

    /// Runs `search` on a search thread with a session (an `Err` when no session could be
    /// loaded), unless the wait is full or too long.
    pub fn run<R: Send>(
        &self,
        admission: &Admission,
        search: impl FnOnce(Result<&mut Embedder, EmbedError>) -> R + Send,
    ) -> Result<R, Overloaded> {
        let admitted = self.admitted.fetch_add(1, Ordering::SeqCst);
        let _done = Done(&self.admitted);
        let pending = admitted.saturating_sub(self.size);
        if admitted >= self.size && pending >= admission.max_pending {
            return Err(Overloaded::Queue { pending });
        }
        let queued = Instant::now();
        let span = tracing::Span::current();
        self.threads.install(move || {
            let waited = queued.elapsed();
            if waited > admission.max_wait {
                return Err(Overloaded::Wait { waited });
            }
            let _entered = span.enter();
            let session = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            let mut session = match session {
                Some(session) => Ok(session),
                None => Embedder::load(&self.model, 1),
            };
            let result = search(session.as_mut().map_err(|e| e.clone()));
            if let (Ok(session), Ok(mut idle)) = (session, self.idle.lock()) {
                idle.push(session);
            }
            Ok(result)
        })
    }
}

/// Counts a search out of the admitted ones, however it ends.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Lowers the calling thread's scheduling priority by [`BACKGROUND_NICENESS`] (Linux: the nice
/// value of a thread id is the thread's own). Best effort: a failure only leaves it as it was.
pub(crate) fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on the calling thread's own id.
    unsafe {
        let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let current = libc::getpriority(libc::PRIO_PROCESS, thread);
        libc::setpriority(
            libc::PRIO_PROCESS,
            thread,
            current.saturating_add(BACKGROUND_NICENESS),
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lowering_priority_raises_the_threads_nice_value_only() {
        let before = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let lowered = std::thread::spawn(|| {
            super::lower_priority();
            let thread = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
            unsafe { libc::getpriority(libc::PRIO_PROCESS, thread) }
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (before + super::BACKGROUND_NICENESS).min(19));
        assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }, before);
    }
}
