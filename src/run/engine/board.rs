//! The board of a run of many steps, decided with no I/O: where each step
//! is (working, queued, resolving, merged, given up), what a worker's end,
//! a merge, a conflict or the gate after a merge comes to, when the run
//! stops and why. The coordinator (`run::coordinator`) carries each
//! decision out (processes, git, what is said) and tells the board what
//! came of it. Each bound here is what makes a parallel run end whatever
//! its workers and sessions do.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::OnConflict;
use crate::run::engine::Outcome;
use crate::run::engine::pause::Choice;

/// Where a step of the run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    /// A worker works it (or will again, on resume).
    Working,
    /// Done in its worktree, waiting for its merge.
    Queued,
    /// A resolution session merges it with what was merged before.
    Resolving,
    Merged,
    /// Its worker stopped without finishing it (the run's outcome says why).
    GaveUp,
    /// Its worker stopped at the step's budget (`--max-cost-per-step`), its
    /// work kept in its worktree: the run asks what to do with it and goes
    /// on with the others meanwhile.
    Paused,
    /// Left open at the answer about its budget, its work kept: the run
    /// goes on without it.
    Skipped,
}

/// A step's line on the board.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Slot {
    /// Its worktree (and branch `ralph/<name>`).
    pub worktree: String,
    /// The worker that last worked it.
    pub worker: Option<String>,
    pub place: Place,
    /// Merges of it the gate failed (each undone).
    #[serde(default)]
    pub undone: u32,
    /// What its next worker is told (the gate's failure after its merge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The last word on it (why its worker stopped, the files in conflict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The files its last merge conflicted on, while it is resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// Its workers in a row that started no session.
    #[serde(default)]
    pub idle: u32,
    /// Its merges that conflicted, each resolved by a session.
    #[serde(default)]
    pub conflicted: u32,
}

impl Slot {
    /// A step new on the board, at `place`, in worktree `worktree`.
    pub fn new(worktree: String, place: Place) -> Slot {
        Slot {
            worktree,
            worker: None,
            place,
            undone: 0,
            feedback: None,
            note: None,
            conflicts: Vec::new(),
            idle: 0,
            conflicted: 0,
        }
    }
}

/// The run's board, by step key.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Board {
    pub parallel: u32,
    /// Workers started so far (`w1`, `w2`, ...).
    pub workers: u32,
    pub steps: BTreeMap<String, Slot>,
    /// Merges made, in order (step keys).
    #[serde(default)]
    pub merged: Vec<String>,
    /// Steps done in their worktrees, to merge in this order.
    #[serde(skip)]
    pub queue: VecDeque<String>,
    /// The first reason the run cannot finish: once set, no new worker
    /// starts, and the run ends when none runs.
    #[serde(skip)]
    pub end: Option<(Outcome, String)>,
}

/// What the gate failing after a step's merge comes to (the merge is
/// undone in each case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateFailed {
    /// Its step is worked again, its worker told what failed; this said.
    Rework(String),
    /// It failed after each of the step's merges allowed: the run fails.
    GaveUp,
    /// `ralph merge`: another machine did the step; its branch is left
    /// for a human (the run waits); this said.
    LeftForHuman(String),
}

/// What a merge in conflict comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflicted {
    /// `--on-conflict wait`: the run waits for a human.
    Wait,
    /// A resolution session merges both sides; this said.
    Resolve(String),
    /// Too many rounds of it: the run waits; this said.
    GaveUp(String),
}

/// Where the run is against its deadline, and what the coordinator does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deadline {
    /// Within it: on with the run.
    Within,
    /// Past it: wait for the workers (stopping them, `stop_all`, once
    /// their grace is over) before the run ends.
    Wait { stop_all: bool },
    /// Past it and no worker runs: the run ends.
    End(Outcome, String),
}

impl Board {
    /// A board as saved (`text`, None: no board yet), less any step whose
    /// worktree name is not one ralph makes (the run folder is in the
    /// project, where a session can write).
    pub fn from_saved(text: Option<&str>) -> Board {
        let mut b: Board = text
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        b.steps.retain(|_, s| {
            (s.worktree.starts_with("par-") || s.worktree.starts_with("step-"))
                && crate::git::check_worktree_name(&s.worktree).is_ok()
        });
        b
    }

    pub fn busy(&self) -> BTreeSet<String> {
        self.steps
            .iter()
            .filter(|(_, s)| s.place != Place::Merged)
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// How a worker ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Its run ended: the outcome and reason it wrote (a run killed before
    /// it wrote one ended abnormally).
    Ran(Outcome, String),
    /// It began no run of its own (it refused to start): why.
    NotStarted(String),
}

impl Board {
    /// The run stops for this reason, unless it already stops for another.
    pub fn stop(&mut self, outcome: Outcome, why: String) {
        self.end.get_or_insert((outcome, why));
    }

    /// A resumed run's board: only the spec's steps (`spec`; the keys
    /// dropped are returned), `ralph merge`'s steps (`remote`: key and
    /// slug) queued, steps given up or resolving back at work (you have
    /// acted: `ralph resume`), and the queued ones queued again.
    pub fn resume(
        &mut self,
        spec: &BTreeSet<String>,
        remote: Option<&[(String, String)]>,
    ) -> Vec<String> {
        let dropped = spec_steps_only(&mut self.steps, spec);
        for (key, slug) in remote.unwrap_or_default() {
            self.steps.insert(
                key.clone(),
                Slot::new(format!("step-{slug}"), Place::Queued),
            );
        }
        self.queue.clear();
        for (key, slot) in &mut self.steps {
            slot.idle = 0;
            match slot.place {
                // A paused step has its budget again; a skipped one is
                // worked again (the board is where a session can write: a
                // skip it planted must not hold; yours is asked again if
                // the step pauses again).
                Place::GaveUp | Place::Resolving | Place::Paused | Place::Skipped => {
                    slot.place = Place::Working
                }
                Place::Queued => self.queue.push_back(key.clone()),
                _ => {}
            }
        }
        dropped
    }

