//! `ralph import`: another Ralph's files read into one `Plan`, and that plan
//! written as ralph's own (the spec's text, the readme, the progress log,
//! the learnings). Pure: texts in, texts out; the command does the I/O.
//!
//! Two formats, told apart by content, never by name: a snarktank
//! `prd.json` (a JSON object with `userStories`, `prd`) and a
//! ralph-claude-code `fix_plan.md` (Markdown with checkboxes, `fix_plan`).

pub mod fix_plan;
pub mod github;
pub mod prd;

use crate::work::add::clean_title;
use crate::work::spec;

/// Which tool's files these are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// snarktank/ralph: `prd.json` (and `progress.txt` beside it).
    Prd,
    /// frankbria/ralph-claude-code: `fix_plan.md` / `@fix_plan.md` (and
    /// `PROMPT.md`, `AGENT.md` / `@AGENT.md`, `specs/` beside it).
    FixPlan,
    /// A repository's open GitHub issues with ralph's label (`ralph import
    /// github`): each a step, the issue its task.
    GitHub,
}

impl Format {
    pub fn describe(self) -> &'static str {
        match self {
            Format::Prd => "a snarktank prd.json",
            Format::FixPlan => "a ralph-claude-code fix plan",
            Format::GitHub => "its open GitHub issues",
        }
    }
}

/// An input ralph cannot read whole, and where: refused, never half imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// `prd.json:12:5`, `userStories[3].passes`, `fix_plan.md:40`.
    pub place: String,
    pub what: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.place, self.what)
    }
}

pub fn refused(place: impl Into<String>, what: impl Into<String>) -> Refused {
    Refused {
        place: place.into(),
        what: what.into(),
    }
}

/// One step: a user story or a plan item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The source's own id (`US-001`, `P0-001`), if it has one.
    pub id: Option<String>,
    /// One line.
    pub text: String,
    pub done: bool,
    /// More lines about it: the story's description, acceptance criteria and
    /// notes, or the item's sub-bullets. The task's description.
    pub details: Vec<String>,
    /// Where it is in the source (`userStories[2]`, `fix_plan.md:14`).
    pub place: String,
}

impl Step {
    /// The task's title: the step's text, with its id before it.
    pub fn title(&self) -> String {
        let text = one_line(&self.text);
        match &self.id {
            Some(id) => one_line(&format!("{} {text}", clean_title(id))),
            None => text,
        }
    }
}

/// Text as one line: control characters and line breaks as spaces, runs of
/// space as one; brackets kept as the author wrote them (`src/[id]/route.ts`,
/// `Build the endpoint [API-1]`): where one ends a step's line, the spec
/// keeps it text (`ends_plainly`).
pub fn one_line(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A heading of the source (a fix plan's section, a prd's priority) and the
/// steps under it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Section {
    /// Its level (2 for `##`, 3 for `###`) and text; none before the first.
    pub heading: Option<(usize, String)>,
    pub steps: Vec<Step>,
}

/// What another Ralph's files say, in ralph's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub format: Format,
    /// Lines that open the spec (the project, its description).
    pub intro: Vec<String>,
    pub sections: Vec<Section>,
    /// The project's own rules, for `.ralph/readme.md` (Markdown).
    pub rules: Option<String>,
    /// Reference documents beside it (`specs/...`), as paths.
    pub references: Vec<String>,
    /// The progress log, for `.ralph/progress.md`.
    pub progress: Option<String>,
    /// Its patterns / learnings part, for `.ralph/learnings.md`.
    pub learnings: Option<String>,
    /// How the source was read where it was not plain (a box without a
    /// bullet taken as a step), for the import to say.
    pub remarks: Vec<String>,
}

impl Plan {
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.sections.iter().flat_map(|s| s.steps.iter())
    }
    pub fn total(&self) -> usize {
        self.steps().count()
    }
    pub fn done(&self) -> usize {
        self.steps().filter(|s| s.done).count()
    }
    pub fn headings(&self) -> usize {
        self.sections.iter().filter(|s| s.heading.is_some()).count()
    }
}

