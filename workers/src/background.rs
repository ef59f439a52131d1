//! Background threads for a caller's own work around searches: the router plugin runs each
//! request's part (executing the operation, resolving definitions and paths, shaping the
//! answer) here rather than on the router's threads, so that under a flood of searches that
//! work, like the searches themselves ([`crate::search_pool`]), yields the cores to ordinary
//! requests ([`crate::config::BACKGROUND_NICENESS`]).
//!
//! Plain threads fed through a bounded queue: a job that finds the queue full is handed back
//! at once, so a burst never builds a queue without bound.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use crate::search_pool::{lower_priority, SpawnError};

type Job = Box<dyn FnOnce() + Send + 'static>;

pub struct Background {
    sender: SyncSender<Job>,
    queue: usize,
}

/// A job the queue had no room for.
#[derive(Debug, thiserror::Error)]
#[error("the engine's background queue is full ({0} jobs wait)")]
pub struct QueueFull(pub usize);

impl Background {
    /// `threads` threads behind a queue of `queue` jobs.
    pub fn start(threads: usize, queue: usize) -> Result<Self, SpawnError> {
        let (sender, receiver) = sync_channel::<Job>(queue);
        let receiver = Arc::new(Mutex::new(receiver));
        for i in 0..threads.max(1) {
            let receiver = Arc::clone(&receiver);
            std::thread::Builder::new()
                .name(format!("wayfinder-request-{i}"))
                .spawn(move || work(&receiver))
                .map_err(SpawnError::BackgroundThreads)?;
        }
        Ok(Background { sender, queue })
    }

    /// Queues `job`, or hands it back when the queue is full.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) -> Result<(), QueueFull> {
        match self.sender.try_send(Box::new(job)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                Err(QueueFull(self.queue))
            }
        }
    }
}

/// Runs jobs until every sender is gone (the engine is dropped).
fn work(receiver: &Mutex<Receiver<Job>>) {
    lower_priority();
    loop {
        let job = match receiver.lock() {
            Ok(receiver) => receiver.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        match job {
            // A job that panics is the caller's to report (its answer never arrives); the
            // thread goes on.
            Ok(job) => drop(std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))),
            Err(_) => return,
        }
    }
}
