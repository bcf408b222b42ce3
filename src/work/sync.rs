//! Does the spec agree with the tracker, step by step? Each step is compared
//! with *its own* task (never totals, where two wrong boxes cancel out):
//! checked ↔ closed, unchecked ↔ not closed.

use std::collections::HashMap;

use crate::work::spec::{Spec, Step};
use crate::work::tracker::{Snapshot, Status};

/// One way the spec and the tracker disagree, or a broken checkbox. Its
/// `kind` is a stable name for scripts (`ralph verify-sync --json`), the
/// whole list being `Problem::KINDS`; the finding's `Display` is the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// What the spec reader said of a line that is almost a checkbox.
    BrokenCheckbox {
        what: String,
    },
    NoTask {
        step: String,
    },
    UnreadTaskForm {
        step: String,
        id: String,
    },
    DuplicateTask {
        step: String,
        task: String,
        first: usize,
    },
    UnknownTask {
        step: String,
        task: String,
    },
    CheckedButOpen {
        step: String,
        task: String,
        status: Status,
    },
    UncheckedButClosed {
        step: String,
        task: String,
    },
    UnknownEpic {
        epic: String,
    },
    NotInSpec {
        task: String,
        title: String,
        epic: String,
    },
}

impl Problem {
    /// Every kind, as scripts see them.
    pub const KINDS: [&'static str; 9] = [
        "broken-checkbox",
        "no-task",
        "unread-task-form",
        "duplicate-task",
        "unknown-task",
        "checked-but-open",
        "unchecked-but-closed",
        "unknown-epic",
        "not-in-spec",
    ];

    pub fn kind(&self) -> &'static str {
        let i = match self {
            Problem::BrokenCheckbox { .. } => 0,
            Problem::NoTask { .. } => 1,
            Problem::UnreadTaskForm { .. } => 2,
            Problem::DuplicateTask { .. } => 3,
            Problem::UnknownTask { .. } => 4,
            Problem::CheckedButOpen { .. } => 5,
            Problem::UncheckedButClosed { .. } => 6,
            Problem::UnknownEpic { .. } => 7,
            Problem::NotInSpec { .. } => 8,
        };
        Self::KINDS[i]
    }
}

/// A problem, where it is (the spec's line; none for a task no step names)
/// and the task it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub problem: Problem,
    pub line: Option<usize>,
    pub task: Option<String>,
}

impl Finding {
    pub fn kind(&self) -> &'static str {
        self.problem.kind()
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = self.line.unwrap_or(0);
        match &self.problem {
            Problem::BrokenCheckbox { what } => write!(f, "line {line}: {what}"),
            Problem::NoTask { step } => write!(f, "{step}: the step names no tracker task"),
            Problem::UnreadTaskForm { step, id } => write!(
                f,
                "{step}: names {id}, which the tracker does not know; if it is the step's task, \
                 write it as [{id}] at the end of the line"
            ),
            Problem::DuplicateTask { step, task, first } => {
                write!(f, "{step}: task {task} is also the task of line {first}")
            }
            Problem::UnknownTask { step, task } => {
                write!(f, "{step}: task {task} is not known to the tracker")
            }
            Problem::CheckedButOpen { step, task, status } => {
                write!(f, "{step}: checked, but task {task} is {status}")
            }
            Problem::UncheckedButClosed { step, task } => {
                write!(f, "{step}: not checked, but task {task} is closed")
            }
            Problem::UnknownEpic { epic } => {
                write!(f, "line {line}: epic {epic} is not known to the tracker")
            }
            Problem::NotInSpec { task, title, epic } => write!(
                f,
                "task {task} ({title}) of epic {epic} is not referenced by any step"
            ),
        }
    }
}

/// As scripts read it: `{"kind", "line", "task", "message"}`.
impl serde::Serialize for Finding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Finding", 4)?;
        st.serialize_field("kind", self.kind())?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("task", &self.task)?;
        st.serialize_field("message", &self.to_string())?;
        st.end()
    }
}

type ById<'a> = HashMap<String, &'a crate::work::tracker::Issue>;