/// Which format a file's text is, by its content: JSON with `userStories`,
/// or Markdown with checkboxes. `None`: neither.
pub fn recognise(text: &str) -> Option<Format> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('{') {
        return t.contains("userStories").then_some(Format::Prd);
    }
    let s = spec::parse(text);
    (!s.steps.is_empty() || !s.problems.is_empty()).then_some(Format::FixPlan)
}

/// The spec's text: a heading per section, a step per story or item, in
/// their order, numbered `**1**`, `**2**`, ... with the source's id first
/// in its text and its task's id (`tasks`, one per step in order) at the
/// end. Without tasks, a step's details follow it as sub-bullets (they have
/// nowhere else to go). The text is read back as ralph reads a spec: what
/// would not read as exactly these steps is refused, naming the step.
pub fn render_spec(plan: &Plan, source: &str, tasks: Option<&[String]>) -> Result<String, Refused> {
    let mut out = String::from("# Spec\n\n");
    out.push_str(&format!(
        "Imported by `ralph import` from {} ({}).\n",
        clean_title(source).replace('`', "'"),
        plan.format.describe()
    ));
    for line in &plan.intro {
        out.push('\n');
        out.push_str(&neutral(&one_line(line)));
        out.push('\n');
    }
    let mut n = 0usize;
    let mut places = Vec::new();
    for section in &plan.sections {
        if let Some((level, text)) = &section.heading {
            let hashes = "#".repeat((*level).clamp(2, 6));
            out.push_str(&format!("\n{hashes} {}\n", neutral(&one_line(text))));
        }
        if !section.steps.is_empty() {
            out.push('\n');
        }
        for step in &section.steps {
            let task = tasks.map(|t| t[n].as_str());
            n += 1;
            places.push(step.place.as_str());
            let mut line = format!(
                "- [{}] **{n}** {}",
                if step.done { 'x' } else { ' ' },
                ends_plainly(&step.title(), task.is_some())
            );
            match task {
                Some(id) => line.push_str(&format!(" [{id}]")),
                None => {
                    for d in detail_lines(&step.details) {
                        line.push('\n');
                        line.push_str(&d);
                    }
                }
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    check_reads_back(plan, &out, tasks, &places)?;
    Ok(out)
}

/// A step's details as the sub-bullets under its line, each as deep as
/// its author put it: a detail indented under another stays under it, and
/// the lines after a line that ends in a colon (`Acceptance criteria:`,
/// `Notes:`) go under that line, up to the next such line. Written flat, a story's criteria read as
/// siblings of its description rather than as the list they are.
fn detail_lines(details: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    // The depth of the last line written, and of the label open (if any).
    let mut last: Option<usize> = None;
    let mut label: Option<(usize, usize)> = None;
    for d in details {
        let body = d.trim_start();
        let indent: usize = d[..d.len() - body.len()]
            .chars()
            .map(|c| if c == '\t' { 4 } else { 1 })
            .sum();
        let bullet = ["- ", "* ", "+ "].iter().any(|b| body.starts_with(b));
        let text = clean_title(body.trim_start_matches(['-', '*', '+', ' ']));
        if text.is_empty() {
            continue;
        }
        let raw = indent / 2;
        let is_label = !bullet && text.ends_with(':');
        // Under a label (its own depth as written, and in the spec) until
        // the next label as shallow as it.
        let mut depth = match label {
            Some((at, l)) if !(is_label && raw <= at) => l + 1 + raw.saturating_sub(at),
            _ => raw,
        };
        // One level at most below the line before: deeper, a Markdown
        // reader would take it for code, not a list item.
        depth = depth.min(last.map_or(0, |l| l + 1));
        if is_label {
            label = Some((raw, depth));
        }
        last = Some(depth);
        out.push(format!("{}- {}", "  ".repeat(depth + 1), neutral(&text)));
    }
    out
}

/// A title that ends like a task id in parentheses (`... (US-003)`) would
/// be read as naming that task: a full stop after it keeps it text. So
/// would one in brackets (`Build the endpoint [API-1]`) where no task of
/// ralph's follows it (`with_task`): the author's id, kept as written (it
/// is how they and their other tools name the item; turned into
/// `(API-1).` it is neither), is never taken for ralph's task-id suffix,
/// which is only ever the bracket ralph writes last.
fn ends_plainly(title: &str, with_task: bool) -> String {
    let is_ref = title.ends_with(')')
        && title
            .rfind('(')
            .is_some_and(|o| spec::is_task_id(title[o + 1..title.len() - 1].trim_matches('`')));
    let is_task = !with_task
        && title.ends_with(']')
        && title.rfind('[').is_some_and(|o| {
            let id = title[o + 1..title.len() - 1].trim();
            spec::is_task_id(id) || spec::issue_number(id).is_some()
        });
    if is_ref || is_task {
        format!("{title}.")
    } else if title.is_empty() {
        "(no text)".into()
    } else {
        title.to_string()
    }
}

/// A line that is no step and must not read as an epic (`Epic: x-1`).
fn neutral(line: &str) -> String {
    let lower = line.to_ascii_lowercase();
    match lower.find("epic") {
        Some(at)
            if line[at + 4..]
                .trim_start_matches(['*', ' '])
                .starts_with(':') =>
        {
            format!(
                "{}epic{}",
                &line[..at],
                line[at + 4..].replacen(':', " -", 1)
            )
        }
        _ => line.to_string(),
    }
}

fn check_reads_back(
    plan: &Plan,
    text: &str,
    tasks: Option<&[String]>,
    places: &[&str],
) -> Result<(), Refused> {
    let read = spec::parse(text);
    if let Some(p) = read.problems.first() {
        return Err(refused(
            "the spec it would write",
            format!("line {}: {}", p.line, p.message),
        ));
    }
    if read.epic.is_some() {
        return Err(refused(
            "the spec it would write",
            "a line reads as an epic",
        ));
    }
    let wanted: Vec<&Step> = plan.steps().collect();
    if read.steps.len() != wanted.len() {
        return Err(refused(
            "the spec it would write",
            format!(
                "reads as {} steps, not the {} imported",
                read.steps.len(),
                wanted.len()
            ),
        ));
    }
    for (i, (got, want)) in read.steps.iter().zip(&wanted).enumerate() {
        let task = tasks.map(|t| t[i].as_str());
        let label = (i + 1).to_string();
        if got.checked != want.done
            || got.label.as_deref() != Some(label.as_str())
            || got.task.as_deref() != task
            || got.other_form.is_some()
        {
            return Err(refused(
                places[i],
                "its text would not read back as one step of the spec",
            ));
        }
    }
    Ok(())
}

/// `.ralph/readme.md`: ralph's reference table (`template`), the reference
/// documents beside the plan as rows, and the project's rules under a
/// heading of their own.
pub fn render_readme(plan: &Plan, template: &str, rules_from: &str) -> String {
    let mut out = template.trim_end().to_string();
    out.push('\n');
    for r in &plan.references {
        out.push_str(&format!(
            "| {} | `{}` | when a step needs it |\n",
            r.rsplit('/').next().unwrap_or(r).replace('|', "/"),
            r.replace(['|', '`'], "/")
        ));
    }
    // The rules go in a file of their own, which the map names: the
    // readme stays within its budget whatever their size.
    if plan.rules.is_some() {
        out.push_str(&format!(
            "| rules.md | `.ralph/rules.md` | the project's rules, imported from {}: read them before any step |\n",
            rules_from.replace(['|', '`'], "/")
        ));
    }
    out
}

/// `.ralph/rules.md`: the project's rules from the other Ralph's prompt
/// and agent files, under a line saying whence.
pub fn render_rules(plan: &Plan, rules_from: &str) -> Option<String> {
    let rules = plan.rules.as_ref()?;
    Some(format!(
        "# Project rules\n\nImported by `ralph import` from {rules_from}.\n\n{}\n",
        rules.trim()
    ))
}

/// `.ralph/learnings.md`: ralph's header (`template`), then the patterns.
pub fn render_learnings(plan: &Plan, template: &str, from: &str) -> Option<String> {
    let l = plan.learnings.as_ref()?;
    Some(format!(
        "{}\n\n## Imported from {from}\n\n{}\n",
        template.trim_end(),
        l.trim()
    ))
}

/// `.ralph/progress.md`: the log as it was, under a line saying whence.
pub fn render_progress(plan: &Plan, from: &str) -> Option<String> {
    let p = plan.progress.as_ref()?;
    Some(format!(
        "# Progress\n\nImported by `ralph import` from {from}; each session's entry follows it.\n\n{}\n",
        p.trim()
    ))
}

/// Line by line, whether each line is inside a fenced code block (its
/// fences included): headings there are none.
pub fn fenced_lines(text: &str) -> Vec<bool> {
    let mut fence: Option<(char, usize)> = None;
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            let ch = t.chars().next().filter(|c| *c == '`' || *c == '~');
            let run = ch.map_or(0, |c| t.chars().take_while(|x| *x == c).count());
            match (fence, ch) {
                (None, Some(c)) if run >= 3 => {
                    fence = Some((c, run));
                    true
                }
                (Some((c, n)), Some(c2)) if c == c2 && run >= n && t[run..].trim().is_empty() => {
                    fence = None;
                    true
                }
                (f, _) => f.is_some(),
            }
        })
        .collect()
}

/// An ATX heading's level and text (`## Notes` → (2, "Notes")).
pub fn heading(line: &str) -> Option<(usize, String)> {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return None;
    }
    let level = t.chars().take_while(|c| *c == '#').count();
    let rest = &t[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim().to_string()))
}

