//! Running one agent session for the loop: spawning it, streaming its
//! output, ending it, and cleaning up what it left behind; its command line
//! (`launch`) and its stream's facts (`stream`).
//!
//! # How the loop passes signals to a session (the rule)
//!
//! - **Print mode.** claude runs in a process group of its own, so a Ctrl+C at
//!   the terminal reaches only the loop, which decides: the first SIGINT,
//!   SIGTERM or SIGHUP is forwarded to the session's group as SIGINT ("end the
//!   current session cleanly"), escalating to SIGTERM and SIGKILL if it does
//!   not end within the grace periods; the loop then stops. A second signal
//!   kills the session's group at once (SIGKILL) and the loop stops.
//! - **Interactive mode.** claude stays in the loop's process group and owns
//!   the terminal; in raw mode Ctrl+C is a key for claude, not a signal. A
//!   signal that does reach the loop (SIGTERM, SIGHUP, `kill -INT`) is
//!   forwarded to claude as SIGINT, with the same escalation, and the loop
//!   stops after the session.
//! - **Timeout.** Wall clock from the session's start: the same ladder
//!   (`procs::ladder`: SIGINT, SIGTERM, SIGKILL, `GAP` apart).
//! - **A stop request before the session starts** (during a lifecycle hook,
//!   say) starts no session at all; lifecycle hooks run in a process group of
//!   their own, so Ctrl+C reaches only the loop, which ends them the same way.
//! - **The loop killed** (SIGKILL, the OOM killer): on Linux each session is
//!   started with a parent-death signal, so claude dies with the loop (SIGKILL
//!   in print mode; SIGTERM for the TUI, which then restores the terminal).
//!   What its Bash tool started in sessions of their own carries the run's
//!   `RALPH_SESSION_TOKEN`; the next loop, taking over the lock, ends those.
//! - **Leftovers.** Claude Code's Bash tool starts each command in a new
//!   session, so background processes (`sleep 600 &`, a dev server) are not in
//!   claude's process group and outlive it. On Linux the loop is a child
//!   subreaper, so they are re-parented to it; after every session it ends all
//!   of its descendants (SIGTERM, then SIGKILL) and reaps them. Elsewhere it
//!   ends the processes whose environment carries the session's marker
//!   (`RALPH_SESSION_TOKEN`).
//! - **An agent in ralph's bubblewrap** (`--confined`, `Confine::Bwrap`):
//!   the session's process is bwrap, which forwards no signal: the first
//!   signal of the ladder ends it, and with it at once (its child dies with
//!   it, and its pid namespace with its first process) the agent and all it
//!   started, in whatever session. No clean ending, nothing left over.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::signal::Signal;

use crate::procs::ladder::Ending;
use crate::procs::ladder::{Target, supervise_until};
pub mod launch;

/// How a run's sessions are started: the session's part of the settings.
#[derive(Debug, Clone)]
pub struct Sessions {
    pub prompt: std::path::PathBuf,
    pub timeout: std::time::Duration,
    pub interactive: bool,
    /// The agent and the program that runs it.
    pub agent: crate::agent::Agent,
    pub program: std::path::PathBuf,
    /// The agents to fall back on, in order, and their programs (their own
    /// default models).
    pub fallbacks: Vec<(crate::agent::Agent, std::path::PathBuf)>,
    /// Token prices by model (the config's over ralph's table).
    pub prices: std::collections::BTreeMap<String, crate::agent::prices::Price>,
    pub model: Option<String>,
    pub permission_mode: crate::agent::claude::PermissionMode,
    pub claude_args: Vec<String>,
}

/// One agent of a run as a session runs it: the run's own (with the model
/// and extra arguments given) or a fallback (its own defaults).
#[derive(Debug, Clone, Copy)]
pub struct Seat<'a> {
    pub agent: crate::agent::Agent,
    pub program: &'a std::path::Path,
    pub model: Option<&'a str>,
    pub extra: &'a [String],
}

impl Sessions {
    /// Agent `i` of the run: 0 its own, then its fallbacks.
    pub fn seat(&self, i: usize) -> Seat<'_> {
        match i.checked_sub(1).and_then(|f| self.fallbacks.get(f)) {
            Some((agent, program)) => Seat {
                agent: *agent,
                program,
                model: None,
                extra: &[],
            },
            None => Seat {
                agent: self.agent,
                program: &self.program,
                model: self.model.as_deref(),
                extra: &self.claude_args,
            },
        }
    }
}