    /// A worker's end (`sessions`: those it started): its step's count of
    /// idle workers, and what the end comes to. A `Then::Stop` is the
    /// run's end already (see `stopped`).
    pub fn worker_ended(&mut self, e: &Ended, sessions: u32) -> Option<Then> {
        let slot = self.steps.get_mut(e.step)?;
        slot.idle = idle_after(slot.idle, sessions);
        Some(match after_worker(e) {
            // A resolution that stopped short: what the human finds is a
            // merge in conflict, and where, not only the session's count.
            Then::Stop(o, why) if slot.place == Place::Resolving && !slot.conflicts.is_empty() => {
                Then::Stop(
                    o,
                    format!(
                        "{why}; it was resolving the conflict of merging {} ({}), which may still hold conflict markers: resolve them by hand in worktree {} (branch {}) and commit, then `ralph resume` and `ralph loop --resume`",
                        e.step,
                        slot.conflicts.join(", "),
                        slot.worktree,
                        e.branch
                    ),
                )
            }
            then => then,
        })
    }

    /// Step `key` done in its worktree: to the merge queue.
    pub fn queue(&mut self, key: &str) {
        if let Some(slot) = self.steps.get_mut(key) {
            slot.place = Place::Queued;
            slot.feedback = None;
            slot.conflicts.clear();
        }
        self.queue.push_back(key.to_string());
    }

    /// Step `key` back to a worker (when a slot is free), unless its last
    /// workers started no session: then the run waits, naming it (what to
    /// say is returned).
    pub fn back_to_work(&mut self, key: &str, why: &str) -> Option<String> {
        let slot = self.steps.get_mut(key)?;
        match give_back(key, slot.idle, why) {
            None => {
                slot.place = Place::Working;
                None
            }
            Some((outcome, reason)) => {
                slot.place = Place::GaveUp;
                slot.note = Some(reason.clone());
                let said = format!("{reason}; no new worker starts");
                self.stop(outcome, reason);
                Some(said)
            }
        }
    }

    /// A worker that stopped short of its step: the run's reason to stop
    /// (an interrupted step goes on when the run is resumed, and is not
    /// said); what to say.
    pub fn stopped(&mut self, key: &str, outcome: Outcome, why: String) -> Option<String> {
        if let Some(slot) = self.steps.get_mut(key) {
            slot.place = if outcome == Outcome::Interrupted {
                Place::Working
            } else {
                Place::GaveUp
            };
            slot.note = Some(format!("{}: {why}", outcome.text()));
        }
        let said = (outcome != Outcome::Interrupted)
            .then(|| format!("stopped ({}): {why}; no new worker starts", outcome.text()));
        self.stop(outcome, why);
        said
    }

    /// Step `key` paused at its budget (`why`): no worker works it until a
    /// human answers; the others go on.
    pub fn pause(&mut self, key: &str, why: String) {
        if let Some(slot) = self.steps.get_mut(key) {
            slot.place = Place::Paused;
            slot.note = Some(why);
        }
    }

