use anyhow::Result;
use clap::Args;

use super::Run;
use crate::control::inbox;
use crate::control::{Command, StopWhen};
use crate::exit::{ExitStatus, Stop as Refused};
use crate::outln;
use crate::output::visible;
use crate::work::project::Project;

/// Stop the project's running loop, from any terminal: now (its session
/// ended as Ctrl+C ends it), or once its running session has ended.
///
/// The run stays resumable (`ralph loop --resume`). Refused inside a loop's
/// session: a loop is controlled by its user.
#[derive(Debug, Args)]
pub struct Stop {
    /// Let the running session finish; start no new one
    #[arg(long)]
    after_session: bool,
}

/// Send `command` to the running loop of the project here, as a user at a
/// terminal; what was done is said.
pub(super) fn send(command: Command) -> Result<ExitStatus> {
    if let Some(why) = inbox::refused_in_session() {
        return Err(Refused::with(ExitStatus::Usage, why));
    }
    let project = Project::find()?;
    outln!("{}", send_as(&project, "terminal", command)?);
    Ok(ExitStatus::Success)
}

/// Send `command` to the running loop of `project`, as `by` (`terminal`,
/// `mcp`); what was done, for the user. Every face controls a loop
/// through `run::tell`; this is its wording.
pub fn send_as(project: &Project, by: &str, command: Command) -> Result<String> {
    let said = command.describe();
    let running =
        crate::run::tell::command(&project.root, by, command).map_err(super::answer::not_sent)?;
    Ok(format!(
        "Sent to the loop (run {}, pid {}): {}.",
        visible(&running.run_id),
        running.pid,
        visible(&said)
    ))
}

impl Run for Stop {
    fn run(&self) -> Result<ExitStatus> {
        let when = if self.after_session {
            StopWhen::AfterSession
        } else {
            StopWhen::Now
        };
        send(Command::Stop { when })
    }
}
