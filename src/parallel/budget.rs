//! The budget every worker of a parallel run spends from: sessions started
//! and their cost, one small file in ralph's private state folder (out of
//! any session's reach), read and written under a lock.

use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::run::engine::Shared;

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Spent {
    sessions: u32,
    cost_usd: f64,
    /// By agent: until when (seconds since the epoch) a worker found it
    /// at its usage limit.
    #[serde(default)]
    limited: std::collections::BTreeMap<String, u64>,
    /// When the run's sessions (and the project's before it) started in
    /// the last hour, seconds since the epoch: `--max-sessions-per-hour`
    /// counts every worker's.
    #[serde(default)]
    starts: Vec<u64>,
    /// By worker (`w1`...): the sessions it started, until the run takes
    /// the count as it ends.
    #[serde(default)]
    by_worker: std::collections::BTreeMap<String, u32>,
}

/// The most the file may hold: far more than any run's starts of an hour
/// (about 11 bytes each), and a bound on what is read.
const CAP: u64 = 1 << 20;

/// What `--max-sessions-per-hour` looks back over.
const WINDOW_S: u64 = 3600;

/// The budget file of the run with the lock of `root` (the integration
/// checkout).
pub fn path_for(root: &Path, run_id: &str) -> PathBuf {
    crate::trust::store::lock_file(root).with_extension(format!("{run_id}.budget.json"))
}

/// Beside the budget: the gate's baseline, taken once by the run before
/// its first worker, which each worker's gate is judged against (out of
/// the project, where a session writes).
fn gate_baseline_path(budget: &Path) -> PathBuf {
    budget.with_extension("gate-baseline.json")
}

/// The run's gate baseline kept beside its budget `budget`.
pub fn keep_gate_baseline(budget: &Path, v: &crate::work::gate::Verdict) -> Result<()> {
    crate::fsutil::atomic_write(
        &gate_baseline_path(budget),
        serde_json::to_string(v)?.as_bytes(),
        0o600,
    )
}

/// The run's gate baseline, as kept beside its budget `budget`, if any.
pub fn gate_baseline(budget: &Path) -> Option<crate::work::gate::Verdict> {
    crate::fsutil::read_head(&gate_baseline_path(budget), 64 << 20)
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
}

/// Beside the budget: the repository's shared git setup as the run began
/// (`sandbox::gitguard::Baseline`), which confined workers put back to.
pub fn baseline_path(budget: &Path) -> PathBuf {
    budget.with_extension("gitguard.json")
}

/// Start a run's budget at what it had spent (a resumed run's count), and
/// the project's session starts of the last hour.
pub fn start(path: &Path, (sessions, cost_usd): (u32, f64), starts: Vec<u64>) -> Result<()> {
    if let Some(dir) = path.parent() {
        crate::trust::store::private_dir(dir)?;
    }
    with(path, |s| {
        *s = Spent {
            sessions,
            cost_usd,
            starts,
            ..Spent::default()
        };
    })
}

/// When the run's sessions started since `since` (every worker's).
pub fn starts_since(path: &Path, since: u64) -> Result<Vec<u64>> {
    with(path, |s| {
        s.starts.retain(|&t| t >= since);
        s.starts.clone()
    })
}

/// What the run had spent before this session, which is claimed at once
/// (no two workers can both take the last session), and whether `agent` is
/// known to be at its usage limit.
/// `worker` is who claims it (counted for `sessions_of`).
pub fn claim_session(path: &Path, agent: &str, worker: &str, now_epoch: u64) -> Result<Shared> {
    with(path, |s| {
        let before = shared(s, agent, now_epoch);
        s.sessions += 1;
        s.starts.push(now_epoch);
        *s.by_worker.entry(worker.to_string()).or_default() += 1;
        before
    })
}

/// The sessions `worker` started, taken off the file (its run is over).
pub fn sessions_of(path: &Path, worker: &str) -> Result<u32> {
    with(path, |s| s.by_worker.remove(worker).unwrap_or(0))
}

/// A worker met `agent`'s usage limit: the others wait for it too.
pub fn limited(path: &Path, agent: &str, until: u64) -> Result<()> {
    with(path, |s| {
        let t = s.limited.entry(agent.to_string()).or_default();
        *t = (*t).max(until);
    })
}

/// A claimed session that did not start after all (the engine refused it).
pub fn unclaim_session(path: &Path, worker: &str) -> Result<()> {
    with(path, |s| {
        s.sessions = s.sessions.saturating_sub(1);
        s.starts.pop();
        if let Some(n) = s.by_worker.get_mut(worker) {
            *n = n.saturating_sub(1);
        }
    })
}

/// A session's (or review's) cost, added once its record is written.
pub fn add_cost(path: &Path, usd: f64) -> Result<()> {
    with(path, |s| s.cost_usd += usd.max(0.0))
}

/// What the run has spent.
pub fn read(path: &Path) -> Result<Shared> {
    with(path, |s| shared(s, "", 0))
}

