//! A snarktank `prd.json` (its `userStories`, in their order) and the
//! `progress.txt` beside it. Real files vary: fields missing (`description`,
//! `notes`, `priority`) or added (`dependencies`, `verificationCommands`),
//! numeric ids, multi-line notes; what cannot be read as a story is refused
//! with its place (`userStories[3].passes`).

use serde_json::Value;

use super::{Format, Plan, Refused, Section, Step, refused, split_section};

/// The plan of a prd.json's text (`name` is how to name the file), with the
/// progress log beside it if there is one.
pub fn parse(name: &str, text: &str, progress: Option<&str>) -> Result<Plan, Refused> {
    let json: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| {
        refused(
            format!("{name}:{}:{}", e.line(), e.column()),
            format!("not valid JSON ({e})"),
        )
    })?;
    let Some(top) = json.as_object() else {
        return Err(refused(name, "not a JSON object with userStories"));
    };
    let stories = match top.get("userStories") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err(refused(format!("{name}: userStories"), "not a list")),
        None => return Err(refused(name, "no userStories: not a snarktank prd.json")),
    };
    if stories.is_empty() {
        return Err(refused(
            format!("{name}: userStories"),
            "empty: nothing to import",
        ));
    }
    let mut intro = Vec::new();
    for key in ["project", "description", "branchName"] {
        if let Some(Value::String(s)) = top.get(key)
            && !s.trim().is_empty()
        {
            let label = match key {
                "project" => "Project",
                "description" => "What",
                _ => "Branch",
            };
            intro.push(format!("{label}: {}", s.trim()));
        }
    }
    let mut steps = Vec::new();
    let mut priorities = Vec::new();
    for (i, story) in stories.iter().enumerate() {
        let place = format!("{name}: userStories[{i}]");
        let (step, priority) = story_of(&place, story)?;
        steps.push(step);
        priorities.push(priority);
    }
    let sections = by_priority(steps, &priorities);
    let (learnings, progress) = match progress {
        Some(p) => {
            let (l, rest) = split_section(p, |h| {
                let h = h.to_lowercase();
                h.contains("pattern") || h.contains("learning")
            });
            let rest = rest.trim().to_string();
            (l, (!rest.is_empty()).then_some(rest))
        }
        None => (None, None),
    };
    Ok(Plan {
        format: Format::Prd,
        intro,
        sections,
        rules: None,
        references: Vec::new(),
        progress,
        learnings,
    })
}

fn story_of(place: &str, story: &Value) -> Result<(Step, Option<String>), Refused> {
    let Some(s) = story.as_object() else {
        return Err(refused(place, "not a story (a JSON object)"));
    };
    let text_of = |key: &str| -> Result<Option<String>, Refused> {
        match s.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(t)) => Ok(Some(t.trim().to_string()).filter(|t| !t.is_empty())),
            Some(Value::Number(n)) if key == "id" || key == "priority" => Ok(Some(n.to_string())),
            Some(_) => Err(refused(format!("{place}.{key}"), "not text")),
        }
    };
    let id = text_of("id")?;
    let description = text_of("description")?;
    let title = match (text_of("title")?, &description) {
        (Some(t), _) => t,
        (None, Some(d)) => d.lines().next().unwrap_or_default().to_string(),
        (None, None) => return Err(refused(place, "a story with neither title nor description")),
    };
    let done = match s.get("passes") {
        Some(Value::Bool(b)) => *b,
        None | Some(Value::Null) => match s.get("status") {
            None | Some(Value::Null) => false,
            Some(Value::String(st)) => matches!(
                st.to_ascii_lowercase().as_str(),
                "done" | "complete" | "completed" | "passed" | "passes" | "closed"
            ),
            Some(v) => {
                return Err(refused(
                    format!("{place}.status"),
                    format!("{v} is not text"),
                ));
            }
        },
        Some(v) => {
            return Err(refused(
                format!("{place}.passes"),
                format!("{v} is not true or false"),
            ));
        }
    };
    let mut details = Vec::new();
    if let Some(d) = &description
        && s.get("title").is_some()
    {
        details.extend(d.lines().map(String::from));
    }
    match s.get("acceptanceCriteria") {
        None | Some(Value::Null) => {}
        Some(Value::String(c)) => {
            details.push("Acceptance criteria:".into());
            details.extend(c.lines().map(|l| format!("- {l}")));
        }
        Some(Value::Array(a)) => {
            if !a.is_empty() {
                details.push("Acceptance criteria:".into());
            }
            for (k, c) in a.iter().enumerate() {
                match c {
                    Value::String(c) => details.push(format!("- {}", c.trim())),
                    Value::Number(_) | Value::Bool(_) => details.push(format!("- {c}")),
                    _ => {
                        return Err(refused(
                            format!("{place}.acceptanceCriteria[{k}]"),
                            "not text",
                        ));
                    }
                }
            }
        }
        Some(_) => {
            return Err(refused(
                format!("{place}.acceptanceCriteria"),
                "not a list of text",
            ));
        }
    }
    if let Some(n) = text_of("notes")? {
        details.push("Notes:".into());
        details.extend(n.lines().map(String::from));
    }
    let priority = text_of("priority")?;
    Ok((
        Step {
            id,
            text: title,
            done,
            details,
            place: place.to_string(),
        },
        priority,
    ))
}

