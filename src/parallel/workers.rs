//! Worker loops: each a `ralph loop` of its own (its lock, run folder and
//! sessions) in its step's worktree, started with the run's options, its
//! lines shown under its name, asked to stop as the run stops.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use crate::run::engine::Outcome;
use crate::run::engine::board::End;

/// Options of the run's command line that are the run's own, not a
/// worker's: (flag, takes a value).
const RUN_ONLY: [(&str, bool); 13] = [
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
    // The run tells, a worker never does (its settings drop it); the
    // variable a notice's URL is in is not in a worker's environment.
    ("--notify", true),
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

/// The options naming an agent's program: a path (`./bin/claude`) is read
/// from where the run was started, not from a worker's worktree.
const PROGRAMS: [&str; 5] = ["--claude", "--codex", "--gemini", "--pi", "--opencode"];

/// `args` with each program path made absolute against `here` (the run's
/// folder); a bare name (`claude`) stays one, found on PATH.
pub fn absolute_programs(args: &[String], here: &Path) -> Vec<String> {
    let fix = |v: &str| {
        let p = Path::new(v);
        if p.is_relative() && p.components().count() > 1 {
            here.join(p).display().to_string()
        } else {
            v.to_string()
        }
    };
    let program = |name: &str| PROGRAMS.contains(&name);
    let mut p = parts(args, &program);
    for (name, words) in p.options.iter_mut().filter(|(n, _)| program(n)) {
        match words.as_mut_slice() {
            [_, value] => *value = fix(value),
            [word] => {
                if let Some(value) = word.strip_prefix(&format!("{name}=")) {
                    *word = format!("{name}={}", fix(value));
                }
            }
            _ => {}
        }
    }
    p.joined()
}

/// A command line (`loop ...`, the program aside) in parts: what comes up
/// to the subcommand, each option with its value, and what follows `--`.
struct Parts {
    head: Vec<String>,
    options: Vec<(String, Vec<String>)>,
    tail: Option<Vec<String>>,
}

impl Parts {
    /// The command line again, in its order.
    fn joined(self) -> Vec<String> {
        let mut args = self.head;
        args.extend(self.options.into_iter().flat_map(|(_, w)| w));
        if let Some(tail) = self.tail {
            args.push("--".into());
            args.extend(tail);
        }
        args
    }
}

/// `args` in parts; `takes_value` says whether an option (`--name`, `-C`)
/// takes the next word as its value.
fn parts(args: &[String], takes_value: &dyn Fn(&str) -> bool) -> Parts {
    let mut p = Parts {
        head: Vec::new(),
        options: Vec::new(),
        tail: None,
    };
    let mut it = args.iter();
    let mut in_head = true;
    while let Some(a) = it.next() {
        if a == "--" {
            p.tail = Some(it.by_ref().cloned().collect());
            break;
        }
        let name = match a.split_once('=') {
            Some((n, _)) if a.starts_with("--") => n,
            _ if a.starts_with("--") || !a.starts_with('-') => a.as_str(),
            // `-C dir` or `-Cdir`.
            _ => a.get(..2).unwrap_or(a),
        };
        let mut words = vec![a.clone()];
        if name == a && a.starts_with('-') && takes_value(name) {
            words.extend(it.next().cloned());
        }
        if in_head {
            in_head = a != "loop";
            p.head.extend(words);
        } else {
            p.options.push((name.to_string(), words));
        }
    }
    p
}

/// The command line a resumed run's workers are started with: the run's
/// own (`first`), with each later one's options (a `--resume`'s, in
/// order) in place of the same options before them, as the run's own
/// settings are layered; each later one's `-- ARGS` in place of the
/// earlier. What precedes a later line's subcommand took effect where it
/// was given. Pure.
pub fn layered_args(
    first: &[String],
    later: &[Vec<String>],
    takes_value: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut out = parts(first, takes_value);
    for line in later {
        let p = parts(line, takes_value);
        out.options
            .retain(|(name, _)| !p.options.iter().any(|(n, _)| n == name));
        out.options.extend(p.options);
        if p.tail.is_some() {
            out.tail = p.tail;
        }
    }
    out.joined()
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
    /// Wakes the coordinator the moment the worker exits.
    exit: crate::procs::ladder::ExitWatch,
    shown: Vec<std::thread::JoinHandle<()>>,
    /// The run ralph had last started in its worktree when it was started
    /// (from ralph's private state): while that is still the last, the
    /// worker began no run of its own, whatever the run folders say.
    before: Option<String>,
    /// Its last line on stderr: why it stopped before it began.
    last_error: Arc<Mutex<Option<String>>>,
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
    // token it read): only a worker that reads GitHub's issues gets the
    // token, on its stdin (in its environment, an unconfined session
    // would read it from `/proc/<its parent>/environ`).
    crate::github::token::withhold(&mut c);
    let handed = if job.needs_token {
        crate::secrets::hand_to(&mut c, |n| crate::secrets::TOKEN_VARS.contains(&n))
    } else {
        None
    };
    let before = crate::history::invocation::load(job.dir).map(|i| i.run_id);
    let mut child = c
        .spawn()
        .with_context(|| format!("cannot start worker {}", job.name))?;
    if let Err(e) = crate::secrets::give(&mut child, handed) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e).with_context(|| format!("cannot hand worker {} the GitHub token", job.name));
    }
    let tag = format!("[{}] ", job.name);
    let last_error = Arc::new(Mutex::new(None));
    let out = child.stdout.take().map(|o| shown(o, tag.clone(), None));
    let err = child
        .stderr
        .take()
        .map(|e| shown(e, tag, Some(last_error.clone())));
    Ok(Running {
        name: job.name.to_string(),
        step: job.step.to_string(),
        dir: job.dir.to_path_buf(),
        exit: crate::procs::ladder::ExitWatch::new(child.id()),
        child,
        shown: out.into_iter().chain(err).collect(),
        before,
        last_error,
    })
}

