//! A run's journal, `events.jsonl` in its run folder: one typed event a
//! line, appended as the run does things (sessions, the gate, reviews,
//! merges, pushes, notices, its end), each naming the worker that did it.
//! It is what faces read (`status`, `watch`, and the ones to come): one
//! model, whatever wrote it. A run from before the journal has none; its
//! events are derived from its records (`derive`), so a reader sees the
//! same model for old runs.
//!
//! The schema is versioned (`"v": 1` on every line) and documented in the
//! README ("Events"): within a version fields are only added, never renamed
//! or removed, and a reader skips a line it cannot read (a kind from a
//! later ralph), as `read_lines` does.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::records::{Record, ReviewRecord, RunDir, Saved, Summary, Tokens};
use crate::run::engine::{Outcome, SessionOutcome};
use crate::work::review::Judgement;

/// The schema's version, on every line.
pub const VERSION: u32 = 1;

/// The journal's file name in the run folder.
pub const FILE: &str = "events.jsonl";

/// A moment, in milliseconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct At(pub u64);

impl At {
    pub fn now() -> At {
        At::of(SystemTime::now())
    }

    pub fn of(t: SystemTime) -> At {
        At(t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis().min(u128::from(u64::MAX)) as u64))
    }

    /// A time as ralph's records keep it (`2026-11-22T21:30:05Z`).
    pub fn parse(rfc3339: &str) -> Option<At> {
        humantime::parse_rfc3339(rfc3339).ok().map(At::of)
    }

    /// `d` later.
    pub fn after(self, d: Duration) -> At {
        At(self
            .0
            .saturating_add(d.as_millis().min(u128::from(u64::MAX)) as u64))
    }

    pub fn time(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0)
    }

    /// As ralph shows times: RFC 3339, whole seconds.
    pub fn rfc3339(self) -> String {
        crate::timefmt::rfc3339(self.time())
    }
}

/// Durations on the wire: seconds, fractional (`duration_s`), as the
/// records keep them.
mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let f = f64::deserialize(d)?;
        Duration::try_from_secs_f64(f).map_err(serde::de::Error::custom)
    }
}

/// How the run was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One session at a time.
    Loop,
    /// `--parallel N`: workers in worktrees, merged one at a time.
    Parallel,
    /// `ralph merge`: steps done elsewhere, merged here.
    Merge,
    /// A worker of a parallel run (its lines carry `worker` and `step`).
    Worker,
}

/// The limits a run started with (those a face shows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunLimits {
    pub max_iterations: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "opt_secs",
        rename = "max_time_s"
    )]
    pub max_time: Option<Duration>,
}

mod opt_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|f| Duration::try_from_secs_f64(f).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// What became of a pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrChange {
    Opened,
    Updated,
    /// As an old run's summary kept it: opened or updated, not known.
    Recorded,
}

/// One thing a run did. `kind` names it on the wire (snake case).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// The run began (or a saved run went on: `resumed` > 0).
    RunStarted {
        run_id: String,
        mode: Mode,
        #[serde(default)]
        resumed: u32,
        agent: crate::agent::Agent,
        limits: RunLimits,
    },
    /// A session was started (a work session, or a review's).
    SessionStarted {
        session: u32,
        iteration: u32,
        agent: crate::agent::Agent,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        review: bool,
        /// Where the run stood as a work session began (added in 1.x of
        /// the schema: absent from older lines).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        standing: Option<Standing>,
        /// What a review session judges (`the whole run`, steps).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subject: Option<String>,
    },
    /// A session ended, with what it used.
    SessionEnded {
        session: u32,
        iteration: u32,
        outcome: SessionOutcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(with = "secs", rename = "duration_s")]
        duration: Duration,
        tokens: Tokens,
        /// `None`: not known (no price for its model).
        cost_usd: Option<f64>,
        agent: crate::agent::Agent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        review: bool,
        /// It left changes uncommitted (and `auto_commit` names the commit
        /// `--commit auto` made of them).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        left_uncommitted: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auto_commit: Option<String>,
        /// It checked a box with no evidence in `.ralph/progress.md`, or
        /// with no change besides `.ralph/`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        no_evidence: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        no_change: bool,
    },
    /// The project's gate ran.
    Gate {
        passed: bool,
        /// The command that failed, and how (`exit status 1`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
        started: At,
        #[serde(with = "secs", rename = "duration_s")]
        duration: Duration,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log: Option<PathBuf>,
    },
    /// A review session's verdict.
    Review {
        session: u32,
        /// `the whole run`, or the steps it judged.
        of: String,
        verdict: Judgement,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        findings: Vec<String>,
        cost_usd: f64,
    },
    /// A step's branch merged into the run's branch (the gate passed on
    /// it); the line's `step` names it, `worker` its worker.
    Merged {
        #[serde(with = "secs", rename = "duration_s")]
        duration: Duration,
        /// The branch it was merged into.
        #[serde(default)]
        into: String,
    },
    /// A step's merge (the line's `step`) conflicted in these files.
    Conflicted { files: Vec<String> },
    /// The run's branch pushed (`rebased`: onto a remote that had moved).
    Pushed {
        branch: String,
        remote: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        rebased: bool,
        /// Why the remote refused the first push, when it was `rebased`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rejected: Option<String>,
    },
    /// A push that needs a human.
    PushRefused {
        branch: String,
        remote: String,
        why: String,
    },
    /// The run's pull request, opened or updated.
    PullRequest {
        number: u64,
        url: String,
        draft: bool,
        change: PrChange,
    },
    /// No pull request, and why.
    PullRequestRefused {
        why: String,
        /// The branch that stays pushed.
        #[serde(default)]
        branch: String,
    },
    /// A notice was sent (or failed) on one channel.
    Notice {
        notice: crate::notify::Event,
        channel: String,
        ok: bool,
    },
    /// The run waits before its next session until `until` (a usage limit,
    /// the pace).
    Paused { why: String, until: At },
    /// The run needs a human and waits for an answer (`--wait-for-answer`):
    /// why (`outcome`), and what it asks (a session's question, or ralph's
    /// own reason).
    Asked {
        outcome: Outcome,
        question: crate::work::question::Question,
        /// Until when it waits.
        until: At,
    },
    /// A human answered (`by`: `terminal`, `watch`, `mcp`, `github:<login>`);
    /// the run goes on, the answer handed to its next session.
    Answered {
        answer: crate::work::question::Answer,
        by: String,
    },
    /// A command sent to the running loop (`ralph stop`, `ralph raise`,
    /// `ralph mcp`), taken, and by whom.
    Commanded {
        command: crate::control::Command,
        by: String,
    },
    /// Before the first session: what the open steps will likely cost and
    /// take, from past steps (`estimate`: none without enough of them).
    Estimated {
        steps: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimate: Option<crate::history::estimate::Estimate>,
        /// Without one: the model's price, where ralph knows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        price: Option<(String, crate::agent::prices::Price)>,
    },
    /// The run ended complete.
    Complete {
        reason: String,
        /// What the run came to (absent from older lines).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        totals: Option<Totals>,
    },
    /// The run ended waiting for a human (`.ralph/WAITING` says why).
    Waiting {
        outcome: Outcome,
        reason: String,
        /// What the run came to (absent from older lines).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        totals: Option<Totals>,
    },
    /// The run ended otherwise (a limit, a failure, interrupted, a
    /// worker's step done).
    Stopped {
        outcome: Outcome,
        reason: String,
        /// What the run came to (absent from older lines).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        totals: Option<Totals>,
    },
}

