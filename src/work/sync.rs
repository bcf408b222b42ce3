//! Does the spec agree with the tracker, step by step? Each step is compared
//! with *its own* task (never totals, where two wrong boxes cancel out):
//! checked ↔ closed, unchecked ↔ not closed.

use std::collections::HashMap;

use serde::Serialize;

use crate::work::spec::{Spec, Step};
use crate::work::tracker::Snapshot;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// A stable name for scripts: `checked-but-open`, `unchecked-but-closed`,
    /// `unknown-task`, `no-task`, `unread-task-form`, `duplicate-task`,
    /// `not-in-spec`, `unknown-epic`.
    pub kind: &'static str,
    pub line: Option<usize>,
    pub task: Option<String>,
    pub message: String,
}

pub fn compare(spec: &Spec, snap: &Snapshot) -> Vec<Finding> {
    let by_id: HashMap<String, &crate::work::tracker::Issue> = snap
        .issues
        .iter()
        .map(|i| (i.id.to_ascii_lowercase(), i))
        .collect();
    let mut out = Vec::new();
    let mut first_use: HashMap<String, usize> = HashMap::new();
    let finding = |kind, step: &Step, message: String| Finding {
        kind,
        line: Some(step.line),
        task: step.task.clone().or_else(|| step.other_form.clone()),
        message,
    };

    for step in &spec.steps {
        // `**bd-1**`, `bd-1:` or `(bd-1)`: the step's task if the tracker
        // knows that id; else said, never passed over.
        let known_other = step
            .other_form
            .as_ref()
            .filter(|id| by_id.contains_key(&id.to_ascii_lowercase()));
        let Some(task) = step.task.as_ref().or(known_other) else {
            match &step.other_form {
                Some(id) => out.push(finding(
                    "unread-task-form",
                    step,
                    format!(
                        "{}: names {id}, which the tracker does not know; if it is the step's task, \
                         write it as [{id}] at the end of the line",
                        step.describe()
                    ),
                )),
                None => out.push(finding(
                    "no-task",
                    step,
                    format!("{}: the step names no tracker task", step.describe()),
                )),
            }
            continue;
        };
        let key = task.to_ascii_lowercase();
        if let Some(first) = first_use.insert(key.clone(), step.line) {
            out.push(finding(
                "duplicate-task",
                step,
                format!(
                    "{}: task {task} is also the task of line {first}",
                    step.describe()
                ),
            ));
        }
        match by_id.get(&key) {
            None => out.push(finding(
                "unknown-task",
                step,
                format!(
                    "{}: task {task} is not known to the tracker",
                    step.describe()
                ),
            )),
            Some(issue) if step.checked && !issue.is_closed() => out.push(finding(
                "checked-but-open",
                step,
                format!(
                    "{}: checked, but task {task} is {}",
                    step.describe(),
                    issue.status
                ),
            )),
            Some(issue) if !step.checked && issue.is_closed() => out.push(finding(
                "unchecked-but-closed",
                step,
                format!(
                    "{}: not checked, but task {task} is closed",
                    step.describe()
                ),
            )),
            Some(_) => {}
        }
    }

    if let Some((line, epic)) = &spec.epic {
        if snap.epic_missing {
            out.push(Finding {
                kind: "unknown-epic",
                line: Some(*line),
                task: Some(epic.clone()),
                message: format!("line {line}: epic {epic} is not known to the tracker"),
            });
        }
        // In the tracker's id order (`e.2` before `e.10`), not in whatever
        // order it listed them, so that reports are stable.
        let mut unreferenced: Vec<&String> = snap
            .epic_children
            .iter()
            .flatten()
            .filter(|c| !first_use.contains_key(&c.to_ascii_lowercase()))
            .collect();
        unreferenced.sort_by_cached_key(|c| natural_id_key(c));
        for child in unreferenced {
            let title = by_id
                .get(&child.to_ascii_lowercase())
                .map(|i| i.title.as_str())
                .unwrap_or("");
            out.push(Finding {
                kind: "not-in-spec",
                line: None,
                task: Some(child.clone()),
                message: format!(
                    "task {child} ({title}) of epic {epic} is not referenced by any step"
                ),
            });
        }
    }
    out
}

