//! The search threads: where every search that uses vectors runs, each lending one of the
//! engine's query sessions (an ONNX session that embeds the question) to the search it runs.
//!
//! Searches arrive from any thread (the router's blocking pool, the CLI) and wait here for one of
//! `query_sessions` threads. Waiting is bounded in count ([`Admission::max_pending`]) and in time
//! ([`Admission::max_wait`]), on the caller's side: a search is handed to a thread only once one
//! is free, so the time it waits is the time it waits for a permit. A search over either bound
//! is not run here, and the engine answers it as [`Admission::overload`] says. So a burst of
//! searches cannot build a queue, the model and the vector shards are used by at most the thread
//! count at once, and that is also the number of searches a vector shard is prepared to serve at
//! once (usearch refuses more).
//!
//! The threads run at a lower priority than the router's own ([`BACKGROUND_NICENESS`]): under a
//! flood of searches the cores still go first to ordinary requests. Sessions are loaded on first
//! need; one is kept, the others are dropped after [`SESSION_IDLE`] unused, so a router that
//! searched in a burst gives their memory back.

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::config::{Admission, ModelConfig, BACKGROUND_NICENESS};
use crate::embed::{EmbedError, Embedder};

/// How long a query session beyond the first may stay unused before it is dropped.
pub const SESSION_IDLE: Duration = Duration::from_secs(60);

/// Why a search did not get a search thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Overloaded {
    /// `max_pending` searches were already waiting.
    Queue { max_pending: usize },
    /// The search waited `max_wait` without a thread.
    Wait { waited: Duration },
}

/// A thread the engine runs on could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot start the search threads: {0}")]
    SearchThreads(#[source] rayon::ThreadPoolBuildError),
    #[error("cannot start the session reaper: {0}")]
    SessionReaper(#[source] std::io::Error),
    #[error("cannot start the background threads: {0}")]
    BackgroundThreads(#[source] std::io::Error),
    /// The engine's own thread, which [`crate::engine::EngineError::Thread`] names.
    #[error("{0}")]
    EngineThread(#[source] std::io::Error),
    #[error("the engine thread stopped while starting")]
    EngineStopped,
}

impl std::fmt::Display for Overloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Overloaded::Queue { max_pending } => {
                write!(f, "{max_pending} searches already wait for a search thread")
            }
            Overloaded::Wait { waited } => {
                write!(f, "it waited {} ms for a search thread", waited.as_millis())
            }
        }
    }
}

pub(crate) struct SearchPool {
    threads: rayon::ThreadPool,
    state: Arc<Shared>,
}

struct Shared {
    size: usize,
    model: ModelConfig,
    slots: Mutex<Slots>,
    /// Signalled when a search gives its thread back.
    freed: Condvar,
    /// Signalled when the pool is dropped, for the reaper.
    closing: Condvar,
}

struct Slots {
    /// Searches holding a thread.
    running: usize,
    /// Searches waiting for one.
    waiting: usize,
    /// Sessions no search holds, with when each was last given back.
    idle: Vec<(Embedder, Instant)>,
    /// The pool is dropped: the reaper leaves.
    closed: bool,
}

impl SearchPool {
    /// `size` threads, with `first` as the first session.
    pub fn new(model: ModelConfig, first: Embedder, size: usize) -> Result<Self, SpawnError> {
        let size = size.max(1);
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(size)
            .thread_name(|i| format!("wayfinder-search-{i}"))
            .start_handler(|_| lower_priority())
            .build()
            .map_err(SpawnError::SearchThreads)?;
        let state = Arc::new(Shared {
            size,
            model,
            slots: Mutex::new(Slots {
                running: 0,
                waiting: 0,
                idle: vec![(first, Instant::now())],
                closed: false,
            }),
            freed: Condvar::new(),
            closing: Condvar::new(),
        });
        let weak = Arc::downgrade(&state);
        std::thread::Builder::new()
            .name("wayfinder-sessions".into())
            .spawn(move || reap_idle_sessions(weak))
            .map_err(SpawnError::SessionReaper)?;
        Ok(SearchPool { threads, state })
    }

