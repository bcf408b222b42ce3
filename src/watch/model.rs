//! What the dashboard shows of each loop, read only from what ralph already
//! writes (the lock, the run's state, summary and events, the sentinels,
//! the spec), and how each part reads. `gather` does the reading; the rest
//! is pure.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::timefmt::now_epoch;
use crate::work::review::Judgement;
use serde::ser::SerializeMap;

use crate::history::events;
use crate::history::records::RunDir;
use crate::run::engine::Outcome;
use crate::run::lock as runlock;
use crate::work::project::Project;
use crate::work::{sentinel, spec};

/// Where one loop is.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Running,
    /// Waiting before its next session until then (seconds since the
    /// epoch), for a usage limit or the pace.
    Paused {
        until: u64,
    },
    /// `.ralph/WAITING` is there.
    Waiting,
    /// Running, and waiting for an answer to its question until then
    /// (seconds since the epoch; `--wait-for-answer`): an answer sent now
    /// goes on at once.
    Asking {
        until: u64,
    },
    /// The last run ended so.
    Ended(Outcome),
    /// A run whose loop was killed, not yet taken over.
    Killed,
    /// No run yet.
    Idle,
}

/// Scripts read a state by its kind, and a paused loop's end as a time,
/// never as the text a column shows.
impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self {
            State::Running => m.serialize_entry("kind", "running")?,
            State::Paused { until } => {
                m.serialize_entry("kind", "paused")?;
                let t = UNIX_EPOCH + Duration::from_secs(*until);
                m.serialize_entry("until", &crate::timefmt::rfc3339(t))?;
            }
            State::Waiting => m.serialize_entry("kind", "waiting")?,
            // Waiting as any other, for a script; `until` (and its pid)
            // says the running loop takes an answer until then.
            State::Asking { until } => {
                m.serialize_entry("kind", "waiting")?;
                let t = UNIX_EPOCH + Duration::from_secs(*until);
                m.serialize_entry("until", &crate::timefmt::rfc3339(t))?;
            }
            State::Ended(o) => {
                m.serialize_entry("kind", "ended")?;
                m.serialize_entry("outcome", o)?;
            }
            State::Killed => m.serialize_entry("kind", "killed")?,
            State::Idle => m.serialize_entry("kind", "idle")?,
        }
        m.end()
    }
}

/// One row of the dashboard; `ralph watch --json` prints these as they are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub name: String,
    /// A parallel run's worker that this worktree's loop is (`w1`), as its
    /// lines name it.
    pub worker: Option<String>,
    /// Its run is a parallel run's own (`--parallel`): its sessions are its
    /// workers', in their rows.
    #[serde(skip)]
    pub parallel: bool,
    pub branch: Option<String>,
    #[serde(rename = "path")]
    pub root: PathBuf,
    pub agent: String,
    pub state: State,
    pub iteration: u32,
    pub max_iterations: u32,
    #[serde(serialize_with = "progress")]
    pub spec: Option<(usize, usize)>,
    /// The next open step, as the spec says it.
    pub step: Option<String>,
    #[serde(rename = "elapsed_s", serialize_with = "seconds")]
    pub elapsed: Duration,
    pub cost_usd: f64,
    /// Tokens its run used (input, output and cache), for those on a plan.
    pub tokens: u64,
    pub gate: Option<bool>,
    /// The reviewer's last verdict.
    pub review: Option<Judgement>,
    pub run_id: Option<String>,
    /// The running loop's pid.
    pub pid: Option<u32>,
    pub waiting: Option<String>,
    /// The question of its WAITING, bounded and safe to show: its text,
    /// blocker and options.
    pub question: Option<crate::work::question::Question>,
    /// The newest session's stream file of its run, and its number.
    #[serde(rename = "session", serialize_with = "session_number")]
    pub stream: Option<(u32, PathBuf)>,
}

fn progress<S: serde::Serializer>(p: &Option<(usize, usize)>, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Progress {
        done: usize,
        total: usize,
    }
    p.map(|(done, total)| Progress { done, total }).serialize(s)
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_secs())
}

/// The stream's file is ralph's business; its number is what `ralph logs
/// --session` takes.
fn session_number<S: serde::Serializer>(
    st: &Option<(u32, PathBuf)>,
    s: S,
) -> Result<S::Ok, S::Error> {
    st.as_ref().map(|(n, _)| *n).serialize(s)
}

