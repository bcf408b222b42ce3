use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use crate::agent::stream::LineFeed;
use crate::exit::ExitStatus;
use crate::history::records::RunDir;
use crate::procs::signals::{install_signal_handlers, signals_received};
use crate::run::lock::LockInfo;
use crate::run::ui::Ui;
use crate::watch::tail::agent_of;
use crate::work::project::Project;
use crate::{errln, outln};

/// Show a run's sessions as the loop showed them, or follow a running loop.
///
/// Renders the saved stream of a session (`.ralph/runs/<run>/session-NNN.jsonl`):
/// the model's text, one line per tool call, tool errors. By default the
/// latest session of the latest run (--all: every session of it); with -f,
/// the running loop's current
/// session as it happens, then each next one, until the loop ends (with
/// no loop running yet, it waits for one to start; Ctrl+C stops it). Plain
/// text when not on a terminal.
#[derive(Debug, Args)]
pub struct Logs {
    /// The run: its folder name under .ralph/runs [default: the latest]
    #[arg(long, value_name = "ID")]
    run: Option<String>,

    /// The session number within the run [default: the latest]
    #[arg(long, value_name = "N", conflicts_with = "all")]
    session: Option<u32>,

    /// Every session of the run, in order
    #[arg(long)]
    all: bool,

    /// Follow the running loop's sessions as they happen (waiting for a
    /// loop to start if none runs yet)
    #[arg(short, long, conflicts_with_all = ["run", "session", "all"])]
    follow: bool,

    /// The loop of worktree NAME (`ralph loop --worktree NAME`)
    #[arg(long, value_name = "NAME")]
    worktree: Option<String>,
}

/// Render one whole stream file, reading it a piece at a time, as the
/// stream of the agent that wrote it; whether it showed anything.
fn render(path: &Path, agent: crate::agent::Agent, ui: Ui) -> Result<bool> {
    let mut f = crate::fsutil::open_regular(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut lines = LineFeed::new(agent);
    let mut buf = vec![0u8; 64 * 1024];
    let mut shown = false;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        lines.feed(&buf[..n], &mut |x| {
            shown = true;
            ui.show(x)
        });
    }
    lines.feed(b"\n", &mut |x| {
        shown = true;
        ui.show(x)
    });
    Ok(shown)
}

impl Run for Logs {
    fn run(&self) -> Result<ExitStatus> {
        let project = match &self.worktree {
            Some(name) => worktree_project(name)?,
            None => Project::find()?,
        };
        let ui = Ui::for_stdout();
        if self.follow {
            return follow(&project, ui);
        }
        let run = self.run_to_show(&project.runs())?;
        let all = run.sessions();
        let chosen: Vec<&(u32, PathBuf)> = match self.session {
            _ if self.all => all.iter().collect(),
            Some(n) => all.iter().filter(|(m, _)| *m == n).collect(),
            None => all.last().into_iter().collect(),
        };
        if chosen.is_empty() {
            return Err(crate::exit::Stop::with(
                ExitStatus::Failure,
                no_such_session(&run, self.session, &all),
            ));
        }
        for (n, path) in chosen {
            let record = run.records_newest_first().find(|r| r.session == *n);
            // A review session says so, with its verdict.
            let review = record
                .as_ref()
                .and_then(|r| r.review.as_ref())
                .map(|r| format!(" (review: {})", r.verdict))
                .unwrap_or_default();
            ui.status(&format!("run {} · session {n}{review}", run.id));
            if !render(path, agent_of(&run, *n), ui)? {
                ui.line(&crate::watch::tail::printed_nothing(*n, record.as_ref()));
            }
        }
        Ok(ExitStatus::Success)
    }
}

impl Logs {
    /// The run asked for (`--run`), else the latest.
    fn run_to_show(&self, runs: &Path) -> Result<RunDir> {
        let Some(id) = &self.run else {
            return RunDir::latest(runs).ok_or_else(|| {
                crate::exit::Stop::with(
                    ExitStatus::Failure,
                    format!("no runs in {}", runs.display()),
                )
            });
        };
        if !RunDir::valid_id(id) {
            return Err(crate::exit::Stop::with(
                ExitStatus::Usage,
                format!("--run {id:?} is not a run id (letters, digits, -, _ and .)"),
            ));
        }
        let ids = RunDir::ids(runs);
        if !ids.contains(id) {
            return Err(crate::exit::Stop::with(
                ExitStatus::Failure,
                no_such_run(id, &ids, runs),
            ));
        }
        Ok(RunDir::open(runs, id))
    }
}

/// The project of worktree `name`, which must be one of the repository's:
/// a name with no worktree is a typo, not a loop yet to come.
fn worktree_project(name: &str) -> Result<Project> {
    use crate::run::worktree;
    crate::git::check_worktree_name(name).map_err(|e| anyhow::anyhow!(e))?;
    let here = std::env::current_dir().context("cannot read the current folder")?;
    let main = worktree::main_root(&here)?;
    let path = worktree::path_for(&main, name);
    if !worktree::list(&main)?.iter().any(|w| w.path == path) {
        return Err(crate::exit::Stop::with(
            ExitStatus::Failure,
            format!(
                "there is no worktree {name} ({}); `ralph worktree list` lists the repository's worktrees",
                path.display()
            ),
        ));
    }
    Ok(Project::at(&path))
}

