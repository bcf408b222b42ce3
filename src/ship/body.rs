//! A run's pull request as text: its title (the spec's), and its body (the
//! steps, checked or not; the gate's and the reviewer's verdicts; the
//! run's sessions, agents and cost; `Closes #N` for each step that is a
//! GitHub issue). Pure.

use crate::work::spec::{self, Step};

/// What a pull request tells of a run.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    /// The spec's text.
    pub spec: &'a str,
    pub branch: &'a str,
    pub run_id: &'a str,
    /// `complete`, `waiting for a human`, ... and why.
    pub outcome: &'a str,
    pub reason: &'a str,
    pub complete: bool,
    /// `passed`, or the command that failed and why; `None`: no gate.
    pub gate: Option<String>,
    /// The reviewer's last verdict; `None`: no review.
    pub review: Option<String>,
    pub sessions: u32,
    pub agents: Vec<String>,
    /// `$1.25`, `cost unknown`.
    pub cost: String,
}

/// The issue a step is, when its id is `#N` (its label `**#N**`, its task
/// `[#N]` at the end of its line).
pub fn issue_of(step: &Step) -> Option<u64> {
    let num = |s: &str| s.strip_prefix('#').and_then(|n| n.parse::<u64>().ok());
    let trailing = step
        .title
        .strip_suffix(']')
        .and_then(|t| t.rsplit_once('['))
        .map(|(_, id)| id.trim());
    [step.label.as_deref(), step.task.as_deref(), trailing]
        .into_iter()
        .flatten()
        .find_map(num)
}

/// The spec's first `# ` heading, else one made of the branch.
pub fn title(spec: &str, branch: &str) -> String {
    spec.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| one_line(t, 200))
        .unwrap_or_else(|| format!("ralph: {branch}"))
}

/// Text from a file a session wrote, made safe for one line of Markdown:
/// no control characters, no line breaks, bounded.
fn one_line(s: &str, most: usize) -> String {
    let s = crate::output::visible_line(s);
    if s.chars().count() > most {
        s.chars().take(most).collect::<String>() + "…"
    } else {
        s
    }
}

/// The body of the run's pull request.
pub fn body(f: &Facts) -> String {
    let spec = spec::parse(f.spec);
    let mut out = String::new();
    let state = if f.complete {
        "Complete"
    } else {
        "Not complete (draft)"
    };
    out.push_str(&format!(
        "{state}: {} — {}. Opened by ralph from branch `{}`, run `{}`.\n\n",
        f.outcome,
        one_line(f.reason, 300),
        one_line(f.branch, 200),
        f.run_id
    ));
    out.push_str(&format!("## Steps ({})\n\n", spec.progress()));
    for s in spec.steps.iter().take(500) {
        let mark = if s.checked { "x" } else { " " };
        let label = s
            .label
            .as_deref()
            .map(|l| format!("**{}** ", one_line(l, 40)))
            .unwrap_or_default();
        // A GitHub issue as the step's task (`[#7]`) is shown as written.
        let issue = s
            .task
            .as_deref()
            .filter(|t| spec::issue_number(t).is_some())
            .map(|t| format!(" [{t}]"))
            .unwrap_or_default();
        out.push_str(&format!(
            "- [{mark}] {label}{}{issue}\n",
            one_line(&s.title, 300)
        ));
    }
    out.push_str("\n## Verdicts\n\n");
    out.push_str(&format!(
        "- Gate: {}\n",
        f.gate.as_deref().unwrap_or("none set")
    ));
    out.push_str(&format!(
        "- Review: {}\n",
        f.review.as_deref().unwrap_or("none")
    ));
    out.push_str(&format!(
        "\n## Run\n\n- Sessions: {}\n- Agents: {}\n- Cost: {}\n",
        f.sessions,
        f.agents.join(", "),
        f.cost
    ));
    let mut closes: Vec<u64> = spec.steps.iter().filter_map(issue_of).collect();
    closes.dedup();
    if !closes.is_empty() {
        out.push('\n');
        for n in closes {
            out.push_str(&format!("Closes #{n}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "# Make the parser strict\n\n- [x] **#12** Reject bad input\n- [ ] **2** Document it [#7]\n- [x] **3** Plain step\n";

    #[test]
    fn the_body_lists_steps_verdicts_and_the_issues_it_closes() {
        let f = Facts {
            spec: SPEC,
            branch: "ralph/strict",
            run_id: "r1",
            outcome: "waiting for a human",
            reason: "step 2 needs a decision",
            complete: false,
            gate: Some("passed".into()),
            review: Some("approved".into()),
            sessions: 4,
            agents: vec!["claude".into(), "codex".into()],
            cost: "$1.25".into(),
        };
        let b = body(&f);
        assert!(
            b.starts_with("Not complete (draft): waiting for a human — step 2 needs a decision.")
        );
        assert!(b.contains("## Steps (2/3 steps done)\n\n- [x] **#12** Reject bad input\n- [ ] **2** Document it [#7]\n- [x] **3** Plain step\n"), "{b}");
        assert!(b.contains("- Gate: passed\n- Review: approved\n"), "{b}");
        assert!(
            b.contains("- Sessions: 4\n- Agents: claude, codex\n- Cost: $1.25\n"),
            "{b}"
        );
        assert!(b.ends_with("\nCloses #12\nCloses #7\n"), "{b}");
        assert_eq!(title(SPEC, "ralph/strict"), "Make the parser strict");
        assert_eq!(title("- [ ] x\n", "ralph/strict"), "ralph: ralph/strict");
    }

    #[test]
    fn what_a_session_wrote_cannot_break_out_of_its_line() {
        let f = Facts {
            spec: "# T\x1b[31m\n\n- [ ] **1** a\x07b\n",
            reason: "x\nCloses #99",
            ..Default::default()
        };
        let b = body(&f);
        assert!(!b.contains('\x1b') && !b.contains('\x07'), "{b}");
        assert!(!b.contains("\nCloses #99"), "{b}");
        assert_eq!(title("# T\x1b[31m\n", "b"), "T^[[31m");
    }
}
