//! A ralph-claude-code fix plan (`fix_plan.md`, `@fix_plan.md`): its
//! checkbox items in their order, under its headings (`## High Priority`,
//! `### Phase 1`), each item's sub-bullets as its details; and the project's
//! rules from the `PROMPT.md` and `AGENT.md` beside it. Read as a Markdown
//! reader reads it (`spec::parse`): boxes inside code blocks are no items,
//! nested items are items; a line that looks like a box but is none is
//! refused with its line.

use super::{Format, Plan, Refused, Section, Step, fenced_lines, heading, refused};
use crate::work::spec;

pub fn parse(name: &str, text: &str) -> Result<Plan, Refused> {
    let read = spec::parse(text);
    if let Some(p) = read.problems.first() {
        return Err(refused(format!("{name}:{}", p.line), p.message.clone()));
    }
    if read.steps.is_empty() {
        return Err(refused(name, "no checkbox items (`- [ ] ...`) to import"));
    }
    let lines: Vec<&str> = text.lines().collect();
    let fenced = fenced_lines(text);
    let step_at: std::collections::HashMap<usize, bool> =
        read.steps.iter().map(|s| (s.line - 1, s.checked)).collect();
    let mut intro = Vec::new();
    let mut sections: Vec<(usize, Section)> = vec![(1, Section::default())];
    let mut notes: Vec<(String, Vec<String>)> = Vec::new();
    let mut heading_now = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(&done) = step_at.get(&i) {
            let indent = indent_of(line);
            let (id, text) = item_text(line);
            if text.is_empty() {
                return Err(refused(format!("{name}:{}", i + 1), "an item with no text"));
            }
            let mut details = Vec::new();
            let mut j = i + 1;
            while j < lines.len() && !step_at.contains_key(&j) {
                let l = lines[j];
                if !l.trim().is_empty() && indent_of(l) <= indent && !fenced[j] {
                    break;
                }
                if !l.trim().is_empty() {
                    details.push(l.trim().to_string());
                }
                j += 1;
            }
            sections.last_mut().expect("one").1.steps.push(Step {
                id,
                text,
                done,
                details,
                place: format!("{name}:{}", i + 1),
            });
            i = j;
            continue;
        }
        match heading(line).filter(|_| !fenced[i]) {
            Some((1, h)) if sections.len() == 1 && sections[0].1.steps.is_empty() => {
                intro.push(format!("Plan: {h}"));
                heading_now = h;
            }
            Some((level, h)) => {
                sections.push((
                    level,
                    Section {
                        heading: Some((level.max(2), h.clone())),
                        steps: Vec::new(),
                    },
                ));
                heading_now = h;
            }
            None if !line.trim().is_empty() && line.trim() != "---" => match notes.last_mut() {
                Some((h, ls)) if *h == heading_now => ls.push(line.to_string()),
                _ => notes.push((heading_now.clone(), vec![line.to_string()])),
            },
            None => {}
        }
        i += 1;
    }
    // A heading stays where it, or a heading below it, has items.
    let mut keep = vec![false; sections.len()];
    for k in (0..sections.len()).rev() {
        let level = sections[k].0;
        keep[k] = !sections[k].1.steps.is_empty()
            || sections[k].1.heading.is_some()
                && (k + 1..sections.len())
                    .take_while(|&m| sections[m].0 > level)
                    .any(|m| keep[m]);
    }
    let sections = sections
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|((_, s), _)| s)
        .collect();
    let notes: Vec<String> = notes
        .into_iter()
        .map(|(h, ls)| {
            let body = ls.join("\n");
            if h.is_empty() {
                body
            } else {
                format!("{h}:\n\n{body}")
            }
        })
        .collect();
    Ok(Plan {
        format: Format::FixPlan,
        intro,
        sections,
        rules: (!notes.is_empty()).then(|| format!("Notes from {name}:\n\n{}", notes.join("\n\n"))),
        references: Vec::new(),
        progress: None,
        learnings: None,
    })
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
/// reporting), with headings one level down.
pub fn rules_of_prompt(text: &str) -> String {
    let fenced = fenced_lines(text);
    let lines: Vec<&str> = text.lines().collect();
    let mut parts: Vec<(Option<String>, Vec<&str>)> = vec![(None, Vec::new())];
    for (i, l) in lines.iter().enumerate() {
        match heading(l).filter(|_| !fenced[i]) {
            Some((1, _)) => {}
            Some((2, h)) => parts.push((Some(h), vec![l])),
            _ => parts.last_mut().expect("one").1.push(l),
        }
    }
    let protocol = |h: &Option<String>, body: &[&str]| {
        let h = h.as_deref().unwrap_or_default().to_lowercase();
        [
            "status report",
            "status output",
            "exit scenario",
            "exit criteria",
            "exit condition",
        ]
        .iter()
        .any(|w| h.contains(w))
            || body.iter().any(|l| {
                l.contains("RALPH_STATUS") || l.contains("EXIT_SIGNAL") || l.contains("<promise>")
            })
    };
    let kept: Vec<&str> = parts
        .iter()
        .filter(|(h, body)| !protocol(h, body))
        .flat_map(|(_, body)| body.iter().copied())
        .collect();
    demote(&kept.join("\n")).trim().to_string()
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
    }
}
