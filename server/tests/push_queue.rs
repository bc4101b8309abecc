//! The push's queue is bounded: against a receiver that never answers
//! (nothing listens), windows pile up to `push::QUEUE`, then the oldest
//! are dropped and counted; stopping the push returns within its deadline.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pcct_sampler::{SamplerConfig, Shared};
use pcct_server::push::{self, PushConfig, QUEUE};

#[test]
fn a_dead_receiver_fills_the_queue_then_the_oldest_windows_are_dropped() {
    let shared = Arc::new(Shared::new(SamplerConfig::default()).unwrap());
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let config = PushConfig {
        url: format!("http://{dead}/ingest"),
        every: Duration::from_millis(20),
        app: "test".into(),
        instance: "one".into(),
    };
    let handle = push::start(Arc::clone(&shared), config, None).unwrap();
    let stats = Arc::clone(&handle.stats);
    let deadline = Instant::now() + Duration::from_secs(60);
    while stats.windows.load(Ordering::Relaxed) < QUEUE as u64 + 5 {
        assert!(Instant::now() < deadline, "too few windows");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(stats.queued.load(Ordering::Relaxed), QUEUE as u64);
    assert!(stats.dropped.load(Ordering::Relaxed) >= 4);
    assert_eq!(stats.sent.load(Ordering::Relaxed), 0);
    assert!(stats.failures.load(Ordering::Relaxed) >= 1);
    let started = Instant::now();
    handle.stop(Duration::from_millis(500));
    assert!(started.elapsed() < Duration::from_secs(5), "stopping took {:?}", started.elapsed());
}
