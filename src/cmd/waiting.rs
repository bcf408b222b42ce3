use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::outln;
use crate::output::visible;
use crate::work::project::Project;
use crate::work::sentinel;

/// Say that a human is needed: write `.ralph/WAITING` with the reason.
///
/// `ralph loop` stops before its next session (exit 3) and shows the reason.
/// Once you have acted, `ralph resume` removes it.
#[derive(Debug, Args)]
pub struct Waiting {
    /// What the human has to do, in a sentence or two.
    #[arg(long, short)]
    reason: String,
}

impl Run for Waiting {
    fn run(&self) -> Result<ExitStatus> {
        let reason = self.reason.trim();
        if reason.is_empty() {
            return Err(crate::exit::Stop::with(
                ExitStatus::Usage,
                "--reason must say what a human has to do",
            ));
        }
        let project = Project::find()?;
        sentinel::Waiting::new(reason).write(&project.waiting())?;
        outln!("Wrote {}: {}", project.waiting().display(), visible(reason));
        outln!("The loop stops before its next session. Run `ralph resume` once this is done.");
        Ok(ExitStatus::Success)
    }
}