    /// The steps paused at their budget, the first asked about first.
    pub fn paused(&self) -> Vec<String> {
        self.steps
            .iter()
            .filter(|(_, s)| s.place == Place::Paused)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The answer about paused step `key` (by `by`; `told`: what its next
    /// worker is told of it): what is said. `More`: back to work (a slot
    /// free) with its budget again; `Skip`: left open, the run going on
    /// without it; `Stop`: the run's end (its workers are stopped).
    pub fn answered(&mut self, key: &str, choice: Choice, (by, told): (&str, &str)) -> String {
        let Some(slot) = self.steps.get_mut(key).filter(|s| s.place == Place::Paused) else {
            return format!(
                "the answer of {by} was about step {key}, which is no longer paused: dropped"
            );
        };
        match choice {
            Choice::More => {
                slot.place = Place::Working;
                slot.idle = 0;
                slot.feedback = Some(told.to_string());
                format!("step {key} has its budget again (the answer of {by}): it is worked again")
            }
            Choice::Skip => {
                slot.place = Place::Skipped;
                slot.note = Some(format!("skipped at the answer of {by}"));
                format!(
                    "step {key} is skipped (the answer of {by}): left open, its work kept in worktree {}; the run goes on without it",
                    slot.worktree
                )
            }
            Choice::Stop => {
                slot.note = Some(format!("paused; the run stopped at the answer of {by}"));
                self.stop(
                    Outcome::Interrupted,
                    format!("stopped at the answer of {by} about step {key}"),
                );
                format!("the run stops (the answer of {by} about step {key})")
            }
        }
    }

    /// A resolution of step `key` committed with conflict markers still in
    /// `listed` (its worktree `dir`): worked again, told where (`true`),
    /// unless it was undone `most` times: then the run waits.
    pub fn unresolved(&mut self, key: &str, listed: &str, most: u32, dir: &str) -> bool {
        let Some(slot) = self.steps.get_mut(key) else {
            return false;
        };
        slot.undone += 1;
        if slot.undone >= most {
            slot.place = Place::GaveUp;
            let why = format!(
                "{key} was resolved {} times and conflict markers are still in {listed} (worktree {dir}): resolve them by hand and commit, then `ralph resume` and `ralph loop --resume`",
                slot.undone
            );
            self.stop(Outcome::Waiting, why);
            return false;
        }
        slot.feedback = Some(format!(
            "Your branch's merge was committed with conflict markers still in: {listed}. Your step is open again: resolve them so that both sides' changes survive, leave no marker (no `<<<<<<<`, `=======`, `>>>>>>>` lines), run the project's checks, commit, and check your step's box again."
        ));
        true
    }

    /// The gate failed after step `key`'s merge (`summary`, and `feedback`
    /// for its next worker); `most`: merges the gate may fail before the
    /// run does; `remote`: another machine did the step (`ralph merge`),
    /// on `branch`.
    pub fn gate_failed(
        &mut self,
        key: &str,
        (most, remote): (u32, bool),
        (summary, feedback, branch): (&str, &str, &str),
    ) -> Option<GateFailed> {
        let slot = self.steps.get_mut(key)?;
        slot.undone += 1;
        if remote {
            slot.place = Place::GaveUp;
            slot.note = Some(format!("the gate failed after its merge ({summary})"));
            self.stop(
                Outcome::Waiting,
                format!(
                    "the gate failed after merging {key} ({summary}): fix it on its branch {branch} (then `ralph merge` again), or delete that branch for a worker to do it again"
                ),
            );
            return Some(GateFailed::LeftForHuman(format!(
                "the gate failed after merging {key} ({summary}): the merge is undone"
            )));
        }
        if slot.undone >= most {
            slot.place = Place::GaveUp;
            slot.note = Some(format!(
                "the gate failed after each of its {} merges",
                slot.undone
            ));
            let why = format!(
                "the gate failed after each of {} merges of {key} ({summary})",
                slot.undone
            );
            self.stop(Outcome::Failed, why);
            return Some(GateFailed::GaveUp);
        }
        slot.feedback = Some(format!(
            "Your step was done once, but after it was merged the project's checks failed, so the merge was undone. What failed:\n\n{feedback}"
        ));
        slot.place = Place::Working;
        Some(GateFailed::Rework(format!(
            "the gate failed after merging {key} ({summary}): the merge is undone and the step worked again"
        )))
    }

    /// Step `key` merged (the gate passed, if any); what follows is
    /// `after_merge`'s.
    pub fn merged(&mut self, key: &str) {
        if let Some(slot) = self.steps.get_mut(key) {
            slot.place = Place::Merged;
            slot.note = None;
        }
        self.merged.push(key.to_string());
    }

    /// Step `key`'s merge (branch `branch`) conflicts with what is merged
    /// in `integration` on `files`.
    pub fn conflicted(
        &mut self,
        key: &str,
        files: &[String],
        on_conflict: OnConflict,
        (branch, integration): (&str, &str),
    ) -> Option<Conflicted> {
        let slot = self.steps.get_mut(key)?;
        let listed = files.join(", ");
        slot.note = Some(format!("conflicts with what is merged: {listed}"));
        slot.conflicts = files.to_vec();
        match on_conflict {
            OnConflict::Wait => {
                slot.place = Place::GaveUp;
                self.stop(
                    Outcome::Waiting,
                    format!(
                        "merging {key} (branch {branch}) conflicts with what is merged in {integration}: {listed}; merge it by hand (`git merge {branch}`), or end the run"
                    ),
                );
                Some(Conflicted::Wait)
            }
            OnConflict::Resolve => {
                slot.conflicted += 1;
                if let Some((outcome, why)) = conflict_round(key, slot.conflicted, &listed) {
                    slot.place = Place::GaveUp;
                    let said = format!("{why}; no new worker starts");
                    self.stop(outcome, why);
                    return Some(Conflicted::GaveUp(said));
                }
                slot.place = Place::Resolving;
                Some(Conflicted::Resolve(format!(
                    "merging {key} conflicts with what is merged ({listed}): its worker merges {integration} into its branch and resolves them"
                )))
            }
        }
    }

    /// Git refused to begin the merge of `from` into `into` that step
    /// `key`'s resolution was to finish: the run waits; what to say.
    pub fn resolution_refused(
        &mut self,
        key: &str,
        (from, into): (&str, &str),
        said: &str,
    ) -> String {
        let (outcome, why) = resolution_refused(from, into, said);
        if let Some(slot) = self.steps.get_mut(key) {
            slot.place = Place::GaveUp;
            slot.note = Some(why.clone());
        }
        let told = format!("{why}; no new worker starts");
        self.stop(outcome, why);
        told
    }

    /// Step `key`'s resolution under way in its worktree: its worker told
    /// both sides (`integration` with the steps merged so far) and the
    /// files, and it goes back to work.
    pub fn resolving(&mut self, key: &str, integration: &str, files: &[String]) -> Option<String> {
        let merged = self.merged.join(", ");
        let slot = self.steps.get_mut(key)?;
        slot.feedback = Some(format!(
            "A merge is in progress in this worktree: {integration} (with the steps merged so far: {merged}) is being merged into your branch, and these files conflict: {}.\nResolve every conflict so that both sides' changes survive (your step's and the merged steps'), leave no conflict marker, run the project's checks, then `git add` the files and `git commit --no-edit`. Your step stays checked.",
            files.join(", ")
        ));
        self.back_to_work(key, "a conflict to resolve")
    }

    /// The next step to merge: one at a time, none past the deadline.
    pub fn next_merge(&mut self, clock: Clock) -> Option<String> {
        if clock != Clock::Within {
            return None;
        }
        self.queue.pop_front()
    }

    /// Past `--max-time` (`max`), with `running` workers: the run's end
    /// from then on (nothing new starts or merges), its workers stopped
    /// once they have had their grace, and the end once none runs.
    pub fn deadline(&mut self, clock: Clock, max: Duration, running: usize) -> Deadline {
        if clock == Clock::Within {
            return Deadline::Within;
        }
        self.stop(
            Outcome::TimeLimit,
            format!(
                "the run has reached its --max-time ({})",
                crate::timefmt::human_duration(max)
            ),
        );
        match (running, self.end.take()) {
            (0, Some((outcome, why))) => Deadline::End(outcome, why),
            (_, end) => {
                self.end = end;
                Deadline::Wait {
                    stop_all: clock == Clock::Force,
                }
            }
        }
    }

    /// Nothing runs and nothing waits to merge: every step is merged
    /// (`None`: the run is judged), or why it stops. `open`: the spec has
    /// open steps; `remote`: `ralph merge`, what it says of them; `never`:
    /// the steps that can never start, and why.
    pub fn finished(
        &mut self,
        open: bool,
        remote: Option<String>,
        never: &[(String, String)],
    ) -> Option<(Outcome, String)> {
        if let Some(end) = self.end.take() {
            return Some(end);
        }
        // A step still paused: the run ends asking about it (resumable).
        if let Some(slot) = self.steps.values().find(|s| s.place == Place::Paused) {
            let why = slot.note.clone().unwrap_or_default();
            return Some((Outcome::StepBudget, why));
        }
        if !open {
            return None;
        }
        let skipped: Vec<&str> = self
            .steps
            .iter()
            .filter(|(_, s)| s.place == Place::Skipped)
            .map(|(k, _)| k.as_str())
            .collect();
        if !skipped.is_empty() {
            return Some((
                Outcome::Skipped,
                format!(
                    "every other step is merged or cannot start; skipped at your answer and still open: {} (their work is kept in their worktrees; the next `ralph loop` works them)",
                    skipped.join(", ")
                ),
            ));
        }
        if let Some(still_open) = remote {
            return Some((Outcome::Partial, still_open));
        }
        let why = never
            .iter()
            .map(|(k, why)| format!("{k}: {why}"))
            .collect::<Vec<_>>()
            .join("; ");
        Some((Outcome::Waiting, format!("no open step can start: {why}")))
    }
}

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
    /// The step is paused at its budget, for this reason; the others go on.
    Pause(String),
}

/// A step is done only when its branch's committed spec says so; a worker
/// that began no run of its own is not done, and the run waits for a
/// human to see why.
fn after_worker(e: &Ended) -> Then {
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
        End::Ran(Outcome::StepBudget, reason) => {
            Then::Pause(format!("{worker} (step {step}): {reason}"))
        }
        End::Ran(outcome, reason) => {
            Then::Stop(*outcome, format!("{worker} (step {step}): {reason}"))
        }
    }
}

/// A step's count of workers in a row that started no session, after one
/// that started `sessions`.
fn idle_after(idle: u32, sessions: u32) -> u32 {
    if sessions == 0 {
        idle.saturating_add(1)
    } else {
        0
    }
}

/// Whether step `step` may go back to a worker (`None`), or why the run
/// waits instead: its last `idle` workers in a row started no session.
fn give_back(step: &str, idle: u32, why: &str) -> Option<(Outcome, String)> {
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
fn conflict_round(step: &str, round: u32, files: &str) -> Option<(Outcome, String)> {
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
fn resolution_refused(from: &str, into: &str, git_said: &str) -> (Outcome, String) {
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
fn spec_steps_only<T>(steps: &mut BTreeMap<String, T>, spec: &BTreeSet<String>) -> Vec<String> {
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

/// What follows a merge, each an action the coordinator carries out and
/// reports back (`MergeDone`), in `after_merge`'s order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterMerge {
    /// `--push`: what is merged goes to the remote as it lands. A refusal
    /// stops the run for a human (`Board::stop`), the merge kept.
    Push,
    /// A step fetched from the remote (`--from-remote`), merged and pushed:
    /// its branch there deleted (where it is still as fetched).
    DeleteStepBranch,
    /// The step's issue closed: the tracker's issues are ralph's to close
    /// (a pull request's body closes them under `--pr`: said, not closed).
    CloseIssue(String),
    /// Its worktree and branch removed.
    RemoveWorktree,
}

/// How a run ships each merge: the parts of its settings `after_merge`
/// reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeShip {
    pub push: bool,
    /// The step came from a branch on the remote.
    pub from_remote: bool,
    /// Its issue, when the tracker's issues are ralph's to close.
    pub issue: Option<String>,
}

/// What of `after_merge`'s actions is done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeDone {
    /// `Push` answered: whether the remote took it.
    pub pushed: Option<bool>,
    pub branch_deleted: bool,
    pub issue_closed: bool,
    pub worktree_removed: bool,
}

/// The next action after a merge, from what is done; `None`: all of it.
/// A remote's step branch goes only once what merged it is pushed.
pub fn after_merge(ship: &MergeShip, done: &MergeDone) -> Option<AfterMerge> {
    if ship.push && done.pushed.is_none() {
        return Some(AfterMerge::Push);
    }
    if ship.from_remote && done.pushed == Some(true) && !done.branch_deleted {
        return Some(AfterMerge::DeleteStepBranch);
    }
    if let Some(issue) = ship.issue.as_ref().filter(|_| !done.issue_closed) {
        return Some(AfterMerge::CloseIssue(issue.clone()));
    }
    (!done.worktree_removed).then_some(AfterMerge::RemoveWorktree)
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
    fn a_step_over_its_budget_pauses_and_the_run_goes_on() {
        let end = End::Ran(Outcome::StepBudget, "step **1** One has cost $0.60".into());
        for committed in [true, false] {
            assert_eq!(
                after_worker(&ended(&end, committed)),
                Then::Pause("w2 (step **1** One): step **1** One has cost $0.60".into())
            );
        }
    }

    /// A paused step, and what each answer about it comes to: the step's
    /// place, what its next worker is told, the run's end, and what is said.
    #[test]
    fn an_answer_about_a_paused_step_row_by_row() {
        type Row = (
            Choice,
            Place,
            Option<&'static str>,
            Option<Outcome>,
            &'static str,
        );
        let rows: [Row; 3] = [
            (
                Choice::More,
                Place::Working,
                Some("told"),
                None,
                "step a has its budget again (the answer of ann): it is worked again",
            ),
            (
                Choice::Skip,
                Place::Skipped,
                None,
                None,
                "step a is skipped (the answer of ann): left open, its work kept in worktree par-a; the run goes on without it",
            ),
            (
                Choice::Stop,
                Place::Paused,
                None,
                Some(Outcome::Interrupted),
                "the run stops (the answer of ann about step a)",
            ),
        ];
        for (choice, place, feedback, end, said) in rows {
            let mut b = board();
            b.steps.get_mut("a").unwrap().idle = 2;
            assert_eq!(worked(&b), ["a"]);
            b.pause("a", "w1 (step a): over".into());
            assert_eq!(seen(&b, "a"), (Place::Paused, None), "the others go on");
            assert!(b.busy().contains("a"), "no worker starts it meanwhile");
            assert_eq!(b.paused(), ["a"]);
            assert_eq!(b.answered("a", choice, ("ann", "told")), said, "{choice:?}");
            assert_eq!(seen(&b, "a"), (place, end), "{choice:?}");
            assert_eq!(b.steps["a"].feedback.as_deref(), feedback, "{choice:?}");
            if choice == Choice::More {
                assert_eq!(b.steps["a"].idle, 0, "you have acted");
            }
            // Answered once: a second answer finds it no longer paused.
            if choice != Choice::Stop {
                assert_eq!(
                    b.answered("a", Choice::Stop, ("bob", "")),
                    "the answer of bob was about step a, which is no longer paused: dropped"
                );
                assert_eq!(b.end, None);
            }
        }
    }

    /// The steps of `b` at work (the rest of the run has them busy).
    fn worked(b: &Board) -> Vec<String> {
        b.steps
            .iter()
            .filter(|(_, s)| s.place == Place::Working)
            .map(|(k, _)| k.clone())
            .collect()
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

    /// A board of steps `a` (working), `b` (queued), `c` (merged).
    fn board() -> Board {
        let mut b = Board::default();
        for (k, place) in [
            ("a", Place::Working),
            ("b", Place::Queued),
            ("c", Place::Merged),
        ] {
            b.steps
                .insert(k.to_string(), Slot::new(format!("par-{k}"), place));
        }
        b
    }

    /// The step's place, and the run's end if any.
    fn seen(b: &Board, key: &str) -> (Place, Option<Outcome>) {
        (b.steps[key].place, b.end.as_ref().map(|(o, _)| *o))
    }

    #[test]
    fn a_resumed_board_row_by_row() {
        let spec: BTreeSet<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        type Row = (&'static str, Place, Place, bool);
        let rows: Vec<Row> = vec![
            (
                "working stays working",
                Place::Working,
                Place::Working,
                false,
            ),
            ("queued is queued again", Place::Queued, Place::Queued, true),
            (
                "resolving goes back to work",
                Place::Resolving,
                Place::Working,
                false,
            ),
            (
                "given up goes back to work",
                Place::GaveUp,
                Place::Working,
                false,
            ),
            ("merged stays merged", Place::Merged, Place::Merged, false),
            (
                "paused at its budget has it again",
                Place::Paused,
                Place::Working,
                false,
            ),
            (
                "skipped goes back to work (a board can be planted)",
                Place::Skipped,
                Place::Working,
                false,
            ),
        ];
        for (what, before, after, queued) in rows {
            let mut b = Board::default();
            let mut slot = Slot::new("par-a".into(), before);
            slot.idle = 2;
            b.steps.insert("a".into(), slot);
            b.steps
                .insert("gone".into(), Slot::new("par-g".into(), Place::Queued));
            b.queue.push_back("stale".into());
            let dropped = b.resume(&spec, None);
            assert_eq!(dropped, ["gone"], "{what}");
            assert_eq!(b.steps["a"].place, after, "{what}");
            assert_eq!(b.steps["a"].idle, 0, "{what}: you have acted");
            assert_eq!(b.queue.contains(&"a".to_string()), queued, "{what}");
            assert!(!b.queue.contains(&"stale".to_string()), "{what}");
        }
        let mut b = Board::default();
        b.resume(&spec, Some(&[("d".into(), "4-d".into())]));
        assert_eq!(b.steps["d"].worktree, "step-4-d");
        assert_eq!(b.queue, ["d"], "ralph merge's steps are queued");
    }

    #[test]
    fn a_saved_board_keeps_only_worktrees_ralph_names() {
        let text = r#"{"parallel":2,"workers":3,"steps":{
            "a":{"worktree":"par-a","worker":"w1","place":"queued"},
            "b":{"worktree":"../../etc","worker":null,"place":"working"},
            "c":{"worktree":"step-9-c","worker":null,"place":"merged"},
            "d":{"worktree":"mine","worker":null,"place":"working"}},"merged":["c"]}"#;
        let b = Board::from_saved(Some(text));
        assert_eq!(b.steps.keys().collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(
            (b.parallel, b.workers, b.merged.clone()),
            (2, 3, vec!["c".to_string()])
        );
        assert!(Board::from_saved(Some("not json")).steps.is_empty());
        assert!(Board::from_saved(None).steps.is_empty());
        assert_eq!(b.busy(), BTreeSet::from(["a".to_string()]));
    }

    #[test]
    fn a_workers_end_row_by_row() {
        let done = End::Ran(Outcome::StepDone, "step a is done".into());
        let limit = End::Ran(Outcome::IterationLimit, "the limit".into());
        let stopped = End::Ran(Outcome::Interrupted, "SIGINT".into());
        type Row<'e> = (&'static str, &'e End, bool, u32, Option<Then>, u32);
        let rows: Vec<Row<'_>> = vec![
            (
                "done and committed: queued",
                &done,
                true,
                1,
                Some(Then::Queue),
                0,
            ),
            (
                "done with no session: idle counts",
                &done,
                true,
                0,
                Some(Then::Queue),
                2,
            ),
            (
                "any other end stops the run",
                &limit,
                true,
                3,
                Some(Then::Stop(
                    Outcome::IterationLimit,
                    "w1 (step a): the limit".into(),
                )),
                0,
            ),
            (
                "interrupted stops the run too",
                &stopped,
                false,
                1,
                Some(Then::Stop(
                    Outcome::Interrupted,
                    "w1 (step a): SIGINT".into(),
                )),
                0,
            ),
        ];
        for (what, end, committed, sessions, then, idle) in rows {
            let mut b = board();
            b.steps.get_mut("a").unwrap().idle = 1;
            let e = Ended {
                worker: "w1",
                step: "a",
                end,
                branch: "ralph/par-a",
                committed,
            };
            assert_eq!(b.worker_ended(&e, sessions), then, "{what}");
            assert_eq!(b.steps["a"].idle, idle, "{what}");
        }
        let e = Ended {
            worker: "w1",
            step: "zz",
            end: &done,
            branch: "x",
            committed: true,
        };
        assert_eq!(board().worker_ended(&e, 1), None, "a step not on the board");
        // A resolution that stopped short names the conflict to resolve.
        let mut b = board();
        let slot = b.steps.get_mut("a").unwrap();
        slot.place = Place::Resolving;
        slot.conflicts = vec!["work-3.txt".into()];
        let e = Ended {
            worker: "w4",
            step: "a",
            end: &limit,
            branch: "ralph/par-a",
            committed: true,
        };
        let Some(Then::Stop(Outcome::IterationLimit, why)) = b.worker_ended(&e, 2) else {
            panic!("a stop");
        };
        assert_eq!(
            why,
            format!(
                "w4 (step a): the limit; it was resolving the conflict of merging a (work-3.txt), which may still hold conflict markers: resolve them by hand in worktree {} (branch ralph/par-a) and commit, then `ralph resume` and `ralph loop --resume`",
                b.steps["a"].worktree
            )
        );
    }

    #[test]
    fn queueing_back_to_work_and_stopping_row_by_row() {
        let mut b = board();
        {
            let a = b.steps.get_mut("a").unwrap();
            a.feedback = Some("old".into());
            a.conflicts = vec!["f".into()];
        }
        b.queue("a");
        assert_eq!(seen(&b, "a"), (Place::Queued, None));
        assert_eq!(
            (b.steps["a"].feedback.clone(), b.steps["a"].conflicts.len()),
            (None, 0)
        );
        assert_eq!(b.queue, ["a"]);

        let mut b = board();
        assert_eq!(b.back_to_work("b", "why"), None);
        assert_eq!(seen(&b, "b"), (Place::Working, None));
        b.steps.get_mut("b").unwrap().idle = IDLE_ROUNDS;
        let said = b.back_to_work("b", "w3 ended").unwrap();
        assert!(
            said.ends_with("; no new worker starts") && said.contains("w3 ended"),
            "{said}"
        );
        assert_eq!(seen(&b, "b"), (Place::GaveUp, Some(Outcome::Waiting)));
        assert_eq!(b.back_to_work("zz", "why"), None);

        let mut b = board();
        assert_eq!(
            b.stopped("a", Outcome::Interrupted, "SIGINT received".into()),
            None
        );
        assert_eq!(seen(&b, "a"), (Place::Working, Some(Outcome::Interrupted)));
        let said = b
            .stopped("b", Outcome::Failed, "3 failures".into())
            .unwrap();
        assert_eq!(said, "stopped (failed): 3 failures; no new worker starts");
        assert_eq!(b.steps["b"].place, Place::GaveUp);
        assert_eq!(
            b.end.as_ref().unwrap().0,
            Outcome::Interrupted,
            "the first end is kept"
        );
    }

    #[test]
    fn markers_left_by_a_resolution_row_by_row() {
        let mut b = board();
        assert!(b.unresolved("a", "x.txt", 3, "/w/a"));
        let fed = b.steps["a"].feedback.clone().unwrap();
        assert!(fed.contains("conflict markers still in: x.txt"), "{fed}");
        assert_eq!(seen(&b, "a"), (Place::Working, None));
        assert!(b.unresolved("a", "x.txt", 3, "/w/a"));
        assert!(
            !b.unresolved("a", "x.txt", 3, "/w/a"),
            "the third time it waits"
        );
        assert_eq!(seen(&b, "a"), (Place::GaveUp, Some(Outcome::Waiting)));
        let why = &b.end.as_ref().unwrap().1;
        assert!(
            why.contains("a was resolved 3 times") && why.contains("/w/a"),
            "{why}"
        );
        assert!(!board().unresolved("zz", "x", 3, "/w"));
    }

    #[test]
    fn the_gate_after_a_merge_row_by_row() {
        type Row = (
            &'static str,
            u32,
            bool,
            u32,
            Option<GateFailed>,
            Place,
            Option<Outcome>,
        );
        let rework = GateFailed::Rework(
            "the gate failed after merging b (1 failed): the merge is undone and the step worked again".into(),
        );
        let left = GateFailed::LeftForHuman(
            "the gate failed after merging b (1 failed): the merge is undone".into(),
        );
        let rows: Vec<Row> = vec![
            (
                "first failure: worked again",
                0,
                false,
                3,
                Some(rework),
                Place::Working,
                None,
            ),
            (
                "the last allowed: the run fails",
                2,
                false,
                3,
                Some(GateFailed::GaveUp),
                Place::GaveUp,
                Some(Outcome::Failed),
            ),
            (
                "another machine's step: left for a human",
                0,
                true,
                3,
                Some(left),
                Place::GaveUp,
                Some(Outcome::Waiting),
            ),
        ];
        for (what, undone, remote, most, then, place, end) in rows {
            let mut b = board();
            b.steps.get_mut("b").unwrap().undone = undone;
            let got = b.gate_failed(
                "b",
                (most, remote),
                ("1 failed", "FAILED test_x", "ralph/step-2-b"),
            );
            assert_eq!(got, then, "{what}");
            assert_eq!(seen(&b, "b"), (place, end), "{what}");
            assert_eq!(b.steps["b"].undone, undone + 1, "{what}");
        }
        let mut b = board();
        b.gate_failed("b", (3, false), ("1 failed", "FAILED test_x", "br"));
        assert!(
            b.steps["b"]
                .feedback
                .as_ref()
                .unwrap()
                .ends_with("What failed:\n\nFAILED test_x")
        );
        let mut b = board();
        b.gate_failed("b", (3, true), ("1 failed", "x", "ralph/step-2-b"));
        assert!(
            b.end
                .unwrap()
                .1
                .contains("fix it on its branch ralph/step-2-b")
        );
        assert_eq!(board().gate_failed("zz", (3, false), ("", "", "")), None);
    }

    #[test]
    fn a_merge_in_conflict_row_by_row() {
        let files = vec!["shared.txt".to_string()];
        let at = ("ralph/par-b", "main");
        let mut b = board();
        assert_eq!(
            b.conflicted("b", &files, OnConflict::Wait, at),
            Some(Conflicted::Wait)
        );
        assert_eq!(seen(&b, "b"), (Place::GaveUp, Some(Outcome::Waiting)));
        assert!(
            b.end
                .as_ref()
                .unwrap()
                .1
                .contains("`git merge ralph/par-b`")
        );
        assert_eq!(b.steps["b"].conflicts, files);

        let mut b = board();
        for round in 1..=CONFLICT_ROUNDS {
            match b.conflicted("b", &files, OnConflict::Resolve, at) {
                Some(Conflicted::Resolve(said)) => {
                    assert!(said.contains("merges main into its branch"), "{said}")
                }
                other => panic!("round {round}: {other:?}"),
            }
            assert_eq!(seen(&b, "b"), (Place::Resolving, None));
        }
        match b.conflicted("b", &files, OnConflict::Resolve, at) {
            Some(Conflicted::GaveUp(said)) => {
                assert!(said.ends_with("no new worker starts"), "{said}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(seen(&b, "b"), (Place::GaveUp, Some(Outcome::Waiting)));
        assert_eq!(board().conflicted("zz", &files, OnConflict::Wait, at), None);
    }

    #[test]
    fn a_resolution_git_refused_and_one_under_way() {
        let mut b = board();
        let told = b.resolution_refused("b", ("main", "the worktree of b"), "error: local changes");
        assert!(
            told.ends_with("; no new worker starts") && told.contains("error: local changes"),
            "{told}"
        );
        assert_eq!(seen(&b, "b"), (Place::GaveUp, Some(Outcome::Waiting)));

        let mut b = board();
        b.merged = vec!["c".into()];
        assert_eq!(b.resolving("b", "main", &["x.txt".into()]), None);
        let fed = b.steps["b"].feedback.clone().unwrap();
        assert!(
            fed.contains("main (with the steps merged so far: c)")
                && fed.contains("conflict: x.txt"),
            "{fed}"
        );
        assert_eq!(seen(&b, "b"), (Place::Working, None));
        assert_eq!(board().resolving("zz", "main", &[]), None);
    }

    #[test]
    fn merges_one_at_a_time_and_none_past_the_deadline() {
        let mut b = board();
        b.queue.extend(["b".to_string(), "a".to_string()]);
        assert_eq!(b.next_merge(Clock::Over), None);
        assert_eq!(b.next_merge(Clock::Force), None);
        assert_eq!(b.next_merge(Clock::Within).as_deref(), Some("b"));
        b.merged("b");
        assert_eq!(
            (b.steps["b"].place, b.merged.clone()),
            (Place::Merged, vec!["b".to_string()])
        );
        assert_eq!(b.next_merge(Clock::Within).as_deref(), Some("a"));
        assert_eq!(b.next_merge(Clock::Within), None);
    }

    #[test]
    fn the_deadline_row_by_row() {
        let max = Duration::from_secs(600);
        type Row = (&'static str, Clock, usize, Deadline);
        let rows: Vec<Row> = vec![
            ("within: on", Clock::Within, 2, Deadline::Within),
            (
                "over with workers: wait for them",
                Clock::Over,
                2,
                Deadline::Wait { stop_all: false },
            ),
            (
                "past the grace: stop them",
                Clock::Force,
                1,
                Deadline::Wait { stop_all: true },
            ),
            (
                "none runs: the end",
                Clock::Over,
                0,
                Deadline::End(
                    Outcome::TimeLimit,
                    "the run has reached its --max-time (10m)".into(),
                ),
            ),
        ];
        for (what, clock, running, then) in rows {
            let mut b = board();
            assert_eq!(b.deadline(clock, max, running), then, "{what}");
            let kept = matches!(then, Deadline::Wait { .. });
            assert_eq!(
                b.end.is_some(),
                kept,
                "{what}: the end is kept while workers run"
            );
        }
        let mut b = board();
        b.stop(Outcome::Failed, "first".into());
        assert_eq!(
            b.deadline(Clock::Over, max, 0),
            Deadline::End(Outcome::Failed, "first".into())
        );
    }

    #[test]
    fn the_runs_end_when_nothing_runs_row_by_row() {
        let never = vec![("**3** c".to_string(), "blocked by bd-9".to_string())];
        type Row = (
            &'static str,
            Option<(Outcome, String)>,
            bool,
            Option<String>,
            Option<(Outcome, String)>,
        );
        let rows: Vec<Row> = vec![
            ("all merged: judged", None, false, None, None),
            (
                "an end set wins",
                Some((Outcome::Failed, "x".into())),
                true,
                None,
                Some((Outcome::Failed, "x".into())),
            ),
            (
                "ralph merge with steps open: partial",
                None,
                true,
                Some("2 still open".into()),
                Some((Outcome::Partial, "2 still open".into())),
            ),
            (
                "open steps none can start: waiting",
                None,
                true,
                None,
                Some((
                    Outcome::Waiting,
                    "no open step can start: **3** c: blocked by bd-9".into(),
                )),
            ),
        ];
        for (what, end, open, remote, then) in rows {
            let mut b = board();
            b.end = end;
            assert_eq!(b.finished(open, remote, &never), then, "{what}");
        }
        // A step paused at its end: the run ends asking about it; one
        // skipped: the run merged the rest, the step left open.
        let mut b = board();
        b.pause("a", "w1 (step a): over its budget".into());
        assert_eq!(
            b.finished(true, None, &never),
            Some((Outcome::StepBudget, "w1 (step a): over its budget".into()))
        );
        b.answered("a", Choice::Skip, ("ann", ""));
        assert_eq!(
            b.finished(true, None, &never),
            Some((
                Outcome::Skipped,
                "every other step is merged or cannot start; skipped at your answer and still open: a (their work is kept in their worktrees; the next `ralph loop` works them)".into()
            ))
        );
        assert_eq!(b.finished(false, None, &never), None, "none open: judged");
    }

    /// After a merge, row by row: push, the remote's step branch (only
    /// once pushed), the issue, the worktree; a refused push deletes no
    /// branch.
    #[test]
    fn what_follows_a_merge_row_by_row() {
        let all = MergeShip {
            push: true,
            from_remote: true,
            issue: Some("#3".into()),
        };
        let done = |pushed, branch_deleted, issue_closed| MergeDone {
            pushed,
            branch_deleted,
            issue_closed,
            worktree_removed: false,
        };
        type Row = (&'static str, MergeShip, MergeDone, Option<AfterMerge>);
        let rows: Vec<Row> = vec![
            (
                "nothing shipped: the worktree goes",
                MergeShip::default(),
                MergeDone::default(),
                Some(AfterMerge::RemoveWorktree),
            ),
            (
                "all of it: push first",
                all.clone(),
                MergeDone::default(),
                Some(AfterMerge::Push),
            ),
            (
                "pushed: the remote's step branch",
                all.clone(),
                done(Some(true), false, false),
                Some(AfterMerge::DeleteStepBranch),
            ),
            (
                "push refused: the branch stays, the issue is closed",
                all.clone(),
                done(Some(false), false, false),
                Some(AfterMerge::CloseIssue("#3".into())),
            ),
            (
                "branch deleted: the issue",
                all.clone(),
                done(Some(true), true, false),
                Some(AfterMerge::CloseIssue("#3".into())),
            ),
            (
                "not from the remote: no branch to delete",
                MergeShip {
                    from_remote: false,
                    ..all.clone()
                },
                done(Some(true), false, false),
                Some(AfterMerge::CloseIssue("#3".into())),
            ),
            (
                "issue closed: the worktree",
                all.clone(),
                done(Some(true), true, true),
                Some(AfterMerge::RemoveWorktree),
            ),
            (
                "a remote's step without --push: nothing deleted",
                MergeShip {
                    push: false,
                    ..all.clone()
                },
                MergeDone::default(),
                Some(AfterMerge::CloseIssue("#3".into())),
            ),
            (
                "all done",
                all.clone(),
                MergeDone {
                    worktree_removed: true,
                    ..done(Some(true), true, true)
                },
                None,
            ),
        ];
        for (name, ship, done, next) in rows {
            assert_eq!(after_merge(&ship, &done), next, "{name}");
        }
    }
}
