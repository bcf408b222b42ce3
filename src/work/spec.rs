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
    /// An id written another common way (`**bd-1**`, `bd-1:` first,
    /// `(bd-1)` last): read as the step's task when the tracker knows it,
    /// else reported. Never silently ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_form: Option<String>,
}

impl Step {
    /// Who the step is across edits of the spec: its task id, else its
    /// label, else its text (never its line number).
    pub fn key(&self) -> String {
        let label = self
            .label
            .as_ref()
            .map(|l| format!("**{l}** {}", self.title));
        self.task
            .clone()
            .or(label)
            .unwrap_or_else(|| self.title.clone())
    }

    /// How a person names the step: `**1.2** Add validation [br-x]` (its
    /// key may be the task id alone, which tells a reader nothing).
    pub fn name(&self) -> String {
        let mut s = match &self.label {
            Some(l) => format!("**{l}** {}", self.title),
            None => self.title.clone(),
        };
        if let Some(t) = &self.task {
            s.push_str(&format!(" [{t}]"));
        }
        s
    }

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
        self.epic.is_some()
            || self
                .steps
                .iter()
                .any(|s| s.task.is_some() || s.other_form.is_some())
    }

    /// The spec as a beads tracker sees it: a GitHub issue (`[#12]`) is
    /// no task of its.
    pub fn without_issue_tasks(&self) -> Spec {
        let mut s = self.clone();
        for step in &mut s.steps {
            if step.task.as_deref().and_then(issue_number).is_some() {
                step.task = None;
            }
        }
        s
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

/// A GitHub issue as a step's task (`[#12]` ending its line): its number.
/// Read only in brackets: a `(#12)` in a step's text is a mention.
pub fn issue_number(s: &str) -> Option<u64> {
    let digits = s.strip_prefix('#')?;
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&n| n > 0)
}

/// Read the spec as a CommonMark reader does (pulldown-cmark, with GFM task
/// lists): a step is a task list item, wherever a Markdown reader sees one
/// (nested, numbered, in a block quote) and nowhere else (not in code blocks,
/// HTML blocks or comments). ralph's own reading comes on top, line by line
/// outside code and HTML: labels and task ids of each step, the epic line,
/// and lines that look like checkboxes but are none.
pub fn parse(text: &str) -> Spec {
    let lines = Lines::of(text);
    let (mut opaque, markers) = markdown(text, &lines);
    let mut spec = Spec::default();
    spec.steps.reserve(markers.len());
    for &(line, checked, after) in &markers {
        let end = lines.end(line);
        let rest = text[after.min(end)..end].trim();
        spec.steps.push(step(line, checked, rest));
        // A step's line needs no look of ours.
        opaque[line] = true;
    }
    for (n, &skip) in opaque.iter().enumerate().take(lines.count() + 1).skip(1) {
        if skip {
            continue;
        }
        let t = lines.text(text, n).trim_start();
        match parse_line(t) {
            Line::Step => spec.problems.push(Problem {
                line: n,
                message: "looks like a checkbox, but a Markdown reader does not read it as one here \
                          (a task list item needs a list of its own: a blank line before it, or text after the box)"
                    .into(),
            }),
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

/// Where each line of a text starts (and the text's length), to turn byte
/// offsets into 1-based lines.
struct Lines(Vec<usize>, usize);

impl Lines {
    fn of(text: &str) -> Lines {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines(starts, text.len())
    }

    fn count(&self) -> usize {
        self.0.len()
    }

    /// The 1-based line of a byte offset.
    fn line_of(&self, off: usize) -> usize {
        self.0.partition_point(|&s| s <= off)
    }

    /// The byte offset where line `n` ends (its newline included).
    fn end(&self, n: usize) -> usize {
        self.0.get(n).copied().unwrap_or(self.1)
    }

    fn text<'t>(&self, text: &'t str, n: usize) -> &'t str {
        text[self.0[n - 1]..self.end(n)].trim_end_matches(['\n', '\r'])
    }
}

/// The CommonMark reading: which lines are code or HTML (opaque: nothing on
/// them is a step), and each task list marker (line, checked, where it ends).
fn markdown(text: &str, lines: &Lines) -> (Vec<bool>, Vec<(usize, bool, usize)>) {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let mut opaque = vec![false; lines.count() + 2];
    let mut markers = Vec::new();
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TASKLISTS);
    for (event, range) in Parser::new_ext(text, opts).into_offset_iter() {
        match event {
            // The range of a block's start event spans the whole block.
            Event::Start(Tag::CodeBlock(_) | Tag::HtmlBlock) | Event::Html(_) => {
                let last = lines.line_of(range.end.saturating_sub(1).max(range.start));
                opaque[lines.line_of(range.start)..=last].fill(true);
            }
            Event::TaskListMarker(checked) => {
                markers.push((lines.line_of(range.start), checked, range.end));
            }
            _ => {}
        }
    }
    (opaque, markers)
}

