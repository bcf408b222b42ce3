use anyhow::Result;
use clap::Args;
use serde::Serialize;

use super::Run;
use crate::exit::ExitStatus;
use crate::fsutil;
use crate::history::events;
use crate::history::records::{ReviewRecord, RunDir, Summary};
use crate::outln;
use crate::run::engine::Outcome;
use crate::run::lock as runlock;
use crate::work::gate::Verdict;
use crate::work::project::Project;
use crate::work::{sentinel, spec};

/// A line of the report: spec steps, sentinel texts and reasons come from
/// the repository or a session, so their control characters are shown.
macro_rules! show {
    ($($t:tt)*) => { outln!("{}", crate::output::visible(&format!($($t)*))) };
}

/// Show where the work stands.
///
/// Spec progress and the next open step, the sentinels (COMPLETE, WAITING)
/// with their reason and time, whether a loop is running, and the last run's
/// summary.
#[derive(Debug, Args)]
pub struct Status {
    /// Print the status as JSON.
    #[arg(long)]
    json: bool,

    /// Every loop of this repository: the main checkout and each worktree
    #[arg(long, conflicts_with = "remote")]
    all: bool,

    /// A run shared by many machines, from the remote `origin` alone: each
    /// step's claim (machine, since when, lease left), its pushed branch,
    /// and whether it is merged (see `ralph worker --next`)
    #[arg(long)]
    remote: bool,

    #[command(flatten)]
    on: super::steps::On,
}

/// One loop of the repository, for `status --all`.
#[derive(Debug, Serialize)]
struct LoopLine {
    name: String,
    path: std::path::PathBuf,
    branch: Option<String>,
    running: Option<Brief>,
    spec: Option<Progress>,
    cost_usd: Option<f64>,
    iteration: Option<u32>,
    last_outcome: Option<LastOutcome>,
    waiting: Option<String>,
    /// The pull request its newest run with `--pr` opened or updated.
    pull_request: Option<crate::history::records::PullShown>,
}

#[derive(Debug, Serialize)]
struct Brief {
    pid: u32,
    iteration: u32,
    max_iterations: u32,
    run_id: String,
}

#[derive(Debug, Serialize)]
struct Progress {
    done: usize,
    total: usize,
}

#[derive(Debug, Serialize)]
struct LastOutcome {
    outcome: Outcome,
    reason: String,
}

impl LoopLine {
    fn of(name: String, root: &std::path::Path, branch: Option<String>) -> LoopLine {
        let project = Project::at(root);
        let running = runlock::running(&project.lock());
        let spec = fsutil::read_optional(&project.spec())
            .ok()
            .flatten()
            .map(|t| spec::parse(&t));
        let runs = project.runs();
        let run = match &running {
            Some(l) => Some(RunDir::open(&runs, &l.run_id)),
            None => RunDir::latest(&runs),
        };
        let saved = run.as_ref().and_then(RunDir::state);
        LoopLine {
            name,
            path: root.to_path_buf(),
            branch,
            running: running.map(|l| Brief {
                pid: l.pid,
                iteration: l.iteration,
                max_iterations: l.max_iterations,
                run_id: l.run_id,
            }),
            spec: spec.map(|s| Progress {
                done: s.done(),
                total: s.total(),
            }),
            cost_usd: saved.as_ref().map(|s| s.state.cost_usd),
            iteration: saved.as_ref().map(|s| s.state.iteration),
            last_outcome: run.as_ref().and_then(RunDir::summary).map(|s| LastOutcome {
                outcome: s.outcome,
                reason: s.reason,
            }),
            waiting: sentinel::Waiting::read(&project.waiting())
                .ok()
                .flatten()
                .map(|w| w.reason),
            pull_request: pull_request_of(&project),
        }
    }

