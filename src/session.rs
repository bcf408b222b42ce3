//! Running one `claude` session for the loop: spawning it, streaming its
//! output, ending it, and cleaning up what it left behind.
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
//! - **Timeout.** Wall clock from the session's start: SIGINT, then SIGTERM,
//!   then SIGKILL, `ESCALATE` apart.
//! - **Leftovers.** Claude Code's Bash tool starts each command in a new
//!   session, so background processes (`sleep 600 &`, a dev server) are not in
//!   claude's process group and outlive it. On Linux the loop is a child
//!   subreaper, so they are re-parented to it; after every session it ends all
//!   of its descendants (SIGTERM, then SIGKILL) and reaps them. Elsewhere it
//!   ends the processes whose environment carries the session's marker
//!   (`RALPH_SESSION_TOKEN`).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::signal::{self, SigHandler, Signal};
use nix::unistd::Pid;
use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};

use crate::stream::{self, Shown};

pub const ESCALATE: Duration = Duration::from_secs(5);
/// Longest stream line kept for parsing; longer lines are saved, not parsed.
const MAX_LINE: usize = 8 << 20;

static SIGNALS: AtomicU32 = AtomicU32::new(0);
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: i32) {
    // Only async-signal-safe work here: two atomic stores.
    SIGNALS.fetch_add(1, Ordering::SeqCst);
    LAST_SIGNAL.store(sig, Ordering::SeqCst);
}

/// Count SIGINT, SIGTERM and SIGHUP instead of dying of them.
pub fn install_signal_handlers() -> Result<()> {
    let action = signal::SigAction::new(
        SigHandler::Handler(on_signal),
        signal::SaFlags::SA_RESTART,
        signal::SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only touches atomics.
        unsafe { signal::sigaction(sig, &action) }
            .with_context(|| format!("cannot handle {sig}"))?;
    }
    Ok(())
}

/// How many stop signals have arrived so far.
pub fn signals_received() -> u32 {
    SIGNALS.load(Ordering::SeqCst)
}

pub fn last_signal_name() -> &'static str {
    match LAST_SIGNAL.load(Ordering::SeqCst) {
        2 => "SIGINT",
        15 => "SIGTERM",
        1 => "SIGHUP",
        _ => "signal",
    }
}

/// Become the reaper of orphans left by the sessions (Linux only).
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Print mode: the prompt file, given on stdin; output parsed and saved.
    /// Interactive mode (`None`): the terminal is claude's.
    pub print: Option<PrintIo>,
    pub timeout: Duration,
    pub token: String,
}

pub struct PrintIo {
    pub prompt: PathBuf,
    pub stream_file: PathBuf,
    pub show: Box<dyn FnMut(Shown) + Send>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Ended by itself (or by the Stop hook).
    Exited,
    TimedOut,
    /// The loop was told to stop (signal count at the time).
    Interrupted,
}

pub struct Ended {
    pub status: Option<ExitStatus>,
    pub ending: Ending,
    pub pid: u32,
    pub stream: stream::Session,
    pub duration: Duration,
    /// Leftover processes ended after the session.
    pub leftovers: usize,
}

