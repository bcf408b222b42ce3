//! Sending notices: each channel on a thread of its own, with a short
//! timeout and one retry, so the loop never waits on a slow server; what
//! came of each is appended to the run's `notifications.jsonl` (a URL only
//! as its scheme and host). At its end the loop waits for them, bounded.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{Channel, Event, Notice, Notifier, Post, post};

/// One attempt's longest time, and the pause before the one retry.
pub const TIMEOUT: Duration = Duration::from_secs(5);
pub const RETRY_AFTER: Duration = Duration::from_secs(1);
/// How long the loop's end waits for notices still being sent.
pub const FINISH_WITHIN: Duration = Duration::from_secs(12);

/// One line of `notifications.jsonl`.
#[derive(Debug, Serialize)]
struct Line {
    time: String,
    event: Event,
    channel: String,
    ok: bool,
    attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// What came of one notice on one channel.
#[derive(Debug, Clone)]
pub struct Sent {
    pub notice: super::Event,
    pub channel: String,
    pub ok: bool,
}

/// Who hears of each notice sent (from the thread that sent it).
pub type Told = std::sync::Arc<dyn Fn(Sent) + Send + Sync>;

/// The run's notices: sent in the background, waited for at the end.
pub struct Outbox {
    notifier: Option<Notifier>,
    /// The loop's name in notices.
    name: String,
    project: PathBuf,
    /// `notifications.jsonl` in the run folder (through its held handle).
    log: Option<PathBuf>,
    /// Who hears what came of each notice (the run's journal).
    told: Told,
    sending: Mutex<Vec<JoinHandle<Option<String>>>>,
}

impl Outbox {
    pub fn new(
        notifier: Option<Notifier>,
        name: String,
        project: PathBuf,
        log: Option<PathBuf>,
    ) -> Outbox {
        Outbox {
            notifier,
            name,
            project,
            log,
            told: std::sync::Arc::new(|_| {}),
            sending: Mutex::new(Vec::new()),
        }
    }

    /// Tell `told` (the run's journal) what came of each notice.
    pub fn tell_to(&mut self, told: Told) {
        self.told = told;
    }

    /// Is a limit wait this long told?
    pub fn tells_wait(&self, wait: Duration) -> bool {
        self.notifier
            .as_ref()
            .is_some_and(|n| wait > n.limit_wait_over)
    }

    /// Send `what` happened and what to do, to every channel that takes
    /// `event`. Returns at once.
    pub fn tell(&self, event: Event, what: &str, todo: &str) {
        let Some(n) = &self.notifier else { return };
        if !n.events.contains(&event) {
            return;
        }
        let notice = Notice::new(event, &self.name, what, todo);
        let mut sending = self.sending.lock().unwrap_or_else(|e| e.into_inner());
        for ch in &n.channels {
            let (ch, notice, project, log, told) = (
                ch.clone(),
                notice.clone(),
                self.project.clone(),
                self.log.clone(),
                self.told.clone(),
            );
            sending.push(std::thread::spawn(move || {
                let (attempts, result) = attempt_twice(|| deliver(&ch, &notice, &project));
                record(log.as_deref(), &ch, &notice, attempts, &result);
                told(Sent {
                    notice: notice.event,
                    channel: ch.shown(),
                    ok: result.is_ok(),
                });
                result
                    .err()
                    .map(|e| format!("a notice to {} failed: {e}", ch.shown()))
            }));
        }
    }