/// How many run ids a refusal names: the newest, where the one meant
/// most likely is.
const RUNS_NAMED: usize = 5;

/// Which runs there are, for one that is not (`ids` oldest first).
fn no_such_run(id: &str, ids: &[String], runs: &Path) -> String {
    if ids.is_empty() {
        return format!(
            "there is no run {id}: no loop has run here yet ({} has none)",
            runs.display()
        );
    }
    let shown = &ids[ids.len().saturating_sub(RUNS_NAMED)..];
    let older = match ids.len() - shown.len() {
        0 => String::new(),
        n => format!(" (and {n} older)"),
    };
    format!(
        "there is no run {id} in {}; the runs there, newest last: {}{older}",
        runs.display(),
        shown.join(", ")
    )
}

/// Which sessions there are, for one that is not.
fn no_such_session(run: &RunDir, asked: Option<u32>, all: &[(u32, PathBuf)]) -> String {
    let (Some((first, _)), Some((last, _)), Some(n)) = (all.first(), all.last(), asked) else {
        return format!(
            "run {} has no saved session (interactive sessions keep no stream) in {}",
            run.id,
            run.path.display()
        );
    };
    let there = if first == last {
        format!("only session {first}")
    } else if all.len() as u32 == last - first + 1 {
        format!("sessions {first} to {last}")
    } else {
        let list: Vec<String> = all.iter().map(|(n, _)| n.to_string()).collect();
        format!("sessions {}", list.join(", "))
    };
    format!("run {} has no session {n}: it has {there}", run.id)
}

/// What Ctrl+C (or SIGTERM, SIGHUP) ends `-f` with, as it ends the loop.
const INTERRUPTED: ExitStatus = ExitStatus::Code(130);

/// Follow the running loop: its newest session file as it grows, then the
/// next, until the loop is gone and everything written has been shown.
/// With no loop running yet, wait for one (as `tail -F` waits for a file).
fn follow(project: &Project, ui: Ui) -> Result<ExitStatus> {
    // Counted, not obeyed: Ctrl+C ends it with the loop's own 130.
    install_signal_handlers()?;
    let Some(lock) = wait_for_loop(project) else {
        return Ok(INTERRUPTED);
    };
    if !RunDir::valid_id(&lock.run_id) {
        return Err(crate::exit::Stop::with(
            ExitStatus::Failure,
            format!(
                "-f: the running loop's run id {:?} is not one ralph makes",
                lock.run_id
            ),
        ));
    }
    let run = RunDir::open(&project.runs(), &lock.run_id);
    outln!(
        "following run {} (pid {}); Ctrl+C to stop",
        crate::output::visible(&run.id),
        lock.pid
    );
    let mut current: Option<(u32, File, LineFeed)> = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if signals_received() > 0 {
            return Ok(INTERRUPTED);
        }
        let running =
            crate::run::lock::running(&project.lock()).is_some_and(|l| l.run_id == run.id);
        // Drain what the current file has.
        if let Some((_, f, lines)) = current.as_mut() {
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                lines.feed(&buf[..n], &mut |x| ui.show(x));
            }
        }
        // A newer session started: switch to it.
        if let Some((n, path)) = run.sessions().pop()
            && current.as_ref().is_none_or(|(m, _, _)| *m < n)
        {
            let f = crate::fsutil::open_regular(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            ui.status(&format!("session {n}"));
            current = Some((n, f, LineFeed::new(agent_of(&run, n))));
            continue;
        }
        if !running {
            return Ok(ExitStatus::Success);
        }
        std::thread::sleep(POLL);
    }
}

/// How often the lock and the session files are looked at.
const POLL: Duration = Duration::from_millis(100);

/// The running loop, once there is one; `None` if a stop signal came
/// first. Says once that it waits, and how to stop waiting.
fn wait_for_loop(project: &Project) -> Option<LockInfo> {
    let mut said = false;
    loop {
        if let Some(lock) = crate::run::lock::running(&project.lock()) {
            return Some(lock);
        }
        if signals_received() > 0 {
            return None;
        }
        if !said {
            errln!(
                "ralph logs: no loop is running in {} yet; waiting for one to start (Ctrl+C to stop)",
                crate::output::visible(&project.root.display().to_string())
            );
            said = true;
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_is_not_there_is_named_with_the_runs_that_are() {
        let runs = Path::new("/p/.ralph/runs");
        assert_eq!(
            no_such_run("nope", &[], runs),
            "there is no run nope: no loop has run here yet (/p/.ralph/runs has none)"
        );
        let ids: Vec<String> = (1..=7).map(|n| format!("r{n}")).collect();
        assert_eq!(
            no_such_run("nope", &ids[..2], runs),
            "there is no run nope in /p/.ralph/runs; the runs there, newest last: r1, r2"
        );
        assert_eq!(
            no_such_run("nope", &ids, runs),
            "there is no run nope in /p/.ralph/runs; the runs there, newest last: r3, r4, r5, r6, r7 (and 2 older)"
        );
    }
}
