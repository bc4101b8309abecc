//! What the agent, the HTTP server and the dump share about the JIT: the
//! inline table behind its lock, how it was set up, and the queue of
//! recompilation requests the agent's JIT thread serves.
//!
//! **Locks.** `table` is taken by the JVMTI callbacks that load and unload
//! code (on HotSpot's service thread, or the agent's JIT thread while it
//! generates events), by HTTP readers for the time of a join (no I/O under
//! it) and by the dump. The sampler thread never takes it. Nothing else is
//! taken under it. `setup` and `queue` are leaf locks.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};

use crate::advice::{Advice, InlineFlags};
use crate::events::JitEvents;
use crate::table::{InlineTable, Limits, TableStats};

/// How the agent set the inline records up (for /api/status).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setup {
    /// Whether CompiledMethodLoad events feed the table.
    pub enabled: bool,
    /// What the agent did or why not (`on`, `off (compiled=off)`, an error).
    pub state: String,
    /// HotSpot's inlining thresholds, read from its flags.
    pub flags: InlineFlags,
    /// Whether `POST /api/jit/recompile` can retransform classes, or why not.
    pub recompile: String,
}

/// The setup and the table's size, as /api/status and the advice show them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    #[serde(flatten)]
    pub setup: Setup,
    pub table: TableStats,
}

/// The advice with what it was computed from: the answer of
/// `/api/jit/advice` (besides its profile header) and the `jit_advice`
/// section of a JSON profile, which `pcct advise` reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AdviceReport {
    pub jit: Summary,
    pub min_share: f64,
    #[serde(flatten)]
    pub advice: Advice,
}

/// Most recompile requests waiting at once.
pub const MAX_QUEUED: usize = 4;
/// Most classes in one recompile request.
pub const MAX_CLASSES: usize = 100;

/// What a recompile request did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecompileReport {
    /// Classes retransformed (their compiled code, and code that inlined
    /// their methods, deoptimised: compiled again when hot).
    pub retransformed: Vec<String>,
    /// Classes not loaded in the VM.
    pub not_found: Vec<String>,
    /// Classes the VM refused to retransform, with its error.
    pub failed: Vec<(String, String)>,
    pub elapsed_ns: u64,
}

/// How a recompile request is answered: called once, by the JIT thread
/// (the asker may have given up waiting; the callback decides what to do).
pub type Reply = Box<dyn FnOnce(Result<RecompileReport, String>) + Send>;

/// A recompile request, answered once by the JIT thread.
pub struct RecompileJob {
    pub classes: Vec<String>,
    reply: Reply,
}

impl RecompileJob {
    pub fn answer(self, result: Result<RecompileReport, String>) {
        (self.reply)(result);
    }
}

/// Why a recompile request was not queued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No JIT thread serves requests (and why).
    Unavailable(String),
    /// [`MAX_QUEUED`] requests wait already.
    Busy,
}

/// What the JIT thread is woken for.
pub enum Work {
    Recompile(RecompileJob),
    /// The table is full: start it over.
    Restart,
    /// Nothing within the timeout.
    Idle,
}

/// See the module documentation.
pub struct Jit {
    pub table: Mutex<InlineTable>,
    /// What happened to the table's code (taken after `table` when both).
    pub events: Mutex<JitEvents>,
    /// The table's stats when [`Jit::summary`] last found it free.
    last_stats: Mutex<TableStats>,
    setup: Mutex<Setup>,
    queue: Mutex<VecDeque<RecompileJob>>,
    wake: Condvar,
    restart: AtomicBool,
    serving: AtomicBool,
    /// The VM is dying: the JIT thread's wait ends at once.
    stopping: AtomicBool,
}

impl Default for Jit {
    fn default() -> Jit {
        Jit::new(Limits::default())
    }
}

impl Jit {
    pub fn new(limits: Limits) -> Jit {
        Jit {
            table: Mutex::new(InlineTable::new(limits)),
            events: Mutex::new(JitEvents::default()),
            last_stats: Mutex::new(TableStats::default()),
            setup: Mutex::new(Setup { state: "off".to_string(), recompile: "off".to_string(), ..Setup::default() }),
            queue: Mutex::new(VecDeque::new()),
            wake: Condvar::new(),
            restart: AtomicBool::new(false),
            serving: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
        }
    }

    pub fn setup(&self) -> Setup {
        self.setup.lock().clone()
    }

    pub fn set_setup(&self, change: impl FnOnce(&mut Setup)) {
        change(&mut self.setup.lock());
    }

    /// The setup and the table's stats. Never waits for the table: HTTP
    /// answers call it on an async worker, and the table may be held for a
    /// whole copy ([`InlineTable::extract`]) or a refill. A table in use
    /// gives the stats of the last look that found it free.
    pub fn summary(&self) -> Summary {
        let setup = self.setup();
        let table = match self.table.try_lock() {
            Some(table) => {
                let stats = table.stats();
                *self.last_stats.lock() = stats;
                stats
            }
            None => *self.last_stats.lock(),
        };
        Summary { setup, table }
    }

    /// Asks the JIT thread to start the table over (from a callback that
    /// found it full).
    pub fn request_restart(&self) {
        if !self.restart.swap(true, Ordering::AcqRel) {
            let _queue = self.queue.lock();
            self.wake.notify_all();
        }
    }

    /// The JIT thread serves requests from now on (`true`) or no longer.
    pub fn set_serving(&self, serving: bool) {
        self.serving.store(serving, Ordering::Release);
        if !serving {
            let abandoned: Vec<RecompileJob> = self.queue.lock().drain(..).collect();
            for job in abandoned {
                job.answer(Err("the agent's JIT thread stopped".to_string()));
            }
        }
    }

