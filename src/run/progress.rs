//! Did a session change anything? git HEAD, the working tree and the spec's
//! checkboxes, compared before and after: the no-progress breaker's input.

use std::path::Path;

use crate::run::engine::Progress;
use crate::work::spec;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checkpoint {
    pub head: Option<String>,
    /// `git status` of the working tree, ralph's own run files excluded.
    pub tree: Option<String>,
    pub boxes: Vec<bool>,
    pub done: usize,
    pub total: usize,
    /// The first open step (`Step::key`), if any.
    pub next: Option<String>,
    /// Every open step, in the spec's order.
    pub open: Vec<String>,
    /// Changes not committed (ralph's own files aside).
    pub dirty: bool,
    /// The paths of those changes.
    pub changed: Vec<String>,
}

/// What a session did, from the snapshots before and after it. A snapshot
/// without git's view (git failed) cannot tell: `Unknown`, never `Same`.
pub fn compare(before: &Checkpoint, after: &Checkpoint) -> Progress {
    if before.tree.is_none() || after.tree.is_none() {
        return Progress::Unknown;
    }
    if before.head == after.head && before.tree == after.tree && before.boxes == after.boxes {
        Progress::Same
    } else {
        Progress::Changed
    }
}

/// Is `root` inside a git work tree? The loop measures progress with git.
pub fn in_git(root: &Path) -> bool {
    crate::git::at(root)
        .bytes(&["rev-parse", "--is-inside-work-tree"])
        .is_some_and(|o| o.starts_with(b"true"))
}

pub fn take(root: &Path, spec_path: &Path) -> Checkpoint {
    let spec = crate::fsutil::read_optional(spec_path)
        .ok()
        .flatten()
        .map(|t| spec::parse(&t))
        .unwrap_or_default();
    // One git call gives both HEAD (`# branch.oid`) and the tree's changes.
    let out = crate::git::at(root).bytes(&[
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=all",
        "--",
        ".",
        ":(exclude).ralph/runs",
        ":(exclude).ralph/loop.lock",
        // The loop writes its lines there between sessions: notes are no
        // progress.
        ":(exclude).ralph/progress.md",
    ]);
    let mut dirty = false;
    let mut changed = Vec::new();
    let (head, tree) = match out {
        Some(o) => {
            let text = String::from_utf8_lossy(&o).into_owned();
            dirty = text
                .split('\0')
                .any(|l| !l.is_empty() && !l.starts_with('#'));
            let head = text
                .split('\0')
                .find_map(|l| l.strip_prefix("# branch.oid "))
                .filter(|h| *h != "(initial)")
                .map(String::from);
            changed = changed_paths(&text).map(String::from).collect();
            (head, Some(tree_fingerprint(root, &text)))
        }
        None => (None, None),
    };
    Checkpoint {
        head,
        tree,
        boxes: spec.steps.iter().map(|s| s.checked).collect(),
        done: spec.done(),
        total: spec.total(),
        next: spec.next_open().map(|s| s.key()),
        open: spec
            .steps
            .iter()
            .filter(|s| !s.checked)
            .map(|s| s.key())
            .collect(),
        dirty,
        changed,
    }
}

impl Checkpoint {
    /// The first open step but those the user skipped: the one sessions
    /// are counted on.
    pub fn next_except(&self, skipped: &[String]) -> Option<String> {
        self.open.iter().find(|k| !skipped.contains(k)).cloned()
    }

    /// Every open step is one the user skipped (and one is open): which.
    pub fn only_skipped(&self, skipped: &[String]) -> Option<String> {
        (!self.open.is_empty() && self.open.iter().all(|k| skipped.contains(k)))
            .then(|| self.open.join(", "))
    }

    /// Did the tree's uncommitted changes change since `before` (a file
    /// added, changed again, or committed)? What was already uncommitted
    /// and stayed as it was is not this session's.
    pub fn left_changes_since(&self, before: &Checkpoint) -> bool {
        self.dirty && self.tree != before.tree
    }
}

/// Did anything besides `.ralph/` change from `before` (a head) to now,
/// committed or not? `None` when git cannot tell.
pub fn work_changed(root: &Path, before: Option<&str>) -> Option<bool> {
    let g = crate::git::at(root);
    let committed = match before {
        Some(b) => g
            .run(
                &[
                    "diff",
                    "--name-only",
                    b,
                    "HEAD",
                    "--",
                    ".",
                    ":(exclude).ralph",
                ],
                &[],
            )
            .ok()?,
        None => return None,
    };
    // A committed change answers: the tree's own status is not asked (a
    // process less at each session's end that checked a box).
    if !committed.trim().is_empty() {
        return Some(true);
    }
    let open = g
        .run(
            &[
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--",
                ".",
                ":(exclude).ralph",
            ],
            &[],
        )
        .ok()?;
    Some(!open.trim().is_empty())
}