    fn render(&self) {
        let running = match &self.running {
            Some(r) => format!(
                "running (pid {}, iteration {}/{})",
                r.pid, r.iteration, r.max_iterations
            ),
            None => "not running".into(),
        };
        let spec = self.spec.as_ref().map_or("no spec".to_string(), |s| {
            format!("spec {}/{}", s.done, s.total)
        });
        let cost = self
            .cost_usd
            .map_or(String::new(), |c| format!(", {}", crate::output::usd(c)));
        let last = self
            .last_outcome
            .as_ref()
            .map_or(String::new(), |o| format!(", last: {}", o.outcome.text()));
        show!(
            "{:<12} {:<20} {running}, {spec}{cost}{last}",
            self.name,
            self.branch.as_deref().unwrap_or("(detached)")
        );
        if let Some(w) = &self.waiting {
            show!("{:<12} WAITING: {w}", "");
        }
        if let Some(p) = &self.pull_request {
            let state = if p.draft { "draft" } else { "ready for review" };
            show!(
                "{:<12} pr: #{} ({state}) {}",
                "",
                p.number,
                crate::output::visible_line(&p.url)
            );
        }
    }
}

/// The pull request a loop's newest run with `--pr` opened or updated, as
/// ralph's own record of it says (else the newest run's summary).
fn pull_request_of(project: &Project) -> Option<crate::history::records::PullShown> {
    crate::history::invocation::load(&project.root)
        .and_then(|i| i.pull_request)
        .or_else(|| RunDir::latest(&project.runs())?.summary()?.pull_request)
}

fn all_loops(json_out: bool) -> Result<ExitStatus> {
    let here = std::env::current_dir()?;
    let main = crate::run::worktree::main_root(&here)?;
    let lines: Vec<LoopLine> = crate::run::worktree::loops(&main)?
        .into_iter()
        .map(|w| LoopLine::of(w.name(), &w.path, w.branch_name()))
        .collect();
    if json_out {
        outln!("{}", serde_json::to_string_pretty(&lines)?);
    } else {
        lines.iter().for_each(LoopLine::render);
    }
    Ok(ExitStatus::Success)
}

/// The newest run that is not running now: its summary, or for a run whose
/// loop was killed before writing one, what its saved state says.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum LastRun {
    Summary(Box<Summary>),
    Killed {
        run_id: String,
        outcome: Outcome,
        reason: &'static str,
        iterations: u32,
        sessions: u32,
        duration: String,
        cost_usd: f64,
    },
}

impl LastRun {
    fn outcome(&self) -> Outcome {
        match self {
            LastRun::Summary(s) => s.outcome,
            LastRun::Killed { outcome, .. } => *outcome,
        }
    }

    /// The line `status` shows for it.
    fn line(&self) -> String {
        let (id, outcome, reason, iterations, duration, cost, confined) = match self {
            LastRun::Summary(s) => (
                s.run_id.as_str(),
                s.outcome,
                s.reason.as_str(),
                s.iterations,
                s.duration.as_str(),
                crate::output::spent(s.cost_usd, s.cost_unknown)
                    + &if s.agent == crate::agent::Agent::default() {
                        String::new()
                    } else {
                        format!(", {}", s.agent)
                    },
                s.confined,
            ),
            LastRun::Killed {
                run_id,
                outcome,
                reason,
                iterations,
                duration,
                cost_usd,
                ..
            } => (
                run_id.as_str(),
                *outcome,
                *reason,
                *iterations,
                duration.as_str(),
                crate::output::usd(*cost_usd),
                false,
            ),
        };
        let confined = if confined { ", confined" } else { "" };
        let outcome = outcome.text();
        format!(
            "last run: {id} — {outcome} ({reason}), {}, {duration}, {cost}{confined}",
            crate::output::counted(iterations, "iteration", "iterations")
        )
    }
}