/// Where a run stood as a session began: what its line says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    pub max_iterations: u32,
    /// The spec's boxes (`3/9`), or that it has none.
    pub spec: String,
    #[serde(with = "secs", rename = "elapsed_s")]
    pub elapsed: Duration,
    pub cost_usd: f64,
    /// Some session's cost was not known (no price for its model).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_unknown: bool,
}

/// What a run came to, on its end's line: what its summary says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub iterations: u32,
    pub sessions: u32,
    #[serde(with = "secs", rename = "duration_s")]
    pub duration: Duration,
    #[serde(default)]
    pub reviews: u32,
    pub cost_usd: f64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_unknown: bool,
    pub tokens: Tokens,
    /// Commits the run made on its branch, when git could count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commits: Option<u64>,
    pub spec: String,
}

impl Totals {
    pub fn of(s: &Summary) -> Totals {
        Totals {
            iterations: s.iterations,
            sessions: s.sessions,
            duration: Duration::try_from_secs_f64(s.duration_s).unwrap_or_default(),
            reviews: s.reviews,
            cost_usd: s.cost_usd,
            cost_unknown: s.cost_unknown,
            tokens: s.tokens.clone(),
            commits: s.commits,
            spec: s.spec.clone(),
        }
    }
}

/// One line of the journal: the version, when, who, and the event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub v: u32,
    pub at: At,
    /// The worker of a parallel run that did it (`w1`...), and its step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(flatten)]
    pub event: Event,
}

impl Line {
    pub fn new(at: At, event: Event) -> Line {
        Line {
            v: VERSION,
            at,
            worker: None,
            step: None,
            event,
        }
    }

    /// Its text in the journal, newline included.
    pub fn to_text(&self) -> Option<String> {
        serde_json::to_string(self).ok().map(|l| l + "\n")
    }

    /// A journal line, if this ralph can read it: of version 1 and a kind
    /// it knows. Anything else (a later kind, a later version, a cut line)
    /// is `None`, for the reader to skip.
    pub fn parse(text: &str) -> Option<Line> {
        let l: Line = serde_json::from_str(text).ok()?;
        (l.v == VERSION).then_some(l)
    }

    pub fn is_end(&self) -> bool {
        self.event.end().is_some()
    }
}

impl Event {
    /// A run's end: what it came to, and why.
    pub fn end(&self) -> Option<(Outcome, &str)> {
        match self {
            Event::Complete { reason, .. } => Some((Outcome::Complete, reason)),
            Event::Waiting {
                outcome, reason, ..
            }
            | Event::Stopped {
                outcome, reason, ..
            } => Some((*outcome, reason)),
            _ => None,
        }
    }
}

/// The lines of a journal's text that this ralph can read, in order.
pub fn read_lines(text: &str) -> Vec<Line> {
    text.lines().filter_map(Line::parse).collect()
}

/// The events a record of a session stands for: its end, at `at` (and a
/// review session's verdict, at its time). Both what the run appends (`at`
/// now, once its round is judged: the record keeps its end in whole
/// seconds, which could read as before its start) and what old runs are
/// derived from (`at` its end).
pub fn of_record(r: &Record, at: At) -> Vec<Line> {
    let ended = Event::SessionEnded {
        session: r.session,
        iteration: r.iteration,
        outcome: r.outcome.clone(),
        exit_code: r.exit_code,
        duration: Duration::try_from_secs_f64(r.duration_s).unwrap_or_default(),
        tokens: r.tokens.clone(),
        cost_usd: (!r.cost_unknown).then_some(r.cost_usd),
        agent: r.agent,
        model: r.model.clone(),
        review: r.review.is_some(),
        left_uncommitted: r.left_uncommitted,
        auto_commit: r.auto_commit.clone(),
        no_evidence: r.no_evidence,
        no_change: r.no_change,
    };
    let mut out = vec![by(Line::new(at, ended), r)];
    if let Some(rv) = &r.review {
        out.push(by(review_line(rv), r));
    }
    out
}

fn by(mut l: Line, r: &Record) -> Line {
    l.worker = r.worker.clone();
    l.step = r.step.clone();
    l
}

/// A review's verdict as a line, at the time its record says.
pub fn review_line(r: &ReviewRecord) -> Line {
    Line::new(
        At::parse(&r.time).unwrap_or_else(At::now),
        Event::Review {
            session: r.session,
            of: r.of.clone(),
            verdict: r.verdict,
            findings: r.findings.clone(),
            cost_usd: r.cost_usd,
        },
    )
}

