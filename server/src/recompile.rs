//! Recompile requests, one at a time and at most one per `every`
//! (`recompile_every`, 30 s by default): each retransforms classes, which
//! costs the JVM a pause and its compiled code of them and of every
//! method that inlined theirs (the first throws away all compiled code).
//!
//! - While a request is queued or running, a request for the same classes
//!   waits for its answer instead of asking again (a client retrying after
//!   a 504 does not retransform twice; the queued retransform has not run
//!   yet, or runs now, so it serves the later request as well); one for
//!   other classes gets 429.
//! - Within `every` of a request's start, a retry of that request (the
//!   same classes and the same request id, which the client chose) gets
//!   its answer again (`repeated`); any other request gets 429 with
//!   `Retry-After`. A new request for the same classes is not a retry: the
//!   directives may have changed since, and only a new retransform makes
//!   HotSpot compile under them.
//!
//! The JIT thread answers through a callback ([`Start::send`]) that
//! records the answer here and wakes every waiting handler (a `watch`
//! channel): handlers wait on the async runtime, never on a blocking
//! thread. A reply dropped unanswered answers with an error, so a request
//! never stays pending for good.

use std::sync::Arc;
use std::time::Duration;

use pcct_jit::RecompileReport;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::ApiError;

/// Least time between two recompile requests, by default.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(30);

/// What the JIT thread answered.
pub type Outcome = Result<RecompileReport, String>;

/// Where a pending request's answer comes.
pub type Answer = watch::Receiver<Option<Outcome>>;

/// What a request asks: which classes, and the id its client gave it (a
/// retry carries the same id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Sorted, without duplicates.
    pub classes: Vec<String>,
    pub id: Option<String>,
}

struct Last {
    request: Request,
    started: Instant,
    outcome: Option<Outcome>,
}

#[derive(Default)]
struct GateState {
    pending: Option<(Vec<String>, Answer)>,
    last: Option<Last>,
}

/// See the module documentation.
pub struct RecompileGate {
    every: Duration,
    state: Arc<parking_lot::Mutex<GateState>>,
}

/// What to do with a request.
pub enum Decision {
    /// Nothing pending or recent: it may start ([`RecompileGate::claim`]).
    Start,
    /// The same classes are queued or running: wait for that answer.
    Join(Answer),
    /// The same classes were just recompiled: that answer.
    Repeat(Outcome),
}

/// A request that may start: [`Start::send`] it.
pub struct Start {
    state: Arc<parking_lot::Mutex<GateState>>,
    sender: watch::Sender<Option<Outcome>>,
    previous: Option<Last>,
}

/// Records the answer once; an error if dropped unanswered.
struct Finish {
    state: Arc<parking_lot::Mutex<GateState>>,
    sender: Option<watch::Sender<Option<Outcome>>>,
}

impl Finish {
    fn finish(&mut self, outcome: Outcome) {
        let Some(sender) = self.sender.take() else { return };
        let mut state = self.state.lock();
        state.pending = None;
        if let Some(last) = state.last.as_mut() {
            last.outcome = Some(outcome.clone());
        }
        drop(state);
        sender.send_replace(Some(outcome));
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.finish(Err("the agent's JIT thread dropped the request".to_string()));
    }
}

/// The callback through which the JIT thread answers.
pub type Reply = Box<dyn FnOnce(Outcome) + Send>;

impl Start {
    /// Sends the request through `submit`, which gets the callback to
    /// answer it; where the answer comes. When `submit` fails, the request
    /// is as if it had never started, and its error is returned.
    pub fn send<E>(self, submit: impl FnOnce(Reply) -> Result<(), E>) -> Result<Answer, E> {
        let answer = self.sender.subscribe();
        let mut finish = Finish { state: Arc::clone(&self.state), sender: Some(self.sender) };
        let sent = submit(Box::new(move |outcome| finish.finish(outcome)));
        if sent.is_err() {
            let mut state = self.state.lock();
            state.pending = None;
            state.last = self.previous;
        }
        sent.map(|()| answer)
    }
}

impl RecompileGate {
    pub fn new(every: Duration) -> RecompileGate {
        RecompileGate { every, state: Arc::default() }
    }

    /// What to do with `request` now; 429 when another request is pending
    /// or recent.
    pub fn decide(&self, request: &Request) -> Result<Decision, ApiError> {
        decide(&self.state.lock(), request, self.every)
    }

