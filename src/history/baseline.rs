//! `[gate] baseline`: the run's baseline as ralph keeps it for itself, in
//! its private state folder beside the project's lock. The run folder's
//! copies (`state.json`, `baseline.json`) are where a session writes: a
//! baseline planted there would let a test the run broke pass as one that
//! failed before it, so `--resume` takes the baseline from here alone.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::work::gate::Verdict;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Kept {
    run_id: String,
    /// `None`: the run has none (`[gate] baseline = "off"`, or no gate),
    /// and every check must pass for it, resumed or not.
    baseline: Option<Verdict>,
}

/// A baseline is bigger than the other records: as large as the run
/// folder's copy may be.
const CAP: u64 = 64 << 20;

/// Beside the lock of `root` (one per project: the newest run's).
fn path(root: &Path) -> PathBuf {
    crate::trust::store::lock_file(root).with_extension("gate-baseline.json")
}

/// Keep `baseline` as run `run_id`'s (`None`: it has none).
pub fn keep(root: &Path, run_id: &str, baseline: Option<&Verdict>) -> Result<()> {
    let p = path(root);
    if let Some(dir) = p.parent() {
        crate::trust::store::private_dir(dir)?;
    }
    let kept = Kept {
        run_id: run_id.to_string(),
        baseline: baseline.cloned(),
    };
    crate::fsutil::atomic_write(&p, serde_json::to_string(&kept)?.as_bytes(), 0o600)
}

/// What a resumed run `run_id` has as its baseline, and whether it was
/// taken: what ralph kept, whatever the run folder says. Nothing kept: it
/// was stopped before it was taken (no session ran), so it is taken now.
pub fn for_resume(root: &Path, run_id: &str) -> (Option<Verdict>, bool) {
    let kept = crate::fsutil::read_regular_capped(&path(root), CAP)
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str::<Kept>(&t).ok())
        .filter(|k| k.run_id == run_id);
    match kept {
        Some(k) => (k.baseline, true),
        None => (None, false),
    }
}
