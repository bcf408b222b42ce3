use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::outln;
use crate::work::project::Project;
use crate::work::sentinel;

/// Remove `.ralph/COMPLETE`, for example after adding new steps to the spec.
#[derive(Debug, Args)]
pub struct Reset {}

impl Run for Reset {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let complete = sentinel::Complete::read(&project.complete())?;
        match complete {
            Some(c) => {
                sentinel::remove(&project.complete())?;
                let when = c
                    .completed
                    .map(|t| format!(" (completed {t})"))
                    .unwrap_or_default();
                outln!(
                    "Removed {}{when}; `ralph loop` will run again.",
                    project.complete().display()
                );
            }
            None => outln!(
                "Not complete (no {}); nothing to do.",
                project.complete().display()
            ),
        }
        Ok(ExitStatus::Success)
    }
}