/// Every loop of the repository that has `.ralph/`: the checkout first,
/// then its worktrees.
pub fn gather(main: &std::path::Path) -> Vec<Row> {
    crate::run::worktree::loops(main)
        .unwrap_or_default()
        .into_iter()
        .map(|w| row(w.name(), w.branch_name(), w.path))
        .collect()
}

fn row(name: String, branch: Option<String>, root: PathBuf) -> Row {
    let project = Project::at(&root);
    let running = runlock::running(&project.lock());
    let runs = project.runs();
    let run = match &running {
        Some(l) => Some(RunDir::open(&runs, &l.run_id)),
        None => RunDir::latest(&runs),
    };
    let saved = run.as_ref().and_then(RunDir::state);
    let summary = run.as_ref().and_then(RunDir::summary);
    let spec = crate::fsutil::read_optional(&project.spec())
        .ok()
        .flatten()
        .map(|t| spec::parse(&t));
    let waiting = sentinel::Waiting::read(&project.waiting()).ok().flatten();
    let question = waiting.as_ref().and_then(sentinel::Waiting::question);
    let waiting = waiting.map(|w| w.reason);
    let state = state_of(
        running
            .as_ref()
            .map(|l| l.waiting_until.as_ref().map(|(t, _)| *t)),
        waiting.is_some(),
        summary.as_ref().map(|s| s.outcome),
        saved.is_some(),
        now_epoch(),
    );
    // What its events say last: the gate, the review, the work session.
    let latest = run
        .as_ref()
        .map(|r| events::Latest::of(events::newest_first(r)))
        .unwrap_or_default();
    let model = latest.session_flags().and_then(|f| f.model);
    let agent = saved
        .as_ref()
        .map_or_else(|| "-".to_string(), |s| agent_text(s, model));
    let elapsed = elapsed_of(
        running.as_ref().map(running_for),
        saved.as_ref().map(|s| (s.resumed, s.elapsed_s)),
        summary.as_ref().map(|s| s.duration_s),
    );
    let (iteration, max_iterations) = iterations(running.as_ref(), saved.as_ref());
    // A worker's loop: named as its lines are, its step its own (the next
    // open one, once its own is checked, is another worker's).
    let started = run.as_ref().and_then(start_of);
    let worker = started
        .as_ref()
        .and_then(|(mode, w)| (*mode == events::Mode::Worker).then(|| w.clone()).flatten());
    let step = match &worker {
        Some((_, key)) => Some(
            spec.as_ref()
                .and_then(|s| crate::parallel::texts::find(&s.steps, key))
                .map_or_else(|| key.clone(), spec::Step::name),
        ),
        None => spec.as_ref().and_then(next_step),
    };
    Row {
        name,
        worker: worker.map(|(w, _)| w),
        parallel: started.is_some_and(|(mode, _)| mode == events::Mode::Parallel),
        branch,
        agent,
        state,
        iteration,
        max_iterations,
        spec: spec.as_ref().map(|s| (s.done(), s.total())),
        step,
        elapsed,
        cost_usd: saved.as_ref().map_or(0.0, |s| s.state.cost_usd),
        tokens: saved.as_ref().map_or(0, |s| s.tokens.total()),
        gate: saved
            .as_ref()
            .and(latest.gate.as_ref())
            .and_then(events::gate_verdict)
            .map(|g| g.passed),
        review: saved
            .as_ref()
            .and(latest.review.as_ref())
            .and_then(events::review_record)
            .map(|r| r.verdict),
        run_id: run.as_ref().map(|r| r.id.clone()),
        pid: running.as_ref().map(|l| l.pid),
        waiting,
        question,
        stream: run.as_ref().and_then(|r| r.sessions().pop()),
        root,
    }
}

/// The run's agent in use, and its model as the newest work session's end
/// says it (only the end of the journal is read: it grows with the run).
fn agent_text(s: &crate::history::records::Saved, model: Option<String>) -> String {
    let agent = s
        .agents
        .get(s.state.agent)
        .map_or("claude".into(), |a| a.to_string());
    match model {
        Some(m) => format!("{agent}/{m}"),
        None => agent,
    }
}

/// The iteration and its limit: the lock's, else the saved state's.
fn iterations(
    running: Option<&runlock::LockInfo>,
    saved: Option<&crate::history::records::Saved>,
) -> (u32, u32) {
    match (running, saved) {
        (Some(l), _) => (l.iteration, l.max_iterations),
        (None, Some(s)) => (s.state.iteration, s.limits.max_iterations),
        (None, None) => (0, 0),
    }
}