/// The review a `review` line says, as status shows it.
pub fn review_record(l: &Line) -> Option<ReviewRecord> {
    match &l.event {
        Event::Review {
            session,
            of,
            verdict,
            findings,
            cost_usd,
        } => Some(ReviewRecord {
            session: *session,
            of: of.clone(),
            verdict: *verdict,
            findings: findings.clone(),
            time: l.at.rfc3339(),
            cost_usd: *cost_usd,
        }),
        _ => None,
    }
}

/// A gate's verdict as a line, at its end.
pub fn gate_line(v: &crate::work::gate::Verdict) -> Line {
    let started = At::parse(&v.time).unwrap_or_else(At::now);
    let duration = Duration::try_from_secs_f64(v.duration_s).unwrap_or_default();
    Line::new(
        At(started.0 + duration.as_millis() as u64),
        Event::Gate {
            passed: v.passed,
            failed: v.failed.clone(),
            why: v.why.clone(),
            started,
            duration,
            log: v.log.clone(),
        },
    )
}

/// The gate's verdict a `gate` line says, as status shows it.
pub fn gate_verdict(l: &Line) -> Option<crate::work::gate::Verdict> {
    match &l.event {
        Event::Gate {
            passed,
            failed,
            why,
            started,
            duration,
            log,
        } => Some(crate::work::gate::Verdict {
            passed: *passed,
            failed: failed.clone(),
            why: why.clone(),
            time: started.rfc3339(),
            duration_s: duration.as_secs_f64(),
            log: log.clone(),
            tail: Vec::new(),
            interrupted: false,
            ran: Vec::new(),
        }),
        _ => None,
    }
}

/// How a run's end is told: complete, waiting for a human, or stopped,
/// with what it came to (`totals`) when that is known.
pub fn end_event(outcome: Outcome, reason: &str, totals: Option<Totals>) -> Event {
    let reason = reason.to_string();
    match outcome {
        Outcome::Complete => Event::Complete { reason, totals },
        o if o == Outcome::Waiting || o.writes_waiting() => Event::Waiting {
            outcome,
            reason,
            totals,
        },
        outcome => Event::Stopped {
            outcome,
            reason,
            totals,
        },
    }
}

/// The events of a run that kept no journal, from what it did keep: its
/// saved state (start, limits, the last gate and review), its records (a
/// session each, and its gate), its summary (the end, the pull request).
/// Pure: the caller reads the files.
pub fn derive(
    run_id: &str,
    records: &[Record],
    saved: Option<&Saved>,
    summary: Option<&Summary>,
) -> Vec<Line> {
    let mut out = Vec::new();
    if let Some(s) = saved {
        let started = At::parse(&s.started).unwrap_or(At(0));
        let parallel = records.iter().any(|r| r.worker.is_some());
        out.push(Line::new(
            started,
            Event::RunStarted {
                run_id: run_id.to_string(),
                mode: if parallel { Mode::Parallel } else { Mode::Loop },
                resumed: s.resumed,
                agent: s.agents.first().copied().unwrap_or_default(),
                limits: RunLimits {
                    max_iterations: s.limits.max_iterations,
                    max_cost_usd: s.limits.max_cost,
                    max_time: s.limits.max_time,
                },
            },
        ));
    }
    for r in records {
        let start = Line::new(
            At::parse(&r.start).unwrap_or(At(0)),
            Event::SessionStarted {
                session: r.session,
                iteration: r.iteration,
                agent: r.agent,
                review: r.review.is_some(),
                standing: None,
                subject: None,
            },
        );
        out.push(by(start, r));
        // As a run appends them: a session's end once its round is judged,
        // after the gate that judged it.
        if let Some(g) = &r.gate {
            out.push(by(gate_line(g), r));
        }
        out.extend(of_record(r, At::parse(&r.end).unwrap_or(At(0))));
    }
    // What the state keeps last and no record has (a gate after a merge,
    // a review of the whole run appended by no session's record).
    if let Some(g) = saved.and_then(|s| s.last_gate.as_ref()) {
        let line = gate_line(g);
        if last_of(&out, |l| matches!(l.event, Event::Gate { .. })) != Some(&line) {
            out.push(line);
        }
    }
    if let Some(r) = saved.and_then(|s| s.last_review.as_ref()) {
        let line = review_line(r);
        let known = out.iter().any(|l| l.event == line.event);
        if !known {
            out.push(line);
        }
    }
    if let Some(s) = summary {
        let at = At::parse(&s.ended).unwrap_or(At(0));
        if let Some(p) = &s.pull_request {
            out.push(Line::new(
                at,
                Event::PullRequest {
                    number: p.number,
                    url: p.url.clone(),
                    draft: p.draft,
                    change: PrChange::Recorded,
                },
            ));
        }
        out.push(Line::new(
            at,
            end_event(s.outcome, &s.reason, Some(Totals::of(s))),
        ));
    }
    out
}

fn last_of(lines: &[Line], f: impl Fn(&Line) -> bool) -> Option<&Line> {
    lines.iter().rev().find(|l| f(l))
}

/// Where a run's events are appended, and by whom: cheap to make and to
/// clone (it holds the run folder open, as the run does). A write that
/// fails is said on stderr and never fails the run: the journal reports
/// what happened, it decides nothing.
#[derive(Clone)]
pub struct Journal {
    path: Option<PathBuf>,
    /// Kept open while the path (through it) is in use.
    _dir: Option<std::sync::Arc<std::fs::File>>,
    worker: Option<(String, String)>,
}

impl Journal {
    /// The journal of `run`: nothing is written when its folder is not
    /// held (a link, or gone).
    pub fn of(run: &RunDir) -> Journal {
        let dir = run.handle();
        Journal {
            path: dir.as_ref().map(|_| run.file(FILE)),
            _dir: dir,
            worker: None,
        }
    }

    /// A journal that writes nothing (tests, runs with no folder).
    pub fn none() -> Journal {
        Journal {
            path: None,
            _dir: None,
            worker: None,
        }
    }

    /// Its lines name this worker and step.
    pub fn by(mut self, worker: Option<(&str, &str)>) -> Journal {
        self.worker = worker.map(|(w, s)| (w.to_string(), s.to_string()));
        self
    }

