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
        match sentinel::remove(&project.waiting())? {
            Some(s) => {
                let since = s
                    .field("since")
                    .map(|t| format!(" since {t}"))
                    .unwrap_or_default();
                println!("Was waiting{since}: {}", s.text);
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
