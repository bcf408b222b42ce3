//! `ralph worktree merge NAME`: a worktree loop's work merged into the
//! checkout, with the checkout's own `.ralph/` (spec, prompt, config,
//! progress) left as it was: the worktree's copies of those files are its
//! loop's, and merging them would replace the checkout's spec with the
//! worktree's (and conflict on the second merge).
//!
//! The merge is made in git's object store (`git merge-tree`), its `.ralph`
//! replaced by the checkout's, committed with both parents, and the checkout
//! then moved to it: nothing of `.ralph/` is written, so ralph's untracked
//! files there (runs, sentinels) are never in the way. Only when the work
//! itself conflicts is the merge done in the checkout, for the user to
//! resolve.

use std::path::Path;

use anyhow::{Result, bail};

use crate::git::{Git, Merged};
use crate::run::worktree;

/// Merge branch `ralph/NAME` into the checkout at `into`. Stopped on
/// conflicts outside `.ralph/`, the merge is left in progress (the
/// checkout's `.ralph/` already kept) for the user to resolve.
pub fn merge(into: &Path, main: &Path, name: &str) -> Result<Merged> {
    let g = crate::git::at(into);
    let branch = worktree::branch(name);
    refuse_unready(&g, into, main, name)?;
    if g.ok(&["merge-base", "--is-ancestor"], &[&branch, "HEAD"]) {
        return Ok(Merged::UpToDate);
    }
    let message = format!("Merge branch '{branch}'");
    let merged = crate::git::merge_into_head(&g, &branch, &message, &[".ralph"], |tree| {
        with_own_ralph(&g, tree)
    })?;
    match merged {
        Merged::Conflicts(_) => merge_in_checkout(&g, &branch),
        done => Ok(done),
    }
}

/// Refused: the worktree's loop still running, no such branch, or a merge
/// already in progress.
fn refuse_unready(g: &Git, into: &Path, main: &Path, name: &str) -> Result<()> {
    let branch = worktree::branch(name);
    let wt = worktree::path_for(main, name);
    if let Some(l) = crate::run::lock::running(&crate::trust::store::lock_file(&wt)) {
        bail!(
            "the loop in worktree {name} is still running (pid {}): merge once it has finished",
            l.pid
        );
    }
    if !g.ok(
        &["rev-parse", "--verify", "--quiet"],
        &[&format!("refs/heads/{branch}")],
    ) {
        bail!("there is no branch {branch} (no worktree loop {name})");
    }
    if g.ok(&["rev-parse", "--verify", "--quiet", "MERGE_HEAD"], &[]) {
        bail!(
            "a merge is already in progress in {}: finish it (`git commit`) or abort it (`git merge --abort`) first",
            into.display()
        );
    }
    // Uncommitted changes elsewhere (br's own files, written from every
    // worktree) are no obstacle: git refuses by itself to move over any the
    // merge would touch.
    Ok(())
}

/// `tree` with its `.ralph` replaced by HEAD's (or without one, where HEAD
/// has none).
fn with_own_ralph(g: &Git, tree: &str) -> Result<String> {
    let mut entries: Vec<u8> = g
        .bytes(&["ls-tree", "-z", tree])
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|e| !e.is_empty() && !e.ends_with(b"\t.ralph"))
        .flat_map(|e| e.iter().copied().chain([0]))
        .collect();
    if let Some(own) = g.bytes(&["ls-tree", "-z", "HEAD", "--", ".ralph"]) {
        entries.extend(own);
    }
    g.run_with_input(&["mktree", "-z"], &entries)
}

/// The merge in the checkout, stopped on the work's conflicts: `.ralph/` is
/// put back to the checkout's, the rest left for the user.
fn merge_in_checkout(g: &Git, branch: &str) -> Result<Merged> {
    let (_, out, said) = g.attempt(&["merge", "--no-ff", "--no-commit", "--quiet"], &[branch])?;
    if !g.ok(&["rev-parse", "--verify", "--quiet", "MERGE_HEAD"], &[]) {
        bail!("git merge {branch} failed: {}{said}", out.trim());
    }
    let mut paths = g.paths(&[
        "diff",
        "--name-only",
        "-z",
        "--cached",
        "HEAD",
        "--",
        ".ralph",
    ]);
    paths.extend(g.paths(&[
        "diff",
        "--name-only",
        "-z",
        "--diff-filter=U",
        "--",
        ".ralph",
    ]));
    paths.sort();
    paths.dedup();
    for p in &paths {
        if g.ok(&["cat-file", "-e"], &[&format!("HEAD:{p}")]) {
            g.run(&["--literal-pathspecs", "checkout", "HEAD", "--"], &[p])?;
        } else {
            g.run(
                &["--literal-pathspecs", "rm", "--quiet", "--force", "--"],
                &[p],
            )?;
        }
    }
    Ok(Merged::Conflicts(g.paths(&[
        "diff",
        "--name-only",
        "-z",
        "--diff-filter=U",
    ])))
}
