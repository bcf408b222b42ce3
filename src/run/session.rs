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

use crate::procs::ladder::Ending;
use crate::procs::ladder::{Target, supervise};
use crate::run::stream::{self, Shown};

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

/// The stop request so far, by the name of its signal.
pub fn stop_requested() -> Option<String> {
    (signals_received() > 0).then(|| last_signal_name().to_string())
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
    /// Whose session it is: its stream is read as that agent's.
    pub agent: crate::agent::Agent,
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
    _scratch: Option<tempfile::TempDir>,
}

pub fn spawn(spec: Launch) -> Result<Running> {
    let t0 = Instant::now();
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    cmd.env(crate::handoff::env::SESSION_TOKEN, &spec.token);
    let mut print = spec.print;
    if let Some(p) = &print {
        let prompt = File::open(&p.prompt)
            .with_context(|| format!("cannot open the prompt {}", p.prompt.display()))?;
        cmd.stdin(prompt)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
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
    let reader = match (print.as_mut(), stream_file) {
        (Some(p), Some(file)) => {
            let out = child.stdout.take().expect("stdout is piped");
            let show = std::mem::replace(&mut p.show, Box::new(|_| {}));
            let agent = spec.agent;
            Some(std::thread::spawn(move || pump(out, file, show, agent)))
        }
        _ => None,
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
        _scratch: spec.scratch,
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
        let (status, ended) = supervise(&mut self.child, target, self.deadline, &signals_received)?;
        let ending = ended;
        let status = Some(status);
        let leftovers = end_leftovers(&self.token, self.pid);
        let stream = match self.reader {
            Some(h) => h.join().unwrap_or_default(),
            None => stream::Session::default(),
        };
        Ok(Finished {
            status,
            ending,
            pid: self.pid,
            stream,
            duration: self.t0.elapsed(),
            leftovers,
        })
    }
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

/// End what the session left running. Returns how many processes it ended;
/// the hook's own print-mode watcher for this session is not one of them (it
/// sees the session gone and exits by itself within moments).
pub fn end_leftovers(token: &str, session_pid: u32) -> Vec<(u32, String)> {
    let Some((sys, found)) = descendants(token) else {
        return Vec::new();
    };
    let mut procs = crate::procs::tree::ProcReader::new();
    let (watchers, victims): (Vec<u32>, Vec<u32>) = found
        .into_iter()
        .partition(|&pid| procs.get(pid).is_some_and(|p| is_own_hook(&p, session_pid)));
    // Generous: on a loaded machine the watcher may take a moment to look.
    let until = Instant::now() + Duration::from_secs(3);
    let mut left = watchers;
    while !left.is_empty() && Instant::now() < until {
        reap();
        left.retain(|&pid| procs.is_running(pid));
        std::thread::sleep(Duration::from_millis(10));
    }
    let exact: Vec<(u32, u64)> = left
        .iter()
        .chain(&victims)
        .filter_map(|&p| procs.get_basic(p).map(|i| (p, i.start_time)))
        .collect();
    let signalled = end_exactly(&exact);
    reap();
    // Only what was still there to be ended counts (a process on its way
    // out when it was found is no leftover).
    victims
        .into_iter()
        .filter(|pid| signalled.contains(pid))
        .map(|pid| {
            let name = sys
                .process(sysinfo::Pid::from_u32(pid))
                .map(|p| p.name().to_string_lossy().into_owned())
                .unwrap_or_default();
            (pid, name)
        })
        .collect()
}

/// The loop's live descendants (with the subreaper, every orphan is one;
/// elsewhere, what carries the run's marker), with the table they were
/// found in. `None` when there are none, or the table cannot be read.
fn descendants(token: &str) -> Option<(System, Vec<u32>)> {
    let me = std::process::id();
    let mut sys = System::new().ok()?;
    let linux = cfg!(target_os = "linux");
    let kind = if linux {
        ProcessRefreshKind::nothing()
    } else {
        ProcessRefreshKind::nothing().with_environ(UpdateKind::Always)
    };
    sys.refresh_processes_specifics(ProcessesToUpdate::All, true, kind);
    let marker = format!("{}={token}", crate::handoff::env::SESSION_TOKEN);
    let is_ours = |p: &sysinfo::Process| {
        let mut cur = p.parent();
        for _ in 0..=64 {
            let Some(pp) = cur else { break };
            if pp.as_u32() == me {
                return true;
            }
            cur = sys.process(pp).and_then(|x| x.parent());
        }
        !linux && p.environ().iter().any(|e| e == marker.as_str())
    };
    let found: Vec<u32> = sys
        .processes()
        .values()
        .filter(|p| p.pid().as_u32() != me && p.thread_kind().is_none() && is_ours(p))
        .filter(|p| !matches!(p.status(), sysinfo::ProcessStatus::Zombie))
        .map(|p| p.pid().as_u32())
        .collect();
    (!found.is_empty()).then_some((sys, found))
}

/// ralph's own hook processes of this session, which end by themselves: the
/// Stop hook (`hook stop`, orphaned when claude exits first) and its watcher
/// (`hook stop-watch --pid <session>`). By this very binary, or by one whose
/// executable can no longer be read (on its way out).
fn is_own_hook(p: &crate::procs::tree::ProcInfo, session_pid: u32) -> bool {
    if p.exe.is_some() && p.exe != std::env::current_exe().ok() {
        return false;
    }
    // Exiting (its memory already released, not yet a zombie), a process has
    // no command line left to read: by its name, it is one of ours on its
    // way out, waited for like the others (and ended if it lingers).
    if p.exe.is_none() && p.cmd.is_empty() {
        let ours = std::env::current_exe().ok().and_then(|e| {
            e.file_name()
                .map(|n| n.to_string_lossy().chars().take(15).collect::<String>())
        });
        return ours.is_some_and(|n| n == p.name);
    }
    let pid = session_pid.to_string();
    let cmd: Vec<&str> = p.cmd.iter().map(String::as_str).collect();
    cmd.ends_with(&["hook", "stop"])
        || cmd
            .windows(4)
            .any(|w| w == ["hook", "stop-watch", "--pid", pid.as_str()])
}

/// End every process that carries a run's session token: what a killed loop
/// left running (its session's Bash commands run in sessions of their own and
/// outlive claude). Identified by that marker alone, never by name; the dead
/// loop's session itself is checked by pid and start time.
pub fn end_run_leftovers(secret: &str, session: Option<(u32, u64)>) -> usize {
    // A record without a secret (an older ralph's) marks nothing.
    let prefix = crate::handoff::run_token_prefix(secret);
    let mut marked = if secret.len() >= 32 {
        carrying(|kv| kv.starts_with(prefix.as_bytes()))
    } else {
        Vec::new()
    };
    let mut procs = crate::procs::tree::ProcReader::new();
    if let Some((pid, start)) = session
        && pid > 1
        && procs.is_alive(pid, start)
        && !marked.iter().any(|&(p, _)| p == pid)
    {
        marked.push((pid, start));
    }
    end_exactly(&marked).len()
}

/// End every process whose start environment holds exactly
/// `RALPH_SESSION_TOKEN=<token>` (the gate's commands and what they left).
/// Returns how many were still there to be ended.
pub fn end_marked(token: &str) -> usize {
    let marker = format!("{}={token}", crate::handoff::env::SESSION_TOKEN);
    end_exactly(&carrying(|kv| kv == marker.as_bytes())).len()
}

/// Every other process (pid and start time) with an entry of its start
/// environment that `wanted` takes: found by marker alone, never by name.
fn carrying(wanted: impl Fn(&[u8]) -> bool) -> Vec<(u32, u64)> {
    let me = std::process::id();
    let Ok(mut sys) = System::new() else {
        return Vec::new();
    };
    sys.refresh_processes_specifics(ProcessesToUpdate::All, true, ProcessRefreshKind::nothing());
    let mut procs = crate::procs::tree::ProcReader::new();
    sys.processes()
        .values()
        .filter(|p| p.pid().as_u32() != me && p.thread_kind().is_none())
        .filter_map(|p| {
            let (start, env) = procs.environ(p.pid().as_u32())?;
            env.iter()
                .any(|kv| wanted(kv.as_encoded_bytes()))
                .then_some((p.pid().as_u32(), start))
        })
        .collect()
}

/// End these processes through the ladder, each signalled only while its
/// pid still has the start time it had when it was found.
/// Returns the pids that were still there to be signalled.
fn end_exactly(procs_found: &[(u32, u64)]) -> Vec<u32> {
    let mut procs = crate::procs::tree::ProcReader::new();
    let alive: Vec<u32> = procs_found
        .iter()
        .filter(|&&(p, st)| procs.is_alive(p, st))
        .map(|&(p, _)| p)
        .collect();
    let targets: Vec<Target> = procs_found.iter().map(|&(p, _)| Target::Pid(p)).collect();
    crate::procs::ladder::end_all(
        &targets,
        |t| {
            let Target::Pid(pid) = *t else { return false };
            procs_found
                .iter()
                .any(|&(p, st)| p == pid && procs.is_alive(p, st))
        },
        // Only these (re-parented to the loop, they are its children): a
        // wait for any child would take one that someone else waits for.
        || reap_these(procs_found),
    );
    reap_these(procs_found);
    alive
}

fn reap_these(procs_found: &[(u32, u64)]) {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    for &(p, _) in procs_found {
        let _ = waitpid(Pid::from_raw(p as i32), Some(WaitPidFlag::WNOHANG));
    }
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