enum Line {
    /// A checkbox line by its look (the CommonMark reading decides).
    Step,
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

fn parse_line(t: &str) -> Line {
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
    for prefix in ["[ ]", "[x]", "[X]"] {
        if let Some(after) = rest.strip_prefix(prefix) {
            if after.is_empty() || after.starts_with([' ', '\t']) {
                return Line::Step;
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
        if is_task_id(id) || issue_number(id).is_some() {
            task = Some(id.to_string());
            rest = rest[..open].trim_end();
        }
    }
    let mut other_form = None;
    if task.is_none() {
        if label.as_deref().is_some_and(is_task_id) {
            // `- [ ] **bd-1** Title`
            other_form = label.take();
        } else if let Some((first, after)) = rest.split_once(':')
            && is_task_id(first.trim_matches('`'))
            && !first.contains(' ')
        {
            // `- [x] bd-2ck: foundation: ...`
            other_form = Some(first.trim_matches('`').to_string());
            rest = after.trim_start();
        } else if rest.ends_with(')')
            && let Some(open) = rest.rfind('(')
            && is_task_id(rest[open + 1..rest.len() - 1].trim_matches('`'))
        {
            // `- [ ] Title (bd-1)`
            other_form = Some(rest[open + 1..rest.len() - 1].trim_matches('`').to_string());
            rest = rest[..open].trim_end();
        }
    }
    Step {
        line,
        checked,
        label,
        title: rest.to_string(),
        task,
        other_form,
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

/// `text` with the box of the step on line `line` (1-based, as `Step`
/// says) set to `checked`: the one place a spec's box is edited. Its other
/// lines, and a line with no box, are left as they are.
pub fn set_box(text: &str, line: usize, checked: bool) -> String {
    text.split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| {
            let at = ["[ ]", "[x]", "[X]"].iter().filter_map(|b| l.find(b)).min();
            match at {
                Some(at) if i + 1 == line => {
                    let mut l = l.to_string();
                    l.replace_range(at..at + 3, if checked { "[x]" } else { "[ ]" });
                    l
                }
                _ => l.to_string(),
            }
        })
        .collect()
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
    fn lines_are_told_by_byte_offset() {
        let text = "a\nbc\r\n\nd";
        let l = Lines::of(text);
        assert_eq!(l.count(), 4);
        assert_eq!(
            [0, 1, 2, 3, 4, 5, 6, 7].map(|o| l.line_of(o)),
            [1, 1, 2, 2, 2, 2, 3, 4]
        );
        assert_eq!(
            (1..=4).map(|n| l.text(text, n)).collect::<Vec<_>>(),
            ["a", "bc", "", "d"]
        );
        assert_eq!((l.end(1), l.end(4)), (2, text.len()));
    }

    #[test]
    fn a_box_inside_a_paragraph_is_a_checkbox_markdown_does_not_read() {
        // A numbered list that does not start at 1 cannot interrupt a
        // paragraph: Markdown reads this as the paragraph's text.
        let s = parse("Intro text\n2. [ ] step\n");
        assert_eq!(s.total(), 0);
        assert_eq!(s.problems.len(), 1);
        assert!(
            s.problems[0]
                .message
                .starts_with("looks like a checkbox, but a Markdown reader does not read it"),
            "{:?}",
            s.problems
        );
    }

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
    fn a_github_issue_in_brackets_is_the_steps_task() {
        let s = parse(
            "- [ ] Fix login [#12]\n- [x] **2** Docs [ #7 ]\n- [ ] See (#9)\n- [ ] Not [#0]\n- [ ] Nor [#1a]\n",
        );
        let tasks: Vec<Option<&str>> = s.steps.iter().map(|s| s.task.as_deref()).collect();
        assert_eq!(tasks, [Some("#12"), Some("#7"), None, None, None]);
        assert_eq!(s.steps[0].title, "Fix login");
        assert_eq!(s.steps[2].other_form, None, "a mention is no task");
        assert_eq!(issue_number("#12"), Some(12));
        for bad in ["12", "#", "#-1", "# 1", "#0", "#1234567890123"] {
            assert_eq!(issue_number(bad), None, "{bad}");
        }
    }

    #[test]
    fn progress_reads_done_of_total() {
        assert_eq!(
            parse("- [x] a\n- [ ] b\n- [X] c\n").progress(),
            "2/3 steps done"
        );
    }

    #[test]
    fn broken_boxes_under_every_bullet_are_reported_to_the_last_line() {
        for (line, text) in [
            (1, "* [x]a"),
            (1, "+ [ ]b"),
            (1, "1. [x]c"),
            (1, "2) [ ]d"),
            (1, "100. [x]e"),
            // The last line, with no newline after it.
            (2, "- [ ] fine\n-[ ] glued"),
        ] {
            let s = parse(text);
            assert_eq!(
                s.problems.iter().map(|p| p.line).collect::<Vec<_>>(),
                [line],
                "{text:?}: {:?}",
                s.problems
            );
        }
        // Brackets that are not trying to be boxes, and lines that are no
        // bullets, are left alone.
        for text in ["-[ab] a note", ". [x]a", "1ab[x]c", "see [x] above"] {
            assert_eq!(parse(text).problems, vec![], "{text:?}");
        }
    }

    #[test]
    fn the_epic_line_is_read_with_spaces_stars_and_no_space() {
        for (text, want) in [
            ("Epic : [bd-1]", Some("bd-1")),
            ("**Epic** : bd-2", Some("bd-2")),
            ("Epic:bd-3", Some("bd-3")),
            ("The epic is done: [bd-4]", None),
        ] {
            assert_eq!(epic_id(text).as_deref(), want, "{text:?}");
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
    fn ids_in_other_common_forms_are_found() {
        let s = parse(
            "- [x] bd-2ck: foundation: set up\n- [ ] **bd-1** Write the parser\n\
             - [ ] Ship it (bd-7)\n- [ ] **1.2** Label, not an id\n- [ ] Ask (see the docs)\n",
        );
        let got: Vec<_> = s
            .steps
            .iter()
            .map(|s| (s.task.as_deref(), s.other_form.as_deref(), s.title.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (None, Some("bd-2ck"), "foundation: set up"),
                (None, Some("bd-1"), "Write the parser"),
                (None, Some("bd-7"), "Ship it"),
                (None, None, "Label, not an id"),
                (None, None, "Ask (see the docs)"),
            ]
        );
        assert!(s.references_tasks(), "other forms count as references");
    }

    /// How many task list items pulldown-cmark itself sees.
    fn commonmark_count(text: &str) -> (usize, usize) {
        use pulldown_cmark::{Event, Options, Parser};
        let mut done_total = (0, 0);
        for e in Parser::new_ext(text, Options::ENABLE_TASKLISTS) {
            if let Event::TaskListMarker(c) = e {
                done_total.0 += usize::from(c);
                done_total.1 += 1;
            }
        }
        done_total
    }

    #[test]
    fn steps_are_what_commonmark_reads() {
        let cases: [(&str, &str, (usize, usize)); 9] = [
            (
                "a fenced block containing <!-- hides nothing after it",
                "- [x] one\n\n```html\n<!-- not a comment here\n```\n\n- [ ] two\n- [ ] three\n",
                (1, 3),
            ),
            (
                "an indented code block holds examples, not steps",
                "Intro.\n\n    - [ ] example\n\n- [ ] real\n",
                (0, 1),
            ),
            (
                "task items in a block quote are steps",
                "> - [x] quoted done\n> - [ ] quoted open\n",
                (1, 2),
            ),
            ("a tab after the bullet", "-\t[ ] d\n", (0, 1)),
            (
                "an HTML comment across lines hides what is in it",
                "<!--\n- [ ] example\n-->\n- [ ] real\n",
                (0, 1),
            ),
            (
                "an HTML block hides what is in it",
                "<div>\n- [ ] inside html\n</div>\n\n- [x] real\n",
                (1, 1),
            ),
            (
                "nested and numbered",
                "1. [ ] a\n   - [x] b\n      - [ ] c\n2) [X] d\n",
                (2, 4),
            ),
            ("CRLF line endings", "- [x] a\r\n- [ ] b\r\n", (1, 2)),
            (
                "a fence of four backticks holds a fence of three",
                "````\n```\n- [ ] no\n```\n````\n- [ ] yes\n",
                (0, 1),
            ),
        ];
        for (what, text, want) in cases {
            let s = parse(text);
            assert_eq!((s.done(), s.total()), want, "{what}");
            assert_eq!(
                commonmark_count(text),
                want,
                "{what}: pulldown-cmark itself"
            );
        }
        // Line numbers are the source's.
        let s = parse("# T\n\n> - [ ] quoted\n\n-\t[x] tabbed\n");
        let lines: Vec<_> = s.steps.iter().map(|s| s.line).collect();
        assert_eq!(lines, [3, 5]);
        assert_eq!(s.steps[0].title, "quoted");
    }

    #[test]
    fn empty_and_prose_only() {
        let s = parse("Just words.\n\n[link](x)\n");
        assert_eq!(
            (s.total(), s.problems.len(), s.references_tasks()),
            (0, 0, false)
        );
    }

    #[test]
    fn a_box_is_set_on_its_line_only() {
        let text = "# S\n\n- [ ] **1** a [x] in text\n  - [X] b\n- [x] c\nno box\n";
        assert_eq!(
            set_box(text, 3, true),
            "# S\n\n- [x] **1** a [x] in text\n  - [X] b\n- [x] c\nno box\n"
        );
        assert_eq!(set_box(text, 4, false), text.replace("[X] b", "[ ] b"));
        assert_eq!(set_box(text, 5, false), text.replace("[x] c", "[ ] c"));
        assert_eq!(set_box(text, 5, true), text, "already so");
        assert_eq!(set_box(text, 6, true), text, "no box on that line");
        assert_eq!(set_box(text, 99, true), text, "no such line");
        assert_eq!(
            set_box("- [ ] a", 1, true),
            "- [x] a",
            "a last line with no newline"
        );
        for (i, s) in parse(&set_box(text, 3, true)).steps.iter().enumerate() {
            assert_eq!(s.checked, [true, true, true][i]);
        }
    }
}
