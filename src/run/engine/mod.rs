//! The loop's judgement, with no I/O: the state a run keeps, the facts the
//! shell reports at each point of the loop, and the next action. The shell
//! (`run/shell.rs`) performs the actions and reports back; everything it
//! decides goes through `step`, so every decision is a row in a test table.
//!
//! The points, in order, and what can happen at each:
//!
//! ```text
//!   Begin ─▶ round ─▶ Between ─▶ Prepare ─(on_session_start)─▶ BeforeSpawn ─▶ Spawn
//!              ▲                                                               │
//!              │                                                          SessionRan
//!              │                                                               ▼
//!              └─────────── Waited ◀── Wait ◀── SessionEnded ◀──────────── round
//!              └───────────────────────────────────┘
//! ```
//!
//! A round (`round.rs`) judges what there is to judge before the loop
//! counts: a COMPLETE file (protected paths, spec and tracker, the gate, the
//! run's reviewer), and after a session its checked boxes and its record.
//!
//! Any point may end in `Stop` with an outcome. A stop request (SIGINT,
//! SIGTERM, SIGHUP) seen at any point means no new session and `Interrupted`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::agent::stream::Limit;

pub mod board;
pub mod pause;
pub mod round;

pub use round::{Aside, Claim, GateRan, Need, ReviewOf, Round, SessionRan, Settled, Uncheck};

/// The limits of a run: all finite, all validated when options are read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub max_iterations: u32,
    pub max_cost: Option<f64>,
    pub no_progress_limit: u32,
    pub max_failures: u32,
    /// First wait after a limit without a reset time; doubles, up to 30m.
    #[serde(with = "secs")]
    pub limit_backoff: Duration,
    /// Longest total wait for usage limits in a row before the loop stops.
    #[serde(with = "secs")]
    pub max_limit_wait: Duration,
    /// Completion-gate failures in a row before the loop gives up.
    #[serde(default = "three")]
    pub max_gate_failures: u32,
    /// Agents in turn: the run's own first, then its fallbacks.
    #[serde(default = "one")]
    pub agents: usize,
    /// A usage limit that resets later than this moves the next session to
    /// the next agent that is not limited, instead of waiting.
    #[serde(with = "secs", default = "ten_minutes")]
    pub fallback_after: Duration,
    /// Sessions in a row that end with the same step open that they began
    /// with, before the loop stops for a human.
    #[serde(default = "five")]
    pub max_sessions_per_step: u32,
    /// What those sessions may cost, USD, before the loop pauses the step
    /// and asks a human.
    #[serde(default)]
    pub max_cost_per_step: Option<f64>,
    /// Tokens (input, output and cache) the run's sessions may use.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// At most this many sessions started in any 60 minutes (every run of
    /// the project counted).
    #[serde(default)]
    pub max_sessions_per_hour: Option<u32>,
    /// `[review] when = "step"`: each session that checked a box is
    /// reviewed.
    #[serde(default)]
    pub review_each_step: bool,
    /// Review rejections in a row before the loop stops for a human.
    #[serde(default = "three")]
    pub max_review_rounds: u32,
    /// `[review] when = "complete"`: COMPLETE counts once the reviewer
    /// approves.
    #[serde(default)]
    pub review_complete: bool,
    /// `[gate] when = "each"`: the gate runs after each session that
    /// changed something.
    #[serde(default)]
    pub gate_each: bool,
    /// `[gate] require_change`: a box checked with no change is unchecked.
    #[serde(default)]
    pub require_change: bool,
    /// `[gate] baseline`: the gate runs once before the first session, and
    /// what fails then does not block COMPLETE.
    #[serde(default)]
    pub baseline: bool,
    /// `--max-time`: no session starts once the run has taken this long,
    /// and the one running then ends at it.
    #[serde(default, with = "opt_secs")]
    pub max_time: Option<Duration>,
    /// `--push`: what a session committed is pushed as its round ends.
    #[serde(default)]
    pub push_each: bool,
    /// `--wait-for-answer`: a run that needs a human waits this long for
    /// an answer, then goes on with it (none by then: it stops).
    #[serde(default, with = "opt_secs")]
    pub wait_for_answer: Option<Duration>,
    /// The tracker's issues of checked steps are ralph's to close, as a
    /// COMPLETE is judged (GitHub's issues, in a run of one step at a time;
    /// a parallel run closes each on its merge).
    #[serde(default)]
    pub closes_issues: bool,
}

fn five() -> u32 {
    5
}

/// One set of limits for unit tests, so a new field is filled in one place.
#[cfg(test)]
impl Limits {
    pub(crate) fn sample() -> Limits {
        Limits {
            max_iterations: 5,
            max_cost: Some(2.0),
            no_progress_limit: 3,
            max_failures: 3,
            limit_backoff: Duration::from_secs(60),
            max_limit_wait: Duration::from_secs(3600),
            max_gate_failures: 3,
            agents: 1,
            fallback_after: Duration::from_secs(600),
            max_sessions_per_step: 5,
            max_cost_per_step: None,
            max_tokens: None,
            max_sessions_per_hour: None,
            review_each_step: false,
            max_review_rounds: 3,
            review_complete: false,
            wait_for_answer: None,
            gate_each: false,
            require_change: false,
            baseline: false,
            max_time: None,
            push_each: false,
            closes_issues: false,
        }
    }
}

fn one() -> usize {
    1
}

fn ten_minutes() -> Duration {
    Duration::from_secs(600)
}

fn three() -> u32 {
    3
}

/// Longest single backoff when Claude gives no reset time.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30 * 60);

/// What a run has counted so far; saved after every session so that
/// `ralph loop --resume` can go on from it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// Counted sessions, the running one included.
    pub iteration: u32,
    /// Every session started, limited ones too: names stream files.
    pub sessions: u32,
    pub cost_usd: f64,
    /// Failing sessions in a row.
    pub failures: u32,
    /// Sessions in a row that changed nothing.
    pub stalled: u32,
    /// Limit waits in a row, and their total.
    pub limit_waits: u32,
    pub limit_waited_s: u64,
    /// COMPLETE files set aside so far.
    pub rejected: u32,
    /// COMPLETEs in a row that the project's own checks failed.
    pub gate_failures: u32,
    /// The agent of the next session (0: the run's own; then fallbacks).
    pub agent: usize,
    /// Per agent: until when (seconds since the epoch) its usage limit holds.
    pub limited_until: Vec<u64>,
    /// The step that sessions in a row began and ended with open
    /// (`Step::key`), how many, and how each ended.
    pub step: Option<String>,
    pub step_sessions: u32,
    pub step_outcomes: Vec<String>,
    /// What those sessions cost.
    #[serde(default)]
    pub step_cost: f64,
    /// Tokens the run's work sessions used.
    #[serde(default)]
    pub tokens: u64,
    /// The gate's baseline is taken (kept in the run's records).
    #[serde(default)]
    pub baseline_taken: bool,
    /// Steps the user skipped when asked about their budget: left open,
    /// never counted as the step sessions work on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Review sessions run, and rejections (or no verdict) in a row.
    pub reviews: u32,
    pub review_rejections: u32,
    /// The round being judged: never saved (a resumed run starts a new one).
    #[serde(skip)]
    pub round: Option<Round>,
    /// Why the run waits for a human's answer, while it does.
    #[serde(skip)]
    pub asked: Option<(Outcome, String)>,
}

impl State {
    /// What it has counted, without the round under way (what is saved).
    pub fn counts(&self) -> State {
        State {
            round: None,
            ..self.clone()
        }
    }

    /// Has it counted the same as `counts` (a round's progress aside)?
    pub fn counts_as(&self, counts: &State) -> bool {
        self.counts() == *counts
    }
}

/// How a session went, as its record says (`ended`, tagged; `outcome` is
/// its text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "of")]
pub enum SessionOutcome {
    Ok,
    Failed,
    TimedOut,
    /// The loop was asked to stop while the session ran (signal name).
    Interrupted(String),
    /// A usage limit, rate limit or overload: not counted.
    Limited(Limit),
}

impl SessionOutcome {
    pub fn as_text(&self) -> String {
        match self {
            SessionOutcome::Ok => "ok".into(),
            SessionOutcome::Failed => "failed".into(),
            SessionOutcome::TimedOut => "timeout".into(),
            SessionOutcome::Interrupted(_) => "interrupted".into(),
            SessionOutcome::Limited(l) => format!("limited: {}", l.describe()),
        }
    }

    pub fn counted(&self) -> bool {
        !matches!(self, SessionOutcome::Limited(_))
    }
}

pub use crate::procs::ladder::Ending;

/// What a session's stream and exit say, reduced to what decides its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEnd {
    pub ending: Ending,
    pub interactive: bool,
    pub exit_ok: bool,
    /// A `result` event arrived, and none of them was an error.
    pub result_ok: bool,
    pub limit: Option<Limit>,
}

/// The session's outcome from how it ended. A usage limit counts only in
/// print mode, where it comes from Claude Code's own result and messages.
pub fn classify(e: &SessionEnd, stop: Option<&str>) -> SessionOutcome {
    match e.ending {
        Ending::Stopped => SessionOutcome::Interrupted(stop.unwrap_or("signal").to_string()),
        // A limit said before it was ended (an agent waiting out a limit
        // by itself, cut short) is the limit.
        Ending::TimedOut => match (&e.limit, e.interactive) {
            (Some(l), false) => SessionOutcome::Limited(l.clone()),
            _ => SessionOutcome::TimedOut,
        },
        Ending::Exited => match (&e.limit, e.interactive) {
            (Some(l), false) => SessionOutcome::Limited(l.clone()),
            // Interactive sessions have no result event: their exit decides.
            _ if e.interactive && e.exit_ok => SessionOutcome::Ok,
            _ if e.exit_ok && e.result_ok => SessionOutcome::Ok,
            _ => SessionOutcome::Failed,
        },
    }
}

/// Did the session change anything? `Unknown` when it cannot be told (git
/// failed): never counted as "no change".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Changed,
    Same,
    Unknown,
}

/// What the completion check said of a COMPLETE file, if there was one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// No COMPLETE file.
    Absent,
    /// It holds: every step done, in sync with the tracker.
    Accepted { steps: usize },
    /// It does not; the shell has set it aside with these reasons.
    Rejected { problems: usize },
    /// Protected files changed since the run began: set aside, and the run
    /// waits for a human (`waiting`: what to do).
    Protected { problems: usize, waiting: String },
    /// Spec and tracker agree, but a command of the project's own gate
    /// failed (`what`: the command and how); the shell has set it aside.
    GateFailed { what: String },
    /// Spec, tracker and gate agree, but the reviewer did not approve; the
    /// shell has set it aside and handed the findings over.
    ReviewRejected,
}

/// A review session's verdict and cost, as the shell reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reviewed {
    pub verdict: crate::work::review::Verdict,
    pub cost_usd: f64,
}

/// A facts report from the shell at one point of the loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The loop starts (or goes on from a saved run).
    Begin,
    /// What COMPLETE claims (`None`: there is none).
    Claimed(Option<Claim>),
    /// COMPLETE was set aside (and WAITING written, when asked).
    SetAside,
    /// The gate ran.
    GateRan(GateRan),
    /// A review session ended with this verdict.
    Reviewed(Reviewed),
    /// A review session ended at its agent's usage limit: no verdict, and
    /// no round of the reviewer's; waited out, then asked again.
    ReviewLimited {
        limit: Limit,
        cost_usd: f64,
        now_epoch: u64,
    },
    /// The boxes were unchecked.
    Unchecked,
    /// Between sessions, once the round is judged: the sentinels, and any
    /// stop request.
    Between {
        stop: Option<String>,
        waiting: Option<String>,
        /// A worker of a parallel run (`--parallel`): its one step, when it
        /// is done (box checked, task closed).
        step_done: Option<String>,
        /// When sessions of the project started in the last hour (seconds
        /// since the epoch), for pacing; and the time now.
        recent_starts: Vec<u64>,
        now_epoch: u64,
        /// How long the run has taken so far (`--max-time`).
        elapsed: Duration,
        /// Every open step is one the user skipped: which.
        only_skipped: Option<String>,
    },
    /// The `on_session_start` hook has run (or there is none). A worker of
    /// a parallel run says what the run's workers have spent before it.
    BeforeSpawn {
        stop: Option<String>,
        shared: Option<Shared>,
        /// The user's budget for every loop on the machine, and what they
        /// spent together: read as the session would start.
        machine: Option<Machine>,
    },
    /// A session ended: how, before anything is judged.
    SessionRan(SessionRan),
    /// What it left is settled (`--commit auto`).
    /// The session's commits pushed (`None`), or why the push needs a
    /// human (`Need::Push`).
    Pushed(Option<String>),
    /// The issues of checked steps closed (each said), and the completion
    /// rule as it reads now (`Need::CloseIssues`).
    IssuesClosed(crate::work::completion::Rule),
    Settled(Settled),
    /// Its record is written: the rest of what the loop counts.
    SessionEnded(Box<Recorded>),
    /// A limit wait ended, by running out or by a stop request.
    Waited {
        stop: Option<String>,
    },
    /// The wait for a human's answer (`AwaitAnswer`) ended: answered (the
    /// WAITING gone, the answer kept for the next session), or not in time.
    Answered(bool),
    /// The gate ran before the first session (`Need::Baseline`): its
    /// baseline taken (false: it was stopped; taken again on resume).
    Baselined(bool),
    /// The answer to a step paused at its budget (WAITING gone), by whom:
    /// the step gets more (`More`: as `Answered(true)`), is skipped, or the
    /// run stops as `ralph stop` stops it.
    Chose(pause::Choice, String),
}

/// What every worker of a parallel run has spent, read (and this session
/// claimed) at once under the run's lock: the run's caps are the whole
/// run's, not each worker's.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Shared {
    /// Sessions the workers started before this one.
    pub sessions: u32,
    pub cost_usd: f64,
    /// Until when (seconds since the epoch) another worker found this
    /// worker's agent at its usage limit (0: not known to be), and now.
    pub limited_until: u64,
    pub now_epoch: u64,
}

/// The machine's budget and what every loop spent of it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Machine {
    pub budget: crate::config::user::MachineBudget,
    pub spent: crate::config::user::Spent,
}

/// What the shell reports of a session once its record is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The error to show for a failure (from the stream, or the exit).
    pub error: String,
    pub cost_usd: f64,
    /// Input, output and cache tokens: `--max-tokens` counts them.
    pub tokens: u64,
    /// What it cost is not known (no price for its model, or an agent
    /// that priced its tokens at nothing): `--max-cost` cannot hold.
    pub cost_unknown: bool,
    pub waiting: Option<String>,
    /// Interactive: claude exited, and not because the Stop hook ended it.
    pub quit_by_user: bool,
    /// Seconds since the epoch, for usage limits that say when they reset.
    pub now_epoch: u64,
    /// The first open step (`Step::key`) when the session began, and when it
    /// ended.
    pub step_before: Option<String>,
    pub step_after: Option<String>,
}

