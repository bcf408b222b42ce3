//! The reviewer: a fresh session that did none of the work judges it before
//! COMPLETE (or a checked step) counts. Pure: its prompt, its verdict (read
//! from its own final message) and what the next work session is told of a
//! rejection.

use serde::{Deserialize, Serialize};

/// When the reviewer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// Once COMPLETE holds and the gate passed: the whole run.
    Complete,
    /// After each session that checked a box: the steps it checked.
    Step,
}

impl When {
    pub fn parse(s: &str) -> Result<When, String> {
        match s {
            "complete" => Ok(When::Complete),
            "step" => Ok(When::Step),
            _ => Err(format!("review: when = {s:?} is not `complete` or `step`")),
        }
    }
}

/// The reviewer of a run, as its settings say.
#[derive(Debug, Clone)]
pub struct Reviewer {
    pub agent: crate::agent::Agent,
    /// Its program (checked like the run's own).
    pub program: std::path::PathBuf,
    pub model: Option<String>,
    pub when: When,
    /// `[review] prompt`: the standing instructions (else ralph's own).
    pub prompt: Option<std::path::PathBuf>,
    pub max_rounds: u32,
}

/// What a review session came to. Only the reviewer's own final message
/// gives a verdict (its last `VERDICT:` line); anything else is no verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "verdict", content = "findings")]
pub enum Verdict {
    Approved,
    Rejected(Vec<String>),
    /// Why there is none (no verdict line, a stream something else wrote
    /// to, a session that changed the work).
    NoVerdict(String),
}

/// What a review came to, as its record keeps it (`approved`, `rejected`,
/// `no verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Judgement {
    Approved,
    Rejected,
    #[serde(rename = "no verdict")]
    NoVerdict,
    /// Its agent was at its usage limit: waited out, no round counted.
    Limited,
}

impl std::fmt::Display for Judgement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Judgement::Approved => "approved",
            Judgement::Rejected => "rejected",
            Judgement::NoVerdict => "no verdict",
            Judgement::Limited => {
                "no verdict (its agent was at its usage limit; waited out, no round counted)"
            }
        })
    }
}

impl Verdict {
    /// The verdict's kind, as records and faces keep it.
    pub fn judgement(&self) -> Judgement {
        match self {
            Verdict::Approved => Judgement::Approved,
            Verdict::Rejected(_) => Judgement::Rejected,
            Verdict::NoVerdict(_) => Judgement::NoVerdict,
        }
    }

    pub fn approved(&self) -> bool {
        *self == Verdict::Approved
    }

    /// What the next session (and the human) is told: the findings, or why
    /// there was no verdict.
    pub fn findings(&self) -> Vec<String> {
        match self {
            Verdict::Approved => Vec::new(),
            Verdict::Rejected(f) => f.clone(),
            Verdict::NoVerdict(why) => vec![format!("the reviewer gave no verdict: {why}")],
        }
    }

    /// One line: `approved`, `rejected (2 findings)`, `no verdict`.
    pub fn text(&self) -> String {
        match self {
            Verdict::Approved => "approved".into(),
            Verdict::Rejected(f) => format!(
                "rejected ({})",
                crate::output::counted(f.len() as u64, "finding", "findings")
            ),
            Verdict::NoVerdict(_) => "no verdict".into(),
        }
    }
}

pub const MAX_FINDINGS: usize = 20;
pub const MAX_FINDING_CHARS: usize = 2000;
/// A final message is read no further than this (its end, where the
/// verdict is).
pub const FINAL_CAP: usize = 64 * 1024;

/// The findings of a rejection, each trimmed: at least one, none empty,
/// within bounds.
pub fn check_findings(findings: &[String]) -> Result<Vec<String>, String> {
    let f: Vec<String> = findings.iter().map(|f| f.trim().to_string()).collect();
    if f.is_empty() || f.iter().any(|f| f.is_empty()) {
        return Err(
            "a rejection needs its findings, one `- ` line per problem after `VERDICT: reject`"
                .into(),
        );
    }
    if f.len() > MAX_FINDINGS {
        return Err(format!(
            "{} findings: at most {MAX_FINDINGS}; merge the small ones",
            f.len()
        ));
    }
    if let Some(long) = f.iter().find(|f| f.chars().count() > MAX_FINDING_CHARS) {
        return Err(format!(
            "a finding of {} characters: at most {MAX_FINDING_CHARS} each ({}...)",
            long.chars().count(),
            long.chars().take(40).collect::<String>()
        ));
    }
    Ok(f)
}

