//! The text edits of a parallel run, with no I/O: each step's phase (its
//! `##` section), a worker's spec with its step first, and the spec and
//! progress log of a merge (ralph's, never git's text merge).

use crate::work::spec::{self, Step};

/// Each step's phase, in the spec's order: how many `##` sections begin
/// before it (steps before the first are phase 0). Headings in code blocks
/// are not sections.
pub fn phases(text: &str) -> Vec<usize> {
    use pulldown_cmark::{Event, HeadingLevel, Parser, Tag};
    let starts: Vec<usize> = Parser::new(text)
        .into_offset_iter()
        .filter_map(|(e, r)| match e {
            Event::Start(Tag::Heading {
                level: HeadingLevel::H2,
                ..
            }) => Some(line_of(text, r.start)),
            _ => None,
        })
        .collect();
    spec::parse(text)
        .steps
        .iter()
        .map(|s| starts.iter().filter(|&&h| h < s.line).count())
        .collect()
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The step with this key, if the spec has it.
pub fn find<'a>(steps: &'a [Step], key: &str) -> Option<&'a Step> {
    steps.iter().find(|s| s.key() == key)
}

/// Does the spec `text` have step `key` checked? The one answer to "is
/// this step done" on a spec, wherever it was read: a worktree, a
/// branch's commit, another machine's branch.
pub fn checked(text: &str, key: &str) -> bool {
    find(&spec::parse(text).steps, key).is_some_and(|s| s.checked)
}

/// A worker's spec: its step (with the lines indented under it) moved up
/// to where the first open step is, so that "the first open step" is its
/// own. Nothing else changes; the text is returned as it was when its step
/// is first already (or not there).
pub fn first_open(text: &str, key: &str) -> String {
    let parsed = spec::parse(text);
    let (Some(mine), Some(first)) = (
        find(&parsed.steps, key),
        parsed.steps.iter().find(|s| !s.checked),
    ) else {
        return text.to_string();
    };
    if mine.line <= first.line {
        return text.to_string();
    }
    // Whole lines only: a last line without its newline gets one while it
    // moves, and the text ends as it did.
    let ended = text.ends_with('\n');
    let whole = if ended {
        text.to_string()
    } else {
        format!("{text}\n")
    };
    let mut lines: Vec<&str> = whole.split_inclusive('\n').collect();
    let start = mine.line - 1;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let own = indent(lines[start]);
    let end = start
        + 1
        + lines[start + 1..]
            .iter()
            .take_while(|l| !l.trim().is_empty() && indent(l) > own)
            .count();
    let block: Vec<&str> = lines.drain(start..end).collect();
    let at = first.line - 1;
    lines.splice(at..at, block);
    let out = lines.concat();
    match ended {
        true => out,
        false => out.strip_suffix('\n').unwrap_or(&out).to_string(),
    }
}

/// `text` with the step's box checked (`None`: no such step).
pub fn check(text: &str, key: &str) -> Option<String> {
    let parsed = spec::parse(text);
    let step = find(&parsed.steps, key)?;
    if step.checked {
        return Some(text.to_string());
    }
    Some(spec::set_box(text, step.line, true))
}

/// The progress log after a merge: ours, then what the step's branch added
/// to the log it started from (its new lines, in its order).
pub fn merge_log(base: &str, ours: &str, theirs: &str) -> String {
    let added: String = match theirs.strip_prefix(base) {
        Some(rest) => rest.to_string(),
        None => {
            let old: std::collections::HashSet<&str> = base.lines().collect();
            theirs
                .lines()
                .filter(|l| !old.contains(l))
                .map(|l| format!("{l}\n"))
                .collect()
        }
    };
    if added.trim().is_empty() {
        return ours.to_string();
    }
    let mut out = ours.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&added);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "# Spec\n\n- [ ] **0** Setup\n\n## Parts\n\n- [x] **1** One\n- [ ] **2** Two\n  detail of two\n- [ ] **3** Three\n\n```\n## not a section\n```\n\n## Last\n\n- [ ] **4** Four\n";

    #[test]
    fn phases_are_the_second_level_sections() {
        assert_eq!(phases(SPEC), vec![0, 1, 1, 1, 2]);
        assert_eq!(phases("- [ ] a\n- [ ] b\n"), vec![0, 0]);
        // A step right above a heading (no blank line) is the section's
        // before it.
        assert_eq!(
            phases("## One\n- [ ] a\n- [ ] b\n## Two\n- [ ] c\n"),
            vec![1, 1, 2]
        );
    }

    #[test]
    fn a_workers_step_becomes_the_first_open_one_with_its_details() {
        let out = first_open(SPEC, "**3** Three");
        assert!(
            out.starts_with("# Spec\n\n- [ ] **3** Three\n- [ ] **0** Setup\n"),
            "{out}"
        );
        assert_eq!(out.len(), SPEC.len(), "nothing lost:\n{out}");
        let out = first_open(SPEC, "**2** Two");
        assert!(
            out.contains("- [ ] **2** Two\n  detail of two\n- [ ] **0** Setup"),
            "{out}"
        );
        let first = spec::parse(&out)
            .steps
            .into_iter()
            .find(|s| !s.checked)
            .unwrap();
        assert_eq!(first.key(), "**2** Two");
        assert_eq!(first_open(SPEC, "**0** Setup"), SPEC, "already first");
        assert_eq!(first_open(SPEC, "nope"), SPEC);
        // The last line without its newline.
        let t = "- [ ] a\n- [ ] b";
        assert_eq!(first_open(t, "b"), "- [ ] b\n- [ ] a");
    }

    #[test]
    fn a_merge_checks_its_steps_box_only() {
        let out = check(SPEC, "**3** Three").unwrap();
        assert!(out.contains("- [x] **3** Three\n"));
        assert_eq!(spec::parse(&out).done(), 2);
        assert_eq!(check(SPEC, "**1** One").as_deref(), Some(SPEC));
        assert_eq!(check(SPEC, "**9** None"), None);
    }

    #[test]
    fn a_merged_log_keeps_ours_and_adds_what_the_branch_wrote() {
        let base = "# Log\n- a\n";
        assert_eq!(
            merge_log(base, "# Log\n- a\n- ours\n", "# Log\n- a\n- theirs\n"),
            "# Log\n- a\n- ours\n- theirs\n"
        );
        // The branch rewrote the top: only its new lines come over.
        assert_eq!(
            merge_log(base, "# Log\n- a\n- ours", "# Log!\n- a\n- b\n"),
            "# Log\n- a\n- ours\n# Log!\n- b\n"
        );
        assert_eq!(merge_log(base, "x\n", base), "x\n");
    }

    #[test]
    fn a_step_is_checked_by_its_key_in_the_text_given() {
        let text = "# S\n\n- [x] **1** One\n- [ ] **2** Two\n";
        assert!(checked(text, "**1** One"));
        assert!(!checked(text, "**2** Two"));
        assert!(
            !checked(text, "**3** Three"),
            "a step the spec lacks is not done"
        );
        assert!(!checked("", "**1** One"));
    }
}
