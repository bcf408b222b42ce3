//! A ralph-claude-code fix plan (`fix_plan.md`, `@fix_plan.md`): its
//! checkbox items in their order, under its headings (`## High Priority`,
//! `### Phase 1`), each item's sub-bullets as its details; and the project's
//! rules from the `PROMPT.md` and `AGENT.md` beside it. Read as a Markdown
//! reader reads it (`spec::parse`): boxes inside code blocks are no items,
//! nested items are items; a box that starts a line without a list bullet
//! (`[ ] Get started`) is taken as the item its author meant, and said; any
//! other line that looks like a box but is none is refused with its line.

use super::{Format, Plan, Refused, Section, Step, fenced_lines, heading, refused};
use std::collections::HashMap;

use crate::work::spec;

pub fn parse(name: &str, text: &str) -> Result<Plan, Refused> {
    let (bulleted, unbulleted) = with_bullets(text);
    let text = bulleted.as_str();
    let read = spec::parse(text);
    if let Some(p) = read.problems.first() {
        return Err(refused(format!("{name}:{}", p.line), p.message.clone()));
    }
    if read.steps.is_empty() {
        return Err(refused(name, "no checkbox items (`- [ ] ...`) to import"));
    }
    let lines: Vec<&str> = text.lines().collect();
    let fenced = fenced_lines(text);
    // Which lines are items is the Markdown reader's word, not ours.
    let step_at: HashMap<usize, bool> =
        read.steps.iter().map(|s| (s.line - 1, s.checked)).collect();
    let mut outline = Outline::default();
    let mut i = 0;
    while i < lines.len() {
        match step_at.get(&i) {
            Some(&done) => {
                let end = item_end(&lines, &fenced, |j| step_at.contains_key(&j), i);
                outline.item(item(name, &lines[i..end], i, done)?);
                i = end;
            }
            None => {
                outline.line(lines[i], fenced[i]);
                i += 1;
            }
        }
    }
    let mut plan = outline.into_plan(name);
    plan.remarks = unbulleted
        .iter()
        .map(|n| format!("{name} line {n}: a box without a list bullet, taken as a step"))
        .collect();
    Ok(plan)
}

/// The text with a bullet before each box that starts a line without one
/// (`[ ] Get started`, outside code), and those lines (1-based). Such a
/// line is no list item to a Markdown reader, but its author meant a step:
/// real `@fix_plan.md` files are written so, and refusing them leaves the
/// user nothing to import. Only a line the reader does not already read as
/// a step gets one, and the lines keep their numbers.
fn with_bullets(text: &str) -> (String, Vec<usize>) {
    let fenced = fenced_lines(text);
    let mut lines = Vec::new();
    let mut changed = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let boxed = ["[ ]", "[x]", "[X]"].iter().any(|b| {
            t.strip_prefix(b)
                .is_some_and(|r| r.starts_with([' ', '\t']) && !r.trim().is_empty())
        });
        // Four spaces in, a line is code to a Markdown reader, not a step.
        if boxed && indent < 4 && !fenced.get(i).copied().unwrap_or(false) {
            lines.push(format!("{}- {t}", &line[..indent]));
            changed.push(i + 1);
        } else {
            lines.push(line.to_string());
        }
    }
    (lines.concat(), changed)
}

/// The line after an item's last: below it come its details, the lines
/// indented deeper than it or inside code, up to the next item.
fn item_end(lines: &[&str], fenced: &[bool], is_item: impl Fn(usize) -> bool, at: usize) -> usize {
    let indent = indent_of(lines[at]);
    (at + 1..lines.len())
        .find(|&j| {
            let l = lines[j];
            is_item(j) || !l.trim().is_empty() && indent_of(l) <= indent && !fenced[j]
        })
        .unwrap_or(lines.len())
}

/// The step of an item's lines (its own, then its details), `at` its index.
fn item(name: &str, lines: &[&str], at: usize, done: bool) -> Result<Step, Refused> {
    let place = format!("{name}:{}", at + 1);
    let (id, text) = item_text(lines[0]);
    if text.is_empty() {
        return Err(refused(place, "an item with no text"));
    }
    // Each detail as deep as it is below the shallowest: a criterion
    // indented under its detail stays under it in the spec.
    let kept: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| !l.trim().is_empty())
        .collect();
    let least = kept.iter().map(|l| indent_of(l)).min().unwrap_or(0);
    let details = kept
        .iter()
        .map(|l| {
            let body = l.trim_start();
            format!("{}{body}", " ".repeat(indent_of(l) - least))
        })
        .collect();
    Ok(Step {
        id,
        text,
        done,
        details,
        place,
    })
}

