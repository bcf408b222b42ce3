//! The line the terminal shows for an event of the run's journal, rendered
//! here once for every part that reports one (the shell's `tell`): what is
//! journaled and what is said cannot drift apart.

use super::events::{Event, PrChange, Standing, Totals};
use crate::output::{counted, spent};
use crate::timefmt::human_duration;

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
        Event::Estimated {
            steps,
            estimate,
            price,
        } => estimated(*steps, estimate.as_ref(), price.as_ref()),
        _ => return None,
    })
}

/// What the open steps will likely come to, as the run starts.
pub fn estimated(
    steps: u32,
    e: Option<&crate::history::estimate::Estimate>,
    price: Option<&(String, crate::agent::prices::Price)>,
) -> String {
    use crate::history::estimate::Source;
    let open = counted(steps, "open step", "open steps");
    let Some(e) = e else {
        let price = price.map_or(String::new(), |(model, p)| {
            format!(
                "; {} costs {} per million tokens read, {} written",
                crate::output::visible_line(model),
                crate::output::usd(p.input),
                crate::output::usd(p.output)
            )
        });
        return format!(
            "estimate: {open}; no past steps of this agent and model to estimate from yet (ralph keeps what each step costs, from this run on){price}"
        );
    };
    let usd = |v: f64| crate::output::usd(v);
    let cost = if e.cost_known {
        format!(
            "likely {} (1 in 10: over {}), ",
            usd(e.usd.median),
            usd(e.usd.p90)
        )
    } else {
        "cost not known (the agent reports tokens only), ".into()
    };
    let whole = |v: f64| v.round().max(1.0) as u32;
    format!(
        "estimate: {open}, {cost}{}, {}; from {} {}",
        counted(whole(e.sessions.median), "session", "sessions"),
        human_duration(std::time::Duration::from_secs_f64(e.secs.median.max(0.0))),
        counted(
            u32::try_from(e.past_steps).unwrap_or(u32::MAX),
            "past step",
            "past steps"
        ),
        match e.from {
            Source::Project => "of this project",
            Source::Machine => "of other projects on this machine",
        }
    )
}

/// What is said when a cost cap is likely too little for the open steps
/// of an `Estimated` event (drawn from `past`); nothing when it is not.
pub fn cap_short(
    cap: f64,
    estimated: &Event,
    past: &[crate::history::estimate::Step],
) -> Option<String> {
    let Event::Estimated {
        estimate: Some(e), ..
    } = estimated
    else {
        return None;
    };
    let covers = || crate::history::estimate::covered(e, cap, past);
    (e.cost_known && cap < e.usd.median).then(|| {
        format!(
            "--max-cost {} is under the likely cost of the open steps ({}): it likely covers {} of {}",
            crate::output::usd(cap),
            crate::output::usd(e.usd.median),
            covers(),
            e.steps
        )
    })
}

/// The status line of `event` (`── ralph: ... ──` on the terminal): a
/// session's start, the run's end. `None` for the rest, and for a line
/// from before the journal kept what it says.
pub fn headline(event: &Event) -> Option<String> {
    match event {
        Event::SessionStarted {
            iteration,
            standing: Some(s),
            review: false,
            ..
        } => Some(started(*iteration, s)),
        Event::SessionStarted {
            session,
            agent,
            subject: Some(what),
            review: true,
            ..
        } => Some(format!("review session {session}: {what} · {agent}")),
        Event::Complete {
            reason,
            totals: Some(t),
        } => Some(ended(crate::run::engine::Outcome::Complete, reason, t)),
        Event::Waiting {
            outcome,
            reason,
            totals: Some(t),
        }
        | Event::Stopped {
            outcome,
            reason,
            totals: Some(t),
        } => Some(ended(*outcome, reason, t)),
        _ => None,
    }
}

fn started(iteration: u32, s: &Standing) -> String {
    let cost = if s.cost_usd > 0.0 || s.cost_unknown {
        format!(" · {}", spent(s.cost_usd, s.cost_unknown))
    } else {
        String::new()
    };
    format!(
        "iteration {iteration}/{} · spec {} · {} elapsed{cost}",
        s.max_iterations,
        s.spec,
        human_duration(s.elapsed)
    )
}

/// The most characters of a reason on a run's end line (the question was
/// shown whole, bounded, before it).
const REASON_MAX: usize = 300;

