//! The sampling signal sent to threads it was not meant for: a thread that
//! was never registered (in the JVM: a thread that is not a Java thread),
//! and threads being torn down while the sampler signals them (with and
//! without their end being reported, so that their slots are also retired
//! by the sampler itself). No crash; every such signal is counted as stray
//! or stale (or, once the thread is gone, as a failed send), and the
//! registry ends where it began.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{serial, spin_until, test_signal, tgkill, wait_for, Harness, Pipe};
use pcct_sampler::handler::encode;
use pcct_sampler::signal::send;
use pcct_sampler::slots::{current_tid, ThreadOrigin, MAX_THREADS};

#[test]
fn signals_to_an_unregistered_thread_are_counted_not_sampled() {
    let _serial = serial();
    let harness = Harness::get();
    let counters = &harness.shared.counters;
    // A registered thread, whose key the foreign thread will be sent.
    let stop = Arc::new(AtomicBool::new(false));
    let (key_tx, key_rx) = mpsc::channel();
    let registered = {
        let (registry, stop) = (Arc::clone(&harness.registry), Arc::clone(&stop));
        std::thread::spawn(move || {
            let tid = current_tid();
            key_tx
                .send(registry.register(tid, std::ptr::dangling_mut(), ThreadOrigin::Started).expect("register"))
                .unwrap();
            spin_until(&stop);
            registry.retire(tid);
        })
    };
    let key = key_rx.recv().unwrap();

    // The foreign thread blocks in read(2), never registered.
    let pipe = Arc::new(Pipe::new());
    let (tid_tx, tid_rx) = mpsc::channel();
    let foreign = {
        let pipe = Arc::clone(&pipe);
        std::thread::spawn(move || {
            tid_tx.send(current_tid()).unwrap();
            pipe.block();
            "still alive"
        })
    };
    let foreign_tid = tid_rx.recv().unwrap();
    std::thread::sleep(Duration::from_millis(20));

    let recorded_before = counters.samples_recorded.load(Ordering::SeqCst);
    let (stray_before, stale_before) =
        (counters.signals_stray.load(Ordering::SeqCst), counters.signals_stale.load(Ordering::SeqCst));
    let signal = test_signal();
    const ROUNDS: u64 = 20;
    for _ in 0..ROUNDS {
        tgkill(foreign_tid, signal); // stray: SI_TKILL
        send(signal, foreign_tid, 7).unwrap(); // stray: not pcct's value
        send(signal, foreign_tid, encode(MAX_THREADS + 3, 1)).unwrap(); // stray: no such slot
        send(signal, foreign_tid, encode(key.slot, key.generation)).unwrap(); // stale: another thread's slot
        send(signal, foreign_tid, encode(MAX_THREADS - 1, 0)).unwrap(); // stale: a free slot
        std::thread::sleep(Duration::from_millis(1));
    }
    wait_for("every signal counted", Duration::from_secs(20), || {
        counters.signals_stray.load(Ordering::SeqCst) >= stray_before + 3 * ROUNDS
            && counters.signals_stale.load(Ordering::SeqCst) >= stale_before + 2 * ROUNDS
    });
    pipe.wake();
    assert_eq!(foreign.join().expect("the foreign thread survives"), "still alive");
    // The registered thread went on being sampled; the foreign one was not.
    wait_for("samples of the registered thread", Duration::from_secs(20), || {
        counters.samples_recorded.load(Ordering::SeqCst) > recorded_before
    });
    stop.store(true, Ordering::SeqCst);
    registered.join().unwrap();
}

#[test]
fn threads_torn_down_while_signalled() {
    let _serial = serial();
    let harness = Harness::get();
    let counters = &harness.shared.counters;
    let registry = &harness.registry;
    let baseline = registry.registered();
    let signal = test_signal();
    let (stale_before, failures_before, ended_before) = (
        counters.signals_stale.load(Ordering::SeqCst),
        counters.signal_failures.load(Ordering::SeqCst),
        counters.threads_ended.load(Ordering::SeqCst),
    );

    // A sniper signals every thread with its own key as it ends (often
    // after its end: stale or a failed send), racing the sampler's signals.
    let (key_tx, key_rx) = mpsc::channel::<(i32, pcct_sampler::slots::ThreadKey)>();
    let sniper = std::thread::spawn(move || {
        let (mut sent, mut gone) = (0u64, 0u64);
        while let Ok((tid, key)) = key_rx.recv() {
            for _ in 0..3 {
                match send(signal, tid, encode(key.slot, key.generation)) {
                    Ok(()) => sent += 1,
                    Err(_) => gone += 1,
                }
                // And a plain one, as another program's signal would be.
                // SAFETY: tgkill to a thread of this process (or ESRCH).
                unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, signal) };
            }
        }
        (sent, gone)
    });

    const THREADS: usize = 2000;
    let started = Instant::now();
    let mut handles = Vec::new();
    for index in 0..THREADS {
        let (registry, key_tx) = (Arc::clone(registry), key_tx.clone());
        handles.push(std::thread::spawn(move || {
            let tid = current_tid();
            // One in four ends without reporting it (a missed ThreadEnd, as
            // for threads found at attach): the sampler retires it when a
            // send fails.
            let reported = index % 4 != 0;
            let origin = if reported { ThreadOrigin::Started } else { ThreadOrigin::Discovered };
            let key = registry.register(tid, std::ptr::dangling_mut(), origin).expect("register");
            let until = Instant::now() + Duration::from_micros(100 + (index as u64 * 37) % 900);
            let mut x = 1u64;
            while Instant::now() < until {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            if reported {
                registry.retire(tid);
            }
            let _ = key_tx.send((tid, key));
        }));
        if handles.len() >= 16 {
            for handle in handles.drain(..) {
                handle.join().expect("a churned thread");
            }
        }
    }
    for handle in handles {
        handle.join().expect("a churned thread");
    }
    drop(key_tx);
    let (sent, gone) = sniper.join().unwrap();
    let elapsed = started.elapsed();

    // Every slot comes back: reported ends at once, unreported ones when
    // the sampler's send fails (thread gone).
    wait_for("the registry back at its baseline", Duration::from_secs(30), || registry.registered() <= baseline);
    let stale = counters.signals_stale.load(Ordering::SeqCst) - stale_before;
    let failures = counters.signal_failures.load(Ordering::SeqCst) - failures_before;
    let ended = counters.threads_ended.load(Ordering::SeqCst) - ended_before;
    eprintln!(
        "{THREADS} threads in {elapsed:?}: sniper sent {sent} (+{gone} to threads already gone); \
         stale {stale}, failed sends {failures}, threads ended {ended}"
    );
    assert!(sent + gone >= 3 * THREADS as u64);
    assert!(stale + failures + gone > 0, "no signal reached a thread being torn down");
    assert!(ended > 0, "the sampler saw no thread end");
}