    /// Queues a request to retransform `classes`; `reply` gets the answer
    /// (never called when the request is refused).
    pub fn submit(
        &self,
        classes: Vec<String>,
        reply: impl FnOnce(Result<RecompileReport, String>) + Send + 'static,
    ) -> Result<(), Refused> {
        if !self.serving.load(Ordering::Acquire) {
            return Err(Refused::Unavailable(self.setup().recompile));
        }
        let mut queue = self.queue.lock();
        if queue.len() >= MAX_QUEUED {
            return Err(Refused::Busy);
        }
        queue.push_back(RecompileJob { classes, reply: Box::new(reply) });
        self.wake.notify_all();
        Ok(())
    }

    /// Ends the JIT thread's wait now and every later one (VMDeath): a thread
    /// in native code holds up the VM's exit for up to 300 ms (HotSpot's
    /// `VM_Exit` waits for threads in native to block), and this one waited
    /// up to its poll's 100 ms, on every exit.
    pub fn stop(&self) {
        let _queue = self.queue.lock();
        self.stopping.store(true, Ordering::Release);
        self.wake.notify_all();
    }

    /// The JIT thread's wait: a restart first, then the oldest request;
    /// [`Work::Idle`] at once after [`Jit::stop`].
    pub fn next_work(&self, timeout: Duration) -> Work {
        let mut queue = self.queue.lock();
        loop {
            if self.stopping.load(Ordering::Acquire) {
                return Work::Idle;
            }
            if self.restart.swap(false, Ordering::AcqRel) {
                return Work::Restart;
            }
            if let Some(job) = queue.pop_front() {
                return Work::Recompile(job);
            }
            if self.wake.wait_for(&mut queue, timeout).timed_out() {
                return match self.restart.swap(false, Ordering::AcqRel) {
                    true => Work::Restart,
                    false => queue.pop_front().map_or(Work::Idle, Work::Recompile),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `stop` ends a wait in progress (the JIT thread waiting for work while
    /// the VM exits) and every later wait, whichever comes first.
    #[test]
    fn stop_ends_the_wait_at_once_and_every_later_one() {
        let jit = std::sync::Arc::new(Jit::default());
        let waiter = {
            let jit = std::sync::Arc::clone(&jit);
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                let work = jit.next_work(Duration::from_secs(600));
                (matches!(work, Work::Idle), started.elapsed())
            })
        };
        // Whether the waiter is already waiting or not yet: either way it returns.
        std::thread::sleep(Duration::from_millis(20));
        jit.stop();
        let (idle, waited) = waiter.join().expect("the waiter");
        assert!(idle && waited < Duration::from_secs(60), "waited {waited:?}");
        let started = std::time::Instant::now();
        assert!(matches!(jit.next_work(Duration::from_secs(600)), Work::Idle));
        assert!(started.elapsed() < Duration::from_secs(60));
    }

    /// The summary never waits for the table: while another thread holds
    /// it, the stats of the last look that found it free.
    #[test]
    fn the_summary_does_not_wait_for_a_table_in_use() {
        let jit = Jit::default();
        jit.table.lock().restart();
        assert_eq!(jit.summary().table.restarts, 1);
        let held = jit.table.lock();
        let summary = jit.summary();
        assert_eq!(summary.table.restarts, 1, "the last look's stats");
        drop(held);
        jit.table.lock().restart();
        assert_eq!(jit.summary().table.restarts, 2);
    }

    type Answer = std::sync::mpsc::Receiver<Result<RecompileReport, String>>;

    /// Submits a request for class `A`; the receiver gets its answer.
    fn submit(jit: &Jit) -> Result<Answer, Refused> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        jit.submit(vec!["A".into()], move |result| drop(reply.send(result))).map(|()| answer)
    }

    #[test]
    fn requests_wait_for_a_serving_thread_and_are_bounded() {
        let jit = Jit::default();
        jit.set_setup(|setup| setup.recompile = "off (recompile=off)".to_string());
        assert_eq!(submit(&jit).err(), Some(Refused::Unavailable("off (recompile=off)".into())));
        jit.set_serving(true);
        let answers: Vec<_> = (0..MAX_QUEUED).map(|_| submit(&jit).expect("queued")).collect();
        assert_eq!(submit(&jit).err(), Some(Refused::Busy));
        let Work::Recompile(job) = jit.next_work(Duration::from_millis(1)) else { panic!("a job") };
        assert_eq!(job.classes, vec!["A".to_string()]);
        job.answer(Ok(RecompileReport::default()));
        assert_eq!(answers[0].recv().unwrap(), Ok(RecompileReport::default()));
        jit.set_serving(false);
        assert!(answers[1].recv().unwrap().is_err(), "abandoned requests are answered");
    }

    #[test]
    fn an_advice_report_round_trips_through_json() {
        let report = AdviceReport { jit: Jit::default().summary(), min_share: 0.01, advice: Advice::default() };
        let text = serde_json::to_string(&report).unwrap();
        assert!(text.contains(r#""state":"off""#), "{text}");
        assert_eq!(serde_json::from_str::<AdviceReport>(&text).unwrap(), report);
    }

    #[test]
    fn a_restart_comes_before_requests_and_idle_after_the_timeout() {
        let jit = Jit::default();
        jit.set_serving(true);
        let _answer = submit(&jit).expect("queued");
        jit.request_restart();
        assert!(matches!(jit.next_work(Duration::from_millis(1)), Work::Restart));
        assert!(matches!(jit.next_work(Duration::from_millis(1)), Work::Recompile(_)));
        assert!(matches!(jit.next_work(Duration::from_millis(1)), Work::Idle));
    }
}
