//! The shell around the engine: performs what `engine::step` decides (run a
//! lifecycle hook, start a session, wait out a limit) and reports back what
//! happened, until the engine says stop; then writes the run's summary.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use crate::handoff::env;
use crate::run::engine::{self, Action, Completion, Event, Outcome, Report, SessionOutcome};
use crate::run::lifecycle::{self, Facts};
use crate::run::lock::LoopLock;
use crate::run::options::Settings;
use crate::run::progress::{self, Checkpoint};
use crate::run::records::{Record, RunDir, Saved, Summary, Tokens};
use crate::run::session;
use crate::run::ui::Ui;
use crate::run::{claude, countdown};
use crate::timefmt;
use crate::work::project::Project;
use crate::work::{completion, gate, sentinel};

fn now_epoch() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

pub fn spec_text(s: &Checkpoint) -> String {
    format!("{}/{}", s.done, s.total)
}

pub struct Shell<'a> {
    pub project: &'a Project,
    pub s: &'a Settings,
    pub run: &'a RunDir,
    pub ui: Ui,
    /// The run's secret token (from the lock): marks its processes.
    pub secret: String,
}

impl Shell<'_> {
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
            max_iterations: self.s.limits.max_iterations,
            extra,
        }
    }

    /// The completion gate, if COMPLETE is there: accept it, or set it aside
    /// in the run folder with the reasons.
    /// The completion gate, if COMPLETE is there: spec and tracker must
    /// agree, then the project's own checks must pass; else COMPLETE is set
    /// aside in the run folder with the reasons.
    fn gate(&self, saved: &mut Saved) -> Result<Completion> {
        if !self.project.complete().exists() {
            return Ok(Completion::Absent);
        }
        let checked = completion::check(&self.project.spec(), &self.project.root, self.s.tracker)?;
        let why = match completion::rule(&checked, self.s.gate.is_some()) {
            completion::Rule::Holds { steps } => return Ok(Completion::Accepted { steps }),
            completion::Rule::RunGate { steps } => {
                let gate = self.s.gate.as_ref().expect("the rule saw a gate");
                self.ui.note(
                    "COMPLETE: spec and tracker agree; running the project's checks (the gate)",
                );
                let v = self.run_gate(gate, saved)?;
                if v.interrupted {
                    // Neither accepted nor refused: the loop is stopping.
                    return Ok(Completion::Absent);
                }
                if v.passed {
                    self.ui.note("the gate passed");
                    return Ok(Completion::Accepted { steps });
                }
                let what = v.summary();
                let mut why = vec![format!("the completion gate: {what}")];
                why.extend(v.tail.iter().rev().take(15).rev().map(|l| format!("| {l}")));
                self.set_aside(saved, &why, 1)?;
                return Ok(Completion::GateFailed { what });
            }
            completion::Rule::Blocked(why) => why,
        };
        let problems = why.len();
        self.set_aside(saved, &why, problems)?;
        Ok(Completion::Rejected { problems })
    }

    /// Run the gate, keep its output in the run folder, hand a failure to
    /// the next session (`.ralph/gate-failed.md`) and remember the verdict.
    fn run_gate(&self, gate: &gate::Gate, saved: &mut Saved) -> Result<gate::Verdict> {
        saved.gate_runs += 1;
        let name = format!("gate-{:03}.log", saved.gate_runs);
        let log = self.run.new_file(&name)?;
        let mut v = gate::run(
            gate,
            &self.project.root,
            Some(&log),
            &session::signals_received,
            &gate::Runner {
                token: crate::handoff::gate_token(&self.secret),
                confined: self.s.confined.clone(),
                show: crate::run::ui::gate_show(),
            },
        )?;
        // Shown and saved by where it is, not by the handle it was written through.
        v.log = Some(self.run.path.join(&name));
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
        Ok(v)
    }

    /// Move COMPLETE into the run folder with the reasons it does not hold.
    fn set_aside(&self, saved: &Saved, why: &[String], problems: usize) -> Result<()> {
        let name = format!("COMPLETE.rejected-{}", saved.state.rejected + 1);
        let aside = self.run.path.join(&name);
        let aside_io = self.run.new_file(&name)?;
        let mut text = crate::fsutil::read_optional(&self.project.complete())
            .ok()
            .flatten()
            .unwrap_or_default();
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
        std::fs::remove_file(self.project.complete())
            .with_context(|| format!("cannot remove {}", self.project.complete().display()))?;
        self.ui.note(&format!(
            "COMPLETE rejected ({problems} problem(s)), moved to {}; the loop goes on:",
            aside.display()
        ));
        for w in why.iter().take(10) {
            self.ui.line(&format!("    {w}"));
        }
        Ok(())
    }

    fn between(&self, saved: &mut Saved) -> Result<Event> {
        Ok(Event::Between {
            stop: session::stop_requested(),
            gate: self.gate(saved)?,
            waiting: sentinel::Waiting::read(&self.project.waiting())?.map(|w| w.reason),
        })
    }

    pub fn run(&self, lock: &mut LoopLock, resumed: Option<Saved>) -> Result<u8> {
        let t0 = Instant::now();
        let (s, run, project, ui) = (self.s, self.run, self.project, &self.ui);
        let mut before = progress::take(&project.root, &project.spec());
        let mut saved = match resumed {
            Some(mut saved) => {
                saved.limits = s.limits.clone();
                saved.resumed += 1;
                run.clear_summary()?;
                ui.note(&format!(
                    "resuming run {} at iteration {}/{}, ${:.2} spent",
                    run.id, saved.state.iteration, s.limits.max_iterations, saved.state.cost_usd
                ));
                saved
            }
            None => Saved {
                run_id: run.id.clone(),
                started: timefmt::now(),
                limits: s.limits.clone(),
                state: engine::State::default(),
                first_head: before.head.clone(),
                elapsed_s: 0.0,
                tokens: Tokens::default(),
                resumed: 0,
                gate_runs: 0,
                last_gate: None,
            },
        };
        let elapsed_before = saved.elapsed_s;
        run.save_state(&saved)?;
        lock.set_iteration(saved.state.iteration)?;
        lifecycle::run(
            &s.hooks.on_loop_start,
            &self.facts("loop_start", saved.state.iteration, &[]),
        );
        ui.note(&format!("run {} in {}", run.id, run.path.display()));

        let mut ev = self.between(&mut saved)?;
        let mut last_saved = saved.state.clone();
        let (outcome, reason) = loop {
            let action = engine::step(&mut saved.state, &s.limits, ev);
            // Saved whenever the engine counted something, before acting on
            // it: a loop killed in the next session leaves the truth behind.
            if saved.state != last_saved {
                saved.elapsed_s = elapsed_before + t0.elapsed().as_secs_f64();
                run.save_state(&saved)?;
                last_saved = saved.state.clone();
            }
            ev = match action {
                Action::Stop { outcome, reason } => break (outcome, reason),
                Action::Next => self.between(&mut saved)?,
                Action::Prepare { iteration } => {
                    let cost = if saved.state.cost_usd > 0.0 {
                        format!(" · ${:.2}", saved.state.cost_usd)
                    } else {
                        String::new()
                    };
                    ui.status(&format!(
                        "iteration {iteration}/{} · spec {} · {} elapsed{cost}",
                        s.limits.max_iterations,
                        spec_text(&before),
                        timefmt::human_duration(std::time::Duration::from_secs_f64(
                            saved.elapsed_s
                        ))
                    ));
                    lifecycle::run(
                        &s.hooks.on_session_start,
                        &self.facts("session_start", iteration, &[]),
                    );
                    Event::BeforeSpawn {
                        stop: session::stop_requested(),
                    }
                }
                Action::Spawn { iteration, session } => {
                    lock.set_iteration(iteration)?;
                    let report = self.session(lock, &mut saved, &mut before, iteration, session)?;
                    Event::SessionEnded(Box::new(report))
                }
                Action::Wait { wait, why } => {
                    let it = saved.state.iteration.to_string();
                    lifecycle::run(
                        &s.hooks.on_limit,
                        &self.facts(
                            "limit",
                            saved.state.iteration,
                            &[(env::REASON, &why), (env::ITERATION, &it)],
                        ),
                    );
                    countdown::wait(ui, &why, wait);
                    Event::Waited {
                        stop: session::stop_requested(),
                    }
                }
            };
        };
        saved.elapsed_s = elapsed_before + t0.elapsed().as_secs_f64();
        run.save_state(&saved)?;
        self.finish(&saved, outcome, reason)
    }

    /// Run one session and report what it did.
    fn session(
        &self,
        lock: &mut LoopLock,
        saved: &mut Saved,
        before: &mut Checkpoint,
        iteration: u32,
        number: u32,
    ) -> Result<Report> {
        let (s, run, project, ui) = (self.s, self.run, self.project, &self.ui);
        let start = timefmt::now();
        let who = claude::Who {
            run,
            iteration,
            session: number,
            loop_start: lock.info.start_time,
            secret: &self.secret,
        };
        let spec = claude::session(project, s, &who, *ui)?;
        // What actually ran, for the record (not the prompt, in interactive mode).
        let mut command = vec![spec.program.display().to_string()];
        command.extend(
            spec.args
                .iter()
                .take(spec.args.len() - usize::from(s.interactive))
                .cloned(),
        );
        let running = session::spawn(spec)?;
        lock.set_session(Some((running.pid, running.start_time)))?;
        let ended = running.wait()?;
        lock.set_session(None)?;
        let after = progress::take(&project.root, &project.spec());
        let st = &ended.stream;
        let outcome = engine::classify(
            &engine::SessionEnd {
                ending: ended.ending,
                interactive: s.interactive,
                exit_ok: ended.status.is_some_and(|x| x.success()),
                result_ok: st.result_ok(),
                limit: st.limit.clone(),
            },
            Some(session::last_signal_name()),
        );
        saved.tokens.add(&st.usage);
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
        let progress = progress::compare(before, &after);
        let (gate, verdict) = self.judge_after_session(saved, &outcome, progress)?;
        run.append_record(&Record {
            iteration,
            session: number,
            counted: outcome.counted(),
            session_id: st.session_id.clone(),
            pid: ended.pid,
            start,
            end: timefmt::now(),
            duration_s: ended.duration.as_secs_f64(),
            exit_code: ended.status.and_then(|x| x.code()),
            outcome: outcome.clone(),
            is_error: st.any_error,
            cost_usd: st.cost_usd,
            tokens: Tokens::from(&st.usage),
            num_turns: st.num_turns,
            results: st.results,
            tool_calls: st.tool_calls,
            head_before: before.head.clone(),
            head_after: after.head.clone(),
            spec_before: spec_text(before),
            spec_after: spec_text(&after),
            leftovers_ended: ended.leftovers.len(),
            stream_file: (!s.interactive).then(|| {
                run.path
                    .join(RunDir::stream_name(number))
                    .display()
                    .to_string()
            }),
            gate: verdict,
            confined: s.confined.is_some(),
            command,
        })?;
        let text = outcome.as_text();
        lifecycle::run(
            &s.hooks.on_session_end,
            &self.facts("session_end", iteration, &[(env::SESSION_OUTCOME, &text)]),
        );
        let error = self.error_of(&ended);
        match &outcome {
            SessionOutcome::TimedOut => ui.note(&format!(
                "session {iteration} timed out after {}; ended it",
                timefmt::human_duration(s.timeout)
            )),
            SessionOutcome::Failed => ui.note(&format!(
                "session {iteration} failed ({} in a row): {error}",
                saved.state.failures + 1
            )),
            _ => {}
        }
        if st.results > 1 {
            ui.note(&format!(
                "the session reported {} results (it ran another turn after a background task); counted once",
                st.results
            ));
        }
        if progress == engine::Progress::Unknown {
            ui.note(
                "cannot tell what the session changed (git failed); not counted as no progress",
            );
        }
        // The hook's log is read only where it can tell (interactive).
        let hook_ended_it = s.interactive
            && crate::handoff::hook_ended(
                &crate::fsutil::read_optional_capped(&run.hook_log(), crate::fsutil::RUN_FILE_CAP)
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
                ended.pid,
            );
        let quit_by_user = engine::quit_by_user(s.interactive, ended.ending, hook_ended_it);
        let report = Report {
            outcome,
            error,
            cost_usd: st.cost_usd,
            progress,
            gate,
            waiting: sentinel::Waiting::read(&project.waiting())?.map(|w| w.reason),
            quit_by_user,
            now_epoch: now_epoch(),
        };
        *before = after;
        Ok(report)
    }

    /// After a session: COMPLETE judged (gate and all) unless the loop is
    /// stopping, and the gate run for `when = "each"` when the engine says
    /// so. What became of COMPLETE, and the gate's verdict for the record.
    fn judge_after_session(
        &self,
        saved: &mut Saved,
        outcome: &SessionOutcome,
        progress: engine::Progress,
    ) -> Result<(Completion, Option<gate::Verdict>)> {
        let gate = if engine::judge_after(outcome) {
            self.gate(saved)?
        } else {
            Completion::Absent
        };
        let mut verdict = (gate != Completion::Absent)
            .then(|| saved.last_gate.clone())
            .flatten();
        if let Some(g) = &self.s.gate
            && engine::gate_each(g.when == gate::When::Each, &gate, progress, outcome)
        {
            self.ui
                .note("running the project's checks after this session (gate: when = \"each\")");
            let v = self.run_gate(g, saved)?;
            if v.passed {
                self.ui.note("the gate passed");
            }
            verdict = Some(v);
        }
        Ok((gate, verdict))
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
                    format!("timed out after {}", timefmt::human_duration(s.timeout))
                }
                (_, Some(x)) if x.success() && !s.interactive => {
                    "claude exited with status 0 without reporting a result".into()
                }
                (_, Some(x)) => format!("claude exited with {x}"),
                _ => "claude ended without a result".into(),
            })
    }

    fn finish(&self, saved: &Saved, outcome: Outcome, reason: String) -> Result<u8> {
        let (s, run, project, ui) = (self.s, self.run, self.project, &self.ui);
        let state = &saved.state;
        let last = progress::take(&project.root, &project.spec());
        let commits = match (&saved.first_head, &last.head) {
            (a, Some(b)) => progress::commits_between(&project.root, a.as_deref(), b),
            _ => Some(0),
        };
        if outcome.writes_waiting() {
            sentinel::Waiting::new(format!("no progress: {reason}; see {}", run.path.display()))
                .write(&project.waiting())?;
        }
        let duration = std::time::Duration::from_secs_f64(saved.elapsed_s);
        let summary = Summary {
            run_id: run.id.clone(),
            outcome,
            exit_code: outcome.code(),
            reason: reason.clone(),
            iterations: state.iteration,
            sessions: state.sessions,
            max_iterations: s.limits.max_iterations,
            duration: timefmt::human_duration(duration),
            duration_s: saved.elapsed_s,
            cost_usd: state.cost_usd,
            tokens: saved.tokens.clone(),
            commits,
            spec: spec_text(&last),
            started: saved.started.clone(),
            ended: timefmt::now(),
            resumed: saved.resumed,
            gate: saved.last_gate.clone(),
            confined: s.confined.is_some(),
        };
        run.write_summary(&summary)?;
        if let Some(hook) = outcome.hook() {
            let cmd = match hook {
                engine::EndHook::Complete => &s.hooks.on_complete,
                engine::EndHook::Waiting => &s.hooks.on_waiting,
                engine::EndHook::Limit => &s.hooks.on_limit,
            };
            lifecycle::run(
                cmd,
                &self.facts(
                    hook.event(),
                    state.iteration,
                    &[(env::REASON, &reason), (env::OUTCOME, outcome.text())],
                ),
            );
        }
        let commits = commits
            .map(|c| format!(", {c} commit(s)"))
            .unwrap_or_default();
        ui.status(&format!(
            "{}: {reason} · {} iteration(s) in {} · ${:.2} · {} tokens{commits} · spec {}",
            outcome.text(),
            state.iteration,
            summary.duration,
            state.cost_usd,
            saved.tokens.total(),
            spec_text(&last)
        ));
        if outcome == Outcome::Complete
            && let Ok(main) = crate::run::worktree::main_root(&project.root)
            && main != project.root
            && let Some(b) = crate::run::progress::branch(&project.root)
        {
            ui.line(&format!(
                "The work is on branch {b} (worktree {}). Merging it is yours to decide: `git -C {} merge {b}`",
                project.root.display(),
                main.display()
            ));
        }
        match outcome {
            Outcome::Waiting | Outcome::NoProgress => {
                ui.line("Run `ralph resume` once a human has acted, then `ralph loop --resume` to go on with this run.")
            }
            Outcome::Interrupted => ui.line("`ralph loop --resume` goes on with this run."),
            _ => {}
        }
        Ok(outcome.code())
    }
}