    /// Wait for the notices still being sent, at most `within`; what
    /// failed (or is still going), one line each.
    pub fn finish(&self, within: Duration) -> Vec<String> {
        let handles: Vec<_> =
            std::mem::take(&mut *self.sending.lock().unwrap_or_else(|e| e.into_inner()));
        let t0 = Instant::now();
        let mut said = Vec::new();
        for h in handles {
            while !h.is_finished() && t0.elapsed() < within {
                std::thread::sleep(Duration::from_millis(20));
            }
            if !h.is_finished() {
                said.push("a notice was still being sent when the loop ended".to_string());
                continue;
            }
            if let Ok(Some(failed)) = h.join() {
                said.push(failed);
            }
        }
        said
    }
}

/// One try, and one more after a pause if it failed.
fn attempt_twice(mut f: impl FnMut() -> Result<(), String>) -> (u32, Result<(), String>) {
    match f() {
        Ok(()) => (1, Ok(())),
        Err(_) => {
            std::thread::sleep(RETRY_AFTER);
            (2, f())
        }
    }
}

fn record(
    log: Option<&std::path::Path>,
    ch: &Channel,
    n: &Notice,
    attempts: u32,
    r: &Result<(), String>,
) {
    let Some(log) = log else { return };
    let line = Line {
        time: crate::timefmt::now(),
        event: n.event,
        channel: ch.shown(),
        ok: r.is_ok(),
        attempts,
        error: r.as_ref().err().cloned(),
    };
    if let Ok(mut text) = serde_json::to_string(&line) {
        text.push('\n');
        let _ = crate::fsutil::append(log, text.as_bytes());
    }
}

/// One attempt on one channel.
fn deliver(ch: &Channel, n: &Notice, project: &std::path::Path) -> Result<(), String> {
    if let Some(mut p) = post(ch, n) {
        // A topic with access control takes the user's token.
        if let (Channel::Ntfy(_), Some(t)) = (ch, super::ntfy::token()) {
            p.headers.push(("Authorization", format!("Bearer {t}")));
        }
        return http(&p);
    }
    match ch {
        Channel::Desktop => desktop(n),
        Channel::Command(cmd) => {
            // As a hook: your command, often a script in the project, which
            // sessions edit; it gets no GitHub token.
            let mut c = Command::new("/bin/sh");
            crate::github::token::withhold(&mut c);
            c.args(["-c", cmd])
                .current_dir(project)
                .env(crate::handoff::env::EVENT, n.event.name())
                .env("RALPH_MESSAGE", &n.line)
                .env(crate::handoff::env::PROJECT, project);
            run(c)
        }
        _ => unreachable!("the HTTP channels are posted"),
    }
}

/// The HTTP client of notices (and of ntfy's replies): bounded in time,
/// an error status an error.
pub(super) fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(true)
        .user_agent(concat!("ralph/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

fn http(p: &Post) -> Result<(), String> {
    let agent = agent(TIMEOUT);
    let mut req = agent.post(&p.url).header("Content-Type", p.content_type);
    for (k, v) in &p.headers {
        req = req.header(*k, v);
    }
    req.send(p.body.as_str()).map(|_| ()).map_err(|e| {
        // Never the URL: it is the secret.
        e.to_string().replace(&p.url, &super::redact(&p.url))
    })
}

/// Whether this desktop has a notifier ralph can drive: checked as the
/// loop starts, not found missing at its end.
pub fn desktop_notifier() -> Result<(), String> {
    if which::which("notify-send").is_ok() || which::which("osascript").is_ok() {
        return Ok(());
    }
    Err("--notify desktop needs `notify-send` on PATH (Debian and Ubuntu: `apt install libnotify-bin`; Fedora: `dnf install libnotify`), or osascript on macOS".into())
}

/// The desktop's own notifier, where there is one.
fn desktop(n: &Notice) -> Result<(), String> {
    if let Ok(bin) = which::which("notify-send") {
        let mut c = Command::new(bin);
        // Its body is markup to many notification daemons.
        c.args(["--app-name=ralph", &n.title, &super::markup_escape(&n.line)]);
        return run(c);
    }
    if let Ok(bin) = which::which("osascript") {
        let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let script = format!(
            "display notification \"{}\" with title \"{}\"",
            quote(&n.line),
            quote(&n.title)
        );
        let mut c = Command::new(bin);
        c.args(["-e", &script]);
        return run(c);
    }
    Err("no desktop notifier here (notify-send on Linux, osascript on macOS)".into())
}

/// Run a notifier program in a group of its own, ended through the one
/// signal ladder after `TIMEOUT`.
fn run(mut c: Command) -> Result<(), String> {
    use crate::procs::ladder::{Ending, Target, supervise};
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let mut child = c.spawn().map_err(|e| format!("cannot run it: {e}"))?;
    let group = Target::Group(child.id());
    match supervise(&mut child, group, Some(Instant::now() + TIMEOUT), &|| 0) {
        Ok((_, Ending::TimedOut)) => Err(format!(
            "it ran longer than {}s; ended it",
            TIMEOUT.as_secs()
        )),
        Ok((st, _)) if st.success() => Ok(()),
        Ok((st, _)) => Err(format!("it exited with {}", crate::output::ended(st))),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_retried_once() {
        let mut n = 0;
        let (attempts, r) = attempt_twice(|| {
            n += 1;
            if n == 1 { Err("no".into()) } else { Ok(()) }
        });
        assert_eq!((attempts, r), (2, Ok(())));
        let (attempts, r) = attempt_twice(|| Err("down".into()));
        assert_eq!((attempts, r), (2, Err("down".to_string())));
        let (attempts, r) = attempt_twice(|| Ok(()));
        assert_eq!((attempts, r), (1, Ok(())));
    }

    fn outbox(dir: &std::path::Path, cmd: &str, events: Vec<Event>) -> Outbox {
        Outbox::new(
            Some(Notifier {
                channels: vec![Channel::Command(cmd.into())],
                events,
                limit_wait_over: Duration::from_secs(600),
            }),
            "app (main)".into(),
            dir.to_path_buf(),
            Some(dir.join("notifications.jsonl")),
        )
    }

    #[test]
    fn only_the_events_asked_for_are_sent_and_each_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let o = outbox(
            dir.path(),
            "printf '%s %s\\n' \"$RALPH_EVENT\" \"$RALPH_MESSAGE\" >> told",
            vec![Event::Complete],
        );
        o.tell(Event::Limit, "waiting", "nothing");
        o.tell(Event::Complete, "complete, all 2 steps done", "review it");
        assert_eq!(o.finish(Duration::from_secs(10)), Vec::<String>::new());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("told")).unwrap(),
            "complete ralph · app (main): complete, all 2 steps done. Review it\n"
        );
        let log = std::fs::read_to_string(dir.path().join("notifications.jsonl")).unwrap();
        let line: serde_json::Value = serde_json::from_str(log.trim()).unwrap();
        assert_eq!(
            (&line["event"], &line["ok"], &line["attempts"]),
            (&"complete".into(), &true.into(), &1.into())
        );
        assert!(o.tells_wait(Duration::from_secs(601)) && !o.tells_wait(Duration::from_secs(600)));
        let none = Outbox::new(None, String::new(), dir.path().into(), None);
        none.tell(Event::Complete, "x", "y");
        assert!(!none.tells_wait(Duration::MAX) && none.finish(Duration::ZERO).is_empty());
    }

    #[test]
    fn a_failing_channel_is_tried_twice_and_said_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let o = outbox(dir.path(), "echo x >> tries; exit 4", Event::ALL.to_vec());
        o.tell(Event::Failed, "failed", "see");
        let said = o.finish(Duration::from_secs(10));
        assert_eq!(said.len(), 1);
        assert!(
            said[0].starts_with("a notice to command `echo x"),
            "{said:?}"
        );
        assert!(
            said[0].ends_with("failed: it exited with status 4"),
            "{said:?}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("tries")).unwrap(),
            "x\nx\n"
        );
        let log = std::fs::read_to_string(dir.path().join("notifications.jsonl")).unwrap();
        assert!(
            log.contains("\"ok\":false") && log.contains("\"attempts\":2"),
            "{log}"
        );
        // What is still being sent when the loop ends is said, not waited on.
        let slow = outbox(dir.path(), "sleep 3", Event::ALL.to_vec());
        slow.tell(Event::Failed, "failed", "see");
        assert_eq!(
            slow.finish(Duration::from_millis(100)),
            vec!["a notice was still being sent when the loop ended".to_string()]
        );
    }

    #[test]
    fn a_command_that_hangs_is_ended_and_one_that_fails_is_said() {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "exit 3"]);
        assert!(run(c).unwrap_err().ends_with("it exited with status 3"));
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "true"]);
        assert_eq!(run(c), Ok(()));
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "sleep 30"]);
        assert_eq!(run(c), Err("it ran longer than 5s; ended it".into()));
    }
}