/// What the latest run's sessions changed of the protected files.
fn protected_touched(project: &Project) -> Vec<String> {
    let globs = crate::config::load(&project.config())
        .ok()
        .and_then(|c| c.gate.protect)
        .unwrap_or_default();
    let base = RunDir::latest(&project.runs())
        .and_then(|r| r.state())
        .and_then(|s| s.first_head);
    match base {
        Some(b) if !globs.is_empty() => {
            crate::run::progress::protected_changes(&project.root, &b, &globs)
                .map(|(f, _)| f)
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

fn last_run(project: &Project) -> Option<LastRun> {
    let running = runlock::running(&project.lock()).map(|l| l.run_id);
    RunDir::newest_first(&project.runs()).find_map(|run| {
        if running.as_deref() == Some(run.id.as_str()) {
            return None;
        }
        if let Some(s) = run.summary() {
            return Some(LastRun::Summary(Box::new(s)));
        }
        let saved = run.state()?;
        Some(LastRun::Killed {
            run_id: run.id,
            outcome: Outcome::EndedAbnormally,
            reason: "the loop was killed; its sessions were not all cleaned up yet (the next `ralph loop` does that; `ralph loop --resume` goes on with the run)",
            iterations: saved.state.iteration,
            sessions: saved.state.sessions,
            duration: crate::timefmt::human_duration(std::time::Duration::from_secs_f64(
                saved.elapsed_s,
            )),
            cost_usd: saved.state.cost_usd,
        })
    })
}

/// The last verdicts of the completion gate and of the reviewer: of the
/// running loop, else of the last run, as its events tell them.
fn verdicts(
    project: &Project,
    running: &Option<runlock::LockInfo>,
) -> (Option<Verdict>, Option<ReviewRecord>) {
    let runs = project.runs();
    let run = match running {
        Some(l) => Some(RunDir::open(&runs, &l.run_id)),
        None => RunDir::latest(&runs),
    };
    let Some(latest) = run.map(|r| events::Latest::of(events::newest_first(&r))) else {
        return (None, None);
    };
    (
        latest.gate.as_ref().and_then(events::gate_verdict),
        latest.review.as_ref().and_then(events::review_record),
    )
}

#[derive(Debug, Serialize)]
struct SpecView<'a> {
    done: usize,
    total: usize,
    next: Option<&'a spec::Step>,
    problems: &'a [spec::Problem],
}

#[derive(Debug, Serialize)]
struct CompleteView<'a> {
    #[serde(skip)]
    of: &'a sentinel::Complete,
    time: &'a Option<String>,
    file_time: &'a Option<String>,
    forced: bool,
    message: &'a str,
}

#[derive(Debug, Serialize)]
struct WaitingView<'a> {
    #[serde(skip)]
    of: &'a sentinel::Waiting,
    since: &'a Option<String>,
    reason: &'a str,
    /// What it asks, made safe to show: blocker and options.
    #[serde(skip_serializing_if = "Option::is_none")]
    question: Option<crate::work::question::Question>,
}

/// The running loop as shown: its lock record without the run's secret
/// (which marks its processes).
#[derive(Debug, Serialize)]
struct LoopView<'a> {
    pid: u32,
    start_time: u64,
    started_at: &'a str,
    run_id: &'a str,
    iteration: u32,
    max_iterations: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<(u32, u64)>,
    /// What this run has spent so far, from its saved state.
    cost_usd: f64,
    /// Its sessions' tokens so far (what a plan's limits count).
    tokens: u64,
    /// It waits before its next session (a usage limit until it resets,
    /// the pace): until when, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    paused: Option<PausedView>,
    /// Its agents, where it has more than one: which is in use, and which
    /// are at a usage limit until when.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    agents: Vec<AgentView>,
    /// The step the last sessions ended with still open, and how many did.
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<String>,
    step_sessions: u32,
}

#[derive(Debug, Serialize)]
struct PausedView {
    until: String,
    why: String,
}

#[derive(Debug, Serialize)]
struct AgentView {
    agent: crate::agent::Agent,
    in_use: bool,
    limited_until: Option<String>,
}

fn agent_views(saved: &crate::history::records::Saved) -> Vec<AgentView> {
    if saved.agents.len() < 2 {
        return Vec::new();
    }
    let now = std::time::SystemTime::now();
    saved
        .agents
        .iter()
        .enumerate()
        .map(|(i, &agent)| {
            let until = saved.state.limited_until.get(i).copied().unwrap_or(0);
            let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(until);
            AgentView {
                agent,
                in_use: saved.state.agent == i,
                limited_until: (at > now).then(|| crate::timefmt::rfc3339(at)),
            }
        })
        .collect()
}

