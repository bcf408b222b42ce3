use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::Run;
use crate::exit::ExitStatus;

/// Claude Code hooks: run by Claude Code, not by hand.
#[derive(Debug, Args)]
pub struct Hook {
    #[command(subcommand)]
    event: HookEvent,
}

#[derive(Debug, Subcommand)]
enum HookEvent {
    /// The Stop hook: ends the session when a ralph loop started it.
    ///
    /// Reads Claude Code's Stop JSON on stdin. Does nothing (and reads
    /// nothing) unless RALPH_LOOP=1; then ends the nearest Claude Code
    /// process above it, but only if that process was started with
    /// RALPH_LOOP=1 or by a ralph loop. Always exits 0.
    Stop,
    /// Internal: the detached watcher that ends a print-mode session that
    /// did not exit by itself after the Stop hook.
    #[command(hide = true)]
    StopWatch {
        #[arg(long)]
        pid: u32,
        #[arg(long)]
        start: u64,
        #[arg(long)]
        grace_ms: u64,
        #[arg(long)]
        transcript: Option<PathBuf>,
    },
}

impl Run for Hook {
    fn run(&self) -> Result<ExitStatus> {
        match &self.event {
            HookEvent::Stop => crate::hook::stop::run(),
            HookEvent::StopWatch {
                pid,
                start,
                grace_ms,
                transcript,
            } => crate::hook::stop::watch(
                *pid,
                *start,
                Duration::from_millis(*grace_ms),
                transcript.as_deref(),
            ),
        }
        Ok(ExitStatus::Success)
    }
}
