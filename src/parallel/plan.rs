//! Which steps a parallel run may start now, with no I/O. With a tracker, a
//! step waits for the tasks its task depends on (br's blocking
//! dependencies) to be done and merged; without one, the spec's `##`
//! sections are phases, run one after another.

use std::collections::{BTreeMap, BTreeSet};

/// A step of the integration branch's spec, as the scheduler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub key: String,
    pub task: Option<String>,
    /// Checked in the integration branch's spec: done and merged.
    pub merged: bool,
    pub phase: usize,
}

/// How the steps' order is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    /// By task: the tasks each task waits for, and which tasks are closed.
    Tracker {
        blockers: BTreeMap<String, Vec<String>>,
        closed: BTreeSet<String>,
    },
    /// By the spec's `##` sections.
    Phases,
}

/// What the scheduler says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Next {
    /// Steps to start now, in the spec's order (at most the free slots).
    pub start: Vec<String>,
    /// Open steps that can never start in this run, and why (a blocker
    /// that is open and no step of the spec).
    pub never: Vec<(String, String)>,
}

/// Up to `slots` steps to start: open, not taken (`busy`: worked,
/// queued or given up), and free to start by `order`.
pub fn next(items: &[Item], order: &Order, busy: &BTreeSet<String>, slots: usize) -> Next {
    let mut out = Next::default();
    let open = |i: &&Item| !i.merged;
    match order {
        Order::Phases => {
            let Some(phase) = items.iter().filter(open).map(|i| i.phase).min() else {
                return out;
            };
            out.start = items
                .iter()
                .filter(open)
                .filter(|i| i.phase == phase && !busy.contains(&i.key))
                .map(|i| i.key.clone())
                .take(slots)
                .collect();
        }
        Order::Tracker { blockers, closed } => {
            let merged: BTreeMap<&str, bool> = items
                .iter()
                .filter_map(|i| Some((i.task.as_deref()?, i.merged)))
                .collect();
            for i in items.iter().filter(open) {
                let waits = i
                    .task
                    .as_ref()
                    .and_then(|t| blockers.get(t))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                // A blocker that is a step must be merged; one outside the
                // spec must be closed (someone else's to do).
                let unmet: Vec<&String> = waits
                    .iter()
                    .filter(|b| match merged.get(b.as_str()) {
                        Some(&m) => !m,
                        None => !closed.contains(*b),
                    })
                    .collect();
                let outside = unmet.iter().find(|b| !merged.contains_key(b.as_str()));
                if let Some(b) = outside {
                    out.never.push((
                        i.key.clone(),
                        format!("it waits for {b}, which is open and no step of the spec"),
                    ));
                } else if unmet.is_empty() && !busy.contains(&i.key) && out.start.len() < slots {
                    out.start.push(i.key.clone());
                }
            }
        }
    }
    out
}

/// Blockers that wait on each other (a cycle), if any: such steps would
/// never start, so the run refuses to begin.
pub fn cycle(blockers: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        t: &str,
        b: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == t) {
            let mut c = path[at..].to_vec();
            c.push(t.to_string());
            return Some(c);
        }
        if !done.insert(t.to_string()) {
            return None;
        }
        path.push(t.to_string());
        for n in b.get(t).into_iter().flatten() {
            if let Some(c) = visit(n, b, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    blockers
        .keys()
        .find_map(|t| visit(t, blockers, &mut Vec::new(), &mut done))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: &str, task: Option<&str>, merged: bool, phase: usize) -> Item {
        Item {
            key: key.into(),
            task: task.map(String::from),
            merged,
            phase,
        }
    }

    fn set(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn phases_run_one_after_another_never_a_step_twice_never_past_the_slots() {
        let items = [
            item("a", None, true, 0),
            item("b", None, false, 0),
            item("c", None, false, 1),
            item("d", None, false, 1),
            item("e", None, false, 1),
        ];
        let n = |busy: &[&str], slots| next(&items, &Order::Phases, &set(busy), slots).start;
        assert_eq!(n(&[], 4), ["b"], "phase 1 waits for phase 0");
        assert_eq!(n(&["b"], 4), Vec::<String>::new(), "b is being worked");
        let mut later = items.clone();
        later[1].merged = true;
        let n = |busy: &[&str], slots| next(&later, &Order::Phases, &set(busy), slots).start;
        assert_eq!(n(&[], 2), ["c", "d"]);
        assert_eq!(n(&["c"], 2), ["d", "e"]);
    }

    #[test]
    fn a_task_starts_once_every_blocker_is_merged_or_closed_outside_the_spec() {
        let items = [
            item("A", Some("t-a"), false, 0),
            item("B", Some("t-b"), false, 0),
            item("C", Some("t-c"), false, 0),
            item("D", None, false, 0),
        ];
        let blockers: BTreeMap<String, Vec<String>> = [
            (
                "t-c".to_string(),
                vec!["t-a".to_string(), "t-b".to_string()],
            ),
            ("t-b".to_string(), vec!["x-1".to_string()]),
        ]
        .into_iter()
        .collect();
        let order = |closed: &[&str]| Order::Tracker {
            blockers: blockers.clone(),
            closed: set(closed),
        };
        let got = next(&items, &order(&[]), &set(&[]), 9);
        assert_eq!(got.start, ["A", "D"]);
        assert_eq!(got.never.len(), 1, "{got:?}");
        assert!(got.never[0].1.contains("x-1"), "{got:?}");
        let got = next(&items, &order(&["x-1"]), &set(&["A"]), 9);
        assert_eq!(got.start, ["B", "D"], "C waits for A and B to be merged");
        let mut merged = items.clone();
        merged[0].merged = true;
        merged[1].merged = true;
        // A task closed but not merged yet does not free C: merged is the word.
        let got = next(&merged, &order(&["x-1"]), &set(&[]), 9);
        assert_eq!(got.start, ["C", "D"]);
        // Never past the free slots: the first ready in the spec's order.
        let got = next(&merged, &order(&["x-1"]), &set(&[]), 1);
        assert_eq!(got.start, ["C"]);
        assert!(
            next(&merged, &order(&["x-1"]), &set(&[]), 0)
                .start
                .is_empty()
        );
    }

    #[test]
    fn a_cycle_of_blockers_is_found() {
        let b = |pairs: &[(&str, &str)]| {
            let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (t, on) in pairs {
                m.entry(t.to_string()).or_default().push(on.to_string());
            }
            m
        };
        assert_eq!(cycle(&b(&[("a", "b"), ("b", "c")])), None);
        let c = cycle(&b(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap();
        assert_eq!(c.first(), c.last(), "{c:?}");
        assert_eq!(c.len(), 4);
    }
}
