//! Closing ONNX Runtime before the process exits (`close_runtime`), with the real runtime and
//! model: threads inside it (running a session, loading one) are waited for, later calls are
//! refused without touching it, and sessions dropped afterwards are leaked, not released. A test
//! binary of its own, since closing lasts for the rest of the process; the process then exits
//! through the runtime's exit handlers, which is the crash this guards against.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use wayfinder_tests::engine_config;
use wayfinder_workers::close_runtime;
use wayfinder_workers::embed::{EmbedError, Embedder};

#[test]
fn closing_the_runtime_waits_for_the_threads_inside_it_and_refuses_later_calls() {
    let model = engine_config(None).model;
    let mut embedder = Embedder::load(&model, 1).expect("the model loads");
    let closing = Arc::new(AtomicBool::new(false));

    // One thread runs its session in a loop, another loads sessions in a loop, as the pool's
    // workers do while indexing and after a restart.
    let running = {
        let closing = Arc::clone(&closing);
        thread::spawn(move || {
            let text = "a sentence long enough to keep the session busy for a while ".repeat(8);
            let mut refused_after_close = false;
            for _ in 0..100_000 {
                let started_after_close = closing.load(Ordering::SeqCst);
                match embedder.embed(&[text.as_str(); 16]) {
                    Ok(_) => assert!(!started_after_close, "a call ran after the close"),
                    Err(EmbedError::Closed) => {
                        refused_after_close = true;
                        break;
                    }
                    Err(error) => panic!("embedding failed: {error}"),
                }
            }
            (refused_after_close, embedder)
        })
    };
    let loading = {
        let model = model.clone();
        thread::spawn(move || {
            let mut loaded = Vec::new();
            for _ in 0..1_000 {
                match Embedder::load(&model, 1) {
                    Ok(embedder) => loaded.push(embedder),
                    Err(EmbedError::Closed) => return (true, loaded),
                    Err(error) => panic!("loading failed: {error}"),
                }
            }
            (false, loaded)
        })
    };

    thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    assert!(
        close_runtime(Duration::from_secs(30)),
        "calls in flight left the runtime"
    );
    closing.store(true, Ordering::SeqCst);
    assert!(start.elapsed() < Duration::from_secs(30));

    let (refused, embedder) = running.join().expect("the running thread ends");
    assert!(
        refused,
        "the running thread was refused once the runtime closed"
    );
    let (refused, loaded) = loading.join().expect("the loading thread ends");
    assert!(
        refused,
        "the loading thread was refused once the runtime closed"
    );
    assert!(matches!(Embedder::load(&model, 1), Err(EmbedError::Closed)));
    // Dropped after the close: leaked, never released into a runtime being torn down.
    drop(embedder);
    drop(loaded);
    assert!(
        close_runtime(Duration::ZERO),
        "closing again finds nothing in flight"
    );
}