/// How long a running loop has run, by its lock.
fn running_for(l: &runlock::LockInfo) -> std::time::Duration {
    humantime::parse_rfc3339(&l.started_at)
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default()
}

/// The first open step, as a row shows it.
/// How the run was started, and for a parallel run's worker, the worker
/// and its step: its own start (the journal's first `run_started`; a run's
/// journal also holds its workers' lines, adopted as each ended) says so.
fn start_of(run: &RunDir) -> Option<(events::Mode, Option<(String, String)>)> {
    let start = events::first_start(run)?;
    match start.event {
        events::Event::RunStarted { mode, .. } => Some((mode, start.worker.zip(start.step))),
        _ => None,
    }
}

fn next_step(s: &spec::Spec) -> Option<String> {
    s.next_open().map(|s| match &s.label {
        Some(l) => format!("{l} {}", s.title),
        None => s.title.clone(),
    })
}

/// A loop's state from what its files say: running (and until when it
/// waits, if it does), WAITING there, how its last run ended, whether it
/// has a run at all.
fn state_of(
    running: Option<Option<u64>>,
    waiting: bool,
    ended: Option<Outcome>,
    has_run: bool,
    now: u64,
) -> State {
    match (running, waiting, ended) {
        // A running loop waits with WAITING there only for an answer.
        (Some(Some(t)), true, _) if t > now => State::Asking { until: t },
        (Some(Some(t)), _, _) if t > now => State::Paused { until: t },
        (Some(_), _, _) => State::Running,
        (None, true, _) => State::Waiting,
        (None, false, Some(o)) => State::Ended(o),
        (None, false, None) if has_run => State::Killed,
        (None, false, None) => State::Idle,
    }
}

/// How long a loop has run: a running one since it started, plus what its
/// run had run before a resume; else what its run recorded.
fn elapsed_of(
    running_for: Option<Duration>,
    saved: Option<(u32, f64)>,
    summary_s: Option<f64>,
) -> Duration {
    let secs = |s: f64| Duration::from_secs_f64(s.max(0.0));
    match (running_for, saved, summary_s) {
        (Some(d), Some((resumed, before)), _) if resumed > 0 => d + secs(before),
        (Some(d), _, _) => d,
        (None, _, Some(s)) => secs(s),
        (None, Some((_, s)), None) => secs(s),
        (None, None, None) => Duration::ZERO,
    }
}

/// How a state reads in its column.
pub fn state_text(s: &State, now: u64) -> String {
    match s {
        State::Running => "running".into(),
        State::Paused { until } => format!(
            "paused {}",
            crate::timefmt::human_duration(Duration::from_secs(until.saturating_sub(now)))
        ),
        State::Waiting => "WAITING".into(),
        State::Asking { until } => format!(
            "WAITING, {} left",
            crate::timefmt::human_duration(Duration::from_secs(until.saturating_sub(now)))
        ),
        State::Ended(Outcome::Complete) => "complete".into(),
        State::Ended(Outcome::Failed) => "failed".into(),
        State::Ended(Outcome::Interrupted) => "stopped".into(),
        State::Ended(Outcome::EndedAbnormally) | State::Killed => "killed".into(),
        State::Ended(o) => o.text().into(),
        State::Idle => "no run yet".into(),
    }
}

/// Steps open in the spec now of a run that ended complete: steps added
/// (or unchecked) since, which the run's own end does not know of.
pub fn open_since_complete(r: &Row) -> Option<usize> {
    match (&r.state, r.spec) {
        (State::Ended(Outcome::Complete), Some((done, total))) if done < total => {
            Some(total - done)
        }
        _ => None,
    }
}

/// A row's state as its column says it: never a bare `complete` while the
/// spec has open steps.
pub fn state_cell(r: &Row, now: u64) -> String {
    let text = state_text(&r.state, now);
    match open_since_complete(r) {
        Some(n) => format!("{text}, {n} open"),
        None => text,
    }
}

/// The gate's and the reviewer's last verdicts, short enough for their
/// column beside the step at 80 columns (`gate ok · review ok`).
pub fn verdicts(gate: Option<bool>, review: Option<Judgement>) -> String {
    let gate = gate.map(|p| if p { "gate ok" } else { "gate failed" });
    let review = review.map(|v| match v {
        Judgement::Approved => "review ok".to_string(),
        // The column is short: the reason is `status`'s to say.
        Judgement::Limited => "review no verdict".to_string(),
        v => format!("review {v}"),
    });
    match (gate, review) {
        (None, None) => "-".into(),
        (Some(g), None) => g.into(),
        (None, Some(r)) => r,
        (Some(g), Some(r)) => format!("{g} · {r}"),
    }
}

