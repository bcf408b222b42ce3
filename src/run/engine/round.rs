//! One round of judging, with no I/O: what follows a session (its unchecked
//! boxes, the review of the steps it checked, the gate's `when = "each"`
//! run) and what a COMPLETE file comes to (protected paths, the completion
//! rule, the gate, the run's review), as the actions the shell carries out.
//!
//! A round keeps what its events reported; `plan` reads what is known and
//! names the next action, so each stage runs once and in order:
//!
//! ```text
//!   after a session: [Uncheck: require_change] → Settle → [Review the steps
//!                    → Uncheck if rejected] → COMPLETE… → [RunGate each]
//!                    → [Push] → [CloseIssues] → Record
//!   COMPLETE:        Judge → protected changed → SetAside (+ WAITING)
//!                          → [CloseIssues: the tracker's issues of checked
//!                             steps, ralph's to close; the rule read again]
//!                          → rule blocked      → SetAside
//!                          → gate to run       → RunGate → failed → SetAside
//!                          → reviewer          → Review  → rejected → SetAside
//!                          → accepted
//! ```

use crate::work::completion::Rule;

use super::{Completion, Limits, Progress, Reviewed, SessionOutcome};

/// What a COMPLETE file claims, as the shell read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// What changed of the protected paths since the run began, one line
    /// each (files, then the commits that touched them); empty: nothing.
    pub protected: Vec<String>,
    /// The commit the run began at (how to revert them).
    pub base: String,
    /// The completion rule's word on spec and tracker.
    pub rule: Rule,
}

/// A gate run's result, as the shell reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GateRan {
    pub passed: bool,
    /// A stop request ended it: neither passed nor failed.
    pub interrupted: bool,
    /// The command that failed, and how (`cargo test: exit 101`).
    pub what: String,
    /// The last lines of its output.
    pub tail: Vec<String>,
}

/// What a review judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewOf {
    /// COMPLETE: the whole run, since it began.
    Run,
    /// The steps session `session` checked, as they read.
    Steps { session: u32, steps: Vec<String> },
}

/// Why COMPLETE is set aside (what the shell tells besides the reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aside {
    /// Spec and tracker do not agree, or cannot be checked.
    Blocked,
    /// Protected paths changed: WAITING is written too.
    Protected,
    /// The project's own checks failed: a notice is sent.
    GateFailed,
    /// The run's reviewer did not approve.
    ReviewRejected,
}

/// Why boxes a session checked are unchecked again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uncheck {
    /// `[gate] require_change`: it checked a box and changed nothing else.
    NoChange { session: u32 },
    /// `[review] when = "step"`: the reviewer did not approve.
    Review,
}

/// What a session that ended reported first, before anything is judged.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRan {
    pub session: u32,
    pub outcome: SessionOutcome,
    /// It checked a box and changed nothing besides `.ralph/`.
    pub no_change: bool,
}

/// After `Settle`: what the session changed, and the boxes it checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    pub progress: Progress,
    pub checked: Vec<String>,
    /// The session (or `--commit auto` after it) made commits.
    pub committed: bool,
}

/// What a round has learned so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Round {
    /// The session the round follows (`None`: between sessions).
    pub session: Option<SessionRan>,
    pub no_change_unchecked: bool,
    pub settled: Option<Settled>,
    pub step_review: Option<Reviewed>,
    pub review_unchecked: bool,
    /// `None`: not looked at; `Some(None)`: no COMPLETE file.
    pub claim: Option<Option<Claim>>,
    pub gate: Option<GateRan>,
    pub set_aside: bool,
    pub run_review: Option<Reviewed>,
    pub each_gate: Option<GateRan>,
    /// `Need::Push` answered: `Some(why)` when it needs a human.
    pub pushed: Option<Option<String>>,
    /// `Need::CloseIssues` answered (the claim holds the rule read after).
    pub issues_closed: bool,
    /// The run's first round, with `[gate] baseline`: the gate runs before
    /// anything else (`Need::Baseline`); answered.
    pub baseline_due: bool,
    pub baselined: bool,
}

