use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::Exit;
use crate::timefmt;
use crate::work::project::Project;
use crate::work::sentinel::{self, Sentinel};

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
    fn run(&self) -> Result<()> {
        let reason = self.reason.trim();
        if reason.is_empty() {
            return Err(Exit::with_message(
                2,
                "ralph waiting: --reason must say what a human has to do",
            )
            .into());
        }
        let project = Project::find()?;
        let s = Sentinel {
            fields: vec![("since".into(), timefmt::now())],
            text: reason.to_string(),
        };
        sentinel::write(&project.waiting(), &s)?;
        println!("Wrote {}: {reason}", project.waiting().display());
        println!("The loop stops before its next session. Run `ralph resume` once this is done.");
        Ok(())
    }
}
