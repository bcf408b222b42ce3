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

/// Merge branch `ralph/NAME` into the checkout at `into`, with the steps
/// the branch's spec has checked that the checkout's has open (the
/// worktree worked a copy of it) checked in the checkout's spec too: the
/// merge and those steps (`**1** parser`). Stopped on conflicts outside
/// `.ralph/`, the merge is left in progress (the checkout's `.ralph/`
/// already kept) for the user to resolve. A branch that brings nothing
/// (its loop finished no step, committed nothing) is refused.
pub fn merge(into: &Path, main: &Path, name: &str) -> Result<(Merged, Vec<String>)> {
    let g = crate::git::at(into);
    let branch = worktree::branch(name);
    refuse_unready(&g, into, main, name)?;
    if g.ok(&["merge-base", "--is-ancestor"], &[&branch, "HEAD"]) {
        return Ok((Merged::UpToDate, Vec::new()));
    }
    let message = format!("Merge branch '{branch}'");
    let marked = std::cell::RefCell::new(Vec::new());
    let merged = crate::git::merge_into_head(&g, &branch, &message, &[".ralph"], |tree| {
        let (tree, done) = with_own_ralph(&g, tree, &branch)?;
        let head = g.run(&["rev-parse", "HEAD^{tree}"], &[])?;
        if tree == head {
            bail!(
                "{branch} has nothing to merge: what it changed is only its own .ralph/ (its loop finished no step); `ralph worktree remove {name}` removes it"
            );
        }
        *marked.borrow_mut() = done;
        Ok(tree)
    })?;
    match merged {
        Merged::Conflicts(_) => Ok((merge_in_checkout(&g, &branch)?, Vec::new())),
        done => Ok((done, marked.into_inner())),
    }
}

/// The checkout's spec with the steps `theirs` (the branch's spec) has
/// checked and it has open checked too, matched by key (`Step::key`); the
/// steps checked, as a person names them. `None`: nothing to check.
pub fn marked_done(ours: &str, theirs: &str) -> Option<(String, Vec<String>)> {
    use crate::work::spec;
    let done: Vec<String> = spec::parse(theirs)
        .steps
        .iter()
        .filter(|s| s.checked)
        .map(spec::Step::key)
        .collect();
    let mut text = ours.to_string();
    let mut named = Vec::new();
    for step in spec::parse(ours).steps {
        if !step.checked && done.contains(&step.key()) {
            text = spec::set_box(&text, step.line, true);
            named.push(step.name());
        }
    }
    (!named.is_empty()).then_some((text, named))
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
/// has none), HEAD's spec with the steps `branch`'s spec checked
/// (`marked_done`); those steps.
fn with_own_ralph(g: &Git, tree: &str, branch: &str) -> Result<(String, Vec<String>)> {
    let mut entries: Vec<u8> = g
        .bytes(&["ls-tree", "-z", tree])
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|e| !e.is_empty() && !e.ends_with(b"\t.ralph"))
        .flat_map(|e| e.iter().copied().chain([0]))
        .collect();
    let mut done = Vec::new();
    if let Some(own) = g.bytes(&["ls-tree", "-z", "HEAD", "--", ".ralph"]) {
        match own_ralph_marked(g, branch)? {
            Some((ralph, named)) => {
                entries.extend(format!("040000 tree {ralph}\t.ralph\0").bytes());
                done = named;
            }
            None => entries.extend(own),
        }
    }
    Ok((g.run_with_input(&["mktree", "-z"], &entries)?, done))
}

/// HEAD's `.ralph` tree with its spec marked as `branch`'s (`marked_done`),
/// when that checks any step; `None`: HEAD's as it is.
fn own_ralph_marked(g: &Git, branch: &str) -> Result<Option<(String, Vec<String>)>> {
    // Read only as big as ralph reads a spec (`READ_CAP`): the branch's is
    // its sessions' to write.
    let spec = |rev: &str| {
        let blob = format!("{rev}:.ralph/spec.md");
        let size: u64 = g
            .run(&["cat-file", "-s", &blob], &[])
            .ok()?
            .trim()
            .parse()
            .ok()?;
        (size <= crate::fsutil::READ_CAP)
            .then(|| g.bytes(&["show", &blob]))
            .flatten()
    };
    let (Some(ours), Some(theirs)) = (spec("HEAD"), spec(branch)) else {
        return Ok(None);
    };
    let (ours, theirs) = (
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs),
    );
    let Some((text, named)) = marked_done(&ours, &theirs) else {
        return Ok(None);
    };
    let blob = g.run_with_input(&["hash-object", "-w", "--stdin"], text.as_bytes())?;
    let entries: Vec<u8> = g
        .bytes(&["ls-tree", "-z", "HEAD:.ralph"])
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|e| !e.is_empty())
        .flat_map(|e| {
            let spec = e.ends_with(b"\tspec.md");
            let line = if spec {
                let mode = String::from_utf8_lossy(&e[..6]).into_owned();
                format!("{mode} blob {blob}\tspec.md").into_bytes()
            } else {
                e.to_vec()
            };
            line.into_iter().chain([0])
        })
        .collect();
    Ok(Some((
        g.run_with_input(&["mktree", "-z"], &entries)?,
        named,
    )))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The checkout's spec takes the boxes the worktree checked, by step
    /// (its key), wherever the step stands; a step the checkout does not
    /// have, or has checked, or the worktree left open, is left alone.
    #[test]
    fn the_steps_done_in_the_worktree_are_checked_in_the_checkouts_spec() {
        let ours = "# Spec\n\nIntro.\n\n- [ ] **1** Parser\n- [ ] **2** Printer [br-2]\n- [x] **3** Done before\n- [ ] **4** Later\n";
        let theirs = "# Spec\n\n- [x] **2** Printer [br-2]\n- [x] **1** Parser\n- [x] **3** Done before\n- [ ] **4** Later\n- [x] **5** Theirs only\n";
        let (text, named) = marked_done(ours, theirs).unwrap();
        assert_eq!(
            text,
            "# Spec\n\nIntro.\n\n- [x] **1** Parser\n- [x] **2** Printer [br-2]\n- [x] **3** Done before\n- [ ] **4** Later\n"
        );
        assert_eq!(named, ["**1** Parser", "**2** Printer [br-2]"]);
        assert_eq!(
            marked_done(ours, ours),
            None,
            "nothing new: nothing to write"
        );
    }
}
