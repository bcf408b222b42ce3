//! Is the work done? The one check behind `ralph complete`, `ralph
//! verify-sync` and the loop's completion gate: every step checked, no
//! broken checkbox, and each step agreeing with its own tracker task.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::config::Kind;
use crate::fsutil;
use crate::work::spec::{self, Spec};
use crate::work::sync::{self, Finding, Problem};
use crate::work::tracker::{self, TrackerError};

#[derive(Debug, Serialize)]
pub struct Judgement {
    pub spec: Spec,
    /// The tracker consulted; `None` when the spec names no tasks.
    pub tracker: Option<&'static str>,
    /// Disagreements with the tracker, and broken checkboxes.
    pub findings: Vec<Finding>,
    /// The tracker's open tasks that no step names: information, no
    /// finding (`sync::unnamed_tasks`). Only `verify-sync` shows them.
    #[serde(skip)]
    pub unnamed: Vec<crate::work::tracker::Issue>,
    /// The spec's epic, open though all its tasks are closed
    /// (`sync::epic_left_open`): for the user to close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epic_open: Option<String>,
}

/// Why the check could not be made (exit 2 for verify-sync).
#[derive(Debug)]
pub enum CannotCheck {
    NoSpec(String),
    Tracker(TrackerError),
}

impl std::fmt::Display for CannotCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CannotCheck::NoSpec(m) => write!(f, "{m}"),
            CannotCheck::Tracker(e) => write!(f, "{e}"),
        }
    }
}

impl Judgement {
    pub fn in_sync(&self) -> bool {
        self.findings.is_empty()
    }

    /// How to close the epic left open, if one is: ralph does not close it
    /// (a loop's sessions close their steps' tasks; the epic is no step's).
    pub fn epic_note(&self) -> Option<String> {
        let epic = self.epic_open.as_ref()?;
        let tracker = self.tracker.unwrap_or("br");
        Some(format!(
            "note: epic {epic} is still open, though every task of it is closed: `{tracker} close {epic}` closes it"
        ))
    }

    /// Everything that stands between the spec and "done", one line each.
    pub fn blockers(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if self.spec.total() == 0 {
            out.push("the spec has no steps (no `- [ ]` checkboxes)".into());
        }
        out.extend(
            self.spec
                .steps
                .iter()
                .filter(|s| !s.checked)
                .map(|s| format!("open step: {}", s.describe())),
        );
        out.extend(self.findings.iter().map(ToString::to_string));
        out
    }

    pub fn is_complete(&self) -> bool {
        self.blockers().is_empty()
    }
}

/// The completion rule, in one place: the work is done when the spec and
/// the tracker agree, and then the project's own checks (the gate) pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Not done: what stands in the way, one line each.
    Blocked(Vec<String>),
    /// Spec and tracker agree; the gate decides.
    RunGate { steps: usize },
    /// Done: they agree and there is no gate.
    Holds { steps: usize },
}

pub fn rule(checked: &Result<Judgement, CannotCheck>, gate: bool) -> Rule {
    match checked {
        Err(e) => Rule::Blocked(vec![format!("cannot check: {e}")]),
        Ok(j) if !j.is_complete() => Rule::Blocked(j.blockers()),
        Ok(j) if gate => Rule::RunGate {
            steps: j.spec.total(),
        },
        Ok(j) => Rule::Holds {
            steps: j.spec.total(),
        },
    }
}

pub fn check(
    spec_path: &Path,
    project_root: &Path,
    kind: Option<Kind>,
) -> Result<Result<Judgement, CannotCheck>> {
    check_against(spec_path, Some((project_root, kind)))
}

/// What a run holds a finished step to: the completion part of the
/// settings.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The project's own checks, if it has any.
    pub gate: Option<crate::work::gate::Gate>,
    /// The independent reviewer, if the run has one (`[review]`, `--review`).
    pub review: Option<crate::work::review::Reviewer>,
    /// `[gate] protect` / `--protect`: globs of files sessions may not change.
    pub protect: Vec<String>,
    /// Commit what a session left uncommitted (`--commit auto`).
    pub commit_auto: bool,
}

