//! The reviewer's session, run by the shell: what it is given (criteria,
//! changes, the gate's verdict), its launch like any print-mode session's,
//! and its verdict, read from its own final message.

use anyhow::{Context, Result};

use crate::history::records::{Record, ReviewRecord, Saved};
use crate::run::engine::{Event, ReviewOf as Of, Reviewed};
use crate::run::lock::LoopLock;
use crate::run::progress;
use crate::run::shell::Shell;
use crate::timefmt;
use crate::work::review::{self, Verdict};

/// The diff given inline; the reviewer runs git for the rest.
const DIFF_BYTES: usize = 48 * 1024;
/// The spec given as the run's criteria, at most.
const SPEC_BYTES: u64 = 32 * 1024;
/// git's empty tree: the base of a repository that had no commit.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// `.ralph/review-failed.md`, what the next work session reads first.
pub fn feedback_path(project: &crate::work::project::Project) -> std::path::PathBuf {
    project.ralph_dir().join("review-failed.md")
}

impl Shell<'_> {
    /// Run review session `number` and say what it came to; the findings
    /// are handed to the next work session (`.ralph/review-failed.md`). Its
    /// record, for the caller to append after the session it reviewed. A
    /// review of steps measures their changes from `base`.
    pub(crate) fn review(
        &self,
        lock: &mut LoopLock,
        saved: &mut Saved,
        (of, number): (Of, u32),
        base: Option<String>,
    ) -> Result<(Event, Record)> {
        let (project, r) = (
            self.project,
            self.s.completion.review.as_ref().expect("a reviewer"),
        );
        let subject = self.subject(&of, saved, base);
        let prompt = self.write_review_prompt(&of, &subject, saved, number)?;
        let before = progress::take(&project.root, &project.spec());
        let seat = seat_of(r);
        let start = timefmt::now();
        // Print mode, whatever the run's, with its own prompt.
        let mut settings = self.s.clone();
        settings.session.interactive = false;
        settings.session.prompt = prompt;
        let at = (saved.state.iteration, number);
        let started = crate::history::events::Event::SessionStarted {
            session: number,
            iteration: at.0,
            agent: seat.agent,
            review: true,
            standing: None,
            subject: Some(subject.what.clone()),
        };
        self.headline(&started);
        self.journal().add(started);
        let (ended, command) =
            self.launch(lock, (&settings, seat), at, saved.first_head.clone())?;
        let after = progress::take(&project.root, &project.spec());
        let outcome = self.outcome_of(&ended, false);
        let cost = self.cost_of(&ended.stream, seat);
        saved.tokens.add(&ended.stream.usage);
        saved.cost_unknown |= cost.is_none();
        let (rec, event) = self.conclude(
            &outcome,
            (&ended, &before, &after),
            (number, &subject.what, seat.agent),
            cost.unwrap_or(0.0),
            saved,
        )?;
        saved.last_review = Some(rec.clone());
        let ran = crate::run::shell::Ran {
            iteration: saved.state.iteration,
            number,
            seat,
            left_uncommitted: false,
            auto_commit: None,
            no_evidence: false,
            no_change: false,
            cost,
            start,
            command,
            ended: &ended,
            outcome: &outcome,
            before: &before,
            after: &after,
        };
        let mut record = self.record(&ran, None);
        record.counted = false;
        record.review = Some(rec);
        Ok((event, record))
    }

    /// What a review session came to: its record (said, its findings
    /// handed over) and the engine's event. At its agent's usage limit it
    /// judged nothing: no verdict to hand over, and no round of the
    /// reviewer's.
    fn conclude(
        &self,
        outcome: &crate::run::engine::SessionOutcome,
        (ended, before, after): (
            &crate::session::Finished,
            &progress::Checkpoint,
            &progress::Checkpoint,
        ),
        (number, what, agent): (u32, &str, crate::agent::Agent),
        cost_usd: f64,
        saved: &Saved,
    ) -> Result<(ReviewRecord, Event)> {
        if let crate::run::engine::SessionOutcome::Limited(l) = outcome {
            self.ledger(cost_usd, 0, false);
            let verdict = Verdict::NoVerdict(format!(
                "{agent}'s {}: waited out, no round counted",
                l.describe()
            ));
            let mut rec = ReviewRecord::new(number, what, &verdict, cost_usd);
            rec.verdict = crate::work::review::Judgement::Limited;
            rec.findings.clear();
            self.ui.note(&format!(
                "the reviewer's agent {agent}: {}; the review waits for it and counts no round",
                l.describe()
            ));
            let event = Event::ReviewLimited {
                limit: l.clone(),
                cost_usd,
                now_epoch: crate::timefmt::now_epoch(),
            };
            return Ok((rec, event));
        }
        self.ledger(cost_usd, 0, false);
        let verdict = verdict_of(ended, before, after);
        let rec = ReviewRecord::new(number, what, &verdict, cost_usd);
        self.hand_review_over(&verdict, what, saved)?;
        Ok((rec, Event::Reviewed(Reviewed { verdict, cost_usd })))
    }

    /// What a review looks at: its words for it, its criteria, and the
    /// commit its changes are measured from.
    fn subject(&self, of: &Of, saved: &Saved, base: Option<String>) -> Subject {
        match of {
            Of::Run => {
                let spec = crate::fsutil::read_optional_capped(&self.project.spec(), SPEC_BYTES)
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                Subject {
                    what:
                        "the whole run: every step of the spec is checked, and COMPLETE was written"
                            .to_string(),
                    criteria: format!(
                        "The spec (`.ralph/spec.md`):\n\n```markdown\n{}\n```",
                        spec.trim_end()
                    ),
                    base: saved.first_head.clone(),
                }
            }
            Of::Steps { session, steps } => Subject {
                what: format!("the step(s) session {session} checked"),
                criteria: format!(
                    "The step(s), from `.ralph/spec.md` (the whole spec is there for context):\n\n{}",
                    steps
                        .iter()
                        .map(|s| format!("- {s}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
                base,
            },
        }
    }

    /// The review session's prompt, written into the run folder
    /// (`review-NNN.md`): its path.
    fn write_review_prompt(
        &self,
        of: &Of,
        subject: &Subject,
        saved: &Saved,
        number: u32,
    ) -> Result<std::path::PathBuf> {
        let r = self.s.completion.review.as_ref().expect("a reviewer");
        let (stat, diff) = self.changes_since(subject.base.as_deref());
        let (diff, diff_cut) = review::cut_diff(&diff, DIFF_BYTES);
        let gate_line = saved.last_gate.as_ref().map(|g| {
            if g.passed {
                format!("The completion gate passed at {}.", g.time)
            } else {
                format!("The completion gate: {}.", g.summary())
            }
        });
        let tail: Vec<String> = saved.last_gate.as_ref().map_or_else(Vec::new, |g| {
            g.tail.iter().rev().take(15).rev().cloned().collect()
        });
        let standing = match &r.prompt {
            Some(p) => crate::fsutil::read_optional(p)?
                .with_context(|| format!("[review] prompt {} is gone", p.display()))?,
            None => review::DEFAULT_PROMPT.to_string(),
        };
        let text = review::prompt(
            &standing,
            &review::Input {
                what: &subject.what,
                criteria: &subject.criteria,
                base: subject.base.as_deref(),
                stat: &stat,
                diff,
                diff_cut,
                gate: match (of, &gate_line) {
                    (Of::Run, Some(l)) => Some((l.as_str(), &tail[..])),
                    _ => None,
                },
                round: saved.state.review_rejections + 1,
                max_rounds: r.max_rounds,
            },
        );
        let name = format!("review-{number:03}.md");
        let prompt = self.run.new_file(&name)?;
        crate::fsutil::create_new(&prompt)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .with_context(|| format!("cannot write {}", self.run.path.join(&name).display()))?;
        Ok(prompt)
    }

    /// Say the verdict; write or remove `.ralph/review-failed.md`.
    fn hand_review_over(&self, verdict: &Verdict, what: &str, saved: &Saved) -> Result<()> {
        let path = feedback_path(self.project);
        if verdict.approved() {
            self.ui.note("the reviewer approved");
            return crate::fsutil::remove_optional(&path);
        }
        let findings = verdict.findings();
        let max = self
            .s
            .completion
            .review
            .as_ref()
            .map_or(3, |r| r.max_rounds);
        let rounds = (saved.state.review_rejections + 1, max);
        self.outbox.tell(
            crate::notify::Event::Rejected,
            &format!(
                "the reviewer sent the work back ({} of {max} in a row)",
                rounds.0
            ),
            "the next session fixes its findings; see .ralph/review-failed.md",
        );
        let text = review::feedback(&findings, what, &timefmt::now(), rounds);
        crate::fsutil::atomic_write(&path, text.as_bytes(), 0o644)?;
        self.ui.note(&format!(
            "the reviewer did not approve ({}); the next session finds why in .ralph/review-failed.md:",
            verdict.text()
        ));
        for f in findings.iter().take(10) {
            self.ui.line(&format!("    - {f}"));
        }
        Ok(())
    }

    /// `git diff --stat` and the diff since `base`, `.ralph/` aside.
    fn changes_since(&self, base: Option<&str>) -> (String, String) {
        let g = crate::git::at(&self.project.root);
        let base = base.unwrap_or(EMPTY_TREE);
        let paths = [base, "--", ".", ":(exclude).ralph"];
        let stat = g
            .run(&["diff", "--stat"], &paths)
            .unwrap_or_else(|e| format!("(git could not say: {e:#})"));
        let diff = g.run(&["diff"], &paths).unwrap_or_default();
        let stat = if stat.trim().is_empty() {
            "(no changes)".to_string()
        } else {
            stat
        };
        (stat, diff)
    }
}

/// The reviewer as a session runs it: a Claude reviewer without its
/// editing tools (Bash stays, for git and the tests).
fn seat_of(r: &crate::work::review::Reviewer) -> crate::session::Seat<'_> {
    crate::session::Seat {
        agent: r.agent,
        program: &r.program,
        model: r.model.as_deref(),
        extra: if r.agent.caps().disallows_tools {
            &NO_EDITS[..]
        } else {
            &[]
        },
    }
}

/// What one review looks at.
struct Subject {
    what: String,
    criteria: String,
    base: Option<String>,
}

/// The verdict of a review session that ended so: none if it changed the
/// work, else what its own final message says.
fn verdict_of(
    ended: &crate::session::Finished,
    before: &progress::Checkpoint,
    after: &progress::Checkpoint,
) -> Verdict {
    if before.head != after.head || before.tree != after.tree {
        return Verdict::NoVerdict(
            "it changed the work (a commit, or a file `git status` shows: build output its checks made counts too, so keep that in .gitignore): a reviewer only judges; its changes are left for the next session to see"
                .into(),
        );
    }
    review::read_verdict(review::Ending {
        text: ended.stream.final_message.as_deref(),
        results: ended.stream.results,
        ok: ended.status.is_some_and(|x| x.success()) && ended.stream.result_ok(),
        unread: ended.stream.unread,
    })
}

/// Claude's tools a reviewer does without.
static NO_EDITS: std::sync::LazyLock<[String; 1]> =
    std::sync::LazyLock::new(|| ["--disallowedTools=Edit,Write,NotebookEdit".to_string()]);
