use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::Exit;
use crate::work::completion::{self, CannotCheck};
use crate::work::project::Project;
use crate::work::tracker::Kind;

/// Check that the spec's checkboxes agree with the task tracker, step by step.
///
/// Each step is compared with its own task: a checked step must have a
/// closed task, an unchecked step a task that is not closed. Also reported:
/// tasks the tracker does not know, steps with no task, two steps naming one
/// task, broken checkboxes, and (when the spec names its epic, e.g.
/// `Epic: [br-abc]`) tasks of that epic that no step references.
///
/// Exit status: 0 in sync, 1 out of sync, 2 could not check (no spec, tracker
/// missing or failing).
#[derive(Debug, Args)]
pub struct VerifySync {
    /// The spec to check [default: .ralph/spec.md]
    #[arg(long, value_name = "PATH")]
    spec: Option<PathBuf>,

    /// Which tracker to ask [default: br if installed, else bd]
    #[arg(long, value_enum)]
    tracker: Option<Kind>,

    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

impl Run for VerifySync {
    fn run(&self) -> Result<()> {
        let project = Project::find()?;
        let spec_path = self.spec.clone().unwrap_or_else(|| project.spec());
        let shown = spec_path
            .strip_prefix(&project.root)
            .unwrap_or(&spec_path)
            .display()
            .to_string();
        let check = match completion::check(&spec_path, &project.root, self.tracker)? {
            Ok(c) => c,
            Err(e) => {
                if self.json {
                    println!(
                        "{}",
                        serde_json::json!({"in_sync": null, "spec": shown, "error": e.to_string()})
                    );
                    return Err(Exit::code(2).into());
                }
                let what = match e {
                    CannotCheck::NoSpec(_) => "cannot check",
                    CannotCheck::Tracker(_) => "cannot read the tracker",
                };
                return Err(
                    Exit::with_message(2, format!("ralph verify-sync: {what}: {e}")).into(),
                );
            }
        };
        if self.json {
            let v = serde_json::json!({
                "in_sync": check.in_sync(),
                "spec": shown,
                "tracker": check.tracker,
                "steps": check.spec.total(),
                "done": check.spec.done(),
                "findings": check.findings,
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else if check.in_sync() {
            match check.tracker {
                Some(t) => println!(
                    "{shown} is in sync with {t}: {} steps, {}.",
                    check.spec.total(),
                    check.spec.progress()
                ),
                None => println!(
                    "{shown} names no tracker tasks; nothing to compare ({}).",
                    check.spec.progress()
                ),
            }
        } else {
            let against = check
                .tracker
                .map(|t| format!(" with {t}"))
                .unwrap_or_default();
            println!(
                "{shown} is out of sync{against} ({} problem(s)):",
                check.findings.len()
            );
            for f in &check.findings {
                println!("  {}", f.message);
            }
        }
        if check.in_sync() {
            Ok(())
        } else {
            Err(Exit::code(1).into())
        }
    }
}
