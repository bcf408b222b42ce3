//! Can the loop ever finish here? What `ralph doctor` reports and `ralph
//! loop` checks before its first session: a spec still ralph's template, a
//! tracker that is missing or not set up, tasks the tracker does not know, a
//! gate program that does not exist. Each would let paid sessions run to a
//! COMPLETE that can never hold. Pure: the caller reads the files and asks
//! the tracker (`completion::check`) and `which`.

use crate::work::completion::{CannotCheck, Judgement};
use crate::work::sync::Problem;
use crate::work::tracker::TrackerError;

/// Whether a step's title is one of `ralph init`'s placeholders.
pub fn is_placeholder(title: &str) -> bool {
    PLACEHOLDERS.iter().any(|p| title.contains(p))
}

/// The placeholder steps of `ralph init`'s spec.
const PLACEHOLDERS: [&str; 2] = [
    "Describe the first step here",
    "Describe the second step here",
];

/// Something between the project and a finished loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hindrance {
    /// No spec, or one that cannot be read.
    NoSpec(String),
    /// The spec names tasks, but there is no tracker to ask.
    NoTracker(String),
    /// The tracker is there but cannot answer (not initialised, say).
    TrackerFails(String),
    /// The spec is still `ralph init`'s template.
    Template,
    /// The spec has no checkbox steps.
    NoSteps,
    /// Tasks the spec names that the tracker does not know.
    UnknownTasks(Vec<String>),
    /// Gate programs that do not exist here.
    GateMissing(Vec<String>),
    /// Worth knowing, but no bar to finishing (the message).
    Warning(String),
}

impl Hindrance {
    /// Would the loop never finish with it (refused before any session)?
    pub fn fatal(&self) -> bool {
        !matches!(self, Hindrance::Warning(_))
    }

    /// What to do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            Hindrance::NoSpec(_) => {
                "`ralph init` (or /ralph-setup in Claude Code), then write your steps"
            }
            Hindrance::NoTracker(_) => crate::work::tracker::INSTALL_HINT,
            Hindrance::TrackerFails(_) => {
                "`br init` in the project, then `br create \"<step>\" --type task` for each step and write the id it prints at the end of the step's line"
            }
            Hindrance::Template => {
                "write your own steps in .ralph/spec.md (or run /ralph-setup in Claude Code)"
            }
            Hindrance::NoSteps => {
                "add steps as `- [ ] **1** what to do [task-id]` lines to .ralph/spec.md"
            }
            Hindrance::UnknownTasks(_) => {
                "create them (`br create \"<step>\" --type task`) and write the ids br prints in the spec, or correct the ids (`br list` shows them)"
            }
            Hindrance::GateMissing(_) => {
                "install them, or change the gate (--gate / [gate] commands in .ralph/config.toml)"
            }
            Hindrance::Warning(_) => "`ralph verify-sync` shows the details",
        }
    }
}

impl std::fmt::Display for Hindrance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Hindrance::NoSpec(m) | Hindrance::NoTracker(m) | Hindrance::Warning(m) => {
                write!(f, "{m}")
            }
            Hindrance::TrackerFails(m) => write!(f, "the tracker cannot answer: {m}"),
            Hindrance::Template => write!(
                f,
                "the spec is still ralph init's template (its steps are placeholders)"
            ),
            Hindrance::NoSteps => write!(f, "the spec has no steps (no `- [ ]` checkboxes)"),
            Hindrance::UnknownTasks(ids) => write!(
                f,
                "the tracker does not know {} named in the spec: {}",
                if ids.len() == 1 {
                    "the task"
                } else {
                    "the tasks"
                },
                ids.join(", ")
            ),
            Hindrance::GateMissing(p) => {
                write!(f, "the gate runs programs not found here: {}", p.join(", "))
            }
        }
    }
}

/// What stands between this project and a finished loop, fatal ones first.
pub fn hindrances(
    checked: &Result<Judgement, CannotCheck>,
    gate_missing: &[String],
) -> Vec<Hindrance> {
    let mut out = Vec::new();
    match checked {
        Err(CannotCheck::NoSpec(m)) => out.push(Hindrance::NoSpec(m.clone())),
        Err(CannotCheck::Tracker(TrackerError::Missing(m))) => out.push(Hindrance::NoTracker(
            format!("the spec names tracker tasks, but {m}"),
        )),
        Err(CannotCheck::Tracker(TrackerError::Failed(m))) => {
            out.push(Hindrance::TrackerFails(m.clone()))
        }
        Ok(j) => of_judgement(j, &mut out),
    }
    if !gate_missing.is_empty() {
        out.push(Hindrance::GateMissing(gate_missing.to_vec()));
    }
    out.sort_by_key(|h| !h.fatal());
    out
}

