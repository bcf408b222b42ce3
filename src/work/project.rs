//! Where a project's ralph files live.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

#[derive(Debug, Clone)]
pub struct Project {
    pub root: PathBuf,
}

impl Project {
    /// The nearest folder at or above the current one that has `.ralph/`
    /// (so an agent can run `ralph waiting` from a subfolder), else the
    /// current folder.
    pub fn find() -> Result<Project> {
        let cwd = std::env::current_dir().context("cannot read the current folder")?;
        let root = cwd
            .ancestors()
            .find(|d| d.join(".ralph").is_dir())
            .unwrap_or(&cwd)
            .to_path_buf();
        Ok(Project { root })
    }

    pub fn at(root: &Path) -> Project {
        Project {
            root: root.to_path_buf(),
        }
    }

    pub fn ralph_dir(&self) -> PathBuf {
        self.root.join(".ralph")
    }
    pub fn spec(&self) -> PathBuf {
        self.ralph_dir().join("spec.md")
    }
    pub fn complete(&self) -> PathBuf {
        self.ralph_dir().join("COMPLETE")
    }
    pub fn waiting(&self) -> PathBuf {
        self.ralph_dir().join("WAITING")
    }
    /// The loop lock: in ralph's own state folder, out of the project's reach.
    pub fn lock(&self) -> PathBuf {
        crate::trust::store::lock_file(&self.root)
    }
    pub fn runs(&self) -> PathBuf {
        self.ralph_dir().join("runs")
    }
    /// What each session leaves the next: `.ralph/progress.md`.
    pub fn progress_log(&self) -> PathBuf {
        self.ralph_dir().join("progress.md")
    }
    /// What the next session must know: `.ralph/learnings.md`.
    pub fn learnings(&self) -> PathBuf {
        self.ralph_dir().join("learnings.md")
    }
    pub fn config(&self) -> PathBuf {
        self.ralph_dir().join("config.toml")
    }
    /// `.ralph/prompt.md`, else `prompt.md` at the root.
    pub fn default_prompt(&self) -> PathBuf {
        let p = self.ralph_dir().join("prompt.md");
        if p.exists() {
            p
        } else {
            self.root.join("prompt.md")
        }
    }
}