/// What the session's stream says of its end, as far as a verdict goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending<'a> {
    /// The final message's text, if the session gave one.
    pub text: Option<&'a str>,
    /// How many final results the stream held: exactly one is the agent's;
    /// more means something besides the agent wrote to its output.
    pub results: u32,
    /// The session ended well (exit 0, no error result).
    pub ok: bool,
    /// Lines of its output that were no event of the agent's.
    pub unread: u32,
}

/// The verdict in the reviewer's own final message: its last line that
/// starts `VERDICT:`, `approve` or `reject`, a rejection's findings as the
/// `- ` lines after it (an indented line goes on the finding above).
/// Nothing a tool of the reviewer's runs can write the final message, so
/// the verdict is the reviewer's alone.
pub fn read_verdict(end: Ending) -> Verdict {
    let none = |why: &str| Verdict::NoVerdict(why.to_string());
    if end.results > 1 {
        return Verdict::NoVerdict(format!(
            "its output held {} final results where an agent writes one: something besides the reviewer wrote to it",
            end.results
        ));
    }
    if end.unread > 0 {
        return Verdict::NoVerdict(format!(
            "its output held {} line(s) that were no event of the agent's: something besides the reviewer wrote to it",
            end.unread
        ));
    }
    if !end.ok {
        return none("it did not end well (an error, a signal or a time-out)");
    }
    let Some(text) = end.text.filter(|t| !t.trim().is_empty()) else {
        return none("it ended without a final message");
    };
    let mut cut = text.len().saturating_sub(FINAL_CAP);
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    let lines: Vec<&str> = text[cut..].lines().collect();
    let plain = |l: &str| {
        l.trim()
            .trim_matches(|c| c == '*' || c == '`')
            .trim()
            .to_string()
    };
    let Some(at) = lines.iter().rposition(|l| plain(l).starts_with("VERDICT:")) else {
        return none("its final message has no `VERDICT: approve` or `VERDICT: reject` line");
    };
    let word = plain(lines[at])["VERDICT:".len()..].trim().to_lowercase();
    let rest = &lines[at + 1..];
    match word.as_str() {
        "approve" | "approved" if rest.iter().all(|l| l.trim().is_empty()) => Verdict::Approved,
        "approve" | "approved" => none("text follows its `VERDICT: approve` line"),
        "reject" | "rejected" => match findings_of(rest) {
            Ok(f) => Verdict::Rejected(f),
            Err(e) => Verdict::NoVerdict(format!("its rejection is not valid: {e}")),
        },
        other => Verdict::NoVerdict(format!(
            "`VERDICT: {}` is not `approve` or `reject`",
            other.chars().take(40).collect::<String>()
        )),
    }
}

/// The `- ` lines after `VERDICT: reject`, continuation lines joined.
fn findings_of(lines: &[&str]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for l in lines {
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(f) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
            out.push(f.to_string());
        } else if let (Some(last), true) = (out.last_mut(), l.starts_with([' ', '\t'])) {
            last.push('\n');
            last.push_str(t);
        } else {
            return Err(format!(
                "the line {:?} after it is not a `- ` finding",
                t.chars().take(60).collect::<String>()
            ));
        }
    }
    check_findings(&out)
}

/// The reviewer's built-in standing instructions (`[review] prompt`
/// replaces them).
pub const DEFAULT_PROMPT: &str = include_str!("../templates/review.md");

/// What one review looks at.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// `the whole run` or `session 4's step(s)`.
    pub what: &'a str,
    /// The criteria: the spec, or the steps' lines.
    pub criteria: &'a str,
    /// The commit the changes are measured from.
    pub base: Option<&'a str>,
    /// `git diff --stat` and the diff itself (cut to a size).
    pub stat: &'a str,
    pub diff: &'a str,
    pub diff_cut: bool,
    /// The gate's last verdict, in a line, and its last lines.
    pub gate: Option<(&'a str, &'a [String])>,
    /// This is review round `round` of at most `max_rounds` in a row.
    pub round: u32,
    pub max_rounds: u32,
}

