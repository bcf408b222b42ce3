//! `ralph import github`: a repository's open labelled issues as a plan,
//! one step each (its title), in the order GitHub lists them (oldest
//! first); the issues' numbers are the steps' tasks. Pure.

use super::{Format, Plan, Section, Step};
use crate::github::Issue;

/// The plan of `issues` (open, labelled `label`, of `repo`), and each
/// step's task (`#N`), in step order.
pub fn plan(repo: &str, label: &str, issues: &[Issue]) -> (Plan, Vec<String>) {
    let steps: Vec<Step> = issues
        .iter()
        .map(|i| Step {
            id: None,
            text: i.title.clone(),
            done: false,
            details: Vec::new(),
            place: format!("issue #{}", i.number),
        })
        .collect();
    let tasks = issues
        .iter()
        .map(|i| crate::work::tracker::github::task_id(i.number))
        .collect();
    let plan = Plan {
        format: Format::GitHub,
        intro: vec![format!(
            "The open issues of {repo} labelled `{label}`, oldest first: each step's task is its issue (`[#N]`), which ralph closes once the step is done."
        )],
        sections: vec![Section {
            heading: None,
            steps,
        }],
        rules: None,
        references: Vec::new(),
        progress: None,
        learnings: None,
        remarks: Vec::new(),
    };
    (plan, tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(n: u64, title: &str) -> Issue {
        serde_json::from_value(serde_json::json!({
            "number": n, "title": title, "state": "open",
            "html_url": format!("https://github.com/o/r/issues/{n}"),
        }))
        .unwrap()
    }

    #[test]
    fn each_issue_is_a_step_whose_task_is_its_number() {
        let (plan, tasks) = plan(
            "o/r",
            "ralph",
            &[issue(3, "Fix login [urgent]"), issue(10, "Add\nexport")],
        );
        assert_eq!(tasks, ["#3", "#10"]);
        let spec = super::super::render_spec(&plan, "o/r", Some(&tasks)).unwrap();
        let parsed = crate::work::spec::parse(&spec);
        let steps: Vec<(&str, Option<&str>)> = parsed
            .steps
            .iter()
            .map(|s| (s.title.as_str(), s.task.as_deref()))
            .collect();
        assert_eq!(
            steps,
            [
                ("Fix login [urgent]", Some("#3")),
                ("Add export", Some("#10"))
            ]
        );
        assert!(parsed.steps.iter().all(|s| !s.checked));
    }
}