/// The next thing a round needs done.
#[derive(Debug, Clone, PartialEq)]
pub enum Need {
    /// Run the gate before the first session, each command, and keep what
    /// fails as the baseline (`Baselined`).
    Baseline,
    /// Read what COMPLETE claims (`Claimed`).
    Judge,
    /// Move COMPLETE into the run folder with the reasons (the first `shown`
    /// said) (`SetAside`).
    SetAside {
        cause: Aside,
        why: Vec<String>,
        problems: usize,
        shown: usize,
    },
    /// Run the project's checks: for COMPLETE, or `when = "each"`
    /// (`GateRan`).
    RunGate { each: bool },
    /// Run a review session (`Reviewed`).
    Review(ReviewOf),
    /// Uncheck the boxes the session checked (`Unchecked`).
    Uncheck(Uncheck),
    /// Commit what the session left (`--commit auto`) and say what it
    /// changed (`Settled`).
    Settle,
    /// Push what the session committed (`--push`; `Pushed`).
    Push,
    /// Close the tracker's issues of the checked steps (ralph's to close,
    /// not a session's) and read the completion rule again
    /// (`IssuesClosed`).
    CloseIssues,
    /// Write the session's record and say how it ended (`SessionEnded`).
    Record,
    /// Between sessions: read the sentinels and the pace (`Between`).
    Look,
}

/// What a round judged, once nothing more is needed for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub completion: Completion,
    /// The reviews that ran, in order (the steps', then the run's).
    pub reviews: Vec<Reviewed>,
}

/// What a round needs next, from what it knows. Never the same stage twice:
/// each answer fills the slot that asked for it.
pub fn plan(r: &Round, rules: &Limits) -> Need {
    let Some(ran) = &r.session else {
        if r.baseline_due && !r.baselined {
            return Need::Baseline;
        }
        return match complete(r, rules) {
            Err(need) => need,
            Ok(_) => Need::Look,
        };
    };
    if ran.no_change && rules.require_change && !r.no_change_unchecked {
        return Need::Uncheck(Uncheck::NoChange {
            session: ran.session,
        });
    }
    let Some(settled) = &r.settled else {
        return Need::Settle;
    };
    if super::review_steps(
        rules.review_each_step,
        !settled.checked.is_empty(),
        &ran.outcome,
    ) {
        match &r.step_review {
            None => {
                return Need::Review(ReviewOf::Steps {
                    session: ran.session,
                    steps: settled.checked.clone(),
                });
            }
            Some(rv) if !rv.verdict.approved() && !r.review_unchecked => {
                return Need::Uncheck(Uncheck::Review);
            }
            Some(_) => {}
        }
    }
    let completion = if super::judge_after(&ran.outcome) {
        match complete(r, rules) {
            Err(need) => return need,
            Ok(c) => c,
        }
    } else {
        Completion::Absent
    };
    if super::gate_each(rules.gate_each, &completion, settled.progress, &ran.outcome)
        && r.each_gate.is_none()
    {
        return Need::RunGate { each: true };
    }
    if rules.push_each && settled.committed && r.pushed.is_none() {
        return Need::Push;
    }
    // The steps it checked: their issues closed as it ends.
    if rules.closes_issues && !r.issues_closed {
        return Need::CloseIssues;
    }
    Need::Record
}

/// What the round judged: COMPLETE's fate and the reviews that ran. Read
/// once `plan` needs no more for it.
pub fn judged(r: &Round, rules: &Limits) -> Judged {
    // A round that did not judge COMPLETE (after a stop request) never read
    // its claim: absent.
    let completion = complete(r, rules).unwrap_or(Completion::Absent);
    Judged {
        completion,
        reviews: r.step_review.iter().chain(&r.run_review).cloned().collect(),
    }
}

/// What COMPLETE comes to, or what is needed first.
fn complete(r: &Round, rules: &Limits) -> Result<Completion, Need> {
    let Some(claim) = &r.claim else {
        return Err(Need::Judge);
    };
    let Some(claim) = claim else {
        return Ok(Completion::Absent);
    };
    if !claim.protected.is_empty() {
        return protected(r, claim);
    }
    // Before the rule is taken at its word: it reads the tracker.
    if rules.closes_issues && !r.issues_closed {
        return Err(Need::CloseIssues);
    }
    let steps = match &claim.rule {
        Rule::Blocked(why) => {
            return aside(r, Aside::Blocked, why, (why.len(), 10)).map(|()| Completion::Rejected {
                problems: why.len(),
            });
        }
        Rule::Holds { steps } => *steps,
        Rule::RunGate { steps } => match &r.gate {
            None => return Err(Need::RunGate { each: false }),
            Some(g) if g.interrupted => return Ok(Completion::Absent),
            Some(g) if !g.passed => {
                let mut why = vec![format!("the completion gate: {}", g.what)];
                let from = g.tail.len().saturating_sub(15);
                why.extend(g.tail[from..].iter().map(|l| format!("| {l}")));
                // Its output was shown as the gate failed: once is enough.
                return aside(r, Aside::GateFailed, &why, (1, 1)).map(|()| {
                    Completion::GateFailed {
                        what: g.what.clone(),
                    }
                });
            }
            Some(_) => *steps,
        },
    };
    if !rules.review_complete {
        return Ok(Completion::Accepted { steps });
    }
    reviewed(r, steps)
}

