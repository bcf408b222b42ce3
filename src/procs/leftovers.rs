//! Ending what a session (or a gate command) left running: its
//! descendants, re-parented to the loop, or the processes that carry its
//! marker; each signalled only while it is still the process found.

use std::time::{Duration, Instant};

use nix::unistd::Pid;
use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};

use crate::procs::ladder::Target;

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