/// A finished session, as the loop counts it: what the shell reported and
/// what its round judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub outcome: SessionOutcome,
    /// The error to show for a failure (from the stream, or the exit).
    pub error: String,
    pub cost_usd: f64,
    pub tokens: u64,
    /// What it cost is not known: `--max-cost` cannot hold.
    pub cost_unknown: bool,
    pub progress: Progress,
    pub gate: Completion,
    pub waiting: Option<String>,
    /// Interactive: claude exited, and not because the Stop hook ended it.
    pub quit_by_user: bool,
    /// Seconds since the epoch, for usage limits that say when they reset.
    pub now_epoch: u64,
    /// The first open step (`Step::key`) when the session began, and when it
    /// ended.
    pub step_before: Option<String>,
    pub step_after: Option<String>,
    /// The reviews after the session (its steps, then COMPLETE's).
    pub reviews: Vec<Reviewed>,
}

/// How a run ended: the loop's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Complete,
    Failed,
    Waiting,
    IterationLimit,
    CostLimit,
    /// Usage limits kept the loop waiting longer than --max-limit-wait.
    LimitWait,
    NoProgress,
    /// One step stayed open over `--max-sessions-per-step` sessions in a
    /// row: WAITING is written, naming it.
    Stuck,
    /// The reviewer rejected the work `max_rounds` times in a row: WAITING
    /// is written with its findings.
    ReviewRejected,
    Interrupted,
    /// The loop was killed (SIGKILL, OOM) and left no summary; written by the
    /// loop that took over its lock.
    EndedAbnormally,
    /// A worker of a parallel run: its one step is done, for the run's
    /// merge queue to take.
    StepDone,
    /// The run took `--max-time`.
    TimeLimit,
    /// `ralph merge`: every finished step is merged; others are still open,
    /// for the next workers.
    Partial,
    /// Every loop on the machine together spent the user's budget
    /// (`[budget]` of `~/.config/ralph/config.toml`).
    MachineBudget,
    /// A step's unfinished sessions cost more than `--max-cost-per-step`:
    /// paused, its work kept, WAITING asks whether to go on.
    StepBudget,
    /// The sessions used `--max-tokens`.
    TokenLimit,
    /// Every open step is one the user skipped when asked about its budget.
    Skipped,
}

/// Everything said of one way a run ends, in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The loop's exit status.
    pub code: u8,
    /// How it is said (`complete`, `stuck on a step`).
    pub text: &'static str,
    /// The lifecycle hook it fires.
    pub hook: Option<EndHook>,
    /// Whether the loop writes WAITING for it (a session did not).
    pub writes_waiting: bool,
    /// Whether `ralph loop --resume` may go on from it.
    pub resumable: bool,
    /// What the notice says to do; `None`: no notice (you stopped it).
    pub todo: Option<&'static str>,
    /// The last line the loop prints, if any.
    pub hint: Option<&'static str>,
}

const HUMAN_TODO: &str =
    "see why with `ralph status`, act, then `ralph resume` and `ralph loop --resume`";
const HUMAN_HINT: &str =
    "Run `ralph resume` once a human has acted, then `ralph loop --resume` to go on with this run.";
const RESUME_HINT: &str = "`ralph loop --resume` goes on with this run.";
const FAILED_TODO: &str = "see what failed with `ralph status` and `ralph logs`";
const LIMIT_TODO: &str =
    "see `ralph status`; go on with a higher limit: `ralph loop --resume` with it";

/// One row an outcome: (outcome, code, text, hook, writes WAITING,
/// resumable, the notice's to-do, the last line).
const FACTS: [(Outcome, Facts); 18] = {
    const fn f(
        code: u8,
        text: &'static str,
        hook: Option<EndHook>,
        (writes_waiting, resumable): (bool, bool),
        todo: Option<&'static str>,
        hint: Option<&'static str>,
    ) -> Facts {
        Facts {
            code,
            text,
            hook,
            writes_waiting,
            resumable,
            todo,
            hint,
        }
    }
    use EndHook as H;
    [
        (
            Outcome::Complete,
            f(
                0,
                "complete",
                Some(H::Complete),
                (false, false),
                Some(
                    "review the work (`ralph status`); merge a worktree's branch with `ralph worktree merge`",
                ),
                None,
            ),
        ),
        (
            Outcome::Failed,
            f(1, "failed", None, (false, false), Some(FAILED_TODO), None),
        ),
        (
            Outcome::Waiting,
            f(
                3,
                "waiting for a human",
                Some(H::Waiting),
                (false, true),
                Some(HUMAN_TODO),
                Some(HUMAN_HINT),
            ),
        ),
        (
            Outcome::IterationLimit,
            f(
                4,
                "iteration limit reached",
                Some(H::Limit),
                (false, true),
                Some(LIMIT_TODO),
                Some("`ralph loop --resume --max-iterations <higher>` goes on with this run."),
            ),
        ),
        (
            Outcome::TokenLimit,
            f(
                4,
                "token limit reached",
                Some(H::Limit),
                (false, true),
                Some(LIMIT_TODO),
                Some("`ralph loop --resume --max-tokens <higher>` goes on with this run."),
            ),
        ),
        (
            Outcome::CostLimit,
            f(
                4,
                "cost limit reached",
                Some(H::Limit),
                (false, true),
                Some(LIMIT_TODO),
                Some("`ralph loop --resume --max-cost <higher>` goes on with this run."),
            ),
        ),
        (
            Outcome::MachineBudget,
            f(
                4,
                "the machine's budget is spent",
                Some(H::Limit),
                (false, true),
                Some(
                    "see `ralph budget --spent`; go on once the budget allows: `ralph loop --resume`",
                ),
                Some(
                    "`ralph loop --resume` goes on with this run once the machine's budget allows (`ralph budget --spent`).",
                ),
            ),
        ),
        (
            Outcome::LimitWait,
            f(
                4,
                "usage limit wait too long",
                Some(H::Limit),
                (false, true),
                Some(LIMIT_TODO),
                Some(RESUME_HINT),
            ),
        ),
        (
            Outcome::NoProgress,
            f(
                5,
                "no progress",
                Some(H::Waiting),
                (true, true),
                Some(HUMAN_TODO),
                Some(HUMAN_HINT),
            ),
        ),
        (
            Outcome::StepBudget,
            f(
                3,
                "a step is over its budget",
                Some(H::Waiting),
                (true, true),
                Some(HUMAN_TODO),
                Some(
                    "Answer WAITING's question (`ralph answer --option <n>`, or a hint in words that gives the step as much again), then `ralph loop --resume`.",
                ),
            ),
        ),
        (
            Outcome::Stuck,
            f(
                3,
                "stuck on a step",
                Some(H::Waiting),
                (true, true),
                Some(HUMAN_TODO),
                Some(HUMAN_HINT),
            ),
        ),
        (
            Outcome::ReviewRejected,
            f(
                3,
                "rejected by the reviewer",
                Some(H::Waiting),
                (true, true),
                Some(HUMAN_TODO),
                Some(HUMAN_HINT),
            ),
        ),
        (
            Outcome::Interrupted,
            f(
                130,
                "interrupted",
                None,
                (false, true),
                None,
                Some(RESUME_HINT),
            ),
        ),
        (
            Outcome::EndedAbnormally,
            f(
                1,
                "ended abnormally",
                None,
                (false, true),
                Some(FAILED_TODO),
                Some(RESUME_HINT),
            ),
        ),
        // A worker's end is its run's to tell: no hook, no notice.
        (
            Outcome::StepDone,
            f(0, "step done", None, (false, false), None, None),
        ),
        (
            Outcome::TimeLimit,
            f(
                4,
                "time limit reached",
                Some(H::Limit),
                (false, true),
                Some(LIMIT_TODO),
                Some("`ralph loop --resume --max-time <higher>` goes on with this run."),
            ),
        ),
        // What is merged is shipped; the rest is the next workers'.
        (
            Outcome::Partial,
            f(0, "merged so far", None, (false, false), None, None),
        ),
        // What you chose: the rest is done; no notice, no hook.
        (
            Outcome::Skipped,
            f(
                0,
                "done but for the steps you skipped",
                None,
                (false, false),
                None,
                None,
            ),
        ),
    ]
};

impl Outcome {
    /// Its facts (every outcome has its row).
    pub fn facts(self) -> &'static Facts {
        &FACTS
            .iter()
            .find(|(o, _)| *o == self)
            .expect("every outcome has its row")
            .1
    }

    pub fn code(self) -> u8 {
        self.facts().code
    }

    pub fn text(self) -> &'static str {
        self.facts().text
    }

    /// The lifecycle hook a run's end fires (`[hooks] on_complete`,
    /// `on_waiting`, `on_limit`), by its event name.
    pub fn hook(self) -> Option<EndHook> {
        self.facts().hook
    }

    /// How the run's end is told (`[notify]`): its event and what to do.
    /// `None` for a run the user stopped.
    pub fn notice(self) -> Option<(crate::notify::Event, &'static str)> {
        use crate::notify::Event;
        let event = match self.hook() {
            Some(EndHook::Complete) => Event::Complete,
            Some(EndHook::Waiting) => Event::Waiting,
            Some(EndHook::Limit) => Event::Stopped,
            None => Event::Failed,
        };
        self.facts().todo.map(|t| (event, t))
    }

    /// Does the run end by asking for a human? No progress does: the loop
    /// writes WAITING with the reason, as a session would.
    pub fn writes_waiting(self) -> bool {
        self.facts().writes_waiting
    }

    /// May `ralph loop --resume` go on from a run that ended so? Only from
    /// one stopped before an end of its own: interrupted, killed, stopped
    /// for a human, or at a limit (which the resume raises).
    pub fn resumable(self) -> bool {
        self.facts().resumable
    }

    /// The last line the loop prints for it: how to go on, where it can.
    pub fn hint(self) -> Option<&'static str> {
        self.facts().hint
    }

    /// The run stopped for a human (WAITING): what an answer can resolve.
    pub fn needs_a_human(self) -> bool {
        self.facts().hook == Some(EndHook::Waiting)
    }
}

/// A run that is resumed after it ended so: a human has looked at the step
/// it was stuck on, or at the reviewer's findings, so that count starts
/// again (the step itself stays known, so the next stall counts anew).
pub fn resume(s: &mut State, ended: Option<Outcome>) {
    // A skip holds for the stretch of the run it was answered in: the
    // saved state is where a session can write, and a skip it planted
    // there must not hold (yours is asked again if the step pauses again).
    s.skipped.clear();
    match ended {
        Some(Outcome::Stuck) => {
            s.step_sessions = 0;
            s.step_outcomes.clear();
        }
        // The step gets as much again.
        Some(Outcome::StepBudget) => s.step_cost = 0.0,
        Some(Outcome::ReviewRejected) => s.review_rejections = 0,
        _ => {}
    }
}

/// The step the last sessions worked on without finishing it, skipped at
/// the user's answer: left open, never again the step sessions are counted
/// on; the next is counted anew.
pub fn skip(s: &mut State) {
    if let Some(step) = s.step.take()
        && !s.skipped.contains(&step)
    {
        s.skipped.push(step);
    }
    s.step_sessions = 0;
    s.step_outcomes.clear();
    s.step_cost = 0.0;
}

/// What a loop does first, by the sentinels it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// COMPLETE is there and holds, with no gate to run: nothing to do.
    AlreadyComplete,
    /// WAITING is there: a human is needed first.
    Waiting,
    /// Run; `judge_complete`: a COMPLETE that is there is judged first (and
    /// set aside if it does not hold).
    Run { judge_complete: bool },
}

/// `complete`: whether a COMPLETE is there, and if so whether it holds
/// without a gate to run (spec and tracker agree, no `[gate]`).
pub fn start(complete: Option<bool>, waiting: bool) -> Start {
    match (complete, waiting) {
        (Some(true), _) => Start::AlreadyComplete,
        (_, true) => Start::Waiting,
        (c, false) => Start::Run {
            judge_complete: c.is_some(),
        },
    }
}

/// After a session: is COMPLETE judged now? Not after a stop request (the
/// loop is ending; the next run judges it).
pub fn judge_after(outcome: &SessionOutcome) -> bool {
    !matches!(outcome, SessionOutcome::Interrupted(_))
}

/// After a session: does the gate run for `when = "each"`? Only after a
/// session that changed something, when COMPLETE did not already run it, and
/// not after a stop request.
pub fn gate_each(
    when_each: bool,
    completion: &Completion,
    progress: Progress,
    outcome: &SessionOutcome,
) -> bool {
    when_each
        && *completion == Completion::Absent
        && progress == Progress::Changed
        && judge_after(outcome)
}

/// After a session: are the steps it checked reviewed now (`[review] when =
/// "step"`)? Only when it checked one, and not after a stop request or a
/// usage limit (its work is judged with the next session's).
pub fn review_steps(each_step: bool, checked: bool, outcome: &SessionOutcome) -> bool {
    each_step
        && checked
        && !matches!(
            outcome,
            SessionOutcome::Interrupted(_) | SessionOutcome::Limited(_)
        )
}

/// Did the user quit an interactive session (which stops the loop)? It
/// ended by itself, and the Stop hook did not end it.
pub fn quit_by_user(interactive: bool, ending: Ending, hook_ended_it: bool) -> bool {
    interactive && ending == Ending::Exited && !hook_ended_it
}

/// The hooks a run's end can fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndHook {
    Complete,
    Waiting,
    Limit,
}

impl EndHook {
    /// Its name in `RALPH_EVENT`.
    pub fn event(self) -> &'static str {
        match self {
            EndHook::Complete => "complete",
            EndHook::Waiting => "waiting",
            EndHook::Limit => "limit",
        }
    }
}