/// The review session's prompt: the standing instructions, then what to
/// review.
pub fn prompt(standing: &str, i: &Input) -> String {
    let mut p = standing.trim_end().to_string();
    p.push_str(&format!(
        "\n\n# This review\n\nYou review {} (round {} of at most {} in a row before a human is called).\n\n## The criteria\n\n{}\n",
        i.what,
        i.round,
        i.max_rounds,
        i.criteria.trim_end()
    ));
    let base = i.base.unwrap_or("(no commit: the repository had none)");
    p.push_str(&format!(
        "\n## The changes\n\nSince commit {base}, ralph's own `.ralph/` files aside (`git diff {base} -- . ':(exclude).ralph'` shows them all; `git log {base}..HEAD` the commits):\n\n```text\n{}\n```\n",
        i.stat.trim_end()
    ));
    if !i.diff.trim().is_empty() {
        let cut = if i.diff_cut {
            " (cut: run the command above for the rest)"
        } else {
            ""
        };
        p.push_str(&format!(
            "\nThe diff{cut}:\n\n```diff\n{}\n```\n",
            i.diff.trim_end()
        ));
    }
    if let Some((line, tail)) = i.gate {
        p.push_str(&format!("\n## The project's checks\n\n{line}\n"));
        if !tail.is_empty() {
            p.push_str(&format!(
                "\nTheir last lines:\n\n```text\n{}\n```\n",
                tail.join("\n")
            ));
        }
    }
    p
}

/// `.ralph/review-failed.md`: what the next work session reads first.
pub fn feedback(findings: &[String], what: &str, time: &str, rounds: (u32, u32)) -> String {
    let mut s = String::from("# The reviewer rejected the work\n\n");
    s.push_str(&format!(
        "At {time}, an independent review session judged {what} and rejected it \
         (rejection {} in a row; at {} ralph stops for a human). Until a review \
         approves, the work does not count.\n\n\
         Fix each finding (this comes first, before the next step), verify the fix, \
         commit, and check the step's box again (or run `ralph complete` again if every \
         step is done). ralph removes this file once a review approves.\n\n## Findings\n\n",
        rounds.0, rounds.1
    ));
    for f in findings {
        s.push_str(&format!("- {}\n", f.replace('\n', "\n  ")));
    }
    s
}

