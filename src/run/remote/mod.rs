//! The run's remote channels, read beside the loop for the life of the run:
//! the GitHub thread of its pull request or of its step's issue, and its
//! ntfy topic. A command written there (`/ralph stop`, `/ralph answer …`,
//! see `control::written`) by someone who may send it goes to the loop's
//! inbox as a terminal's does, and the loop takes it from there.

mod github;
mod ntfy;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::control::inbox::{self, To};
use crate::control::{Command, Question, written};
use crate::run::ui::Ui;

pub use ntfy::said_at_wait as ntfy_said_at_wait;

/// How often the reader wakes to see what is due.
const TICK: Duration = Duration::from_millis(500);

/// The question the run asks now, shared with the reader: an answer is
/// taken only while one is asked, and read against it.
#[derive(Clone, Default)]
pub struct Asking(Arc<Mutex<Option<Asked>>>);

/// A question asked.
#[derive(Debug, Clone)]
pub struct Asked {
    pub question: Question,
    /// Its WAITING's `since`: the answer is tied to this question.
    pub since: Option<String>,
    /// Where ralph posted it on GitHub: the thread's number, the comment's
    /// id (an answer there must come after it).
    pub posted: Option<(u64, u64)>,
}

impl Asking {
    pub fn set(&self, asked: Option<Asked>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = asked;
    }

    pub fn get(&self) -> Option<Asked> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What a command read is, given the question asked now (if any): what to
/// send, with the question it answers; or why it is not taken. Pure.
pub fn forward(
    said: Result<Command, String>,
    asked: Option<&Asked>,
) -> Result<(Command, Option<String>), String> {
    let c = said?;
    if !matches!(c, Command::Answer(_)) {
        return Ok((c, None));
    }
    let asked = asked.ok_or("no question is waiting for an answer")?;
    let c = match written::picked(&c) {
        Some(n) => Command::Answer(asked.question.pick(n)?),
        None => c,
    };
    Ok((c, asked.since.clone()))
}

/// What the reader shares with each channel it reads.
struct Ctx {
    root: PathBuf,
    run: String,
    asking: Asking,
    ui: Ui,
}

impl Ctx {
    /// `command` to the loop's inbox, as `by`, from `via`.
    fn send(
        &self,
        by: &str,
        via: Option<&str>,
        (command, asked): (Command, Option<String>),
    ) -> Result<(), String> {
        let to = To {
            run: Some(&self.run),
            asked: asked.as_deref(),
            via,
        };
        inbox::send(&self.root, by, to, command)
            .map(|_| ())
            .map_err(|e| format!("{e:#}"))
    }

    fn waiting(&self) -> bool {
        self.asking.get().is_some()
    }
}

/// Where the reader looks.
pub struct Channels {
    pub github: Option<github::Threads>,
    pub ntfy: Option<ntfy::Topic>,
}

impl Channels {
    /// The run's remote channels: its pull request (`--pr`: its client,
    /// repository and branch), the issue its step is (`tracker = "github"`),
    /// its ntfy topic where the user gave its token. None: nothing to read.
    pub fn of(
        settings: &crate::run::options::Settings,
        project: &crate::work::project::Project,
        ship: Option<&crate::ship::Ship>,
    ) -> Option<Channels> {
        let github = github::Threads::of(settings, project, ship);
        let ntfy = settings
            .notify
            .as_ref()
            .and_then(|n| ntfy::Topic::of(&n.channels));
        (github.is_some() || ntfy.is_some()).then_some(Channels { github, ntfy })
    }
}

/// Read `channels` for the loop of `root`, run `run`, for the life of the
/// process (a thread beside the loop).
pub fn read(channels: Channels, root: PathBuf, run: String, asking: Asking, ui: Ui) {
    let ctx = Ctx {
        root,
        run,
        asking,
        ui,
    };
    let Channels {
        mut github,
        mut ntfy,
    } = channels;
    std::thread::spawn(move || {
        loop {
            let waiting = ctx.waiting();
            if let Some(g) = github.as_mut().filter(|g| g.due(waiting)) {
                g.look(&ctx);
            }
            if let Some(t) = ntfy.as_mut().filter(|t| t.due(waiting)) {
                t.look(&ctx);
            }
            std::thread::sleep(TICK);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{Answer, Limit};

    #[test]
    fn an_answer_goes_only_to_a_question_asked_and_is_read_against_it() {
        let q = Question::new("Which db?", None, &["Postgres".into(), "SQLite".into()]).unwrap();
        let asked = Asked {
            question: q.clone(),
            since: Some("2025-01-01T00:00:00Z".into()),
            posted: None,
        };
        let pick = |n| {
            Ok(Command::Answer(Answer {
                text: String::new(),
                option: Some(n),
            }))
        };
        assert_eq!(
            forward(pick(2), Some(&asked)),
            Ok((
                Command::Answer(q.pick(2).unwrap()),
                Some("2025-01-01T00:00:00Z".into())
            ))
        );
        assert_eq!(
            forward(pick(3), Some(&asked)),
            Err("option 3 is not one of the question's (1 to 2)".into())
        );
        assert_eq!(
            forward(pick(1), None),
            Err("no question is waiting for an answer".into())
        );
        let words = Command::Answer(Answer::text("SQLite").unwrap());
        assert_eq!(
            forward(Ok(words.clone()), Some(&asked)).map(|f| f.0),
            Ok(words)
        );
        // Other commands need no question.
        let raise = Command::Raise(Limit::Iterations(2));
        assert_eq!(forward(Ok(raise.clone()), None), Ok((raise, None)));
        assert_eq!(forward(Err("bad".into()), None), Err("bad".into()));
    }
}
