use anyhow::Result;
use clap::Args;

use super::Run;
use crate::control::inbox::{self, To};
use crate::control::{Answer as Given, Command};
use crate::exit::{ExitStatus, Stop};
use crate::outln;
use crate::output::visible;
use crate::work::project::Project;
use crate::work::sentinel;

/// Answer the question a loop asks (`.ralph/WAITING`): in words, or by the
/// number of one of the options it offers.
///
/// A loop that waits for an answer (`--wait-for-answer`) goes on with it at
/// once, the same run; a loop that ended takes it as `ralph loop --resume`
/// starts. The answer is handed to the next session as your answer to its
/// question. Refused inside a loop's session: a loop is answered by its user.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("how").required(true).args(["text", "option"]))]
pub struct Answer {
    /// The answer, in words
    text: Option<String>,

    /// Pick option N of the question (1 first), as `ralph status` lists them
    #[arg(long, value_name = "N")]
    option: Option<u32>,

    /// Only if the loop's run is RUN (as `ralph status` names it)
    #[arg(long, value_name = "RUN")]
    run: Option<String>,
}

/// How a user answers: in words, or by the number of an option.
#[derive(Debug, Clone, Copy)]
pub enum Reply<'a> {
    Words(&'a str),
    Option(u32),
}

/// Send `reply` to the question the loop of `project` asks (`.ralph/WAITING`),
/// as `by` (`terminal`, `mcp`), only for run `run` if given; what was done,
/// in lines for the user. Every face answers through here.
pub fn send(project: &Project, by: &str, reply: Reply, run: Option<&str>) -> Result<Vec<String>> {
    let Some(waiting) = sentinel::Waiting::read(&project.waiting())? else {
        return Err(Stop::with(
            ExitStatus::Failure,
            format!(
                "nothing is asked: there is no {} (a loop asks with `ralph waiting`)",
                project.waiting().display()
            ),
        ));
    };
    let refused = |m: String| Stop::with(ExitStatus::Usage, m);
    let question = waiting
        .question()
        .ok_or_else(|| refused("the question in WAITING is empty".into()))?;
    let answer = match reply {
        Reply::Option(n) => question
            .pick(n)
            .map_err(|e| refused(format!("--option {n}: {e}")))?,
        Reply::Words(t) => Given::text(t).map_err(refused)?,
    };
    if let Some(id) = run
        && !crate::history::records::RunDir::valid_id(id)
    {
        return Err(refused(format!(
            "--run {id:?} is not a run id (letters, digits, -, _ and .)"
        )));
    }
    let to = To {
        run,
        asked: waiting.since.as_deref(),
    };
    inbox::send(&project.root, by, to, Command::Answer(answer.clone()))?;
    let mut said = vec![format!("Answered: {}", visible(&answer.said()))];
    said.push(match crate::run::lock::running(&project.lock()) {
        Some(l) => format!(
            "The loop (run {}, pid {}) takes it as it waits for an answer, and goes on.",
            visible(&l.run_id),
            l.pid
        ),
        None => format!(
            "No loop is running in {}: `ralph loop --resume` goes on with this answer.",
            project.root.display()
        ),
    });
    Ok(said)
}

impl Run for Answer {
    fn run(&self) -> Result<ExitStatus> {
        if let Some(why) = inbox::refused_in_session() {
            return Err(Stop::with(ExitStatus::Usage, why));
        }
        let project = Project::find()?;
        let reply = match (self.option, &self.text) {
            (Some(n), _) => Reply::Option(n),
            (None, Some(t)) => Reply::Words(t),
            (None, None) => unreachable!("clap requires one"),
        };
        for line in send(&project, "terminal", reply, self.run.as_deref())? {
            outln!("{line}");
        }
        Ok(ExitStatus::Success)
    }
}