use crate::agent::stream::{self, Shown};

/// Longest stream line kept for parsing; longer lines are saved, not parsed.
const MAX_LINE: usize = 8 << 20;

pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Print mode: the prompt file, given on stdin; output parsed and saved.
    /// Interactive mode (`None`): the terminal is claude's.
    pub print: Option<PrintIo>,
    pub timeout: Duration,
    pub token: String,
    /// A folder the session uses as its TMPDIR, removed once it has ended.
    pub scratch: Option<tempfile::TempDir>,
    /// What must not be there after the session (what would run code
    /// later, outside any sandbox, and was not there before it): removed
    /// once it has ended, and said.
    pub not_after: Vec<PathBuf>,
    /// Whose session it is: its stream is read as that agent's.
    pub agent: crate::agent::Agent,
    /// Environment variables the session does not get (the GitHub token
    /// ralph pushes with: a session's commands could read it).
    pub unset: Vec<&'static str>,
    /// It runs confined: what its sandbox refused is judged after it
    /// (`Agent::judge_confined`).
    pub confined: bool,
}

pub struct PrintIo {
    pub prompt: PathBuf,
    pub stream_file: PathBuf,
    pub show: Box<dyn FnMut(Shown) + Send>,
}

pub struct Finished {
    pub status: Option<ExitStatus>,
    pub ending: Ending,
    pub pid: u32,
    pub stream: stream::Session,
    pub duration: Duration,
    /// Leftover processes ended after the session: pid and name.
    pub leftovers: Vec<(u32, String)>,
    /// What it left of `Launch::not_after`, removed (or why it could not be).
    pub removed: Vec<String>,
}

/// A started session.
pub struct Running {
    child: std::process::Child,
    pub pid: u32,
    pub start_time: u64,
    t0: Instant,
    deadline: Option<Instant>,
    group: bool,
    token: String,
    reader: Option<std::thread::JoinHandle<stream::Session>>,
    /// The agent's stderr (its log, for `Caps::log_on_stderr`), read as it
    /// comes.
    log: Option<LogWatch>,
    not_after: Vec<PathBuf>,
    _scratch: Option<tempfile::TempDir>,
    /// Whose session it is: its stream is that agent's.
    agent: crate::agent::Agent,
    /// Confined: judged after it (`Agent::judge_confined`).
    confined: bool,
}

/// What the agent's log said so far, and when the session is to be cut
/// short because of it.
#[derive(Default)]
struct LogFacts {
    said: Option<crate::agent::LogSaid>,
    cut_at: Option<Instant>,
}

struct LogWatch {
    facts: std::sync::Arc<std::sync::Mutex<LogFacts>>,
    thread: std::thread::JoinHandle<()>,
}

/// Shown from two threads: the stream's and the log's.
type SharedShow = std::sync::Arc<std::sync::Mutex<Box<dyn FnMut(Shown) + Send>>>;

/// Read the agent's stderr line by line: in its log (`log_on_stderr`), a
/// failed model call it retries by itself is said, and a usage limit cuts
/// the session short (the agent would wait for the reset silently, for
/// hours: ralph waits its own way, or falls back). Codex's warning that
/// the project's `.codex` files are off is said ralph's way (its advice
/// does nothing under ralph). Other lines pass to
/// ralph's stderr, control characters shown (a session's command can
/// write there).
fn watch_log(
    err: impl Read + Send + 'static,
    agent: crate::agent::Agent,
    show: SharedShow,
) -> LogWatch {
    let facts = std::sync::Arc::new(std::sync::Mutex::new(LogFacts::default()));
    let mine = facts.clone();
    let thread = std::thread::spawn(move || {
        let mut r = BufReader::new(err.take(64 << 20));
        let mut line = Vec::new();
        while matches!(r.read_until(b'\n', &mut line), Ok(n) if n > 0) {
            let text = String::from_utf8_lossy(&line[..line.len().min(16 << 10)]);
            let text = text.trim_end();
            match agent.read_log(text) {
                Some(said) => {
                    let cut = matches!(said.limit, Some(stream::Limit::Usage { .. }));
                    let how = if cut {
                        "ralph ends the session and waits its own way"
                    } else {
                        "it retries by itself"
                    };
                    if let Ok(mut show) = show.lock() {
                        show(Shown::Note(format!(
                            "{agent}: {} ({how})",
                            stream::first_line(&said.text, 200)
                        )));
                    }
                    let mut f = mine.lock().unwrap_or_else(|e| e.into_inner());
                    if cut && f.cut_at.is_none() {
                        f.cut_at = Some(Instant::now());
                    }
                    f.said = Some(said);
                }
                None if agent.caps().log_on_stderr && text.starts_with("timestamp=") => {}
                None if let Some(note) = agent.stderr_note(text) => {
                    if let Ok(mut show) = show.lock() {
                        show(Shown::Note(format!("{agent}: {note}")));
                    }
                }
                None => {
                    if let Ok(mut show) = show.lock() {
                        show(Shown::Stderr(text.to_string()));
                    }
                }
            }
            line.clear();
        }
    });
    LogWatch { facts, thread }
}

