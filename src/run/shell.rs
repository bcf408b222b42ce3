//! The shell around the engine: performs what `engine::step` decides (run a
//! lifecycle hook, start a session, wait out a limit) and reports back what
//! happened, until the engine says stop; then writes the run's summary.

use std::time::Instant;

use anyhow::{Context, Result};

use crate::handoff::env;
use crate::history::records::{Record, RunDir, Saved, Summary, Tokens};
use crate::run::countdown;
use crate::run::engine::{self, Action, Event, Outcome, SessionOutcome};
use crate::run::lifecycle::{self, Facts};
use crate::run::lock::LoopLock;
use crate::run::options::Settings;
use crate::run::progress::{self, Checkpoint};
use crate::run::ui::Ui;
use crate::session;
use crate::session::launch;
use crate::timefmt::{self, now_epoch};
use crate::work::project::Project;
use crate::work::{completion, gate, sentinel};

pub fn spec_text(s: &Checkpoint) -> String {
    format!("{}/{}", s.done, s.total)
}

/// One session, as it ran, for its record.
pub(crate) struct Ran<'a> {
    pub(crate) iteration: u32,
    pub(crate) number: u32,
    pub(crate) seat: crate::session::Seat<'a>,
    pub(crate) left_uncommitted: bool,
    pub(crate) auto_commit: Option<String>,
    pub(crate) no_evidence: bool,
    pub(crate) no_change: bool,
    /// What it cost (`None`: not known).
    pub(crate) cost: Option<f64>,
    pub(crate) start: String,
    pub(crate) command: Vec<String>,
    pub(crate) ended: &'a session::Finished,
    pub(crate) outcome: &'a SessionOutcome,
    pub(crate) before: &'a Checkpoint,
    pub(crate) after: &'a Checkpoint,
}

/// The run's changing state while the shell carries the engine's actions
/// out.
struct Live {
    saved: Saved,
    /// The spec and tree as the next session begins (during a session's
    /// round: as it began).
    before: Checkpoint,
    /// The session that ended, until its round records it.
    pending: Option<Pending>,
    /// What was uncommitted when the loop started: the user's, never a
    /// session's (not blamed on one, never committed by `--commit auto`).
    users: Vec<String>,
    /// The agent whose usage limit the last session met (a parallel run's
    /// other workers are told how long it holds).
    limited: Option<usize>,
}

/// A session that ended, as its round goes on: what its record needs.
struct Pending {
    iteration: u32,
    number: u32,
    agent: usize,
    start: String,
    command: Vec<String>,
    ended: session::Finished,
    outcome: SessionOutcome,
    after: Checkpoint,
    left_uncommitted: bool,
    no_evidence: bool,
    no_change: bool,
    auto_commit: Option<String>,
    progress: engine::Progress,
    /// The gate that ran in its round.
    gate: Option<gate::Verdict>,
    /// The records of the reviews in its round.
    reviews: Vec<Record>,
}

pub struct Shell<'a> {
    pub project: &'a Project,
    pub s: &'a Settings,
    pub run: &'a RunDir,
    pub ui: Ui,
    /// The run's secret token (from the lock): marks its processes.
    pub secret: String,
    /// Notices to send (`[notify]`), in the background.
    pub outbox: crate::notify::send::Outbox,
    /// With `--max-sessions-per-hour`: when the project's sessions of the
    /// last hour started, read from the records once, then kept.
    pub pacing: std::cell::RefCell<Option<Vec<u64>>>,
    /// ralph's own files (`progress::OWN`) that had uncommitted changes
    /// before the loop wrote to them: not ralph's to commit.
    pub own_dirty: Vec<String>,
    /// `--push` / `--pr`: where the run's work goes.
    pub ship: Option<crate::ship::Ship>,
    /// When this loop began counting time, and the time the run had taken
    /// before (a resumed run's): `--max-time`.
    pub clock: std::cell::Cell<Option<(Instant, f64)>>,
    /// A COMPLETE the loop itself claims (every step already checked as it
    /// starts; every step merged by a parallel run), judged as a session's
    /// is without being written first: no file is a message between the
    /// loop's parts. Written as `.ralph/COMPLETE` once accepted.
    pub handed: std::cell::RefCell<Option<sentinel::Complete>>,
    /// The work as a COMPLETE was last refused (`judged_as`: a session's,
    /// or the loop's own): the loop claims it done itself (`all_done`) only
    /// once that changed, so a gate or a reviewer that refused is not asked
    /// again about the same work.
    pub claimed_at: std::cell::RefCell<Option<(Option<String>, Vec<bool>)>>,
    /// Where the run stood as the next session's line said it: journaled
    /// with its start, so what was said and what is kept are one value.
    pub standing: std::cell::RefCell<Option<crate::history::events::Standing>>,
    /// A human's answer, taken while the run waited: handed to the next
    /// session.
    pub answered: std::cell::RefCell<Option<crate::run::asking::Given>>,
    /// The question the run asks now, shared with the reader of its remote
    /// channels (`run::remote`).
    pub asking: crate::run::remote::Asking,
    /// The run's limits as they stand: its settings', raised by the
    /// commands it took (`ralph raise`).
    pub limits: std::cell::RefCell<engine::Limits>,
}

/// What of a checkpoint says the work changed for a claim of the loop's
/// own: its commit and its boxes (what the loop's notes or a notice's
/// command write in the tree between sessions is not new work).
fn judged_as(c: &progress::Checkpoint) -> (Option<String>, Vec<bool>) {
    (c.head.clone(), c.boxes.clone())
}