impl LoopView<'_> {
    /// The running loop's lines: the loop, its stuck step, its agents.
    fn render(&self) {
        show!(
            "loop:    running, pid {}, started {}, iteration {}/{} (run {}), {}{} spent so far",
            self.pid,
            self.started_at,
            self.iteration,
            self.max_iterations,
            self.run_id,
            crate::output::usd(self.cost_usd),
            match self.tokens {
                0 => String::new(),
                n => format!(" and {}", crate::output::counted(n, "token", "tokens")),
            }
        );
        if let Some(p) = &self.paused {
            show!("paused:  until {} ({})", p.until, p.why);
        }
        if let Some(step) = &self.step {
            show!(
                "step:    {step}: {} in a row ended with it still open",
                crate::output::counted(self.step_sessions, "session", "sessions")
            );
        }
        if !self.agents.is_empty() {
            let each: Vec<String> = self
                .agents
                .iter()
                .map(|a| match (&a.limited_until, a.in_use) {
                    (Some(t), _) => format!("{} limited until {t}", a.agent),
                    (None, true) => format!("{} in use", a.agent),
                    (None, false) => format!("{} ready", a.agent),
                })
                .collect();
            show!("agents:  {}", each.join(", "));
        }
    }
}

impl<'a> LoopView<'a> {
    fn of(l: &'a runlock::LockInfo, project: &Project) -> Self {
        let saved = RunDir::valid_id(&l.run_id)
            .then(|| RunDir::open(&project.runs(), &l.run_id).state())
            .flatten();
        LoopView {
            agents: saved.as_ref().map(agent_views).unwrap_or_default(),
            step: saved.as_ref().and_then(|s| s.state.step.clone()),
            step_sessions: saved.as_ref().map_or(0, |s| s.state.step_sessions),
            tokens: saved.as_ref().map_or(0, |s| s.state.tokens),
            paused: l.waiting_until.as_ref().map(|(until, why)| PausedView {
                until: crate::timefmt::rfc3339(
                    std::time::UNIX_EPOCH + std::time::Duration::from_secs(*until),
                ),
                // Shown as visible text, whoever wrote the reason.
                why: crate::control::command::one_line(why, 300),
            }),
            cost_usd: saved.map_or(0.0, |s| s.state.cost_usd),
            pid: l.pid,
            start_time: l.start_time,
            started_at: &l.started_at,
            run_id: &l.run_id,
            iteration: l.iteration,
            max_iterations: l.max_iterations,
            session: l.session,
        }
    }
}

/// Where the work of one checkout stands: built once, printed as JSON or
/// rendered as text.
#[derive(Debug, Serialize)]
struct Report<'a> {
    project: &'a std::path::Path,
    spec: Option<SpecView<'a>>,
    complete: Option<CompleteView<'a>>,
    waiting: Option<WaitingView<'a>>,
    #[serde(rename = "loop")]
    running: Option<LoopView<'a>>,
    last_run: Option<LastRun>,
    gate: Option<Verdict>,
    /// `[gate] baseline`: what still fails as before the run, what it fixed.
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<crate::work::baseline::Judged>,
    /// The reviewer's last verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    review: Option<ReviewRecord>,
    /// Whether what the project's files would run is approved.
    config: String,
    /// The last session left changes uncommitted (and nothing committed them).
    left_uncommitted: bool,
    /// The last session checked a box but wrote no evidence: its number.
    #[serde(skip_serializing_if = "Option::is_none")]
    no_evidence: Option<u32>,
    /// The last session checked a box but changed nothing besides `.ralph/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    no_change: Option<u32>,
    /// Changes to `[gate] protect` files since the latest run began.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    protected: Vec<String>,
    /// The latest run's steps, workers and merges, when it ran them in
    /// parallel.
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel: Option<crate::run::engine::board::Board>,
    /// The pull request the newest run with `--pr` opened or updated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pull_request: Option<crate::history::records::PullShown>,
}