    /// Runs `search` on a search thread with a session (an `Err` when no session could be
    /// loaded), unless the wait is full or too long.
    pub fn run<R: Send>(
        &self,
        admission: &Admission,
        search: impl FnOnce(Result<&mut Embedder, EmbedError>) -> R + Send,
    ) -> Result<R, Overloaded> {
        let shared = &*self.state;
        let session = {
            let mut slots = shared.lock();
            if slots.running >= shared.size {
                if slots.waiting >= admission.max_pending {
                    return Err(Overloaded::Queue {
                        max_pending: admission.max_pending,
                    });
                }
                slots.waiting += 1;
                let queued = Instant::now();
                while slots.running >= shared.size {
                    let waited = queued.elapsed();
                    let left = admission.max_wait.saturating_sub(waited);
                    if left.is_zero() {
                        slots.waiting -= 1;
                        return Err(Overloaded::Wait { waited });
                    }
                    slots = shared
                        .freed
                        .wait_timeout(slots, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                slots.waiting -= 1;
            }
            slots.running += 1;
            slots.idle.pop().map(|(session, _)| session)
        };
        let permit = Permit(shared);
        let span = tracing::Span::current();
        let (result, session) = self.threads.install(move || {
            let _entered = span.enter();
            let mut session =
                session.map_or_else(|| Embedder::load_for_questions(&shared.model), Ok);
            let result = search(session.as_mut().map_err(|e| e.clone()));
            (result, session.ok())
        });
        if let Some(session) = session {
            shared.lock().idle.push((session, Instant::now()));
        }
        drop(permit);
        Ok(result)
    }
}

impl Drop for SearchPool {
    fn drop(&mut self) {
        self.state.lock().closed = true;
        self.state.closing.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A search's hold on a thread, given back however the search ends.
struct Permit<'a>(&'a Shared);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.lock().running -= 1;
        self.0.freed.notify_one();
    }
}

/// Drops the sessions beyond the first that no search used for [`SESSION_IDLE`], until the
/// pool is dropped.
fn reap_idle_sessions(shared: Weak<Shared>) {
    loop {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let stale: Vec<Embedder> = {
            let mut slots = shared.lock();
            if slots.closed {
                return;
            }
            // The most recently given back is kept whatever its age.
            slots
                .idle
                .sort_by_key(|(_, since)| std::cmp::Reverse(*since));
            let keep = slots
                .idle
                .iter()
                .skip(1)
                .position(|(_, since)| since.elapsed() >= SESSION_IDLE)
                .map_or(slots.idle.len(), |stale| stale + 1);
            slots
                .idle
                .drain(keep..)
                .map(|(session, _)| session)
                .collect()
        };
        if !stale.is_empty() {
            drop(stale);
            crate::embed::release_free_memory();
        }
        let slots = shared.lock();
        if slots.closed {
            return;
        }
        let _ = shared.closing.wait_timeout(slots, SESSION_IDLE / 4);
    }
}

thread_local! {
    static LOWERED: Cell<bool> = const { Cell::new(false) };
}

/// Lowers the calling thread's scheduling priority by [`BACKGROUND_NICENESS`], once per thread
/// (Linux: the nice value of a thread id is the thread's own). Best effort: a failure only leaves
/// it as it was.
pub(crate) fn lower_priority() {
    if LOWERED.with(|lowered| lowered.replace(true)) {
        return;
    }
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    fn own_nice() -> i32 {
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::syscall(libc::SYS_gettid) as _) }
    }

    #[test]
    fn a_thread_lowers_its_own_priority_once() {
        let before = own_nice();
        let lowered = std::thread::spawn(|| {
            super::lower_priority();
            super::lower_priority();
            own_nice()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (before + super::BACKGROUND_NICENESS).min(19));
    }
}
