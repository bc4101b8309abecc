//! Headless Chromium driven through the DevTools protocol, for page tests
//! that act as a person does: click, answer a prompt, read the DOM of an
//! embedded document, take a screenshot.
//!
//! The protocol runs over a pipe (`--remote-debugging-pipe`: Chromium
//! reads commands on its fd 3 and writes answers and events on its fd 4,
//! each a JSON message ended by a NUL byte), so no port is opened. Each
//! browser gets a fresh profile in the test's directory and the flags of
//! [`crate::browser::FLAGS`]; it runs in its own process group, killed
//! whole when the [`Browser`] is dropped. Every wait has a deadline.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use base64::Engine;
use command_fds::{CommandFdExt, FdMapping};
use serde_json::{json, Value};

use crate::browser::{chromium_binary, FLAGS};

/// Longest wait for one protocol answer.
const ANSWER_DEADLINE: Duration = Duration::from_secs(60);

/// A running headless Chromium.
pub struct Browser {
    child: Child,
    commands: os_pipe::PipeWriter,
    messages: Receiver<Value>,
    /// Events received while waiting for something else.
    events: Vec<Value>,
    next_id: u64,
}

/// A page (a target with its session).
pub struct Page<'a> {
    browser: &'a mut Browser,
    session: String,
}