/// The row's cells, in the table's column order (`COLUMNS`).
pub fn cells(r: &Row, now: u64) -> [String; 9] {
    let name = match (&r.worker, &r.branch) {
        (Some(w), _) => format!("{w} ({})", r.name),
        (None, Some(b)) if b != &format!("ralph/{}", r.name) && r.name != "main" => {
            format!("{} ({b})", r.name)
        }
        _ => r.name.clone(),
    };
    [
        name,
        r.agent.clone(),
        state_cell(r, now),
        if r.max_iterations == 0 {
            "-".into()
        } else {
            format!("{}/{}", r.iteration, r.max_iterations)
        },
        r.spec.map_or("-".into(), |(d, t)| format!("{d}/{t}")),
        crate::timefmt::human_duration(Duration::from_secs(r.elapsed.as_secs())),
        crate::output::usd(r.cost_usd),
        verdicts(r.gate, r.review),
        step_cell(r),
    ]
}

/// The step column: what the loop asks, while it waits for a human (its
/// question matters more than the step it stopped at), else its next step.
fn step_cell(r: &Row) -> String {
    match &r.question {
        Some(q) => {
            let options = match q.options.len() {
                0 => String::new(),
                n => format!(" [1-{n}]"),
            };
            format!(
                "asks: {}{options}",
                crate::work::question::one_line(&q.text, 200)
            )
        }
        None => r.step.clone().unwrap_or_else(|| "-".into()),
    }
}

