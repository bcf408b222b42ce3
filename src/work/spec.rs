//! The spec (`.ralph/spec.md`): a Markdown file whose checkboxes are the
//! steps of the work. Pure parsing; everything that is not a checkbox is kept
//! out of the model and left alone.
//!
//! ```markdown
//! Epic: [brt-wxv]
//! <!-- comments, like fenced code blocks, are not read: - [ ] not a step -->
//! - [x] **1.1** Create database schema [brt-wxv.1]
//!   - [ ] **1.2** Add validation logic [TASK-def]
//! * [X] **1.R** Review: tests pass
//! ```

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// 1-based line number in the spec.
    pub line: usize,
    pub checked: bool,
    /// `1.2` from `**1.2**`.
    pub label: Option<String>,
    /// The step's text, without box, label or task reference.
    pub title: String,
    /// The tracker id in brackets at the end of the line.
    pub task: Option<String>,
}

impl Step {
    /// How the step reads in messages: `line 12: **1.2** Add validation [br-x]`.
    pub fn describe(&self) -> String {
        let mut s = format!("line {}: ", self.line);
        if let Some(l) = &self.label {
            s.push_str(&format!("{l} "));
        }
        s.push_str(&self.title);
        if let Some(t) = &self.task {
            s.push_str(&format!(" [{t}]"));
        }
        s
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Spec {
    pub steps: Vec<Step>,
    /// The epic the spec names (`Epic: [id]`), with its line.
    pub epic: Option<(usize, String)>,
    /// Lines that look like checkboxes but are not.
    pub problems: Vec<Problem>,
}

impl Spec {
    pub fn done(&self) -> usize {
        self.steps.iter().filter(|s| s.checked).count()
    }

    pub fn total(&self) -> usize {
        self.steps.len()
    }

    pub fn next_open(&self) -> Option<&Step> {
        self.steps.iter().find(|s| !s.checked)
    }

    pub fn references_tasks(&self) -> bool {
        self.epic.is_some() || self.steps.iter().any(|s| s.task.is_some())
    }

    /// `4/6 steps done`
    pub fn progress(&self) -> String {
        format!("{}/{} steps done", self.done(), self.total())
    }
}

/// A tracker id: `TASK-abc`, `br-a1b2`, `bd-12`, `brt-vs7.1`, and with a
/// prefix that has hyphens itself (br takes it from the folder name):
/// `my-app-x7k`.
pub fn is_task_id(s: &str) -> bool {
    let (base, children) = match s.split_once('.') {
        Some((b, c)) => (b, Some(c)),
        None => (s, None),
    };
    let Some((prefix, hash)) = base.rsplit_once('-') else {
        return false;
    };
    prefix
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !prefix.ends_with('-')
        && !hash.is_empty()
        && hash.chars().all(|c| c.is_ascii_alphanumeric())
        && children.is_none_or(|c| {
            c.split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
}

pub fn parse(text: &str) -> Spec {
    let mut spec = Spec::default();
    let mut fence: Option<&str> = None;
    let mut in_comment = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim_start();
        // HTML comments (notes, examples) are not steps.
        if in_comment || t.starts_with("<!--") {
            in_comment = !line.contains("-->");
            continue;
        }
        // Checkboxes in code blocks are examples, not steps.
        if let Some(f) = fence {
            if t.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = Some(&t[..3]);
            continue;
        }
        match parse_line(t) {
            Line::Step { checked, rest } => spec.steps.push(step(n, checked, rest)),
            Line::Broken(message) => spec.problems.push(Problem { line: n, message }),
            Line::Other => {
                if spec.epic.is_none()
                    && let Some(id) = epic_id(t)
                {
                    spec.epic = Some((n, id));
                }
            }
        }
    }
    spec
}

enum Line<'a> {
    Step { checked: bool, rest: &'a str },
    Broken(String),
    Other,
}

fn bullet_len(t: &str) -> Option<usize> {
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return Some(2);
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let after = t.get(digits..)?;
    (digits > 0 && (after.starts_with(". ") || after.starts_with(") "))).then_some(digits + 2)
}

/// A short bracket that is trying to be a checkbox: `[]`, `[ x]`, `[v]`.
fn box_like(s: &str) -> Option<&str> {
    let inner = s.strip_prefix('[')?;
    let end = inner.find(']')?;
    let content = &inner[..end];
    (content.len() <= 3 && content.chars().all(|c| " xXvV-*/".contains(c))).then_some(content)
}

fn parse_line(t: &str) -> Line<'_> {
    let Some(b) = bullet_len(t) else {
        let glued = ['-', '*', '+']
            .iter()
            .find_map(|b| t.strip_prefix(*b))
            .filter(|r| r.starts_with('['));
        if glued.is_some_and(|rest| box_like(rest).is_some()) {
            return Line::Broken(
                "checkbox without a space after the bullet (write `- [ ]`)".into(),
            );
        }
        if box_like(t).is_some_and(|c| matches!(c, " " | "x" | "X")) {
            return Line::Broken("checkbox without a list bullet (write `- [ ]`)".into());
        }
        return Line::Other;
    };
    let rest = t[b..].trim_start();
    for (prefix, checked) in [("[ ]", false), ("[x]", true), ("[X]", true)] {
        if let Some(after) = rest.strip_prefix(prefix) {
            if after.is_empty() || after.starts_with([' ', '\t']) {
                return Line::Step {
                    checked,
                    rest: after.trim(),
                };
            }
            return Line::Broken(format!("`{prefix}` must be followed by a space"));
        }
    }
    match box_like(rest) {
        Some(content) => Line::Broken(format!(
            "`[{content}]` is not a checkbox: use `[ ]` for open or `[x]` for done"
        )),
        None => Line::Other,
    }
}

fn step(line: usize, checked: bool, rest: &str) -> Step {
    let mut rest = rest.trim();
    let mut label = None;
    if let Some(after) = rest.strip_prefix("**")
        && let Some(end) = after.find("**")
    {
        label = Some(after[..end].trim().to_string());
        rest = after[end + 2..].trim_start();
    }
    let mut task = None;
    if rest.ends_with(']')
        && let Some(open) = rest.rfind('[')
    {
        let id = rest[open + 1..rest.len() - 1].trim();
        if is_task_id(id) {
            task = Some(id.to_string());
            rest = rest[..open].trim_end();
        }
    }
    Step {
        line,
        checked,
        label,
        title: rest.to_string(),
        task,
    }
}

/// `Epic: [brt-wxv]`, `**Epic:** brt-wxv`, `- Epic: `bd-12``
fn epic_id(t: &str) -> Option<String> {
    let lower = t.to_ascii_lowercase();
    let at = lower.find("epic")?;
    let after = &t[at + 4..];
    let colon = after
        .find(':')
        .filter(|&c| after[..c].chars().all(|ch| ch == '*' || ch == ' '))?;
    after[colon + 1..]
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| "[]`*<>!-(),".contains(c)))
        .find(|w| is_task_id(w))
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "# Work\n\
Epic: [brt-wxv]\n\
\n\
- [x] **1.1** Create database schema [brt-wxv.1]\n\
  - [ ] **1.2** Add validation logic [TASK-def]\n\
* [X] **1.R** Review: tests pass, no bugs [bd-12]\n\
+ [ ] plain step, no label, no id\n\
1. [ ] numbered step [see the docs](https://x.y)\n\
```\n\
- [ ] an example in a code block\n\
```\n\
- [] broken\n\
-[x] broken too\n\
[ ] no bullet\n\
- [ x] odd\n\
- [x]glued\n\
- [TASK-abc] a bullet that starts with a reference is not a box\n";

