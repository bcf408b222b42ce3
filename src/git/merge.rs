//! A branch merged into the checkout in git's object store (`git
//! merge-tree`), then committed with both parents and the checkout moved to
//! the commit: `ralph worktree merge` and a parallel run's merge queue both
//! merge this way, each with its own rule for ralph's files. One result,
//! one reader of merge-tree's output.

use anyhow::{Result, bail};

use super::Git;

/// What merging a branch into the checkout came to. Each caller reads what
/// it needs: `ralph worktree merge` the files changed (`changed`), the
/// merge queue the commit to undo back to when the gate fails.
#[derive(Debug, PartialEq, Eq)]
pub enum Merged {
    /// The branch has nothing the checkout lacks (`ralph worktree merge`
    /// asks first; the merge queue never does).
    UpToDate,
    /// A merge commit, the checkout moved to it from `before`.
    Committed { before: String, commit: String },
    /// The branch's work conflicts with the checkout's in these files (none
    /// of them ralph's own, which the caller merges itself).
    Conflicts(Vec<String>),
}

/// What `git merge-tree --write-tree --name-only -z` wrote: the merged tree
/// (a conflicted file in it with its markers), then the conflicted files up
/// to an empty field (informational messages follow it).
#[derive(Debug, PartialEq, Eq)]
struct MergeTree {
    tree: String,
    /// Conflicted files outside the `own` folders.
    conflicts: Vec<String>,
}

/// merge-tree's output read; conflicts in a folder of `own` (`.ralph`)
/// left out, as the caller writes those files itself.
fn read_merge_tree(out: &str, own: &[&str]) -> MergeTree {
    let mut fields = out.split('\0');
    let tree = fields.next().unwrap_or_default().to_string();
    let conflicts = fields
        .take_while(|f| !f.is_empty())
        .filter(|p| !own.iter().any(|o| p.starts_with(&format!("{o}/"))))
        .map(str::to_string)
        .collect();
    MergeTree { tree, conflicts }
}

/// Merge `branch` into the checkout of `g` as `message`: the conflicting
/// files when the work conflicts outside the `own` folders (nothing written
/// then); else the merged tree, as `tree_of` rewrites it (ralph's own
/// files), committed with both parents and the checkout moved to it
/// (`--ff-only`: git refuses rather than overwrite a change of yours the
/// merge touches). Never `UpToDate`: whether there is anything to merge is
/// the caller's to ask (the merge queue commits its step's box even when
/// the branch brings nothing else).
pub fn merge_into_head(
    g: &Git,
    branch: &str,
    message: &str,
    own: &[&str],
    tree_of: impl FnOnce(&str) -> Result<String>,
) -> Result<Merged> {
    let before = g.run(&["rev-parse", "HEAD"], &[])?;
    let (clean, out, said) = g.attempt(
        &["merge-tree", "--write-tree", "--name-only", "-z"],
        &["HEAD", branch],
    )?;
    let merged = read_merge_tree(&out, own);
    if merged.tree.len() < 40 {
        bail!("git merge-tree (git 2.38 or later) could not merge {branch}: {said}");
    }
    if !clean && !merged.conflicts.is_empty() {
        return Ok(Merged::Conflicts(merged.conflicts));
    }
    let tree = tree_of(&merged.tree)?;
    let commit = g.run(
        &[
            "commit-tree",
            &tree,
            "-p",
            "HEAD",
            "-p",
            branch,
            "-m",
            message,
        ],
        &[],
    )?;
    g.run(&["merge", "--ff-only", "--quiet"], &[&commit])?;
    Ok(Merged::Committed { before, commit })
}