/// Changes to the files `globs` name since `base` (an object id), committed
/// or not, untracked ones too: `M tests/a.rs`, `D tests/b.rs`, `R100
/// tests/c.rs tests/d.rs`, `?? tests/new.rs`; and the commits since `base`
/// that touched them (`abc1234 subject`). `None` when git cannot tell.
pub fn protected_changes(
    root: &Path,
    base: &str,
    globs: &[String],
) -> Option<(Vec<String>, Vec<String>)> {
    let g = crate::git::at(root);
    let specs: Vec<String> = globs.iter().map(|p| format!(":(glob){p}")).collect();
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let lines = |t: String| -> Vec<String> {
        t.lines()
            .map(|l| l.replace('\t', " "))
            .filter(|l| !l.is_empty())
            .collect()
    };
    let mut changed = lines(
        g.run(&["diff", "--name-status", "-M", base, "--"], &specs)
            .ok()?,
    );
    let untracked = g
        .run(
            &["ls-files", "--others", "--exclude-standard", "--"],
            &specs,
        )
        .ok()?;
    changed.extend(untracked.lines().map(|l| format!("?? {l}")));
    let range = format!("{base}..HEAD");
    let commits = lines(
        g.run(&["log", "--format=%h %s", &range, "--"], &specs)
            .ok()?,
    );
    Some((changed, commits))
}

/// Commit what a session left uncommitted (ralph's own run files aside),
/// with the project's own hooks: `Err` with what git (or a hook) said when
/// it did not commit, the changes left as they were.
pub fn commit_leftovers(root: &Path, message: &str, keep_out: &[String]) -> Result<String, String> {
    let g = crate::git::at(root).with_hooks();
    // ralph's own files are in `.ralph/.gitignore`, which the loop keeps;
    // what was uncommitted before the run is the user's, never committed.
    let mut paths = vec![".".to_string()];
    paths.extend(keep_out.iter().map(|p| format!(":(exclude,literal){p}")));
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let add = g.attempt(&["add", "--all", "--"], &paths);
    match add {
        Ok((true, _, _)) => {}
        Ok((false, _, e)) => return Err(e),
        Err(e) => return Err(format!("{e:#}")),
    }
    if let Ok((true, _, _)) = g.attempt(&["diff", "--cached", "--quiet"], &[]) {
        return Err(
            "nothing of its own to commit: what it changed was uncommitted before the run".into(),
        );
    }
    match g.attempt(&["commit", "--quiet", "-m", message], &[]) {
        Ok((true, _, _)) => Ok(crate::git::at(root)
            .run(&["rev-parse", "--short", "HEAD"], &[])
            .unwrap_or_default()),
        Ok((false, out, e)) => Err(format!("{}{e}", out.trim())),
        Err(e) => Err(format!("{e:#}")),
    }
}

/// The changed files with their size and mtime: `git status` alone lists a
/// file that is modified (or untracked) again with the same line, and would
/// hide a session that keeps editing the same uncommitted file.
fn tree_fingerprint(root: &Path, status: &str) -> String {
    let mut out = String::new();
    for (e, path) in status_entries(status) {
        let stamp = std::fs::symlink_metadata(root.join(path))
            .ok()
            .map(|m| {
                let t = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .unwrap_or_default();
                format!("{} {}", m.len(), t.as_nanos())
            })
            .unwrap_or_default();
        out.push_str(&format!("{e}\t{stamp}\n"));
    }
    out
}

/// The paths `git status --porcelain=v2 -z` names as changed.
fn changed_paths(status: &str) -> impl Iterator<Item = &str> {
    status_entries(status).map(|(_, p)| p)
}

/// Each entry of `git status --porcelain=v2 -z`, with its path.
fn status_entries(status: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut entries = status
        .split('\0')
        .filter(|e| !e.is_empty() && !e.starts_with("# "));
    std::iter::from_fn(move || {
        let e = entries.next()?;
        // Fields before the path: `1` 8, `2` 9 (then the original path), `u` 10, `?`/`!` 1.
        let fields = match e.as_bytes()[0] {
            b'1' => 8,
            b'2' => 9,
            b'u' => 10,
            _ => 1,
        };
        let path = e.splitn(fields + 1, ' ').nth(fields).unwrap_or("");
        if e.starts_with('2') {
            entries.next();
        }
        Some((e, path))
    })
}

/// ralph's own files meant for git: the sessions' notes (ralph writes each
/// session's heading and how it went), the list of its run files git
/// ignores, and br's tracker as text (a parallel run's workers close their
/// tasks in the checkout's tracker, which no session there commits). A
/// finished run commits what it changed of them.
pub const OWN: [&str; 3] = [
    ".ralph/progress.md",
    ".ralph/.gitignore",
    ".beads/issues.jsonl",
];

/// Which of `paths` have uncommitted changes (untracked too); `None` when
/// git cannot tell.
pub fn uncommitted_among(root: &Path, paths: &[&str]) -> Option<Vec<String>> {
    let mut words = vec![
        "status",
        "--porcelain=v2",
        "-z",
        "--untracked-files=all",
        "--",
    ];
    words.extend(paths);
    let out = crate::git::at(root).bytes(&words)?;
    let text = String::from_utf8_lossy(&out).into_owned();
    Some(changed_paths(&text).map(String::from).collect())
}