/// The session's program with its arguments, folder and environment.
fn command(spec: &Launch) -> Command {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    for k in &spec.unset {
        cmd.env_remove(k);
    }
    cmd.env(crate::handoff::env::SESSION_TOKEN, &spec.token);
    // The model gets no GitHub token: ralph holds it, to push and open
    // the pull request itself.
    crate::github::token::withhold(&mut cmd);
    cmd
}

pub fn spawn(spec: Launch) -> Result<Running> {
    let t0 = Instant::now();
    let mut cmd = command(&spec);
    let mut print = spec.print;
    if let Some(p) = &print {
        let prompt = File::open(&p.prompt)
            .with_context(|| format!("cannot open the prompt {}", p.prompt.display()))?;
        // Its stderr is read too: for its log (`log_on_stderr`), and so
        // that what a session's command writes there reaches the terminal
        // with its control characters shown, not sent.
        cmd.stdin(prompt)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.process_group(0);
    }
    die_with_parent(&mut cmd, print.is_some());
    let stream_file = match &print {
        Some(p) => Some(
            crate::fsutil::create_new(&p.stream_file)
                .with_context(|| format!("cannot create {}", p.stream_file.display()))?,
        ),
        None => None,
    };
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", spec.program.display()))?;
    let pid = child.id();
    let start_time = crate::procs::tree::ProcReader::new()
        .get_basic(pid)
        .map_or(0, |p| p.start_time);
    let (reader, log) = match (print.as_mut(), stream_file) {
        (Some(p), Some(file)) => {
            let show = std::mem::replace(&mut p.show, Box::new(|_| {}));
            let (reader, log) = read_outputs(&mut child, file, show, spec.agent);
            (Some(reader), log)
        }
        _ => (None, None),
    };
    Ok(Running {
        child,
        pid,
        start_time,
        t0,
        // An absurd timeout that passes the option's bounds still must not
        // overflow: no deadline at all is the honest reading of "forever".
        deadline: t0.checked_add(spec.timeout),
        group: print.is_some(),
        token: spec.token,
        reader,
        log,
        not_after: spec.not_after,
        _scratch: spec.scratch,
        agent: spec.agent,
        confined: spec.confined,
    })
}

/// On Linux, the session dies with the loop, even if the loop is SIGKILLed.
fn die_with_parent(cmd: &mut Command, print: bool) {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        let sig = if print {
            Signal::SIGKILL
        } else {
            Signal::SIGTERM
        };
        // SAFETY: prctl and getppid are async-signal-safe system calls.
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Some(sig)).map_err(std::io::Error::from)?;
                // The loop died between fork and prctl: nothing will signal us.
                if nix::unistd::getppid().as_raw() as u32 != parent {
                    return Err(std::io::Error::other("the ralph loop is gone"));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (cmd, print);
}

