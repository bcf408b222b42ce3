use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::outln;
use crate::work::project::Project;
use crate::work::sentinel;

/// A human has acted: show the WAITING reason and remove `.ralph/WAITING`.
#[derive(Debug, Args)]
pub struct Resume {}

impl Run for Resume {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let waiting = sentinel::Waiting::read(&project.waiting())?;
        match waiting {
            Some(w) => {
                sentinel::remove(&project.waiting())?;
                outln!(
                    "Was waiting{}: {}",
                    w.since(),
                    crate::output::visible(&w.reason)
                );
                outln!(
                    "Removed {}; `ralph loop --resume` goes on with the run (`ralph loop` starts a new one).",
                    project.waiting().display()
                );
            }
            None => outln!(
                "Not waiting (no {}); nothing to do.",
                project.waiting().display()
            ),
        }
        Ok(ExitStatus::Success)
    }
}
