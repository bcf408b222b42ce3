//! `ralph add`: a new step in the spec, where the user asked, with the next
//! free label and its task's id. Pure: the spec's text in, the new text out.

use crate::work::spec::{self, Step};

/// Where the new step goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Right after the step with this label.
    After(String),
    /// In phase N: before its review step (`N.R`), else after its last step.
    Phase(String),
    /// Before the review step of the last phase, else after the last step.
    Default,
}

/// The title as one well-formed step's text: one line, no control
/// characters, and no brackets (a `[...]` at its end would read as a task
/// id, or hide the real one).
pub fn clean_title(title: &str) -> String {
    let one_line: String = title
        .chars()
        .map(|c| match c {
            '[' => '(',
            ']' => ')',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    one_line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` with the step added: its label and the new text. An error says
/// what is wrong with the place asked.
pub fn insert(
    text: &str,
    title: &str,
    task: Option<&str>,
    place: &Place,
) -> Result<(String, String), String> {
    let spec = spec::parse(text);
    let steps = &spec.steps;
    let (mut anchor, before, phase) = place_of(steps, place)?;
    let mut label = next_label(steps, phase.as_deref());
    if let (Place::After(_), Some(a)) = (place, anchor) {
        (anchor, label) = after_in_order(steps, a, label);
    }
    let mut line = format!("- [ ] **{label}** {}", clean_title(title));
    if let Some(id) = task {
        line.push_str(&format!(" [{id}]"));
    }
    let mut lines: Vec<&str> = text.lines().collect();
    let at = match (anchor, before) {
        (Some(a), _) => a.line,
        (None, Some(b)) => b.line - 1,
        (None, None) => lines.len(),
    };
    // A spec without steps: after its text, with a blank line before.
    let blank = steps.is_empty() && lines.last().is_some_and(|l| !l.trim().is_empty());
    let mut new: Vec<String> = lines.drain(..at).map(String::from).collect();
    if blank {
        new.push(String::new());
    }
    new.push(line);
    new.extend(lines.into_iter().map(String::from));
    Ok((new.join("\n") + "\n", label))
}

/// The step the new one goes after (or before, when it goes before a
/// review step), and the phase it joins.
type Spot<'a> = (Option<&'a Step>, Option<&'a Step>, Option<String>);

fn place_of<'a>(steps: &'a [Step], place: &Place) -> Result<Spot<'a>, String> {
    let phase_of = |s: &Step| {
        let (p, _) = s.label.as_deref()?.split_once('.')?;
        Some(p.to_string())
    };
    let is_review = |s: &Step| {
        s.label
            .as_deref()
            .is_some_and(|l| l.ends_with(".R") || l.ends_with(".r"))
    };
    Ok(match place {
        Place::After(label) => {
            let s = steps
                .iter()
                .find(|s| s.label.as_deref() == Some(label.as_str()))
                .ok_or_else(|| format!("--after {label}: no step has that label"))?;
            (Some(s), None, phase_of(s))
        }
        Place::Phase(n) => {
            let in_phase: Vec<&Step> = steps
                .iter()
                .filter(|s| phase_of(s).as_deref() == Some(n.as_str()))
                .collect();
            if in_phase.is_empty() {
                return Err(format!("--phase {n}: no step is labelled {n}.something"));
            }
            match in_phase.iter().find(|s| is_review(s)) {
                Some(r) => (None, Some(*r), Some(n.clone())),
                None => (in_phase.last().copied(), None, Some(n.clone())),
            }
        }
        Place::Default => match steps.last() {
            Some(last) if is_review(last) => (None, Some(last), phase_of(last)),
            last => (last, None, last.and_then(phase_of)),
        },
    })
}

/// Where a step put `--after` step `a` goes, and its label, so that the
/// labels stay in order: the next free label (`4`, `1.3`) where it sorts
/// between `a` and the step after it (at the end of the spec or of a
/// phase); else a sub-label of `a` (`1.1` after `1` when `2` follows,
/// `1.1.1` after `1.1` when `1.2` follows), placed after `a`'s sub-steps
/// added before (`1.2` after `1.1`). The spec's own labels are never
/// renumbered: the user, the tracker and past records name steps by them.
fn after_in_order<'a>(steps: &'a [Step], a: &'a Step, free: String) -> (Option<&'a Step>, String) {
    let Some(at) = steps.iter().position(|s| std::ptr::eq(s, a)) else {
        return (Some(a), free);
    };
    let Some(la) = a.label.as_deref() else {
        return (Some(a), free);
    };
    let label_of = |i: usize| steps.get(i).and_then(|s| s.label.as_deref());
    let fits = |new: &str, next: Option<&str>| {
        label_order(la, new).is_lt() && next.is_none_or(|n| label_order(new, n).is_lt())
    };
    if fits(&free, label_of(at + 1)) {
        return (Some(a), free);
    }
    // `a`'s sub-steps, `a.k...`, right after it.
    let prefix = format!("{la}.");
    let subs = steps[at + 1..]
        .iter()
        .take_while(|s| s.label.as_deref().is_some_and(|l| l.starts_with(&prefix)))
        .count();
    let k = steps
        .iter()
        .filter_map(|s| {
            let rest = s.label.as_deref()?.strip_prefix(&prefix)?;
            rest.split('.').next()?.parse::<u32>().ok()
        })
        .max()
        .unwrap_or(0);
    (Some(&steps[at + subs]), format!("{la}.{}", k + 1))
}

/// The order of labels as a reader takes them: part by part at the dots,
/// numbers by value and before words (`1.9` < `1.10` < `1.R`), a label
/// before its own sub-labels (`1` < `1.1`).
fn label_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let mut x = a.split('.');
    let mut y = b.split('.');
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) => {
                let o = match (p.parse::<u64>(), q.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => p.cmp(q),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
    }
}

/// `text` with the boxes checked since `before` (the boxes then, in order)
/// unchecked again, and those steps as they read.
pub fn uncheck_new(text: &str, before: &[bool]) -> (String, Vec<String>) {
    let spec = spec::parse(text);
    let lines: Vec<usize> = spec
        .steps
        .iter()
        .enumerate()
        .filter(|(i, s)| s.checked && !before.get(*i).copied().unwrap_or(false))
        .map(|(_, s)| s.line)
        .collect();
    let steps = spec
        .steps
        .iter()
        .filter(|s| lines.contains(&s.line))
        .map(|s| s.describe())
        .collect();
    let out = lines.iter().fold(text.to_string(), |t, &line| {
        crate::work::spec::set_box(&t, line, false)
    });
    (out, steps)
}

/// The next free label: `N.k+1` in phase N, else the next plain number.
fn next_label(steps: &[Step], phase: Option<&str>) -> String {
    let labels = steps.iter().filter_map(|s| s.label.as_deref());
    match phase {
        Some(p) => {
            let k = labels
                .filter_map(|l| l.strip_prefix(p)?.strip_prefix('.')?.parse::<u32>().ok())
                .max()
                .unwrap_or(0);
            format!("{p}.{}", k + 1)
        }
        None => {
            let n = labels
                .filter_map(|l| l.parse::<u32>().ok())
                .max()
                .unwrap_or(0);
            (n + 1).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "# Spec\n\n## Phase 1\n\n- [x] **1.1** Parse [a-1]\n- [ ] **1.2** Print [a-2]\n- [ ] **1.R** Review phase 1\n\n## Phase 2\n\n- [ ] **2.1** Serve [a-3]\n- [ ] **2.R** Review phase 2\n";

    #[test]
    fn steps_go_where_asked_with_the_next_free_label() {
        let (text, label) = insert(SPEC, "Add a flag", Some("a-9"), &Place::Default).unwrap();
        assert_eq!(label, "2.2");
        assert!(text.contains("- [ ] **2.1** Serve [a-3]\n- [ ] **2.2** Add a flag [a-9]\n- [ ] **2.R** Review phase 2\n"), "{text}");
        let (text, label) = insert(SPEC, "Colours", None, &Place::Phase("1".into())).unwrap();
        assert_eq!(label, "1.3");
        assert!(
            text.contains("**1.2** Print [a-2]\n- [ ] **1.3** Colours\n- [ ] **1.R** Review"),
            "{text}"
        );
        let (text, label) = insert(
            SPEC,
            "Right after",
            Some("a-8"),
            &Place::After("1.1".into()),
        )
        .unwrap();
        assert_eq!(label, "1.1.1");
        assert!(
            text.contains("**1.1** Parse [a-1]\n- [ ] **1.1.1** Right after [a-8]\n- [ ] **1.2**"),
            "{text}"
        );
        // At the end of its phase, the next free label keeps the order.
        let (_, label) = insert(SPEC, "x", None, &Place::After("1.2".into())).unwrap();
        assert_eq!(label, "1.3");
        assert_eq!(spec::parse(&text).steps.len(), 6);
        assert_eq!(
            insert(SPEC, "x", None, &Place::After("9.9".into())).unwrap_err(),
            "--after 9.9: no step has that label"
        );
        assert!(
            insert(SPEC, "x", None, &Place::Phase("7".into()))
                .unwrap_err()
                .starts_with("--phase 7")
        );
        // Plain numbers, no review step: at the end.
        let (text, label) = insert(
            "- [ ] **1** one\n- [ ] **2** two\n",
            "three",
            None,
            &Place::Default,
        )
        .unwrap();
        assert_eq!(
            (label.as_str(), text.as_str()),
            ("3", "- [ ] **1** one\n- [ ] **2** two\n- [ ] **3** three\n")
        );
        // No steps yet.
        let (text, _) = insert("# Spec\nWhat to build.", "first", None, &Place::Default).unwrap();
        assert_eq!(text, "# Spec\nWhat to build.\n\n- [ ] **1** first\n");
    }

    #[test]
    fn a_step_put_after_another_keeps_the_labels_in_order() {
        let plain = "- [ ] **1** one\n- [ ] **2** two\n- [ ] **3** three\n";
        let (text, label) =
            insert(plain, "one and a bit", None, &Place::After("1".into())).unwrap();
        assert_eq!(
            (label.as_str(), text.as_str()),
            (
                "1.1",
                "- [ ] **1** one\n- [ ] **1.1** one and a bit\n- [ ] **2** two\n- [ ] **3** three\n"
            )
        );
        // Again after 1: after the sub-step added before, in order.
        let (text, label) = insert(&text, "more", None, &Place::After("1".into())).unwrap();
        assert_eq!(label, "1.2");
        assert!(
            text.contains("**1.1** one and a bit\n- [ ] **1.2** more\n- [ ] **2** two"),
            "{text}"
        );
        // After the last step: the next number.
        let (_, label) = insert(plain, "four", None, &Place::After("3".into())).unwrap();
        assert_eq!(label, "4");
        let labels = |t: &str| -> Vec<String> {
            spec::parse(t)
                .steps
                .into_iter()
                .filter_map(|s| s.label)
                .collect()
        };
        for after in ["1.1", "1.2", "1.R", "2.1"] {
            let (text, _) = insert(SPEC, "x", None, &Place::After(after.into())).unwrap();
            let got = labels(&text);
            let mut sorted = got.clone();
            sorted.sort_by(|a, b| label_order(a, b));
            assert_eq!(got, sorted, "after {after}");
        }
    }

    #[test]
    fn labels_order_part_by_part() {
        let mut v = ["2", "1.R", "1.10", "1", "1.9", "1.1.1", "1.1"];
        v.sort_by(|a, b| label_order(a, b));
        assert_eq!(v, ["1", "1.1", "1.1.1", "1.9", "1.10", "1.R", "2"]);
    }

    #[test]
    fn boxes_checked_since_are_unchecked_and_no_others() {
        let text = "- [x] **1** one\n- [x] **2** two\n- [ ] **3** three\n";
        let (back, steps) = uncheck_new(text, &[true, false, false]);
        assert_eq!(
            back,
            "- [x] **1** one\n- [ ] **2** two\n- [ ] **3** three\n"
        );
        assert_eq!(steps, ["line 2: 2 two"]);
        assert_eq!(uncheck_new(text, &[true, true, false]).1.len(), 0);
    }

    #[test]
    fn any_title_makes_one_well_formed_step() {
        for title in [
            "two\nlines",
            "ends like an id [zz-9]",
            "[x] looks checked",
            "tab\there \u{1b}[2J",
            "  spaced  out  ",
        ] {
            let (text, _) = insert(SPEC, title, Some("a-7"), &Place::Default).unwrap();
            let spec = spec::parse(&text);
            assert!(spec.problems.is_empty(), "{title:?}: {:?}", spec.problems);
            assert_eq!(spec.steps.len(), 6, "{title:?}");
            let added = spec
                .steps
                .iter()
                .find(|s| s.label.as_deref() == Some("2.2"))
                .unwrap();
            assert_eq!(added.task.as_deref(), Some("a-7"), "{title:?}");
            assert!(
                !added.title.contains('\n') && !added.title.contains('\u{1b}'),
                "{title:?}"
            );
        }
        assert_eq!(
            clean_title("ends like an id [zz-9]"),
            "ends like an id (zz-9)"
        );
    }
}
