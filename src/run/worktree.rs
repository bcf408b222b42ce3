//! Loops in git worktrees: one worktree per NAME on branch `ralph/NAME`, in
//! a predictable place outside the main checkout
//! (`<checkout>/../<checkout name>.ralph-worktrees/NAME`), each with its own
//! `.ralph/` (spec, lock, runs, sentinels). The tracker stays the main
//! checkout's: br run in a worktree reads and writes the main checkout's
//! database (see README).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// git in `dir` with ralph's fixed words only.
fn git(dir: &Path, words: &[&str]) -> Result<String> {
    crate::git::at(dir).run(words, &[])
}

/// The main checkout of the repository `dir` is in (also from a worktree).
pub fn main_root(dir: &Path) -> Result<PathBuf> {
    let common = git(
        dir,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?;
    let common = PathBuf::from(common);
    match common.file_name() {
        Some(n) if n == ".git" => Ok(common
            .parent()
            .context("the .git folder's parent")?
            .to_path_buf()),
        _ => bail!(
            "{} is a bare repository: run loops in worktrees of a checkout",
            common.display()
        ),
    }
}

/// The commit `base` names, as an object id: a value that git would read
/// as an option (`-f`, `--orphan`) is refused, never passed on.
fn base_commit(main: &Path, base: &str) -> Result<String> {
    if base.starts_with('-') || base.is_empty() {
        bail!("--base {base:?} is not a commit (it would be read as an option)");
    }
    crate::git::at(main)
        .run(
            &["rev-parse", "--verify", "--quiet"],
            &[&format!("{base}^{{commit}}")],
        )
        .map_err(|_| anyhow::anyhow!("--base {base:?} names no commit"))
}

pub fn branch(name: &str) -> String {
    format!("ralph/{name}")
}

/// Where worktree NAME of the checkout `main` lives.
pub fn path_for(main: &Path, name: &str) -> PathBuf {
    let base = main
        .file_name()
        .map_or_else(|| "repo".into(), |n| n.to_string_lossy().into_owned());
    main.parent()
        .unwrap_or(Path::new("/"))
        .join(format!("{base}.ralph-worktrees"))
        .join(name)
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Worktree {
    pub path: PathBuf,
    pub branch: Option<String>,
    pub head: Option<String>,
    /// The main checkout (the first in git's list).
    pub main: bool,
}

impl Worktree {
    /// Its branch's short name (`ralph/auth`), if it is on one.
    pub fn branch_name(&self) -> Option<String> {
        self.branch
            .as_deref()
            .map(|b| b.trim_start_matches("refs/heads/").to_string())
    }

    /// `main`, or NAME for a worktree on `ralph/NAME`.
    pub fn name(&self) -> String {
        if self.main {
            return "main".into();
        }
        self.branch
            .as_deref()
            .and_then(|b| b.strip_prefix("refs/heads/ralph/"))
            .map(String::from)
            .unwrap_or_else(|| {
                self.path
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            })
    }
}

/// `git worktree list --porcelain`, parsed.
pub fn parse_list(text: &str) -> Vec<Worktree> {
    let mut out: Vec<Worktree> = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut w = Worktree {
            path: PathBuf::new(),
            branch: None,
            head: None,
            main: out.is_empty(),
        };
        for line in block.lines() {
            if let Some(p) = line.strip_prefix("worktree ") {
                w.path = PathBuf::from(p);
            } else if let Some(b) = line.strip_prefix("branch ") {
                w.branch = Some(b.to_string());
            } else if let Some(h) = line.strip_prefix("HEAD ") {
                w.head = Some(h.to_string());
            }
        }
        if !w.path.as_os_str().is_empty() {
            out.push(w);
        }
    }
    out
}

/// The checkout and the worktrees that have a `.ralph/`: every loop the
/// repository can have (`status --all`, `watch`).
pub fn loops(main: &Path) -> Result<Vec<Worktree>> {
    Ok(list(main)?
        .into_iter()
        .filter(|w| w.path.join(".ralph").is_dir())
        .collect())
}

pub fn list(main: &Path) -> Result<Vec<Worktree>> {
    Ok(parse_list(&git(
        main,
        &["worktree", "list", "--porcelain"],
    )?))
}

/// Create worktree NAME (branch `ralph/NAME` from `base`, default HEAD), or
/// reuse it. Returns its path and whether it was made now.
pub fn ensure(main: &Path, name: &str, base: Option<&str>) -> Result<(PathBuf, bool)> {
    made_or_reused(main, name, || base_commit(main, base.unwrap_or("HEAD")))
}

/// `ensure` from `commit`, the object id of a commit that the caller has
/// just read from git (`rev-parse --verify HEAD^{commit}`): not asked of
/// git again (a parallel run makes a worktree for each step it starts,
/// and the next worker waits for it).
pub fn ensure_at_commit(main: &Path, name: &str, commit: &str) -> Result<(PathBuf, bool)> {
    made_or_reused(main, name, || Ok(commit.to_string()))
}

/// Worktree NAME made (its branch from `base`'s commit, asked only then)
/// or reused.
fn made_or_reused(
    main: &Path,
    name: &str,
    base: impl FnOnce() -> Result<String>,
) -> Result<(PathBuf, bool)> {
    let path = path_for(main, name);
    let branch = branch(name);
    // Two `git worktree add` at once race: one reads the other's half-made
    // `.git/worktrees/<name>` and fails ("failed to read .../commondir",
    // seen with two loops started together). ralph's own are one at a time.
    let _one_at_a_time = crate::fsutil::lock_dir(&main.join(".git"))?;
    let existing = list(main)?;
    if let Some(w) = existing.iter().find(|w| w.path == path) {
        if w.branch.as_deref() != Some(&format!("refs/heads/{branch}")) {
            bail!(
                "{} is a worktree on {}, not on {branch}",
                path.display(),
                w.branch.as_deref().unwrap_or("a detached HEAD")
            );
        }
        return Ok((path, false));
    }
    if path.exists() {
        bail!(
            "{} exists but is not a worktree of {}; move it away",
            path.display(),
            main.display()
        );
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let p = path.to_string_lossy().into_owned();
    let g = crate::git::at(main);
    let has_branch = g.ok(
        &["rev-parse", "--verify", "--quiet"],
        &[&format!("refs/heads/{branch}")],
    );
    // Made without its files, which are then checked out by git in the
    // worktree itself: its config there (an `includeIf "onbranch:..."`
    // reads the new branch's) is the one ralph's git overrides.
    if has_branch {
        g.run(
            &["worktree", "add", "--quiet", "--no-checkout"],
            &[&p, &branch],
        )?;
    } else {
        let commit = base()?;
        g.run(
            &["worktree", "add", "--quiet", "--no-checkout", "-b", &branch],
            &[&p, &commit],
        )?;
    }
    crate::git::at(&path).run(&["reset", "--hard", "--quiet"], &[])?;
    Ok((path, true))
}

/// What `seed` put in the worktree: its spec from `--spec` (when it
/// changed it), and the checkout's files it copied.
#[derive(Debug, Default)]
pub struct Seeded {
    pub spec_from: Option<PathBuf>,
    pub copied: Vec<String>,
}

/// Copy the main checkout's ralph files the worktree lacks (untracked ones
/// are not in a new worktree), and `spec` as its spec when given.
pub fn seed(main: &Path, wt: &Path, spec: Option<&Path>) -> Result<Seeded> {
    let from = main.join(".ralph");
    let to = wt.join(".ralph");
    std::fs::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
    let mut seeded = Seeded::default();
    if let Some(spec) = spec {
        let text = crate::fsutil::read_optional(spec)?
            .with_context(|| format!("no spec at {}", spec.display()))?;
        let target = to.join("spec.md");
        let current = crate::fsutil::read_optional(&target)?;
        if current.as_deref() != Some(text.as_str()) {
            crate::fsutil::atomic_write(&target, text.as_bytes(), 0o644)?;
            seeded.spec_from = Some(spec.to_path_buf());
        }
    }
    for name in ["spec.md", "prompt.md", "readme.md", "config.toml"] {
        let target = to.join(name);
        if target.exists() {
            continue;
        }
        if let Some(text) = crate::fsutil::read_optional(&from.join(name))? {
            crate::fsutil::atomic_write(&target, text.as_bytes(), 0o644)?;
            seeded.copied.push(name.to_string());
        }
    }
    Ok(seeded)
}

/// Why worktree NAME must not be removed, if anything stops it.
pub fn removal_blockers(main: &Path, path: &Path, name: &str) -> Result<Vec<String>> {
    let mut why = Vec::new();
    if let Some(l) = crate::run::lock::running(&crate::trust::store::lock_file(path)) {
        why.push(format!("its loop is running (pid {})", l.pid));
    }
    if path.exists() {
        why.extend(uncommitted(path)?);
    }
    why.extend(unmerged(main, name)?);
    Ok(why)
}

/// Changes in the worktree not yet committed (ralph's own sentinels and
/// ignore file are not the work).
fn uncommitted(path: &Path) -> Result<Option<String>> {
    let status = git(
        path,
        &[
            "status",
            "--porcelain",
            "--untracked-files=normal",
            "--",
            ".",
            ":(exclude).ralph/COMPLETE",
            ":(exclude).ralph/WAITING",
            ":(exclude).ralph/.gitignore",
            // The loop's own last line there.
            ":(exclude).ralph/progress.md",
        ],
    )?;
    let n = status.lines().count();
    if n == 0 {
        return Ok(None);
    }
    let paths: Vec<&str> = status
        .lines()
        .map(|l| l.get(3..).unwrap_or(l))
        .take(3)
        .collect();
    let more = if n > 3 { ", ..." } else { "" };
    Ok(Some(format!(
        "it has uncommitted changes ({n} path(s): {}{more})",
        paths.join(", ")
    )))
}

/// Commits on the worktree's branch that no other branch has.
fn unmerged(main: &Path, name: &str) -> Result<Option<String>> {
    let branch = self::branch(name);
    let full = format!("refs/heads/{branch}");
    if !crate::git::at(main).ok(&["rev-parse", "--verify", "--quiet"], &[&full]) {
        return Ok(None);
    }
    // NAME was checked (`check_name`): no option can hide in it.
    let exclude = format!("--exclude={branch}");
    let own = git(
        main,
        &[
            "rev-list",
            "--count",
            &full,
            "--not",
            &exclude,
            "--branches",
        ],
    )?;
    let own = own.trim();
    Ok((own != "0").then(|| {
        let n = own.parse::<u64>().map_or_else(
            |_| format!("{own} commits"),
            |n| crate::output::counted(n, "commit", "commits"),
        );
        let them = if own == "1" { "it" } else { "them" };
        format!("{branch} has {n} on no other branch (merge {them} first)")
    }))
}

/// Remove the worktree and its branch. The caller has checked (or was told
/// not to) that nothing of the work is lost; git's own check would also
/// count ralph's untracked sentinels, so it is told to go ahead.
pub fn remove(main: &Path, path: &Path, name: &str) -> Result<Option<String>> {
    let p = path.to_string_lossy().into_owned();
    let g = crate::git::at(main);
    g.run(&["worktree", "remove", "--force"], &[&p])?;
    let branch = branch(name);
    let head = g
        .run(
            &["rev-parse", "--verify", "--quiet"],
            &[&format!("refs/heads/{branch}")],
        )
        .ok();
    if let Some(h) = &head {
        // Not `git branch -D`: it always rewrites the shared `.git/config`
        // (its `config.lock` appearing and going), and Claude Code's sandbox,
        // binding that lock read-only as it sets up a confined Bash call of
        // a sibling worker, then fails the call. The ref alone is deleted,
        // if it is still the commit read; the config only if it names the
        // branch.
        g.run(
            &["update-ref", "-d"],
            &[&format!("refs/heads/{branch}"), h.trim()],
        )?;
        let section = format!("branch.{branch}");
        // `--local` reads the repository's config file alone (no
        // include): one that does not hold the branch's name at all has no
        // section of it, and git is not asked (a parallel run removes a
        // worktree after each merge, before the next worker starts).
        let may_name = std::fs::read(main.join(".git/config"))
            .map_or(true, |text| mentions(&text, branch.as_bytes()));
        let named = may_name
            && g.run(&["config", "--local", "--name-only", "--list"], &[])
                .is_ok_and(|o| o.lines().any(|k| k.starts_with(&format!("{section}."))));
        if named {
            g.run(&["config", "--local", "--remove-section"], &[&section])?;
        }
    }
    Ok(head)
}

/// Does `text` hold `name`, in any case (a config's section names are
/// read in any case)?
fn mentions(text: &[u8], name: &[u8]) -> bool {
    !name.is_empty()
        && text
            .windows(name.len())
            .any(|w| w.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_places() {
        assert!(crate::git::check_worktree_name("feature-a.2_x").is_ok());
        for bad in ["", "-x", ".x", "a/b", "a..b", "a b", "x.lock", "ä"] {
            assert!(crate::git::check_worktree_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            path_for(Path::new("/home/u/app"), "a"),
            PathBuf::from("/home/u/app.ralph-worktrees/a")
        );
        assert_eq!(branch("a"), "ralph/a");
    }

    #[test]
    fn a_config_names_a_branch_in_any_case() {
        let text = b"[core]\n\tbare = false\n[branch \"ralph/Par-1\"]\n\tremote = o\n";
        assert!(mentions(text, b"ralph/Par-1"));
        assert!(mentions(text, b"RALPH/par-1"));
        assert!(!mentions(text, b"ralph/par-2"));
        assert!(!mentions(text, b""));
    }

    #[test]
    fn a_removed_worktrees_branch_section_goes_with_it() {
        let d = tempfile::tempdir().unwrap();
        let main = d.path().join("app");
        std::fs::create_dir_all(&main).unwrap();
        let g = crate::git::at(&main);
        g.run(&["init", "-q"], &[]).unwrap();
        g.commit_as_tester(&["-q", "--allow-empty", "-m", "a"]);
        for name in ["a", "b"] {
            let (path, made) = ensure(&main, name, None).unwrap();
            assert!(made);
            if name == "a" {
                g.run(&["config", "--local", "branch.ralph/a.remote", "o"], &[])
                    .unwrap();
            }
            assert!(remove(&main, &path, name).unwrap().is_some());
            assert!(!path.exists());
        }
        let keys = g.run(&["config", "--local", "--list"], &[]).unwrap();
        assert!(!keys.contains("branch.ralph/a"), "{keys}");
    }

    #[test]
    fn parses_gits_list() {
        let text = "worktree /r/app\nHEAD abc\nbranch refs/heads/main\n\nworktree /r/app.ralph-worktrees/a\nHEAD def\nbranch refs/heads/ralph/a\n\nworktree /r/x\nHEAD 123\ndetached\n";
        let l = parse_list(text);
        assert_eq!(l.len(), 3);
        assert_eq!((l[0].name(), l[0].main), ("main".to_string(), true));
        assert_eq!(l[1].name(), "a");
        assert_eq!(
            (l[2].name(), l[2].branch.as_deref()),
            ("x".to_string(), None)
        );
    }
}
