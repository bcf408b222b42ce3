//! `ralph plan`'s pure part: the planning session's prompt (the planning
//! rules it shares with `/ralph-setup`), the check of what the session
//! drafted, and what the command says it came to.

use serde::Serialize;

use crate::work::completion::{CannotCheck, Judgement};
use crate::work::readiness::{self, Hindrance};

/// Where the session drafts the spec and the readme, under `.ralph/`.
pub const DRAFT_DIR: &str = "plan-draft";

/// The planning prompt: the user's words, where to write, then the rules.
const PROMPT: &str = include_str!("../templates/plan.md");

/// The part of `/ralph-setup` between these marks is the planning rules
/// both follow: one text, so they cannot drift apart.
const RULES_START: &str =
    "<!-- planning rules: `ralph plan` gives its session this part, to the end marker -->\n";
const RULES_END: &str = "<!-- end of the planning rules -->";

/// The planning rules, from `/ralph-setup`'s text.
pub fn rules() -> &'static str {
    let text = crate::ralph_setup::RALPH_SETUP;
    let start = text
        .find(RULES_START)
        .expect("/ralph-setup marks its rules")
        + RULES_START.len();
    let len = text[start..]
        .find(RULES_END)
        .expect("/ralph-setup ends its rules");
    text[start..start + len].trim()
}

/// The planning session's prompt: `what` the user wants built, the draft
/// folder it writes to (relative to the project), the tracker it uses.
pub fn prompt(what: &str, draft: &str, tracker: &str) -> String {
    // The user's words last: whatever they hold is not read as a mark.
    PROMPT
        .replace("{{RULES}}", rules())
        .replace("{{DRAFT}}", draft)
        .replace("{{TRACKER}}", tracker)
        .replace("{{WHAT}}", what.trim())
}

/// Where the session left the places ralph writes and deletes in after
/// it: `.ralph` (still a real folder of the project's?) and the tracker
/// (still the project's own, no link or redirect to another's?).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Places {
    pub ralph_real: bool,
    pub tracker_own: bool,
}

/// What the session did to those places, one problem each (`ralph_dir`
/// as said): ralph then puts back, writes and deletes nothing through
/// them, and keeps no plan.
pub fn redirected(p: Places, ralph_dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    if !p.ralph_real {
        out.push(format!(
            "{ralph_dir} is a symlink now, or no folder: the planning session replaced ralph's folder, and ralph wrote and put back nothing through it (your files are where the session moved them)"
        ));
    }
    if !p.tracker_own {
        out.push(
            "the planning session pointed the tracker (.beads) at another project's (a link, or a redirect): ralph deleted no task there and kept no plan of its tasks; remove the link or redirect"
                .to_string(),
        );
    }
    out
}

/// What the session drafted, read back (`None`: not written).
#[derive(Debug, Default)]
pub struct Draft {
    pub spec: Option<String>,
    pub readme: Option<String>,
}

/// Why the draft may not replace the project's files, one line each; none
/// when it may. `judged` is the finish check of the drafted spec against
/// the tracker (`None` when there is no spec to check).
pub fn problems(
    draft: &Draft,
    judged: Option<&Result<Judgement, CannotCheck>>,
    readme_template: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    match (&draft.spec, judged) {
        (Some(_), Some(judged)) => {
            // The finish check `ralph loop` makes before its first session,
            // and its warnings too: a plan starts with none of them.
            for h in readiness::hindrances(judged, &[]) {
                if !matches!(&h, Hindrance::Warning(w) if w.ends_with("names no tracker task")) {
                    out.push(h.to_string());
                }
            }
            if let Ok(j) = judged {
                out.extend(
                    j.spec
                        .steps
                        .iter()
                        .filter(|s| s.task.is_none())
                        .map(|s| format!("{}: the step names no tracker task", s.describe())),
                );
            }
        }
        _ => out.push("no spec was written".to_string()),
    }
    match draft.readme.as_deref().map(str::trim) {
        None => out.push("no readme was written".to_string()),
        Some(t) if t.is_empty() || t == readme_template.trim() => {
            out.push("the readme is still ralph init's template (or empty)".to_string())
        }
        Some(_) => {}
    }
    out
}