/// A Markdown text split at one section: the section whose heading `wanted`
/// picks (to the next heading of its level or above), and the rest.
pub fn split_section(text: &str, wanted: impl Fn(&str) -> bool) -> (Option<String>, String) {
    let fenced = fenced_lines(text);
    let lines: Vec<&str> = text.lines().collect();
    let start = (0..lines.len())
        .find(|&i| !fenced[i] && heading(lines[i]).is_some_and(|(_, h)| wanted(&h)));
    let Some(start) = start else {
        return (None, text.to_string());
    };
    let level = heading(lines[start]).map_or(1, |(l, _)| l);
    let end = (start + 1..lines.len())
        .find(|&i| !fenced[i] && heading(lines[i]).is_some_and(|(l, _)| l <= level))
        .unwrap_or(lines.len());
    let section = lines[start + 1..end].join("\n").trim().to_string();
    let rest = [&lines[..start], &lines[end..]].concat().join("\n");
    ((!section.is_empty()).then_some(section), rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(steps: Vec<Step>) -> Plan {
        Plan {
            format: Format::FixPlan,
            intro: vec![],
            sections: vec![Section {
                heading: Some((2, "High Priority".into())),
                steps,
            }],
            rules: None,
            references: vec![],
            progress: None,
            learnings: None,
            remarks: vec![],
        }
    }

    fn step(id: Option<&str>, text: &str, done: bool) -> Step {
        Step {
            id: id.map(String::from),
            text: text.into(),
            done,
            details: vec!["- a detail [x]".into()],
            place: "plan.md:3".into(),
        }
    }

    #[test]
    fn steps_are_numbered_with_their_ids_and_tasks() {
        let p = plan(vec![
            step(Some("US-001"), "First", true),
            step(None, "Second (ab-12)", false),
            step(None, "Edit src/[id]/route.ts [ab-3]", false),
        ]);
        let text = render_spec(&p, "prd.json", None).unwrap();
        assert!(
            text.ends_with("## High Priority\n\n- [x] **1** US-001 First\n  - a detail (x)\n- [ ] **2** Second (ab-12).\n  - a detail (x)\n- [ ] **3** Edit src/[id]/route.ts [ab-3].\n  - a detail (x)\n"),
            "{text}"
        );
        let tasks = ["p-1".to_string(), "p-2".to_string(), "p-3".to_string()];
        let text = render_spec(&p, "prd.json", Some(&tasks)).unwrap();
        assert!(
            text.ends_with("- [x] **1** US-001 First [p-1]\n- [ ] **2** Second (ab-12). [p-2]\n- [ ] **3** Edit src/[id]/route.ts [ab-3] [p-3]\n"),
            "{text}"
        );
        let s = spec::parse(&text);
        assert_eq!((s.total(), s.done()), (3, 1));
        assert_eq!(s.steps[2].title, "Edit src/[id]/route.ts [ab-3]");
        assert_eq!(s.steps[2].task.as_deref(), Some("p-3"));
        // The author's id, as written, in the task's title too.
        let api = step(None, "Build the endpoint [API-1]", false);
        assert_eq!(api.title(), "Build the endpoint [API-1]");
        let text = render_spec(&plan(vec![api]), "f.md", None).unwrap();
        assert!(
            text.contains("**1** Build the endpoint [API-1].\n"),
            "{text}"
        );
        assert_eq!(spec::parse(&text).steps[0].task, None, "{text}");
    }

    #[test]
    fn details_keep_their_depth_and_criteria_go_under_their_label() {
        let d: Vec<String> = [
            "As a user I want x.",
            "Acceptance criteria:",
            "- it works",
            "- tests pass",
            "Notes:",
            "a note",
            "- top",
            "  - under top",
            "      - far too deep",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            detail_lines(&d),
            [
                "  - As a user I want x.",
                "  - Acceptance criteria:",
                "    - it works",
                "    - tests pass",
                "  - Notes:",
                "    - a note",
                "    - top",
                "      - under top",
                "        - far too deep",
            ]
        );
        let mut p = plan(vec![step(None, "One", false)]);
        p.sections[0].steps[0].details = d;
        let text = render_spec(&p, "prd.json", None).unwrap();
        assert!(text.contains("- [ ] **1** One\n  - As a user I want x.\n  - Acceptance criteria:\n    - it works\n"), "{text}");
        assert_eq!(spec::parse(&text).total(), 1, "{text}");
    }

    #[test]
    fn text_that_would_read_as_more_is_kept_text() {
        let mut p = plan(vec![step(None, "x\n- [ ] sneaky", false)]);
        p.intro = vec!["Epic: [ab-1]".into()];
        let text = render_spec(&p, "f.md", None).unwrap();
        assert_eq!(spec::parse(&text).total(), 1, "{text}");
        assert!(spec::parse(&text).epic.is_none(), "{text}");
    }

    #[test]
    fn sections_split_outside_code() {
        let t = "## Codebase Patterns\n- use x\n```\n## not a heading\n```\n## Log\nentry\n";
        let (s, rest) = split_section(t, |h| h.to_lowercase().contains("pattern"));
        assert_eq!(s.as_deref(), Some("- use x\n```\n## not a heading\n```"));
        assert_eq!(rest, "## Log\nentry");
        assert_eq!(
            heading("### T1: Goodbye ##"),
            Some((3, "T1: Goodbye".into()))
        );
        assert_eq!(heading("#hashtag"), None);
    }

    #[test]
    fn formats_are_told_by_content() {
        assert_eq!(recognise("{\"userStories\": []}"), Some(Format::Prd));
        assert_eq!(recognise("{\"a\": 1}"), None);
        assert_eq!(recognise("# Plan\n\n- [ ] one\n"), Some(Format::FixPlan));
        assert_eq!(recognise("# Notes\n\njust text\n"), None);
    }
}
