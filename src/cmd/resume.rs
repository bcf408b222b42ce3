use anyhow::Result;
use clap::Args;

use super::Run;
use crate::work::project::Project;
use crate::work::sentinel;

/// A human has acted: show the WAITING reason and remove `.ralph/WAITING`.
#[derive(Debug, Args)]
pub struct Resume {}

impl Run for Resume {
    fn run(&self) -> Result<()> {
        let project = Project::find()?;
        let waiting = sentinel::Waiting::read(&project.waiting())?;
        match waiting {
            Some(w) => {
                sentinel::remove(&project.waiting())?;
                println!("Was waiting{}: {}", w.since(), w.reason);
                println!(
                    "Removed {}; `ralph loop` will carry on.",
                    project.waiting().display()
                );
            }
            None => println!(
                "Not waiting (no {}); nothing to do.",
                project.waiting().display()
            ),
        }
        Ok(())
    }
}