/// How many files a merge changed, from `before` to `commit` (asked only
/// where it is said: the merge queue's merges are on a run's clock).
pub fn changed(g: &Git, before: &str, commit: &str) -> usize {
    g.paths(&["diff", "--name-only", "-z", before, commit])
        .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

    #[test]
    fn a_clean_merge_is_its_tree_alone() {
        let m = read_merge_tree(&format!("{TREE}\0"), &[".ralph"]);
        assert_eq!(m.tree, TREE);
        assert!(m.conflicts.is_empty());
    }

    #[test]
    fn conflicts_end_at_the_empty_field_and_leave_out_ralphs_own_folders() {
        let out = format!(
            "{TREE}\0src/a.rs\0.ralph/spec.md\0.beads/issues.jsonl\0.ralphish/x\0\0\
             1\0src/a.rs\0Auto-merging\0Auto-merging src/a.rs\n\0"
        );
        let m = read_merge_tree(&out, &[".ralph", ".beads"]);
        assert_eq!(m.tree, TREE);
        assert_eq!(m.conflicts, ["src/a.rs", ".ralphish/x"]);
        let m = read_merge_tree(&out, &[".ralph"]);
        assert_eq!(
            m.conflicts,
            ["src/a.rs", ".beads/issues.jsonl", ".ralphish/x"]
        );
    }

    #[test]
    fn an_old_git_gives_no_tree() {
        // git before 2.38 prints its usage to stderr and nothing here.
        assert_eq!(read_merge_tree("", &[]).tree, "");
    }

    fn repo() -> (tempfile::TempDir, impl Fn(&[&str])) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_path_buf();
        let git = move |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c"])
                .arg("init.defaultBranch=main")
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(ok.status.success(), "git {args:?}: {ok:?}");
        };
        git(&["init", "-q"]);
        (d, git)
    }

    fn write(dir: &std::path::Path, path: &str, text: &str) {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn merges_commit_with_both_parents_or_stop_on_conflicts_outside_own_files() {
        let (d, git) = repo();
        write(d.path(), "a.txt", "one\n");
        write(d.path(), ".ralph/spec.md", "ours\n");
        git(&["add", "-A"]);
        git(&["commit", "-qm", "base"]);
        git(&["branch", "side"]);
        let g = crate::git::at(d.path());
        let keep = |t: &str| Ok(t.to_string());

        // The side changes a file and ralph's spec; HEAD changes the spec.
        git(&["checkout", "-q", "side"]);
        write(d.path(), "b.txt", "two\n");
        write(d.path(), ".ralph/spec.md", "theirs\n");
        git(&["add", "-A"]);
        git(&["commit", "-qm", "side"]);
        git(&["checkout", "-q", "main"]);
        write(d.path(), ".ralph/spec.md", "ours, changed\n");
        git(&["commit", "-qam", "ours"]);
        let head = g.run(&["rev-parse", "HEAD"], &[]).unwrap();
        let ours = g.run(&["rev-parse", "HEAD:.ralph"], &[]).unwrap();
        // The caller's rule for its own folder: HEAD's, as it is.
        let own_ralph = |tree: &str| {
            let top: Vec<u8> = g
                .bytes(&["ls-tree", "-z", tree])
                .unwrap()
                .split(|b| *b == 0)
                .filter(|e| !e.is_empty() && !e.ends_with(b"\t.ralph"))
                .flat_map(|e| e.iter().copied().chain([0]))
                .chain(format!("040000 tree {ours}\t.ralph\0").bytes())
                .collect();
            g.run_with_input(&["mktree", "-z"], &top)
        };
        let m = merge_into_head(&g, "side", "merge side", &[".ralph"], own_ralph).unwrap();
        let Merged::Committed { before, commit } = m else {
            panic!("{m:?}");
        };
        assert_eq!(before, head);
        assert_eq!(
            changed(&g, &before, &commit),
            1,
            "b.txt only: the spec stays ours"
        );
        assert_eq!(g.run(&["rev-parse", "HEAD"], &[]).unwrap(), commit);
        assert_eq!(
            g.run(&["log", "-1", "--format=%P %s"], &[]).unwrap(),
            format!(
                "{head} {} merge side",
                g.run(&["rev-parse", "side"], &[]).unwrap()
            )
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join(".ralph/spec.md")).unwrap(),
            "ours, changed\n"
        );

        // A conflict in the work: reported, nothing written.
        git(&["checkout", "-q", "side"]);
        write(d.path(), "a.txt", "side's\n");
        git(&["commit", "-qam", "side a"]);
        git(&["checkout", "-q", "main"]);
        write(d.path(), "a.txt", "main's\n");
        git(&["commit", "-qam", "main a"]);
        let head = g.run(&["rev-parse", "HEAD"], &[]).unwrap();
        let m = merge_into_head(&g, "side", "m", &[".ralph"], keep).unwrap();
        assert_eq!(m, Merged::Conflicts(vec!["a.txt".to_string()]));
        assert_eq!(g.run(&["rev-parse", "HEAD"], &[]).unwrap(), head);
    }
}