pub const COLUMNS: [&str; 9] = [
    "loop", "agent", "state", "iter", "spec", "elapsed", "cost", "verdicts", "step",
];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> Row {
        Row {
            name: "a".into(),
            worker: None,
            parallel: false,
            branch: Some("ralph/a".into()),
            root: PathBuf::from("/p"),
            agent: "claude".into(),
            state: State::Running,
            iteration: 2,
            max_iterations: 50,
            spec: Some((1, 3)),
            step: Some("2 Second step".into()),
            elapsed: Duration::from_secs(125),
            cost_usd: 0.5,
            tokens: 0,
            gate: Some(false),
            review: Some(Judgement::Rejected),
            run_id: None,
            pid: Some(1),
            waiting: None,
            question: None,
            stream: None,
        }
    }

    #[test]
    fn a_row_reads_as_its_columns() {
        let c = cells(&sample(), 0);
        assert_eq!(
            c,
            [
                "a",
                "claude",
                "running",
                "2/50",
                "1/3",
                "2m 5s",
                "$0.50",
                "gate failed · review rejected",
                "2 Second step"
            ]
            .map(String::from)
        );
        let other = Row {
            name: "main".into(),
            worker: None,
            parallel: false,
            branch: Some("main".into()),
            max_iterations: 0,
            spec: None,
            gate: None,
            review: None,
            step: None,
            state: State::Paused { until: 1_090 },
            ..sample()
        };
        let c = cells(&other, 1_000);
        assert_eq!(
            (
                c[0].as_str(),
                c[2].as_str(),
                c[3].as_str(),
                c[4].as_str(),
                c[7].as_str(),
                c[8].as_str()
            ),
            ("main", "paused 1m 30s", "-", "-", "-", "-")
        );
        let c = cells(
            &Row {
                name: "b".into(),
                worker: None,
                parallel: false,
                branch: Some("feature".into()),
                ..sample()
            },
            0,
        );
        assert_eq!(c[0], "b (feature)");
    }

    #[test]
    fn the_state_is_the_lock_then_waiting_then_the_last_runs_end() {
        use Outcome::*;
        assert_eq!(
            state_of(Some(None), true, Some(Failed), true, 10),
            State::Running
        );
        assert_eq!(
            state_of(Some(Some(11)), false, None, true, 10),
            State::Paused { until: 11 }
        );
        assert_eq!(
            state_of(Some(Some(10)), false, None, true, 10),
            State::Running,
            "over"
        );
        assert_eq!(
            state_of(None, true, Some(Complete), true, 10),
            State::Waiting
        );
        assert_eq!(
            state_of(Some(Some(70)), true, None, true, 10),
            State::Asking { until: 70 },
            "running, waiting for an answer"
        );
        assert_eq!(
            state_of(Some(None), true, None, true, 10),
            State::Running,
            "WAITING just written: not waiting for an answer yet"
        );
        assert_eq!(
            state_of(None, false, Some(Complete), true, 10),
            State::Ended(Complete)
        );
        assert_eq!(state_of(None, false, None, true, 10), State::Killed);
        assert_eq!(state_of(None, false, None, false, 10), State::Idle);
    }

    #[test]
    fn elapsed_counts_a_resumed_runs_earlier_time() {
        let s = Duration::from_secs;
        assert_eq!(elapsed_of(Some(s(5)), Some((1, 60.0)), None), s(65));
        assert_eq!(elapsed_of(Some(s(5)), Some((0, 60.0)), None), s(5));
        assert_eq!(elapsed_of(None, Some((2, 60.0)), Some(90.0)), s(90));
        assert_eq!(elapsed_of(None, Some((0, 42.0)), None), s(42));
        assert_eq!(elapsed_of(None, None, Some(-3.0)), s(0));
        assert_eq!(elapsed_of(None, None, None), s(0));
    }

    #[test]
    fn a_complete_run_with_steps_open_since_says_so() {
        let done = Row {
            state: State::Ended(Outcome::Complete),
            spec: Some((3, 3)),
            ..sample()
        };
        assert_eq!(state_cell(&done, 0), "complete");
        let added = Row {
            spec: Some((3, 4)),
            ..done.clone()
        };
        assert_eq!(state_cell(&added, 0), "complete, 1 open");
        let failed = Row {
            state: State::Ended(Outcome::Failed),
            ..added
        };
        assert_eq!(state_cell(&failed, 0), "failed", "open steps are no news");
    }

    #[test]
    fn verdicts_fit_their_column_in_words() {
        assert_eq!(verdicts(None, None), "-");
        assert_eq!(verdicts(Some(true), None), "gate ok");
        assert_eq!(
            verdicts(Some(true), Some(Judgement::Approved)),
            "gate ok · review ok"
        );
        assert_eq!(
            verdicts(Some(false), Some(Judgement::NoVerdict)),
            "gate failed · review no verdict"
        );
        assert_eq!(verdicts(None, Some(Judgement::Rejected)), "review rejected");
    }

    #[test]
    fn a_row_serialises_as_scripts_read_it() {
        let row = Row {
            state: State::Paused { until: 90 },
            stream: Some((4, PathBuf::from("/p/.ralph/runs/x/session-4.jsonl"))),
            ..sample()
        };
        let v = serde_json::to_value(&row).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "name": "a", "worker": null, "branch": "ralph/a", "path": "/p", "agent": "claude",
                "state": {"kind": "paused", "until": "1970-01-01T00:01:30Z"},
                "iteration": 2, "max_iterations": 50,
                "spec": {"done": 1, "total": 3}, "step": "2 Second step",
                "elapsed_s": 125, "cost_usd": 0.5, "tokens": 0, "gate": false, "review": "rejected",
                "run_id": null, "pid": 1, "waiting": null, "question": null, "session": 4
            })
        );
        let asking = Row {
            state: State::Asking { until: 90 },
            waiting: Some("Which db?".into()),
            question: Some(
                crate::work::question::Question::new(
                    "Which db?",
                    Some(crate::work::question::Blocker::Decision),
                    &["Postgres".into(), "SQLite".into()],
                )
                .unwrap(),
            ),
            ..sample()
        };
        let v = serde_json::to_value(&asking).unwrap();
        assert_eq!(
            (&v["state"], &v["question"]),
            (
                &serde_json::json!({"kind": "waiting", "until": "1970-01-01T00:01:30Z"}),
                &serde_json::json!({"text": "Which db?", "blocker": "decision", "options": ["Postgres", "SQLite"]})
            )
        );
        let ended = Row {
            state: State::Ended(Outcome::IterationLimit),
            ..sample()
        };
        assert_eq!(
            serde_json::to_value(&ended).unwrap()["state"],
            serde_json::json!({"kind": "ended", "outcome": "iteration-limit"})
        );
    }

    #[test]
    fn each_state_reads_as_a_user_would_say_it() {
        for (s, t) in [
            (State::Waiting, "WAITING"),
            (State::Ended(Outcome::Complete), "complete"),
            (State::Ended(Outcome::Interrupted), "stopped"),
            (State::Killed, "killed"),
            (State::Ended(Outcome::CostLimit), "cost limit reached"),
            (State::Idle, "no run yet"),
            (State::Paused { until: 5 }, "paused 0s"),
            (State::Asking { until: 610 }, "WAITING, 10m left"),
        ] {
            assert_eq!(state_text(&s, 10), t);
        }
    }
}
