use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use super::Run;
use crate::exit::ExitStatus;
use crate::outln;
use crate::output::visible;
use crate::run::worktree;

/// The worktrees of this repository's loops (`ralph loop --worktree NAME`).
#[derive(Debug, Args)]
pub struct Worktree {
    #[command(subcommand)]
    cmd: WorktreeCmd,
}

#[derive(Debug, Subcommand)]
enum WorktreeCmd {
    /// List the repository's worktrees: path, branch, loop.
    List,
    /// Merge worktree loop NAME's work (branch ralph/NAME) into this checkout.
    ///
    /// A merge commit of everything the loop did, except its own .ralph/
    /// files (spec, prompt, config, progress): the checkout keeps its own, so
    /// merging two worktree loops one after the other neither replaces the
    /// checkout's spec nor conflicts on it. Refused while that loop runs, and
    /// by git where it would touch your uncommitted changes. On a conflict in the work itself the
    /// merge is left for you to resolve and commit (or `git merge --abort`).
    Merge { name: String },
    /// Remove worktree NAME and its branch ralph/NAME.
    ///
    /// Refused while its loop runs, with uncommitted changes, or when the
    /// branch has commits on no other branch, unless --force (the branch's
    /// last commit is then printed, to get it back with `git branch`).
    Remove {
        name: String,
        /// Remove it anyway.
        #[arg(long)]
        force: bool,
    },
}

impl Run for Worktree {
    fn run(&self) -> Result<ExitStatus> {
        let here = std::env::current_dir().context("cannot read the current folder")?;
        let main = worktree::main_root(&here)?;
        match &self.cmd {
            WorktreeCmd::List => list(&main),
            WorktreeCmd::Remove { name, force } => remove(&main, name, *force),
            WorktreeCmd::Merge { name } => merge(&here, &main, name),
        }
    }
}

fn list(main: &std::path::Path) -> Result<ExitStatus> {
    for w in worktree::list(main)? {
        let lock = crate::trust::store::lock_file(&w.path);
        let state = match crate::run::lock::running(&lock) {
            Some(l) => format!(
                "loop running, pid {}, iteration {}/{}",
                l.pid, l.iteration, l.max_iterations
            ),
            None if w.path.join(".ralph").is_dir() => "no loop running".into(),
            None => "no .ralph".into(),
        };
        let branch = w
            .branch
            .as_deref()
            .map(|b| b.trim_start_matches("refs/heads/").to_string())
            .unwrap_or_else(|| "(detached)".into());
        outln!(
            "{:<12} {:<20} {}  {}",
            visible(&w.name()),
            visible(&branch),
            w.path.display(),
            state
        );
    }
    Ok(ExitStatus::Success)
}

fn merge(here: &std::path::Path, main: &std::path::Path, name: &str) -> Result<ExitStatus> {
    use crate::git::Merged;
    crate::git::check_worktree_name(name).map_err(|e| anyhow::anyhow!(e))?;
    let into = crate::git::at(here).run(&["rev-parse", "--show-toplevel"], &[])?;
    let into = std::path::PathBuf::from(into);
    if into == worktree::path_for(main, name) {
        return Err(crate::exit::Stop::with(
            ExitStatus::Usage,
            format!(
                "this is worktree {name} itself: run `ralph worktree merge {name}` in the checkout it should go into"
            ),
        ));
    }
    let branch = worktree::branch(name);
    let (merged, marked) = crate::run::merge::merge(&into, main, name)
        .map_err(|e| crate::exit::Stop::with(ExitStatus::Failure, format!("{e:#}")))?;
    match merged {
        Merged::UpToDate => outln!(
            "{branch} is already merged into {}; nothing to do.",
            into.display()
        ),
        Merged::Committed { before, commit } => {
            let changed = crate::git::changed(&crate::git::at(&into), &before, &commit);
            let kept = if marked.is_empty() {
                "this checkout's .ralph/ is as it was".to_string()
            } else {
                format!(
                    "the steps done there are checked in this checkout's spec ({}), the rest of its .ralph/ is as it was",
                    visible(&marked.join(", "))
                )
            };
            outln!(
                "Merged {branch} into {} ({} changed); {kept} (the worktree's spec and records stay on {branch}).",
                into.display(),
                crate::output::counted(changed as u64, "file", "files")
            );
            outln!("`ralph worktree remove {name}` removes the worktree and its branch.");
        }
        Merged::Conflicts(paths) => {
            return Err(crate::exit::Stop::with(
                ExitStatus::Failure,
                format!(
                    "merging {branch} stopped on conflicts in {}: resolve them and `git commit` (this checkout's .ralph/ is already kept), or `git merge --abort`",
                    paths
                        .iter()
                        .map(|k| visible(k).into_owned())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(ExitStatus::Success)
}

fn remove(main: &std::path::Path, name: &str, force: bool) -> Result<ExitStatus> {
    crate::git::check_worktree_name(name).map_err(|e| anyhow::anyhow!(e))?;
    let path = worktree::path_for(main, name);
    let refuse = |msg: String| Err(crate::exit::Stop::with(ExitStatus::Failure, msg));
    if !worktree::list(main)?.into_iter().any(|w| w.path == path) {
        return refuse(format!("there is no worktree {name} ({})", path.display()));
    }
    let why = worktree::removal_blockers(main, &path, name)?;
    if !why.is_empty() && !force {
        return refuse(format!(
            "kept {}: {}; --force removes it anyway",
            path.display(),
            why.join("; ")
        ));
    }
    let head = worktree::remove(main, &path, name)?;
    let branch = worktree::branch(name);
    outln!("Removed worktree {} and branch {branch}", path.display());
    // The folder that holds a checkout's worktrees is ralph's (`path_for`
    // made it beside the checkout): once its last worktree is gone, it goes
    // too. remove_dir removes only an empty folder, so anything else put
    // there keeps it.
    if let Some(holder) = path.parent()
        && std::fs::remove_dir(holder).is_ok()
    {
        outln!("Removed {}, now empty", holder.display());
    }
    if let Some(h) = head.filter(|_| !why.is_empty()) {
        outln!("Its last commit was {h}: `git branch {branch} {h}` brings the branch back.");
    }
    Ok(ExitStatus::Success)
}