    /// Append `event`, happening now.
    pub fn add(&self, event: Event) {
        self.line(Line::new(At::now(), event));
    }

    /// Append `event` about `step` (a merge's), done by `worker`.
    pub fn add_of(&self, step: &str, worker: Option<&str>, event: Event) {
        let mut line = Line::new(At::now(), event);
        line.step = Some(step.to_string());
        line.worker = worker.map(str::to_string);
        self.line(line);
    }

    /// Append a line, named by this journal's worker (when it has one).
    pub fn line(&self, mut line: Line) {
        if let Some((w, s)) = &self.worker {
            line.worker = Some(w.clone());
            line.step = Some(s.clone());
        }
        self.write(&line);
    }

    /// Append a line as it is (a worker's, adopted by its run).
    fn write(&self, line: &Line) {
        let Some(path) = &self.path else { return };
        let Some(text) = line.to_text() else { return };
        if let Err(e) = crate::fsutil::append_regular(path, text.as_bytes()) {
            eprintln!("ralph: could not append to the run's {FILE}: {e:#}");
        }
    }

    /// A session's record, as events.
    pub fn record(&self, r: &Record) {
        for l in of_record(r, At::now()) {
            self.line(l);
        }
    }

    /// A worker's journal (its run folder's) appended to this one's, each
    /// line named by that worker whatever it says (a worker's run folder is
    /// where its sessions write); read bounded, unreadable lines skipped.
    pub fn adopt(&self, from: &RunDir, worker: &str) {
        for mut l in read_file(&from.file(FILE)).unwrap_or_default() {
            l.worker = Some(worker.to_string());
            self.write(&l);
        }
    }

    /// Before a run writes its first line: a run that kept no journal
    /// (resumed from an older ralph) gets its past derived first, so its
    /// journal tells the whole run.
    pub fn seed(&self, run: &RunDir) {
        let Some(path) = &self.path else { return };
        if std::fs::symlink_metadata(path).is_ok() {
            return;
        }
        let records = run.records();
        if records.is_empty() && run.state().is_none() {
            return;
        }
        for l in derive(&run.id, &records, run.state().as_ref(), None) {
            self.write(&l);
        }
    }
}

/// A journal file's lines, bounded (`RUN_FILE_CAP`, its newest part
/// kept), never through a link; `None` when there is none.
fn read_file(path: &Path) -> Option<Vec<Line>> {
    let cap = crate::fsutil::RUN_FILE_CAP;
    crate::fsutil::open_regular(path).ok()?;
    let mut lines: Vec<Line> = crate::fsutil::lines_from_end(path, cap)
        .filter_map(|l| Line::parse(&l))
        .collect();
    lines.reverse();
    Some(lines)
}

/// A run's events, oldest first: its journal, else (a run from before
/// journals) derived from its records.
pub fn read(run: &RunDir) -> Vec<Line> {
    read_file(&run.file(FILE)).unwrap_or_else(|| {
        derive(
            &run.id,
            &run.records(),
            run.state().as_ref(),
            run.summary().as_ref(),
        )
    })
}

/// How far into a journal its first `run_started` is looked for: it is the
/// first line ralph writes.
const START_READ: u64 = 1 << 20;

/// A run's first `run_started`, read from the journal's head only (a face
/// polling a long journal reads none of the rest); derived for old runs.
pub fn first_start(run: &RunDir) -> Option<Line> {
    let path = run.file(FILE);
    let is_start = |l: &Line| matches!(l.event, Event::RunStarted { .. });
    match crate::fsutil::read_head(&path, START_READ) {
        Ok(Some(text)) => text.lines().filter_map(Line::parse).find(is_start),
        _ => read(run).into_iter().find(is_start),
    }
}

/// A run's events, newest first, read from the journal's end only as far
/// as the caller goes (a face polling a long run); derived for old runs.
pub fn newest_first(run: &RunDir) -> Box<dyn Iterator<Item = Line>> {
    let path = run.file(FILE);
    if crate::fsutil::open_regular(&path).is_ok() {
        Box::new(
            crate::fsutil::lines_from_end(&path, crate::fsutil::RUN_FILE_CAP)
                .filter_map(|l| Line::parse(&l)),
        )
    } else {
        Box::new(read(run).into_iter().rev())
    }
}

/// What faces show of a run's events: the last gate, the last review, the
/// last work session's end (`None` where the run has none).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Latest {
    pub gate: Option<Line>,
    pub review: Option<Line>,
    pub session: Option<Line>,
}

/// The most journal lines `Latest` looks back through: a journal a session
/// filled with other lines is not read whole by every face that polls it.
const LOOK_BACK: usize = 20_000;

impl Latest {
    /// From events newest first: stops once it has all three, or after
    /// `LOOK_BACK` lines.
    pub fn of(lines: impl Iterator<Item = Line>) -> Latest {
        let mut l = Latest::default();
        for line in lines.take(LOOK_BACK) {
            // The run's own gate and reviewer: a worker's (adopted from its
            // journal) judged its step, not the run.
            let own = line.worker.is_none();
            match &line.event {
                Event::Gate { .. } if own && l.gate.is_none() => l.gate = Some(line),
                Event::Review { .. } if own && l.review.is_none() => l.review = Some(line),
                Event::SessionEnded { review: false, .. } if l.session.is_none() => {
                    l.session = Some(line)
                }
                _ => {}
            }
            if l.gate.is_some() && l.review.is_some() && l.session.is_some() {
                break;
            }
        }
        l
    }

    /// The last work session's end as its fields: (session, model,
    /// left uncommitted with nothing committing it, no evidence, no change).
    pub fn session_flags(&self) -> Option<SessionFlags> {
        match &self.session.as_ref()?.event {
            Event::SessionEnded {
                session,
                model,
                left_uncommitted,
                auto_commit,
                no_evidence,
                no_change,
                ..
            } => Some(SessionFlags {
                session: *session,
                model: model.clone(),
                left_uncommitted: *left_uncommitted && auto_commit.is_none(),
                no_evidence: *no_evidence,
                no_change: *no_change,
            }),
            _ => None,
        }
    }
}

