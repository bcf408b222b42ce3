//! A run's folder, `.ralph/runs/<run-id>/`: the raw stream of each session
//! (`session-NNN.jsonl`), one JSON record per session (`records.jsonl`), the
//! hook's log (`hook.log`) and the run's `summary.json`, so that what happened
//! overnight can be read in the morning.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

pub struct RunDir {
    pub id: String,
    pub path: PathBuf,
}

impl RunDir {
    pub fn create(runs: &Path) -> Result<RunDir> {
        // Sortable, readable, unique per loop: `2026-11-22T21-30-05Z-12345`.
        let id = format!(
            "{}-{}",
            crate::timefmt::now().replace(':', "-"),
            std::process::id()
        );
        let path = runs.join(&id);
        fs::create_dir_all(&path)
            .with_context(|| format!("cannot create the run folder {}", path.display()))?;
        Ok(RunDir { id, path })
    }

    pub fn stream_file(&self, iteration: u32) -> PathBuf {
        self.path.join(format!("session-{iteration:03}.jsonl"))
    }

    pub fn hook_log(&self) -> PathBuf {
        self.path.join("hook.log")
    }

    pub fn append_record(&self, record: &impl Serialize) -> Result<()> {
        let mut line = serde_json::to_string(record)?;
        line.push('\n');
        let path = self.path.join("records.jsonl");
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        f.write_all(line.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))
    }

    pub fn write_summary(&self, summary: &impl Serialize) -> Result<()> {
        let text = serde_json::to_string_pretty(summary)? + "\n";
        crate::fsutil::atomic_write(&self.path.join("summary.json"), text.as_bytes(), 0o644)
    }
}
