use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::history::records::RunDir;
use crate::outln;
use crate::run::ui::Ui;
use crate::session::stream::LineFeed;
use crate::work::project::Project;

/// Show a run's sessions as the loop showed them, or follow a running loop.
///
/// Renders the saved stream of a session (`.ralph/runs/<run>/session-NNN.jsonl`):
/// the model's text, one line per tool call, tool errors. By default the
/// latest session of the latest run (--all: every session of it); with -f,
/// the running loop's current
/// session as it happens, then each next one, until the loop ends. Plain
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

    /// Follow the running loop's sessions as they happen
    #[arg(short, long, conflicts_with_all = ["run", "session", "all"])]
    follow: bool,

    /// The loop of worktree NAME (`ralph loop --worktree NAME`)
    #[arg(long, value_name = "NAME")]
    worktree: Option<String>,
}

/// Render one whole stream file, reading it a piece at a time.
fn render(path: &Path, ui: Ui) -> Result<()> {
    let mut f = crate::fsutil::open_regular(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut lines = LineFeed::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        lines.feed(&buf[..n], &mut |x| ui.show(x));
    }
    lines.feed(b"\n", &mut |x| ui.show(x));
    Ok(())
}

impl Run for Logs {
    fn run(&self) -> Result<ExitStatus> {
        let project = match &self.worktree {
            Some(name) => {
                crate::run::worktree::check_name(name).map_err(|e| anyhow::anyhow!(e))?;
                let here = std::env::current_dir().context("cannot read the current folder")?;
                let main = crate::run::worktree::main_root(&here)?;
                Project::at(&crate::run::worktree::path_for(&main, name))
            }
            None => Project::find()?,
        };
        let ui = Ui::for_stdout();
        if self.follow {
            return follow(&project, ui);
        }
        let runs = project.runs();
        let run = match &self.run {
            Some(id) if !RunDir::valid_id(id) => {
                return Err(crate::exit::Stop::with(
                    ExitStatus::Usage,
                    format!("--run {id:?} is not a run id (letters, digits, -, _ and .)"),
                ));
            }
            Some(id) => RunDir::open(&runs, id),
            None => match RunDir::latest(&runs) {
                Some(r) => r,
                None => {
                    return Err(crate::exit::Stop::with(
                        ExitStatus::Failure,
                        format!("no runs in {}", runs.display()),
                    ));
                }
            },
        };
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
            // A review session says so, with its verdict.
            let review = run
                .records_newest_first()
                .find(|r| r.session == *n)
                .and_then(|r| r.review)
                .map(|r| format!(" (review: {})", r.verdict))
                .unwrap_or_default();
            ui.status(&format!("run {} · session {n}{review}", run.id));
            render(path, ui)?;
        }
        Ok(ExitStatus::Success)
    }
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

/// Follow the running loop: its newest session file as it grows, then the
/// next, until the loop is gone and everything written has been shown.
fn follow(project: &Project, ui: Ui) -> Result<ExitStatus> {
    let Some(lock) = crate::run::lock::running(&project.lock()) else {
        return Err(crate::exit::Stop::with(
            ExitStatus::Failure,
            format!(
                "-f: no loop is running in {}; `ralph logs` shows the last run",
                project.root.display()
            ),
        ));
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
            current = Some((n, f, LineFeed::new()));
            continue;
        }
        if !running {
            return Ok(ExitStatus::Success);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