/// What `ralph plan` came to, as `--json` prints it and the text says it.
#[derive(Debug, Default, Serialize)]
pub struct Outcome {
    /// The plan replaced the project's spec and readme.
    pub kept: bool,
    pub agent: String,
    pub model: Option<String>,
    /// How the session ended: `ok`, `failed`, `timeout`, `interrupted`, ...
    pub session: String,
    /// The session's cost in USD; `None` when it is not known.
    pub cost_usd: Option<f64>,
    /// The steps of the drafted spec, and the epic it names.
    pub steps: usize,
    pub epic: Option<String>,
    /// The tasks the session made in the tracker (deleted again when the
    /// plan was not kept).
    pub tasks_made: Vec<String>,
    pub tasks_deleted: Vec<String>,
    /// The files written (kept) or where the draft stays (not kept).
    pub written: Vec<String>,
    pub draft: Option<String>,
    /// Why the plan was not kept.
    pub problems: Vec<String>,
    /// What ralph put back or removed that the session changed outside its
    /// draft, and what it left (files outside `.ralph/`), each said.
    pub notes: Vec<String>,
}

impl Outcome {
    /// The cost as said: `$0.0123`, or why it is not known.
    pub fn cost(&self) -> String {
        match self.cost_usd {
            Some(c) => crate::output::usd(c),
            None => format!(
                "unknown ({} reported no cost, and ralph has no price for its model)",
                self.agent
            ),
        }
    }

