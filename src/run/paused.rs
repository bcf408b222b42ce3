//! A parallel run's step paused at its budget: the question about it asked
//! where the user looks (WAITING, the terminal, the journal, a notice, the
//! remote reader), and the answer taken from the inbox while the other
//! workers go on. The board (`engine::board`) decides what it comes to.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::control::Question;
use crate::history::events::{At, Event as Journaled};
use crate::run::asking::{Given, answer_todo, first_answer};
use crate::run::engine::Outcome;
use crate::run::engine::board::Board;
use crate::run::engine::pause::{self, Choice};
use crate::run::shell::Shell;
use crate::work::sentinel;

/// The question about one paused step, while it is out.
pub struct Asking {
    pub key: String,
    question: Question,
    /// Its WAITING's `since`: the answer is tied to it.
    since: Option<String>,
    asked_at: Instant,
    /// "No answer came" said once.
    said_over: bool,
}

/// What came of looking at the inbox.
pub enum Looked {
    Nothing,
    /// The board changed (a step back at work, or skipped).
    Changed,
    /// The answer was to stop the run.
    Stop,
}

impl Asking {
    /// Whether the run, with nothing else left to do, still waits for the
    /// answer (`within`: `--wait-for-answer`, from when it was asked);
    /// the end of the wait said once.
    pub fn waits(&mut self, shell: &Shell, within: Option<Duration>) -> bool {
        let Some(within) = within else {
            return false;
        };
        if self.asked_at.elapsed() < within {
            return true;
        }
        if !self.said_over {
            self.said_over = true;
            shell.ui.note(&format!(
                "no answer came within {}",
                crate::timefmt::human_duration(within)
            ));
        }
        false
    }
}

/// The first paused step, asked about (when none is): WAITING written with
/// the question's options, said, journaled, told, and given to the remote
/// reader. `cap`: the step's budget; `within`: how long the run waits.
pub fn ask(
    shell: &Shell,
    board: &Board,
    cap: f64,
    within: Option<Duration>,
) -> Result<Option<Asking>> {
    let Some(key) = board.paused().into_iter().next() else {
        return Ok(None);
    };
    let why = board.steps[&key].note.clone().unwrap_or_default();
    let mut waiting = sentinel::Waiting::new(format!(
        "{}: {why}; the other steps go on meanwhile",
        Outcome::StepBudget.text()
    ));
    waiting.options = pause::options(cap);
    // An answer is tied to its question by this `since`: two paused steps
    // may be asked about within one second (the next as soon as the first
    // is answered), so to the second, an answer to the first would pass
    // for one to the second.
    waiting.since =
        Some(humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string());
    waiting.write(&shell.project.waiting())?;
    let question = waiting
        .question()
        .unwrap_or_else(|| Question::new("a step is over its budget", None, &[]).expect("a text"));
    shell.journal().add(Journaled::Asked {
        outcome: Outcome::StepBudget,
        question: question.clone(),
        until: At::now().after(within.unwrap_or_default()),
    });
    shell
        .ui
        .note("a step is paused at its budget; the others go on while you answer:");
    for line in question.lines() {
        shell.ui.line(&format!("  {line}"));
    }
    shell.ui.line(&format!("  {}", answer_todo(&question)));
    shell.outbox.tell(
        crate::notify::Event::Waiting,
        &format!(
            "waiting for your answer; {}",
            crate::control::command::one_line(&question.text, 300)
        ),
        &answer_todo(&question),
    );
    shell.asking.set(Some(crate::run::remote::Asked {
        question: question.clone(),
        since: waiting.since.clone(),
        posted: None,
    }));
    Ok(Some(Asking {
        key,
        question,
        since: waiting.since,
        asked_at: Instant::now(),
        said_over: false,
    }))
}

/// The answer to `asking`, if one came: journaled, WAITING removed, the
/// board told, and what it came to said.
pub fn look(shell: &Shell, asking: &Asking, board: &mut Board) -> Result<Looked> {
    let (given, notes) = first_answer(
        &shell.project.root,
        Some(&shell.run.id),
        &asking.question,
        asking.since.as_deref(),
    );
    for n in notes {
        shell.ui.note(&n);
    }
    let Some(given) = given else {
        return Ok(Looked::Nothing);
    };
    let Given { answer, by, .. } = &given;
    shell.journal().add(Journaled::Answered {
        answer: answer.clone(),
        by: by.clone(),
    });
    sentinel::remove(&shell.project.waiting())?;
    shell.asking.set(None);
    shell.ui.note(&format!(
        "answered by {}: {}",
        crate::output::visible_line(by),
        crate::control::command::one_line(&answer.said(), 200)
    ));
    Ok(match carry_out(shell, board, &asking.key, &given) {
        Choice::Stop => Looked::Stop,
        Choice::More | Choice::Skip => Looked::Changed,
    })
}

/// What `given` comes to for paused step `key`, on the board (said); the
/// choice it made.
pub fn carry_out(shell: &Shell, board: &mut Board, key: &str, given: &Given) -> Choice {
    let choice = pause::choice(&given.answer);
    let by = crate::output::visible_line(&given.by);
    shell
        .ui
        .note(&board.answered(key, choice, (&by, &given.told())));
    choice
}