/// A fix plan as read so far: its title, its headings with their items,
/// and the other lines under each heading (the plan's notes).
struct Outline {
    intro: Vec<String>,
    /// Each with its level as written: which are below which.
    sections: Vec<(usize, Section)>,
    /// Under which heading, which lines.
    notes: Vec<(String, Vec<String>)>,
    heading_now: String,
}

impl Default for Outline {
    fn default() -> Self {
        Outline {
            intro: Vec::new(),
            sections: vec![(1, Section::default())],
            notes: Vec::new(),
            heading_now: String::new(),
        }
    }
}

impl Outline {
    fn item(&mut self, step: Step) {
        self.sections.last_mut().expect("one").1.steps.push(step);
    }

    /// A line that is no item: a heading, a note, or nothing to keep.
    fn line(&mut self, line: &str, fenced: bool) {
        let first = self.sections.len() == 1 && self.sections[0].1.steps.is_empty();
        match heading(line).filter(|_| !fenced) {
            // A title before any item names the plan; under ralph's own
            // title it would be a second one.
            Some((1, h)) if first => {
                self.intro.push(format!("Plan: {h}"));
                self.heading_now = h;
            }
            Some((level, h)) => {
                let section = Section {
                    heading: Some((level.max(2), h.clone())),
                    steps: Vec::new(),
                };
                self.sections.push((level, section));
                self.heading_now = h;
            }
            None if !line.trim().is_empty() && line.trim() != "---" => {
                match self.notes.last_mut() {
                    Some((h, ls)) if *h == self.heading_now => ls.push(line.to_string()),
                    _ => self
                        .notes
                        .push((self.heading_now.clone(), vec![line.to_string()])),
                }
            }
            None => {}
        }
    }

    fn into_plan(self, name: &str) -> Plan {
        let notes = notes_text(self.notes);
        Plan {
            format: Format::FixPlan,
            intro: self.intro,
            sections: with_items(self.sections),
            rules: (!notes.is_empty()).then(|| format!("Notes from {name}:\n\n{notes}")),
            references: Vec::new(),
            progress: None,
            learnings: None,
            remarks: Vec::new(),
        }
    }
}

/// The sections to keep: a heading stays where it, or a heading below it,
/// has items.
fn with_items(sections: Vec<(usize, Section)>) -> Vec<Section> {
    let mut keep = vec![false; sections.len()];
    for k in (0..sections.len()).rev() {
        let level = sections[k].0;
        keep[k] = !sections[k].1.steps.is_empty()
            || sections[k].1.heading.is_some()
                && (k + 1..sections.len())
                    .take_while(|&m| sections[m].0 > level)
                    .any(|m| keep[m]);
    }
    sections
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|((_, s), _)| s)
        .collect()
}

