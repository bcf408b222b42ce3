//! What the coordinator decides about a step, with no I/O: what a worker's
//! end comes to, when a step may go back to a worker, when conflict rounds
//! and the run's time are over, and which steps a saved board may hold.
//! Each bound here is what makes a parallel run end whatever its workers
//! and sessions do.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::parallel::workers::End;
use crate::run::engine::Outcome;

/// Times in a row a step may go back to a worker that then starts no
/// session: past that, nothing would change by trying again.
pub const IDLE_ROUNDS: u32 = 3;

/// Times one step's merge may conflict, each resolved by a session, before
/// a human merges it.
pub const CONFLICT_ROUNDS: u32 = 5;

/// How long past the run's deadline its workers (told that deadline) have
/// to stop by themselves before they are asked to.
pub const GRACE: Duration = Duration::from_secs(15);

/// A worker's end, as the run found it.
#[derive(Debug, Clone)]
pub struct Ended<'a> {
    pub worker: &'a str,
    pub step: &'a str,
    pub end: &'a End,
    /// Its branch (for what is said).
    pub branch: &'a str,
    /// Its branch's last commit has the step checked: what the merge
    /// takes, whatever the worker's run folder (where a session can write)
    /// says.
    pub committed: bool,
}

/// What a worker's end comes to for its step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    /// Done: to the merge queue.
    Queue,
    /// Not done, though its worker said so: back to a worker, for this
    /// reason.
    WorkAgain(String),
    /// The run stops (once its other workers have): no new worker starts.
    Stop(Outcome, String),
}

/// A step is done only when its branch's committed spec says so; a worker
/// that began no run of its own is not done, and the run waits for a
/// human to see why.
pub fn after_worker(e: &Ended) -> Then {
    let (worker, step) = (e.worker, e.step);
    match e.end {
        End::NotStarted(why) => Then::Stop(
            Outcome::Waiting,
            format!(
                "{worker} (step {step}) did not start: {why}; fix that in its worktree (branch {}), then `ralph resume` and `ralph loop --resume`",
                e.branch
            ),
        ),
        End::Ran(Outcome::StepDone | Outcome::Complete, _) if e.committed => Then::Queue,
        End::Ran(Outcome::StepDone | Outcome::Complete, reason) => Then::WorkAgain(format!(
            "{worker} ended ({reason}), but no commit of its branch {} has {step} checked",
            e.branch
        )),
        End::Ran(outcome, reason) => {
            Then::Stop(*outcome, format!("{worker} (step {step}): {reason}"))
        }
    }
}

/// A step's count of workers in a row that started no session, after one
/// that started `sessions`.
pub fn idle_after(idle: u32, sessions: u32) -> u32 {
    if sessions == 0 {
        idle.saturating_add(1)
    } else {
        0
    }
}

/// Whether step `step` may go back to a worker (`None`), or why the run
/// waits instead: its last `idle` workers in a row started no session.
pub fn give_back(step: &str, idle: u32, why: &str) -> Option<(Outcome, String)> {
    (idle >= IDLE_ROUNDS).then(|| {
        (
            Outcome::Waiting,
            format!(
                "step {step} went back to a worker {idle} times in a row and none of them started a session (the last time: {why}); see to its worktree, then `ralph resume` and `ralph loop --resume`"
            ),
        )
    })
}

/// Whether the `round`th conflict of step `step`'s merge (on `files`) is
/// one too many for a resolution session, and why the run then waits.
pub fn conflict_round(step: &str, round: u32, files: &str) -> Option<(Outcome, String)> {
    (round > CONFLICT_ROUNDS).then(|| {
        (
            Outcome::Waiting,
            format!(
                "merging {step} conflicted {round} times, each resolved by a session, and conflicts again ({files}); merge it by hand, then `ralph resume` and `ralph loop --resume`"
            ),
        )
    })
}

/// Why the run waits when git refused to begin the merge of `from` into
/// `into` that a resolution session was to finish (`git_said`: its
/// words, on one line).
pub fn resolution_refused(from: &str, into: &str, git_said: &str) -> (Outcome, String) {
    let said: Vec<&str> = git_said
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    (
        Outcome::Waiting,
        format!(
            "a conflict is to be resolved, but git refused to merge {from} into {into}: {}; make that merge possible there (commit or discard what is not committed), then `ralph resume` and `ralph loop --resume`",
            crate::output::visible_line(&said.join(" "))
        ),
    )
}

/// Where the run is against its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Before it (or no `--max-time`).
    Within,
    /// Past it: nothing new starts or merges; the workers stop at their
    /// own limit (the same deadline).
    Over,
    /// Past it and its grace: the workers still running are stopped.
    Force,
}

/// The run's clock at `now`.
pub fn clock(deadline: Option<Instant>, now: Instant) -> Clock {
    match deadline {
        Some(d) if now >= d + GRACE => Clock::Force,
        Some(d) if now >= d => Clock::Over,
        _ => Clock::Within,
    }
}

/// A saved board's steps less those the spec lacks (the board is in the
/// project, where a session can write); the keys dropped.
pub fn spec_steps_only<T>(steps: &mut BTreeMap<String, T>, spec: &BTreeSet<String>) -> Vec<String> {
    let dropped: Vec<String> = steps
        .keys()
        .filter(|k| !spec.contains(*k))
        .cloned()
        .collect();
    steps.retain(|k, _| spec.contains(k));
    dropped
}

