use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::Run;
use crate::config::Kind;
use crate::exit::ExitStatus;
use crate::outln;
use crate::output::visible_line;
use crate::work::completion::{self, CannotCheck};
use crate::work::project::Project;

/// Check that the spec's checkboxes agree with the task tracker, step by step.
///
/// Each step is compared with its own task: a checked step must have a
/// closed task, an unchecked step a task that is not closed. Also reported:
/// tasks the tracker does not know, steps with no task, two steps naming one
/// task, broken checkboxes, and (when the spec names its epic, e.g.
/// `Epic: [br-abc]`) tasks of that epic that no step references. The
/// tracker's other open tasks that no step names are listed after, as
/// information: they do not make it out of sync.
///
/// Exit status: 0 in sync, 1 out of sync, 2 could not check (no spec, tracker
/// missing or failing).
#[derive(Debug, Args)]
pub struct VerifySync {
    /// The spec to check [default: .ralph/spec.md]
    #[arg(long, value_name = "PATH")]
    spec: Option<PathBuf>,

    /// Which tracker to ask [default: the config's `tracker`, else br if
    /// installed, else bd]
    #[arg(long, value_enum)]
    tracker: Option<Kind>,

    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

impl Run for VerifySync {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let spec_path = self.spec.clone().unwrap_or_else(|| project.spec());
        let shown = spec_path
            .strip_prefix(&project.root)
            .unwrap_or(&spec_path)
            .display()
            .to_string();
        // Anything that stops the check (an unreadable spec, say) is "could
        // not check", exit 2, never "out of sync".
        let kind = match crate::work::tracker::configured(self.tracker, &project) {
            Ok(k) => k,
            Err(e) => return self.cannot_check(&shown, "cannot read the tracker", e.to_string()),
        };
        let check = match completion::check(&spec_path, &project.root, kind) {
            Ok(Ok(c)) => c,
            Err(e) => return self.cannot_check(&shown, "cannot check", e.to_string()),
            Ok(Err(e)) => {
                let what = match e {
                    CannotCheck::NoSpec(_) => "cannot check",
                    CannotCheck::Tracker(_) => "cannot read the tracker",
                };
                return self.cannot_check(&shown, what, e.to_string());
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
                // Information, not a finding: `in_sync` does not count them.
                "unnamed_tasks": check.unnamed.iter().map(|i| serde_json::json!({
                    "id": i.id,
                    "title": i.title,
                    "status": i.status.word(),
                })).collect::<Vec<_>>(),
            });
            outln!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            render(&shown, &check);
            render_unnamed(&check);
        }
        if check.in_sync() {
            Ok(ExitStatus::Success)
        } else {
            Ok(ExitStatus::from(1))
        }
    }
}

impl VerifySync {
    /// Anything that stops the check (an unreadable spec, say) is "could
    /// not check", exit 2, never "out of sync".
    fn cannot_check(&self, shown: &str, what: &str, e: String) -> Result<ExitStatus> {
        if self.json {
            outln!(
                "{}",
                serde_json::json!({"in_sync": null, "spec": shown, "error": e})
            );
            return Ok(ExitStatus::Usage);
        }
        Err(crate::exit::Stop::with(
            ExitStatus::Usage,
            format!("{what}: {e}"),
        ))
    }
}

/// The result as text: in sync (or nothing to compare), or each finding.
fn render(shown: &str, check: &completion::Judgement) {
    if check.in_sync() {
        match check.tracker {
            Some(t) => outln!(
                "{shown} is in sync with {t}: {} steps, {}.",
                check.spec.total(),
                check.spec.progress()
            ),
            None => outln!(
                "{shown} names no tracker tasks; nothing to compare ({}).",
                check.spec.progress()
            ),
        }
        if let Some(note) = check.epic_note() {
            outln!("{}", visible_line(&note));
        }
        return;
    }
    let against = check
        .tracker
        .map(|t| format!(" with {t}"))
        .unwrap_or_default();
    outln!(
        "{shown} is out of sync{against} ({}):",
        crate::output::counted(check.findings.len() as u64, "problem", "problems")
    );
    for f in &check.findings {
        outln!("  {}", visible_line(&f.to_string()));
    }
}

/// At most this many unnamed tasks are listed in text (`--json` has all).
const UNNAMED_SHOWN: usize = 20;

/// The tracker's open tasks no step names, after the verdict: information
/// (they change no exit status), with what to do about each.
fn render_unnamed(check: &completion::Judgement) {
    let (Some(t), false) = (check.tracker, check.unnamed.is_empty()) else {
        return;
    };
    outln!(
        "{} in {t} no step names (not counted against the sync: a step's line names its task as [id] at its end; or close the task if it is not this spec's work):",
        crate::output::counted(check.unnamed.len() as u64, "open task", "open tasks")
    );
    for i in check.unnamed.iter().take(UNNAMED_SHOWN) {
        outln!("  {} {}", visible_line(&i.id), visible_line(&i.title));
    }
    if check.unnamed.len() > UNNAMED_SHOWN {
        outln!(
            "  ... and {} more (`ralph verify-sync --json` lists them all)",
            check.unnamed.len() - UNNAMED_SHOWN
        );
    }
}