/// The notes as Markdown, each under its heading's name (if it has one).
fn notes_text(notes: Vec<(String, Vec<String>)>) -> String {
    notes
        .into_iter()
        .map(|(h, ls)| {
            let body = ls.join("\n");
            if h.is_empty() {
                body
            } else {
                format!("{h}:\n\n{body}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// An item's own id (`P0-001: ...`, `bd-2: ...`) and its text, from its
/// line: block quote marks, bullet and box taken off.
fn item_text(line: &str) -> (Option<String>, String) {
    let mut t = line.trim_start();
    while let Some(r) = t.strip_prefix('>') {
        t = r.trim_start();
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    t = if digits > 0 {
        &t[digits + 1..]
    } else {
        &t[1..]
    };
    t = t.trim_start();
    t = t.get(3..).unwrap_or_default().trim();
    if let Some((first, rest)) = t.split_once(':') {
        let first = first.trim_matches(['`', '*']);
        if spec::is_task_id(first) && !first.contains(' ') {
            return (Some(first.to_string()), rest.trim().to_string());
        }
    }
    (None, t.to_string())
}

/// What of a ralph-claude-code `PROMPT.md` is the project's own: its
/// sections, less those about that loop's own protocol (its status block,
/// `RALPH_STATUS`, `EXIT_SIGNAL`, `<promise>`, exit scenarios and status
/// reporting, and its protected files, which are ralph's `.ralph/`), and
/// less the lines that send a session to its plan (`fix_plan.md`: ralph's
/// is the spec), with headings one level down.
pub fn rules_of_prompt(text: &str) -> String {
    let fenced = fenced_lines(text);
    let lines: Vec<&str> = text.lines().collect();
    let mut parts: Vec<(Option<String>, Vec<Line>)> = vec![(None, Vec::new())];
    for (i, l) in lines.iter().enumerate() {
        match heading(l).filter(|_| !fenced[i]) {
            Some((1, _)) => {}
            Some((2 | 3, h)) => parts.push((Some(h), vec![(false, l)])),
            _ => parts.last_mut().expect("one").1.push((fenced[i], l)),
        }
    }
    let kept: Vec<&str> = parts
        .iter()
        .filter(|(h, body)| !protocol(h.as_deref(), body))
        .flat_map(|(_, body)| body.iter())
        .filter(|(fenced, l)| *fenced || !l.to_lowercase().contains("fix_plan"))
        .map(|(_, l)| *l)
        .collect();
    demote(&kept.join("\n")).trim().to_string()
}

/// A line of a section, and whether it is inside a code block.
type Line<'a> = (bool, &'a str);

/// Is a section of the other loop's `PROMPT.md` about that loop itself?
fn protocol(heading: Option<&str>, body: &[Line]) -> bool {
    let h = heading.unwrap_or_default().to_lowercase();
    [
        "status report",
        "status output",
        "exit scenario",
        "exit criteria",
        "exit condition",
        "protected file",
    ]
    .iter()
    .any(|w| h.contains(w))
        || body.iter().any(|(_, l)| {
            l.contains("RALPH_STATUS") || l.contains("EXIT_SIGNAL") || l.contains("<promise>")
        })
}

/// Headings one level down (outside code), so the text sits under ralph's.
pub fn demote(text: &str) -> String {
    let fenced = fenced_lines(text);
    text.lines()
        .enumerate()
        .map(|(i, l)| match heading(l) {
            Some((n, _)) if !fenced[i] && n < 6 => format!("#{}", l.trim_start()),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "# Fix Plan\n\n## High Priority\n\n### Auth\n- [ ] P0-001: Login form\n  - email and password\n  - [x] nested done item\n- [X] Logout\n\n```markdown\n- [ ] an example, not an item\n## not a heading\n```\n\n## Notes\n- one commit per item\n\n## Low Priority\n1. [ ] numbered\n> - [ ] quoted\n";

    #[test]
    fn items_in_order_under_their_headings() {
        let p = parse("fix_plan.md", PLAN).unwrap();
        assert_eq!((p.total(), p.done()), (5, 2));
        let heads: Vec<_> = p
            .sections
            .iter()
            .map(|s| (s.heading.clone().map(|h| h.1), s.steps.len()))
            .collect();
        assert_eq!(
            heads,
            [
                (Some("High Priority".into()), 0),
                (Some("Auth".into()), 3),
                (Some("Low Priority".into()), 2)
            ]
        );
        let s: Vec<&Step> = p.steps().collect();
        assert_eq!(s[0].id.as_deref(), Some("P0-001"));
        assert_eq!(s[0].text, "Login form");
        assert_eq!(s[0].details, ["- email and password"]);
        let deep = parse("f.md", "- [ ] a\n  - Acceptance criteria:\n    - works\n").unwrap();
        let details = &deep.steps().next().unwrap().details;
        assert_eq!(details, &["- Acceptance criteria:", "  - works"]);
        assert_eq!(s[0].place, "fix_plan.md:6");
        assert_eq!((s[1].text.as_str(), s[1].done), ("nested done item", true));
        assert_eq!(s[3].text, "numbered");
        assert_eq!(s[4].text, "quoted");
        assert_eq!(p.intro, ["Plan: Fix Plan"]);
        let rules = p.rules.unwrap();
        assert!(rules.contains("Notes:\n\n- one commit per item"), "{rules}");
        assert!(!rules.contains("an example"), "{rules}");
    }

    #[test]
    fn a_box_without_a_bullet_is_taken_as_a_step_and_said() {
        let p = parse("@fix_plan.md", "[ ] Get started").unwrap();
        let s: Vec<&Step> = p.steps().collect();
        assert_eq!(
            (s.len(), s[0].text.as_str(), s[0].done),
            (1, "Get started", false)
        );
        assert_eq!(s[0].place, "@fix_plan.md:1");
        assert_eq!(
            p.remarks,
            ["@fix_plan.md line 1: a box without a list bullet, taken as a step"]
        );
        let p = parse(
            "f.md",
            "# Plan\n\n- [ ] one\n[x] two\n  - detail\n```\n[ ] code\n```\n",
        )
        .unwrap();
        let s: Vec<&Step> = p.steps().collect();
        assert_eq!(s.len(), 2);
        assert_eq!((s[1].text.as_str(), s[1].done), ("two", true));
        assert_eq!(
            p.remarks,
            ["f.md line 4: a box without a list bullet, taken as a step"]
        );
        // A bulleted plan is read as it was, nothing said.
        assert!(parse("f.md", "- [ ] one\n").unwrap().remarks.is_empty());
    }

    #[test]
    fn a_box_that_is_none_is_refused_with_its_line() {
        let e = parse("fix_plan.md", "## A\n- [ ] fine\n- [ x] odd\n").unwrap_err();
        assert_eq!(e.place, "fix_plan.md:3");
        let e = parse("fix_plan.md", "## A\n- [ ]\n").unwrap_err();
        assert_eq!(e.to_string(), "fix_plan.md:2: an item with no text");
        let e = parse("f.md", "```\n- [ ] only in code\n```\n").unwrap_err();
        assert_eq!(e.place, "f.md");
    }

    #[test]
    fn the_prompt_keeps_the_project_and_drops_the_loop() {
        let prompt = "# Title\n\n## Context\nA Rust CLI.\n\n## Status Reporting (CRITICAL)\n---RALPH_STATUS---\n\n## Rules\n```\n## inside\n```\nNever push.\n";
        assert_eq!(
            rules_of_prompt(prompt),
            "### Context\nA Rust CLI.\n\n### Rules\n```\n## inside\n```\nNever push."
        );
        // Its own plan and its protected files are the other loop's: a
        // session here works from the spec, and checks boxes in `.ralph/`.
        let prompt = "## Rules\n- Follow tasks in fix_plan.md. Implement ONE task per loop.\n- Run the tests.\n\n### Protected Files (DO NOT MODIFY)\n- `.ralph/` (entire directory)\n\n## Build\n```\ncat @fix_plan.md\n```\n";
        assert_eq!(
            rules_of_prompt(prompt),
            "### Rules\n- Run the tests.\n\n### Build\n```\ncat @fix_plan.md\n```"
        );
    }

    #[test]
    fn an_items_details_are_the_lines_below_it_deeper_or_in_code() {
        let lines = [
            "- [ ] a",
            "  - deeper",
            "",
            "```",
            "x",
            "```",
            "text",
            "- [ ] b",
        ];
        let fenced = [false, false, false, true, true, true, false, false];
        assert_eq!(item_end(&lines, &fenced, |j| j == 7, 0), 6);
        let lines = ["- [ ] a", "  - deeper", "- [ ] b"];
        assert_eq!(item_end(&lines, &[false; 3], |j| j == 2, 0), 2);
        assert_eq!(item_end(&lines[..2], &[false; 2], |_| false, 0), 2);
    }

    #[test]
    fn a_heading_stays_where_it_or_one_below_it_has_items() {
        let section = |level: usize, items: usize| {
            let step = Step {
                id: None,
                text: "a".into(),
                done: false,
                details: vec![],
                place: "p".into(),
            };
            let s = Section {
                heading: Some((level, format!("h{level}-{items}"))),
                steps: vec![step; items],
            };
            (level, s)
        };
        let kept: Vec<String> = with_items(vec![
            (1, Section::default()),
            section(2, 0),
            section(3, 1),
            section(2, 0),
            section(3, 0),
            section(2, 2),
        ])
        .into_iter()
        .map(|s| s.heading.unwrap().1)
        .collect();
        assert_eq!(kept, ["h2-0", "h3-1", "h2-2"]);
    }

    #[test]
    fn notes_go_under_their_headings_name() {
        let notes = vec![
            (String::new(), vec!["intro".to_string()]),
            (
                "Notes".to_string(),
                vec!["- a".to_string(), "- b".to_string()],
            ),
        ];
        assert_eq!(notes_text(notes), "intro\n\nNotes:\n\n- a\n- b");
        assert_eq!(notes_text(vec![]), "");
    }
}