/// What a face says of the last work session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFlags {
    pub session: u32,
    pub model: Option<String>,
    pub left_uncommitted: bool,
    pub no_evidence: bool,
    pub no_change: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::stream::Limit;
    use crate::run::engine::Limits;

    /// A record as an older ralph wrote it (no journal then).
    fn old_record(session: u32, extra: &str) -> Record {
        let text = format!(
            r#"{{"iteration":{session},"session":{session},"counted":true,"session_id":"s","pid":7,
            "start":"2026-01-01T00:0{session}:00Z","end":"2026-01-01T00:0{session}:30Z","duration_s":30.5,
            "exit_code":0,"outcome":"ok","is_error":false,"cost_usd":0.25,
            "tokens":{{"input":10,"output":20,"cache_read":0,"cache_creation":0}},"num_turns":3,
            "results":1,"tool_calls":2,"head_before":null,"head_after":null,"spec_before":"0/2",
            "spec_after":"1/2","leftovers_ended":0,"stream_file":null{extra}}}"#
        );
        serde_json::from_str(&text.replace('\n', "")).unwrap()
    }

    fn every_kind() -> Vec<Event> {
        vec![
            Event::RunStarted {
                run_id: "r1".into(),
                mode: Mode::Parallel,
                resumed: 1,
                agent: crate::agent::Agent::Codex,
                limits: RunLimits {
                    max_iterations: 9,
                    max_cost_usd: Some(2.5),
                    max_time: Some(Duration::from_secs(90)),
                },
            },
            Event::SessionStarted {
                session: 2,
                iteration: 1,
                agent: crate::agent::Agent::Claude,
                review: true,
                standing: None,
                subject: Some("the whole run".into()),
            },
            Event::SessionStarted {
                session: 1,
                iteration: 1,
                agent: crate::agent::Agent::Claude,
                review: false,
                standing: Some(Standing {
                    max_iterations: 9,
                    spec: "1/3".into(),
                    elapsed: Duration::from_millis(61_500),
                    cost_usd: 0.25,
                    cost_unknown: true,
                }),
                subject: None,
            },
            Event::SessionEnded {
                session: 2,
                iteration: 1,
                outcome: SessionOutcome::Limited(Limit::Usage { reset_at: Some(5) }),
                exit_code: Some(1),
                duration: Duration::from_millis(1500),
                tokens: Tokens {
                    input: 1,
                    output: 2,
                    cache_read: 3,
                    cache_creation: 4,
                },
                cost_usd: None,
                agent: crate::agent::Agent::Pi,
                model: Some("m".into()),
                review: false,
                left_uncommitted: true,
                auto_commit: Some("abc".into()),
                no_evidence: true,
                no_change: true,
            },
            Event::Gate {
                passed: false,
                failed: Some("cargo test".into()),
                why: Some("exit status 1".into()),
                started: At(1_000),
                duration: Duration::from_millis(250),
                log: Some(PathBuf::from("/r/gate-001.log")),
            },
            Event::Review {
                session: 3,
                of: "the whole run".into(),
                verdict: Judgement::NoVerdict,
                findings: vec!["f".into()],
                cost_usd: 0.5,
            },
            Event::Merged {
                duration: Duration::from_millis(12),
                into: "main".into(),
            },
            Event::Conflicted {
                files: vec!["x.rs".into()],
            },
            Event::Pushed {
                branch: "ralph/x".into(),
                remote: "origin".into(),
                rebased: true,
                rejected: Some("fetch first".into()),
            },
            Event::PushRefused {
                branch: "ralph/x".into(),
                remote: "origin".into(),
                why: "no".into(),
            },
            Event::PullRequest {
                number: 4,
                url: "https://github.com/o/r/pull/4".into(),
                draft: true,
                change: PrChange::Opened,
            },
            Event::PullRequestRefused {
                why: "token".into(),
                branch: "ralph/x".into(),
            },
            Event::Notice {
                notice: crate::notify::Event::Complete,
                channel: "desktop".into(),
                ok: false,
            },
            Event::Paused {
                why: "usage limit".into(),
                until: At(9_000),
            },
            Event::Estimated {
                steps: 3,
                estimate: crate::history::estimate::estimate(
                    3,
                    &[crate::history::estimate::Step {
                        usd: 0.5,
                        sessions: 1.0,
                        secs: 60.0,
                    }; 4],
                    crate::history::estimate::Source::Project,
                    true,
                ),
                price: None,
            },
            Event::Complete {
                reason: "2/2 steps".into(),
                totals: Some(Totals {
                    iterations: 2,
                    sessions: 3,
                    duration: Duration::from_millis(90_250),
                    reviews: 1,
                    cost_usd: 0.75,
                    cost_unknown: false,
                    tokens: Tokens::default(),
                    commits: Some(2),
                    spec: "2/2".into(),
                }),
            },
            Event::Waiting {
                outcome: Outcome::Stuck,
                reason: "stuck".into(),
                totals: None,
            },
            Event::Stopped {
                outcome: Outcome::CostLimit,
                reason: "spent".into(),
                totals: None,
            },
        ]
    }

    #[test]
    fn every_kind_reads_back_whole_with_its_version_and_kind() {
        for (i, e) in every_kind().into_iter().enumerate() {
            let mut line = Line::new(At(1_700_000_000_123 + i as u64), e);
            line.worker = Some("w1".into());
            line.step = Some("a".into());
            let text = line.to_text().unwrap();
            assert!(text.ends_with('\n') && !text.trim_end().contains('\n'));
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["v"], 1, "{text}");
            assert!(v["kind"].is_string(), "{text}");
            assert_eq!(v["worker"], "w1");
            assert_eq!(Line::parse(&text), Some(line), "{text}");
        }
        // The wire names a face reads.
        let wire = |i| {
            let text = Line::new(At(5), every_kind().remove(i)).to_text().unwrap();
            serde_json::from_str::<serde_json::Value>(&text).unwrap()
        };
        let v = wire(3);
        assert_eq!(v["kind"], "session_ended");
        assert_eq!(v["at"], 5);
        assert_eq!(v["duration_s"], 1.5);
        assert_eq!(v["cost_usd"], serde_json::Value::Null);
        assert_eq!(v["outcome"]["kind"], "limited");
        let v = wire(2);
        assert_eq!(v["standing"]["elapsed_s"], 61.5);
        assert_eq!(v["standing"]["spec"], "1/3");
        let v = wire(every_kind().len() - 3);
        assert_eq!(v["kind"], "complete");
        assert_eq!(v["totals"]["duration_s"], 90.25);
        assert_eq!(v["totals"]["commits"], 2);
        // Lines from before these were kept read, with none.
        let old = r#"{"v":1,"at":1,"kind":"complete","reason":"r"}"#;
        assert!(matches!(
            Line::parse(old).map(|l| l.event),
            Some(Event::Complete { totals: None, .. })
        ));
    }

    #[test]
    fn lines_it_cannot_read_are_skipped_and_the_rest_kept() {
        let known = Line::new(
            At(1),
            Event::Complete {
                reason: "r".into(),
                totals: None,
            },
        );
        let text = [
            r#"{"v":1,"at":1,"kind":"teleported","to":"mars"}"#.to_string(),
            known.to_text().unwrap(),
            r#"{"v":2,"at":1,"kind":"complete","reason":"r"}"#.into(),
            "not json".into(),
            r#"{"v":1,"at":1,"kind":"complete"}"#.into(),
            // A field from a later ralph is no reason to skip a line.
            r#"{"v":1,"at":1,"kind":"complete","reason":"r","new_field":[1]}"#.into(),
            r#"{"v":1,"at":1,"kind":"compl"#.into(),
        ]
        .join("\n");
        assert_eq!(read_lines(&text), vec![known.clone(), known]);
    }

    #[test]
    fn an_old_run_reads_as_the_events_it_kept() {
        let gate = r#","gate":{"passed":true,"time":"2026-01-01T00:01:40Z","duration_s":2.0}"#;
        let review = r#","review":{"session":2,"of":"the whole run","verdict":"rejected","findings":["no tests"],"time":"2026-01-01T00:02:31Z","cost_usd":0.1}"#;
        let records = vec![
            old_record(1, gate),
            old_record(2, review),
            old_record(3, r#","worker":"w1","step":"a","no_change":true"#),
        ];
        let mut saved = Saved::new(
            "r".into(),
            "2026-01-01T00:00:00Z".into(),
            Limits::sample(),
            None,
        );
        // A gate after a merge: in the state only.
        let mut last_gate = records[0].gate.clone().unwrap();
        last_gate.time = "2026-01-01T00:04:00Z".into();
        last_gate.passed = false;
        saved.last_gate = Some(last_gate);
        saved.last_review = records[1].review.clone();
        let summary: Summary = serde_json::from_value(serde_json::json!({
            "run_id": "r", "outcome": "stuck", "exit_code": 3, "reason": "a stuck",
            "iterations": 3, "max_iterations": 5, "duration": "4m", "duration_s": 240.0,
            "cost_usd": 0.75, "tokens": {"input":0,"output":0,"cache_read":0,"cache_creation":0},
            "commits": 1, "spec": "1/2", "started": "2026-01-01T00:00:00Z",
            "ended": "2026-01-01T00:05:00Z",
            "pull_request": {"number": 7, "url": "u", "draft": true}
        }))
        .unwrap();
        let lines = derive("r", &records, Some(&saved), Some(&summary));
        let kinds: Vec<String> = lines
            .iter()
            .map(|l| {
                let v = serde_json::to_value(l).unwrap();
                format!(
                    "{}{}",
                    v["kind"].as_str().unwrap(),
                    match &l.worker {
                        Some(w) => format!("@{w}"),
                        None => String::new(),
                    }
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "run_started",
                "session_started",
                "gate",
                "session_ended",
                "session_started",
                "session_ended",
                "review",
                "session_started@w1",
                "session_ended@w1",
                "gate",
                "pull_request",
                "waiting",
            ]
        );
        assert_eq!(lines[0].at, At::parse("2026-01-01T00:00:00Z").unwrap());
        let Event::RunStarted { mode, limits, .. } = &lines[0].event else {
            panic!()
        };
        assert_eq!((*mode, limits.max_iterations), (Mode::Parallel, 5));
        let Event::SessionEnded {
            cost_usd, duration, ..
        } = &lines[3].event
        else {
            panic!()
        };
        assert_eq!(
            (*cost_usd, *duration),
            (Some(0.25), Duration::from_secs_f64(30.5))
        );
        // What faces show: the run's own last gate (the merge's), its
        // review, the last work session's flags.
        let latest = Latest::of(lines.iter().rev().cloned());
        let gate = gate_verdict(latest.gate.as_ref().unwrap()).unwrap();
        assert_eq!(
            (gate.passed, gate.time.as_str()),
            (false, "2026-01-01T00:04:00Z")
        );
        assert_eq!(
            review_record(latest.review.as_ref().unwrap()),
            records[1].review
        );
        let flags = latest.session_flags().unwrap();
        assert_eq!((flags.session, flags.no_change), (3, true));
        // A review already in the records is not told twice.
        assert_eq!(
            lines
                .iter()
                .filter(|l| matches!(l.event, Event::Review { .. }))
                .count(),
            1
        );
    }

    #[test]
    fn a_gate_reads_back_as_the_verdict_status_shows() {
        let v = crate::work::gate::Verdict {
            passed: false,
            failed: Some("make".into()),
            why: Some("exit status 2".into()),
            time: "2026-03-04T05:06:07Z".into(),
            duration_s: 1.234_567_891,
            log: Some("/x/gate-001.log".into()),
            tail: vec!["t".into()],
            interrupted: false,
            ran: Vec::new(),
        };
        let line = Line::parse(&gate_line(&v).to_text().unwrap()).unwrap();
        let back = gate_verdict(&line).unwrap();
        assert_eq!(
            back,
            crate::work::gate::Verdict {
                tail: Vec::new(),
                ..v
            }
        );
        assert_eq!(
            line.at,
            At(At::parse("2026-03-04T05:06:07Z").unwrap().0 + 1234)
        );
    }

    #[test]
    fn a_run_ends_as_one_of_three() {
        let kind = |o| match end_event(o, "r", None) {
            Event::Complete { .. } => "complete",
            Event::Waiting { .. } => "waiting",
            Event::Stopped { .. } => "stopped",
            _ => "other",
        };
        assert_eq!(kind(Outcome::Complete), "complete");
        assert_eq!(kind(Outcome::Waiting), "waiting");
        assert_eq!(kind(Outcome::Stuck), "waiting");
        assert_eq!(kind(Outcome::IterationLimit), "stopped");
        assert_eq!(kind(Outcome::Interrupted), "stopped");
    }

    /// A gate's line, the run's own, at `at`.
    fn gate_at(passed: bool, at: u64) -> Line {
        Line::new(
            At(at),
            Event::Gate {
                passed,
                failed: None,
                why: None,
                started: At(at - 1),
                duration: Duration::from_millis(1),
                log: None,
            },
        )
    }

    /// A review's line, the run's own, at `at`.
    fn review_at(verdict: Judgement, at: u64) -> Line {
        Line::new(
            At(at),
            Event::Review {
                session: 9,
                of: "the whole run".into(),
                verdict,
                findings: Vec::new(),
                cost_usd: 0.1,
            },
        )
    }

    /// A line as adopted from worker `w1`'s journal.
    fn of_worker(mut l: Line) -> Line {
        l.worker = Some("w1".into());
        l.step = Some("a".into());
        l
    }

    /// What a face shows of `oldest_first`: the gate's pass, the review's
    /// verdict, the last work session.
    fn shown(oldest_first: &[Line]) -> (Option<bool>, Option<Judgement>, Option<u32>) {
        let latest = Latest::of(oldest_first.iter().rev().cloned());
        (
            latest
                .gate
                .as_ref()
                .and_then(gate_verdict)
                .map(|g| g.passed),
            latest
                .review
                .as_ref()
                .and_then(review_record)
                .map(|r| r.verdict),
            latest.session_flags().map(|f| f.session),
        )
    }

    #[test]
    fn a_run_is_over_at_its_end_line_and_no_other() {
        for e in every_kind() {
            let end = matches!(
                e,
                Event::Complete { .. } | Event::Waiting { .. } | Event::Stopped { .. }
            );
            assert_eq!(Line::new(At(1), e.clone()).is_end(), end, "{e:?}");
        }
        for o in [Outcome::Complete, Outcome::Stuck, Outcome::TimeLimit] {
            assert!(Line::new(At(1), end_event(o, "r", None)).is_end(), "{o:?}");
        }
    }

    #[test]
    fn faces_show_the_newest_gate_and_work_session() {
        // No review: nothing stops the reading early, every older line is
        // seen, and none of them may hide a newer one.
        let lines = [
            gate_at(false, 10),
            of_record(&old_record(1, ""), At(20)).remove(0),
            gate_at(true, 30),
            of_record(&old_record(2, ""), At(40)).remove(0),
        ];
        assert_eq!(shown(&lines), (Some(true), None, Some(2)));
    }

    #[test]
    fn faces_show_the_run_s_own_gate_and_review_not_a_worker_s() {
        let review_session = r#","review":{"session":3,"of":"a","verdict":"rejected","findings":[],"time":"2026-01-01T00:03:31Z","cost_usd":0.1}"#;
        let lines = [
            of_record(&old_record(1, ""), At(5)).remove(0),
            gate_at(true, 10),
            review_at(Judgement::Approved, 20),
            // A worker's step judged in its worktree: not the run's verdict.
            of_worker(gate_at(false, 30)),
            of_worker(review_at(Judgement::Rejected, 40)),
            // A worker's work session is the run's last one.
            of_worker(of_record(&old_record(2, ""), At(50)).remove(0)),
            // A review session is not a work session.
            of_record(&old_record(3, review_session), At(60)).remove(0),
        ];
        assert_eq!(
            shown(&lines),
            (Some(true), Some(Judgement::Approved), Some(2))
        );
        // A run whose only gate and review were its workers' shows none.
        assert_eq!(shown(&lines[3..5]), (None, None, None));
    }

    #[test]
    fn status_says_changes_were_left_only_when_nothing_committed_them() {
        let left = |extra: &str| {
            let lines = of_record(&old_record(1, extra), At(1));
            Latest::of(lines.into_iter())
                .session_flags()
                .unwrap()
                .left_uncommitted
        };
        assert!(!left(""));
        assert!(left(r#","left_uncommitted":true"#));
        assert!(!left(r#","left_uncommitted":true,"auto_commit":"abc""#));
    }

    #[test]
    fn an_old_run_tells_its_last_gate_and_whole_run_review_once() {
        let gate = r#","gate":{"passed":true,"time":"2026-01-01T00:01:40Z","duration_s":2.0}"#;
        let records = vec![old_record(1, gate)];
        let mut saved = Saved::new(
            "r".into(),
            "2026-01-01T00:00:00Z".into(),
            Limits::sample(),
            None,
        );
        // The state's last gate is the record's; its review of the whole
        // run was kept by no session's record.
        saved.last_gate = records[0].gate.clone();
        let review = ReviewRecord {
            session: 2,
            of: "the whole run".into(),
            verdict: Judgement::Approved,
            findings: Vec::new(),
            time: "2026-01-01T00:02:00Z".into(),
            cost_usd: 0.1,
        };
        saved.last_review = Some(review.clone());
        let lines = derive("r", &records, Some(&saved), None);
        let count = |f: fn(&Event) -> bool| lines.iter().filter(|l| f(&l.event)).count();
        assert_eq!(count(|e| matches!(e, Event::Gate { .. })), 1);
        assert_eq!(count(|e| matches!(e, Event::Review { .. })), 1);
        let latest = Latest::of(lines.iter().rev().cloned());
        assert_eq!(latest.review.as_ref().and_then(review_record), Some(review));
    }

    fn new_run(d: &Path) -> RunDir {
        let runs = d.join(".ralph/runs");
        std::fs::create_dir_all(&runs).unwrap();
        RunDir::create(&runs).unwrap()
    }

    fn kinds(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                let v = serde_json::to_value(l).unwrap();
                v["kind"].as_str().unwrap().to_string()
            })
            .collect()
    }

    #[test]
    fn a_merge_is_journaled_naming_its_step_and_worker() {
        let d = tempfile::tempdir().unwrap();
        let run = new_run(d.path());
        let j = Journal::of(&run);
        let merged = Event::Merged {
            duration: Duration::from_millis(1500),
            into: "main".into(),
        };
        j.add_of("b", Some("w3"), merged.clone());
        let lines = read(&run);
        assert_eq!(lines.len(), 1);
        assert_eq!(
            (lines[0].step.as_deref(), lines[0].worker.as_deref()),
            (Some("b"), Some("w3"))
        );
        assert_eq!(lines[0].event, merged);
    }

    /// A face polling a long journal reads its head for the run's start
    /// and its end for the latest verdicts, never the whole of it.
    #[test]
    fn the_start_is_read_from_the_head_and_the_latest_from_the_end_only() {
        let d = tempfile::tempdir().unwrap();
        let run = new_run(d.path());
        let j = Journal::of(&run);
        let started = every_kind().remove(0);
        j.add(started.clone());
        let pause = Event::Paused {
            why: "x".repeat(100),
            until: At(2),
        };
        for _ in 0..(LOOK_BACK + 10) {
            j.add(pause.clone());
        }
        j.add(Event::Gate {
            passed: true,
            failed: None,
            why: None,
            started: At(1),
            duration: Duration::from_secs(1),
            log: None,
        });
        // A resume's start later in the journal is not the run's first.
        j.add(Event::RunStarted {
            run_id: "r1".into(),
            mode: Mode::Loop,
            resumed: 2,
            agent: crate::agent::Agent::Claude,
            limits: RunLimits {
                max_iterations: 1,
                max_cost_usd: None,
                max_time: None,
            },
        });
        assert_eq!(first_start(&run).map(|l| l.event), Some(started));
        let latest = Latest::of(newest_first(&run));
        assert!(latest.gate.is_some());
        // What lies further back than LOOK_BACK lines is not looked for.
        for _ in 0..LOOK_BACK {
            j.add(pause.clone());
        }
        assert!(Latest::of(newest_first(&run)).gate.is_none());
    }

    #[test]
    fn a_session_s_record_is_journaled_as_what_status_shows() {
        let d = tempfile::tempdir().unwrap();
        let run = new_run(d.path());
        let j = Journal::of(&run);
        j.record(&old_record(1, r#","no_evidence":true"#));
        let review = r#","review":{"session":2,"of":"the whole run","verdict":"rejected","findings":["no tests"],"time":"2026-01-01T00:02:31Z","cost_usd":0.1}"#;
        j.record(&old_record(2, review));
        let lines = read(&run);
        assert_eq!(kinds(&lines), ["session_ended", "session_ended", "review"]);
        let latest = Latest::of(newest_first(&run));
        let flags = latest.session_flags().unwrap();
        assert_eq!((flags.session, flags.no_evidence), (1, true));
        let r = latest.review.as_ref().and_then(review_record).unwrap();
        assert_eq!(
            (r.verdict, r.findings),
            (Judgement::Rejected, vec!["no tests".to_string()])
        );
    }

    #[test]
    fn a_run_resumed_from_before_the_journal_gets_its_past_first() {
        let d = tempfile::tempdir().unwrap();
        // An older ralph's run: records, no state kept, no journal.
        let run = new_run(d.path());
        run.append_record(&old_record(1, "")).unwrap();
        let j = Journal::of(&run);
        j.seed(&run);
        // Seeding again (resumed twice) tells nothing twice.
        j.seed(&run);
        j.add(Event::Complete {
            reason: "r".into(),
            totals: None,
        });
        assert_eq!(
            kinds(&read(&run)),
            ["session_started", "session_ended", "complete"]
        );
        // A new run has no past to tell.
        let fresh = new_run(&d.path().join("p"));
        Journal::of(&fresh).seed(&fresh);
        assert!(!fresh.path.join(FILE).exists());
    }

    #[test]
    fn the_journal_appends_in_the_run_folder_and_never_through_a_link() {
        let d = tempfile::tempdir().unwrap();
        let runs = d.path().join(".ralph/runs");
        std::fs::create_dir_all(&runs).unwrap();
        let run = RunDir::create(&runs).unwrap();
        let j = Journal::of(&run).by(Some(("w2", "b")));
        j.add(Event::Complete {
            reason: "one".into(),
            totals: None,
        });
        j.add(Event::Complete {
            reason: "two".into(),
            totals: None,
        });
        let lines = read(&run);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].worker.as_deref(), Some("w2"));
        assert!(matches!(&lines[1].event, Event::Complete { reason, .. } if reason == "two"));
        assert_eq!(newest_first(&run).next(), Some(lines[1].clone()));
        // Adopted into another run, named by the worker that wrote it.
        let other = RunDir::open(&runs, &run.id);
        let main_dir = RunDir::create(&d.path().join("m/.ralph/runs")).unwrap();
        Journal::of(&main_dir).adopt(&other, "w9");
        let adopted: Vec<(Option<String>, Event)> = read(&main_dir)
            .into_iter()
            .map(|l| (l.worker, l.event))
            .collect();
        let said = |reason: &str| {
            (
                Some("w9".to_string()),
                Event::Complete {
                    reason: reason.into(),
                    totals: None,
                },
            )
        };
        assert_eq!(adopted, [said("one"), said("two")]);
        // A link planted in its place is not written through.
        let target = d.path().join("elsewhere");
        std::fs::remove_file(run.path.join(FILE)).unwrap();
        std::os::unix::fs::symlink(&target, run.path.join(FILE)).unwrap();
        j.add(Event::Complete {
            reason: "three".into(),
            totals: None,
        });
        assert!(!target.exists());
    }
}
