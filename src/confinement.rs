//! What a confined session may reach and must not, as data: what the user
//! allows (`Confinement`), where git keeps the project's repository
//! (`GitDirs`), the user's credential stores (`Secret`, found by
//! `sandbox::credentials`). Read by ralph's sandbox (`sandbox/`) and by
//! each agent that confines itself (`agent/`): here, below both, so that
//! neither imports the other (the session hands it to each).

use std::path::{Path, PathBuf};

/// What a confined run allows beyond the project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    pub allow_write: Vec<String>,
    pub allow_domains: Vec<String>,
}

/// Where git keeps a checkout's repository, as git named it from ralph's
/// side before the session (`git rev-parse --git-common-dir --git-dir`):
/// never read off a `.git` file a session could have rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitDirs {
    /// The folder every worktree shares: objects, refs, config, hooks.
    pub common: PathBuf,
    /// The checkout's own (`<common>/worktrees/<name>` in a linked
    /// worktree; `common` itself in the main checkout).
    pub own: PathBuf,
    /// The submodules' git folders (`<common>/modules/*`) there are.
    pub modules: Vec<PathBuf>,
    /// The checkout's `.git` is a file (a linked worktree's, naming `own`).
    pub dot_git_file: bool,
}

/// What a linked worktree's commits write of the shared git folder: the
/// objects, the refs and their logs (and, where the repository has them,
/// its reftable, git-lfs's objects and rerere's records).
pub const SHARED_WRITTEN: [&str; 6] = ["objects", "refs", "logs", "reftable", "lfs", "rr-cache"];

/// `~` and `~/...` as the user's home, as Claude Code reads `allowWrite`.
pub fn expand_home(p: &str) -> String {
    let home = || std::env::var("HOME").unwrap_or_default();
    if p == "~" {
        home()
    } else if let Some(rest) = p.strip_prefix("~/") {
        format!("{}/{rest}", home())
    } else {
        p.to_string()
    }
}

/// A store that exists, as its sandbox hides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secret {
    /// Seen empty.
    Dir(PathBuf),
    /// Seen as an empty file.
    File(PathBuf),
}

impl Secret {
    pub fn path(&self) -> &Path {
        match self {
            Secret::Dir(p) | Secret::File(p) => p,
        }
    }
}

/// What of `secrets` a sandbox hides: not a store the session may write
/// (`writable` names it, or a folder inside it: the user let it), nor one
/// in the agent's `own` folders (its own login, which the agent reads
/// inside the same sandbox), nor one that holds the project.
pub fn hidden<'a>(
    secrets: &'a [Secret],
    (writable, own): (&[PathBuf], &[PathBuf]),
    root: &Path,
) -> Vec<&'a Secret> {
    secrets
        .iter()
        .filter(|s| {
            let p = s.path();
            !root.starts_with(p)
                && !writable.iter().any(|w| w.starts_with(p))
                && !own.iter().any(|o| p.starts_with(o))
        })
        .collect()
}