pub fn compare(spec: &Spec, snap: &Snapshot) -> Vec<Finding> {
    let by_id: ById = snap
        .issues
        .iter()
        .map(|i| (i.id.to_ascii_lowercase(), i))
        .collect();
    let mut out = Vec::new();
    let mut first_use: HashMap<String, usize> = HashMap::new();
    for step in &spec.steps {
        let finding = |problem: Problem| Finding {
            problem,
            line: Some(step.line),
            task: step.task.clone().or_else(|| step.other_form.clone()),
        };
        // `**bd-1**`, `bd-1:` or `(bd-1)`: the step's task if the tracker
        // knows that id; else said, never passed over.
        let known_other = step
            .other_form
            .as_ref()
            .filter(|id| by_id.contains_key(&id.to_ascii_lowercase()));
        let Some(task) = step.task.as_ref().or(known_other) else {
            out.push(finding(match &step.other_form {
                Some(id) => Problem::UnreadTaskForm {
                    step: step.describe(),
                    id: id.clone(),
                },
                None => Problem::NoTask {
                    step: step.describe(),
                },
            }));
            continue;
        };
        if let Some(first) = first_use.insert(task.to_ascii_lowercase(), step.line) {
            out.push(finding(Problem::DuplicateTask {
                step: step.describe(),
                task: task.clone(),
                first,
            }));
        }
        out.extend(step_against_task(step, task, &by_id).map(finding));
    }
    out.extend(epic_findings(spec, snap, &by_id, &first_use));
    out
}

/// The tracker's open tasks that no step names, for the user to see (they
/// make no step, so no session works on them): listed by `verify-sync` as
/// information, never as a failure, since a tracker may rightly hold tasks
/// of other work. Closed ones are left out (finished work, often of
/// earlier specs), and so are the spec's epic and its children (the epic's
/// own findings say those), and epics (br's parents: an id that another
/// id continues with a dot, or any task's `parent`). In the tracker's id
/// order.
pub fn unnamed_tasks(spec: &Spec, snap: &Snapshot) -> Vec<crate::work::tracker::Issue> {
    let lower = |s: &str| s.to_ascii_lowercase();
    let mut named: std::collections::HashSet<String> = spec
        .steps
        .iter()
        .flat_map(|s| [s.task.as_deref(), s.other_form.as_deref()])
        .flatten()
        .map(lower)
        .collect();
    if let Some((_, epic)) = &spec.epic {
        named.insert(lower(epic));
    }
    named.extend(snap.epic_children.iter().flatten().map(|c| lower(c)));
    let parents: std::collections::HashSet<String> = snap
        .issues
        .iter()
        .filter_map(|i| i.parent.as_deref())
        .map(lower)
        .chain(
            snap.issues
                .iter()
                .filter_map(|i| i.id.rsplit_once('.').map(|(p, _)| lower(p))),
        )
        .collect();
    let mut out: Vec<crate::work::tracker::Issue> = snap
        .issues
        .iter()
        .filter(|i| !i.is_closed())
        .filter(|i| !named.contains(&lower(&i.id)) && !parents.contains(&lower(&i.id)))
        .cloned()
        .collect();
    out.sort_by_cached_key(|i| natural_id_key(&i.id));
    out
}

/// A step against its task: known to the tracker, and checked exactly when
/// the task is closed.
fn step_against_task(step: &Step, task: &str, by_id: &ById) -> Option<Problem> {
    let (step_text, task_id) = (step.describe(), task.to_string());
    match by_id.get(&task.to_ascii_lowercase()) {
        None => Some(Problem::UnknownTask {
            step: step_text,
            task: task_id,
        }),
        Some(issue) if step.checked && !issue.is_closed() => Some(Problem::CheckedButOpen {
            step: step_text,
            task: task_id,
            status: issue.status.clone(),
        }),
        Some(issue) if !step.checked && issue.is_closed() => Some(Problem::UncheckedButClosed {
            step: step_text,
            task: task_id,
        }),
        Some(_) => None,
    }
}

/// The epic's own findings: the epic unknown to the tracker, and each of its
/// tasks that no step names (in the tracker's id order, `e.2` before `e.10`,
/// so reports are stable).
fn epic_findings(
    spec: &Spec,
    snap: &Snapshot,
    by_id: &HashMap<String, &crate::work::tracker::Issue>,
    first_use: &HashMap<String, usize>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some((line, epic)) = &spec.epic {
        if snap.epic_missing {
            out.push(Finding {
                problem: Problem::UnknownEpic { epic: epic.clone() },
                line: Some(*line),
                task: Some(epic.clone()),
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
                problem: Problem::NotInSpec {
                    task: child.clone(),
                    title: title.to_string(),
                    epic: epic.clone(),
                },
                line: None,
                task: Some(child.clone()),
            });
        }
    }
    out
}

