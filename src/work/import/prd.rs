//! A snarktank `prd.json` (its `userStories`, in their order) and the
//! `progress.txt` beside it. Real files vary: fields missing (`description`,
//! `notes`, `priority`) or added (`dependencies`, `verificationCommands`),
//! numeric ids, multi-line notes; what cannot be read as a story is refused
//! with its place (`userStories[3].passes`).

use serde_json::{Map, Value};

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
    let mut steps = Vec::new();
    let mut priorities = Vec::new();
    for (i, story) in stories_of(name, top)?.iter().enumerate() {
        let place = format!("{name}: userStories[{i}]");
        let (step, priority) = story_of(&place, story)?;
        steps.push(step);
        priorities.push(priority);
    }
    let (learnings, progress) = progress.map(split_progress).unwrap_or_default();
    Ok(Plan {
        format: Format::Prd,
        intro: intro_of(top),
        sections: by_priority(steps, &priorities),
        rules: None,
        references: Vec::new(),
        progress,
        learnings,
        remarks: Vec::new(),
    })
}

fn stories_of<'a>(name: &str, top: &'a Map<String, Value>) -> Result<&'a [Value], Refused> {
    match top.get("userStories") {
        Some(Value::Array(a)) if a.is_empty() => Err(refused(
            format!("{name}: userStories"),
            "empty: nothing to import",
        )),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(refused(format!("{name}: userStories"), "not a list")),
        None => Err(refused(name, "no userStories: not a snarktank prd.json")),
    }
}

/// The lines that open the spec: the project, what it is, its branch.
fn intro_of(top: &Map<String, Value>) -> Vec<String> {
    [
        ("project", "Project"),
        ("description", "What"),
        ("branchName", "Branch"),
    ]
    .into_iter()
    .filter_map(|(key, label)| match top.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(format!("{label}: {}", s.trim())),
        _ => None,
    })
    .collect()
}

/// progress.txt as its patterns (for the learnings) and the rest (the log).
fn split_progress(progress: &str) -> (Option<String>, Option<String>) {
    let (learnings, rest) = split_section(progress, |h| {
        let h = h.to_lowercase();
        h.contains("pattern") || h.contains("learning")
    });
    let rest = rest.trim().to_string();
    (learnings, (!rest.is_empty()).then_some(rest))
}

fn story_of(place: &str, story: &Value) -> Result<(Step, Option<String>), Refused> {
    let Some(s) = story.as_object() else {
        return Err(refused(place, "not a story (a JSON object)"));
    };
    let id = text_of(place, s, "id")?;
    let description = text_of(place, s, "description")?;
    let title = match (text_of(place, s, "title")?, &description) {
        (Some(t), _) => t,
        (None, Some(d)) => d.lines().next().unwrap_or_default().to_string(),
        (None, None) => return Err(refused(place, "a story with neither title nor description")),
    };
    let done = done_of(place, s)?;
    let mut details = Vec::new();
    // Without a title, the description is the title: not said twice.
    if let Some(d) = &description
        && s.get("title").is_some()
    {
        details.extend(d.lines().map(String::from));
    }
    details.extend(criteria_of(place, s.get("acceptanceCriteria"))?);
    if let Some(n) = text_of(place, s, "notes")? {
        details.push("Notes:".into());
        details.extend(n.lines().map(String::from));
    }
    let priority = text_of(place, s, "priority")?;
    let step = Step {
        id,
        text: title,
        done,
        details,
        place: place.to_string(),
    };
    Ok((step, priority))
}

/// A story's field as text, none where it is missing or blank; real files
/// number their ids and priorities.
fn text_of(place: &str, story: &Map<String, Value>, key: &str) -> Result<Option<String>, Refused> {
    match story.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(t)) => Ok(Some(t.trim().to_string()).filter(|t| !t.is_empty())),
        Some(Value::Number(n)) if key == "id" || key == "priority" => Ok(Some(n.to_string())),
        Some(_) => Err(refused(format!("{place}.{key}"), "not text")),
    }
}

