//! What a command ends with: an exit status, mapped to the process's exit
//! code in one place (`main`). A command that stops early returns a `Stop`
//! (its status and what to say), which `main` prints once, after `ralph
//! <command>: `; any other `Err` is unexpected, printed by `main` as
//! `ralph: error: ...` with status 1.

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0
    Success,
    /// 1: the command did not do what was asked (refused, failed, not in sync).
    Failure,
    /// 2: the command line or a setting is wrong, or it could not check.
    Usage,
    /// Any other documented status (`ralph loop`'s 3, 4, 5, 130).
    Code(u8),
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Code(c) => c,
        }
    }
}

impl From<u8> for ExitStatus {
    fn from(c: u8) -> Self {
        match c {
            0 => ExitStatus::Success,
            1 => ExitStatus::Failure,
            2 => ExitStatus::Usage,
            c => ExitStatus::Code(c),
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> Self {
        ExitCode::from(s.code())
    }
}

/// A command that ends early: its status and what it says, printed once by
/// `main` on stderr after `ralph <command>: ` (as zoxide's `SilentExit` and
/// just's error codes do), instead of each command printing and returning.
#[derive(Debug)]
pub struct Stop {
    pub status: ExitStatus,
    pub message: String,
}

impl Stop {
    /// As an error, for `?` and `return Err(...)`.
    pub fn with(status: ExitStatus, message: impl Into<String>) -> anyhow::Error {
        Stop {
            status,
            message: message.into(),
        }
        .into()
    }
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Stop {}