/// The epic the spec names, where it is still open though it has tasks and
/// every one of them is closed: nothing closes it by itself (a session
/// closes its step's task, never the epic), so a finished plan's epic
/// would stay open for good. Not a disagreement between spec and tracker
/// (the steps agree with their tasks), so no finding: a note, with how to
/// close it.
pub fn epic_left_open(spec: &Spec, snap: &Snapshot) -> Option<String> {
    let (_, epic) = spec.epic.as_ref()?;
    let find = |id: &str| snap.issues.iter().find(|i| i.id.eq_ignore_ascii_case(id));
    let children = snap.epic_children.as_ref().filter(|c| !c.is_empty())?;
    let all_closed = children
        .iter()
        .all(|c| find(c).is_some_and(|i| i.is_closed()));
    let open = find(epic).is_some_and(|e| !e.is_closed());
    (all_closed && open).then(|| epic.clone())
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
    fn each_kind_is_named_once_and_serialised_with_its_message() {
        let mut kinds = Problem::KINDS.to_vec();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), Problem::KINDS.len());
        let f = Finding {
            problem: Problem::UnknownEpic { epic: "e-1".into() },
            line: Some(3),
            task: Some("e-1".into()),
        };
        assert_eq!(
            serde_json::to_value(&f).unwrap(),
            serde_json::json!({"kind": "unknown-epic", "line": 3, "task": "e-1",
                "message": "line 3: epic e-1 is not known to the tracker"})
        );
    }

    #[test]
    fn ids_sort_with_numbers_as_numbers() {
        let mut ids = vec!["e-1.10", "e-1.2", "E-1.1", "e-1.2.1", "d-9"];
        ids.sort_by_cached_key(|id| natural_id_key(id));
        assert_eq!(ids, vec!["d-9", "E-1.1", "e-1.2", "e-1.2.1", "e-1.10"]);
    }

    fn issue(id: &str, status: &str) -> Issue {
        Issue {
            id: id.into(),
            status: Status::parse(status),
            title: format!("title of {id}"),
            parent: None,
        }
    }

    fn kinds(f: &[Finding]) -> Vec<(&str, Option<usize>)> {
        f.iter().map(|f| (f.kind(), f.line)).collect()
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
        assert!(f[1].to_string().contains("write it as [bd-9]"), "{}", f[1]);
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
            f[0].to_string(),
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
        assert!(f[3].to_string().contains("title of t-3"));
    }

    #[test]
    fn an_open_epic_whose_tasks_are_all_closed_is_named() {
        let issue = |id: &str, status: Status| Issue {
            id: id.into(),
            status,
            title: id.into(),
            parent: None,
        };
        let snap = |epic: Status, second: Status| Snapshot {
            issues: vec![
                issue("e-1", epic),
                issue("e-1.1", Status::Closed),
                issue("e-1.2", second),
            ],
            epic_children: Some(vec!["e-1.1".into(), "e-1.2".into()]),
            epic_missing: false,
        };
        let spec = parse("Epic: [e-1]\n- [x] a [e-1.1]\n- [x] b [e-1.2]\n");
        let left = |e, s| epic_left_open(&spec, &snap(e, s));
        assert_eq!(left(Status::Open, Status::Closed).as_deref(), Some("e-1"));
        assert_eq!(left(Status::Closed, Status::Closed), None);
        assert_eq!(left(Status::Open, Status::Open), None);
        let no_children = Snapshot {
            epic_children: Some(vec![]),
            ..snap(Status::Open, Status::Closed)
        };
        assert_eq!(epic_left_open(&spec, &no_children), None);
        let no_epic = parse("- [x] a [e-1.1]\n");
        assert_eq!(
            epic_left_open(&no_epic, &snap(Status::Open, Status::Closed)),
            None
        );
        // Nothing disagrees: it is no finding.
        assert!(compare(&spec, &snap(Status::Open, Status::Closed)).is_empty());
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

    #[test]
    fn unnamed_tasks_are_the_open_ones_no_step_names_nor_the_epic_covers() {
        use crate::work::tracker::{Issue, Status};
        let issue = |id: &str, status: Status| Issue {
            id: id.into(),
            status,
            title: format!("t {id}"),
            parent: None,
        };
        let spec = crate::work::spec::parse("Epic: [e-1]\n- [ ] one [X-2]\n- [ ] **x-3** two\n");
        let snap = Snapshot {
            issues: vec![
                issue("e-1", Status::Open),
                issue("e-1.1", Status::Open),
                issue("x-2", Status::Open),
                issue("x-3", Status::Open),
                issue("x-10", Status::InProgress),
                issue("x-9", Status::Open),
                issue("x-4", Status::Closed),
                issue("o-5", Status::Open),
                issue("o-5.1", Status::Open),
            ],
            epic_children: Some(vec!["e-1.1".into()]),
            epic_missing: false,
        };
        let ids: Vec<String> = unnamed_tasks(&spec, &snap)
            .into_iter()
            .map(|i| i.id)
            .collect();
        // Not: the epic and its child, x-2 (named, in any case), x-3 (named
        // in another form), x-4 (closed), o-5 (an epic: o-5.1 is its child).
        // (In the order of the epic's own findings: dotted parts by number.)
        assert_eq!(ids, ["o-5.1", "x-10", "x-9"]);
    }
}