/// The next thing the shell does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Run the `on_session_start` hook, then report `BeforeSpawn`.
    Prepare {
        iteration: u32,
    },
    /// Start session number `session`, counted as `iteration`, on agent
    /// `agent` (0: the run's own; then its fallbacks).
    Spawn {
        iteration: u32,
        session: u32,
        agent: usize,
    },
    /// The agent in use is limited for longer than `--fallback-after`: say
    /// why, then report `Waited` (no wait) and go on with agent `to`.
    Fallback {
        from: usize,
        to: usize,
        why: String,
    },
    /// Wait this long (a usage limit), then report `Waited`.
    Wait {
        wait: Duration,
        why: String,
    },
    /// Wait this long for the pace (`--max-sessions-per-hour`), then report
    /// `Waited`. Not a usage limit: no hook, not counted as one.
    Pause {
        wait: Duration,
        why: String,
    },
    /// What a round needs next, reported by the event it names.
    Round(Need),
    /// Run review session number `session` (a round's), then report
    /// `Reviewed`.
    Review {
        of: ReviewOf,
        session: u32,
    },
    /// The run needs a human (`outcome`, `reason`) and
    /// `--wait-for-answer`: wait up to `within` for an answer, with no
    /// session running, then report `Answered`.
    AwaitAnswer {
        outcome: Outcome,
        reason: String,
        within: Duration,
    },
    Stop {
        outcome: Outcome,
        reason: String,
    },
}

fn stop(outcome: Outcome, reason: impl Into<String>) -> Action {
    Action::Stop {
        outcome,
        reason: reason.into(),
    }
}

/// How long until one more session keeps within `per_hour` sessions in
/// any 60 minutes; `None` when it does now.
fn pace(per_hour: Option<u32>, mut starts: Vec<u64>, now: u64) -> Option<Duration> {
    let n = per_hour? as usize;
    starts.retain(|&t| t + 3600 > now);
    if starts.len() < n {
        return None;
    }
    starts.sort_unstable();
    // The session that must leave the window for one more to fit.
    let t = starts[starts.len() - n];
    Some(Duration::from_secs((t + 3600).saturating_sub(now).max(1)))
}

/// Between sessions: done, a gate failure, WAITING, the iteration limit,
/// the pace, or the next session.
fn between(
    s: &mut State,
    limits: &Limits,
    gate: Completion,
    (waiting, step_done): (Option<String>, Option<Result<String, String>>),
    (recent_starts, now_epoch, elapsed): (Vec<u64>, u64, Duration),
    reviews: &[Reviewed],
) -> Action {
    // Counted first (its cost), said after what became of COMPLETE.
    let review_stop = count_reviews(s, limits, reviews);
    let waiting = asks_a_human(&gate).or(waiting);
    if let Completion::Accepted { steps } = gate {
        return stop(Outcome::Complete, all_done(steps));
    }
    if let Some(a) = judge_gate(s, limits, gate).or(review_stop) {
        return a;
    }
    match step_done {
        Some(Ok(done)) => return stop(Outcome::StepDone, format!("{done} is done")),
        // Nothing left but what the user chose to leave open.
        Some(Err(skipped)) => {
            return stop(
                Outcome::Skipped,
                format!(
                    "every open step is one you skipped: {skipped} (left open, their work kept: the next `ralph loop` works them)"
                ),
            );
        }
        None => {}
    }
    if let Some(w) = waiting {
        return stop(Outcome::Waiting, w);
    }
    // A review costs too: it may be what reaches the cap; and a run
    // resumed at its cap stops before it spends more.
    if let Some(a) = over_cost(s, limits) {
        return a;
    }
    if s.iteration >= limits.max_iterations {
        return stop(
            Outcome::IterationLimit,
            format!(
                "{} run (--max-iterations)",
                crate::output::counted(limits.max_iterations, "session", "sessions")
            ),
        );
    }
    if let Some(max) = limits.max_time.filter(|m| elapsed >= *m) {
        return stop(
            Outcome::TimeLimit,
            format!(
                "the run has taken {} (--max-time {})",
                crate::timefmt::human_duration(elapsed),
                crate::timefmt::human_duration(max)
            ),
        );
    }
    if let Some(wait) = pace(limits.max_sessions_per_hour, recent_starts, now_epoch) {
        return Action::Pause {
            wait,
            why: format!(
                "{} sessions started in the last hour (--max-sessions-per-hour)",
                limits.max_sessions_per_hour.unwrap_or(0)
            ),
        };
    }
    Action::Prepare {
        iteration: s.iteration + 1,
    }
}

/// The one decision function: state plus what just happened → what next.
pub fn step(s: &mut State, limits: &Limits, event: Event) -> Action {
    let answered = matches!(event, Event::Answered(_));
    match decide(s, limits, event) {
        // A run that needs a human waits for an answer where it may, once
        // for each time it is asked.
        Action::Stop { outcome, reason } if !answered && outcome.needs_a_human() => {
            match limits.wait_for_answer {
                Some(within) => {
                    s.round = None;
                    s.asked = Some((outcome, reason.clone()));
                    Action::AwaitAnswer {
                        outcome,
                        reason,
                        within,
                    }
                }
                None => Action::Stop { outcome, reason },
            }
        }
        a => a,
    }
}

fn decide(s: &mut State, limits: &Limits, event: Event) -> Action {
    match event {
        Event::Begin => new_round(s, limits, None),
        Event::Claimed(_)
        | Event::SetAside
        | Event::GateRan(_)
        | Event::Reviewed(_)
        | Event::Unchecked
        | Event::Pushed(_)
        | Event::IssuesClosed(_)
        | Event::Settled(_) => {
            answer(s.round.get_or_insert_default(), limits, event);
            next_in_round(s, limits)
        }
        Event::SessionRan(ran) => new_round(s, limits, Some(ran)),
        Event::Baselined(taken) => {
            s.baseline_taken |= taken;
            answer(
                s.round.get_or_insert_default(),
                limits,
                Event::Baselined(taken),
            );
            next_in_round(s, limits)
        }
        event @ Event::Between { .. } => looked(s, limits, event),
        Event::BeforeSpawn {
            stop: Some(sig), ..
        } => stop(
            Outcome::Interrupted,
            format!("{sig} received before the session started"),
        ),
        Event::BeforeSpawn {
            stop: None,
            shared,
            machine,
        } => before_spawn(s, limits, shared, machine),
        Event::Waited { stop: Some(sig) } => {
            s.round = None;
            stop(
                Outcome::Interrupted,
                format!("{sig} received while waiting"),
            )
        }
        // A round that waited for its reviewer goes on where it was.
        Event::Waited { stop: None } if s.round.is_some() => next_in_round(s, limits),
        Event::Waited { stop: None } => new_round(s, limits, None),
        Event::ReviewLimited {
            limit,
            cost_usd,
            now_epoch,
        } => review_limited(s, limits, &limit, cost_usd, now_epoch),
        Event::SessionEnded(recorded) => session_ended(s, limits, *recorded),
        Event::Chose(pause::Choice::Stop, by) => {
            s.asked = None;
            s.round = None;
            stop(
                Outcome::Interrupted,
                format!("stopped at the answer of {by}"),
            )
        }
        Event::Chose(pause::Choice::Skip, _) => {
            s.asked = None;
            skip(s);
            new_round(s, limits, None)
        }
        Event::Chose(pause::Choice::More, _) => decide(s, limits, Event::Answered(true)),
        Event::Answered(answered) => {
            let (outcome, reason) = s
                .asked
                .take()
                .unwrap_or((Outcome::Waiting, "a human is needed".into()));
            if !answered {
                return stop(outcome, reason);
            }
            // A human has acted, as on `--resume`: what counted towards
            // this stop starts again.
            resume(s, Some(outcome));
            if outcome == Outcome::NoProgress {
                s.stalled = 0;
            }
            new_round(s, limits, None)
        }
    }
}

/// Between sessions, the round judged: a stop request, or what the round
/// and the sentinels say.
fn looked(s: &mut State, limits: &Limits, event: Event) -> Action {
    let Event::Between {
        stop: signal,
        waiting,
        step_done,
        recent_starts,
        now_epoch,
        elapsed,
        only_skipped,
    } = event
    else {
        unreachable!("only a Between is looked at")
    };
    if let Some(sig) = signal {
        s.round = None;
        return stop(Outcome::Interrupted, format!("{sig} received"));
    }
    let judged = round::judged(&s.round.take().unwrap_or_default(), limits);
    between(
        s,
        limits,
        judged.completion,
        (waiting, step_done.map(Ok).or(only_skipped.map(Err))),
        (recent_starts, now_epoch, elapsed),
        &judged.reviews,
    )
}

/// The session about to start: numbered and spawned, unless (a worker of
/// a parallel run) the whole run is at a cap or its agent at a usage limit
/// another worker met.
fn before_spawn(
    s: &mut State,
    limits: &Limits,
    shared: Option<Shared>,
    machine: Option<Machine>,
) -> Action {
    if let Some(a) = shared.and_then(|sh| over_shared(limits, sh)) {
        return a;
    }
    if let Some(why) = machine.and_then(|m| m.budget.over(&m.spent)) {
        return stop(Outcome::MachineBudget, why);
    }
    s.iteration += 1;
    // Another worker met this agent's usage limit: this one waits
    // (or falls back) as if its own session had, without one.
    if let Some(sh) = shared.filter(|sh| sh.limited_until > sh.now_epoch) {
        let l = Limit::Usage {
            reset_at: Some(sh.limited_until),
        };
        return after_limit(s, limits, &l, sh.now_epoch);
    }
    s.sessions += 1;
    Action::Spawn {
        iteration: s.iteration,
        session: s.sessions,
        agent: s.agent,
    }
}

/// A worker's next session would take the whole run past a cap.
fn over_shared(limits: &Limits, sh: Shared) -> Option<Action> {
    if sh.sessions >= limits.max_iterations {
        return Some(stop(
            Outcome::IterationLimit,
            format!(
                "{} run by the run's workers (--max-iterations)",
                crate::output::counted(limits.max_iterations, "session", "sessions")
            ),
        ));
    }
    let cap = limits.max_cost?;
    (sh.cost_usd >= cap).then(|| {
        stop(
            Outcome::CostLimit,
            format!(
                "the run's workers have spent {} of {} (--max-cost)",
                crate::output::usd(sh.cost_usd),
                crate::output::usd(cap)
            ),
        )
    })
}

/// A session's round is over and its record written: what the loop counts
/// of it, from both.
fn session_ended(s: &mut State, limits: &Limits, recorded: Recorded) -> Action {
    let r = s.round.take().unwrap_or_default();
    let judged = round::judged(&r, limits);
    let (ran, settled) = (r.session, r.settled);
    // A refused push needs a human before a session's own WAITING.
    let waiting = r.pushed.flatten().or(recorded.waiting);
    let report = Report {
        outcome: ran.map_or(SessionOutcome::Ok, |x| x.outcome),
        error: recorded.error,
        cost_usd: recorded.cost_usd,
        tokens: recorded.tokens,
        cost_unknown: recorded.cost_unknown,
        progress: settled.map_or(Progress::Unknown, |x| x.progress),
        gate: judged.completion,
        waiting,
        quit_by_user: recorded.quit_by_user,
        now_epoch: recorded.now_epoch,
        step_before: recorded.step_before,
        step_after: recorded.step_after,
        reviews: judged.reviews,
    };
    after_session(s, limits, report)
}

/// A new round: after a session (`ran`), or between sessions.
fn new_round(s: &mut State, limits: &Limits, ran: Option<SessionRan>) -> Action {
    s.round = Some(Round {
        baseline_due: ran.is_none() && limits.baseline && !s.baseline_taken,
        session: ran,
        ..Round::default()
    });
    next_in_round(s, limits)
}

/// The round's next need as an action; a review session is numbered as it
/// is asked for.
fn next_in_round(s: &mut State, limits: &Limits) -> Action {
    match round::plan(s.round.get_or_insert_default(), limits) {
        Need::Review(of) => {
            s.sessions += 1;
            Action::Review {
                of,
                session: s.sessions,
            }
        }
        need => Action::Round(need),
    }
}

/// An event answers what the round asked for: it fills that slot.
fn answer(r: &mut Round, rules: &Limits, event: Event) {
    let asked = round::plan(r, rules);
    match (asked, event) {
        (Need::Judge, Event::Claimed(c)) => r.claim = Some(c),
        (Need::Baseline, Event::Baselined(_)) => r.baselined = true,
        (Need::SetAside { .. }, Event::SetAside) => r.set_aside = true,
        (Need::RunGate { each: true }, Event::GateRan(g)) => r.each_gate = Some(g),
        (Need::RunGate { each: false }, Event::GateRan(g)) => r.gate = Some(g),
        (Need::Review(ReviewOf::Run), Event::Reviewed(v)) => r.run_review = Some(v),
        (Need::Review(ReviewOf::Steps { .. }), Event::Reviewed(v)) => r.step_review = Some(v),
        (Need::Uncheck(Uncheck::NoChange { .. }), Event::Unchecked) => r.no_change_unchecked = true,
        (Need::Uncheck(Uncheck::Review), Event::Unchecked) => r.review_unchecked = true,
        (Need::Settle, Event::Settled(x)) => r.settled = Some(x),
        (Need::Push, Event::Pushed(refused)) => r.pushed = Some(refused),
        (Need::CloseIssues, Event::IssuesClosed(rule)) => {
            r.issues_closed = true;
            if let Some(Some(claim)) = &mut r.claim {
                claim.rule = rule;
            }
        }
        (asked, event) => panic!("the round asked for {asked:?}, the shell answered {event:?}"),
    }
}

fn after_session(s: &mut State, limits: &Limits, r: Report) -> Action {
    s.cost_usd += r.cost_usd;
    s.tokens = s.tokens.saturating_add(r.tokens);
    // Back to the run's own agent once its limit has reset.
    if s.agent != 0 && s.limited_until.first().is_none_or(|&t| t <= r.now_epoch) {
        s.agent = 0;
    }
    if let SessionOutcome::Interrupted(sig) = &r.outcome {
        return stop(Outcome::Interrupted, format!("{sig} received"));
    }
    if r.quit_by_user {
        return stop(
            Outcome::Interrupted,
            "claude was quit before the Stop hook ended the session",
        );
    }
    let review_stop = count_reviews(s, limits, &r.reviews);
    let waiting = asks_a_human(&r.gate).or(r.waiting);
    // The last word on completion is the gate's, whatever else went wrong.
    if let Some(a) = judge_gate(s, limits, r.gate).or(review_stop) {
        return a;
    }
    if let Some(w) = waiting {
        return stop(Outcome::Waiting, w);
    }
    if let SessionOutcome::Limited(l) = &r.outcome {
        return after_limit(s, limits, l, r.now_epoch);
    }
    s.limit_waits = 0;
    s.limit_waited_s = 0;
    count_failures(s, limits, &r.outcome, &r.error)
        .or_else(|| count_stalls(s, limits, r.progress))
        .or_else(|| {
            count_stuck(
                s,
                limits,
                (&r.outcome, r.cost_usd),
                (&r.step_before, &r.step_after),
            )
        })
        .or_else(|| over_cost(s, limits))
        .or_else(|| over_tokens(s, limits))
        .or_else(|| unknown_cost(limits, r.cost_unknown))
        .unwrap_or_else(|| new_round(s, limits, None))
}