pub fn run(spec: Spec) -> Result<Ended> {
    let t0 = Instant::now();
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    cmd.env("RALPH_SESSION_TOKEN", &spec.token);
    let mut print = spec.print;
    if let Some(p) = &print {
        let prompt = File::open(&p.prompt)
            .with_context(|| format!("cannot open the prompt {}", p.prompt.display()))?;
        cmd.stdin(prompt)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        cmd.process_group(0);
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", spec.program.display()))?;
    let pid = child.id();
    let reader = match print.as_mut() {
        Some(p) => {
            let out = child.stdout.take().expect("stdout is piped");
            let file = File::create(&p.stream_file)
                .with_context(|| format!("cannot create {}", p.stream_file.display()))?;
            let show = std::mem::replace(&mut p.show, Box::new(|_| {}));
            Some(std::thread::spawn(move || pump(out, file, show)))
        }
        None => None,
    };
    let group = print.is_some();
    let signals_at_start = signals_received();
    let deadline = t0 + spec.timeout;
    let mut ending = Ending::Exited;
    let mut escalation: Option<(Instant, usize)> = None;
    let steps = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGKILL];
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        let sigs = signals_received() - signals_at_start;
        if sigs >= 2 {
            send(pid, group, Signal::SIGKILL);
            ending = Ending::Interrupted;
            break Some(child.wait()?);
        }
        let now = Instant::now();
        if escalation.is_none() && (sigs >= 1 || now >= deadline) {
            ending = if sigs >= 1 {
                Ending::Interrupted
            } else {
                Ending::TimedOut
            };
            send(pid, group, steps[0]);
            escalation = Some((now + ESCALATE, 1));
        }
        if let Some((at, i)) = escalation
            && now >= at
            && i < steps.len()
        {
            send(pid, group, steps[i]);
            escalation = Some((now + ESCALATE, i + 1));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let leftovers = end_leftovers(&spec.token);
    let stream = match reader {
        Some(h) => h.join().unwrap_or_default(),
        None => stream::Session::default(),
    };
    Ok(Ended {
        status,
        ending,
        pid,
        stream,
        duration: t0.elapsed(),
        leftovers,
    })
}

fn send(pid: u32, group: bool, sig: Signal) {
    let target = if group { -(pid as i32) } else { pid as i32 };
    let _ = signal::kill(Pid::from_raw(target), sig);
}

/// Copy the stream to its file and parse it line by line, holding at most
/// one (capped) line in memory whatever the session prints.
fn pump(out: impl Read, mut file: File, mut show: Box<dyn FnMut(Shown) + Send>) -> stream::Session {
    let mut session = stream::Session::default();
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
            }
            line.clear();
            overflow = false;
            rest = &rest[i + 1..];
        }
        if !overflow && line.len() + rest.len() <= MAX_LINE {
            line.extend_from_slice(rest);
        } else {
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

/// End what the session left running. Returns how many processes it ended.
pub fn end_leftovers(token: &str) -> usize {
    let me = std::process::id();
    let Ok(mut sys) = System::new() else { return 0 };
    let linux = cfg!(target_os = "linux");
    let kind = if linux {
        ProcessRefreshKind::nothing()
    } else {
        ProcessRefreshKind::nothing().with_environ(UpdateKind::Always)
    };
    sys.refresh_processes_specifics(ProcessesToUpdate::All, true, kind);
    let marker = format!("RALPH_SESSION_TOKEN={token}");
    let is_ours = |p: &sysinfo::Process| {
        // Descendants of the loop: with the subreaper, every orphan is one.
        let mut cur = p.parent();
        let mut depth = 0;
        while let Some(pp) = cur {
            if pp.as_u32() == me {
                return true;
            }
            depth += 1;
            if depth > 64 {
                break;
            }
            cur = sys.process(pp).and_then(|x| x.parent());
        }
        !linux && p.environ().iter().any(|e| e == marker.as_str())
    };
    let victims: Vec<u32> = sys
        .processes()
        .values()
        .filter(|p| p.pid().as_u32() != me && p.thread_kind().is_none() && is_ours(p))
        .filter(|p| !matches!(p.status(), sysinfo::ProcessStatus::Zombie))
        .map(|p| p.pid().as_u32())
        .collect();
    for &pid in &victims {
        let _ = signal::kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
    }
    let until = Instant::now() + Duration::from_secs(2);
    let mut alive = victims.clone();
    let mut procs = crate::proc_tree::ProcReader::new();
    while !alive.is_empty() && Instant::now() < until {
        reap();
        alive.retain(|&pid| procs.is_running(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    for &pid in &alive {
        let _ = signal::kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    std::thread::sleep(Duration::from_millis(if alive.is_empty() { 0 } else { 50 }));
    reap();
    victims.len()
}

/// Collect exited orphans that were re-parented to the loop.
pub fn reap() {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    while let Ok(s) = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
        if matches!(s, WaitStatus::StillAlive) {
            break;
        }
    }
}

/// Read a file's lines (for the hook log), tolerating its absence.
pub fn read_lines(path: &std::path::Path) -> Vec<String> {
    File::open(path)
        .map(|f| BufReader::new(f).lines().map_while(Result::ok).collect())
        .unwrap_or_default()
}
