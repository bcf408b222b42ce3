use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::outln;
use crate::output::visible;
use crate::work::project::Project;
use crate::work::question::{Blocker, Question};
use crate::work::sentinel;

/// Say that a human is needed: write `.ralph/WAITING` with the reason, or
/// with a question and the answers it offers.
///
/// `ralph loop` stops before its next session (exit 3) and shows it; with
/// `--wait-for-answer` it waits for an answer (`ralph answer`) and goes on.
/// Once you have acted, `ralph resume` removes it.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["reason", "question"]))]
pub struct Waiting {
    /// What the human has to do, in a sentence or two.
    #[arg(long, short)]
    reason: Option<String>,

    /// What the human has to decide or give, asked as a question
    #[arg(long, short)]
    question: Option<String>,

    /// An answer the question offers (repeatable, up to 9; the human picks
    /// one by its number, or answers in words)
    #[arg(long = "option", value_name = "TEXT", requires = "question")]
    options: Vec<String>,

    /// What kind of blocker it is
    #[arg(long, value_enum, requires = "question")]
    blocker: Option<Blocker>,
}

impl Run for Waiting {
    fn run(&self) -> Result<ExitStatus> {
        let usage = |m: String| crate::exit::Stop::with(ExitStatus::Usage, m);
        let waiting = match (&self.reason, &self.question) {
            (Some(reason), _) => {
                let reason = reason.trim();
                if reason.is_empty() {
                    return Err(usage("--reason must say what a human has to do".into()));
                }
                sentinel::Waiting::new(reason)
            }
            (None, Some(q)) => {
                let q = Question::new(q, self.blocker, &self.options)
                    .map_err(|e| usage(format!("--question: {e}")))?;
                sentinel::Waiting::asking(&q)
            }
            (None, None) => unreachable!("clap requires one"),
        };
        let project = Project::find()?;
        waiting.write(&project.waiting())?;
        outln!(
            "Wrote {}: {}",
            project.waiting().display(),
            visible(&waiting.reason)
        );
        for (i, o) in waiting.options.iter().enumerate() {
            outln!("  {}. {}", i + 1, visible(o));
        }
        outln!("The loop stops before its next session. Run `ralph resume` once this is done.");
        Ok(ExitStatus::Success)
    }
}
