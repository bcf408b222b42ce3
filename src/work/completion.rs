//! Is the work done? The one check behind `ralph complete`, `ralph
//! verify-sync` and the loop's completion gate: every step checked, no
//! broken checkbox, and each step agreeing with its own tracker task.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::fsutil;
use crate::work::spec::{self, Spec};
use crate::work::sync::{self, Finding};
use crate::work::tracker::{self, Kind, TrackerError};

#[derive(Debug, Serialize)]
pub struct Check {
    pub spec: Spec,
    /// The tracker consulted; `None` when the spec names no tasks.
    pub tracker: Option<&'static str>,
    /// Disagreements with the tracker, and broken checkboxes.
    pub findings: Vec<Finding>,
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

impl Check {
    pub fn in_sync(&self) -> bool {
        self.findings.is_empty()
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
        out.extend(self.findings.iter().map(|f| f.message.clone()));
        out
    }

    pub fn is_complete(&self) -> bool {
        self.blockers().is_empty()
    }
}

pub fn check(
    spec_path: &Path,
    project_root: &Path,
    kind: Option<Kind>,
) -> Result<Result<Check, CannotCheck>> {
    let Some(text) = fsutil::read_optional(spec_path)? else {
        return Ok(Err(CannotCheck::NoSpec(format!(
            "no spec at {} (write one with /ralph-setup, or `ralph init`)",
            spec_path.display()
        ))));
    };
    let spec = spec::parse(&text);
    let mut findings: Vec<Finding> = spec
        .problems
        .iter()
        .map(|p| Finding {
            kind: "broken-checkbox",
            line: Some(p.line),
            task: None,
            message: format!("line {}: {}", p.line, p.message),
        })
        .collect();
    let mut tracker_name = None;
    if spec.references_tasks() {
        let tracker = match tracker::detect(kind, project_root) {
            Ok(t) => t,
            Err(e) => return Ok(Err(CannotCheck::Tracker(e))),
        };
        let snap = match tracker.snapshot(spec.epic.as_ref().map(|(_, e)| e.as_str())) {
            Ok(s) => s,
            Err(e) => return Ok(Err(CannotCheck::Tracker(e))),
        };
        tracker_name = Some(tracker.name());
        findings.extend(sync::compare(&spec, &snap));
    }
    // In file order; findings about no particular line (unreferenced tasks) last.
    findings.sort_by_key(|f| f.line.unwrap_or(usize::MAX));
    Ok(Ok(Check {
        spec,
        tracker: tracker_name,
        findings,
    }))
}
