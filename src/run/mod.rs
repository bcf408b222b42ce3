//! The loop: its decisions (`engine`, pure) and the `shell` that carries them
//! out; a parallel run's `coordinator`; options, lock, progress, lifecycle
//! hooks, reviewer, worktrees and the shipped end (`ship_end`).

pub mod asking;
pub mod control;
pub mod coordinator;
pub mod countdown;
pub mod engine;
pub mod lifecycle;
pub mod lock;
pub mod merge;
pub mod options;
pub mod paused;
pub mod progress;
pub mod remote;
pub mod review;
pub mod shell;
pub mod ship_end;
pub mod takeover;
pub mod tell;
pub mod ui;
pub mod worktree;
