//! Ending what a session (or a gate command) left running: its
//! descendants, re-parented to the loop, or the processes that carry its
//! marker; each signalled only while it is still the process found.

use std::time::{Duration, Instant};

use nix::unistd::Pid;
#[cfg(not(target_os = "linux"))]
use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};

use crate::procs::ladder::Target;

/// End what the session left running. Returns how many processes it ended;
/// the hook's own print-mode watcher for this session is not one of them (it
/// sees the session gone and exits by itself within moments).
pub fn end_leftovers(token: &str, session_pid: u32) -> Vec<(u32, String)> {
    let found = descendants(token);
    if found.is_empty() {
        return Vec::new();
    }
    let mut procs = crate::procs::tree::ProcReader::new();
    let (watchers, victims): (Vec<&Found>, Vec<&Found>) = found.iter().partition(|f| {
        procs
            .get(f.pid)
            .is_some_and(|p| is_own_hook(&p, session_pid))
    });
    // Generous: on a loaded machine the watcher may take a moment to look.
    let until = Instant::now() + Duration::from_secs(3);
    let mut left: Vec<u32> = watchers.iter().map(|f| f.pid).collect();
    while !left.is_empty() && Instant::now() < until {
        reap();
        left.retain(|&pid| procs.is_running(pid));
        std::thread::sleep(Duration::from_millis(10));
    }
    let exact: Vec<(u32, u64)> = left
        .iter()
        .copied()
        .chain(victims.iter().map(|f| f.pid))
        .filter_map(|p| procs.get_basic(p).map(|i| (p, i.start_time)))
        .collect();
    let signalled = end_exactly(&exact);
    reap();
    // Only what was still there to be ended counts (a process on its way
    // out when it was found is no leftover).
    victims
        .into_iter()
        .filter(|f| signalled.contains(&f.pid))
        .map(|f| (f.pid, f.name.clone()))
        .collect()
}

/// A process of the table, as far as finding a loop's descendants needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    pid: u32,
    parent: Option<u32>,
    name: String,
    /// Exited, not yet reaped (or dead).
    zombie: bool,
}

/// The live processes below `me` in `table`: each one whose chain of
/// parents (at most 65 steps up) reaches `me`. Zombies are no leftovers.
fn below(table: &[Found], me: u32) -> Vec<&Found> {
    let parents: std::collections::HashMap<u32, Option<u32>> =
        table.iter().map(|p| (p.pid, p.parent)).collect();
    let is_below = |p: &Found| {
        let mut cur = p.parent;
        for _ in 0..=64 {
            let Some(pp) = cur else { break };
            if pp == me {
                return true;
            }
            cur = parents.get(&pp).copied().flatten();
        }
        false
    };
    table
        .iter()
        .filter(|p| p.pid != me && !p.zombie && is_below(p))
        .collect()
}

/// The loop's live descendants (with the subreaper, every orphan is one).
/// Read from `/proc/<pid>/stat` alone, one file per process: the whole
/// table through sysinfo (its status file, its threads, each of them) cost
/// most of the loop's own time between two sessions.
#[cfg(target_os = "linux")]
fn descendants(_token: &str) -> Vec<Found> {
    let table: Vec<Found> = pids()
        .into_iter()
        .filter_map(|pid| {
            let b = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
            let s = crate::procs::tree::parse_stat(&b)?;
            Some(Found {
                pid,
                parent: s.parent,
                name: s.name,
                zombie: matches!(s.state, b'Z' | b'X' | b'x'),
            })
        })
        .collect();
    below(&table, std::process::id())
        .into_iter()
        .cloned()
        .collect()
}

