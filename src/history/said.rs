//! The line the terminal shows for an event of the run's journal, rendered
//! here once for every part that reports one (the shell's `tell`): what is
//! journaled and what is said cannot drift apart.

use super::events::{Event, PrChange};

/// What the terminal says of `event` (about `step`: a merge's), if it says
/// anything of it.
pub fn said(event: &Event, step: Option<&str>) -> Option<String> {
    Some(match event {
        Event::Merged { duration, into } => format!(
            "merged {} into {into} ({} ms)",
            step.unwrap_or("a step"),
            duration.as_millis()
        ),
        Event::Pushed {
            branch,
            remote,
            rebased: false,
            ..
        } => format!("pushed {branch} to {remote}"),
        Event::Pushed {
            branch,
            remote,
            rejected,
            ..
        } => format!(
            "the push of {branch} to {remote} was rejected ({}): the remote's branch had moved; fetched it, rebased the run's commits onto it cleanly, and pushed",
            rejected.as_deref().unwrap_or("it had moved")
        ),
        Event::PushRefused {
            branch,
            remote,
            why,
        } => format!("{branch} to {remote}: {why}"),
        Event::PullRequest {
            number,
            url,
            draft,
            change,
        } => format!(
            "{} pull request #{number} ({}): {url}",
            match change {
                PrChange::Opened => "opened",
                PrChange::Updated => "updated",
                PrChange::Recorded => "recorded",
            },
            if *draft { "draft" } else { "ready for review" }
        ),
        Event::PullRequestRefused { why, branch } => format!(
            "no pull request for {branch}: {why} (the branch is pushed; the next run with --pr tries again)"
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Each event the terminal tells, as a user reads it; the rest are
    /// shown by their own parts (the session's lines, the countdown, the
    /// end's summary) or not at all.
    #[test]
    fn each_told_event_as_the_terminal_says_it() {
        let b = || ("work".to_string(), "origin".to_string());
        let rows: Vec<(Event, Option<&str>, Option<&str>)> = vec![
            (
                Event::Merged {
                    duration: Duration::from_millis(54),
                    into: "main".into(),
                },
                Some("**1** One"),
                Some("merged **1** One into main (54 ms)"),
            ),
            (
                Event::Pushed {
                    branch: b().0,
                    remote: b().1,
                    rebased: false,
                    rejected: None,
                },
                None,
                Some("pushed work to origin"),
            ),
            (
                Event::Pushed {
                    branch: b().0,
                    remote: b().1,
                    rebased: true,
                    rejected: Some("fetch first".into()),
                },
                None,
                Some(
                    "the push of work to origin was rejected (fetch first): the remote's branch had moved; fetched it, rebased the run's commits onto it cleanly, and pushed",
                ),
            ),
            (
                Event::PushRefused {
                    branch: b().0,
                    remote: b().1,
                    why: "the remote's branch has work the run's lacks".into(),
                },
                None,
                Some("work to origin: the remote's branch has work the run's lacks"),
            ),
            (
                Event::PullRequest {
                    number: 7,
                    url: "https://github.com/o/r/pull/7".into(),
                    draft: true,
                    change: PrChange::Opened,
                },
                None,
                Some("opened pull request #7 (draft): https://github.com/o/r/pull/7"),
            ),
            (
                Event::PullRequest {
                    number: 7,
                    url: "https://github.com/o/r/pull/7".into(),
                    draft: false,
                    change: PrChange::Updated,
                },
                None,
                Some("updated pull request #7 (ready for review): https://github.com/o/r/pull/7"),
            ),
            (
                Event::PullRequestRefused {
                    why: "GitHub said 403".into(),
                    branch: b().0,
                },
                None,
                Some(
                    "no pull request for work: GitHub said 403 (the branch is pushed; the next run with --pr tries again)",
                ),
            ),
            (
                Event::Conflicted {
                    files: vec!["a.rs".into()],
                },
                Some("**1** One"),
                None,
            ),
            (
                Event::Complete {
                    reason: "all done".into(),
                },
                None,
                None,
            ),
        ];
        for (event, step, line) in rows {
            assert_eq!(said(&event, step).as_deref(), line, "{event:?}");
        }
    }
}