fn ended(outcome: crate::run::engine::Outcome, reason: &str, t: &Totals) -> String {
    let commits = t
        .commits
        .map(|c| format!(", {}", counted(c, "commit", "commits")))
        .unwrap_or_default();
    let reviews = match t.reviews {
        0 => String::new(),
        n => format!(" · {}", counted(n, "review", "reviews")),
    };
    // A session wrote the reason (its WAITING): the line stays a line.
    let reason = crate::work::question::one_line(reason, REASON_MAX);
    format!(
        "{}: {reason} · {} in {}{reviews} · {} · {} tokens{commits} · spec {}",
        outcome.text(),
        counted(t.iterations, "iteration", "iterations"),
        human_duration(t.duration),
        spent(t.cost_usd, t.cost_unknown),
        t.tokens.total(),
        t.spec
    )
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
                    totals: None,
                },
                None,
                None,
            ),
        ];
        for (event, step, line) in rows {
            assert_eq!(said(&event, step).as_deref(), line, "{event:?}");
        }
    }

    fn totals(cost_unknown: bool, commits: Option<u64>, reviews: u32) -> Totals {
        Totals {
            iterations: 1,
            sessions: 2,
            duration: Duration::from_millis(3_725_400),
            reviews,
            cost_usd: 1.5,
            cost_unknown,
            tokens: crate::history::records::Tokens {
                input: 100,
                output: 20,
                cache_read: 3,
                cache_creation: 0,
            },
            commits,
            spec: "3/3".into(),
        }
    }

    /// The status lines, as a user reads them: a session's start (work or
    /// review), the run's end with what it came to; none for a line from
    /// before the journal kept what they say.
    #[test]
    fn an_estimate_says_what_the_open_steps_likely_cost_and_where_it_comes_from() {
        use crate::history::estimate::{Source, Step, estimate};
        let past: Vec<Step> = (1..=10)
            .map(|i| Step {
                usd: f64::from(i) * 0.1,
                sessions: 1.0,
                secs: 90.0,
            })
            .collect();
        let e = estimate(3, &past, Source::Project, true);
        assert_eq!(
            estimated(3, e.as_ref(), None),
            "estimate: 3 open steps, likely $1.70 (1 in 10: over $2.30), 3 sessions, 4m 30s; from 10 past steps of this project"
        );
        let e = estimate(1, &past, Source::Machine, false).unwrap();
        assert_eq!(
            estimated(1, Some(&e), None),
            "estimate: 1 open step, cost not known (the agent reports tokens only), 1 session, 1m 30s; from 10 past steps of other projects on this machine"
        );
        let price = crate::agent::prices::price("gpt-5.4", &Default::default()).unwrap();
        assert_eq!(
            estimated(2, None, Some(&("gpt-5.4".into(), price))),
            "estimate: 2 open steps; no past steps of this agent and model to estimate from yet (ralph keeps what each step costs, from this run on); gpt-5.4 costs $2.50 per million tokens read, $15.00 written"
        );
    }

    #[test]
    fn each_headline_as_the_terminal_says_it() {
        use crate::agent::Agent;
        use crate::run::engine::Outcome;
        let standing = |cost_usd, cost_unknown| Standing {
            max_iterations: 20,
            spec: "1/3".into(),
            elapsed: Duration::from_millis(125_900),
            cost_usd,
            cost_unknown,
        };
        let start = |standing, review, subject: Option<&str>| Event::SessionStarted {
            session: 4,
            iteration: 3,
            agent: Agent::Claude,
            review,
            standing,
            subject: subject.map(String::from),
        };
        let rows: Vec<(Event, Option<&str>)> = vec![
            (
                start(Some(standing(0.0, false)), false, None),
                Some("iteration 3/20 · spec 1/3 · 2m 5s elapsed"),
            ),
            (
                start(Some(standing(0.4, false)), false, None),
                Some("iteration 3/20 · spec 1/3 · 2m 5s elapsed · $0.40"),
            ),
            (
                start(Some(standing(0.0, true)), false, None),
                Some("iteration 3/20 · spec 1/3 · 2m 5s elapsed · cost unknown"),
            ),
            (start(None, false, None), None),
            (
                start(None, true, Some("steps 2, 3")),
                Some("review session 4: steps 2, 3 · claude"),
            ),
            (start(None, true, None), None),
            (
                Event::Complete {
                    reason: "all 3 steps done".into(),
                    totals: Some(totals(false, Some(2), 0)),
                },
                Some(
                    "complete: all 3 steps done · 1 iteration in 1h 2m 5s · $1.50 · 123 tokens, 2 commits · spec 3/3",
                ),
            ),
            (
                Event::Waiting {
                    outcome: Outcome::Stuck,
                    reason: "no progress".into(),
                    totals: Some(totals(true, None, 2)),
                },
                Some(
                    "stuck on a step: no progress · 1 iteration in 1h 2m 5s · 2 reviews · $1.50 + unknown · 123 tokens · spec 3/3",
                ),
            ),
            (
                Event::Stopped {
                    outcome: Outcome::Interrupted,
                    reason: "Ctrl+C".into(),
                    totals: Some(totals(false, Some(1), 1)),
                },
                Some(
                    "interrupted: Ctrl+C · 1 iteration in 1h 2m 5s · 1 review · $1.50 · 123 tokens, 1 commit · spec 3/3",
                ),
            ),
            (
                Event::Stopped {
                    outcome: Outcome::Interrupted,
                    reason: "Ctrl+C".into(),
                    totals: None,
                },
                None,
            ),
        ];
        for (event, line) in rows {
            assert_eq!(headline(&event).as_deref(), line, "{event:?}");
        }
    }
}