/// The diff as given to the reviewer: at most `max` bytes, cut at a line.
pub fn cut_diff(diff: &str, max: usize) -> (&str, bool) {
    if diff.len() <= max {
        return (diff, false);
    }
    let mut end = max;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let end = diff[..end].rfind('\n').map_or(end, |i| i + 1);
    (&diff[..end], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(text: &str) -> Verdict {
        read_verdict(Ending {
            text: Some(text),
            results: 1,
            ok: true,
            unread: 0,
        })
    }

    #[test]
    fn the_verdict_is_the_last_verdict_line_of_the_final_message() {
        assert_eq!(said("All good.\n\nVERDICT: approve\n"), Verdict::Approved);
        assert_eq!(said("**VERDICT: approve**"), Verdict::Approved);
        assert_eq!(
            said(
                "VERDICT: approve\nOn second thought:\nVERDICT: reject\n- x is wrong\n  in a.rs\n- no test\n"
            ),
            Verdict::Rejected(vec!["x is wrong\nin a.rs".into(), "no test".into()])
        );
        for (text, why) in [
            ("Looks good to me, approved!", "no `VERDICT: approve`"),
            ("VERDICT: approve\nbut y", "text follows"),
            ("VERDICT: reject\n", "rejection is not valid"),
            ("VERDICT: reject\nx is wrong", "is not a `- ` finding"),
            ("VERDICT: maybe", "is not `approve` or `reject`"),
            ("  ", "without a final message"),
        ] {
            let v = said(text);
            assert!(
                matches!(&v, Verdict::NoVerdict(w) if w.contains(why)),
                "{text:?}: {v:?}"
            );
        }
        // (results, ok, unread): two final results, or a forged one and
        // bytes that glue the agent's own lines into no JSON: something
        // else wrote to the stream; a session that failed.
        for (results, ok, unread, why) in [
            (2, true, 0, "2 final results"),
            (1, true, 3, "3 line(s)"),
            (1, false, 0, "did not end well"),
        ] {
            let v = read_verdict(Ending {
                text: Some("VERDICT: approve"),
                results,
                ok,
                unread,
            });
            assert!(
                matches!(&v, Verdict::NoVerdict(w) if w.contains(why)),
                "{why}: {v:?}"
            );
        }
        assert!(
            !read_verdict(Ending {
                text: None,
                results: 0,
                ok: true,
                unread: 0
            })
            .approved()
        );
        // Only the end of a long message is read, cut at a character.
        let long = format!("{}\nVERDICT: approve", "x".repeat(FINAL_CAP * 2));
        assert_eq!(said(&long), Verdict::Approved);
        let wide = format!("{}\nVERDICT: approve", "é".repeat(FINAL_CAP));
        assert_eq!(said(&wide), Verdict::Approved);
        // A long finding is read whole (its verdict line is further back
        // than a line or two).
        let finding = "y".repeat(MAX_FINDING_CHARS - 1);
        assert_eq!(
            said(&format!("VERDICT: reject\n- {finding}")),
            Verdict::Rejected(vec![finding])
        );
    }

    #[test]
    fn when_is_complete_or_step() {
        assert_eq!(When::parse("complete"), Ok(When::Complete));
        assert_eq!(When::parse("step"), Ok(When::Step));
        assert!(
            When::parse("each")
                .unwrap_err()
                .contains("`complete` or `step`")
        );
    }

    #[test]
    fn findings_are_bounded_and_trimmed() {
        assert_eq!(
            check_findings(&[" a \n".into()]).unwrap(),
            vec!["a".to_string()]
        );
        assert!(check_findings(&[]).unwrap_err().contains("`- ` line"));
        assert!(check_findings(&["a".into(), "  ".into()]).is_err());
        let many: Vec<String> = (0..=MAX_FINDINGS).map(|i| i.to_string()).collect();
        assert!(check_findings(&many).unwrap_err().contains("at most 20"));
        assert!(check_findings(&many[..MAX_FINDINGS]).is_ok());
        let long = "é".repeat(MAX_FINDING_CHARS + 1);
        assert!(check_findings(&[long]).unwrap_err().contains("2001"));
        assert!(check_findings(&["é".repeat(MAX_FINDING_CHARS)]).is_ok());
    }

    #[test]
    fn the_prompt_holds_the_criteria_changes_and_checks() {
        let tail = vec!["ok 3 tests".to_string()];
        let p = prompt(
            "STANDING",
            &Input {
                what: "the whole run",
                criteria: "- [x] **1** Add parse() [br-1]",
                base: Some("abc123"),
                stat: " src/a.rs | 3 ++-",
                diff: "+fn parse() {}\n",
                diff_cut: true,
                gate: Some(("`make test` passed", &tail)),
                round: 2,
                max_rounds: 3,
            },
        );
        for part in [
            "STANDING\n\n# This review",
            "the whole run (round 2 of at most 3",
            "**1** Add parse() [br-1]",
            "git diff abc123 -- .",
            "src/a.rs | 3 ++-",
            "The diff (cut: run the command above for the rest)",
            "+fn parse() {}",
            "`make test` passed",
            "ok 3 tests",
        ] {
            assert!(p.contains(part), "{part}: {p}");
        }
        let p = prompt(
            "S",
            &Input {
                diff: " ",
                diff_cut: false,
                gate: None,
                base: None,
                ..Input {
                    what: "w",
                    criteria: "c",
                    base: None,
                    stat: "",
                    diff: "",
                    diff_cut: false,
                    gate: None,
                    round: 1,
                    max_rounds: 3,
                }
            },
        );
        assert!(!p.contains("The diff") && !p.contains("checks"), "{p}");
        assert!(p.contains("no commit"), "{p}");
    }

    #[test]
    fn the_feedback_lists_each_finding() {
        let f = feedback(&["a\nb".into(), "c".into()], "step 1", "T", (1, 3));
        assert!(f.contains("- a\n  b\n- c\n"), "{f}");
        assert!(f.contains("rejection 1 in a row; at 3"), "{f}");
        assert!(f.contains("judged step 1"), "{f}");
    }

    #[test]
    fn a_diff_is_cut_at_a_line() {
        assert_eq!(cut_diff("ab\ncd\n", 10), ("ab\ncd\n", false));
        assert_eq!(cut_diff("ab\ncd\n", 4), ("ab\n", true));
        assert_eq!(cut_diff("ééé", 3), ("é", true));
        assert_eq!(
            Verdict::NoVerdict("x".into()).findings(),
            vec!["the reviewer gave no verdict: x".to_string()]
        );
        assert_eq!(
            Verdict::Rejected(vec!["a".into()]).text(),
            "rejected (1 finding)"
        );
    }
}