fn shared(s: &Spent, agent: &str, now_epoch: u64) -> Shared {
    Shared {
        sessions: s.sessions,
        cost_usd: s.cost_usd,
        limited_until: s.limited.get(agent).copied().unwrap_or(0),
        now_epoch,
    }
}

fn with<T>(path: &Path, f: impl FnOnce(&mut Spent) -> T) -> Result<T> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("cannot open the run's budget {}", path.display()))?;
    let mut file = Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .with_context(|| format!("cannot lock {}", path.display()))?;
    let mut text = String::new();
    (&*file)
        .take(CAP + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if text.len() as u64 > CAP {
        anyhow::bail!(
            "the run's budget {} is over {} KiB: not read (it is ralph's own file; remove it to start the run's count afresh)",
            path.display(),
            CAP >> 10
        );
    }
    let mut spent: Spent = if text.trim().is_empty() {
        Spent::default()
    } else {
        serde_json::from_str(&text).with_context(|| format!("{} is not valid", path.display()))?
    };
    let out = f(&mut spent);
    in_window(&mut spent.starts, crate::timefmt::now_epoch());
    let bytes = serde_json::to_vec(&spent)?;
    file.rewind()?;
    file.set_len(0)?;
    file.write_all(&bytes)?;
    Ok(out)
}

/// Only the starts `--max-sessions-per-hour` can still count: the file
/// stays small however long the run.
fn in_window(starts: &mut Vec<u64>, now_epoch: u64) {
    starts.retain(|&t| t + WINDOW_S > now_epoch);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> u64 {
        crate::timefmt::now_epoch()
    }

    #[test]
    fn sessions_are_claimed_one_at_a_time_and_costs_add_up() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.json");
        let t = now();
        start(&p, (2, 0.5), vec![t - 100]).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let p = p.clone();
                std::thread::spawn(move || {
                    let worker = if i % 2 == 0 { "w1" } else { "w2" };
                    let seen = claim_session(&p, "claude", worker, t).unwrap();
                    add_cost(&p, 0.25).unwrap();
                    seen.sessions
                })
            })
            .collect();
        let mut seen: Vec<u32> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        seen.sort_unstable();
        assert_eq!(
            seen,
            (2..10).collect::<Vec<_>>(),
            "each claim saw its own count"
        );
        let now_spent = read(&p).unwrap();
        assert_eq!(now_spent.sessions, 10);
        assert!((now_spent.cost_usd - 2.5).abs() < 1e-9);
        unclaim_session(&p, "w2").unwrap();
        assert_eq!(read(&p).unwrap().sessions, 9);
        limited(&p, "claude", 100).unwrap();
        limited(&p, "claude", 50).unwrap();
        let seen = claim_session(&p, "claude", "w3", 7).unwrap();
        assert_eq!(
            (seen.limited_until, seen.now_epoch),
            (100, 7),
            "the latest reset"
        );
        assert_eq!(
            claim_session(&p, "codex", "w3", t).unwrap().limited_until,
            0
        );
        let starts = starts_since(&p, t - 50).unwrap();
        assert_eq!(
            starts.len(),
            8,
            "each claim of this hour kept (one given back), the older ones gone: {starts:?}"
        );
        // Each worker's sessions, taken once.
        assert_eq!(sessions_of(&p, "w1").unwrap(), 4);
        assert_eq!(sessions_of(&p, "w2").unwrap(), 3, "one given back");
        assert_eq!(sessions_of(&p, "w1").unwrap(), 0, "taken already");
        assert_eq!(sessions_of(&p, "w9").unwrap(), 0);
    }

    #[test]
    fn the_file_holds_any_hours_starts_and_keeps_only_the_hours() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.json");
        let t = now();
        // Older than the hour, then 5,000 of the last hour: far past what
        // one 4 KiB read held.
        let mut starts: Vec<u64> = (0..100).map(|i| t - 7200 - i).collect();
        starts.extend((0..5000).map(|i| t - 3000 + i / 2));
        start(&p, (0, 0.0), starts).unwrap();
        let kept = starts_since(&p, 0).unwrap();
        assert_eq!(kept.len(), 5000, "the older starts dropped on writing");
        claim_session(&p, "claude", "w1", t).unwrap();
        assert_eq!(read(&p).unwrap().sessions, 1);
        assert_eq!(starts_since(&p, t - 3600).unwrap().len(), 5001);
    }

    #[test]
    fn a_file_over_the_cap_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.json");
        let big = format!(
            r#"{{"sessions":1,"cost_usd":0,"pad":"{}"}}"#,
            "x".repeat(CAP as usize)
        );
        std::fs::write(&p, big).unwrap();
        let e = format!("{:#}", read(&p).unwrap_err());
        assert!(
            e.contains(&p.display().to_string()) && e.contains("1024 KiB"),
            "{e}"
        );
    }
}