impl Shell<'_> {
    /// The run's journal, its lines naming this worker (a parallel run's).
    pub(crate) fn journal(&self) -> crate::history::events::Journal {
        let by = self
            .s
            .workers
            .worker
            .as_ref()
            .map(|w| (w.name.as_str(), w.step.as_str()));
        crate::history::events::Journal::of(self.run).by(by)
    }

    /// The run's one reporter: `event` journaled, and the line the
    /// terminal shows of it (`history::said`), if any, said.
    /// The status line of `event` (a session's start, the run's end),
    /// rendered where every face's is (`history::said`).
    pub(crate) fn headline(&self, event: &crate::history::events::Event) {
        if let Some(line) = crate::history::said::headline(event) {
            self.ui.status(&line);
        }
    }

    pub(crate) fn report(&self, event: crate::history::events::Event) {
        if let Some(line) = crate::history::said::said(&event, None) {
            self.ui.note(&line);
        }
        self.journal().add(event);
    }

    /// As `report`, of step `key` (a merge's; `name`, as a person reads
    /// it) and the worker that did it.
    pub(crate) fn report_of(
        &self,
        (key, name): (&str, &str),
        worker: Option<&str>,
        event: crate::history::events::Event,
    ) {
        if let Some(line) = crate::history::said::said(&event, Some(name)) {
            self.ui.note(&line);
        }
        self.journal().add_of(key, worker, event);
    }

    fn facts<'b>(
        &'b self,
        event: &'b str,
        iteration: u32,
        extra: &'b [(&'b str, &'b str)],
    ) -> Facts<'b> {
        Facts {
            event,
            project: &self.project.root,
            run_dir: &self.run.path,
            iteration,
            max_iterations: self.limits.borrow().max_iterations,
            extra,
        }
    }

    /// What COMPLETE claims, if it is there: the protected paths changed
    /// since the run began, and the completion rule's word on spec and
    /// tracker. With none, every step checked is a claim of the loop's own
    /// (`all_done`).
    fn claim(&self, saved: &Saved) -> Result<Option<engine::Claim>> {
        if self.handed.borrow().is_none() && !self.project.complete().exists() {
            let Some(c) = self.all_done(saved)? else {
                return Ok(None);
            };
            *self.handed.borrow_mut() = Some(c);
        }
        Ok(Some(engine::Claim {
            protected: self.protected_touched(saved).unwrap_or_default(),
            base: saved.first_head.clone().unwrap_or_else(|| "?".into()),
            rule: self.rule()?,
        }))
    }

    /// Every step checked (and the tracker agreeing, or its issues ralph's
    /// to close) with no COMPLETE written: the loop claims it itself, for
    /// the round to judge as a session's (protected paths, the gate, the
    /// reviewer), as a parallel run judges its last merge, instead of
    /// paying for sessions that find nothing to do. Not a worker's: its
    /// step is done when its branch has it checked.
    fn all_done(&self, saved: &Saved) -> Result<Option<sentinel::Complete>> {
        if self.s.workers.worker.is_some() {
            return Ok(None);
        }
        let Ok(j) = self.checked()? else {
            return Ok(None);
        };
        let steps_done = j.spec.total() > 0 && j.spec.steps.iter().all(|s| s.checked);
        if !(j.is_complete() || (self.s.limits.closes_issues && steps_done)) {
            return Ok(None);
        }
        let now = progress::take(&self.project.root, &self.project.spec());
        if self.claimed_at.borrow().as_ref() == Some(&judged_as(&now)) {
            return Ok(None);
        }
        let (message, said) = if saved.state.sessions == 0 {
            (
                "every step was already checked when the loop started",
                "every step of the spec is already checked (and agrees with the tracker): judging COMPLETE, no session needed",
            )
        } else {
            (
                "every step of the spec is checked",
                "every step of the spec is checked (and agrees with the tracker), with no COMPLETE written: judging it now",
            )
        };
        self.ui.note(said);
        Ok(Some(sentinel::Complete {
            completed: Some(timefmt::now()),
            forced: false,
            spec: Some(j.spec.progress()),
            tracker: Some(j.tracker.unwrap_or("none").to_string()),
            message: message.into(),
            file_time: None,
        }))
    }

    /// Spec and tracker as they are now.
    fn checked(
        &self,
    ) -> Result<std::result::Result<completion::Judgement, completion::CannotCheck>> {
        completion::check_run(
            &self.project.spec(),
            &self.project.root,
            self.s.tracker,
            self.s.shipping.pr,
        )
    }

    /// The completion rule's word on spec and tracker now.
    fn rule(&self) -> Result<completion::Rule> {
        let checked = self.checked()?;
        // A worker's step is gated after its merge, by the coordinator:
        // its own COMPLETE holds without the gate.
        Ok(completion::rule(
            &checked,
            self.s.completion.gate.is_some() && self.s.workers.worker.is_none(),
        ))
    }

    /// `Need::CloseIssues`: the tracker's issues of checked steps closed
    /// (ralph's to do, not a session's), each said; then the rule as it
    /// reads now. Only the issues that were steps when the run began
    /// (`at_start`): one a session names later is left to you.
    fn close_done_issues(&self, at_start: Option<&[String]>) -> Result<completion::Rule> {
        for said in crate::work::tracker::close_done(
            self.s.tracker,
            self.s.shipping.pr,
            &self.project.root,
            &self.step_tasks(true),
            at_start,
        ) {
            self.ui.note(&said);
        }
        self.rule()
    }

    /// A complete run's epic (the spec's, as `ralph plan` or an import
    /// made it), every task of it closed, closed too: so the tracker says
    /// what the spec does. Before ralph's notes are committed, with them.
    fn close_epic(&self) {
        let Ok(Ok(j)) = self.checked() else { return };
        let Some(epic) = &j.epic_open else { return };
        match crate::work::tracker::close_epic(self.s.tracker, &self.project.root, epic) {
            Some(Ok(said)) => self.ui.note(&said),
            Some(Err(e)) => self.ui.note(&format!("epic {epic} stays open: {e}")),
            None => {}
        }
    }

    /// What changed of the protected files since the run began, one line
    /// each (files, then the commits that touched them); `None` for nothing.
    fn protected_touched(&self, saved: &Saved) -> Option<Vec<String>> {
        let base = saved.first_head.as_deref()?;
        if self.s.completion.protect.is_empty() {
            return None;
        }
        let (files, commits) =
            progress::protected_changes(&self.project.root, base, &self.s.completion.protect)?;
        let mut why: Vec<String> = files
            .into_iter()
            .map(|f| format!("protected: {f}"))
            .collect();
        why.extend(commits.into_iter().map(|c| format!("in commit {c}")));
        Some(why)
    }

    /// Run the gate (for COMPLETE, or `when = "each"`) and say what it came
    /// to; a session's round keeps the verdict for its record.
    fn gate(&self, live: &mut Live, each: bool) -> Result<engine::GateRan> {
        let g = self
            .s
            .completion
            .gate
            .as_ref()
            .expect("the engine runs a gate only with one");
        self.ui.note(if each {
            "running the project's checks after this session (gate: when = \"each\")"
        } else if self.project.root.join(".beads").is_dir() {
            "COMPLETE: spec and tracker agree; running the project's checks (the gate)"
        } else {
            "COMPLETE: every step of the spec is checked; running the project's checks (the gate)"
        });
        let v = self.run_gate(g, &mut live.saved)?;
        // Against a baseline, `passed` is already its judgement.
        let judged = live
            .saved
            .judged
            .clone()
            .filter(|_| live.saved.baseline.is_some());
        let passed = v.passed;
        if passed {
            self.ui.note("the gate passed");
        }
        let ran = engine::GateRan {
            passed,
            interrupted: v.interrupted,
            what: match &judged {
                Some(j) if !j.passed => {
                    format!("new failures: {}", crate::output::first_of(&j.blocking, 5))
                }
                _ => v.summary(),
            },
            tail: v.tail.clone(),
        };
        if let Some(p) = live.pending.as_mut().filter(|_| !v.interrupted) {
            p.gate = Some(v);
        }
        Ok(ran)
    }

    /// Run the gate, keep its output in the run folder, hand a failure to
    /// the next session (`.ralph/gate-failed.md`) and remember the verdict.
    pub(crate) fn run_gate(&self, gate: &gate::Gate, saved: &mut Saved) -> Result<gate::Verdict> {
        let mut v = self.gate_once(gate, saved, saved.baseline.is_some())?;
        // Against the baseline: only what fails anew is the session's to fix.
        if let Some(base) = saved.baseline.as_ref().filter(|_| !v.interrupted) {
            let j = crate::work::baseline::judge(base, &v);
            for c in &j.per_command {
                self.ui.note(&format!(
                    "`{}`: its output no longer says which tests ran; judged by its exit status",
                    crate::output::visible_line(c)
                ));
            }
            if j.passed && !v.passed {
                self.ui.note(&format!(
                    "the gate fails only where it failed before the run ({}): that does not block",
                    crate::output::first_of(&j.still_failing, 5)
                ));
            }
            let text = (!j.passed).then(|| crate::work::baseline::feedback(&v, &j));
            gate::hand_over_text(self.project, text.as_deref())?;
            if j.passed {
                // What failed before is no failure of this gate.
                (v.passed, v.failed, v.why) = (true, None, None);
            } else {
                // Said as what failed anew (a test gone may leave every
                // command passing).
                v.passed = false;
                v.failed = v
                    .failed
                    .take()
                    .or_else(|| v.ran.first().map(|r| r.command.clone()));
                v.why = Some(format!(
                    "failed anew: {}",
                    crate::output::first_of(&j.blocking, 3)
                ));
                self.ui.note(&format!(
                    "the gate failed anew: {}; the next session finds it in {}",
                    crate::output::first_of(&j.blocking, 5),
                    gate::feedback_path(self.project).display()
                ));
            }
            saved.judged = Some(j);
            saved.last_gate = Some(v.clone());
            self.journal().line(crate::history::events::gate_line(&v));
            return Ok(v);
        }
        gate::hand_over(self.project, &v)?;
        if !v.passed && !v.interrupted {
            self.ui.note(&format!(
                "the gate failed: {}; the next session finds it in {} (the last lines):",
                v.summary(),
                gate::feedback_path(self.project).display()
            ));
            for l in v.tail.iter().rev().take(15).rev() {
                self.ui.line(&format!("    | {l}"));
            }
        }
        saved.last_gate = Some(v.clone());
        self.journal().line(crate::history::events::gate_line(&v));
        Ok(v)
    }

    /// The gate's commands run once (each of them: `all`), their output
    /// kept in the run folder.
    fn gate_once(&self, gate: &gate::Gate, saved: &mut Saved, all: bool) -> Result<gate::Verdict> {
        saved.gate_runs += 1;
        let name = format!("gate-{:03}.log", saved.gate_runs);
        let log = self.run.new_file(&name)?;
        let mut v = gate::run(
            gate,
            &self.project.root,
            Some(&log),
            &crate::procs::signals::signals_received,
            &gate::Runner {
                token: crate::handoff::gate_token(&self.secret),
                confined: self.s.confined.clone(),
                show: self.ui.gate_show(),
            },
            all,
        )?;
        // Shown and saved by where it is, not by the handle it was written through.
        v.log = Some(self.run.path.join(&name));
        Ok(v)
    }

    /// `Need::Baseline`: the gate run before the first session, each
    /// command, what fails kept as the run's baseline (in its state and
    /// `baseline.json`, which a session's `ralph complete` reads) and said.
    /// False when it was stopped before the end (taken again on resume).
    pub(crate) fn take_baseline(&self, saved: &mut Saved) -> Result<bool> {
        let Some(g) = self.s.completion.gate.as_ref() else {
            return Ok(true);
        };
        self.ui
            .note("running the project's checks before the first session (the gate's baseline)");
        let v = self.gate_once(g, saved, true)?;
        if v.interrupted {
            return Ok(false);
        }
        let failing = crate::work::baseline::failing(&v);
        if failing.is_empty() && !v.passed {
            // Only what timed out failed: that is no failure to keep.
            self.ui.note(&format!(
                "the gate did not finish before the run ({}): every check must pass at the end",
                v.summary()
            ));
        } else if failing.is_empty() {
            self.ui
                .note("the gate passes before the run: every check must still pass at the end");
        } else {
            self.ui.note(&format!(
                "the gate fails before the run: {} failing ({}); only what fails anew blocks COMPLETE ([gate] baseline = \"off\": every check must pass)",
                failing.len(),
                crate::output::first_of(&failing, 5)
            ));
        }
        crate::fsutil::atomic_write(
            &self.run.path.join("baseline.json"),
            serde_json::to_string_pretty(&v)?.as_bytes(),
            0o644,
        )?;
        // Where a session cannot write: what a resumed run judges against.
        crate::history::baseline::keep(&self.project.root, &saved.run_id, Some(&v))?;
        self.journal().line(crate::history::events::gate_line(&v));
        saved.baseline = Some(v);
        Ok(true)
    }

    /// Move COMPLETE into the run folder with the reasons it does not hold
    /// (all kept there, the first `shown` said).
    fn set_aside(
        &self,
        saved: &Saved,
        why: &[String],
        problems: usize,
        shown: usize,
    ) -> Result<()> {
        let name = format!("COMPLETE.rejected-{}", saved.state.rejected + 1);
        let aside = self.run.path.join(&name);
        let aside_io = self.run.new_file(&name)?;
        let handed = self.handed.borrow_mut().take();
        let mut text = match &handed {
            Some(c) => c.render(),
            None => crate::fsutil::read_optional(&self.project.complete())
                .ok()
                .flatten()
                .unwrap_or_default(),
        };
        text.push_str(&format!(
            "\nrejected by ralph loop at {}:\n",
            timefmt::now()
        ));
        for w in why {
            text.push_str(&format!("  {w}\n"));
        }
        crate::fsutil::create_new(&aside_io)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .with_context(|| format!("cannot write {}", aside.display()))?;
        if handed.is_none() {
            std::fs::remove_file(self.project.complete())
                .with_context(|| format!("cannot remove {}", self.project.complete().display()))?;
        }
        self.ui.note(&format!(
            "COMPLETE rejected ({}), moved to {}; the loop goes on:",
            crate::output::counted(problems as u64, "problem", "problems"),
            aside.display()
        ));
        for w in why.iter().take(shown) {
            self.ui.line(&format!("    {w}"));
        }
        // Judged and refused: the loop does not claim this work again
        // (its notes for the next session, written by now, included).
        *self.claimed_at.borrow_mut() = Some(judged_as(&progress::take(
            &self.project.root,
            &self.project.spec(),
        )));
        Ok(())
    }

    /// COMPLETE set aside as the engine says: told when the gate failed,
    /// WAITING written when asked.
    fn aside(&self, saved: &Saved, need: engine::Need) -> Result<Event> {
        let engine::Need::SetAside {
            cause,
            why,
            problems,
            shown,
        } = need
        else {
            unreachable!("only a set-aside is carried out here")
        };
        if cause == engine::Aside::GateFailed {
            self.outbox.tell(
                crate::notify::Event::Rejected,
                "COMPLETE was sent back: the project's checks failed",
                "the next session fixes them; see .ralph/gate-failed.md",
            );
        }
        self.set_aside(saved, &why, problems, shown)?;
        Ok(Event::SetAside)
    }

    /// Between sessions, once the round is judged: the sentinels, the stop
    /// request and the pace.
    fn between(&self, now: &progress::Checkpoint, skipped: &[String]) -> Result<Event> {
        let asked = crate::run::control::between(
            &self.project.root,
            &self.run.id,
            &mut self.limits.borrow_mut(),
            &self.journal(),
            &|m| self.ui.note(&m),
        );
        Ok(Event::Between {
            stop: crate::procs::signals::stop_requested().or(asked),
            waiting: sentinel::Waiting::read(&self.project.waiting())?.map(|w| w.reason),
            step_done: self.step_done()?,
            recent_starts: self.recent_starts(),
            now_epoch: now_epoch(),
            elapsed: self.elapsed(),
            only_skipped: now.only_skipped(skipped),
        })
    }

    /// How long the run has taken (what it took before this loop began
    /// counting, a resumed run's, included).
    fn elapsed(&self) -> std::time::Duration {
        match self.clock.get() {
            Some((t0, before)) => {
                std::time::Duration::from_secs_f64(before.max(0.0)) + t0.elapsed()
            }
            None => std::time::Duration::ZERO,
        }
    }

    /// A worker's step, once done: its box checked here (a review that
    /// rejected it unchecks it here) and in the branch's last commit (what
    /// the run merges: a box checked and not committed is said, and not
    /// done), no merge under way (a resolution commits it), and its task
    /// (if it has one and the run a tracker) closed.
    fn step_done(&self) -> Result<Option<String>> {
        let Some(w) = &self.s.workers.worker else {
            return Ok(None);
        };
        let root = &self.project.root;
        let text = crate::fsutil::read_optional(&self.project.spec())?.unwrap_or_default();
        let parsed = crate::work::spec::parse(&text);
        let Some(step) = crate::parallel::texts::find(&parsed.steps, &w.step) else {
            return Ok(None);
        };
        let g = crate::git::at(root);
        if !step.checked || g.ok(&["rev-parse", "--verify", "--quiet", "MERGE_HEAD"], &[]) {
            return Ok(None);
        }
        if !crate::parallel::queue::step_checked_on(root, "HEAD", &w.step) {
            self.ui.note(&format!(
                "step {} is checked in .ralph/spec.md but not committed: not done until it is",
                step.key()
            ));
            return Ok(None);
        }
        // Without a tracker to ask, the box is the word; so for a GitHub
        // issue (no beads task; the tracker github closes it on the merge).
        if let Some(task) = &step.task
            && crate::work::tracker::is_closed(self.s.tracker, root, task) == Some(false)
        {
            return Ok(None);
        }
        Ok(Some(format!("step {}", step.key())))
    }

    /// When the project's sessions of the last hour started (so restarts
    /// and `--resume` count): only when pacing, read from the records once.
    fn recent_starts(&self) -> Vec<u64> {
        if self.s.limits.max_sessions_per_hour.is_none() {
            return Vec::new();
        }
        let since = now_epoch().saturating_sub(3600);
        // A worker of a parallel run: every worker's, from the run's budget.
        if let Some(w) = &self.s.workers.worker {
            return crate::parallel::budget::starts_since(&w.budget, since).unwrap_or_default();
        }
        let mut window = self.pacing.borrow_mut();
        let w = window.get_or_insert_with(|| RunDir::starts_since(&self.project.runs(), since));
        w.retain(|&t| t >= since);
        w.clone()
    }

    /// Append a session's record, and count its start in the pacing window.
    fn append(&self, record: &Record) -> Result<()> {
        let worked;
        let record = match &self.s.workers.worker {
            Some(w) => {
                // Spent from the whole run's budget, as it is written.
                crate::parallel::budget::add_cost(&w.budget, record.cost_usd)?;
                worked = Record {
                    worker: Some(w.name.clone()),
                    step: Some(w.step.clone()),
                    ..record.clone()
                };
                &worked
            }
            None => record,
        };
        self.run.append_record(record)?;
        self.ledger(record.cost_usd, record.tokens.total(), record.cost_unknown);
        self.journal().record(record);
        if let (Some(w), Some(t)) = (self.pacing.borrow_mut().as_mut(), record.start_epoch()) {
            w.push(t);
        }
        Ok(())
    }

    /// A session's cost in the machine's ledger, which the user's budget
    /// for every loop is held against (a ledger that cannot be written is
    /// said: with a budget, it then holds only as far as the ledger goes).
    pub(crate) fn ledger(&self, usd: f64, tokens: u64, cost_unknown: bool) {
        let entry = crate::history::ledger::Entry {
            at: now_epoch(),
            project: self.project.root.display().to_string(),
            run: self.run.id.clone(),
            usd,
            tokens,
            cost_unknown,
        };
        if let Err(e) = crate::history::ledger::append(&crate::history::ledger::path(), &entry) {
            self.ui.note(&format!(
                "the session's cost is not in the machine's ledger: {e:#}"
            ));
        }
    }

    /// The user's budget for every loop on the machine, and what they spent
    /// of it, as a session would start.
    fn machine(&self) -> Option<engine::Machine> {
        let budget = self.s.machine?;
        let entries = crate::history::ledger::entries(&crate::history::ledger::path());
        Some(engine::Machine {
            budget,
            spent: crate::history::ledger::spent(&entries, now_epoch()),
        })
    }

    /// The run's saved state: the one resumed (with today's limits), or a
    /// new one.
    pub(crate) fn open(&self, resumed: Option<Saved>, before: &Checkpoint) -> Result<Saved> {
        let (s, run) = (self.s, self.run);
        Ok(match resumed {
            Some(mut saved) => {
                saved.limits = s.limits.clone();
                saved.resumed += 1;
                // Which issues the run may close comes from ralph's own
                // record, never from the run folder, where a session writes.
                (saved.issues_at_start, saved.pr_issues_at_start) =
                    crate::history::invocation::closable(&self.project.root, &run.id);
                // So is the gate's baseline (a worker's is the run's).
                if s.workers.worker.is_none() {
                    (saved.baseline, saved.state.baseline_taken) =
                        crate::history::baseline::for_resume(&self.project.root, &run.id);
                }
                run.clear_summary()?;
                self.ui.note(&format!(
                    "resuming run {} at iteration {}/{}, {} spent",
                    run.id,
                    saved.state.iteration,
                    s.limits.max_iterations,
                    crate::output::usd(saved.state.cost_usd)
                ));
                saved
            }
            None => {
                let mut saved = Saved::new(
                    run.id.clone(),
                    timefmt::now(),
                    s.limits.clone(),
                    before.head.clone(),
                );
                if crate::work::tracker::caps(s.tracker).ralph_closes {
                    saved.issues_at_start = Some(self.step_tasks(false));
                }
                if s.shipping.pr {
                    saved.pr_issues_at_start = Some(self.step_issues());
                }
                saved.users_at_start = Some(self.users_in(before, None));
                // A worker's gate is judged against the run's baseline.
                if let Some(w) = &s.workers.worker {
                    saved.baseline = crate::parallel::budget::gate_baseline(&w.budget);
                    saved.state.baseline_taken = saved.baseline.is_some();
                } else if !(s.limits.baseline && s.completion.gate.is_some()) {
                    // None to take: a resumed run takes none either, and
                    // every check must pass for it.
                    crate::history::baseline::keep(&self.project.root, &run.id, None)?;
                }
                crate::history::invocation::keep_closable(
                    &self.project.root,
                    &run.id,
                    saved.issues_at_start.clone(),
                    saved.pr_issues_at_start.clone(),
                )?;
                saved
            }
        })
    }

    /// The spec's steps as they are on disk (none for a spec not there).
    fn steps_now(&self) -> Vec<crate::work::spec::Step> {
        let text = crate::fsutil::read_optional(&self.project.spec())
            .ok()
            .flatten()
            .unwrap_or_default();
        crate::work::spec::parse(&text).steps
    }

    /// The issues the spec's steps name, as a pull request body reads them.
    fn step_issues(&self) -> Vec<u64> {
        self.steps_now()
            .iter()
            .filter_map(crate::ship::body::issue_of)
            .collect()
    }

    /// The spec's steps' tasks (only the checked ones' with `checked`).
    fn step_tasks(&self, checked: bool) -> Vec<String> {
        self.steps_now()
            .into_iter()
            .filter(|s| s.checked || !checked)
            .filter_map(|s| s.task)
            .collect()
    }

    pub fn run(&self, lock: &mut LoopLock, resumed: Option<Saved>) -> Result<u8> {
        let before = progress::take(&self.project.root, &self.project.spec());
        let saved = self.open(resumed, &before)?;
        self.run_from(lock, saved, before)
    }

    /// The loop from `saved` (a parallel run's, once its steps are merged).
    pub fn run_from(
        &self,
        lock: &mut LoopLock,
        mut saved: Saved,
        before: Checkpoint,
    ) -> Result<u8> {
        let t0 = Instant::now();
        let elapsed_before = saved.elapsed_s;
        self.clock.set(Some((t0, elapsed_before)));
        saved.agents = (0..=self.s.session.fallbacks.len())
            .map(|i| self.s.session.seat(i).agent)
            .collect();
        self.run.save_state(&saved)?;
        lock.set_iteration(saved.state.iteration)?;
        self.say_start(saved.state.iteration);
        self.estimate(&mut saved, &before);
        let users = self.users_in(&before, saved.users_at_start.as_deref());
        self.say_uncommitted(&users);
        let mut live = Live {
            saved,
            before,
            pending: None,
            users,
            limited: None,
        };
        let mut ev = Event::Begin;
        let mut last_saved = live.saved.state.counts();
        let (outcome, reason) = loop {
            let claimed = matches!(
                ev,
                Event::BeforeSpawn {
                    shared: Some(_),
                    ..
                }
            );
            let limits = self.limits.borrow().clone();
            let action = engine::step(&mut live.saved.state, &limits, ev);
            // Saved whenever the engine counted something (or a command
            // raised a limit), before acting on it: a loop killed in the
            // next session leaves the truth behind. (A round's progress is
            // not saved: a resumed run starts anew.)
            let raised = live.saved.limits != limits;
            live.saved.limits = limits;
            if raised || !live.saved.state.counts_as(&last_saved) {
                live.saved.elapsed_s = elapsed_before + t0.elapsed().as_secs_f64();
                self.run.save_state(&live.saved)?;
                last_saved = live.saved.state.counts();
            }
            self.unclaim_unless_spawned(claimed, &action)?;
            ev = match action {
                Action::Stop { outcome, reason } => break (outcome, reason),
                action => self.act(action, lock, &mut live)?,
            };
        };
        live.saved.elapsed_s = elapsed_before + t0.elapsed().as_secs_f64();
        self.run.save_state(&live.saved)?;
        self.finish(&live.saved, outcome, reason)
    }

    /// The run starts: its `on_loop_start` hook, where it is, who judges.
    fn say_start(&self, iteration: u32) {
        lifecycle::run(
            &self.s.hooks.on_loop_start,
            &self.facts("loop_start", iteration, &[]),
        );
        self.ui.note(&format!(
            "run {} in {}",
            self.run.id,
            self.run.path.display()
        ));
        self.say_who_judges();
    }

    /// A new run's estimate of its open steps (`before`), from past steps
    /// of this agent and model: said, journaled, kept with the run; and
    /// said when `--max-cost` is likely too little for them.
    fn estimate(&self, saved: &mut Saved, before: &Checkpoint) {
        use crate::history::costs;
        if self.s.workers.worker.is_some() || saved.estimate.is_some() || saved.state.iteration > 0
        {
            return;
        }
        let open = u32::try_from(before.total.saturating_sub(before.done)).unwrap_or(u32::MAX);
        if open == 0 {
            return;
        }
        let (event, past) = costs::estimated(
            &self.project.root,
            open,
            (
                &self.s.session.agent.to_string(),
                self.s.session.model.as_deref(),
            ),
            &self.s.session.prices,
        );
        self.report(event.clone());
        if let Some(cap) = self.limits.borrow().max_cost
            && let Some(line) = crate::history::said::cap_short(cap, &event, &past)
        {
            self.ui.note(&line);
        }
        if let crate::history::events::Event::Estimated { estimate, .. } = event {
            saved.estimate = estimate;
        }
    }

    /// The run's steps kept for the estimates of runs to come; how the
    /// estimate it began with compares with what it came to, said.
    fn keep_costs(&self, saved: &Saved, summary: &Summary) {
        use crate::history::{costs, estimate};
        if self.s.workers.worker.is_some() {
            return;
        }
        let steps = estimate::steps_of(&self.run.records());
        if let Some(e) = &saved.estimate {
            let spent = crate::output::spent(summary.cost_usd, summary.cost_unknown);
            self.ui.note(&format!(
                "the estimate was {} for {}; the run spent {spent} and did {}",
                if e.cost_known {
                    format!(
                        "{} (1 in 10: over {})",
                        crate::output::usd(e.usd.median),
                        crate::output::usd(e.usd.p90)
                    )
                } else {
                    format!("{:.0} sessions", e.sessions.median)
                },
                crate::output::counted(e.steps, "step", "steps"),
                steps.len()
            ));
        }
        if steps.is_empty() {
            return;
        }
        let key = costs::project_key(&self.project.root);
        let kept = costs::KeptRun::new(
            (&self.run.id, &key),
            (
                &self.s.session.agent.to_string(),
                self.s.session.model.as_deref(),
            ),
            timefmt::now_epoch(),
            !summary.cost_unknown,
            &steps,
        );
        if let Err(e) = costs::keep(&self.project.root, kept) {
            self.ui.note(&format!(
                "the run's costs are not kept for estimates: {e:#}"
            ));
        }
    }

    /// A worker's session claimed from the run's budget, then not started
    /// (the engine stopped or waited): given back.
    fn unclaim_unless_spawned(&self, claimed: bool, action: &Action) -> Result<()> {
        match &self.s.workers.worker {
            Some(w) if claimed && !matches!(action, Action::Spawn { .. }) => {
                crate::parallel::budget::unclaim_session(&w.budget, &w.name)
            }
            _ => Ok(()),
        }
    }

    /// Is the loop's project a worktree of another checkout?
    fn in_worktree(&self) -> bool {
        let root = &self.project.root;
        crate::run::worktree::main_root(root).is_ok_and(|main| &main != root)
    }

    /// At the start: what was uncommitted already, whose it is, and what
    /// becomes of it; its paths.
    /// What of the tree's uncommitted changes (`before`) is yours: with
    /// the run's own list of what was when it began (`at_start`), only
    /// what of it is still uncommitted; never a worker's (its worktree is
    /// the run's, made from a commit), nor ralph's own files.
    fn users_in(&self, before: &Checkpoint, at_start: Option<&[String]>) -> Vec<String> {
        if self.s.workers.worker.is_some() {
            return Vec::new();
        }
        // A worktree's `.ralph/` files are ralph's copies of the checkout's.
        let seeded = self.in_worktree();
        before
            .changed
            .iter()
            .filter(|p| !progress::OWN.contains(&p.as_str()))
            .filter(|p| !(seeded && p.starts_with(".ralph/")))
            .filter(|p| at_start.is_none_or(|a| a.contains(p)))
            .cloned()
            .collect()
    }

    /// Yours, said once as the run begins (or goes on).
    fn say_uncommitted(&self, paths: &[String]) {
        if paths.is_empty() {
            return;
        }
        let mut shown: Vec<&str> = paths.iter().take(5).map(String::as_str).collect();
        let more = format!("and {} more", paths.len().saturating_sub(5));
        if paths.len() > 5 {
            shown.push(&more);
        }
        let commit = if self.s.completion.commit_auto {
            "--commit auto leaves them out"
        } else {
            "no session is blamed for them"
        };
        self.ui.note(&format!(
            "uncommitted before this run began (yours, not a session's): {}; ralph leaves them as they are ({commit}); commit them first so that each session's changes stand alone",
            shown.join(", ")
        ));
    }

    /// At the start: who reviews, and where notices go.
    fn say_who_judges(&self) {
        if let Some(r) = &self.s.completion.review {
            let model = r
                .model
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            let when = match r.when {
                crate::work::review::When::Complete => "each COMPLETE",
                crate::work::review::When::Step => "each checked step",
            };
            let stops = match r.max_rounds {
                1 => "a rejection stops".to_string(),
                n => format!("{n} rejections in a row stop"),
            };
            self.ui.note(&format!(
                "a {}{model} review session judges {when}; {stops} the loop for a human",
                r.agent,
            ));
        }
        if let Some(n) = &self.s.notify {
            let to: Vec<String> = n.channels.iter().map(|c| c.shown()).collect();
            self.ui.note(&format!("notices go to {}", to.join(", ")));
        }
    }

    /// Carry out one action of the engine (any but `Stop`) and say what came
    /// of it.
    fn act(&self, action: Action, lock: &mut LoopLock, live: &mut Live) -> Result<Event> {
        let (s, ui) = (self.s, &self.ui);
        if let Some(agent) = live.limited.take() {
            self.share_limit(&action, agent, &live.saved)?;
        }
        Ok(match action {
            Action::Stop { .. } => unreachable!("the loop stops before acting"),
            Action::AwaitAnswer {
                outcome,
                reason,
                within,
            } => self.await_answer(lock, (outcome, &reason), within)?,
            Action::Round(need) => self.carry_out(need, live)?,
            Action::Review { of, session } => {
                let base = live.pending.as_ref().and(live.before.head.clone());
                let (event, record) = self.review(lock, &mut live.saved, (of, session), base)?;
                match live.pending.as_mut() {
                    // Appended after the record of the session it followed.
                    Some(p) => p.reviews.push(record),
                    None => self.append(&record)?,
                }
                event
            }
            Action::Prepare { iteration } => self.prepare(iteration, &live.saved, &live.before),

            Action::Spawn {
                iteration,
                session,
                agent,
            } => {
                lock.set_iteration(iteration)?;
                let ran = self.session(lock, live, (iteration, session), agent)?;
                Event::SessionRan(ran)
            }
            Action::Pause { wait, why } => {
                self.wait_out(lock, &why, wait)?;
                Event::Waited {
                    stop: crate::procs::signals::stop_requested(),
                }
            }
            Action::Fallback { from, to, why } => {
                ui.note(&format!(
                    "{}: {why}; the next sessions run on {} until it resets",
                    s.session.seat(from).agent,
                    s.session.seat(to).agent
                ));
                Event::Waited {
                    stop: crate::procs::signals::stop_requested(),
                }
            }
            Action::Wait { wait, why } => self.wait_for_limit(lock, &live.saved, wait, &why)?,
        })
    }

    /// A worker's session met its agent's usage limit: until when it holds
    /// (as the engine judged it), for the run's other workers.
    fn share_limit(&self, action: &Action, agent: usize, saved: &Saved) -> Result<()> {
        let Some(w) = &self.s.workers.worker else {
            return Ok(());
        };
        let until = match action {
            Action::Wait { wait, .. } => now_epoch() + wait.as_secs(),
            Action::Fallback { from, .. } => {
                saved.state.limited_until.get(*from).copied().unwrap_or(0)
            }
            _ => return Ok(()),
        };
        let name = self.s.session.seat(agent).agent.to_string();
        crate::parallel::budget::limited(&w.budget, &name, until)
    }

    /// Carry out what the engine's round needs.
    fn carry_out(&self, need: engine::Need, live: &mut Live) -> Result<Event> {
        use engine::Need;
        Ok(match need {
            Need::Baseline => Event::Baselined(self.take_baseline(&mut live.saved)?),
            Need::Judge => Event::Claimed(self.claim(&live.saved)?),
            need @ Need::SetAside { .. } => self.aside(&live.saved, need)?,
            Need::RunGate { each } => Event::GateRan(self.gate(live, each)?),
            Need::Review(_) => unreachable!("the engine numbers a review: Action::Review"),
            Need::Uncheck(why) => {
                let p = live.pending.as_mut().expect("a session's round unchecks");
                self.uncheck(why, &live.before, &mut p.after)?;
                Event::Unchecked
            }
            Need::Settle => Event::Settled(self.settle(live)),
            Need::Push => Event::Pushed(self.push_after_session(live)),
            Need::CloseIssues => {
                Event::IssuesClosed(self.close_done_issues(live.saved.issues_at_start.as_deref())?)
            }
            Need::Record => Event::SessionEnded(Box::new(self.record_session(live)?)),
            Need::Look => self.between(&live.before, &live.saved.state.skipped)?,
        })
    }

    /// Wait for a usage limit to reset: told (`[notify]`, `on_limit`) when
    /// long, then waited out.
    fn wait_for_limit(
        &self,
        lock: &mut LoopLock,
        saved: &Saved,
        wait: std::time::Duration,
        why: &str,
    ) -> Result<Event> {
        if self.outbox.tells_wait(wait) {
            self.outbox.tell(
                crate::notify::Event::Limit,
                &format!(
                    "waiting {} for a usage limit to reset",
                    timefmt::human_duration(wait)
                ),
                "nothing to do: it goes on by itself (a --fallback agent would not wait)",
            );
        }
        let it = saved.state.iteration.to_string();
        let facts = [(env::REASON, why), (env::ITERATION, it.as_str())];
        lifecycle::run(
            &self.s.hooks.on_limit,
            &self.facts("limit", saved.state.iteration, &facts),
        );
        self.wait_out(lock, why, wait)?;
        Ok(Event::Waited {
            stop: crate::procs::signals::stop_requested(),
        })
    }

    /// Wait before the next session, with the lock saying until when.
    fn wait_out(&self, lock: &mut LoopLock, why: &str, wait: std::time::Duration) -> Result<()> {
        lock.set_waiting(Some((now_epoch() + wait.as_secs(), why.to_string())))?;
        let until = crate::history::events::At::now().after(wait);
        let why_ = why.to_string();
        self.journal()
            .add(crate::history::events::Event::Paused { why: why_, until });
        countdown::wait(&self.ui, why, wait);
        lock.set_waiting(None)
    }

    /// Before a session: its status line and the `on_session_start` hook.
    fn prepare(&self, iteration: u32, saved: &Saved, before: &Checkpoint) -> Event {
        let standing = crate::history::events::Standing {
            max_iterations: self.limits.borrow().max_iterations,
            spec: spec_text(before),
            elapsed: std::time::Duration::try_from_secs_f64(saved.elapsed_s).unwrap_or_default(),
            cost_usd: saved.state.cost_usd,
            cost_unknown: saved.cost_unknown,
        };
        self.headline(&crate::history::events::Event::SessionStarted {
            session: saved.state.sessions + 1,
            iteration,
            agent: self.s.session.seat(saved.state.agent).agent,
            review: false,
            standing: Some(standing.clone()),
            subject: None,
        });
        self.standing.replace(Some(standing));
        lifecycle::run(
            &self.s.hooks.on_session_start,
            &self.facts("session_start", iteration, &[]),
        );
        let stop = crate::procs::signals::stop_requested();
        let shared = match (&self.s.workers.worker, &stop) {
            (Some(w), None) => match crate::parallel::budget::claim_session(
                &w.budget,
                &self.s.session.seat(saved.state.agent).agent.to_string(),
                &w.name,
                now_epoch(),
            ) {
                Ok(s) => Some(s),
                Err(e) => {
                    self.ui.note(&format!("{e:#}"));
                    None
                }
            },
            _ => None,
        };
        let machine = stop.is_none().then(|| self.machine()).flatten();
        Event::BeforeSpawn {
            stop,
            shared,
            machine,
        }
    }

    /// Start one session (work, or with `settings` of its own a review)
    /// and wait for its end; what ran, for the record (not the prompt, in
    /// interactive mode).
    pub(crate) fn launch(
        &self,
        lock: &mut LoopLock,
        (settings, seat): (&Settings, crate::session::Seat),
        (iteration, number): (u32, u32),
        base: Option<String>,
    ) -> Result<(session::Finished, Vec<String>)> {
        let who = launch::Who {
            run_dir: &self.run.real_path,
            stream_file: self.run.stream_file(number)?,
            iteration,
            session: number,
            secret: &self.secret,
            base,
        };
        let ui = self.ui;
        let show = Box::new(move |x| ui.show(x));
        let mut spec = launch::session(self.project, &settings.given(), seat, who, show)?;
        spec.timeout =
            engine::session_timeout(spec.timeout, self.limits.borrow().max_time, self.elapsed());
        let mut command = vec![spec.program.display().to_string()];
        let shown = spec.args.len() - usize::from(settings.session.interactive);
        command.extend(spec.args.iter().take(shown).cloned());
        let ended = self.run_to_end(lock, spec, number)?;
        Ok((ended, command))
    }

    /// Run a session to its end, the lock naming it. A
    /// confined session's changes to the repository's git config, hooks
    /// and pointers are put back, and said.
    fn run_to_end(
        &self,
        lock: &mut LoopLock,
        spec: session::Launch,
        number: u32,
    ) -> Result<session::Finished> {
        let kept = self.s.confined.as_ref().and_then(|_| {
            use crate::sandbox::gitguard;
            let root = &self.project.root;
            // A parallel run's worker: the shared files as the run found them.
            let base = self.s.workers.worker.as_ref().and_then(|w| {
                gitguard::Baseline::load(&crate::parallel::budget::baseline_path(&w.budget))
            });
            match base {
                Some(b) => gitguard::keep_from(root, &b),
                None => gitguard::keep(root),
            }
        });
        let agent = spec.agent;
        // ralph's config where there was none: whatever the sandbox, a
        // confined session may not make one (it would set the next run's
        // options, with nobody asked).
        let config = self.project.config();
        let no_config = self.s.confined.is_some() && std::fs::symlink_metadata(&config).is_err();
        let running = session::spawn(spec)?;
        lock.set_session(Some((running.pid, running.start_time)))?;
        let ended = running.wait();
        lock.set_session(None)?;
        if let Ok(e) = &ended
            && !e.removed.is_empty()
        {
            self.ui.note(&format!(
                "session {number} ({agent}) made what a confined session may not, as it would run or steer what runs later, outside any sandbox: {}",
                e.removed.join("; ")
            ));
        }
        if no_config && std::fs::symlink_metadata(&config).is_ok() {
            let done = std::fs::remove_file(&config)
                .map(|()| format!("removed {}", config.display()))
                .unwrap_or_else(|e| format!("could not remove {}: {e}", config.display()));
            self.ui.note(&format!(
                "session {number} ({agent}) made .ralph/config.toml, which a confined session may not: {done}"
            ));
        }
        if let Some(k) = kept {
            let said = k
                .restore()
                .map_err(|e| anyhow::anyhow!("session {number}: {e}"))?;
            if !said.is_empty() {
                self.ui.note(&format!(
                    "session {number} changed the repository's git setup, which a confined session may not (git would run what it names): {}",
                    said.join("; ")
                ));
            }
        }
        ended
    }

    /// Run one session and say how it ended; what it left waits in
    /// `live.pending` for its round.
    fn session(
        &self,
        lock: &mut LoopLock,
        live: &mut Live,
        (iteration, number): (u32, u32),
        agent: usize,
    ) -> Result<engine::SessionRan> {
        let (start, seat, project) = (timefmt::now(), self.s.session.seat(agent), self.project);
        let before = &live.before;
        self.log_heading(number, &start, seat, before);
        let base = live.saved.first_head.clone();
        self.journal()
            .add(crate::history::events::Event::SessionStarted {
                session: number,
                iteration,
                agent: seat.agent,
                review: false,
                standing: self.standing.take(),
                subject: None,
            });
        let answered = self.answered.borrow_mut().take().filter(|g| {
            crate::run::engine::pause::choice(&g.answer) == crate::run::engine::pause::Choice::More
        });
        // Told first, in its prompt, what a human answered, and the steps
        // they skipped.
        let first: Vec<String> = answered
            .iter()
            .map(crate::run::asking::Given::told)
            .chain(crate::run::asking::skipped_told(&live.saved.state.skipped))
            .collect();
        let told;
        let settings = match first.is_empty() {
            true => self.s,
            false => {
                told = self.prompt_with(&first.join("\n"), number)?;
                &told
            }
        };
        let (ended, command) = self.launch(lock, (settings, seat), (iteration, number), base)?;
        if answered.is_some() {
            crate::fsutil::remove_optional(&crate::run::asking::answer_file(project))?;
        }
        let after = progress::take(&project.root, &project.spec());
        let no_evidence = self.no_evidence(number, before, &after);
        let no_change = self.no_change(number, before, &after);
        let outcome = self.outcome_of(&ended, self.s.session.interactive);
        live.saved.tokens.add(&ended.stream.usage);
        live.pending = Some(Pending {
            iteration,
            number,
            agent,
            start,
            command,
            left_uncommitted: after.left_changes_since(before),
            ended,
            outcome: outcome.clone(),
            after,
            no_evidence,
            no_change,
            auto_commit: None,
            progress: engine::Progress::Unknown,
            gate: None,
            reviews: Vec::new(),
        });
        Ok(engine::SessionRan {
            session: number,
            outcome,
            no_change,
        })
    }

    /// What a session left, settled: with `--commit auto` its uncommitted
    /// changes committed; what it changed, and the boxes it checked.
    fn settle(&self, live: &mut Live) -> engine::Settled {
        let p = live.pending.as_mut().expect("a session's round settles it");
        p.auto_commit = self.commit_leftovers(
            (&p.ended, p.number),
            (&live.before, &mut p.after),
            &live.users,
        );
        p.progress = progress::compare(&live.before, &p.after);
        let text = crate::fsutil::read_optional(&self.project.spec())
            .ok()
            .flatten()
            .unwrap_or_default();
        let (_, checked) = crate::work::add::uncheck_new(&text, &live.before.boxes);
        engine::Settled {
            progress: p.progress,
            checked,
            committed: p.after.head != live.before.head,
        }
    }

    /// The boxes checked since `before`, unchecked again (`after` then
    /// shows it), and why said: for `[gate] require_change` also to the
    /// next session (as a gate failure is: `.ralph/gate-failed.md`, which
    /// the prompt reads first).
    fn uncheck(
        &self,
        why: engine::Uncheck,
        before: &Checkpoint,
        after: &mut Checkpoint,
    ) -> Result<()> {
        let spec = self.project.spec();
        let text = crate::fsutil::read_optional(&spec)?.unwrap_or_default();
        let (undone, steps) = crate::work::add::uncheck_new(&text, &before.boxes);
        crate::fsutil::atomic_write(&spec, undone.as_bytes(), 0o644)?;
        let steps = steps.join(", ");
        match why {
            engine::Uncheck::NoChange { session } => {
                let text = format!(
                    "# A step was checked without a change\n\nSession {session} checked {steps}, but changed nothing besides `.ralph/`. \
                     With `[gate] require_change` a box counts only with the step's work: ralph unchecked it. \
                     Do the step's work, verify it, commit it, then check the box.\n"
                );
                crate::fsutil::atomic_write(
                    &gate::feedback_path(self.project),
                    text.as_bytes(),
                    0o644,
                )?;
                self.ui.note(&format!(
                    "[gate] require_change: unchecked {steps} again; the next session finds why in .ralph/gate-failed.md"
                ));
            }
            engine::Uncheck::Review => self
                .ui
                .note(&format!("unchecked {steps} again until a review approves")),
        }
        *after = progress::take(&self.project.root, &spec);
        Ok(())
    }

    /// The session's round is judged: its record (with the gate that ran
    /// in its round, then the reviews' records), what the user should know,
    /// and what the engine counts.
    fn record_session(&self, live: &mut Live) -> Result<engine::Recorded> {
        let p = live.pending.take().expect("a session's round records it");
        if matches!(p.outcome, SessionOutcome::Limited(_)) {
            live.limited = Some(p.agent);
        }
        let before = &live.before;
        let seat = self.s.session.seat(p.agent);
        let session = Ran {
            iteration: p.iteration,
            number: p.number,
            seat,
            left_uncommitted: p.left_uncommitted,
            auto_commit: p.auto_commit.clone(),
            no_evidence: p.no_evidence,
            no_change: p.no_change,
            cost: self.cost_of(&p.ended.stream, seat),
            start: p.start.clone(),
            command: p.command.clone(),
            ended: &p.ended,
            outcome: &p.outcome,
            before,
            after: &p.after,
        };
        let record = self.record(&session, p.gate.clone());
        let tokens = record.tokens.total();
        self.append(&record)?;
        let (error, cost) = self.tell(&session, p.progress, p.gate.as_ref(), &mut live.saved);
        for record in &p.reviews {
            self.append(record)?;
        }
        let quit_by_user = self.quit_by_user(&p.ended);
        // `before` is the next session's: this one's `after`.
        let skipped = &live.saved.state.skipped;
        let step_before = std::mem::replace(&mut live.before, p.after).next_except(skipped);
        Ok(engine::Recorded {
            error,
            cost_usd: cost.unwrap_or(0.0),
            cost_unknown: cost.is_none(),
            tokens,
            waiting: sentinel::Waiting::read(&self.project.waiting())?.map(|w| w.reason),
            quit_by_user,
            now_epoch: now_epoch(),
            step_before,
            step_after: live.before.next_except(skipped),
        })
    }

    /// `--push` (`Need::Push`): what a session committed goes to the
    /// remote as its round ends; why the push needs a human, if it does. A
    /// rebase moved HEAD: the next session starts from there.
    fn push_after_session(&self, live: &mut Live) -> Option<String> {
        let ship = self.ship.as_ref()?;
        let root = &self.project.root;
        let refused = ship.push(root, &|e| self.report(e)).err();
        if let Some(p) = live.pending.as_mut() {
            let now = progress::take(root, &self.project.spec());
            if now.head != p.after.head {
                p.after = now;
            }
        }
        refused.map(|why| format!("--push: {why}"))
    }

    /// After a session's record: its `on_session_end` hook, what the user
    /// should know, its line in the progress log. The error and the cost.
    fn tell(
        &self,
        r: &Ran<'_>,
        progress: engine::Progress,
        gate: Option<&gate::Verdict>,
        saved: &mut Saved,
    ) -> (String, Option<f64>) {
        let text = r.outcome.as_text();
        let facts = [(env::SESSION_OUTCOME, text.as_str())];
        lifecycle::run(
            &self.s.hooks.on_session_end,
            &self.facts("session_end", r.iteration, &facts),
        );
        let error = self.error_of(r.ended);
        self.say_after(r, progress, &error, saved.state.failures + 1);
        let cost = r.cost;
        if cost.is_none() {
            self.ui.note(&self.why_cost_unknown(r));
        }
        self.log_footer(r, gate, cost);
        saved.cost_unknown |= cost.is_none();
        (error, cost)
    }

    /// Why session `r`'s cost is not known, and where a price goes.
    fn why_cost_unknown(&self, r: &Ran<'_>) -> String {
        let agent = r.seat.agent;
        let u = &r.ended.stream.usage;
        let tokens = u.input_tokens + u.output_tokens + u.cache_read_input_tokens;
        if agent.reports_cost() {
            format!(
                "session {}'s cost is not known: {agent} priced its {tokens} tokens at $0 (its own config has no price for this model)",
                r.number
            )
        } else {
            let model = r
                .seat
                .model
                .or(r.ended.stream.model.as_deref())
                .unwrap_or("its model");
            format!(
                "session {}'s cost is not known: ralph has no price for {model} (give one in [prices] of .ralph/config.toml)",
                r.number
            )
        }
    }

    /// Did the session check a box and change nothing besides `.ralph/`?
    /// Said when so (with `[gate] require_change` the engine has the boxes
    /// unchecked).
    fn no_change(&self, number: u32, before: &Checkpoint, after: &Checkpoint) -> bool {
        let none = after.done > before.done
            && progress::work_changed(&self.project.root, before.head.as_deref()) == Some(false);
        if none {
            self.ui.note(&format!(
                "session {number} checked a box but changed nothing besides .ralph/"
            ));
        }
        none
    }

    /// Did the session check a box and write no evidence under its heading?
    /// Said when so.
    fn no_evidence(&self, number: u32, before: &Checkpoint, after: &Checkpoint) -> bool {
        let log = crate::fsutil::read_tail(
            &self.project.progress_log(),
            crate::work::progress_log::TAIL_BYTES,
        );
        let none = after.done > before.done
            && !log.is_some_and(|t| crate::work::progress_log::has_evidence(&t, number));
        if none {
            self.ui.note(&format!(
                "session {number} checked a box but wrote no evidence in .ralph/progress.md"
            ));
        }
        none
    }

    /// Before a session: its heading in `.ralph/progress.md`. The log is the
    /// sessions' notes: a failure to write it is said, never fatal.
    fn log_heading(
        &self,
        number: u32,
        time: &str,
        seat: crate::session::Seat,
        before: &Checkpoint,
    ) {
        let learnings = crate::work::budget::tokens_within(
            &self.project.learnings(),
            crate::work::progress_log::LEARNINGS_BUDGET,
        );
        let agent = match seat.model {
            Some(m) => format!("{} ({m})", seat.agent),
            None => seat.agent.to_string(),
        };
        let heading = crate::work::progress_log::heading(
            number,
            time,
            &agent,
            before.next.as_deref(),
            learnings,
        );
        self.log_append(&heading);
    }

    /// After a session: how it went, under its entry.
    fn log_footer(&self, r: &Ran<'_>, gate: Option<&gate::Verdict>, cost: Option<f64>) {
        let commits = match (&r.before.head, &r.after.head) {
            (a, Some(b)) => progress::commits_between(&self.project.root, a.as_deref(), b),
            _ => Some(0),
        };
        let gate = gate.map(|g| {
            if g.passed {
                "passed".into()
            } else {
                g.summary()
            }
        });
        let cost = crate::output::spent(cost.unwrap_or(0.0), cost.is_none());
        let line = crate::work::progress_log::footer(
            &r.outcome.as_text(),
            commits,
            gate.as_deref(),
            &cost,
        );
        self.log_append(&line);
    }

    fn log_append(&self, text: &str) {
        if let Err(e) = crate::fsutil::append_regular(&self.project.progress_log(), text.as_bytes())
        {
            self.ui.note(&format!(
                "{e:#}; the session goes on without its progress entry"
            ));
        }
    }

    /// How a session ended, as the engine reads it (a review session runs
    /// in print mode whatever the run's mode).
    pub(crate) fn outcome_of(
        &self,
        ended: &session::Finished,
        interactive: bool,
    ) -> SessionOutcome {
        let end = engine::SessionEnd {
            ending: ended.ending,
            interactive,
            exit_ok: ended.status.is_some_and(|x| x.success()),
            result_ok: ended.stream.result_ok(),
            limit: ended.stream.limit.clone(),
        };
        engine::classify(&end, crate::procs::signals::stop_requested().as_deref())
    }

    /// With `--commit auto`: commit what the session left uncommitted (not
    /// after a stop request), said either way; `after` then shows the
    /// commit. Without it, a session that left changes is said.
    fn commit_leftovers(
        &self,
        (ended, number): (&session::Finished, u32),
        (before, after): (&Checkpoint, &mut Checkpoint),
        users: &[String],
    ) -> Option<String> {
        if !after.left_changes_since(before) {
            return None;
        }
        if !self.s.completion.commit_auto || ended.ending == engine::Ending::Stopped {
            self.ui
                .note(&format!("session {number} left changes uncommitted"));
            return None;
        }
        let step = before.next.as_deref().unwrap_or("no open step");
        let message = format!("ralph: uncommitted work of session {number} (step {step})");
        match progress::commit_leftovers(&self.project.root, &message, users) {
            Ok(id) => {
                self.ui.note(&format!(
                    "committed what session {number} left uncommitted: {id}"
                ));
                *after = progress::take(&self.project.root, &self.project.spec());
                Some(id)
            }
            Err(why) => {
                self.ui.note(&format!(
                    "session {number}'s uncommitted changes were not committed (they stay as they are): {}",
                    why.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" / ")
                ));
                None
            }
        }
    }

    /// What a session cost: as the agent said (Claude Code), else its tokens
    /// at the model's price (by model, where the stream breaks them down);
    /// `None` when a model that did work has no price.
    pub(crate) fn cost_of(
        &self,
        st: &crate::agent::stream::Session,
        seat: crate::session::Seat,
    ) -> Option<f64> {
        cost_of(st, seat, &self.s.session.prices)
    }

    /// The session's record, as `records.jsonl` keeps it.
    pub(crate) fn record(&self, r: &Ran<'_>, gate: Option<gate::Verdict>) -> Record {
        let (ended, st) = (r.ended, &r.ended.stream);
        Record {
            iteration: r.iteration,
            session: r.number,
            counted: r.outcome.counted(),
            session_id: st.session_id.clone(),
            pid: ended.pid,
            start: r.start.clone(),
            end: timefmt::now(),
            duration_s: ended.duration.as_secs_f64(),
            exit_code: ended.status.and_then(|x| x.code()),
            outcome: r.outcome.clone(),
            is_error: st.any_error,
            cost_usd: r.cost.unwrap_or(0.0),
            tokens: Tokens::from(&st.usage),
            num_turns: st.num_turns,
            results: st.results,
            tool_calls: st.tool_calls,
            head_before: r.before.head.clone(),
            head_after: r.after.head.clone(),
            spec_before: spec_text(r.before),
            spec_after: spec_text(r.after),
            leftovers_ended: ended.leftovers.len(),
            stream_file: (!self.s.session.interactive).then(|| {
                let name = RunDir::stream_name(r.number);
                self.run.path.join(name).display().to_string()
            }),
            gate,
            confined: self.s.confined.is_some(),
            command: r.command.clone(),
            agent: r.seat.agent,
            model: r.seat.model.map(String::from).or_else(|| st.model.clone()),
            cost_unknown: r.cost.is_none(),
            left_uncommitted: r.left_uncommitted,
            auto_commit: r.auto_commit.clone(),
            no_evidence: r.no_evidence,
            no_change: r.no_change,
            review: None,
            worker: None,
            step: None,
        }
    }

    /// The run's settings with session `number`'s prompt: what a human
    /// answered, then the run's own prompt (kept in the run folder).
    fn prompt_with(&self, first: &str, number: u32) -> Result<Settings> {
        let own = crate::fsutil::read_optional(&self.s.session.prompt)?.unwrap_or_default();
        let path = self.run.path.join(format!("prompt-{number:03}.md"));
        crate::fsutil::atomic_write(&path, format!("{first}\n---\n\n{own}").as_bytes(), 0o600)?;
        let mut settings = self.s.clone();
        settings.session.prompt = path;
        Ok(settings)
    }

    /// What the user should know of a session that ended: processes it left,
    /// a timeout or failure, extra results, changes ralph could not see.
    fn say_after(&self, r: &Ran<'_>, progress: engine::Progress, error: &str, failures: u32) {
        let (ui, iteration, ended) = (&self.ui, r.iteration, r.ended);
        if !ended.leftovers.is_empty() {
            let names: Vec<String> = ended
                .leftovers
                .iter()
                .map(|(pid, name)| format!("{name} ({pid})"))
                .collect();
            ui.note(&format!(
                "ended {} process(es) the session left running: {}",
                ended.leftovers.len(),
                names.join(", ")
            ));
        }
        match r.outcome {
            SessionOutcome::TimedOut => ui.note(&format!(
                "session {iteration} timed out after {}; ended it",
                timefmt::human_duration(self.s.session.timeout)
            )),
            SessionOutcome::Failed => ui.note(&format!(
                "session {iteration} failed ({failures} in a row): {error}"
            )),
            _ => {}
        }
        if ended.stream.results > 1 {
            ui.note(&format!(
                "the session reported {} results (it ran another turn after a background task); counted once",
                ended.stream.results
            ));
        }
        if progress == engine::Progress::Unknown {
            ui.note(
                "cannot tell what the session changed (git failed); not counted as no progress",
            );
        }
    }

    /// Did the user quit claude (interactive), rather than the hook end it?
    /// The hook's log is read only where it can tell.
    fn quit_by_user(&self, ended: &session::Finished) -> bool {
        let hook_ended_it = self.s.session.interactive
            && crate::handoff::hook_ended(
                &crate::fsutil::read_optional_capped(
                    &self.run.hook_log(),
                    crate::fsutil::RUN_FILE_CAP,
                )
                .ok()
                .flatten()
                .unwrap_or_default(),
                ended.pid,
            );
        engine::quit_by_user(self.s.session.interactive, ended.ending, hook_ended_it)
    }

    /// What went wrong in a session, in a line: its own error, else how it
    /// ended.
    fn error_of(&self, ended: &session::Finished) -> String {
        let (s, st) = (self.s, &ended.stream);
        let last_result = st.outcome.clone().unwrap_or_default();
        st.last_error
            .clone()
            .or_else(|| last_result.is_error.then(|| last_result.text.clone()))
            .unwrap_or_else(|| match (ended.ending, ended.status) {
                (engine::Ending::TimedOut, _) => {
                    format!(
                        "timed out after {}",
                        timefmt::human_duration(s.session.timeout)
                    )
                }
                (_, Some(x)) if x.success() && !s.session.interactive => {
                    format!(
                        "{} exited with status 0 without reporting a result",
                        s.session.agent
                    )
                }
                (_, Some(x)) => format!(
                    "{} exited with {}",
                    s.session.agent,
                    crate::output::ended(x)
                ),
                _ => format!("{} ended without a result", s.session.agent),
            })
    }

    pub(crate) fn finish(&self, saved: &Saved, outcome: Outcome, reason: String) -> Result<u8> {
        let (run, project) = (self.run, self.project);
        let last = progress::take(&project.root, &project.spec());
        let commits = match (&saved.first_head, &last.head) {
            (a, Some(b)) => progress::commits_between(&project.root, a.as_deref(), b),
            _ => Some(0),
        };
        // The loop's own COMPLETE, accepted: now it is written.
        if let Some(c) = self.handed.borrow_mut().take()
            && outcome == Outcome::Complete
        {
            c.write(&project.complete())?;
        }
        if outcome == Outcome::Complete && self.s.workers.worker.is_none() {
            self.close_epic();
        }
        self.write_waiting(outcome, &reason)?;
        let mut summary = Summary {
            run_id: run.id.clone(),
            outcome,
            exit_code: outcome.code(),
            reason: reason.clone(),
            iterations: saved.state.iteration,
            sessions: saved.state.sessions,
            max_iterations: self.limits.borrow().max_iterations,
            duration: timefmt::human_duration(std::time::Duration::from_secs_f64(saved.elapsed_s)),
            duration_s: saved.elapsed_s,
            cost_usd: saved.state.cost_usd,
            tokens: saved.tokens.clone(),
            commits,
            spec: spec_text(&last),
            started: saved.started.clone(),
            ended: timefmt::now(),
            resumed: saved.resumed,
            gate: saved.last_gate.clone(),
            confined: self.s.confined.is_some(),
            agent: self.s.session.agent,
            cost_unknown: saved.cost_unknown,
            reviews: saved.state.reviews,
            review: saved.last_review.clone(),
            pull_request: None,
            estimate: saved.estimate.clone(),
            baseline: saved.judged.clone().filter(|_| saved.baseline.is_some()),
        };
        run.write_summary(&summary)?;
        if let Some(j) = &summary.baseline {
            let said = crate::work::baseline::said(j);
            if let Some(said) = said.strip_prefix("; ") {
                self.ui.note(&format!("the gate: {said}"));
            }
        }
        // You stopped it: what it leaves is yours to see as it is.
        if outcome != Outcome::Interrupted {
            self.commit_own();
            if let Some(ship) = &self.ship {
                crate::run::ship_end::finish(
                    ship,
                    (project, &|e| self.report(e)),
                    saved,
                    &mut summary,
                )?;
                run.write_summary(&summary)?;
            }
        }
        let end = crate::history::events::end_event(
            summary.outcome,
            &summary.reason,
            Some(crate::history::events::Totals::of(&summary)),
        );
        self.headline(&end);
        self.keep_costs(saved, &summary);
        self.journal().add(end.clone());
        // A worker's end is its run's to tell.
        if self.s.workers.worker.is_none() {
            self.end_hook(&summary);
        }
        self.say_next(&summary);
        let checks = summary
            .baseline
            .as_ref()
            .map(crate::work::baseline::counted)
            .unwrap_or_default();
        self.tell_end(&end, &checks);
        Ok(summary.outcome.code())
    }

    /// The one place the loop asks for a human: the run's end, or its wait
    /// for an answer, by what the engine decided (a session's own WAITING
    /// is kept as it wrote it).
    pub(crate) fn write_waiting(&self, outcome: Outcome, reason: &str) -> Result<()> {
        let project = self.project;
        if outcome.writes_waiting() {
            let mut waiting = sentinel::Waiting::new(format!(
                "{}: {reason}; see {}",
                outcome.text(),
                self.run.path.display()
            ));
            // A paused step asks what to do with it.
            if outcome == Outcome::StepBudget
                && let Some(cap) = self.limits.borrow().max_cost_per_step
            {
                waiting.options = crate::run::engine::pause::options(cap);
            }
            waiting.write(&project.waiting())?;
        } else if outcome == Outcome::Waiting
            // A link planted there is not a session's WAITING: replaced.
            && !std::fs::symlink_metadata(project.waiting()).is_ok_and(|m| m.is_file())
        {
            sentinel::Waiting::new(reason).write(&project.waiting())?;
        }
        Ok(())
    }

    /// The run's end (its journal's `end` event), told (`[notify]`), and
    /// any notice that failed, said.
    /// `checks`: what the gate's baseline says of the checks, if anything.
    fn tell_end(&self, end: &crate::history::events::Event, checks: &str) {
        if let Some((outcome, reason)) = end.end()
            && let Some((event, todo)) = outcome.notice()
        {
            // Only ralph's own words: a complete run's reason is its count.
            let what = match outcome {
                Outcome::Complete => format!("complete, {reason}{checks}"),
                o => o.text().to_string(),
            };
            // Merging is for a worktree's loop, not the checkout's own.
            let todo = match outcome {
                Outcome::Complete if !self.in_worktree() => {
                    todo.split_once(';').map_or(todo, |(review, _)| review)
                }
                _ => todo,
            };
            self.outbox.tell(event, &what, todo);
        }
        for failed in self.outbox.finish(crate::notify::send::FINISH_WITHIN) {
            self.ui.note(&format!(
                "{failed} (see {})",
                self.run.path.join("notifications.jsonl").display()
            ));
        }
    }

    /// What the run changed of ralph's own files meant for git (each
    /// session's notes in `.ralph/progress.md`, `.ralph/.gitignore`),
    /// committed on its own, so that a finished run leaves nothing of
    /// ralph's uncommitted; said. A file that had changes of yours before
    /// the run is left to you.
    fn commit_own(&self) {
        let root = &self.project.root;
        let Some(changed) = progress::uncommitted_among(root, &progress::OWN) else {
            return;
        };
        let ours: Vec<String> = changed
            .into_iter()
            .filter(|p| !self.own_dirty.contains(p))
            .collect();
        if ours.is_empty() {
            return;
        }
        let message = format!("ralph: notes of run {}", self.run.id);
        match progress::commit_own(root, &ours, &message) {
            Ok(id) => self.ui.note(&format!(
                "committed ralph's notes ({}): {id}",
                ours.join(", ")
            )),
            Err(why) => self.ui.note(&format!(
                "ralph's notes ({}) stay uncommitted: {}",
                ours.join(", "),
                why.lines().last().unwrap_or("git failed")
            )),
        }
    }

    /// The lifecycle hook the run's end fires, if any.
    fn end_hook(&self, summary: &Summary) {
        let (outcome, hooks) = (summary.outcome, &self.s.hooks);
        if let Some(hook) = outcome.hook() {
            let cmd = match hook {
                engine::EndHook::Complete => &hooks.on_complete,
                engine::EndHook::Waiting => &hooks.on_waiting,
                engine::EndHook::Limit => &hooks.on_limit,
            };
            lifecycle::run(
                cmd,
                &self.facts(
                    hook.event(),
                    summary.iterations,
                    &[
                        (env::REASON, &summary.reason),
                        (env::OUTCOME, outcome.text()),
                    ],
                ),
            );
        }
    }

    /// After the run's end line: what the user can do next.
    fn say_next(&self, summary: &Summary) {
        let (ui, outcome, root) = (&self.ui, summary.outcome, &self.project.root);
        // A worker's branch is its coordinator's to merge, not the user's.
        if outcome == Outcome::Complete
            && self.s.workers.worker.is_none()
            && let Some((main, b)) = self.worktree_of()
        {
            let name = b.strip_prefix("ralph/").unwrap_or(&b);
            ui.line(&match &summary.pull_request {
                // `--pr`: it is merged where its pull request is.
                Some(pr) => format!(
                    "The work is on branch {b} (worktree {}), in pull request #{}: {}. Merge it there; then `ralph worktree remove {name}` in {}.",
                    root.display(),
                    pr.number,
                    crate::output::visible_line(&pr.url),
                    main.display()
                ),
                None => format!(
                    "The work is on branch {b} (worktree {}). Merging it is yours to decide: in {}, `ralph worktree merge {name}` (it keeps the checkout's own .ralph/).",
                    root.display(),
                    main.display()
                ),
            });
        }
        // How to go on is the run's to say, once, not each worker's.
        if let Some(hint) = outcome.hint().filter(|_| self.s.workers.worker.is_none()) {
            ui.line(&self.hint_here(hint));
        }
    }

    /// This loop's main checkout and branch, when it runs in a linked
    /// worktree.
    fn worktree_of(&self) -> Option<(std::path::PathBuf, String)> {
        let root = &self.project.root;
        let main = crate::run::worktree::main_root(root).ok()?;
        if &main == root {
            return None;
        }
        Some((main, crate::git::branch(root)?))
    }

    /// A hint's commands as they are typed for this loop: a worktree
    /// loop's are run from the checkout, naming it (`ralph loop --worktree
    /// NAME --resume`; `ralph resume -C <worktree>`).
    fn hint_here(&self, hint: &str) -> String {
        let root = &self.project.root;
        let name = self
            .worktree_of()
            .and_then(|(_, b)| b.strip_prefix("ralph/").map(str::to_string));
        match name {
            Some(name) => hint
                .replace(
                    "`ralph loop --resume",
                    &format!("`ralph loop --worktree {name} --resume"),
                )
                .replace(
                    "`ralph resume`",
                    &format!("`ralph resume -C {}`", root.display()),
                ),
            None => hint.to_string(),
        }
    }
}

