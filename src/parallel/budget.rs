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
}

/// The budget file of the run with the lock of `root` (the integration
/// checkout).
pub fn path_for(root: &Path, run_id: &str) -> PathBuf {
    crate::trust::store::lock_file(root).with_extension(format!("{run_id}.budget.json"))
}

/// Beside the budget: the repository's shared git setup as the run began
/// (`sandbox::gitguard::Baseline`), which confined workers put back to.
pub fn baseline_path(budget: &Path) -> PathBuf {
    budget.with_extension("gitguard.json")
}

/// Start a run's budget at what it had spent (a resumed run's count).
pub fn start(path: &Path, sessions: u32, cost_usd: f64) -> Result<()> {
    if let Some(dir) = path.parent() {
        crate::trust::store::private_dir(dir)?;
    }
    with(path, |s| {
        *s = Spent {
            sessions,
            cost_usd,
            ..Spent::default()
        };
    })
}

/// What the run had spent before this session, which is claimed at once
/// (no two workers can both take the last session), and whether `agent` is
/// known to be at its usage limit.
pub fn claim_session(path: &Path, agent: &str, now_epoch: u64) -> Result<Shared> {
    with(path, |s| {
        let before = shared(s, agent, now_epoch);
        s.sessions += 1;
        before
    })
}

/// A worker met `agent`'s usage limit: the others wait for it too.
pub fn limited(path: &Path, agent: &str, until: u64) -> Result<()> {
    with(path, |s| {
        let t = s.limited.entry(agent.to_string()).or_default();
        *t = (*t).max(until);
    })
}

/// A claimed session that did not start after all (the engine refused it).
pub fn unclaim_session(path: &Path) -> Result<()> {
    with(path, |s| s.sessions = s.sessions.saturating_sub(1))
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
        .take(4096)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut spent: Spent = if text.trim().is_empty() {
        Spent::default()
    } else {
        serde_json::from_str(&text).with_context(|| format!("{} is not valid", path.display()))?
    };
    let out = f(&mut spent);
    let bytes = serde_json::to_vec(&spent)?;
    file.rewind()?;
    file.set_len(0)?;
    file.write_all(&bytes)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_claimed_one_at_a_time_and_costs_add_up() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.json");
        start(&p, 2, 0.5).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let p = p.clone();
                std::thread::spawn(move || {
                    let seen = claim_session(&p, "claude", 5).unwrap();
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
        let now = read(&p).unwrap();
        assert_eq!(now.sessions, 10);
        assert!((now.cost_usd - 2.5).abs() < 1e-9);
        unclaim_session(&p).unwrap();
        assert_eq!(read(&p).unwrap().sessions, 9);
        limited(&p, "claude", 100).unwrap();
        limited(&p, "claude", 50).unwrap();
        let seen = claim_session(&p, "claude", 7).unwrap();
        assert_eq!(
            (seen.limited_until, seen.now_epoch),
            (100, 7),
            "the latest reset"
        );
        assert_eq!(claim_session(&p, "codex", 7).unwrap().limited_until, 0);
    }
}