/// Elsewhere: the loop's live descendants, or what carries the run's
/// marker, through sysinfo.
#[cfg(not(target_os = "linux"))]
fn descendants(token: &str) -> Vec<Found> {
    let me = std::process::id();
    let Ok(mut sys) = System::new() else {
        return Vec::new();
    };
    let kind = ProcessRefreshKind::nothing().with_environ(UpdateKind::Always);
    sys.refresh_processes_specifics(ProcessesToUpdate::All, true, kind);
    let marker = format!("{}={token}", crate::handoff::env::SESSION_TOKEN);
    let table: Vec<Found> = sys
        .processes()
        .values()
        .filter(|p| p.thread_kind().is_none())
        .map(|p| Found {
            pid: p.pid().as_u32(),
            parent: p.parent().map(|x| x.as_u32()),
            name: p.name().to_string_lossy().into_owned(),
            zombie: matches!(p.status(), sysinfo::ProcessStatus::Zombie),
        })
        .collect();
    let mut found: Vec<Found> = below(&table, me).into_iter().cloned().collect();
    for p in &table {
        let marked = sys
            .process(sysinfo::Pid::from_u32(p.pid))
            .is_some_and(|x| x.environ().iter().any(|e| e == marker.as_str()));
        if marked && p.pid != me && !p.zombie && !found.iter().any(|f| f.pid == p.pid) {
            found.push(p.clone());
        }
    }
    found
}

/// Every process's pid: the numbered entries of /proc (threads are not
/// listed there).
#[cfg(target_os = "linux")]
fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Every process's pid, through sysinfo.
#[cfg(not(target_os = "linux"))]
fn pids() -> Vec<u32> {
    let Ok(mut sys) = System::new() else {
        return Vec::new();
    };
    sys.refresh_processes_specifics(ProcessesToUpdate::All, true, ProcessRefreshKind::nothing());
    sys.processes()
        .values()
        .filter(|p| p.thread_kind().is_none())
        .map(|p| p.pid().as_u32())
        .collect()
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
    let mut procs = crate::procs::tree::ProcReader::new();
    pids()
        .into_iter()
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let (start, env) = procs.environ(pid)?;
            env.iter()
                .any(|kv| wanted(kv.as_encoded_bytes()))
                .then_some((pid, start))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pid: u32, parent: u32, zombie: bool) -> Found {
        Found {
            pid,
            parent: (parent != 0).then_some(parent),
            name: format!("p{pid}"),
            zombie,
        }
    }

    fn pids_below(table: &[Found], me: u32) -> Vec<u32> {
        let mut v: Vec<u32> = below(table, me).iter().map(|f| f.pid).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn below_takes_children_and_their_children_not_zombies_nor_others() {
        let table = [
            row(1, 0, false),
            row(10, 1, false),  // the loop
            row(11, 10, false), // an orphan re-parented to it
            row(12, 11, false), // that orphan's child
            row(13, 10, true),  // exited, not reaped
            row(14, 13, false), // below a zombie: still below the loop
            row(20, 1, false),  // someone else's
            row(21, 20, false),
        ];
        assert_eq!(pids_below(&table, 10), vec![11, 12, 14]);
        assert_eq!(pids_below(&table, 20), vec![21]);
        assert_eq!(pids_below(&table, 21), Vec::<u32>::new());
    }

    #[test]
    fn below_ends_on_a_parent_missing_from_the_table_or_a_cycle() {
        // A parent gone between two reads, and a (corrupt) cycle: neither
        // is below the loop, and neither hangs the walk.
        let table = [
            row(10, 1, false),
            row(30, 99, false),
            row(40, 41, false),
            row(41, 40, false),
        ];
        assert_eq!(pids_below(&table, 10), Vec::<u32>::new());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn descendants_finds_a_live_child_and_not_a_reaped_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let found = descendants("unused");
        let ours = found.iter().find(|f| f.pid == child.id());
        assert_eq!(ours.map(|f| f.name.as_str()), Some("sleep"), "{found:?}");
        child.kill().expect("kill");
        child.wait().expect("wait");
        assert!(!descendants("unused").iter().any(|f| f.pid == child.id()));
    }
}