/// What a session cost: as the agent said (Claude Code), else its tokens
/// at the model's price (by model, where the stream breaks them down);
/// `None` when a model that did work has no price.
pub(crate) fn cost_of(
    st: &crate::agent::stream::Session,
    seat: crate::session::Seat,
    prices: &std::collections::BTreeMap<String, crate::agent::prices::Price>,
) -> Option<f64> {
    use crate::agent::prices::{cost, price};
    if seat.agent.reports_cost() {
        // pi and opencode price tokens from the user's own config: no
        // price there is $0 for work done, which is not known.
        let worked = st.usage.input_tokens + st.usage.output_tokens > 0;
        return (st.cost_usd > 0.0 || !worked).then_some(st.cost_usd);
    }
    let worked: Vec<_> = st
        .by_model
        .iter()
        .filter(|(_, u)| *u != Default::default())
        .collect();
    if !worked.is_empty() {
        return worked
            .iter()
            .map(|(m, u)| price(m, prices).map(|p| cost(u, p)))
            .sum();
    }
    let model = seat.model.or(st.model.as_deref())?;
    Some(cost(&st.usage, price(model, prices)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(root: &std::path::Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgSign=false",
            ])
            .args(args)
            .current_dir(root)
            .output()
            .expect("git runs")
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    /// The shell carries out a round in-process, and all it says is the
    /// reporter's: a COMPLETE written after a protected file changed is set
    /// aside, WAITING says how to go on, and the engine stops for a human.
    #[test]
    fn a_complete_after_a_protected_change_is_set_aside_and_waits_for_a_human() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join(".ralph")).unwrap();
        std::fs::write(root.join(".ralph/prompt.md"), "do it\n").unwrap();
        std::fs::write(root.join(".ralph/spec.md"), "# S\n\n- [x] one\n").unwrap();
        std::fs::write(root.join("ci.yml"), "run: test\n").unwrap();
        git(root, &["init", "-q", "-b", "main"]);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "start"]);
        let project = Project::at(root);
        let before = progress::take(root, &project.spec());
        std::fs::write(root.join("ci.yml"), "run: true\n").unwrap();
        git(root, &["commit", "-qam", "skip the tests"]);
        std::fs::write(project.complete(), "done\n").unwrap();

        let cli = crate::config::Options {
            claude: Some("/bin/true".into()),
            gate: crate::config::GateConfig {
                protect: Some(vec!["ci.yml".into()]),
                ..Default::default()
            },
            ..Default::default()
        };
        let s = crate::run::options::settings(&cli, &project, None).unwrap();
        let run = RunDir::create(&project.runs()).unwrap();
        let (ui, said) = Ui::captured();
        let shell = Shell {
            project: &project,
            s: &s,
            run: &run,
            ui,
            secret: "s".into(),
            outbox: crate::notify::send::Outbox::new(None, "t".into(), root.into(), None),
            pacing: std::cell::RefCell::new(None),
            own_dirty: Vec::new(),
            ship: None,
            clock: std::cell::Cell::new(None),
            handed: std::cell::RefCell::new(None),
            standing: std::cell::RefCell::new(None),
            answered: std::cell::RefCell::new(None),
            asking: Default::default(),
            limits: std::cell::RefCell::new(s.limits.clone()),
            claimed_at: std::cell::RefCell::new(None),
        };
        let first = before.head.clone();
        let mut live = Live {
            saved: Saved::new(run.id.clone(), "t".into(), s.limits.clone(), first.clone()),
            before,
            pending: None,
            users: Vec::new(),
            limited: None,
        };
        let mut ev = Event::Begin;
        let mut asked = Vec::new();
        let (outcome, reason) = loop {
            match engine::step(&mut live.saved.state, &s.limits, ev) {
                Action::Round(need) => {
                    asked.push(
                        format!("{need:?}")
                            .split([' ', '{', '('])
                            .next()
                            .unwrap()
                            .to_string(),
                    );
                    ev = shell.carry_out(need, &mut live).unwrap();
                }
                Action::Stop { outcome, reason } => break (outcome, reason),
                a => panic!("no session in this round: {a:?}"),
            }
        };
        assert_eq!(asked, ["Judge", "SetAside", "Look"]);
        assert_eq!(outcome, Outcome::Waiting);
        let base = first.unwrap();
        assert!(
            reason.contains(&format!("`git checkout {base} -- <file>`")),
            "{reason}"
        );
        assert!(!project.complete().exists());
        let aside = std::fs::read_to_string(run.path.join("COMPLETE.rejected-1")).unwrap();
        assert!(
            aside.starts_with("done\n\nrejected by ralph loop at "),
            "{aside}"
        );
        assert!(aside.contains("  protected: M ci.yml\n"), "{aside}");
        // The engine decided it: no file carried it there.
        assert!(!project.waiting().exists());
        let said = said.lock().unwrap().clone();
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines.len(), 3, "{said}");
        assert!(
            lines[0].starts_with("ralph: COMPLETE rejected (2 problems), moved to "),
            "{said}"
        );
        assert_eq!(lines[1], "    protected: M ci.yml");
        assert!(lines[2].starts_with("    in commit "), "{said}");
        assert!(lines[2].ends_with(" skip the tests"), "{said}");
        // A link planted where WAITING goes is replaced, not written through.
        let elsewhere = d.path().join("elsewhere");
        std::fs::write(&elsewhere, "theirs\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, project.waiting()).unwrap();
        shell.finish(&live.saved, outcome, reason.clone()).unwrap();
        let waiting = sentinel::Waiting::read(&project.waiting())
            .unwrap()
            .unwrap();
        assert_eq!(waiting.reason, reason, "the run's end asks for a human");
        assert!(
            std::fs::symlink_metadata(project.waiting())
                .unwrap()
                .is_file()
        );
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "theirs\n");
    }
}
