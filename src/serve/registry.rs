//! Which projects the page lists: every one a loop was started in on this
//! machine, as ralph's state folder records each start (beside its lock,
//! out of any project's reach), and the one `ralph serve` started in.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The most of one start's record read: it is a command line and a folder.
const RECORD_MAX: u64 = 256 << 10;

#[derive(Debug, Default)]
pub struct Registry {
    dir: PathBuf,
    /// Each record read, and the main checkout its loop ran in (`None`: its
    /// folder is gone, or not in a repository).
    seen: HashMap<OsString, Option<PathBuf>>,
    /// The folder's time when it was last read: a new record changes it.
    stamp: Option<SystemTime>,
    /// Projects given at start.
    given: BTreeSet<PathBuf>,
}

impl Registry {
    /// The registry of ralph's state folder `loops` (`dir`), with `also`.
    pub fn new(dir: PathBuf, also: Option<PathBuf>) -> Registry {
        Registry {
            dir,
            given: also.into_iter().collect(),
            ..Registry::default()
        }
    }

    /// Read the records added since the last look.
    pub fn refresh(&mut self) {
        let stamp = std::fs::metadata(&self.dir).and_then(|m| m.modified()).ok();
        if stamp.is_some() && stamp == self.stamp {
            return;
        }
        self.stamp = stamp;
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if self.seen.contains_key(&name)
                || !name.to_string_lossy().ends_with(".invocation.json")
            {
                continue;
            }
            let main = main_of_record(&e.path());
            self.seen.insert(name, main);
        }
    }

    /// The main checkouts known, each once, those still there.
    pub fn projects(&self) -> Vec<PathBuf> {
        let all: BTreeSet<&PathBuf> = self.seen.values().flatten().chain(&self.given).collect();
        all.into_iter()
            .filter(|p| p.join(".git").exists())
            .cloned()
            .collect()
    }
}

/// The main checkout of the folder a loop was started in, as its record
/// says; `None` when it is gone.
fn main_of_record(path: &Path) -> Option<PathBuf> {
    let text = crate::fsutil::read_regular_capped(path, RECORD_MAX).ok()??;
    let inv: crate::history::invocation::Invocation = serde_json::from_str(&text).ok()?;
    if !inv.cwd.is_dir() {
        return None;
    }
    crate::run::worktree::main_root(&inv.cwd).ok()
}