/// The check as a run makes it. Tasks that the run's pull request closes
/// (GitHub's issues, `--pr`: `Closes #N`) stay open until it is merged, so
/// there the boxes are the word.
pub fn check_run(
    spec_path: &Path,
    project_root: &Path,
    tracker: Option<Kind>,
    closes_on_merge: bool,
) -> Result<Result<Judgement, CannotCheck>> {
    if tracker::caps(tracker).ralph_closes && closes_on_merge {
        return check_boxes(spec_path);
    }
    check(spec_path, project_root, tracker)
}

/// The check of the spec alone, no tracker asked (`tracker::markdown`):
/// for a loop's session whose tasks ralph closes (GitHub's issues), which
/// the loop closes (and checks) once the session is over.
pub fn check_boxes(spec_path: &Path) -> Result<Result<Judgement, CannotCheck>> {
    check_against(spec_path, None)
}

fn check_against(
    spec_path: &Path,
    tracker: Option<(&Path, Option<Kind>)>,
) -> Result<Result<Judgement, CannotCheck>> {
    let Some(text) = fsutil::read_optional(spec_path)? else {
        return Ok(Err(CannotCheck::NoSpec(format!(
            "no spec at {} (write one with /ralph-setup, or `ralph init`)",
            spec_path.display()
        ))));
    };
    Ok(text_against(&text, tracker))
}

/// The same check of a spec already read (a draft, read without following
/// a link).
pub fn check_text(
    text: &str,
    project_root: &Path,
    kind: Option<Kind>,
) -> Result<Judgement, CannotCheck> {
    text_against(text, Some((project_root, kind)))
}