/// The stop when a session's cost is not known and `--max-cost` is set:
/// a cap that cannot be counted does not hold, and a run left overnight
/// must not spend past it unseen.
fn unknown_cost(limits: &Limits, unknown: bool) -> Option<Action> {
    let max = limits.max_cost.filter(|_| unknown)?;
    Some(stop(
        Outcome::CostLimit,
        format!(
            "the last session's cost is not known (said above), so --max-cost ${max:.2} cannot be held"
        ),
    ))
}

/// How a complete run's reason says its steps.
fn all_done(steps: usize) -> String {
    match steps {
        1 => "its one step done".to_string(),
        n => format!("all {n} steps done"),
    }
}

/// The stop at `--max-cost`, once what was spent reaches it.
fn over_cost(s: &State, limits: &Limits) -> Option<Action> {
    let max = limits.max_cost?;
    (s.cost_usd >= max).then(|| {
        stop(
            Outcome::CostLimit,
            format!("${:.2} spent of --max-cost ${max:.2}", s.cost_usd),
        )
    })
}

/// `--max-tokens`: for those on a plan, who count tokens, not dollars.
fn over_tokens(s: &State, limits: &Limits) -> Option<Action> {
    let max = limits.max_tokens?;
    (s.tokens >= max).then(|| {
        stop(
            Outcome::TokenLimit,
            format!("{} tokens used of --max-tokens {max}", s.tokens),
        )
    })
}

/// The reviews of a round, each counted; the first stop they call for.
fn count_reviews(s: &mut State, limits: &Limits, reviews: &[Reviewed]) -> Option<Action> {
    reviews
        .iter()
        .map(|r| count_review(s, limits, r))
        .fold(None, |first, a| first.or(a))
}

/// A review: its cost counted, and the stop for a human once
/// `max_review_rounds` reviews in a row did not approve (no verdict counts
/// as a rejection).
fn count_review(s: &mut State, limits: &Limits, r: &Reviewed) -> Option<Action> {
    s.cost_usd += r.cost_usd;
    s.reviews += 1;
    if r.verdict.approved() {
        s.review_rejections = 0;
        return None;
    }
    s.review_rejections += 1;
    (s.review_rejections >= limits.max_review_rounds).then(|| {
        stop(
            Outcome::ReviewRejected,
            format!(
                "{} in a row did not approve; the last findings: {}",
                crate::output::counted(s.review_rejections, "review", "reviews"),
                r.verdict.findings().join("; ")
            ),
        )
    })
}

/// A usage limit: not the session's fault and not an iteration. Wait, then
/// retry, unless the waits in a row would pass `--max-limit-wait`.
fn after_limit(s: &mut State, limits: &Limits, l: &Limit, now_epoch: u64) -> Action {
    s.iteration = s.iteration.saturating_sub(1);
    let mut wait = limit_wait(l, limits.limit_backoff, s.limit_waits, now_epoch);
    if limits.agents > 1 && wait > limits.fallback_after {
        s.limited_until.resize(limits.agents, 0);
        s.limited_until[s.agent] = now_epoch.saturating_add(wait.as_secs());
        let free = (0..limits.agents).find(|&i| s.limited_until[i] <= now_epoch);
        if let Some(to) = free {
            let from = std::mem::replace(&mut s.agent, to);
            return Action::Fallback {
                from,
                to,
                why: format!(
                    "{} for {}",
                    l.describe(),
                    crate::timefmt::human_duration(wait)
                ),
            };
        }
        // Every agent is limited: wait for the first to reset, on it.
        let (first, until) = s
            .limited_until
            .iter()
            .enumerate()
            .min_by_key(|(_, t)| **t)
            .map(|(i, t)| (i, *t))
            .expect("at least two agents");
        s.agent = first;
        wait = Duration::from_secs(until.saturating_sub(now_epoch).saturating_add(1));
    }
    wait_or_stop(s, limits, l.describe().to_string(), wait)
}

/// A review that met its agent's usage limit: its cost counted, no round
/// of the reviewer's, and the review waits as a work session would (the
/// reviewer runs on its own agent: no fallback).
fn review_limited(
    s: &mut State,
    limits: &Limits,
    l: &Limit,
    cost_usd: f64,
    now_epoch: u64,
) -> Action {
    s.cost_usd += cost_usd;
    let wait = limit_wait(l, limits.limit_backoff, s.limit_waits, now_epoch);
    let a = over_cost(s, limits).unwrap_or_else(|| {
        wait_or_stop(s, limits, format!("the reviewer's {}", l.describe()), wait)
    });
    if matches!(a, Action::Stop { .. }) {
        s.round = None;
    }
    a
}

/// Wait `wait` for a limit, unless the waits in a row would pass
/// `--max-limit-wait`.
fn wait_or_stop(s: &mut State, limits: &Limits, why: String, wait: Duration) -> Action {
    let total = s.limit_waited_s.saturating_add(wait.as_secs());
    if total > limits.max_limit_wait.as_secs() {
        return stop(
            Outcome::LimitWait,
            format!(
                "{why}; waiting {} more would pass --max-limit-wait {}",
                crate::timefmt::human_duration(wait),
                crate::timefmt::human_duration(limits.max_limit_wait)
            ),
        );
    }
    s.limit_waits += 1;
    s.limit_waited_s = total;
    Action::Wait { wait, why }
}

/// Failing sessions in a row, and the stop at `--max-failures`.
fn count_failures(
    s: &mut State,
    limits: &Limits,
    outcome: &SessionOutcome,
    error: &str,
) -> Option<Action> {
    if !matches!(outcome, SessionOutcome::Failed | SessionOutcome::TimedOut) {
        s.failures = 0;
        return None;
    }
    s.failures += 1;
    (s.failures >= limits.max_failures).then(|| {
        stop(
            Outcome::Failed,
            format!(
                "{} failing sessions in a row; last error: {error}",
                s.failures
            ),
        )
    })
}

/// Sessions in a row that began and ended with the same step open, and
/// the stop at `--max-sessions-per-step`.
fn count_stuck(
    s: &mut State,
    limits: &Limits,
    (outcome, cost): (&SessionOutcome, f64),
    steps: (&Option<String>, &Option<String>),
) -> Option<Action> {
    match steps {
        (Some(before), Some(after)) if before == after => {
            if s.step.as_ref() != Some(before) {
                s.step = Some(before.clone());
                s.step_sessions = 0;
                s.step_outcomes.clear();
                s.step_cost = 0.0;
            }
            s.step_sessions += 1;
            s.step_outcomes.push(outcome.as_text());
            s.step_cost += cost;
        }
        _ => {
            s.step = None;
            s.step_sessions = 0;
            s.step_outcomes.clear();
            s.step_cost = 0.0;
        }
    }
    let step = s.step.as_ref()?;
    if s.step_sessions >= limits.max_sessions_per_step {
        return Some(stop(
            Outcome::Stuck,
            format!(
                "step {step}: {} sessions in a row did not finish it ({}); split it, or say more in the spec",
                s.step_sessions,
                s.step_outcomes.join(", ")
            ),
        ));
    }
    let cap = limits.max_cost_per_step?;
    (s.step_cost >= cap).then(|| {
        stop(
            Outcome::StepBudget,
            format!(
                "step {step} has cost {} in {} without being finished, past its budget of {} (--max-cost-per-step); its work is kept",
                crate::output::usd(s.step_cost),
                crate::output::counted(s.step_sessions, "session", "sessions"),
                crate::output::usd(cap),
            ),
        )
    })
}

/// Sessions in a row that changed nothing, and the stop at
/// `--no-progress-limit`. What git could not tell counts neither way.
fn count_stalls(s: &mut State, limits: &Limits, progress: Progress) -> Option<Action> {
    match progress {
        Progress::Changed => s.stalled = 0,
        Progress::Same => s.stalled += 1,
        Progress::Unknown => {}
    }
    (s.stalled >= limits.no_progress_limit).then(|| {
        stop(
            Outcome::NoProgress,
            format!(
                "{} sessions in a row changed nothing (git HEAD, working tree, spec checkboxes)",
                s.stalled
            ),
        )
    })
}

/// The loop's own call for a human in what COMPLETE came to (protected
/// files changed): it comes before a session's WAITING.
fn asks_a_human(gate: &Completion) -> Option<String> {
    match gate {
        Completion::Protected { waiting, .. } => Some(waiting.clone()),
        _ => None,
    }
}

/// What a COMPLETE came to: done, or counted against the gate's limit.
fn judge_gate(s: &mut State, limits: &Limits, gate: Completion) -> Option<Action> {
    match gate {
        Completion::Absent => None,
        Completion::Accepted { steps } => {
            s.gate_failures = 0;
            Some(stop(Outcome::Complete, all_done(steps)))
        }
        Completion::Rejected { .. } | Completion::Protected { .. } => {
            s.rejected += 1;
            None
        }
        Completion::ReviewRejected => {
            s.rejected += 1;
            s.gate_failures = 0;
            None
        }
        Completion::GateFailed { what } => {
            s.rejected += 1;
            s.gate_failures += 1;
            (s.gate_failures >= limits.max_gate_failures).then(|| {
                stop(
                    Outcome::Failed,
                    format!(
                        "the completion gate failed {} in a row: {what}",
                        crate::output::counted(s.gate_failures, "time", "times")
                    ),
                )
            })
        }
    }
}

/// How long to wait after a limit: until the reset time Claude gave (plus a
/// second), else the backoff doubled for each wait in a row, up to 30m.
pub fn limit_wait(l: &Limit, base: Duration, waits_in_a_row: u32, now_epoch: u64) -> Duration {
    match l {
        Limit::Usage { reset_at: Some(t) } if *t > now_epoch => {
            Duration::from_secs(t.saturating_sub(now_epoch).saturating_add(1))
        }
        _ => base
            .saturating_mul(2u32.saturating_pow(waits_in_a_row.min(16)))
            .min(MAX_BACKOFF),
    }
}

/// How long the next session may run: its `--timeout`, but never past the
/// run's `--max-time` (at least a second, so that a session is a session).
pub fn session_timeout(
    timeout: Duration,
    max_time: Option<Duration>,
    elapsed: Duration,
) -> Duration {
    match max_time {
        Some(m) => timeout.min(m.saturating_sub(elapsed).max(Duration::from_secs(1))),
        None => timeout,
    }
}

