use anyhow::Result;
use clap::{Args, Subcommand};

use super::Run;
use crate::exit::{ExitStatus, Stop};
use crate::handoff::env;
use crate::outln;
use crate::work::project::Project;
use crate::work::review::{self, VerdictFile};

/// Give the verdict of a review session (run by the reviewer ralph starts).
///
/// `ralph loop` with a reviewer (`[review]`, `--review`) starts a fresh
/// session to judge the work before COMPLETE, or a checked step, counts.
/// That session ends by running `ralph review approve` or `ralph review
/// reject --finding "..."`; the loop reads the verdict from the file this
/// writes, and takes it only from that very session. A review that ends
/// without a verdict counts as a rejection.
#[derive(Debug, Args)]
pub struct Review {
    #[command(subcommand)]
    verdict: Verdict,
}

#[derive(Debug, Subcommand)]
enum Verdict {
    /// Every criterion is met, and nothing found stands in the way
    Approve,
    /// The work does not count yet: say why, one --finding per problem
    Reject {
        /// What is wrong, where, and what would fix it (repeatable; at most 20)
        #[arg(long = "finding", short, value_name = "TEXT", required = true)]
        findings: Vec<String>,
    },
}

impl Run for Review {
    fn run(&self) -> Result<ExitStatus> {
        let Some(token) = std::env::var(env::REVIEW).ok().filter(|t| !t.is_empty()) else {
            return Err(Stop::with(
                ExitStatus::Usage,
                "ralph review is for the review session `ralph loop` starts (it sets RALPH_REVIEW); there is no review to give a verdict for here",
            ));
        };
        let (approved, findings) = match &self.verdict {
            Verdict::Approve => (true, Vec::new()),
            Verdict::Reject { findings } => (
                false,
                review::check_findings(findings).map_err(|e| Stop::with(ExitStatus::Usage, e))?,
            ),
        };
        let project = Project::find()?;
        let path = crate::run::review::verdict_path(&project);
        let file = VerdictFile {
            token,
            approved,
            findings,
        };
        let text = serde_json::to_string_pretty(&file)? + "\n";
        crate::fsutil::atomic_write(&path, text.as_bytes(), 0o644)?;
        if approved {
            outln!("Approved. The loop reads the verdict once this session ends: stop now.");
        } else {
            outln!(
                "Rejected with {} finding(s). The loop hands them to the next work session once this session ends: stop now.",
                file.findings.len()
            );
        }
        Ok(ExitStatus::Success)
    }
}