/// Steps back at work with no worker running, to start now: in the spec's
/// order, at most `slots`.
pub fn back_to_work(
    spec_order: &[String],
    working: &BTreeSet<String>,
    running: &BTreeSet<String>,
    slots: usize,
) -> Vec<String> {
    spec_order
        .iter()
        .filter(|k| working.contains(*k) && !running.contains(*k))
        .take(slots)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended<'a>(end: &'a End, committed: bool) -> Ended<'a> {
        Ended {
            worker: "w2",
            step: "**1** One",
            end,
            branch: "ralph/par-1",
            committed,
        }
    }

    #[test]
    fn a_step_is_done_only_when_its_branch_has_it_committed() {
        for o in [Outcome::StepDone, Outcome::Complete] {
            let end = End::Ran(o, "step **1** One is done".into());
            assert_eq!(after_worker(&ended(&end, true)), Then::Queue);
            match after_worker(&ended(&end, false)) {
                Then::WorkAgain(why) => {
                    assert!(why.contains("no commit of its branch ralph/par-1"), "{why}");
                    assert!(why.contains("**1** One") && why.contains("w2"), "{why}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_worker_that_did_not_start_is_not_done_and_the_run_waits_naming_its_step() {
        let end =
            End::NotStarted("error: .ralph/config.toml is not approved (exit status: 2)".into());
        for committed in [true, false] {
            match after_worker(&ended(&end, committed)) {
                Then::Stop(Outcome::Waiting, why) => {
                    assert!(why.contains("w2 (step **1** One) did not start"), "{why}");
                    assert!(
                        why.contains("not approved") && why.contains("ralph resume"),
                        "{why}"
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn any_other_end_stops_the_run_with_it() {
        let end = End::Ran(Outcome::IterationLimit, "the limit".into());
        assert_eq!(
            after_worker(&ended(&end, true)),
            Then::Stop(
                Outcome::IterationLimit,
                "w2 (step **1** One): the limit".into()
            )
        );
    }

    #[test]
    fn a_step_goes_back_to_workers_that_start_no_session_only_a_few_times() {
        let mut idle = 0;
        for _ in 0..IDLE_ROUNDS {
            assert_eq!(give_back("s", idle, "x"), None);
            idle = idle_after(idle, 0);
        }
        let (o, why) = give_back("**1** One", idle, "w3 ended (step done)").unwrap();
        assert_eq!(o, Outcome::Waiting);
        assert!(
            why.contains("**1** One") && why.contains("3 times") && why.contains("w3 ended"),
            "{why}"
        );
        assert_eq!(idle_after(idle, 1), 0, "a session starts the count again");
        assert_eq!(idle_after(u32::MAX, 0), u32::MAX);
    }

    #[test]
    fn conflict_rounds_are_bounded() {
        assert_eq!(conflict_round("s", 1, "a.txt"), None);
        assert_eq!(conflict_round("s", CONFLICT_ROUNDS, "a.txt"), None);
        let (o, why) = conflict_round("**2** Two", CONFLICT_ROUNDS + 1, "a.txt").unwrap();
        assert_eq!(o, Outcome::Waiting);
        assert!(
            why.contains("**2** Two") && why.contains("a.txt") && why.contains("by hand"),
            "{why}"
        );
    }

    #[test]
    fn a_resolution_git_refused_says_gits_words_on_one_line() {
        let (o, why) = resolution_refused(
            "main",
            "the worktree of **2** Two (/w/2)",
            "error: Your local changes to the following files would be overwritten by merge:\n\tshared.txt\nPlease commit your changes or stash them before you merge.\nAborting",
        );
        assert_eq!(o, Outcome::Waiting);
        assert!(
            why.contains("refused to merge main into the worktree of **2** Two (/w/2): error: Your local changes to the following files would be overwritten by merge: shared.txt Please commit"),
            "{why}"
        );
        assert!(!why.contains('\n') && why.contains("ralph resume"), "{why}");
    }

    #[test]
    fn the_clock_is_within_then_over_then_forced_after_the_grace() {
        let t = Instant::now();
        assert_eq!(clock(None, t + Duration::from_secs(99_999)), Clock::Within);
        let d = t + Duration::from_secs(10);
        assert_eq!(clock(Some(d), t), Clock::Within);
        assert_eq!(clock(Some(d), d), Clock::Over);
        assert_eq!(
            clock(Some(d), d + GRACE - Duration::from_millis(1)),
            Clock::Over
        );
        assert_eq!(clock(Some(d), d + GRACE), Clock::Force);
    }

    #[test]
    fn a_board_keeps_only_the_specs_steps() {
        let mut steps: BTreeMap<String, u32> = (0..5).map(|i| (format!("k{i}"), i)).collect();
        let spec: BTreeSet<String> = ["k1", "k3", "k9"].iter().map(|s| s.to_string()).collect();
        let dropped = spec_steps_only(&mut steps, &spec);
        assert_eq!(dropped, ["k0", "k2", "k4"]);
        assert_eq!(steps.keys().collect::<Vec<_>>(), ["k1", "k3"]);
    }

    #[test]
    fn steps_back_at_work_start_in_the_specs_order_never_past_the_slots() {
        let order: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        let set = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            back_to_work(&order, &set(&["d", "b", "c"]), &set(&["b"]), 9),
            ["c", "d"]
        );
        assert_eq!(
            back_to_work(&order, &set(&["d", "b", "c"]), &set(&[]), 2),
            ["b", "c"]
        );
        assert!(back_to_work(&order, &set(&["a"]), &set(&[]), 0).is_empty());
    }
}