impl Report<'_> {
    fn render(&self, spec: &Option<spec::Spec>, spec_path: &std::path::Path) {
        show!("project: {}", self.project.display());
        match spec {
            None => show!(
                "spec:    none at {} (run /ralph-setup or `ralph init`)",
                spec_path.display()
            ),
            Some(s) => {
                show!("spec:    {}", s.progress());
                if let Some(next) = s.next_open() {
                    show!("next:    {}", next.describe());
                }
                for p in &s.problems {
                    show!("warning: line {}: {}", p.line, p.message);
                }
            }
        }
        match &self.complete {
            Some(c) => {
                let forced = if c.forced { " (forced)" } else { "" };
                let msg = if c.message.is_empty() {
                    String::new()
                } else {
                    format!(": {}", c.message)
                };
                show!("COMPLETE{}{forced}{msg}", c.of.since());
            }
            None => show!("COMPLETE: no"),
        }
        match &self.waiting {
            Some(w) => {
                show!("WAITING{}: {}", w.of.since(), w.reason);
                if let Some(q) = &w.question {
                    for line in q.lines().iter().skip(1) {
                        show!("         {line}");
                    }
                    show!("         {}", crate::run::asking::answer_todo(q));
                }
            }
            None => show!("WAITING: no"),
        }
        match &self.running {
            Some(l) => l.render(),
            None => show!("loop:    not running"),
        }
        show!("config:  {}", self.config);
        self.render_after();
    }

    /// The gate, the last run, and what the last session left undone.
    fn render_after(&self) {
        let against = self
            .baseline
            .as_ref()
            .map(crate::work::baseline::said)
            .unwrap_or_default();
        match &self.gate {
            Some(g) if g.passed => show!("gate:    passed at {}{against}", g.time),
            Some(Verdict {
                failed: Some(c),
                why: Some(w),
                time,
                ..
            }) => {
                show!("gate:    `{c}` failed ({w}) at {time}; see .ralph/gate-failed.md{against}")
            }
            _ => {}
        }
        if let Some(r) = &self.review {
            use crate::work::review::Judgement;
            let more = if matches!(r.verdict, Judgement::Approved | Judgement::Limited) {
                String::new()
            } else {
                "; see .ralph/review-failed.md".into()
            };
            show!(
                "review:  {} (session {}, {}){more}",
                r.line(),
                r.session,
                r.time
            );
        }
        if let Some(r) = &self.last_run {
            show!("{}", r.line());
            // How to go on from a limit, as the loop's end said it.
            if let Some(hint) = r.outcome().hint().filter(|_| r.outcome().code() == 4) {
                show!("          {hint}");
            }
        }
        if let Some(b) = &self.parallel {
            render_board(b);
        }
        if let Some(p) = &self.pull_request {
            let state = if p.draft { "draft" } else { "ready for review" };
            show!("pr:      #{} ({state}) {}", p.number, p.url);
        }
        for p in &self.protected {
            show!("protected: {p} (since the run began)");
        }
        if let Some(n) = self.no_change {
            show!("change:  session {n} checked a box but changed nothing besides .ralph/");
        }
        if let Some(n) = self.no_evidence {
            show!(
                "evidence: session {n} checked a box but wrote no evidence in .ralph/progress.md"
            );
        }
        if self.left_uncommitted {
            show!(
                "changes: the last session left changes uncommitted (see `git status`; `--commit auto` commits them)"
            );
        }
    }
}

/// Whether what the config would run is approved (read, never run).
fn config_standing(project: &Project) -> String {
    match crate::config::load(&project.config()) {
        Ok(c) => crate::trust::approval::standing(&project.root, &c)
            .text()
            .to_string(),
        Err(e) => format!("invalid: {e:#}"),
    }
}