/// Protected paths changed: COMPLETE set aside, and a human asked whether
/// to revert them or accept them.
fn protected(r: &Round, claim: &Claim) -> Result<Completion, Need> {
    let problems = claim.protected.len();
    let waiting = format!(
        "protected files changed since the run began ({}): revert them (`git checkout {} -- <file>`), or accept them by starting a new run (`ralph loop`); then `ralph resume`",
        claim.protected.join("; "),
        claim.base
    );
    aside(r, Aside::Protected, &claim.protected, (problems, 10))
        .map(|()| Completion::Protected { problems, waiting })
}

/// All else holds: the run's reviewer decides.
fn reviewed(r: &Round, steps: usize) -> Result<Completion, Need> {
    match &r.run_review {
        None => Err(Need::Review(ReviewOf::Run)),
        Some(rv) if rv.verdict.approved() => Ok(Completion::Accepted { steps }),
        Some(rv) => {
            let why: Vec<String> = rv
                .verdict
                .findings()
                .into_iter()
                .map(|f| format!("the reviewer: {f}"))
                .collect();
            aside(r, Aside::ReviewRejected, &why, (why.len(), 0))
                .map(|()| Completion::ReviewRejected)
        }
    }
}

/// COMPLETE set aside with these reasons, once.
fn aside(
    r: &Round,
    cause: Aside,
    why: &[String],
    (problems, shown): (usize, usize),
) -> Result<(), Need> {
    if r.set_aside {
        return Ok(());
    }
    Err(Need::SetAside {
        cause,
        why: why.to_vec(),
        problems,
        shown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::review::Verdict;

    fn rules() -> Limits {
        Limits::sample()
    }

    fn claim(protected: &[&str], rule: Rule) -> Option<Option<Claim>> {
        Some(Some(Claim {
            protected: protected.iter().map(|p| p.to_string()).collect(),
            base: "abc123".into(),
            rule,
        }))
    }

    fn gate(passed: bool) -> Option<GateRan> {
        Some(GateRan {
            passed,
            interrupted: false,
            what: if passed { "" } else { "cargo test: exit 101" }.into(),
            tail: (1..=20).map(|i| format!("line {i}")).collect(),
        })
    }

    fn review(verdict: Verdict) -> Option<Reviewed> {
        Some(Reviewed {
            verdict,
            cost_usd: 0.1,
        })
    }

    /// The whole COMPLETE path between sessions, row by row: what a round
    /// that knows this much needs next, and what it then judged.
    #[test]
    fn the_complete_path_row_by_row() {
        let holds = || Rule::Holds { steps: 3 };
        let gated = || Rule::RunGate { steps: 3 };
        let rejected = || Verdict::Rejected(vec!["no test for the parser".into()]);
        let reviewer = Limits {
            review_complete: true,
            ..rules()
        };
        type Row = (&'static str, Round, Limits, Need, Completion);
        let rows: Vec<Row> = vec![
            (
                "nothing known: read the claim",
                Round::default(),
                rules(),
                Need::Judge,
                Completion::Absent,
            ),
            (
                "no COMPLETE",
                Round {
                    claim: Some(None),
                    ..Round::default()
                },
                rules(),
                Need::Look,
                Completion::Absent,
            ),
            (
                "holds, no gate, no reviewer: accepted",
                Round {
                    claim: claim(&[], holds()),
                    ..Round::default()
                },
                rules(),
                Need::Look,
                Completion::Accepted { steps: 3 },
            ),
            (
                "blocked: set aside",
                Round {
                    claim: claim(&[], Rule::Blocked(vec!["a".into(), "b".into()])),
                    ..Round::default()
                },
                rules(),
                Need::SetAside {
                    cause: Aside::Blocked,
                    why: vec!["a".into(), "b".into()],
                    problems: 2,
                    shown: 10,
                },
                Completion::Absent,
            ),
            (
                "blocked, set aside: rejected",
                Round {
                    claim: claim(&[], Rule::Blocked(vec!["a".into(), "b".into()])),
                    set_aside: true,
                    ..Round::default()
                },
                rules(),
                Need::Look,
                Completion::Rejected { problems: 2 },
            ),
            (
                "protected paths changed, though all else holds: set aside, WAITING",
                Round {
                    claim: claim(&["protected: .github/workflows/ci.yml"], holds()),
                    ..Round::default()
                },
                rules(),
                Need::SetAside {
                    cause: Aside::Protected,
                    why: vec!["protected: .github/workflows/ci.yml".into()],
                    problems: 1,
                    shown: 10,
                },
                Completion::Absent,
            ),
            (
                "protected, set aside: the run waits, no gate run",
                Round {
                    claim: claim(&["protected: x", "in commit 1234567 x"], gated()),
                    set_aside: true,
                    ..Round::default()
                },
                rules(),
                Need::Look,
                Completion::Protected {
                    problems: 2,
                    waiting: "protected files changed since the run began (protected: x; in commit 1234567 x): revert them (`git checkout abc123 -- <file>`), or accept them by starting a new run (`ralph loop`); then `ralph resume`".into(),
                },
            ),
            (
                "agreed, a gate: run it",
                Round {
                    claim: claim(&[], gated()),
                    ..Round::default()
                },
                rules(),
                Need::RunGate { each: false },
                Completion::Absent,
            ),
            (
                "the gate was interrupted: neither",
                Round {
                    claim: claim(&[], gated()),
                    gate: Some(GateRan {
                        interrupted: true,
                        ..GateRan::default()
                    }),
                    ..Round::default()
                },
                rules(),
                Need::Look,
                Completion::Absent,
            ),
            (
                "the gate failed: set aside with its last 15 lines, one shown",
                Round {
                    claim: claim(&[], gated()),
                    gate: gate(false),
                    ..Round::default()
                },
                rules(),
                Need::SetAside {
                    cause: Aside::GateFailed,
                    why: std::iter::once("the completion gate: cargo test: exit 101".to_string())
                        .chain((6..=20).map(|i| format!("| line {i}")))
                        .collect(),
                    problems: 1,
                    shown: 1,
                },
                Completion::Absent,
            ),
            (
                "the gate failed, set aside",
                Round {
                    claim: claim(&[], gated()),
                    gate: gate(false),
                    set_aside: true,
                    ..Round::default()
                },
                rules(),
                Need::Look,
                Completion::GateFailed {
                    what: "cargo test: exit 101".into(),
                },
            ),
            (
                "the gate passed, no reviewer: accepted",
                Round {
                    claim: claim(&[], gated()),
                    gate: gate(true),
                    ..Round::default()
                },
                rules(),
                Need::Look,
                Completion::Accepted { steps: 3 },
            ),
            (
                "the gate passed, a reviewer: review the run",
                Round {
                    claim: claim(&[], gated()),
                    gate: gate(true),
                    ..Round::default()
                },
                reviewer.clone(),
                Need::Review(ReviewOf::Run),
                Completion::Absent,
            ),
            (
                "a reviewer, the gate failed: no review",
                Round {
                    claim: claim(&[], gated()),
                    gate: gate(false),
                    set_aside: true,
                    ..Round::default()
                },
                reviewer.clone(),
                Need::Look,
                Completion::GateFailed {
                    what: "cargo test: exit 101".into(),
                },
            ),
            (
                "holds with no gate, a reviewer: review the run",
                Round {
                    claim: claim(&[], holds()),
                    ..Round::default()
                },
                reviewer.clone(),
                Need::Review(ReviewOf::Run),
                Completion::Absent,
            ),
            (
                "the reviewer approves: accepted",
                Round {
                    claim: claim(&[], gated()),
                    gate: gate(true),
                    run_review: review(Verdict::Approved),
                    ..Round::default()
                },
                reviewer.clone(),
                Need::Look,
                Completion::Accepted { steps: 3 },
            ),
            (
                "the reviewer rejects: set aside with the findings, none shown",
                Round {
                    claim: claim(&[], gated()),
                    gate: gate(true),
                    run_review: review(rejected()),
                    ..Round::default()
                },
                reviewer.clone(),
                Need::SetAside {
                    cause: Aside::ReviewRejected,
                    why: vec!["the reviewer: no test for the parser".into()],
                    problems: 1,
                    shown: 0,
                },
                Completion::Absent,
            ),
            (
                "no verdict counts as a rejection",
                Round {
                    claim: claim(&[], holds()),
                    run_review: review(Verdict::NoVerdict("no file".into())),
                    set_aside: true,
                    ..Round::default()
                },
                reviewer.clone(),
                Need::Look,
                Completion::ReviewRejected,
            ),
        ];
        for (name, round, rules, need, completion) in rows {
            let planned = plan(&round, &rules);
            assert_eq!(planned, need, "{name}");
            if planned == Need::Look {
                assert_eq!(judged(&round, &rules).completion, completion, "{name}");
            }
        }
    }

    /// GitHub's issues as the tracker, ralph's to close: after a session
    /// as its last action before the record, and for a COMPLETE before its
    /// rule is taken at its word (the rule read after closing decides);
    /// never for a COMPLETE that protected paths set aside first.
    #[test]
    fn issues_are_closed_as_an_action_before_the_record_and_the_rule() {
        let closing = Limits {
            closes_issues: true,
            ..rules()
        };
        let open_issue = || Rule::Blocked(vec!["#3 is open".into()]);
        type Row = (&'static str, Round, Need);
        let rows: Vec<Row> = vec![
            (
                "COMPLETE claimed: close before the rule",
                Round {
                    claim: claim(&[], open_issue()),
                    ..Round::default()
                },
                Need::CloseIssues,
            ),
            (
                "closed: the rule read after decides",
                Round {
                    claim: claim(&[], Rule::Holds { steps: 3 }),
                    issues_closed: true,
                    ..Round::default()
                },
                Need::Look,
            ),
            (
                "closed, and still blocked: set aside",
                Round {
                    claim: claim(&[], open_issue()),
                    issues_closed: true,
                    ..Round::default()
                },
                Need::SetAside {
                    cause: Aside::Blocked,
                    why: vec!["#3 is open".into()],
                    problems: 1,
                    shown: 10,
                },
            ),
            (
                "protected paths changed: set aside, nothing closed",
                Round {
                    claim: claim(&["protected: ci.yml"], open_issue()),
                    ..Round::default()
                },
                Need::SetAside {
                    cause: Aside::Protected,
                    why: vec!["protected: ci.yml".into()],
                    problems: 1,
                    shown: 10,
                },
            ),
            (
                "no COMPLETE between sessions: nothing to close",
                Round {
                    claim: Some(None),
                    ..Round::default()
                },
                Need::Look,
            ),
            (
                "after a session: closed before the record",
                Round {
                    settled: settled(&["#3 parse"]),
                    claim: Some(None),
                    ..after(SessionOutcome::Ok, false)
                },
                Need::CloseIssues,
            ),
            (
                "after a session, closed: the record",
                Round {
                    settled: settled(&["#3 parse"]),
                    claim: Some(None),
                    issues_closed: true,
                    ..after(SessionOutcome::Ok, false)
                },
                Need::Record,
            ),
        ];
        for (name, round, need) in rows {
            assert_eq!(plan(&round, &closing), need, "{name}");
        }
        assert_eq!(
            judged(
                &Round {
                    claim: claim(&[], Rule::Holds { steps: 3 }),
                    issues_closed: true,
                    ..Round::default()
                },
                &closing
            )
            .completion,
            Completion::Accepted { steps: 3 }
        );
        // Without a tracker ralph closes: no such action.
        let plain = Round {
            claim: claim(&[], Rule::Holds { steps: 3 }),
            ..Round::default()
        };
        assert_eq!(plan(&plain, &rules()), Need::Look);
    }

    fn after(outcome: SessionOutcome, no_change: bool) -> Round {
        Round {
            session: Some(SessionRan {
                session: 4,
                outcome,
                no_change,
            }),
            ..Round::default()
        }
    }

    fn settled(checked: &[&str]) -> Option<Settled> {
        Some(Settled {
            progress: Progress::Changed,
            checked: checked.iter().map(|c| c.to_string()).collect(),
            committed: true,
        })
    }

    /// After a session, row by row: unchecking for `require_change`,
    /// settling, the steps' review, COMPLETE, the gate's `each` run, the
    /// record.
    #[test]
    fn after_a_session_row_by_row() {
        let strict = Limits {
            require_change: true,
            review_each_step: true,
            gate_each: true,
            ..rules()
        };
        let ok = || SessionOutcome::Ok;
        let pushing = Limits {
            push_each: true,
            ..strict.clone()
        };
        type Row = (&'static str, Round, Limits, Need);
        let rows: Vec<Row> = vec![
            (
                "settle first",
                after(ok(), false),
                strict.clone(),
                Need::Settle,
            ),
            (
                "a box checked with no change: unchecked before anything",
                after(ok(), true),
                strict.clone(),
                Need::Uncheck(Uncheck::NoChange { session: 4 }),
            ),
            (
                "without require_change it stays",
                after(ok(), true),
                rules(),
                Need::Settle,
            ),
            (
                "settled, a box checked: review the steps",
                Round {
                    no_change_unchecked: false,
                    settled: settled(&["br-1 parse"]),
                    ..after(ok(), false)
                },
                strict.clone(),
                Need::Review(ReviewOf::Steps {
                    session: 4,
                    steps: vec!["br-1 parse".into()],
                }),
            ),
            (
                "no review after a usage limit: judge COMPLETE",
                Round {
                    settled: settled(&["br-1 parse"]),
                    ..after(
                        SessionOutcome::Limited(crate::agent::stream::Limit::Overloaded),
                        false,
                    )
                },
                strict.clone(),
                Need::Judge,
            ),
            (
                "the steps' reviewer rejects: unchecked",
                Round {
                    settled: settled(&["br-1 parse"]),
                    step_review: review(Verdict::Rejected(vec!["no".into()])),
                    ..after(ok(), false)
                },
                strict.clone(),
                Need::Uncheck(Uncheck::Review),
            ),
            (
                "unchecked: judge COMPLETE",
                Round {
                    settled: settled(&["br-1 parse"]),
                    step_review: review(Verdict::Rejected(vec!["no".into()])),
                    review_unchecked: true,
                    ..after(ok(), false)
                },
                strict.clone(),
                Need::Judge,
            ),
            (
                "no COMPLETE, it changed something: the gate runs (each)",
                Round {
                    settled: settled(&[]),
                    claim: Some(None),
                    ..after(ok(), false)
                },
                strict.clone(),
                Need::RunGate { each: true },
            ),
            (
                "the each gate ran: record",
                Round {
                    settled: settled(&[]),
                    claim: Some(None),
                    each_gate: gate(false),
                    ..after(ok(), false)
                },
                strict.clone(),
                Need::Record,
            ),
            (
                "COMPLETE ran the gate already: no each run",
                Round {
                    settled: settled(&[]),
                    claim: claim(&[], Rule::RunGate { steps: 1 }),
                    gate: gate(true),
                    ..after(ok(), false)
                },
                strict.clone(),
                Need::Record,
            ),
            (
                "interrupted: nothing judged, recorded",
                Round {
                    settled: settled(&["br-1 parse"]),
                    ..after(SessionOutcome::Interrupted("SIGINT".into()), false)
                },
                strict.clone(),
                Need::Record,
            ),
            (
                "--push and commits: pushed before the record, after the gate",
                Round {
                    settled: settled(&[]),
                    claim: Some(None),
                    each_gate: gate(true),
                    ..after(ok(), false)
                },
                pushing.clone(),
                Need::Push,
            ),
            (
                "--push, the push answered: record",
                Round {
                    settled: settled(&[]),
                    claim: Some(None),
                    each_gate: gate(true),
                    pushed: Some(Some("--push: rejected".into())),
                    ..after(ok(), false)
                },
                pushing.clone(),
                Need::Record,
            ),
            (
                "--push and no commit: nothing to push",
                Round {
                    settled: Some(Settled {
                        committed: false,
                        ..settled(&[]).unwrap()
                    }),
                    claim: Some(None),
                    each_gate: gate(true),
                    ..after(ok(), false)
                },
                pushing.clone(),
                Need::Record,
            ),
            (
                "--push, interrupted with commits: pushed all the same",
                Round {
                    settled: settled(&[]),
                    ..after(SessionOutcome::Interrupted("SIGINT".into()), false)
                },
                pushing.clone(),
                Need::Push,
            ),
        ];
        for (name, round, rules, need) in rows {
            assert_eq!(plan(&round, &rules), need, "{name}");
        }
    }
}
