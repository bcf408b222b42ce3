//! How a loop was started: its command line and folder, kept in ralph's
//! private state folder (beside its lock, out of the project's reach), so
//! that `ralph loop --resume` and `ralph watch` resume a run with exactly
//! the options it had.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invocation {
    pub run_id: String,
    /// `ralph`'s arguments, the program aside.
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The command line of each `--resume` since, in order: what it gave
    /// overrides what came before it.
    #[serde(default)]
    pub resumed: Vec<Vec<String>>,
    /// The issues a run may close, as its steps named them when it began
    /// (`Saved::issues_at_start`, `Saved::pr_issues_at_start`): kept here,
    /// where no session writes, and put back over the run folder's copy
    /// on `--resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issues_at_start: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_issues_at_start: Option<Vec<u64>>,
    /// The pull request the newest run with `--pr` opened or updated,
    /// carried from run to run: what `status` shows without reading every
    /// past run's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<crate::history::records::PullShown>,
}

/// Keep `pr` as the project's pull request, in the record of the run that
/// opened or updated it.
pub fn keep_pull_request(
    root: &Path,
    run_id: &str,
    pr: &crate::history::records::PullShown,
) -> Result<()> {
    let Some(mut inv) = load(root).filter(|i| i.run_id == run_id) else {
        return Ok(());
    };
    inv.pull_request = Some(pr.clone());
    save(root, &inv)
}

/// Keep the issues run `run_id` may close in its record (nothing when the
/// record is another run's).
pub fn keep_closable(
    root: &Path,
    run_id: &str,
    issues: Option<Vec<String>>,
    pr_issues: Option<Vec<u64>>,
) -> Result<()> {
    let Some(mut inv) = load(root).filter(|i| i.run_id == run_id) else {
        return Ok(());
    };
    inv.issues_at_start = issues;
    inv.pr_issues_at_start = pr_issues;
    save(root, &inv)
}

/// The issues run `run_id` may close, from its record: `(None, None)` for a
/// run without one, which then closes none.
pub fn closable(root: &Path, run_id: &str) -> (Option<Vec<String>>, Option<Vec<u64>>) {
    load(root)
        .filter(|i| i.run_id == run_id)
        .map_or((None, None), |i| (i.issues_at_start, i.pr_issues_at_start))
}

/// Beside the lock of `root`.
fn path(root: &Path) -> PathBuf {
    crate::trust::store::lock_file(root).with_extension("invocation.json")
}

pub fn save(root: &Path, inv: &Invocation) -> Result<()> {
    let p = path(root);
    if let Some(dir) = p.parent() {
        crate::trust::store::private_dir(dir)?;
    }
    crate::fsutil::atomic_write(&p, serde_json::to_string(inv)?.as_bytes(), 0o600)
}

pub fn load(root: &Path) -> Option<Invocation> {
    let text = crate::fsutil::read_regular_capped(&path(root), 256 * 1024).ok()??;
    serde_json::from_str(&text).ok()
}

/// Options dropped when the same command line resumes the run: those that
/// only make a worktree (or are the resume itself), and the limits a user
/// may have raised while it ran, which come back with the run's state (given
/// again, they would undo the raise).
const MAKE_ONLY: [&str; 7] = [
    "--base",
    "--spec",
    "--resume",
    "--max-iterations",
    "--max-cost",
    "--max-time",
    "--max-tokens",
];

/// The command line that resumes the run `args` started: the same, without
/// what only made its worktree, with `--resume`. `None` for an interactive
/// loop, which needs a terminal of its own.
pub fn resume_args(args: &[String]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut it = args.iter();
    let mut after_dashes = false;
    while let Some(a) = it.next() {
        if after_dashes {
            out.push(a.clone());
            continue;
        }
        if a == "--" {
            after_dashes = true;
            out.push(a.clone());
            continue;
        }
        if a == "--interactive" {
            return None;
        }
        let name = a.split('=').next().unwrap_or(a);
        // `-C DIR` took effect before the folder was kept.
        if a == "-C" {
            it.next();
            continue;
        }
        if a.starts_with("-C") {
            continue;
        }
        if MAKE_ONLY.contains(&name) {
            if !a.contains('=') && name != "--resume" {
                it.next();
            }
            continue;
        }
        out.push(a.clone());
    }
    let at = out.iter().position(|a| a == "--").unwrap_or(out.len());
    out.insert(at, "--resume".into());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_same_command_line_resumes_without_what_made_the_worktree() {
        assert_eq!(
            resume_args(&v(
                "loop --worktree a --base main --spec=s.md --gate make --max-iterations 9"
            )),
            Some(v("loop --worktree a --gate make --resume"))
        );
        // The limits come back with the run, raised or not.
        assert_eq!(
            resume_args(&v(
                "loop --max-cost 2 --max-time=1h --max-tokens 9 --model m"
            )),
            Some(v("loop --model m --resume"))
        );
        assert_eq!(
            resume_args(&v("-C x loop --resume -- --model opus --spec y")),
            Some(v("loop --resume -- --model opus --spec y"))
        );
        assert_eq!(resume_args(&v("loop --interactive")), None);
        assert_eq!(
            resume_args(&v("loop -- --interactive")),
            Some(v("loop --resume -- --interactive"))
        );
    }
}