impl Browser {
    /// Starts Chromium with a `width` x `height` window and a fresh profile in `dir`.
    pub fn launch(dir: &Path, (width, height): (u32, u32)) -> Browser {
        let profile = tempdir_in(dir);
        let (chromium_reads, commands) = os_pipe::pipe().expect("a pipe");
        let (answers, chromium_writes) = os_pipe::pipe().expect("a pipe");
        let mut command = Command::new(chromium_binary());
        command
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--window-size={width},{height}"))
            .arg("--remote-debugging-pipe")
            .arg("about:blank")
            .env("HOME", &profile)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        command
            .fd_mappings(vec![
                FdMapping { parent_fd: chromium_reads.into(), child_fd: 3 },
                FdMapping { parent_fd: chromium_writes.into(), child_fd: 4 },
            ])
            .expect("fds 3 and 4");
        let child = command.spawn().expect("Chromium starts");
        // The child has its ends; the reader thread ends when Chromium does.
        drop(command);
        let (sender, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(answers);
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).is_ok_and(|read| read > 0) {
                if message.last() == Some(&0) {
                    message.pop();
                }
                if let Ok(value) = serde_json::from_slice::<Value>(&message) {
                    if sender.send(value).is_err() {
                        break;
                    }
                }
                message.clear();
            }
        });
        Browser { child, commands, messages, events: Vec::new(), next_id: 1 }
    }

    /// Sends a command (to `session`, or the browser); returns its id.
    pub fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        let mut bytes = serde_json::to_vec(&message).expect("JSON");
        bytes.push(0);
        self.commands.write_all(&bytes).expect("Chromium reads its commands");
        id
    }

    fn next_message(&mut self, deadline: Instant, waiting_for: &str) -> Value {
        match self.messages.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("Chromium: no {waiting_for} within the deadline"),
            Err(RecvTimeoutError::Disconnected) => panic!("Chromium exited while waiting for {waiting_for}"),
        }
    }

    /// Waits for the answer to command `id`; panics on a protocol error.
    pub fn answer(&mut self, id: u64) -> Value {
        self.answer_or_error(id).unwrap_or_else(|message| panic!("DevTools error: {message}"))
    }

    /// Waits for the answer to command `id`: its result, or the whole
    /// message when it is a protocol error.
    pub fn answer_or_error(&mut self, id: u64) -> Result<Value, Value> {
        let deadline = Instant::now() + ANSWER_DEADLINE;
        loop {
            let message = self.next_message(deadline, &format!("answer to command {id}"));
            if message["id"] == id {
                if message.get("error").is_some() {
                    return Err(message);
                }
                return Ok(message["result"].clone());
            }
            if message.get("method").is_some() {
                self.events.push(message);
            }
        }
    }

    /// Sends a command and waits for its answer.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.send(session, method, params);
        self.answer(id)
    }

    /// Waits for the event `method` (of any session) until `deadline`.
    pub fn event(&mut self, method: &str, deadline: Instant) -> Value {
        self.try_event(method, deadline).unwrap_or_else(|| panic!("Chromium: no event {method} within the deadline"))
    }

    /// The next event `method` before `deadline`, if one comes.
    pub fn try_event(&mut self, method: &str, deadline: Instant) -> Option<Value> {
        if let Some(index) = self.events.iter().position(|event| event["method"] == method) {
            return Some(self.events.remove(index));
        }
        loop {
            let message = match self.messages.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => panic!("Chromium exited while waiting for event {method}"),
            };
            if message["method"] == method {
                return Some(message);
            }
            if message.get("method").is_some() {
                self.events.push(message);
            }
        }
    }

    /// Opens `url` in a new page and attaches to it.
    pub fn open(&mut self, url: &str) -> Page<'_> {
        let target = self.call(None, "Target.createTarget", json!({ "url": url }));
        let target = target["targetId"].as_str().expect("a target id").to_string();
        let attached = self.call(None, "Target.attachToTarget", json!({ "targetId": target, "flatten": true }));
        let session = attached["sessionId"].as_str().expect("a session id").to_string();
        for domain in ["Page.enable", "Runtime.enable"] {
            self.call(Some(&session), domain, json!({}));
        }
        Page { browser: self, session }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Page<'_> {
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.browser.call(Some(&self.session), method, params)
    }

    /// The value of the JavaScript `expression` in the page (promises awaited).
    /// Panics when a navigation of the page cuts the evaluation: where the
    /// page may navigate, use [`Page::wait_for`] or
    /// [`Page::evaluate_unless_navigated`].
    pub fn evaluate(&mut self, expression: &str) -> Value {
        let result = self
            .call("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }));
        assert!(result.get("exceptionDetails").is_none(), "{expression} threw: {result}");
        result["result"]["value"].clone()
    }

    /// [`Page::evaluate`], or `None` when a navigation of the page (a form
    /// posted, a redirect, the page's own `location.href = ...`) replaced
    /// its document under the evaluation: Chromium then answers "Inspected
    /// target navigated or closed" (or the context was destroyed) instead
    /// of the value. The evaluation is not made again here: an expression
    /// with an effect (a POST) must run once, whether or not its answer
    /// came back.
    pub fn evaluate_unless_navigated(&mut self, expression: &str) -> Option<Value> {
        let params = json!({ "expression": expression, "returnByValue": true, "awaitPromise": true });
        let id = self.browser.send(Some(&self.session), "Runtime.evaluate", params);
        let navigated = |text: &str| text.contains("navigated or closed") || text.contains("context was destroyed");
        match self.browser.answer_or_error(id) {
            Err(message) if navigated(&message.to_string()) => None,
            Err(message) => panic!("DevTools error: {message}"),
            Ok(result) if result.get("exceptionDetails").is_some_and(|e| navigated(&e.to_string())) => None,
            Ok(result) => {
                assert!(result.get("exceptionDetails").is_none(), "{expression} threw: {result}");
                Some(result["result"]["value"].clone())
            }
        }
    }

    /// Evaluates `expression` until it is truthy or `deadline` passes;
    /// returns its last value and whether it became truthy.
    /// A navigation under way (a form posted, a redirect) is waited out:
    /// Chromium refuses to evaluate in a page that is being replaced.
    pub fn wait_for(&mut self, expression: &str, deadline: Instant) -> (Value, bool) {
        loop {
            let value = self.evaluate_unless_navigated(expression).unwrap_or(Value::Null);
            let truthy = !matches!(value, Value::Null | Value::Bool(false)) && value != json!(0) && value != json!("");
            if truthy || Instant::now() >= deadline {
                return (value, truthy);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A left click at page coordinates (`x`, `y`), as a mouse makes it.
    /// Returns without waiting for the page to handle it: [`Page::settle`]
    /// waits. A click that opens a dialog is never answered (headless
    /// Chromium drops those answers): answer the dialog
    /// ([`Page::answer_prompt`]) instead of settling.
    pub fn click(&mut self, x: f64, y: f64) -> Vec<u64> {
        let session = self.session.clone();
        let mut ids = vec![self.browser.send(
            Some(&session),
            "Input.dispatchMouseEvent",
            json!({ "type": "mouseMoved", "x": x, "y": y }),
        )];
        for kind in ["mousePressed", "mouseReleased"] {
            ids.push(self.browser.send(
                Some(&session),
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            ));
        }
        ids
    }

    /// Waits for the answers to `ids` (commands sent without waiting).
    pub fn settle(&mut self, ids: Vec<u64>) {
        for id in ids {
            self.browser.answer(id);
        }
    }

    /// Waits for a `prompt()` and answers it with `text`; returns its message.
    pub fn answer_prompt(&mut self, text: &str, deadline: Instant) -> String {
        self.try_answer_prompt(text, deadline)
            .unwrap_or_else(|| panic!("Chromium: no event Page.javascriptDialogOpening within the deadline"))
    }

    /// [`Page::answer_prompt`], or `None` if no prompt opens by `deadline`.
    pub fn try_answer_prompt(&mut self, text: &str, deadline: Instant) -> Option<String> {
        let event = self.browser.try_event("Page.javascriptDialogOpening", deadline)?;
        assert_eq!(event["params"]["type"], "prompt", "{event}");
        self.call("Page.handleJavaScriptDialog", json!({ "accept": true, "promptText": text }));
        Some(event["params"]["message"].as_str().unwrap_or_default().to_string())
    }

    /// A PNG screenshot of the page, written to `file` and returned.
    pub fn screenshot(&mut self, file: &Path) -> Vec<u8> {
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        let data = shot["data"].as_str().expect("screenshot data");
        let bytes = base64::engine::general_purpose::STANDARD.decode(data).expect("base64");
        std::fs::write(file, &bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
        bytes
    }
}

/// A fresh directory under `dir` for one browser profile.
fn tempdir_in(dir: &Path) -> std::path::PathBuf {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let path = dir.join(format!("devtools-profile-{}", COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    path
}