    /// The lines the command says at its end.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.notes.clone();
        let counted = |n: usize, one, many| crate::output::counted(n as u64, one, many);
        if self.kept {
            for w in &self.written {
                out.push(format!("wrote {w}"));
            }
            let epic = self
                .epic
                .as_ref()
                .map_or(String::new(), |e| format!(", under the epic {e}"));
            out.push(format!(
                "the plan: {}{epic}; {} made in the tracker",
                counted(self.steps, "step", "steps"),
                counted(self.tasks_made.len(), "task", "tasks")
            ));
        } else {
            out.push("the plan was not kept: your files are as they were".to_string());
            out.extend(self.problems.iter().map(|p| format!("  - {p}")));
            if !self.tasks_deleted.is_empty() {
                out.push(format!(
                    "deleted the {} it made from the tracker: {}",
                    counted(self.tasks_deleted.len(), "task", "tasks"),
                    self.tasks_deleted.join(" ")
                ));
            }
            if let Some(d) = &self.draft {
                out.push(format!("what it drafted is in {d}, to read"));
            }
        }
        out.push(format!(
            "the planning session ({}, {}) cost {}",
            self.agent,
            self.session,
            self.cost()
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirected_place_is_a_problem_each() {
        let ok = Places {
            ralph_real: true,
            tracker_own: true,
        };
        assert!(redirected(ok, "/p/.ralph").is_empty());
        let both = redirected(
            Places {
                ralph_real: false,
                tracker_own: false,
            },
            "/p/.ralph",
        );
        assert_eq!(both.len(), 2, "{both:?}");
        assert!(
            both[0].starts_with("/p/.ralph is a symlink now"),
            "{both:?}"
        );
        assert!(both[1].contains("deleted no task there"), "{both:?}");
    }
    use crate::work::spec;
    use crate::work::sync::{Finding, Problem};

    const README: &str = "# Reference lookup\n";

    fn judged(text: &str, problems: Vec<Problem>) -> Result<Judgement, CannotCheck> {
        Ok(Judgement {
            spec: spec::parse(text),
            tracker: Some("br"),
            findings: problems
                .into_iter()
                .map(|problem| Finding {
                    problem,
                    line: Some(1),
                    task: None,
                })
                .collect(),
            unnamed: Vec::new(),
            epic_open: None,
        })
    }

    fn draft(spec: &str, readme: &str) -> Draft {
        Draft {
            spec: Some(spec.into()),
            readme: Some(readme.into()),
        }
    }

    #[test]
    fn a_plan_whose_every_step_has_a_known_task_and_a_readme_passes() {
        let text = "# P\nEpic: [p-1]\n- [ ] **1.1** Parse [p-1.1]\n- [ ] **1.R** Review [p-1.2]\n";
        let d = draft(text, "| topic | where |\n");
        assert_eq!(problems(&d, Some(&judged(text, vec![])), README), [""; 0]);
    }

    #[test]
    fn a_step_without_a_task_the_template_or_no_files_are_each_said() {
        let text = "# P\n- [ ] **1.1** Parse [p-1.1]\n- [ ] **1.2** Print\n";
        let d = draft(text, README);
        let no_task = Problem::NoTask {
            step: "line 3: 1.2 Print".into(),
        };
        assert_eq!(
            problems(&d, Some(&judged(text, vec![no_task])), README),
            [
                "line 3: 1.2 Print: the step names no tracker task",
                "the readme is still ralph init's template (or empty)",
            ]
        );
        // Ids in none of the steps: the tracker is not even asked, and
        // still every step needs its task.
        let bare = "- [ ] **1** A\n";
        assert_eq!(
            problems(&draft(bare, "r"), Some(&judged(bare, vec![])), README),
            ["line 1: 1 A: the step names no tracker task"]
        );
        let template = include_str!("../templates/spec.md");
        let p = problems(
            &draft(template, "r"),
            Some(&judged(template, vec![])),
            README,
        );
        assert!(
            p[0] == "the spec is still ralph init's template (its steps are placeholders)",
            "{p:?}"
        );
        let unknown = Problem::UnknownTask {
            step: "line 1: A".into(),
            task: "p-9".into(),
        };
        let named = "- [ ] **1** A [p-9]\n";
        assert_eq!(
            problems(
                &draft(named, "r"),
                Some(&judged(named, vec![unknown])),
                README
            ),
            ["the tracker does not know the task named in the spec: p-9"]
        );
        assert_eq!(
            problems(&Draft::default(), None, README),
            ["no spec was written", "no readme was written"]
        );
        assert_eq!(
            problems(
                &draft("# nothing\n", "r"),
                Some(&judged("# nothing\n", vec![])),
                README
            ),
            ["the spec has no steps (no `- [ ]` checkboxes)"]
        );
    }

    #[test]
    fn the_prompt_carries_the_rules_of_ralph_setup_and_the_users_words() {
        let r = rules();
        assert!(
            r.starts_with("### Steps") && r.ends_with("not copying them."),
            "{r}"
        );
        assert!(crate::ralph_setup::RALPH_SETUP.contains(r));
        let p = prompt("a CSV to JSON tool {{RULES}}\n", ".ralph/plan-draft", "br");
        assert!(
            p.contains(r)
                && p.contains("The user wants this built: a CSV to JSON tool {{RULES}}\n")
                && p.contains("`.ralph/plan-draft/spec.md`")
                && !p.contains("{{DRAFT}}")
                && !p.contains("{{TRACKER}}"),
            "{p}"
        );
    }

    #[test]
    fn the_outcome_says_what_was_written_or_why_not_and_the_cost() {
        let kept = Outcome {
            kept: true,
            agent: "claude".into(),
            session: "ok".into(),
            cost_usd: Some(0.25),
            steps: 3,
            epic: Some("p-1".into()),
            tasks_made: vec!["p-1".into(), "p-1.1".into()],
            written: vec![".ralph/spec.md".into()],
            ..Outcome::default()
        };
        assert_eq!(
            kept.lines(),
            [
                "wrote .ralph/spec.md",
                "the plan: 3 steps, under the epic p-1; 2 tasks made in the tracker",
                "the planning session (claude, ok) cost $0.25",
            ]
        );
        let failed = Outcome {
            agent: "codex".into(),
            session: "ok".into(),
            problems: vec!["no readme was written".into()],
            tasks_deleted: vec!["p-1".into()],
            draft: Some(".ralph/plan-draft".into()),
            ..Outcome::default()
        };
        assert_eq!(
            failed.lines(),
            [
                "the plan was not kept: your files are as they were",
                "  - no readme was written",
                "deleted the 1 task it made from the tracker: p-1",
                "what it drafted is in .ralph/plan-draft, to read",
                "the planning session (codex, ok) cost unknown (codex reported no cost, and ralph has no price for its model)",
            ]
        );
    }
}
