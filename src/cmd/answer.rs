use anyhow::Result;
use clap::Args;

use super::Run;
use crate::control::inbox;
use crate::exit::{ExitStatus, Stop};
use crate::outln;
use crate::output::visible;
use crate::run::tell::{self, NotSent, Reply};
use crate::work::project::Project;

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

    /// For run RUN only (as `ralph status` names it): another run leaves
    /// the answer for RUN
    #[arg(long, value_name = "RUN")]
    run: Option<String>,
}

/// Send `reply` to the question the loop of `project` asks
/// (`.ralph/WAITING`), as `by` (`terminal`, `watch`, `mcp`), only for run
/// `run` if given; what was done, in lines for the user. Every face answers
/// through `run::tell`; this is its wording.
pub fn send(project: &Project, by: &str, reply: &Reply, run: Option<&str>) -> Result<Vec<String>> {
    let sent = tell::answer(&project.root, by, reply, run).map_err(not_sent)?;
    Ok(vec![
        format!("Answered: {}", visible(&sent.answer.said())),
        match sent.running {
            Some(l) => format!(
                "The loop (run {}, pid {}) takes it as it waits for an answer, and goes on.",
                visible(&l.run_id),
                l.pid
            ),
            None => format!(
                "No loop is running in {}: `ralph loop --resume` goes on with this answer.",
                project.root.display()
            ),
        },
    ])
}

impl Run for Answer {
    fn run(&self) -> Result<ExitStatus> {
        let reply = match (self.option, &self.text) {
            (Some(n), _) => Reply::Option(n),
            (None, Some(t)) => Reply::Text(t.clone()),
            (None, None) => unreachable!("clap requires one"),
        };
        if let Some(why) = inbox::refused_in_session() {
            return Err(Stop::with(ExitStatus::Usage, why));
        }
        let project = Project::find()?;
        for line in send(&project, "terminal", &reply, self.run.as_deref())? {
            outln!("{line}");
        }
        Ok(ExitStatus::Success)
    }
}

/// Why nothing was sent, as this command exits: nothing there to take it
/// 1, a refusal 2, anything else an error.
pub(super) fn not_sent(e: NotSent) -> anyhow::Error {
    match e {
        NotSent::Nothing(why) => Stop::with(ExitStatus::Failure, why),
        NotSent::Refused(why) => Stop::with(ExitStatus::Usage, why),
        NotSent::Failed(e) => e,
    }
}