/// Each line a worker writes, under its name (its own words already made
/// safe to show by its loop); its stderr's last line kept in `last`.
fn shown(
    from: impl std::io::Read + Send + 'static,
    tag: String,
    last: Option<Arc<Mutex<Option<String>>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let reader = std::io::BufReader::new(from);
        for line in reader.split(b'\n').map_while(Result::ok) {
            let line = String::from_utf8_lossy(&line);
            // Its loop tags its own lines; what else it prints gets the tag.
            let own = line.strip_prefix(tag.as_str());
            let shown_tag = if own.is_some() { "" } else { tag.as_str() };
            match &last {
                Some(last) => {
                    eprintln!("{shown_tag}{line}");
                    if let Ok(mut l) = last.lock() {
                        let kept = l.take().unwrap_or_default();
                        *l = Some(last_message(&kept, own.unwrap_or(&line)));
                    }
                }
                None => println!("{shown_tag}{line}"),
            }
        }
    })
}

/// A worker's last message on stderr, on one line, with `line` read: an
/// error begins a new one (`ralph ...:`, `error:`), the lines after it are
/// its own; bounded.
fn last_message(kept: &str, line: &str) -> String {
    let line = crate::output::visible_line(line.trim());
    if line.is_empty() {
        return kept.to_string();
    }
    let begins = line.starts_with("ralph") || line.starts_with("error");
    let joined = if begins || kept.is_empty() {
        line
    } else {
        format!("{kept} {line}")
    };
    match joined.char_indices().nth(1000) {
        Some((at, _)) => format!("{}...", &joined[..at]),
        None => joined,
    }
}

/// Until one of `running` exits (or a signal comes), at most `most`: the
/// coordinator takes a worker's end at once instead of at its next turn.
pub fn wait_any(running: &[Running], most: std::time::Duration) {
    let watches: Vec<&crate::procs::ladder::ExitWatch> = running.iter().map(|w| &w.exit).collect();
    crate::procs::ladder::ExitWatch::wait_any(&watches, most);
}

impl Running {
    /// Its end, once it has ended.
    pub fn ended(&mut self) -> Result<Option<End>> {
        let Some(status) = self.child.try_wait()? else {
            return Ok(None);
        };
        // Its last lines are still in the pipes; but a process it left (a
        // lifecycle hook's `daemon &`) may hold them open for good: wait a
        // moment for the lines, never for that process.
        // Looked at each millisecond: the lines are there at once, and the
        // coordinator's next merge and start wait for this.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while self.shown.iter().any(|t| !t.is_finished()) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // What is still reading goes on showing that process's lines.
        self.shown.clear();
        let Some(run) = self.run_dir() else {
            let said = self.last_error.lock().ok().and_then(|l| l.clone());
            return Ok(Some(End::NotStarted(match said {
                Some(line) => format!("{line} ({})", crate::output::ended(status)),
                None => format!(
                    "it ended ({}) before it began a run",
                    crate::output::ended(status)
                ),
            })));
        };
        Ok(Some(match run.summary() {
            Some(s) => End::Ran(s.outcome, s.reason),
            None => End::Ran(
                Outcome::EndedAbnormally,
                format!(
                    "worker {} ended ({}) without a summary",
                    self.name,
                    crate::output::ended(status)
                ),
            ),
        }))
    }