/// Commit exactly `paths` (ralph's own files), whatever else is staged or
/// changed: the commit's short id.
pub fn commit_own(root: &Path, paths: &[String], message: &str) -> Result<String, String> {
    let g = crate::git::at(root);
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    for words in [
        &["add", "--"][..],
        &["commit", "--quiet", "-m", message, "--only", "--"][..],
    ] {
        let failed = match g.attempt(words, &paths) {
            Ok((true, _, _)) => continue,
            Ok((false, out, e)) => format!("{}{e}", out.trim()),
            Err(e) => format!("{e:#}"),
        };
        // Not committed: not left staged either.
        let _ = g.attempt(&["reset", "--quiet", "--"], &paths);
        return Err(failed);
    }
    Ok(g.run(&["rev-parse", "--short", "HEAD"], &[])
        .unwrap_or_default())
}

/// Commits between two HEADs (for the summary).
pub fn commits_between(root: &Path, from: Option<&str>, to: &str) -> Option<u64> {
    // A saved head is checked as it is read, and git gets the range after
    // `--end-of-options` whatever it holds.
    // The same HEAD (a session that committed nothing): none, without a git
    // process after every such session.
    if from == Some(to) {
        return Some(0);
    }
    // No HEAD at the start: every commit since is new.
    let range = from.map_or_else(|| to.to_string(), |f| format!("{f}..{to}"));
    // Between two commits' object ids the count never changes: a run's
    // end asks what its last session's footer asked (the same first head
    // and last head, in a one-session worker), answered once.
    let fixed = from.is_none_or(is_object_id) && is_object_id(to);
    let key = (root.to_path_buf(), range.clone());
    if fixed && let Some(n) = COUNTED.with_borrow(|c| c.get(&key).copied()) {
        return Some(n);
    }
    let n: u64 = crate::git::at(root)
        .run(&["rev-list", "--count"], &[&range])
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if fixed {
        COUNTED.with_borrow_mut(|c| c.insert(key, n));
    }
    Some(n)
}

thread_local! {
    /// `commits_between`'s answers, by folder and range of object ids.
    static COUNTED: std::cell::RefCell<std::collections::HashMap<(std::path::PathBuf, String), u64>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// A full object id (SHA-1 or SHA-256), which names one commit for good
/// (a branch name or `HEAD` moves).
fn is_object_id(rev: &str) -> bool {
    matches!(rev.len(), 40 | 64) && rev.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_head_counts_no_commits_without_asking_git() {
        // Not a repository: git could not count, so only the shortcut
        // answers.
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(commits_between(dir.path(), Some("abc"), "abc"), Some(0));
        assert_eq!(commits_between(dir.path(), Some("abc"), "def"), None);
    }

    #[test]
    fn a_range_of_object_ids_is_counted_by_git_once() {
        let dir = tempfile::tempdir().unwrap();
        let g = crate::git::at(dir.path());
        g.run(&["init", "-q"], &[]).unwrap();
        let commit = |m: &str| {
            g.commit_as_tester(&["-q", "--allow-empty", "-m", m]);
            g.run(&["rev-parse", "HEAD"], &[]).unwrap()
        };
        let (a, _, c) = (commit("a"), commit("b"), commit("c"));
        assert_eq!(commits_between(dir.path(), Some(&a), &c), Some(2));
        assert_eq!(commits_between(dir.path(), None, &c), Some(3));
        // With git's folder gone, only what was counted answers.
        std::fs::remove_dir_all(dir.path().join(".git")).unwrap();
        assert_eq!(commits_between(dir.path(), Some(&a), &c), Some(2));
        assert_eq!(commits_between(dir.path(), None, &c), Some(3));
        assert_eq!(commits_between(dir.path(), Some(&c), &a), None);
        // A name that moves is never taken from what was counted.
        assert!(!is_object_id("HEAD") && !is_object_id(&a[..12]) && is_object_id(&a));
    }

    #[test]
    fn the_step_counted_on_is_the_first_open_one_not_skipped() {
        let cp = Checkpoint {
            open: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        let skipped = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(cp.next_except(&[]), Some("a".into()));
        assert_eq!(cp.next_except(&skipped(&["a"])), Some("b".into()));
        assert_eq!(cp.next_except(&skipped(&["b", "a"])), None);
        assert_eq!(cp.only_skipped(&skipped(&["a"])), None);
        assert_eq!(
            cp.only_skipped(&skipped(&["b", "a", "z"])),
            Some("a, b".into())
        );
        let done = Checkpoint::default();
        assert_eq!(done.only_skipped(&skipped(&["a"])), None, "nothing open");
    }

    #[test]
    fn unknown_is_never_the_same() {
        let known = Checkpoint {
            head: Some("a".into()),
            tree: Some(String::new()),
            ..Default::default()
        };
        let unknown = Checkpoint::default();
        assert_eq!(compare(&known, &known), Progress::Same);
        assert_eq!(compare(&unknown, &unknown), Progress::Unknown);
        assert_eq!(compare(&known, &unknown), Progress::Unknown);
        let moved = Checkpoint {
            head: Some("b".into()),
            ..known.clone()
        };
        assert_eq!(compare(&known, &moved), Progress::Changed);
    }
}
