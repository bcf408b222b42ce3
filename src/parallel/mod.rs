//! What `ralph loop --parallel N` runs on: its workers (loops in worktrees of
//! their own), the merge queue, the shared budget, and the pure rules the
//! coordinator (`run::coordinator`) follows; nothing here imports the loop.

pub mod budget;
pub mod claims;
pub mod plan;
pub mod queue;
pub mod remote;
pub mod texts;
pub mod workers;

use std::path::PathBuf;

use crate::config::OnConflict;

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

/// Steps worked at once: the workers' part of the settings.
#[derive(Debug, Clone)]
pub struct Workers {
    /// `--parallel`; 1: one step at a time.
    pub count: u32,
    /// What a conflicting merge does.
    pub on_conflict: OnConflict,
    /// This loop is a worker of a parallel run (set by its coordinator).
    pub worker: Option<Worker>,
    /// `--wait-for-answer` of a run of many steps: how long it waits, once
    /// nothing else is left to do, for the answer about a step paused at
    /// its budget (the one question such a run waits for).
    pub answer_within: Option<std::time::Duration>,
}
