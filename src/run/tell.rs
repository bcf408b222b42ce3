//! The user's end of a loop's control channel: an answer to its question,
//! a stop, a raised limit, checked and sent the same way whichever face
//! sends it (`ralph answer`, `ralph stop`, `ralph raise` at a terminal;
//! `ralph watch`'s keys), only the sender named differently.

use std::path::Path;

use crate::control::inbox::{self, To};
use crate::control::{Answer, Command};
use crate::run::lock::{self, LockInfo};
use crate::work::project::Project;
use crate::work::sentinel;

/// How a user answers: in words, or by the number of an option (1 first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Text(String),
    Option(u32),
}

/// Why nothing was sent.
#[derive(Debug)]
pub enum NotSent {
    /// Nothing there to take it: no question asked, no loop running.
    Nothing(String),
    /// Not a command to send: from a session, an empty answer, an option
    /// the question does not offer.
    Refused(String),
    /// The question could not be read or the inbox written.
    Failed(anyhow::Error),
}

/// An answer sent: as the loop takes it, and the loop running now (none:
/// `ralph loop --resume` takes it).
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    pub answer: Answer,
    pub running: Option<LockInfo>,
}

/// Answer the question the loop of the project at `root` asks (its
/// WAITING), as `by`; to run `run` only, if given.
pub fn answer(
    root: &Path,
    by: &str,
    reply: &Reply,
    run: Option<&str>,
) -> Result<Answered, NotSent> {
    if let Some(why) = inbox::refused_in_session() {
        return Err(NotSent::Refused(why));
    }
    let project = Project::at(root);
    let waiting = sentinel::Waiting::read(&project.waiting())
        .map_err(NotSent::Failed)?
        .ok_or_else(|| {
            NotSent::Nothing(format!(
                "nothing is asked: there is no {} (a loop asks with `ralph waiting`)",
                project.waiting().display()
            ))
        })?;
    let question = waiting
        .question()
        .ok_or_else(|| NotSent::Refused("the question in WAITING is empty".into()))?;
    let answer = match reply {
        Reply::Option(n) => question
            .pick(*n)
            .map_err(|e| NotSent::Refused(format!("--option {n}: {e}")))?,
        Reply::Text(t) => Answer::text(t).map_err(NotSent::Refused)?,
    };
    if let Some(id) = run
        && !crate::history::records::RunDir::valid_id(id)
    {
        return Err(NotSent::Refused(format!(
            "--run {id:?} is not a run id (letters, digits, -, _ and .)"
        )));
    }
    // Tied to this question (its `since`): an answer to it is no answer to
    // the next one.
    let to = To {
        run,
        asked: waiting.since.as_deref(),
        via: None,
    };
    inbox::send(root, by, to, Command::Answer(answer.clone())).map_err(NotSent::Failed)?;
    Ok(Answered {
        answer,
        running: lock::running(&project.lock()),
    })
}

/// Send `command` to the running loop of the project at `root`, as `by`;
/// the loop it went to.
pub fn command(root: &Path, by: &str, command: Command) -> Result<LockInfo, NotSent> {
    // What is wrong with the command itself is said first, loop or not.
    command.check().map_err(NotSent::Refused)?;
    if let Some(why) = inbox::refused_in_session() {
        return Err(NotSent::Refused(why));
    }
    let project = Project::at(root);
    // A command for a loop that is not running would wait for the next
    // one, which nobody asked to stop: refused.
    let Some(running) = lock::running(&project.lock()) else {
        return Err(NotSent::Nothing(format!(
            "no loop is running in {}",
            root.display()
        )));
    };
    let to = To {
        run: Some(&running.run_id),
        ..To::default()
    };
    inbox::send(root, by, to, command).map_err(|e| NotSent::Refused(format!("{e:#}")))?;
    Ok(running)
}

/// Whether the inbox of the loop at `root` holds an answer to the question
/// of `waiting` (`ralph loop --resume` takes it, WAITING and all).
pub fn answer_pending(root: &Path, waiting: &sentinel::Waiting) -> bool {
    let (taken, _) = inbox::pending(root, inbox::For::Answers);
    taken.iter().any(|t| {
        matches!(t.sent.command, Command::Answer(_))
            && (t.sent.asked.is_none() || t.sent.asked == waiting.since)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Limit;

    #[test]
    fn a_command_that_makes_no_sense_is_refused_before_any_loop_is_looked_for() {
        // No loop runs at a folder that was never a project: a sound
        // command finds nothing, a bad one is refused for what it is.
        let root = Path::new("/nonexistent/ralph-tell-test");
        let bad = command(root, "terminal", Command::Raise(Limit::Cost(f64::NAN)));
        assert!(
            matches!(&bad, Err(NotSent::Refused(why)) if why == "raise the cost by a positive amount of dollars, not NaN"),
            "{bad:?}"
        );
        let zero = command(root, "terminal", Command::Raise(Limit::Iterations(0)));
        assert!(matches!(zero, Err(NotSent::Refused(_))), "{zero:?}");
        // (Inside a loop's session, as when a session tests ralph, it is
        // refused for that instead.)
        let sound = command(root, "terminal", Command::Raise(Limit::Iterations(2)));
        assert!(
            matches!(&sound, Err(NotSent::Nothing(why)) if why.starts_with("no loop is running"))
                || matches!(&sound, Err(NotSent::Refused(why)) if why.contains("RALPH_LOOP")),
            "{sound:?}"
        );
    }
}
