//! `ralph loop --parallel N`: a spec's independent steps worked side by side,
//! each by a worker loop in a worktree of its own, merged back one at a time.
//!
//! Pure parts (which steps may start, the spec and progress edits of a
//! merge) are apart from the coordinator's processes and git.

pub mod budget;
pub mod coordinator;
pub mod plan;
pub mod queue;
pub mod remote;
pub mod rules;
pub mod texts;
pub mod workers;

use std::path::PathBuf;

/// A worker loop of a parallel run: the one step it works (`Step::key`),
/// its name (`w1`...), and the run's shared budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    pub step: String,
    /// How its sessions know the step (`RALPH_STEP`): its label, else its
    /// task, else its text.
    pub label: String,
    pub name: String,
    pub budget: PathBuf,
}

pub use crate::config::OnConflict;

/// Steps worked at once: the workers' part of the settings.
#[derive(Debug, Clone)]
pub struct Workers {
    /// `--parallel`; 1: one step at a time.
    pub count: u32,
    /// What a conflicting merge does.
    pub on_conflict: OnConflict,
    /// This loop is a worker of a parallel run (set by its coordinator).
    pub worker: Option<Worker>,
}