/// Sorts ids segment by segment around the dots, numbers as numbers.
fn natural_id_key(id: &str) -> Vec<(u64, String)> {
    id.split('.')
        .map(|p| match p.parse::<u64>() {
            Ok(n) => (n, String::new()),
            Err(_) => (u64::MAX, p.to_ascii_lowercase()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::spec::parse;
    use crate::work::tracker::Issue;

    #[test]
    fn ids_sort_with_numbers_as_numbers() {
        let mut ids = vec!["e-1.10", "e-1.2", "E-1.1", "e-1.2.1", "d-9"];
        ids.sort_by_cached_key(|id| natural_id_key(id));
        assert_eq!(ids, vec!["d-9", "E-1.1", "e-1.2", "e-1.2.1", "e-1.10"]);
    }

    fn issue(id: &str, status: &str) -> Issue {
        Issue {
            id: id.into(),
            status: status.into(),
            title: format!("title of {id}"),
            parent: None,
        }
    }

    fn kinds(f: &[Finding]) -> Vec<(&str, Option<usize>)> {
        f.iter().map(|f| (f.kind, f.line)).collect()
    }

    #[test]
    fn in_sync_means_each_step_matches_its_own_task() {
        let spec = parse("- [x] a [t-1]\n- [ ] b [t-2]\n- [ ] c [t-3]\n");
        let snap = Snapshot {
            issues: vec![
                issue("t-1", "closed"),
                issue("t-2", "open"),
                issue("t-3", "in_progress"),
            ],
            ..Default::default()
        };
        assert!(compare(&spec, &snap).is_empty());
    }

    #[test]
    fn ids_in_other_forms_are_read_when_known_and_reported_when_not() {
        let spec = parse(
            "- [x] bd-1: foundation\n- [ ] **bd-2** parser\n- [ ] ship (bd-3)\n- [ ] docs (bd-9)\n",
        );
        let snap = Snapshot {
            issues: vec![
                issue("bd-1", "closed"),
                issue("bd-2", "closed"),
                issue("bd-3", "open"),
            ],
            ..Default::default()
        };
        let f = compare(&spec, &snap);
        assert_eq!(
            kinds(&f),
            vec![
                ("unchecked-but-closed", Some(2)),
                ("unread-task-form", Some(4))
            ]
        );
        assert!(
            f[1].message.contains("write it as [bd-9]"),
            "{}",
            f[1].message
        );
    }

    #[test]
    fn two_wrong_boxes_do_not_cancel_out() {
        // Counts agree (1 checked, 1 closed) but each step disagrees with its task.
        let spec = parse("- [x] a [t-1]\n- [ ] b [t-2]\n");
        let snap = Snapshot {
            issues: vec![issue("t-1", "open"), issue("t-2", "closed")],
            ..Default::default()
        };
        let f = compare(&spec, &snap);
        assert_eq!(
            kinds(&f),
            vec![
                ("checked-but-open", Some(1)),
                ("unchecked-but-closed", Some(2))
            ]
        );
        assert_eq!(
            f[0].message,
            "line 1: a [t-1]: checked, but task t-1 is open"
        );
    }

    #[test]
    fn unknown_missing_duplicate_and_unreferenced() {
        let spec = parse("Epic: [e-1]\n- [ ] a [t-9]\n- [ ] b\n- [ ] c [T-2]\n- [ ] d [t-2]\n");
        let snap = Snapshot {
            issues: vec![
                issue("e-1", "open"),
                issue("t-2", "open"),
                issue("t-3", "open"),
            ],
            epic_children: Some(vec!["t-2".into(), "t-3".into()]),
            epic_missing: false,
        };
        let f = compare(&spec, &snap);
        assert_eq!(
            kinds(&f),
            vec![
                ("unknown-task", Some(2)),
                ("no-task", Some(3)),
                ("duplicate-task", Some(5)),
                ("not-in-spec", None)
            ]
        );
        assert_eq!(f[3].task.as_deref(), Some("t-3"));
        assert!(f[3].message.contains("title of t-3"));
    }

    #[test]
    fn unknown_epic_is_reported() {
        let spec = parse("Epic: [e-404]\n- [ ] a [t-1]\n");
        let snap = Snapshot {
            issues: vec![issue("t-1", "open")],
            epic_children: Some(vec![]),
            epic_missing: true,
        };
        assert_eq!(
            kinds(&compare(&spec, &snap)),
            vec![("unknown-epic", Some(1))]
        );
    }
}