fn text_against(
    text: &str,
    tracker: Option<(&Path, Option<Kind>)>,
) -> Result<Judgement, CannotCheck> {
    let spec = spec::parse(text);
    let mut findings: Vec<Finding> = spec
        .problems
        .iter()
        .map(|p| Finding {
            problem: Problem::BrokenCheckbox {
                what: p.message.clone(),
            },
            line: Some(p.line),
            task: None,
        })
        .collect();
    let mut tracker_name = None;
    let mut unnamed = Vec::new();
    let mut epic_open = None;
    // Issues (`[#12]`) are tasks of the GitHub tracker only: with beads
    // (or none) such a step is checked by its box, as it always was.
    let issue_tasks = tracker.is_some_and(|(_, k)| tracker::caps(k).issue_tasks);
    let compared = if issue_tasks {
        spec.clone()
    } else {
        spec.without_issue_tasks()
    };
    if compared.references_tasks()
        && let Some((project_root, kind)) = tracker
    {
        let tracker = match tracker::open(kind, project_root) {
            Ok(t) => t,
            Err(e) => return Err(CannotCheck::Tracker(e)),
        };
        let tasks: Vec<String> = compared
            .steps
            .iter()
            .filter_map(|s| s.task.clone())
            .collect();
        let epic = compared.epic.as_ref().map(|(_, e)| e.as_str());
        let snap = match tracker.snapshot(epic, &tasks) {
            Ok(s) => s,
            Err(e) => return Err(CannotCheck::Tracker(e)),
        };
        tracker_name = Some(tracker.name());
        findings.extend(sync::compare(&compared, &snap));
        unnamed = sync::unnamed_tasks(&compared, &snap);
        epic_open = sync::epic_left_open(&compared, &snap);
    }
    // In file order; findings about no particular line (unreferenced tasks) last.
    findings.sort_by_key(|f| f.line.unwrap_or(usize::MAX));
    Ok(Judgement {
        spec,
        tracker: tracker_name,
        findings,
        unnamed,
        epic_open,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(spec_text: &str, findings: Vec<Finding>) -> Judgement {
        Judgement {
            spec: spec::parse(spec_text),
            tracker: None,
            findings,
            unnamed: Vec::new(),
            epic_open: None,
        }
    }

    fn finding(line: Option<usize>) -> Finding {
        Finding {
            problem: Problem::CheckedButOpen {
                step: "step 1".into(),
                task: "bd-1".into(),
                status: tracker::Status::Open,
            },
            line,
            task: Some("bd-1".into()),
        }
    }

    #[test]
    fn complete_only_with_every_step_checked_and_nothing_found() {
        let done = judged("- [x] **1** One\n- [x] **2** Two\n", vec![]);
        assert!(done.is_complete() && done.in_sync());
        assert_eq!(done.blockers(), Vec::<String>::new());

        let open = judged("- [x] **1** One\n- [ ] **2** Two\n", vec![]);
        assert!(!open.is_complete() && open.in_sync());
        assert_eq!(open.blockers().len(), 1);
        assert!(
            open.blockers()[0].starts_with("open step: "),
            "{:?}",
            open.blockers()
        );
        assert!(open.blockers()[0].contains("Two"), "{:?}", open.blockers());

        let out_of_sync = judged("- [x] **1** One\n", vec![finding(Some(1))]);
        assert!(!out_of_sync.is_complete() && !out_of_sync.in_sync());
        assert_eq!(
            out_of_sync.blockers(),
            ["step 1: checked, but task bd-1 is open"]
        );
    }

    #[test]
    fn a_spec_without_steps_is_never_complete() {
        let empty = judged("# Spec\n\nNothing to do yet.\n", vec![]);
        assert!(!empty.is_complete());
        assert_eq!(
            empty.blockers(),
            ["the spec has no steps (no `- [ ]` checkboxes)"]
        );
    }

    #[test]
    fn blockers_list_open_steps_then_findings_each_once() {
        let c = judged(
            "- [ ] **1** One\n- [x] **2** Two\n- [ ] **3** Three\n",
            vec![finding(Some(2)), finding(None)],
        );
        let b = c.blockers();
        assert_eq!(b.len(), 4, "{b:?}");
        assert!(b[0].contains("One") && b[1].contains("Three"), "{b:?}");
        assert_eq!(&b[2..], ["step 1: checked, but task bd-1 is open"; 2]);
    }

    #[test]
    fn the_rule_is_agreement_then_the_gate() {
        let done = || Ok(judged("- [x] **1** One\n- [x] **2** Two\n", vec![]));
        assert_eq!(rule(&done(), false), Rule::Holds { steps: 2 });
        assert_eq!(rule(&done(), true), Rule::RunGate { steps: 2 });
        let open = Ok(judged("- [ ] **1** One\n", vec![]));
        assert!(matches!(rule(&open, true), Rule::Blocked(b) if b.len() == 1));
        let cannot = Err(CannotCheck::NoSpec("no spec at x".into()));
        assert_eq!(
            rule(&cannot, false),
            Rule::Blocked(vec!["cannot check: no spec at x".into()])
        );
    }

    #[test]
    fn the_check_reads_the_spec_and_says_when_there_is_none() {
        let d = tempfile::tempdir().unwrap();
        let spec = d.path().join("spec.md");
        match check(&spec, d.path(), None).unwrap() {
            Err(e @ CannotCheck::NoSpec(_)) => {
                assert!(e.to_string().starts_with("no spec at"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        // No task named: the tracker is not asked; broken boxes are found,
        // in file order.
        std::fs::write(&spec, "- [x] **1** One\n-[ ] two\n- [x] **3** Three\n").unwrap();
        let c = check(&spec, d.path(), None).unwrap().unwrap();
        assert_eq!(c.tracker, None);
        assert!(!c.is_complete());
        assert!(!c.findings.is_empty());
        assert!(
            c.findings.iter().all(|f| f.kind() == "broken-checkbox"),
            "{:?}",
            c.findings
        );
        let lines: Vec<_> = c.findings.iter().map(|f| f.line).collect();
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted);
        std::fs::write(&spec, "- [x] **1** One\n- [x] **2** Two\n").unwrap();
        assert!(check(&spec, d.path(), None).unwrap().unwrap().is_complete());
        // A GitHub issue is a task of the GitHub tracker only: with beads
        // (or none) its box is the word, and no tracker is asked.
        std::fs::write(&spec, "- [x] One [#12]\n- [x] Two [#3]\n").unwrap();
        let c = check(&spec, d.path(), Some(Kind::Br)).unwrap().unwrap();
        assert_eq!(c.tracker, None);
        assert!(c.is_complete(), "{:?}", c.findings);
        assert_eq!(c.spec.steps[0].task.as_deref(), Some("#12"));
    }
}