    /// [`RecompileGate::decide`], marking the request pending when it may start.
    pub fn claim(&self, request: &Request) -> Result<(Decision, Option<Start>), ApiError> {
        let mut state = self.state.lock();
        let decision = decide(&state, request, self.every)?;
        if !matches!(decision, Decision::Start) {
            return Ok((decision, None));
        }
        let (sender, answer) = watch::channel(None);
        state.pending = Some((request.classes.clone(), answer));
        let last = Last { request: request.clone(), started: Instant::now(), outcome: None };
        let previous = state.last.replace(last);
        Ok((decision, Some(Start { state: Arc::clone(&self.state), sender, previous })))
    }
}

fn decide(state: &GateState, request: &Request, every: Duration) -> Result<Decision, ApiError> {
    if let Some((pending, answer)) = &state.pending {
        if *pending == request.classes {
            return Ok(Decision::Join(answer.clone()));
        }
        let message = format!("a recompile of {} is queued or running; one request at a time", pending.join(", "));
        return Err(ApiError::too_many(message, every));
    }
    let Some(last) = &state.last else { return Ok(Decision::Start) };
    let since = last.started.elapsed();
    if since >= every {
        return Ok(Decision::Start);
    }
    match &last.outcome {
        Some(outcome) if request.id.is_some() && last.request == *request => Ok(Decision::Repeat(outcome.clone())),
        _ => Err(ApiError::too_many(
            format!("at most one recompile request every {} s: each costs the JVM its compiled code", every.as_secs()),
            every - since,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn request(names: &[&str], id: Option<&str>) -> Request {
        Request { classes: names.iter().map(|name| name.to_string()).collect(), id: id.map(str::to_string) }
    }

    fn report(request: &Request) -> Outcome {
        Ok(RecompileReport { retransformed: request.classes.clone(), ..RecompileReport::default() })
    }

    #[tokio::test(start_paused = true)]
    async fn one_request_at_a_time_the_same_one_joins_and_only_a_retry_repeats() {
        let gate = RecompileGate::new(Duration::from_secs(30));
        let (work, other) = (request(&["a.Work"], Some("r1")), request(&["b.Other"], None));
        let (Decision::Start, Some(start)) = gate.claim(&work).unwrap() else { panic!("the first starts") };
        let mut replies = Vec::new();
        let mut answer = start
            .send(|reply| {
                replies.push(reply);
                Ok::<(), ()>(())
            })
            .unwrap();
        let new_for_the_same = request(&["a.Work"], Some("r2"));
        assert!(matches!(gate.decide(&new_for_the_same), Ok(Decision::Join(_))), "the same classes join");
        let refused = gate.decide(&other).err().expect("another waits");
        assert_eq!((refused.status, refused.retry_after), (StatusCode::TOO_MANY_REQUESTS, Some(30)));
        replies.pop().unwrap()(report(&work));
        let outcome = answer.wait_for(Option::is_some).await.unwrap().clone().unwrap();
        assert_eq!(outcome.unwrap().retransformed, work.classes);
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(matches!(gate.decide(&work), Ok(Decision::Repeat(Ok(_)))), "a retry gets the answer again");
        for not_a_retry in [new_for_the_same, request(&["a.Work"], None)] {
            let refused = gate.decide(&not_a_retry).err().expect("a new request for the same classes waits");
            assert_eq!(refused.retry_after, Some(20), "{not_a_retry:?}");
        }
        let refused = gate.decide(&other).err().expect("rate-limited");
        assert_eq!(refused.retry_after, Some(20));
        tokio::time::advance(Duration::from_secs(20)).await;
        assert!(matches!(gate.decide(&other), Ok(Decision::Start)));
        assert!(matches!(gate.decide(&request(&["a.Work"], Some("r2"))), Ok(Decision::Start)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_start_is_given_back_and_a_dropped_reply_answers() {
        let gate = RecompileGate::new(Duration::from_secs(30));
        let work = request(&["a.Work"], Some("r1"));
        let (_, start) = gate.claim(&work).unwrap();
        let refused = start.unwrap().send(|reply| {
            drop(reply);
            Err(())
        });
        assert_eq!(refused.err(), Some(()));
        assert!(matches!(gate.decide(&request(&["b.Other"], None)), Ok(Decision::Start)), "nothing was sent");
        let (_, start) = gate.claim(&work).unwrap();
        let mut answer = start
            .unwrap()
            .send(|reply| {
                drop(reply);
                Ok::<(), ()>(())
            })
            .unwrap();
        let outcome = answer.wait_for(Option::is_some).await.unwrap().clone().unwrap();
        assert!(outcome.unwrap_err().contains("dropped"));
        assert!(matches!(gate.decide(&work), Ok(Decision::Repeat(Err(_)))));
    }
}