/// A parallel run's board: a line per step it took up, where it is.
fn render_board(b: &crate::run::engine::board::Board) {
    use crate::run::engine::board::Place;
    let count = |p: Place| b.steps.values().filter(|s| s.place == p).count();
    show!(
        "parallel: up to {} at once · {} working · {} queued · {} merged{}",
        b.parallel,
        count(Place::Working) + count(Place::Resolving),
        count(Place::Queued),
        count(Place::Merged),
        match count(Place::Paused) {
            0 => String::new(),
            n => format!(" · {n} paused at its budget"),
        }
    );
    for (key, slot) in &b.steps {
        let place = match slot.place {
            Place::Working => "working",
            Place::Queued => "queued",
            Place::Resolving => "resolving a conflict",
            Place::Merged => "merged",
            Place::GaveUp => "stopped",
            Place::Paused => "paused at its budget",
            Place::Skipped => "skipped",
        };
        let note = slot
            .note
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        show!(
            "  {:<4} {place:<9} {key}{note}",
            slot.worker.as_deref().unwrap_or("-")
        );
    }
}

impl Run for Status {
    fn run(&self) -> Result<ExitStatus> {
        if self.all {
            return all_loops(self.json);
        }
        if self.remote {
            return super::remote_status::show(&self.on, self.json);
        }
        let project = Project::find()?;
        reported(&project, |report, spec| {
            if self.json {
                outln!("{}", serde_json::to_string_pretty(report)?);
            } else {
                report.render(spec, &project.spec());
            }
            Ok(ExitStatus::Success)
        })
    }
}

/// What `ralph status --json` prints for the checkout at `project`, as a
/// value (for the faces that are no terminal: `ralph mcp`).
pub fn json(project: &Project) -> Result<serde_json::Value> {
    reported(project, |report, _| Ok(serde_json::to_value(report)?))
}

/// Where the work of `project` stands, built once and handed to `f`.
fn reported<T>(
    project: &Project,
    f: impl FnOnce(&Report, &Option<spec::Spec>) -> Result<T>,
) -> Result<T> {
    let spec = fsutil::read_optional(&project.spec())?.map(|t| spec::parse(&t));
    let complete = sentinel::Complete::read(&project.complete())?;
    let waiting = sentinel::Waiting::read(&project.waiting())?;
    let running = runlock::running(&project.lock());
    let config = config_standing(project);
    // The last work session (review sessions change nothing).
    let last = RunDir::latest(&project.runs())
        .and_then(|r| events::Latest::of(events::newest_first(&r)).session_flags());
    let (gate, review) = verdicts(project, &running);
    // The running loop's, else the last run's.
    let baseline = match &running {
        Some(l) if RunDir::valid_id(&l.run_id) => RunDir::open(&project.runs(), &l.run_id)
            .state()
            .filter(|s| s.baseline.is_some())
            .and_then(|s| s.judged),
        _ => RunDir::latest(&project.runs())
            .and_then(|r| r.summary())
            .and_then(|s| s.baseline),
    };
    let report = Report {
        project: &project.root,
        spec: spec.as_ref().map(|s| SpecView {
            done: s.done(),
            total: s.total(),
            next: s.next_open(),
            problems: &s.problems,
        }),
        complete: complete.as_ref().map(|c| CompleteView {
            of: c,
            time: &c.completed,
            file_time: &c.file_time,
            forced: c.forced,
            message: &c.message,
        }),
        waiting: waiting.as_ref().map(|w| WaitingView {
            of: w,
            since: &w.since,
            reason: &w.reason,
            question: w.question(),
        }),
        running: running.as_ref().map(|l| LoopView::of(l, project)),
        // While a loop runs, its run is the one that matters.
        last_run: running.is_none().then(|| last_run(project)).flatten(),
        gate,
        baseline,
        review,
        config,
        left_uncommitted: last.as_ref().is_some_and(|r| r.left_uncommitted),
        no_evidence: last.as_ref().filter(|r| r.no_evidence).map(|r| r.session),
        no_change: last.as_ref().filter(|r| r.no_change).map(|r| r.session),
        protected: protected_touched(project),
        parallel: RunDir::latest(&project.runs())
            .and_then(|r| crate::run::coordinator::board_of(&r.path)),
        // As ralph's record keeps it (no listing of every past run), or
        // as the newest run's summary says.
        pull_request: pull_request_of(project),
    };
    f(&report, &spec)
}