/// The stories in their order, under a `Priority N` heading each time the
/// priority changes, where priorities group stories (some share one); where
/// each story has its own, one list without headings.
fn by_priority(steps: Vec<Step>, priorities: &[Option<String>]) -> Vec<Section> {
    let mut distinct: Vec<&Option<String>> = priorities.iter().collect();
    distinct.sort();
    distinct.dedup();
    let grouped = distinct.len() < priorities.len() && priorities.iter().any(Option::is_some);
    if !grouped {
        return vec![Section {
            heading: None,
            steps,
        }];
    }
    let mut sections: Vec<Section> = Vec::new();
    let mut last: Option<&Option<String>> = None;
    for (step, p) in steps.into_iter().zip(priorities) {
        if last != Some(p) {
            let heading = match p {
                Some(p) => format!("Priority {p}"),
                None => "No priority".to_string(),
            };
            sections.push(Section {
                heading: Some((2, heading)),
                steps: Vec::new(),
            });
            last = Some(p);
        }
        sections.last_mut().expect("pushed").steps.push(step);
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stories_in_order_passing_ones_done() {
        let text = r#"{"project": "P", "userStories": [
            {"id": "US-002", "title": "Second", "priority": 2, "passes": true,
             "acceptanceCriteria": ["a", "b"], "notes": "n1\nn2", "extra": {"x": 1}},
            {"id": 7, "description": "Only a description", "priority": 1}
        ]}"#;
        let p = parse("prd.json", text, None).unwrap();
        assert_eq!((p.total(), p.done(), p.headings()), (2, 1, 0));
        let s: Vec<&Step> = p.steps().collect();
        assert_eq!(s[0].title(), "US-002 Second");
        assert_eq!(
            s[0].details,
            ["Acceptance criteria:", "- a", "- b", "Notes:", "n1", "n2"]
        );
        assert_eq!(s[1].title(), "7 Only a description");
        assert_eq!(p.intro, ["Project: P"]);
    }

    #[test]
    fn shared_priorities_become_headings() {
        let text = r#"{"userStories": [
            {"title": "a", "priority": 1}, {"title": "b", "priority": 1},
            {"title": "c", "priority": 2}]}"#;
        let p = parse("prd.json", text, None).unwrap();
        let h: Vec<_> = p
            .sections
            .iter()
            .map(|s| (s.heading.clone(), s.steps.len()))
            .collect();
        assert_eq!(
            h,
            [
                (Some((2, "Priority 1".to_string())), 2),
                (Some((2, "Priority 2".to_string())), 1)
            ]
        );
    }

    #[test]
    fn what_cannot_be_read_is_refused_with_its_place() {
        let cases = [
            (
                "{\"userStories\": [\n  {\"title\": \"a\",}\n]}",
                "prd.json:2:17",
            ),
            ("[1, 2]", "prd.json"),
            ("{\"userStories\": {}}", "prd.json: userStories"),
            ("{\"userStories\": []}", "prd.json: userStories"),
            (
                "{\"userStories\": [{\"title\": \"a\"}, {\"id\": \"x\"}]}",
                "prd.json: userStories[1]",
            ),
            (
                "{\"userStories\": [{\"title\": \"a\", \"passes\": \"yes\"}]}",
                "prd.json: userStories[0].passes",
            ),
            (
                "{\"userStories\": [{\"title\": [\"a\"]}]}",
                "prd.json: userStories[0].title",
            ),
            (
                "{\"userStories\": [{\"title\": \"a\", \"acceptanceCriteria\": [{}]}]}",
                "prd.json: userStories[0].acceptanceCriteria[0]",
            ),
        ];
        for (text, place) in cases {
            let e = parse("prd.json", text, None).unwrap_err();
            assert_eq!(e.place, place, "{text}: {e}");
        }
    }

    #[test]
    fn progress_patterns_go_to_learnings() {
        let progress = "## Codebase Patterns\n- use x\n\n# Ralph Progress Log\nStarted: today\n---\n## 2026 - US-001\n- did it\n";
        let p = parse(
            "prd.json",
            "{\"userStories\": [{\"title\": \"a\"}]}",
            Some(progress),
        )
        .unwrap();
        assert_eq!(p.learnings.as_deref(), Some("- use x"));
        assert_eq!(
            p.progress.as_deref(),
            Some("# Ralph Progress Log\nStarted: today\n---\n## 2026 - US-001\n- did it")
        );
    }
}