    #[test]
    fn parses_every_box_form_with_labels_and_ids() {
        let s = parse(SPEC);
        let got: Vec<_> = s
            .steps
            .iter()
            .map(|s| (s.line, s.checked, s.label.as_deref(), s.task.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                (4, true, Some("1.1"), Some("brt-wxv.1")),
                (5, false, Some("1.2"), Some("TASK-def")),
                (6, true, Some("1.R"), Some("bd-12")),
                (7, false, None, None),
                (8, false, None, None),
            ]
        );
        assert_eq!(s.steps[0].title, "Create database schema");
        assert_eq!(
            s.steps[4].title,
            "numbered step [see the docs](https://x.y)"
        );
        assert_eq!(s.epic, Some((2, "brt-wxv".into())));
        assert_eq!((s.done(), s.total()), (2, 5));
        assert_eq!(s.next_open().unwrap().line, 5);
        assert_eq!(
            s.steps[1].describe(),
            "line 5: 1.2 Add validation logic [TASK-def]"
        );
    }

    #[test]
    fn reports_broken_boxes_with_line_numbers() {
        let lines: Vec<_> = parse(SPEC).problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![12, 13, 14, 15, 16]);
    }

    #[test]
    fn task_ids() {
        for ok in [
            "TASK-abc",
            "br-a1b2",
            "bd-12",
            "brt-vs7.1",
            "brt-vs7.1.2",
            "my_proj-x9",
            "my-app-x7k.2",
        ] {
            assert!(is_task_id(ok), "{ok}");
        }
        for bad in [
            "TASK",
            "-abc",
            "1x-abc",
            "br-",
            "br-a.b",
            "see the docs",
            "x-1.",
            "a--b",
        ] {
            assert!(!is_task_id(bad), "{bad}");
        }
    }

    #[test]
    fn epic_forms() {
        assert_eq!(epic_id("**Epic:** `brt-wxv`"), Some("brt-wxv".into()));
        assert_eq!(epic_id("Epic: `bd-12`"), Some("bd-12".into()));
        let s =
            parse("<!--\nEpic: [a-b]\n- [ ] example [a-c]\n-->\n- [ ] real\n<!-- one line --> \n");
        assert_eq!((s.epic.clone(), s.total(), s.steps[0].line), (None, 1, 5));
        assert_eq!(epic_id("This epic work: nothing"), None);
        assert_eq!(
            parse("- [ ] Epic: [a-b]\n").epic,
            None,
            "a step is not the epic line"
        );
    }

    #[test]
    fn empty_and_prose_only() {
        let s = parse("Just words.\n\n[link](x)\n");
        assert_eq!(
            (s.total(), s.problems.len(), s.references_tasks()),
            (0, 0, false)
        );
    }
}