    /// Its own run's folder: the run ralph last started in its worktree,
    /// if that began after the worker was started (a folder a session
    /// made, or an earlier worker's, is not it).
    pub fn run_dir(&self) -> Option<crate::history::records::RunDir> {
        use crate::history::records::RunDir;
        let id = crate::history::invocation::load(&self.dir)
            .map(|i| i.run_id)
            .filter(|id| Some(id) != self.before.as_ref() && RunDir::valid_id(id))?;
        Some(RunDir::open(&self.dir.join(".ralph/runs"), &id))
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
    fn a_workers_last_message_is_its_last_error_with_the_lines_after_it() {
        let mut kept = String::new();
        for l in [
            "warning: an old one",
            "ralph loop: what /w/1 asks to run has changed:",
            "    [gate]",
            "",
            "Read them, then run `ralph trust`.",
        ] {
            kept = last_message(&kept, l);
        }
        assert_eq!(
            kept,
            "ralph loop: what /w/1 asks to run has changed: [gate] Read them, then run `ralph trust`."
        );
        assert_eq!(last_message("", "a\x1b[2Jb"), "a^[[2Jb");
        let long = last_message(&"x".repeat(2000), "y");
        assert_eq!(long.chars().count(), 1003, "bounded");
    }

    #[test]
    fn a_workers_program_paths_are_the_runs_folders_and_names_stay_names() {
        let here = Path::new("/home/me/project");
        assert_eq!(
            absolute_programs(
                &v(
                    "loop --claude ./bin/claude --codex=tools/codex --gemini gemini --pi /opt/pi --opencode=oc --allow-write=a/b --allow-write c/d -- --claude ./x"
                ),
                here
            ),
            v(
                "loop --claude /home/me/project/./bin/claude --codex=/home/me/project/tools/codex --gemini gemini --pi /opt/pi --opencode=oc --allow-write=a/b --allow-write c/d -- --claude ./x"
            )
        );
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
        assert_eq!(
            worker_args(&v("-Cx loop --max-cost 3 --push")),
            v("loop --max-cost 3")
        );
        assert_eq!(
            worker_args(&v(
                "loop --notify ntfy --notify=slack --notify discord=env:HOOK --max-cost 3"
            )),
            v("loop --max-cost 3")
        );
    }

    fn takes_value(name: &str) -> bool {
        !matches!(name, "--confined" | "--resume" | "--push")
    }

    #[test]
    fn a_resumes_options_replace_the_same_options_of_the_run_it_resumes() {
        let first = v(
            "-C dir loop --confined --max-iterations 2 --claude /a/claude --gate make --gate test -- --x",
        );
        let layered = |later: &[&str]| {
            let later: Vec<Vec<String>> = later.iter().map(|l| v(l)).collect();
            layered_args(&first, &later, &takes_value)
        };
        assert_eq!(layered(&[]), first, "no resume: the run's own");
        assert_eq!(
            layered(&["loop --resume --max-iterations=6"]),
            v(
                "-C dir loop --confined --claude /a/claude --gate make --gate test --resume --max-iterations=6 -- --x"
            ),
            "a value replaced, the confinement kept"
        );
        // A repeated option is replaced as a whole; the last resume wins;
        // what precedes a resume's subcommand (its folder) is not the run's.
        assert_eq!(
            layered(&[
                "loop --resume --gate lint --max-iterations 4",
                "-C elsewhere loop --resume --max-iterations 9 -- --y",
            ]),
            v(
                "-C dir loop --confined --claude /a/claude --gate lint --resume --max-iterations 9 -- --y"
            )
        );
        // `-C` given after the subcommand is an option like the others.
        assert_eq!(
            layered_args(&v("loop -C a --push"), &[v("loop -Cb")], &takes_value),
            v("loop --push -Cb")
        );
    }
}
