//! Did a session change anything? git HEAD, the working tree and the spec's
//! checkboxes, compared before and after: the no-progress breaker's input.

use std::path::Path;
use std::process::Command;

use crate::spec;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    pub head: Option<String>,
    /// `git status` of the working tree, ralph's own run files excluded.
    pub tree: Option<String>,
    pub boxes: Vec<bool>,
    pub done: usize,
    pub total: usize,
}

pub fn take(root: &Path, spec_path: &Path) -> Snapshot {
    let spec = std::fs::read_to_string(spec_path)
        .map(|t| spec::parse(&t))
        .unwrap_or_default();
    // One git call gives both HEAD (`# branch.oid`) and the tree's changes.
    let out = Command::new("git")
        .args([
            "status",
            "--porcelain=v2",
            "--branch",
            "-z",
            "--untracked-files=all",
            "--",
            ".",
            ":(exclude).ralph/runs",
            ":(exclude).ralph/loop.lock",
        ])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success());
    let (head, tree) = match out {
        Some(o) => {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let head = text
                .split('\0')
                .find_map(|l| l.strip_prefix("# branch.oid "))
                .filter(|h| *h != "(initial)")
                .map(String::from);
            let tree: String = text
                .split('\0')
                .filter(|l| !l.starts_with("# "))
                .collect::<Vec<_>>()
                .join("\0");
            (head, Some(tree))
        }
        None => (None, None),
    };
    Snapshot {
        head,
        tree,
        boxes: spec.steps.iter().map(|s| s.checked).collect(),
        done: spec.done(),
        total: spec.total(),
    }
}

/// Commits between two HEADs (for the summary).
pub fn commits_between(root: &Path, from: &str, to: &str) -> Option<u64> {
    let out = Command::new("git")
        .args(["rev-list", "--count", &format!("{from}..{to}")])
        .current_dir(root)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}
