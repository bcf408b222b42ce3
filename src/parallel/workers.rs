//! Worker loops: each a `ralph loop` of its own (its lock, run folder and
//! sessions) in its step's worktree, started with the run's options, its
//! lines shown under its name, asked to stop as the run stops.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result};

use crate::run::engine::Outcome;

/// Options of the run's command line that are the run's own, not a
/// worker's: (flag, takes a value).
const RUN_ONLY: [(&str, bool); 12] = [
    // The run's deadline: each worker gets what is left of it.
    ("--max-time", true),
    ("--branch", true),
    ("--push", false),
    ("--pr", false),
    ("--parallel", true),
    ("--on-conflict", true),
    ("--worktree", true),
    ("--base", true),
    ("--spec", true),
    ("--prompt", true),
    ("--resume", false),
    ("-C", true),
];

/// A worker's command line from the run's (`loop ...`, the program
/// aside): the same options, less the run's own.
pub fn worker_args(run: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = run.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a.clone());
            out.extend(it.by_ref().cloned());
            break;
        }
        let name = a.split('=').next().unwrap_or(a);
        match RUN_ONLY.iter().find(|(f, _)| *f == name) {
            Some((_, takes)) => {
                if *takes && !a.contains('=') {
                    it.next();
                }
            }
            // `-Cdir`
            None if a.starts_with("-C") && a.len() > 2 => {}
            None => out.push(a.clone()),
        }
    }
    out
}

/// A worker's prompt: who it is and its step (`described`), what it is
/// told besides (`feedback`), then the run's prompt. `elsewhere`: where
/// the other workers work. Pure.
pub fn prompt(
    worker: &str,
    described: &str,
    feedback: Option<&str>,
    elsewhere: &str,
    run_prompt: &str,
) -> String {
    let mut text = format!(
        "You are {worker}, one of several workers of a parallel ralph run. Your step, the first open step of .ralph/spec.md here:\n\n    {described}\n\nDo this step only: the other open steps are other workers' (they work at the same time, {elsewhere}). When it is done, check its box (and close its task), commit, and end the session. Do not write .ralph/COMPLETE: the run merges your branch.\n"
    );
    if let Some(f) = feedback {
        text.push_str(&format!("\n{f}\n"));
    }
    text.push_str("\n---\n\n");
    text.push_str(run_prompt);
    text
}

/// What a worker is to do.
pub struct Job<'a> {
    pub name: &'a str,
    pub step: &'a str,
    pub dir: &'a Path,
    pub prompt: &'a Path,
    pub budget: &'a Path,
    /// The run's tracker is GitHub's: the worker reads its issues' states
    /// (its sessions still never get the token).
    pub needs_token: bool,
}

/// A worker loop running.
pub struct Running {
    pub name: String,
    pub step: String,
    pub dir: PathBuf,
    child: Child,
    shown: Vec<std::thread::JoinHandle<()>>,
}

/// Start a worker: `ralph <args> --worker-...` in its worktree.
pub fn start(args: &[String], job: &Job) -> Result<Running> {
    let exe = std::env::current_exe().context("cannot find ralph's own program")?;
    let (before, after) = match args.iter().position(|a| a == "--") {
        Some(at) => args.split_at(at),
        None => (args, &[][..]),
    };
    let mut c = Command::new(exe);
    c.args(before)
        .arg("--prompt")
        .arg(job.prompt)
        // `=`: a step whose text begins with `-` is still the value.
        .arg(format!("--worker-step={}", job.step))
        .arg(format!("--worker-name={}", job.name))
        .arg("--worker-budget")
        .arg(job.budget)
        .args(after)
        .current_dir(job.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A worker ends with its run, even one killed outright.
    unsafe {
        use std::os::unix::process::CommandExt;
        c.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
                .map_err(std::io::Error::from)
        });
    }
    // Workers neither push nor open pull requests (the run does, with the
    // token it read): a token in a worker's environment is in reach of an
    // unconfined session (`/proc/<its parent>/environ`), so only a worker
    // that reads GitHub's issues has it.
    if !job.needs_token {
        crate::github::token::withhold(&mut c);
    }
    let mut child = c
        .spawn()
        .with_context(|| format!("cannot start worker {}", job.name))?;
    let tag = format!("[{}] ", job.name);
    let out = child.stdout.take().map(|o| shown(o, tag.clone(), false));
    let err = child.stderr.take().map(|e| shown(e, tag, true));
    Ok(Running {
        name: job.name.to_string(),
        step: job.step.to_string(),
        dir: job.dir.to_path_buf(),
        child,
        shown: out.into_iter().chain(err).collect(),
    })
}

/// Each line a worker writes, under its name (its own words already made
/// safe to show by its loop).
fn shown(
    from: impl std::io::Read + Send + 'static,
    tag: String,
    err: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let reader = std::io::BufReader::new(from);
        for line in reader.split(b'\n').map_while(Result::ok) {
            let line = String::from_utf8_lossy(&line);
            // Its loop tags its own lines; what else it prints gets the tag.
            let tag = if line.starts_with(tag.as_str()) {
                ""
            } else {
                tag.as_str()
            };
            if err {
                eprintln!("{tag}{line}");
            } else {
                println!("{tag}{line}");
            }
        }
    })
}

impl Running {
    /// Its end, once it has ended: the outcome and reason its run wrote
    /// (a worker killed before it wrote one ended abnormally).
    pub fn ended(&mut self) -> Result<Option<(Outcome, String)>> {
        let Some(status) = self.child.try_wait()? else {
            return Ok(None);
        };
        // Its last lines are still in the pipes; but a process it left (a
        // lifecycle hook's `daemon &`) may hold them open for good: wait a
        // moment for the lines, never for that process.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while self.shown.iter().any(|t| !t.is_finished()) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // What is still reading goes on showing that process's lines.
        self.shown.clear();
        let summary = self
            .run_dir()
            .and_then(|r| r.summary())
            .map(|s| (s.outcome, s.reason));
        Ok(Some(summary.unwrap_or_else(|| {
            (
                Outcome::EndedAbnormally,
                format!("worker {} ended ({status}) without a summary", self.name),
            )
        })))
    }

    /// Its newest run folder.
    pub fn run_dir(&self) -> Option<crate::history::records::RunDir> {
        crate::history::records::RunDir::latest(&self.dir.join(".ralph/runs"))
    }

    /// Ask it to stop as Ctrl+C does (it ends its session cleanly).
    pub fn interrupt(&self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGINT,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_worker_has_the_runs_options_less_the_runs_own() {
        assert_eq!(
            worker_args(&v(
                "loop --parallel 4 --max-cost 5 --on-conflict=wait --worktree a --gate make --resume --prompt p.md -- --parallel 9"
            )),
            v("loop --max-cost 5 --gate make -- --parallel 9")
        );
        assert_eq!(worker_args(&v("-C x loop --parallel=2")), v("loop"));
    }
}