mod opt_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs()),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(d).map(|o| o.map(Duration::from_secs))
    }
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_is_described_once_and_whatever_resumes_says_how() {
        let all = [
            Outcome::Complete,
            Outcome::Failed,
            Outcome::Waiting,
            Outcome::IterationLimit,
            Outcome::CostLimit,
            Outcome::LimitWait,
            Outcome::NoProgress,
            Outcome::Stuck,
            Outcome::ReviewRejected,
            Outcome::Interrupted,
            Outcome::EndedAbnormally,
            Outcome::StepDone,
            Outcome::TimeLimit,
            Outcome::Partial,
            Outcome::MachineBudget,
            Outcome::StepBudget,
            Outcome::TokenLimit,
            Outcome::Skipped,
        ];
        assert_eq!(FACTS.len(), all.len());
        for o in all {
            let f = o.facts();
            assert_eq!(
                FACTS.iter().filter(|(x, _)| *x == o).count(),
                1,
                "{o:?} has one row"
            );
            // What can be resumed says so at its end (review-rejected did not).
            assert_eq!(f.resumable, f.hint.is_some(), "{o:?}");
            assert!(!f.writes_waiting || f.resumable, "{o:?}");
            assert_eq!(
                f.hook == Some(EndHook::Waiting),
                matches!(f.code, 3 | 5),
                "{o:?}"
            );
        }
        assert_eq!(Outcome::ReviewRejected.hint(), Some(HUMAN_HINT));
        assert_eq!(Outcome::Interrupted.notice(), None);
        assert_eq!(
            Outcome::EndedAbnormally.notice().map(|n| n.0),
            Some(crate::notify::Event::Failed)
        );
    }

    fn limits() -> Limits {
        Limits::sample()
    }

    #[test]
    fn past_max_time_no_session_starts_and_a_session_ends_at_the_deadline() {
        let l = Limits {
            max_time: Some(Duration::from_secs(3600)),
            ..limits()
        };
        let mut s = State::default();
        let at = |elapsed: u64| TB {
            elapsed: Duration::from_secs(elapsed),
            ..between()
        };
        assert_eq!(step(&mut s, &l, at(3599)), Action::Prepare { iteration: 1 });
        let a = step(&mut s, &l, at(3600));
        assert_eq!(stopped(&a), Some(Outcome::TimeLimit), "{a:?}");
        assert_eq!(Outcome::TimeLimit.code(), 4);
        // Without --max-time, time is no limit.
        assert_eq!(
            step(&mut State::default(), &limits(), at(999_999)),
            Action::Prepare { iteration: 1 }
        );
        let m = |t, max: Option<u64>, e| {
            session_timeout(
                Duration::from_secs(t),
                max.map(Duration::from_secs),
                Duration::from_secs(e),
            )
            .as_secs()
        };
        assert_eq!(m(1800, None, 5000), 1800);
        assert_eq!(m(1800, Some(3600), 600), 1800);
        assert_eq!(m(1800, Some(3600), 3000), 600, "the deadline comes first");
        assert_eq!(m(1800, Some(3600), 4000), 1, "past it: at once");
    }

    fn between() -> TB {
        TB {
            stop: None,
            gate: Completion::Absent,
            waiting: None,
            step_done: None,
            recent_starts: Vec::new(),
            now_epoch: 1_000_000,
            elapsed: Duration::ZERO,
            only_skipped: None,
            reviews: Vec::from_iter(None),
        }
    }

    fn report(outcome: SessionOutcome) -> Report {
        Report {
            outcome,
            error: "boom".into(),
            cost_usd: 0.1,
            tokens: 100,
            cost_unknown: false,
            progress: Progress::Changed,
            gate: Completion::Absent,
            waiting: None,
            quit_by_user: false,
            now_epoch: 1_000_000,
            step_before: None,
            step_after: None,
            reviews: Vec::from_iter(None),
        }
    }

    fn ended(r: Report) -> T {
        T::Ended(r)
    }

    /// The next round, as the loop goes on.
    const NEXT: Action = Action::Round(Need::Judge);

    /// What these tests report: an event, or (past the round that judges
    /// it) a session as the loop counts it, or what the loop sees between
    /// sessions.
    enum T {
        E(Event),
        Ended(Report),
        Between(TB),
    }

    struct TB {
        stop: Option<String>,
        gate: Completion,
        waiting: Option<String>,
        step_done: Option<String>,
        recent_starts: Vec<u64>,
        now_epoch: u64,
        elapsed: Duration,
        only_skipped: Option<String>,
        reviews: Vec<Reviewed>,
    }

    impl From<Event> for T {
        fn from(e: Event) -> T {
            T::E(e)
        }
    }

    impl From<TB> for T {
        fn from(b: TB) -> T {
            T::Between(b)
        }
    }

    /// `step`, with a session's or a between's round already judged.
    fn step(s: &mut State, l: &Limits, ev: impl Into<T>) -> Action {
        match ev.into() {
            T::E(e) => super::step(s, l, e),
            T::Ended(r) => after_session(s, l, r),
            T::Between(TB {
                stop: Some(sig), ..
            }) => super::step(
                s,
                l,
                Event::Between {
                    stop: Some(sig),
                    waiting: None,
                    step_done: None,
                    recent_starts: Vec::new(),
                    now_epoch: 0,
                    elapsed: Duration::ZERO,
                    only_skipped: None,
                },
            ),
            T::Between(b) => super::between(
                s,
                l,
                b.gate,
                (b.waiting, b.step_done.map(Ok).or(b.only_skipped.map(Err))),
                (b.recent_starts, b.now_epoch, b.elapsed),
                &b.reviews,
            ),
        }
    }

    fn stopped(a: &Action) -> Option<Outcome> {
        match a {
            Action::Stop { outcome, .. } => Some(*outcome),
            _ => None,
        }
    }

    /// Run a whole loop of sessions that each report `make(i)`, returning
    /// the stop and the state.
    fn run(limits: &Limits, mut make: impl FnMut(u32) -> Report) -> (Action, State) {
        let mut s = State::default();
        let mut ev: T = between().into();
        for _ in 0..1000 {
            match step(&mut s, limits, ev) {
                Action::Prepare { .. } => {
                    ev = Event::BeforeSpawn {
                        stop: None,
                        shared: None,
                        machine: None,
                    }
                    .into()
                }
                Action::Spawn { session, .. } => ev = ended(make(session)),
                Action::Wait { .. } | Action::Fallback { .. } | Action::Pause { .. } => {
                    ev = Event::Waited { stop: None }.into()
                }
                NEXT => ev = between().into(),
                a @ Action::Stop { .. } => return (a, s),
                a => panic!("no round in these rows: {a:?}"),
            }
        }
        panic!("the loop never stopped");
    }

    /// The issues closed, the claim takes the rule read after: a COMPLETE
    /// blocked only by the issues ralph then closed is accepted.
    #[test]
    fn the_rule_read_after_closing_the_issues_decides_complete() {
        let l = Limits {
            closes_issues: true,
            ..limits()
        };
        let mut s = State::default();
        let mut go = |ev: Event| step(&mut s, &l, ev);
        assert_eq!(go(Event::Begin), Action::Round(Need::Judge));
        let claim = Claim {
            protected: Vec::new(),
            base: "abc".into(),
            rule: crate::work::completion::Rule::Blocked(vec!["#3 is open".into()]),
        };
        assert_eq!(
            go(Event::Claimed(Some(claim))),
            Action::Round(Need::CloseIssues)
        );
        let now = crate::work::completion::Rule::Holds { steps: 1 };
        assert_eq!(go(Event::IssuesClosed(now)), Action::Round(Need::Look));
        let between = go(Event::Between {
            stop: None,
            waiting: None,
            step_done: None,
            recent_starts: Vec::new(),
            now_epoch: 1_000_000,
            elapsed: Duration::ZERO,
            only_skipped: None,
        });
        match between {
            Action::Stop { outcome, .. } => assert_eq!(outcome, Outcome::Complete),
            a => panic!("{a:?}"),
        }
    }

    /// A review at its agent's usage limit: waited out as a work session's
    /// limit is, then asked again in the same round (a new session
    /// number); no round of the reviewer's is spent, its cost counts; and
    /// waits past `--max-limit-wait` stop the run as for work sessions.
    #[test]
    fn a_reviewer_at_its_usage_limit_is_waited_out_and_spends_no_round() {
        let l = Limits {
            review_complete: true,
            limit_backoff: Duration::from_secs(60),
            max_limit_wait: Duration::from_secs(150),
            ..limits()
        };
        let mut s = State::default();
        let mut go = |ev: Event| step(&mut s, &l, ev);
        go(Event::Begin);
        go(Event::Claimed(None));
        go(Event::Between {
            stop: None,
            waiting: None,
            step_done: None,
            recent_starts: Vec::new(),
            now_epoch: 1_000_000,
            elapsed: Duration::ZERO,
            only_skipped: None,
        });
        go(Event::BeforeSpawn {
            stop: None,
            shared: None,
            machine: None,
        });
        go(Event::SessionRan(SessionRan {
            session: 1,
            outcome: SessionOutcome::Ok,
            no_change: false,
        }));
        go(Event::Settled(Settled {
            progress: Progress::Changed,
            checked: vec![],
            committed: true,
        }));
        let claim = Claim {
            protected: Vec::new(),
            base: "abc".into(),
            rule: crate::work::completion::Rule::Holds { steps: 1 },
        };
        let review = |session| Action::Review {
            of: ReviewOf::Run,
            session,
        };
        assert_eq!(go(Event::Claimed(Some(claim))), review(2));
        let limited = || Event::ReviewLimited {
            limit: Limit::RateLimit,
            cost_usd: 0.01,
            now_epoch: 1_000_100,
        };
        assert_eq!(
            go(limited()),
            Action::Wait {
                wait: Duration::from_secs(60),
                why: "the reviewer's rate limited".into()
            }
        );
        assert_eq!(go(Event::Waited { stop: None }), review(3));
        let approved = Reviewed {
            verdict: crate::work::review::Verdict::Approved,
            cost_usd: 0.25,
        };
        assert_eq!(go(Event::Reviewed(approved)), Action::Round(Need::Record));
        assert_eq!(
            (s.review_rejections, s.reviews),
            (0, 0),
            "counted at the record"
        );
        assert!((s.cost_usd - 0.01).abs() < 1e-9);
        // Limited again and again: 60 s, then 120 s would pass 150 s.
        let mut s = State {
            round: Some(Round::default()),
            ..State::default()
        };
        assert!(matches!(step(&mut s, &l, limited()), Action::Wait { .. }));
        let a = step(&mut s, &l, limited());
        assert_eq!(stopped(&a), Some(Outcome::LimitWait), "{a:?}");
        assert!(format!("{a:?}").contains("the reviewer's rate limited; waiting 2m"));
        assert_eq!((s.review_rejections, s.round.is_none()), (0, true));
    }

    /// A whole loop through `step` alone: a round between sessions, a
    /// session, its round (settled, COMPLETE claimed, the run reviewed),
    /// its record, and the stop; the review is numbered as it is asked for
    /// and both costs are counted once.
    #[test]
    fn rounds_run_through_step_and_the_loop_counts_once() {
        let l = Limits {
            review_complete: true,
            ..limits()
        };
        let mut s = State::default();
        let mut go = |ev: Event| step(&mut s, &l, ev);
        assert_eq!(go(Event::Begin), NEXT);
        assert_eq!(go(Event::Claimed(None)), Action::Round(Need::Look));
        let between = Event::Between {
            stop: None,
            waiting: None,
            step_done: None,
            recent_starts: Vec::new(),
            now_epoch: 1_000_000,
            elapsed: Duration::ZERO,
            only_skipped: None,
        };
        assert_eq!(go(between), Action::Prepare { iteration: 1 });
        go(Event::BeforeSpawn {
            stop: None,
            shared: None,
            machine: None,
        });
        let ran = SessionRan {
            session: 1,
            outcome: SessionOutcome::Ok,
            no_change: false,
        };
        assert_eq!(go(Event::SessionRan(ran)), Action::Round(Need::Settle));
        let settled = Settled {
            progress: Progress::Changed,
            checked: vec!["br-2".into()],
            committed: true,
        };
        assert_eq!(go(Event::Settled(settled)), NEXT);
        let claim = Claim {
            protected: Vec::new(),
            base: "abc".into(),
            rule: crate::work::completion::Rule::Holds { steps: 2 },
        };
        assert_eq!(
            go(Event::Claimed(Some(claim))),
            Action::Review {
                of: ReviewOf::Run,
                session: 2
            }
        );
        let approved = Reviewed {
            verdict: crate::work::review::Verdict::Approved,
            cost_usd: 0.25,
        };
        assert_eq!(go(Event::Reviewed(approved)), Action::Round(Need::Record));
        let recorded = Recorded {
            error: String::new(),
            cost_usd: 0.5,
            tokens: 0,
            cost_unknown: false,
            waiting: None,
            quit_by_user: false,
            now_epoch: 1_000_100,
            step_before: Some("br-2".into()),
            step_after: None,
        };
        let a = go(Event::SessionEnded(Box::new(recorded)));
        assert_eq!(stopped(&a), Some(Outcome::Complete));
        assert_eq!((s.iteration, s.sessions, s.reviews), (1, 2, 1));
        assert!((s.cost_usd - 0.75).abs() < 1e-9, "{}", s.cost_usd);
        assert_eq!(s.round, None, "the round ends with its record");
    }

    #[test]
    #[should_panic(expected = "the round asked for Judge")]
    fn an_answer_to_what_was_not_asked_is_a_bug_not_a_loop() {
        let mut s = State::default();
        step(&mut s, &limits(), Event::Begin);
        step(&mut s, &limits(), Event::SetAside);
    }

    #[test]
    fn a_session_is_prepared_then_spawned_with_its_numbers() {
        let mut s = State::default();
        assert_eq!(
            step(&mut s, &limits(), between()),
            Action::Prepare { iteration: 1 }
        );
        assert_eq!(s, State::default(), "preparing counts nothing");
        assert_eq!(
            step(
                &mut s,
                &limits(),
                Event::BeforeSpawn {
                    stop: None,
                    shared: None,
                    machine: None
                }
            ),
            Action::Spawn {
                iteration: 1,
                session: 1,
                agent: 0
            }
        );
    }

    #[test]
    fn a_refused_push_after_a_session_stops_the_loop_for_a_human() {
        let recorded = |waiting: Option<&str>| Recorded {
            error: String::new(),
            cost_usd: 0.0,
            tokens: 0,
            cost_unknown: false,
            waiting: waiting.map(String::from),
            quit_by_user: false,
            now_epoch: 1_000_000,
            step_before: None,
            step_after: None,
        };
        let round = |pushed: Option<Option<String>>| Round {
            session: Some(SessionRan {
                session: 1,
                outcome: SessionOutcome::Ok,
                no_change: false,
            }),
            pushed,
            ..Round::default()
        };
        type Row = (
            &'static str,
            Option<Option<String>>,
            Option<&'static str>,
            Action,
        );
        let refused = || Some(Some("--push: the remote refused".to_string()));
        let rows: Vec<Row> = vec![
            (
                "refused: the loop waits, saying why",
                refused(),
                None,
                stop(Outcome::Waiting, "--push: the remote refused"),
            ),
            (
                "refused and a session's WAITING: the push's word first",
                refused(),
                Some("a password"),
                stop(Outcome::Waiting, "--push: the remote refused"),
            ),
            ("pushed: on with the run", Some(None), None, NEXT),
            (
                "pushed and a session's WAITING: it waits for that",
                Some(None),
                Some("a password"),
                stop(Outcome::Waiting, "a password"),
            ),
        ];
        for (what, pushed, waiting, then) in rows {
            let mut st = State {
                round: Some(round(pushed)),
                ..State::default()
            };
            assert_eq!(
                session_ended(&mut st, &limits(), recorded(waiting)),
                then,
                "{what}"
            );
        }
    }

    /// `--wait-for-answer`: a stop for a human waits for an answer instead,
    /// once; answered, the run goes on with a new round and what counted
    /// towards the stop starts again; not answered in time, it stops as
    /// it would have; a stop that needs no human is never held.
    #[test]
    fn a_run_that_needs_a_human_waits_for_an_answer_where_it_may() {
        let waiting = |w: Option<&str>| Event::Between {
            stop: None,
            waiting: w.map(String::from),
            step_done: None,
            recent_starts: Vec::new(),
            now_epoch: 1_000_000,
            elapsed: Duration::ZERO,
            only_skipped: None,
        };
        let within = Duration::from_secs(600);
        let asking = Limits {
            wait_for_answer: Some(within),
            ..limits()
        };
        // Without it: the stop, as ever.
        let mut st = State::default();
        assert_eq!(
            step(&mut st, &limits(), waiting(Some("which db?"))),
            stop(Outcome::Waiting, "which db?")
        );
        // With it: a wait, then an answer and a new round.
        let mut st = State {
            step_sessions: 4,
            step_outcomes: vec!["ok".into()],
            ..State::default()
        };
        assert_eq!(
            step(&mut st, &asking, waiting(Some("which db?"))),
            Action::AwaitAnswer {
                outcome: Outcome::Waiting,
                reason: "which db?".into(),
                within
            }
        );
        assert_eq!(step(&mut st, &asking, Event::Answered(true)), NEXT);
        assert_eq!(st.asked, None);
        // Not answered in time: the stop it held, not another wait.
        step(&mut st, &asking, waiting(Some("which db?")));
        assert_eq!(
            step(&mut st, &asking, Event::Answered(false)),
            stop(Outcome::Waiting, "which db?")
        );
        // Stuck, answered: its count starts again, as on --resume.
        let mut st = State {
            step_sessions: 5,
            step_outcomes: vec!["ok".into(); 5],
            stalled: 2,
            ..State::default()
        };
        st.asked = Some((Outcome::Stuck, "stuck".into()));
        assert_eq!(step(&mut st, &asking, Event::Answered(true)), NEXT);
        assert_eq!((st.step_sessions, st.step_outcomes.len()), (0, 0));
        assert_eq!(st.stalled, 2, "only what counted towards this stop");
        st.asked = Some((Outcome::NoProgress, "no progress".into()));
        step(&mut st, &asking, Event::Answered(true));
        assert_eq!(st.stalled, 0);
        // A stop that needs no human is not held.
        let mut st = State {
            iteration: 5,
            ..State::default()
        };
        assert!(matches!(
            step(&mut st, &asking, waiting(None)),
            Action::Stop {
                outcome: Outcome::IterationLimit,
                ..
            }
        ));
        for o in [
            Outcome::Waiting,
            Outcome::Stuck,
            Outcome::ReviewRejected,
            Outcome::NoProgress,
        ] {
            assert!(o.needs_a_human(), "{o:?}");
        }
        for o in [
            Outcome::Complete,
            Outcome::Failed,
            Outcome::IterationLimit,
            Outcome::Interrupted,
        ] {
            assert!(!o.needs_a_human(), "{o:?}");
        }
    }

    #[test]
    fn changed_protected_files_stop_the_loop_for_a_human_with_its_own_reason() {
        let protected = || Completion::Protected {
            problems: 1,
            waiting: "protected files changed: revert them".into(),
        };
        let r = Report {
            gate: protected(),
            waiting: Some("need a password".into()),
            ..report(SessionOutcome::Ok)
        };
        let mut st = State::default();
        assert_eq!(
            after_session(&mut st, &limits(), r),
            stop(Outcome::Waiting, "protected files changed: revert them")
        );
        assert_eq!(st.rejected, 1, "its COMPLETE counts as set aside");
        let mut st = State::default();
        assert_eq!(
            super::between(
                &mut st,
                &limits(),
                protected(),
                (None, None),
                (Vec::new(), 0, Duration::ZERO),
                &[]
            ),
            stop(Outcome::Waiting, "protected files changed: revert them")
        );
    }

    #[test]
    fn every_outcome_row() {
        let l = limits();
        type Row = (&'static str, Box<dyn FnMut(u32) -> Report>, Outcome, u32);
        let rows: Vec<Row> = vec![
            (
                "complete on the 2nd session",
                Box::new(|i| Report {
                    gate: if i == 2 {
                        Completion::Accepted { steps: 3 }
                    } else {
                        Completion::Absent
                    },
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::Complete,
                2,
            ),
            (
                "complete on the last allowed session",
                Box::new(|i| Report {
                    gate: if i == 5 {
                        Completion::Accepted { steps: 3 }
                    } else {
                        Completion::Absent
                    },
                    cost_usd: 0.0,
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::Complete,
                5,
            ),
            (
                "complete even when the session timed out",
                Box::new(|_| Report {
                    gate: Completion::Accepted { steps: 1 },
                    ..report(SessionOutcome::TimedOut)
                }),
                Outcome::Complete,
                1,
            ),
            (
                "waiting",
                Box::new(|_| Report {
                    waiting: Some("need a password".into()),
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::Waiting,
                1,
            ),
            (
                "protected files changed: the loop waits, before a session's WAITING",
                Box::new(|_| Report {
                    gate: Completion::Protected {
                        problems: 1,
                        waiting: "protected files changed".into(),
                    },
                    waiting: Some("need a password".into()),
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::Waiting,
                1,
            ),
            (
                "iteration limit",
                Box::new(|_| Report {
                    cost_usd: 0.0,
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::IterationLimit,
                5,
            ),
            (
                "cost limit",
                Box::new(|_| Report {
                    cost_usd: 0.75,
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::CostLimit,
                3,
            ),
            (
                "no progress",
                Box::new(|_| Report {
                    progress: Progress::Same,
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::NoProgress,
                3,
            ),
            (
                "progress unknown is not no progress",
                Box::new(|_| Report {
                    progress: Progress::Unknown,
                    cost_usd: 0.0,
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::IterationLimit,
                5,
            ),
            (
                "consecutive failures",
                Box::new(|_| report(SessionOutcome::Failed)),
                Outcome::Failed,
                3,
            ),
            (
                "timeouts are failures",
                Box::new(|_| report(SessionOutcome::TimedOut)),
                Outcome::Failed,
                3,
            ),
            (
                "failures not in a row do not add up",
                Box::new(|i| {
                    report(if i % 2 == 0 {
                        SessionOutcome::Failed
                    } else {
                        SessionOutcome::Ok
                    })
                }),
                Outcome::IterationLimit,
                5,
            ),
            (
                "interrupted during a session",
                Box::new(|_| report(SessionOutcome::Interrupted("SIGTERM".into()))),
                Outcome::Interrupted,
                1,
            ),
            (
                "a gate that never passes ends the loop at its limit",
                Box::new(|_| Report {
                    gate: Completion::GateFailed {
                        what: "`cargo test` failed (exit status 101)".into(),
                    },
                    cost_usd: 0.0,
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::Failed,
                3,
            ),
            (
                "a gate that fails then passes completes",
                Box::new(|i| Report {
                    gate: if i < 3 {
                        Completion::GateFailed { what: "x".into() }
                    } else {
                        Completion::Accepted { steps: 2 }
                    },
                    cost_usd: 0.0,
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::Complete,
                3,
            ),
            (
                "interactive session quit by the user",
                Box::new(|_| Report {
                    quit_by_user: true,
                    ..report(SessionOutcome::Ok)
                }),
                Outcome::Interrupted,
                1,
            ),
        ];
        for (name, make, want, iterations) in rows {
            let (a, s) = run(&l, make);
            assert_eq!(stopped(&a), Some(want), "{name}: {a:?}");
            assert_eq!(s.iteration, iterations, "{name}: {s:?}");
        }
    }

    #[test]
    fn a_stop_request_at_every_point_starts_no_session() {
        let l = limits();
        let sig = || Some("SIGINT".to_string());
        let mut s = State::default();
        let a = step(
            &mut s,
            &l,
            TB {
                stop: sig(),
                gate: Completion::Absent,
                waiting: None,
                step_done: None,
                recent_starts: Vec::new(),
                elapsed: Duration::ZERO,
                only_skipped: None,
                now_epoch: 1_000_000,
                reviews: Vec::from_iter(None),
            },
        );
        assert_eq!(stopped(&a), Some(Outcome::Interrupted), "between sessions");
        // During the on_session_start hook, i.e. before the spawn.
        let mut s = State::default();
        assert!(matches!(
            step(&mut s, &l, between()),
            Action::Prepare { .. }
        ));
        let a = step(
            &mut s,
            &l,
            Event::BeforeSpawn {
                stop: sig(),
                shared: None,
                machine: None,
            },
        );
        assert_eq!(stopped(&a), Some(Outcome::Interrupted), "before spawn");
        assert_eq!((s.iteration, s.sessions), (0, 0), "no session counted");
        // During a limit wait.
        let a = step(&mut s, &l, Event::Waited { stop: sig() });
        assert_eq!(stopped(&a), Some(Outcome::Interrupted), "while waiting");
        // An interrupted session stops the loop even when its COMPLETE would
        // hold; the COMPLETE is checked when the loop next starts.
        let a = step(
            &mut s,
            &l,
            ended(Report {
                gate: Completion::Accepted { steps: 1 },
                ..report(SessionOutcome::Interrupted("SIGHUP".into()))
            }),
        );
        assert_eq!(
            a,
            Action::Stop {
                outcome: Outcome::Interrupted,
                reason: "SIGHUP received".into()
            }
        );
    }

    #[test]
    fn usage_limits_wait_without_counting_and_are_bounded() {
        let l = limits();
        let mut s = State::default();
        step(&mut s, &l, between());
        step(
            &mut s,
            &l,
            Event::BeforeSpawn {
                stop: None,
                shared: None,
                machine: None,
            },
        );
        let limited = |reset_at| {
            ended(Report {
                now_epoch: 1_000_000,
                ..report(SessionOutcome::Limited(Limit::Usage { reset_at }))
            })
        };
        // Claude says when the limit resets: wait until then.
        let a = step(&mut s, &l, limited(Some(1_000_600)));
        assert_eq!(
            a,
            Action::Wait {
                wait: Duration::from_secs(601),
                why: "usage limit reached".into()
            }
        );
        assert_eq!((s.iteration, s.sessions), (0, 1), "not an iteration");
        assert_eq!(step(&mut s, &l, Event::Waited { stop: None }), NEXT);
        assert_eq!(
            step(&mut s, &l, between()),
            Action::Prepare { iteration: 1 }
        );
        assert_eq!(
            step(
                &mut s,
                &l,
                Event::BeforeSpawn {
                    stop: None,
                    shared: None,
                    machine: None
                }
            ),
            Action::Spawn {
                iteration: 1,
                session: 2,
                agent: 0
            },
            "the retry is a new session with its own number"
        );
        // A reset further out than --max-limit-wait allows (with what was
        // already waited in a row) stops the loop.
        let a = step(&mut s, &l, limited(Some(1_003_600)));
        assert_eq!(stopped(&a), Some(Outcome::LimitWait), "{a:?}");
        assert_eq!(Outcome::LimitWait.code(), 4);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_resets_after_a_real_session() {
        let l = limits();
        let waits: Vec<u64> = (0..8)
            .map(|n| limit_wait(&Limit::Overloaded, l.limit_backoff, n, 0).as_secs())
            .collect();
        assert_eq!(waits, [60, 120, 240, 480, 960, 1800, 1800, 1800]);
        assert_eq!(
            limit_wait(&Limit::RateLimit, Duration::MAX, u32::MAX, 0),
            MAX_BACKOFF,
            "no overflow at the extremes"
        );
        // A reset time in the past falls back to the backoff.
        assert_eq!(
            limit_wait(&Limit::Usage { reset_at: Some(5) }, l.limit_backoff, 0, 10),
            Duration::from_secs(60)
        );
        let mut s = State {
            limit_waits: 4,
            limit_waited_s: 900,
            iteration: 1,
            ..Default::default()
        };
        step(&mut s, &l, ended(report(SessionOutcome::Ok)));
        assert_eq!((s.limit_waits, s.limit_waited_s), (0, 0));
    }

    #[test]
    fn limits_in_a_row_double_the_wait_and_the_bound_is_inclusive() {
        let l = Limits {
            max_limit_wait: Duration::from_secs(180),
            ..limits()
        };
        let mut s = State::default();
        let overloaded = || ended(report(SessionOutcome::Limited(Limit::Overloaded)));
        let mut waits = Vec::new();
        for _ in 0..3 {
            step(&mut s, &l, between());
            step(
                &mut s,
                &l,
                Event::BeforeSpawn {
                    stop: None,
                    shared: None,
                    machine: None,
                },
            );
            match step(&mut s, &l, overloaded()) {
                Action::Wait { wait, .. } => waits.push(wait.as_secs()),
                a => {
                    // 60 + 120 = 180 waited: the next 240 would pass the bound.
                    assert_eq!(stopped(&a), Some(Outcome::LimitWait), "{a:?}");
                    break;
                }
            }
            step(&mut s, &l, Event::Waited { stop: None });
        }
        assert_eq!(
            waits,
            [60, 120],
            "each wait in a row doubles, up to exactly the bound"
        );
        assert_eq!((s.limit_waits, s.limit_waited_s), (2, 180));
        // A reset time that is now (not later) is no reset time to wait for.
        assert_eq!(
            limit_wait(&Limit::Usage { reset_at: Some(10) }, l.limit_backoff, 0, 10),
            Duration::from_secs(60)
        );
        assert_eq!(
            limit_wait(&Limit::Usage { reset_at: Some(11) }, l.limit_backoff, 0, 10),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn gate_failures_count_as_rejected_completes_too() {
        let mut s = State {
            iteration: 1,
            sessions: 1,
            rejected: 1,
            ..Default::default()
        };
        let failed = |s: &mut State| {
            step(
                s,
                &limits(),
                ended(Report {
                    gate: Completion::GateFailed {
                        what: "`make` failed".into(),
                    },
                    ..report(SessionOutcome::Ok)
                }),
            )
        };
        assert_eq!(failed(&mut s), NEXT);
        assert_eq!((s.rejected, s.gate_failures), (2, 1));
    }

    #[test]
    fn which_runs_resume_and_which_sessions_count() {
        use Outcome::*;
        for (o, resumable) in [
            (Complete, false),
            (Failed, false),
            (Waiting, true),
            // Raised, a limit lets the run go on.
            (IterationLimit, true),
            (CostLimit, true),
            (LimitWait, true),
            (NoProgress, true),
            (Stuck, true),
            (ReviewRejected, true),
            (Interrupted, true),
            (EndedAbnormally, true),
            (StepDone, false),
            (TimeLimit, true),
            (Partial, false),
            (MachineBudget, true),
            (StepBudget, true),
            (TokenLimit, true),
            (Skipped, false),
        ] {
            assert_eq!(o.resumable(), resumable, "{o:?}");
            let hook = match o {
                Complete => Some(EndHook::Complete),
                Waiting | NoProgress | Stuck | ReviewRejected | StepBudget => {
                    Some(EndHook::Waiting)
                }
                IterationLimit | CostLimit | LimitWait | TimeLimit | MachineBudget | TokenLimit => {
                    Some(EndHook::Limit)
                }
                Failed | Interrupted | EndedAbnormally | StepDone | Partial | Skipped => None,
            };
            assert_eq!(o.hook(), hook, "{o:?}");
            // Told to whoever `[notify]` names, but for a stop you asked for.
            use crate::notify::Event as E;
            let want = match o {
                Complete => Some(E::Complete),
                Waiting | NoProgress | Stuck | ReviewRejected | StepBudget => Some(E::Waiting),
                Failed | EndedAbnormally => Some(E::Failed),
                IterationLimit | CostLimit | LimitWait | TimeLimit | MachineBudget | TokenLimit => {
                    Some(E::Stopped)
                }
                Interrupted | StepDone | Partial | Skipped => None,
            };
            assert_eq!(o.notice().map(|(e, _)| e), want, "{o:?}");
            assert_eq!(
                o.writes_waiting(),
                matches!(o, NoProgress | Stuck | ReviewRejected | StepBudget),
                "{o:?}"
            );
            assert_eq!(
                o.code() == 3,
                matches!(o, Waiting | Stuck | ReviewRejected | StepBudget),
                "{o:?}"
            );
            assert!(!o.text().is_empty());
        }
        assert_eq!(EndedAbnormally.text(), "ended abnormally");
        assert_eq!(
            [EndHook::Complete, EndHook::Waiting, EndHook::Limit].map(EndHook::event),
            ["complete", "waiting", "limit"]
        );
        assert_eq!(IterationLimit.text(), "iteration limit reached");
        assert!(SessionOutcome::Ok.counted() && SessionOutcome::Failed.counted());
        assert!(SessionOutcome::TimedOut.counted());
        assert!(!SessionOutcome::Limited(Limit::RateLimit).counted());
    }

    #[test]
    fn what_a_loop_does_first() {
        for (complete, waiting, want) in [
            (
                None,
                false,
                Start::Run {
                    judge_complete: false,
                },
            ),
            (
                Some(false),
                false,
                Start::Run {
                    judge_complete: true,
                },
            ),
            (Some(true), false, Start::AlreadyComplete),
            (Some(true), true, Start::AlreadyComplete),
            (Some(false), true, Start::Waiting),
            (None, true, Start::Waiting),
        ] {
            assert_eq!(start(complete, waiting), want, "{complete:?} {waiting}");
        }
    }

    #[test]
    fn after_a_session_rows() {
        let ok = SessionOutcome::Ok;
        let stopped = SessionOutcome::Interrupted("SIGINT".into());
        assert!(judge_after(&ok) && judge_after(&SessionOutcome::Failed));
        assert!(!judge_after(&stopped));
        let absent = Completion::Absent;
        let accepted = Completion::Accepted { steps: 1 };
        for (when_each, completion, progress, outcome, runs) in [
            (true, &absent, Progress::Changed, &ok, true),
            (false, &absent, Progress::Changed, &ok, false),
            (true, &accepted, Progress::Changed, &ok, false),
            (true, &absent, Progress::Same, &ok, false),
            (true, &absent, Progress::Unknown, &ok, false),
            (true, &absent, Progress::Changed, &stopped, false),
        ] {
            assert_eq!(
                gate_each(when_each, completion, progress, outcome),
                runs,
                "{when_each} {completion:?} {progress:?} {outcome:?}"
            );
        }
        for (interactive, ending, hook, quit) in [
            (true, Ending::Exited, false, true),
            (true, Ending::Exited, true, false),
            (true, Ending::TimedOut, false, false),
            (true, Ending::Stopped, false, false),
            (false, Ending::Exited, false, false),
        ] {
            assert_eq!(quit_by_user(interactive, ending, hook), quit);
        }
    }

    #[test]
    fn a_run_saved_before_gates_existed_allows_three_gate_failures() {
        let mut v = serde_json::to_value(limits()).unwrap();
        v.as_object_mut().unwrap().remove("max_gate_failures");
        let back: Limits = serde_json::from_value(v).unwrap();
        assert_eq!(back.max_gate_failures, 3);
    }

    /// What is saved is what the engine counted: a round under way changes
    /// nothing of it (the shell writes state.json only when it changed).
    #[test]
    fn a_rounds_progress_is_not_a_count() {
        let mut s = State::default();
        let before = s.counts();
        step(&mut s, &limits(), Event::Begin);
        assert!(s.round.is_some() && s.counts_as(&before));
        s.iteration += 1;
        assert!(!s.counts_as(&before));
    }

    /// A resumed run: a human has acted on what stopped it, so that count
    /// starts again; the rest is kept.
    /// `[gate] baseline`: the run's first round runs the gate before
    /// anything else, once; one stopped before its end is taken again
    /// (on resume), and a run without it never asks for one.
    #[test]
    fn the_baseline_comes_first_and_once() {
        let l = Limits {
            baseline: true,
            ..limits()
        };
        let mut s = State::default();
        assert_eq!(
            step(&mut s, &l, Event::Begin),
            Action::Round(Need::Baseline)
        );
        assert_eq!(
            step(&mut s, &l, Event::Baselined(false)),
            Action::Round(Need::Judge),
            "the round goes on"
        );
        assert!(!s.baseline_taken, "stopped: taken again");
        let mut s = State::default();
        step(&mut s, &l, Event::Begin);
        step(&mut s, &l, Event::Baselined(true));
        assert!(s.baseline_taken);
        assert_eq!(step(&mut s, &l, Event::Begin), Action::Round(Need::Judge));
        let mut s = State::default();
        assert_eq!(
            step(&mut s, &limits(), Event::Begin),
            Action::Round(Need::Judge),
            "no baseline asked for"
        );
    }

    #[test]
    fn resuming_after_a_stop_for_a_human_starts_its_count_again() {
        let stuck = || State {
            step: Some("br-1".into()),
            step_sessions: 5,
            step_outcomes: vec!["ok".into(); 5],
            review_rejections: 3,
            iteration: 7,
            ..State::default()
        };
        let mut s = stuck();
        resume(&mut s, Some(Outcome::Stuck));
        assert_eq!(
            (s.step.as_deref(), s.step_sessions, s.step_outcomes.len()),
            (Some("br-1"), 0, 0)
        );
        assert_eq!((s.review_rejections, s.iteration), (3, 7));
        let mut s = stuck();
        resume(&mut s, Some(Outcome::ReviewRejected));
        assert_eq!((s.review_rejections, s.step_sessions), (0, 5));
        for other in [None, Some(Outcome::Interrupted), Some(Outcome::Waiting)] {
            let mut s = stuck();
            resume(&mut s, other);
            assert_eq!(s, stuck(), "{other:?}");
        }
    }

    /// Limits saved before a field existed read back with the default a
    /// new run would have had.
    #[test]
    fn a_run_saved_before_later_limits_existed_reads_their_defaults() {
        let mut v = serde_json::to_value(limits()).unwrap();
        let o = v.as_object_mut().unwrap();
        for k in [
            "agents",
            "fallback_after",
            "max_sessions_per_step",
            "max_sessions_per_hour",
            "review_each_step",
            "max_review_rounds",
            "review_complete",
            "gate_each",
            "require_change",
        ] {
            o.remove(k).expect(k);
        }
        let back: Limits = serde_json::from_value(v).unwrap();
        assert_eq!(
            (
                back.agents,
                back.fallback_after,
                back.max_sessions_per_step,
                back.max_review_rounds
            ),
            (1, Duration::from_secs(600), 5, 3)
        );
        assert_eq!(back.max_sessions_per_hour, None);
        assert!(!back.review_each_step && !back.review_complete);
        assert!(!back.gate_each && !back.require_change);
    }

    #[test]
    fn a_rejected_complete_is_counted_and_the_loop_goes_on() {
        let mut s = State {
            iteration: 1,
            sessions: 1,
            ..Default::default()
        };
        let a = step(
            &mut s,
            &limits(),
            ended(Report {
                gate: Completion::Rejected { problems: 2 },
                ..report(SessionOutcome::Ok)
            }),
        );
        assert_eq!((a, s.rejected), (NEXT, 1));
    }

    #[test]
    fn classify_session_endings() {
        let e = |ending, interactive, exit_ok, result_ok, limit| SessionEnd {
            ending,
            interactive,
            exit_ok,
            result_ok,
            limit,
        };
        use Ending::*;
        let over = Some(Limit::Overloaded);
        let rows = [
            (e(Exited, false, true, true, None), SessionOutcome::Ok),
            (e(Exited, false, true, false, None), SessionOutcome::Failed),
            (e(Exited, false, false, true, None), SessionOutcome::Failed),
            (
                e(Exited, false, false, false, over.clone()),
                SessionOutcome::Limited(Limit::Overloaded),
            ),
            // Interactive sessions have no result event; their exit decides.
            (
                e(Exited, true, true, false, over.clone()),
                SessionOutcome::Ok,
            ),
            (e(Exited, true, false, false, None), SessionOutcome::Failed),
            (
                e(TimedOut, false, true, true, None),
                SessionOutcome::TimedOut,
            ),
            (
                e(Stopped, false, true, true, over),
                SessionOutcome::Interrupted("SIGINT".into()),
            ),
        ];
        for (ended, want) in rows {
            assert_eq!(classify(&ended, Some("SIGINT")), want, "{ended:?}");
        }
    }

    #[test]
    fn a_long_usage_limit_moves_the_run_to_its_next_agent_and_back() {
        let l = Limits {
            agents: 2,
            max_limit_wait: Duration::from_secs(8 * 3600),
            ..limits()
        };
        let limited = |reset: u64, now: u64| Report {
            now_epoch: now,
            ..report(SessionOutcome::Limited(Limit::Usage {
                reset_at: Some(reset),
            }))
        };
        let now = 1_000_000;
        let mut s = State {
            iteration: 1,
            sessions: 1,
            ..State::default()
        };
        // Resets in 5 minutes: under --fallback-after, waited out.
        assert!(matches!(
            step(&mut s.clone(), &l, ended(limited(now + 300, now))),
            Action::Wait { .. }
        ));
        // Exactly --fallback-after (600 s: the reset, plus the second the
        // wait adds): still waited out.
        assert!(matches!(
            step(&mut s.clone(), &l, ended(limited(now + 599, now))),
            Action::Wait { wait, .. } if wait == l.fallback_after
        ));
        // In 2 hours: the next session runs on the fallback, at once.
        assert_eq!(
            step(&mut s, &l, ended(limited(now + 7200, now))),
            Action::Fallback {
                from: 0,
                to: 1,
                why: "usage limit reached for 2h 1s".into()
            }
        );
        assert_eq!(
            (s.agent, s.iteration, s.limited_until.clone()),
            (1, 0, vec![now + 7201, 0])
        );
        step(&mut s, &l, between());
        assert_eq!(
            step(
                &mut s,
                &l,
                Event::BeforeSpawn {
                    stop: None,
                    shared: None,
                    machine: None
                }
            ),
            Action::Spawn {
                iteration: 1,
                session: 2,
                agent: 1
            }
        );
        // The fallback is limited too: wait for the first reset, on that agent.
        let a = step(&mut s, &l, ended(limited(now + 9000, now + 60)));
        assert_eq!(
            a,
            Action::Wait {
                wait: Duration::from_secs(7201 - 60 + 1),
                why: "usage limit reached".into()
            }
        );
        assert_eq!(s.agent, 0);
        // Back on the fallback: a session ending after the first agent's
        // reset sends the run back to it.
        s.agent = 1;
        s.limited_until = vec![now + 7201, 0];
        step(&mut s, &l, between());
        step(
            &mut s,
            &l,
            Event::BeforeSpawn {
                stop: None,
                shared: None,
                machine: None,
            },
        );
        step(
            &mut s,
            &l,
            ended(Report {
                now_epoch: now + 7202,
                ..report(SessionOutcome::Ok)
            }),
        );
        assert_eq!(s.agent, 0);
        // One agent: a long limit is waited out, as always.
        let mut one = State::default();
        assert!(matches!(
            step(
                &mut one,
                &Limits {
                    agents: 1,
                    ..l.clone()
                },
                ended(limited(now + 7200, now))
            ),
            Action::Wait { .. }
        ));
    }

    /// One session, from between sessions to its report.
    fn one_session(s: &mut State, l: &Limits, r: Report) -> Action {
        step(s, l, between());
        step(
            s,
            l,
            Event::BeforeSpawn {
                stop: None,
                shared: None,
                machine: None,
            },
        );
        step(s, l, ended(r))
    }

    #[test]
    fn the_token_cap_stops_the_run_once_its_sessions_used_it() {
        let l = Limits {
            max_tokens: Some(250),
            max_cost: None,
            no_progress_limit: 100,
            max_iterations: 100,
            ..limits()
        };
        // Each session here uses 100 tokens: the third reaches 250.
        let (a, s) = run(&l, |_| report(SessionOutcome::Ok));
        assert_eq!(
            a,
            stop(Outcome::TokenLimit, "300 tokens used of --max-tokens 250")
        );
        assert_eq!((s.sessions, s.tokens), (3, 300));
        assert!(Outcome::TokenLimit.resumable());
    }

    #[test]
    fn a_step_over_its_budget_pauses_and_an_answer_gives_it_as_much_again() {
        let l = Limits {
            max_cost_per_step: Some(1.0),
            max_cost: None,
            no_progress_limit: 100,
            wait_for_answer: Some(Duration::from_secs(600)),
            ..limits()
        };
        let on = |before: &str, after: &str, usd: f64| Report {
            step_before: Some(before.into()),
            step_after: Some(after.into()),
            cost_usd: usd,
            ..report(SessionOutcome::Ok)
        };
        let mut s = State::default();
        let session = |s: &mut State, r: Report| one_session(s, &l, r);
        // A step finished costs nothing against the next one.
        assert_eq!(session(&mut s, on("1", "2", 5.0)), NEXT);
        assert_eq!(session(&mut s, on("2", "2", 0.6)), NEXT);
        assert_eq!(s.step_cost, 0.6);
        // Past $1 on step 2: paused, asking (a human is needed: `step`
        // waits for an answer where it may), its work kept.
        let reason = |usd: &str, n: u32| {
            format!(
                "step 2 has cost {usd} in {n} sessions without being finished, past its budget of $1.00 (--max-cost-per-step); its work is kept"
            )
        };
        assert_eq!(
            session(&mut s, on("2", "2", 0.6)),
            stop(Outcome::StepBudget, reason("$1.20", 2))
        );
        assert!(Outcome::StepBudget.needs_a_human());
        // Answered: the step has as much again.
        s.asked = Some((Outcome::StepBudget, reason("$1.20", 2)));
        assert!(matches!(
            step(&mut s, &l, Event::Answered(true)),
            Action::Round(_)
        ));
        assert_eq!(s.step_cost, 0.0);
        assert_eq!(session(&mut s, on("2", "2", 0.9)), NEXT);
        // Not answered in time: the run ends as it was asked, resumable.
        assert_eq!(
            session(&mut s, on("2", "2", 0.2)),
            stop(Outcome::StepBudget, reason("$1.10", 4))
        );
        s.asked = Some((Outcome::StepBudget, reason("$1.10", 4)));
        assert_eq!(
            step(&mut s, &l, Event::Answered(false)),
            stop(Outcome::StepBudget, reason("$1.10", 4))
        );
        let mut resumed = s.clone();
        resumed.skipped = vec!["planted".into()];
        resume(&mut resumed, Some(Outcome::StepBudget));
        assert_eq!(resumed.step_cost, 0.0);
        assert!(resumed.skipped.is_empty(), "a resumed run skips nothing");
        // Answered "stop the run": it stops as `ralph stop` stops it.
        s.asked = Some((Outcome::StepBudget, reason("$1.10", 4)));
        assert_eq!(
            step(
                &mut s,
                &l,
                Event::Chose(pause::Choice::Stop, "github:ann".into())
            ),
            stop(Outcome::Interrupted, "stopped at the answer of github:ann")
        );
        assert_eq!(s.asked, None);
        // Answered "skip the step": left open, never again counted on; the
        // next step has a budget of its own; with nothing else open the
        // run ends, the rest done.
        s.step = Some("2".into());
        s.step_cost = 1.1;
        s.asked = Some((Outcome::StepBudget, reason("$1.10", 4)));
        assert!(matches!(
            step(
                &mut s,
                &l,
                Event::Chose(pause::Choice::Skip, "terminal".into())
            ),
            Action::Round(_)
        ));
        assert_eq!((s.step.as_deref(), s.step_cost), (None, 0.0));
        assert_eq!(s.skipped, ["2"]);
        assert_eq!(s.asked, None);
        assert_eq!(session(&mut s, on("3", "3", 0.6)), NEXT);
        assert_eq!(s.step_cost, 0.6, "step 3 counted anew");
        let only = TB {
            only_skipped: Some("2".into()),
            ..between()
        };
        assert_eq!(
            step(&mut s, &l, only),
            stop(
                Outcome::Skipped,
                "every open step is one you skipped: 2 (left open, their work kept: the next `ralph loop` works them)"
            )
        );
        // "More" is an answer in words.
        s.asked = Some((Outcome::StepBudget, reason("$1.10", 4)));
        s.step_cost = 1.1;
        assert!(matches!(
            step(
                &mut s,
                &l,
                Event::Chose(pause::Choice::More, "terminal".into())
            ),
            Action::Round(_)
        ));
        assert_eq!(s.step_cost, 0.0);
    }

    #[test]
    fn a_step_left_open_by_too_many_sessions_in_a_row_stops_for_a_human() {
        let l = Limits {
            max_sessions_per_step: 3,
            no_progress_limit: 100,
            ..limits()
        };
        let on = |before: Option<&str>, after: Option<&str>, o: SessionOutcome| Report {
            step_before: before.map(String::from),
            step_after: after.map(String::from),
            ..report(o)
        };
        let mut s = State::default();
        let session = |s: &mut State, r: Report| one_session(s, &l, r);
        // Two sessions on br-1 (one failing), then one that finishes it.
        assert_eq!(
            session(&mut s, on(Some("br-1"), Some("br-1"), SessionOutcome::Ok)),
            NEXT
        );
        assert_eq!(
            session(
                &mut s,
                on(Some("br-1"), Some("br-1"), SessionOutcome::Failed)
            ),
            NEXT
        );
        assert_eq!((s.step.as_deref(), s.step_sessions), (Some("br-1"), 2));
        assert_eq!(
            session(&mut s, on(Some("br-1"), Some("br-2"), SessionOutcome::Ok)),
            NEXT
        );
        assert_eq!((s.step.clone(), s.step_sessions), (None, 0));
        // Three on br-2 in a row: stopped, naming it and how each went.
        session(&mut s, on(Some("br-2"), Some("br-2"), SessionOutcome::Ok));
        session(
            &mut s,
            on(Some("br-2"), Some("br-2"), SessionOutcome::TimedOut),
        );
        assert_eq!(
            session(&mut s, on(Some("br-2"), Some("br-2"), SessionOutcome::Ok)),
            stop(
                Outcome::Stuck,
                "step br-2: 3 sessions in a row did not finish it (ok, timeout, ok); split it, or say more in the spec"
            )
        );
        // A limited session is no attempt.
        let mut s = State::default();
        session(&mut s, on(Some("x"), Some("x"), SessionOutcome::Ok));
        session(
            &mut s,
            on(
                Some("x"),
                Some("x"),
                SessionOutcome::Limited(Limit::RateLimit),
            ),
        );
        assert_eq!(s.step_sessions, 1);
    }

    #[test]
    fn pacing_waits_for_the_oldest_session_of_the_hour_to_leave_it() {
        let l = Limits {
            max_sessions_per_hour: Some(2),
            ..limits()
        };
        let now = 1_000_000;
        let at = |starts: Vec<u64>| TB {
            stop: None,
            gate: Completion::Absent,
            waiting: None,
            step_done: None,
            recent_starts: starts,
            elapsed: Duration::ZERO,
            only_skipped: None,
            now_epoch: now,
            reviews: Vec::from_iter(None),
        };
        let mut s = State::default();
        // One in the hour: room for another.
        assert!(matches!(
            step(&mut s, &l, at(vec![now - 100])),
            Action::Prepare { .. }
        ));
        // Two (and one older than an hour): wait until the older of the two
        // is an hour old.
        assert_eq!(
            step(&mut s, &l, at(vec![now - 4000, now - 600, now - 100])),
            Action::Pause {
                wait: Duration::from_secs(3000),
                why: "2 sessions started in the last hour (--max-sessions-per-hour)".into()
            }
        );
        assert_eq!(s, State::default(), "a pause counts nothing");
        // Without the option, never.
        assert!(matches!(
            step(&mut s, &limits(), at(vec![now; 50])),
            Action::Prepare { .. }
        ));
        assert_eq!(
            pace(Some(1), vec![now - 3600], now),
            None,
            "an hour old is out of it"
        );
        assert_eq!(
            pace(Some(1), vec![now - 3599], now),
            Some(Duration::from_secs(1))
        );
    }

    #[test]
    fn state_and_limits_round_trip_through_json() {
        let s = State {
            iteration: 3,
            sessions: 4,
            cost_usd: 1.25,
            failures: 1,
            stalled: 2,
            limit_waits: 0,
            limit_waited_s: 0,
            rejected: 1,
            gate_failures: 0,
            agent: 1,
            limited_until: vec![1_795_400_000, 0],
            step: Some("br-1".into()),
            step_sessions: 2,
            step_outcomes: vec!["ok".into(), "failed".into()],
            step_cost: 0.5,
            tokens: 1234,
            skipped: vec!["**3** c".into()],
            baseline_taken: true,
            reviews: 2,
            review_rejections: 1,
            round: None,
            asked: None,
        };
        let back: State = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        let l = limits();
        let back: Limits = serde_json::from_str(&serde_json::to_string(&l).unwrap()).unwrap();
        assert_eq!(back, l);
    }

    fn reviewed(approved: bool, cost_usd: f64) -> Option<Reviewed> {
        use crate::work::review::Verdict;
        Some(Reviewed {
            verdict: if approved {
                Verdict::Approved
            } else {
                Verdict::Rejected(vec!["the parser drops the last line".into()])
            },
            cost_usd,
        })
    }

    #[test]
    fn a_review_that_approves_lets_complete_count_and_resets_the_rounds() {
        let l = limits();
        let mut s = State {
            review_rejections: 2,
            ..State::default()
        };
        let a = step(
            &mut s,
            &l,
            ended(Report {
                gate: Completion::Accepted { steps: 2 },
                reviews: Vec::from_iter(reviewed(true, 0.25)),
                ..report(SessionOutcome::Ok)
            }),
        );
        assert_eq!(stopped(&a), Some(Outcome::Complete));
        assert_eq!((s.reviews, s.review_rejections), (1, 0));
        assert!(
            (s.cost_usd - 0.35).abs() < 1e-9,
            "session and review: {}",
            s.cost_usd
        );
    }

    #[test]
    fn rejections_in_a_row_stop_for_a_human_with_the_findings() {
        let l = limits();
        // The reviewer of every COMPLETE rejects: the third stops the loop.
        let (a, s) = run(&l, |_| Report {
            gate: Completion::ReviewRejected,
            reviews: Vec::from_iter(reviewed(false, 0.1)),
            ..report(SessionOutcome::Ok)
        });
        match a {
            Action::Stop { outcome, reason } => {
                assert_eq!(outcome, Outcome::ReviewRejected);
                assert!(
                    reason.starts_with("3 reviews in a row did not approve")
                        && reason.contains("the parser drops the last line"),
                    "{reason}"
                );
            }
            a => panic!("{a:?}"),
        }
        assert_eq!(
            (s.iteration, s.reviews, s.rejected, s.gate_failures),
            (3, 3, 3, 0)
        );
        // An approval in between starts the count again; no verdict counts
        // as a rejection.
        let mut s = State::default();
        for (approved, rounds) in [(false, 1), (true, 0), (false, 1), (false, 2)] {
            step(
                &mut s,
                &l,
                ended(Report {
                    reviews: Vec::from_iter(reviewed(approved, 0.0)),
                    ..report(SessionOutcome::Ok)
                }),
            );
            assert_eq!(s.review_rejections, rounds);
        }
        let none = Reviewed {
            verdict: crate::work::review::Verdict::NoVerdict("no file".into()),
            cost_usd: 0.0,
        };
        let a = step(
            &mut s,
            &l,
            ended(Report {
                reviews: Vec::from_iter(Some(none)),
                ..report(SessionOutcome::Ok)
            }),
        );
        assert_eq!(stopped(&a), Some(Outcome::ReviewRejected), "{a:?}");
        assert!(format!("{a:?}").contains("the reviewer gave no verdict: no file"));
    }

    /// A session whose cost is not known stops a run with `--max-cost`
    /// (the cap could not hold); without a cap the run goes on.
    #[test]
    fn a_session_of_unknown_cost_stops_a_capped_run() {
        let unknown = || {
            ended(Report {
                cost_unknown: true,
                cost_usd: 0.0,
                ..report(SessionOutcome::Ok)
            })
        };
        let capped = Limits {
            max_cost: Some(5.0),
            ..limits()
        };
        let mut s = State::default();
        let a = step(&mut s, &capped, unknown());
        assert_eq!(stopped(&a), Some(Outcome::CostLimit), "{a:?}");
        assert!(format!("{a:?}").contains("cannot be held"), "{a:?}");
        let free = Limits {
            max_cost: None,
            ..limits()
        };
        let mut s = State::default();
        assert_eq!(stopped(&step(&mut s, &free, unknown())), None);
    }

    #[test]
    fn a_review_between_sessions_counts_its_cost_toward_the_cap() {
        let l = Limits {
            max_cost: Some(1.0),
            ..limits()
        };
        let mut s = State {
            cost_usd: 0.9,
            ..State::default()
        };
        let with = |review| TB {
            stop: None,
            gate: Completion::ReviewRejected,
            waiting: None,
            step_done: None,
            recent_starts: Vec::new(),
            elapsed: Duration::ZERO,
            only_skipped: None,
            now_epoch: 1_000_000,
            reviews: Vec::from_iter(review),
        };
        assert_eq!(
            stopped(&step(&mut s, &l, with(reviewed(false, 0.2)))),
            Some(Outcome::CostLimit)
        );
        // Under the cap, and without a review, the loop goes on.
        let mut s = State::default();
        assert!(matches!(
            step(&mut s, &l, with(reviewed(false, 0.2))),
            Action::Prepare { .. }
        ));
        // At the cap already (a run resumed there): no more is spent.
        let mut s = State {
            cost_usd: 5.0,
            ..State::default()
        };
        assert_eq!(
            stopped(&step(&mut s, &l, with(None))),
            Some(Outcome::CostLimit)
        );
        // An approved review of a COMPLETE that holds: complete, even at the cap.
        let mut s = State {
            cost_usd: 0.9,
            ..State::default()
        };
        let a = step(
            &mut s,
            &l,
            TB {
                stop: None,
                gate: Completion::Accepted { steps: 1 },
                waiting: None,
                step_done: None,
                recent_starts: Vec::new(),
                elapsed: Duration::ZERO,
                only_skipped: None,
                now_epoch: 1_000_000,
                reviews: Vec::from_iter(reviewed(true, 0.2)),
            },
        );
        assert_eq!(stopped(&a), Some(Outcome::Complete));
    }

    #[test]
    fn steps_are_reviewed_after_a_session_that_checked_one() {
        let ok = SessionOutcome::Ok;
        assert!(review_steps(true, true, &ok));
        assert!(review_steps(true, true, &SessionOutcome::Failed));
        assert!(!review_steps(false, true, &ok));
        assert!(!review_steps(true, false, &ok));
        assert!(!review_steps(
            true,
            true,
            &SessionOutcome::Interrupted("SIGINT".into())
        ));
        assert!(!review_steps(
            true,
            true,
            &SessionOutcome::Limited(Limit::RateLimit)
        ));
    }

    #[test]
    fn a_worker_stops_once_its_step_is_done_but_a_failing_gate_or_waiting_comes_first() {
        let l = limits();
        let mut s = State::default();
        let done = TB {
            step_done: Some("step **2** Second".into()),
            elapsed: Duration::ZERO,
            ..between()
        };
        assert_eq!(
            stopped(&step(&mut s, &l, done)),
            Some(Outcome::StepDone),
            "its step checked: the worker is done"
        );
        assert_eq!(Outcome::StepDone.code(), 0);
        assert_eq!(Outcome::StepDone.notice(), None, "its run tells, not it");
        assert_eq!(Outcome::StepDone.hook(), None);
        let a = step(&mut s, &l, between());
        assert_eq!(a, Action::Prepare { iteration: 1 }, "not done: goes on");
    }

    #[test]
    fn no_session_starts_once_every_loop_on_the_machine_spent_the_users_budget() {
        use crate::config::user::{MachineBudget, Spent};
        let l = limits();
        let spawn = |usd_day: f64| {
            let mut s = State::default();
            let machine = Machine {
                budget: MachineBudget {
                    per_day: Some(10.0),
                    ..MachineBudget::default()
                },
                spent: Spent {
                    usd_day,
                    usd_week: usd_day,
                    ..Spent::default()
                },
            };
            let a = step(
                &mut s,
                &l,
                Event::BeforeSpawn {
                    stop: None,
                    shared: None,
                    machine: Some(machine),
                },
            );
            (a, s.iteration, s.sessions)
        };
        assert!(matches!(spawn(9.99), (Action::Spawn { .. }, 1, 1)));
        let (a, iteration, sessions) = spawn(10.0);
        assert_eq!((iteration, sessions), (0, 0), "nothing counted");
        assert_eq!(
            a,
            Action::Stop {
                outcome: Outcome::MachineBudget,
                reason: "every loop on this machine has spent $10.00 of $10.00 in the last 24 hours ([budget] per_day)".into()
            }
        );
        assert!(Outcome::MachineBudget.resumable());
    }

    #[test]
    fn a_workers_session_is_refused_once_the_whole_run_reaches_a_cap() {
        let l = limits(); // 5 sessions, $2
        let spawn = |shared| {
            let mut s = State::default();
            let a = step(
                &mut s,
                &l,
                Event::BeforeSpawn {
                    stop: None,
                    shared,
                    machine: None,
                },
            );
            (a, s.iteration)
        };
        let under = Shared {
            sessions: 4,
            cost_usd: 1.99,
            ..Shared::default()
        };
        assert!(matches!(spawn(Some(under)), (Action::Spawn { .. }, 1)));
        let (a, counted) = spawn(Some(Shared {
            sessions: 5,
            ..under
        }));
        assert_eq!(stopped(&a), Some(Outcome::IterationLimit));
        assert_eq!(counted, 0, "a session refused is not counted");
        let (a, _) = spawn(Some(Shared {
            cost_usd: 2.0,
            ..under
        }));
        assert_eq!(stopped(&a), Some(Outcome::CostLimit));
        match a {
            Action::Stop { reason, .. } => assert!(reason.contains("$2.00 of $2.00"), "{reason}"),
            _ => unreachable!(),
        }
        assert!(
            matches!(spawn(None), (Action::Spawn { .. }, 1)),
            "not a worker"
        );
    }
}