fn of_judgement(j: &Judgement, out: &mut Vec<Hindrance>) {
    let steps = &j.spec.steps;
    if steps.is_empty() {
        out.push(Hindrance::NoSteps);
    } else if steps.iter().any(|s| is_placeholder(&s.title)) {
        out.push(Hindrance::Template);
    }
    let unknown: Vec<String> = j
        .findings
        .iter()
        .filter_map(|f| match &f.problem {
            Problem::UnknownTask { task, .. } => Some(task.clone()),
            _ => None,
        })
        .collect();
    if !unknown.is_empty() {
        out.push(Hindrance::UnknownTasks(unknown));
    }
    // The rest sessions can mend (a box, a task's status, a missing id).
    for f in &j.findings {
        if matches!(
            f.problem,
            Problem::BrokenCheckbox { .. }
                | Problem::NoTask { .. }
                | Problem::UnreadTaskForm { .. }
                | Problem::DuplicateTask { .. }
                | Problem::UnknownEpic { .. }
        ) {
            out.push(Hindrance::Warning(f.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::spec;
    use crate::work::sync::Finding;

    fn judged(text: &str, problems: Vec<Problem>) -> Result<Judgement, CannotCheck> {
        let findings = problems
            .into_iter()
            .map(|problem| Finding {
                problem,
                line: Some(3),
                task: None,
            })
            .collect();
        Ok(Judgement {
            spec: spec::parse(text),
            tracker: Some("br"),
            findings,
            unnamed: Vec::new(),
            epic_open: None,
        })
    }

    #[test]
    fn what_can_never_finish_is_fatal_and_comes_first() {
        let template = include_str!("../templates/spec.md");
        assert_eq!(
            hindrances(&judged(template, vec![]), &[]),
            [Hindrance::Template]
        );
        assert_eq!(
            hindrances(&judged("# nothing\n", vec![]), &[]),
            [Hindrance::NoSteps]
        );
        let unknown = Problem::UnknownTask {
            step: "line 3: x".into(),
            task: "bd-9".into(),
        };
        let no_task = Problem::NoTask {
            step: "line 4: y".into(),
        };
        let h = hindrances(
            &judged("- [ ] x [bd-9]\n- [ ] y\n", vec![no_task, unknown]),
            &["pytest".to_string()],
        );
        assert_eq!(
            h.iter()
                .map(|h| (h.fatal(), h.to_string()))
                .collect::<Vec<_>>(),
            [
                (
                    true,
                    "the tracker does not know the task named in the spec: bd-9".to_string()
                ),
                (
                    true,
                    "the gate runs programs not found here: pytest".to_string()
                ),
                (
                    false,
                    "line 4: y: the step names no tracker task".to_string()
                ),
            ]
        );
        for (e, fatal) in [
            (CannotCheck::NoSpec("no spec at x".into()), "no spec at x"),
            (
                CannotCheck::Tracker(TrackerError::Missing("`br` is not on PATH".into())),
                "the spec names tracker tasks, but `br` is not on PATH",
            ),
            (
                CannotCheck::Tracker(TrackerError::Failed("br: not initialized".into())),
                "the tracker cannot answer: br: not initialized",
            ),
        ] {
            let h = hindrances(&Err(e), &[]);
            assert_eq!(
                (h.len(), h[0].fatal(), h[0].to_string().as_str()),
                (1, true, fatal)
            );
            assert!(!h[0].fix().is_empty());
        }
        for (h, fix_says) in [
            (Hindrance::NoSpec(String::new()), "`ralph init`"),
            (
                Hindrance::NoTracker(String::new()),
                "cargo install beads_rust",
            ),
            (
                Hindrance::TrackerFails(String::new()),
                "`br init` in the project",
            ),
            (Hindrance::Template, "write your own steps"),
            (Hindrance::NoSteps, "add steps as"),
            (Hindrance::UnknownTasks(vec![]), "create them"),
            (Hindrance::GateMissing(vec![]), "install them"),
            (Hindrance::Warning(String::new()), "ralph verify-sync"),
        ] {
            assert!(h.fix().contains(fix_says), "{h:?}: {}", h.fix());
        }
        // Work in progress is no hindrance: open steps, a task not yet closed.
        let open = Problem::CheckedButOpen {
            step: "line 1: x".into(),
            task: "bd-1".into(),
            status: crate::work::tracker::Status::Open,
        };
        assert_eq!(
            hindrances(&judged("- [x] x [bd-1]\n- [ ] y [bd-2]\n", vec![open]), &[]),
            []
        );
    }
}