impl Running {
    /// Wait for the session to end: by itself, at its timeout, or because
    /// the loop was asked to stop (first request: the ladder; second: KILL).
    pub fn wait(mut self) -> Result<Finished> {
        let target = if self.group {
            Target::Group(self.pid)
        } else {
            Target::Pid(self.pid)
        };
        let facts = self.log.as_ref().map(|l| l.facts.clone());
        let cut_at = || {
            facts
                .as_ref()
                .and_then(|f| f.lock().ok().and_then(|f| f.cut_at))
        };
        let deadline = self.deadline;
        let (status, ended) = supervise_until(
            &mut self.child,
            target,
            &|| match (deadline, cut_at()) {
                (Some(d), Some(c)) => Some(d.min(c)),
                (d, c) => d.or(c),
            },
            &crate::procs::signals::signals_received,
        )?;
        let ending = ended;
        let status = Some(status);
        let leftovers = crate::procs::leftovers::end_leftovers(&self.token, self.pid);
        let agent = self.agent;
        let mut stream = match self.reader {
            Some(h) => h.join().unwrap_or_else(|_| stream::Session::of(agent)),
            None => stream::Session::of(agent),
        };
        if let Some(log) = self.log {
            let _ = log.thread.join();
            let facts = log.facts.lock().map(|mut f| std::mem::take(&mut *f));
            // Cut short at a limit its log said: that limit is how it ended.
            if let Ok(LogFacts {
                said: Some(said),
                cut_at: Some(_),
            }) = facts
                && stream.limit.is_none()
            {
                stream.limit = said.limit;
                stream.last_error = Some(said.text);
            }
        }
        if self.confined {
            agent.judge_confined(&mut stream);
        }
        let removed = remove_planted(&self.not_after);
        Ok(Finished {
            status,
            ending,
            pid: self.pid,
            stream,
            duration: self.t0.elapsed(),
            leftovers,
            removed,
        })
    }
}

/// A print session's two outputs, each read by a thread of its own: its
/// stream (saved and parsed), and its stderr (its log, or lines passed on);
/// both show what they say through the one `show`.
fn read_outputs(
    child: &mut std::process::Child,
    file: File,
    show: Box<dyn FnMut(Shown) + Send>,
    agent: crate::agent::Agent,
) -> (std::thread::JoinHandle<stream::Session>, Option<LogWatch>) {
    let out = child.stdout.take().expect("stdout is piped");
    let show: SharedShow = std::sync::Arc::new(std::sync::Mutex::new(show));
    let log = child
        .stderr
        .take()
        .map(|err| watch_log(err, agent, show.clone()));
    let shown = Box::new(move |x| {
        if let Ok(mut show) = show.lock() {
            show(x)
        }
    });
    (
        std::thread::spawn(move || pump(out, file, shown, agent)),
        log,
    )
}

/// Remove what of `paths` is there now: each as said (an empty folder
/// the agent made for itself goes unsaid).
pub(crate) fn remove_planted(paths: &[PathBuf]) -> Vec<String> {
    let mut said = Vec::new();
    for p in paths {
        let Ok(m) = std::fs::symlink_metadata(p) else {
            continue;
        };
        let empty = m.is_dir() && std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none());
        let done = if m.is_dir() {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        };
        match done {
            Ok(()) if empty => {}
            Ok(()) => said.push(format!("removed {}", p.display())),
            Err(e) => said.push(format!("could not remove {}: {e}", p.display())),
        }
    }
    said
}

/// Copy the stream to its file and parse it line by line, holding at most
/// one (capped) line in memory whatever the session prints.
fn pump(
    out: impl Read,
    mut file: File,
    mut show: Box<dyn FnMut(Shown) + Send>,
    agent: crate::agent::Agent,
) -> stream::Session {
    let mut session = stream::Session::of(agent);
    let mut r = BufReader::with_capacity(64 * 1024, out);
    let mut line: Vec<u8> = Vec::new();
    let mut overflow = false;
    loop {
        let buf = match r.fill_buf() {
            Ok([]) | Err(_) => break,
            Ok(b) => b,
        };
        let _ = file.write_all(buf);
        let n = buf.len();
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            if !overflow && line.len() + i <= MAX_LINE {
                line.extend_from_slice(&rest[..i]);
                for s in session.feed(&String::from_utf8_lossy(&line)) {
                    show(s);
                }
            } else if !overflow {
                session.skipped_line();
            }
            line.clear();
            overflow = false;
            rest = &rest[i + 1..];
        }
        if !overflow && line.len() + rest.len() <= MAX_LINE {
            line.extend_from_slice(rest);
        } else {
            if !overflow {
                session.skipped_line();
            }
            line.clear();
            overflow = true;
        }
        r.consume(n);
    }
    if !line.is_empty() && !overflow {
        for s in session.feed(&String::from_utf8_lossy(&line)) {
            show(s);
        }
    }
    let _ = file.flush();
    session
}