/// Whether a story is done: its `passes`, or else a `status` that says so.
fn done_of(place: &str, story: &Map<String, Value>) -> Result<bool, Refused> {
    match story.get("passes") {
        Some(Value::Bool(b)) => Ok(*b),
        None | Some(Value::Null) => match story.get("status") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::String(st)) => Ok(matches!(
                st.to_ascii_lowercase().as_str(),
                "done" | "complete" | "completed" | "passed" | "passes" | "closed"
            )),
            Some(v) => Err(refused(
                format!("{place}.status"),
                format!("{v} is not text"),
            )),
        },
        Some(v) => Err(refused(
            format!("{place}.passes"),
            format!("{v} is not true or false"),
        )),
    }
}

/// The acceptance criteria as details: a heading line, then one bullet each.
fn criteria_of(place: &str, criteria: Option<&Value>) -> Result<Vec<String>, Refused> {
    let mut out = Vec::new();
    match criteria {
        None | Some(Value::Null) => {}
        Some(Value::String(c)) => {
            out.push("Acceptance criteria:".into());
            out.extend(c.lines().map(|l| format!("- {l}")));
        }
        Some(Value::Array(a)) => {
            if !a.is_empty() {
                out.push("Acceptance criteria:".into());
            }
            for (k, c) in a.iter().enumerate() {
                out.push(match c {
                    Value::String(c) => format!("- {}", c.trim()),
                    Value::Number(_) | Value::Bool(_) => format!("- {c}"),
                    _ => {
                        let at = format!("{place}.acceptanceCriteria[{k}]");
                        return Err(refused(at, "not text"));
                    }
                });
            }
        }
        Some(_) => {
            let at = format!("{place}.acceptanceCriteria");
            return Err(refused(at, "not a list of text"));
        }
    }
    Ok(out)
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

    #[test]
    fn a_story_is_done_by_passes_or_else_by_its_status() {
        let done = |v: Value| done_of("s", v.as_object().unwrap()).map_err(|e| e.place);
        assert_eq!(
            done(serde_json::json!({"passes": true, "status": "open"})),
            Ok(true)
        );
        assert_eq!(
            done(serde_json::json!({"passes": null, "status": "Completed"})),
            Ok(true)
        );
        assert_eq!(
            done(serde_json::json!({"status": "in progress"})),
            Ok(false)
        );
        assert_eq!(done(serde_json::json!({})), Ok(false));
        assert_eq!(
            done(serde_json::json!({"status": 1})),
            Err("s.status".into())
        );
        assert_eq!(
            done(serde_json::json!({"passes": "yes"})),
            Err("s.passes".into())
        );
    }

    #[test]
    fn criteria_are_bullets_under_a_line_of_their_own() {
        let of = |v: Value| criteria_of("s", Some(&v)).map_err(|e| e.place);
        let heading = "Acceptance criteria:".to_string();
        assert_eq!(
            of(serde_json::json!("one\ntwo")),
            Ok(vec![heading.clone(), "- one".into(), "- two".into()])
        );
        assert_eq!(
            of(serde_json::json!([" a ", 2, true])),
            Ok(vec![heading, "- a".into(), "- 2".into(), "- true".into()])
        );
        assert_eq!(of(serde_json::json!([])), Ok(vec![]));
        assert_eq!(of(Value::Null), Ok(vec![]));
        assert_eq!(
            of(serde_json::json!({})),
            Err("s.acceptanceCriteria".into())
        );
    }

    #[test]
    fn only_ids_and_priorities_may_be_numbers() {
        let story = serde_json::json!({"id": 7, "notes": 7, "title": "  "});
        let s = story.as_object().unwrap();
        assert_eq!(text_of("s", s, "id").unwrap().as_deref(), Some("7"));
        assert_eq!(text_of("s", s, "title").unwrap(), None);
        assert_eq!(text_of("s", s, "notes").unwrap_err().place, "s.notes");
    }
}
