use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::{ExitStatus, Stop};

/// How a reviewer gives its verdict: in its final message, not by a command.
///
/// The review session `ralph loop` starts ends its final message with a
/// line `VERDICT: approve`, or `VERDICT: reject` followed by one `- ` line
/// per finding. Only that message counts: a command, which anything the
/// reviewer runs (the project's own tests among them) could run too, never
/// gives a verdict.
#[derive(Debug, Args)]
pub struct Review {
    /// What was given (ignored)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// Said to a reviewer, or a custom review prompt, still using the command.
pub const NO_VERDICT_HERE: &str = "`ralph review` gives no verdict: end your final message with a line `VERDICT: approve`, or `VERDICT: reject` followed by one `- <what is wrong, where, what would fix it>` line per finding";

impl Run for Review {
    fn run(&self) -> Result<ExitStatus> {
        Err(Stop::with(ExitStatus::Usage, NO_VERDICT_HERE))
    }
}
