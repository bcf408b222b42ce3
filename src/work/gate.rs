//! The completion gate: the project's own checks (`[gate] commands` in
//! `.ralph/config.toml`, or `--gate CMD`), run by ralph itself where the
//! model cannot skip them. COMPLETE holds only if every command exits 0.
//!
//! A failure is handed to the next session the Ralph way, through a file the
//! standing prompt tells it to read first: `.ralph/gate-failed.md`, with the
//! failing command and the tail of its output. It goes once the gate passes.
//!
//! Gate commands come from the repository: they run on `ralph loop` and
//! `ralph complete` only, never on a read-only command.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::config::{self, GateConfig};
use crate::procs::ladder::{Ending, Target, supervise};
use crate::work::project::Project;

/// Lines of a failing command's output kept for the next session.
const TAIL: usize = 60;
/// A command's output kept to read per test, in bytes: past it the
/// command is judged by its exit status alone (and that is said).
pub const READ_MAX: usize = 16 << 20;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20 * 60);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// When COMPLETE appears (and the spec and tracker agree).
    Complete,
    /// Also after every session that changed something.
    Each,
}

/// The gate in force.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub commands: Vec<String>,
    pub timeout: Duration,
    pub when: When,
    pub max_failures: u32,
    /// `[gate] baseline`: what fails before the run does not block.
    pub baseline: bool,
    /// `[gate] reports`: test reports the commands write, in the project.
    pub reports: Vec<String>,
}

impl Gate {
    /// From `[gate]` (as layered with `--gate`). `Ok(None)` when there are
    /// no commands: COMPLETE then rests on spec and tracker.
    pub fn from_config(cfg: &GateConfig) -> Result<Option<Gate>, String> {
        let commands = cfg.commands.clone().unwrap_or_default();
        if let Some(i) = commands.iter().position(|c| c.trim().is_empty()) {
            return Err(format!("[gate] commands: command {} is empty", i + 1));
        }
        let timeout = match &cfg.timeout {
            None => DEFAULT_TIMEOUT,
            Some(span) => {
                let (t, d) = (span.text(), span.value());
                if d > MAX_TIMEOUT {
                    return Err(format!("[gate] timeout: {t:?} is longer than 24h"));
                }
                if d.is_zero() {
                    return Err(format!("[gate] timeout: {t:?} is no time at all"));
                }
                d
            }
        };
        let when = match cfg.when.as_deref() {
            None | Some("complete") => When::Complete,
            Some("each") => When::Each,
            Some(other) => {
                return Err(format!(
                    "[gate] when: {other:?} is neither \"complete\" nor \"each\""
                ));
            }
        };
        let baseline = match cfg.baseline.as_deref() {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => {
                return Err(format!(
                    "[gate] baseline: {other:?} is neither \"on\" nor \"off\""
                ));
            }
        };
        let reports = cfg.reports.clone().unwrap_or_default();
        if let Some(r) = reports.iter().find(|r| {
            let p = Path::new(r.as_str());
            r.is_empty()
                || p.is_absolute()
                || p.components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
        }) {
            return Err(format!(
                "[gate] reports: {r:?} is not a path inside the project (relative, with no `..`)"
            ));
        }
        let max_failures = cfg.max_failures.unwrap_or(3);
        if !(1..=1000).contains(&max_failures) {
            return Err(format!(
                "[gate] max_failures must be from 1 to 1000, not {max_failures}"
            ));
        }
        Ok((!commands.is_empty()).then_some(Gate {
            commands,
            timeout,
            when,
            max_failures,
            baseline,
            reports,
        }))
    }

    /// The gate as the loop hands it to its sessions (`RALPH_GATE`): its
    /// commands and their time limit; `[]` for none.
    pub fn handed(gate: Option<&Gate>) -> String {
        let g = gate.map(|g| Handed {
            commands: g.commands.clone(),
            timeout_s: g.timeout.as_secs(),
            reports: g.reports.clone(),
        });
        serde_json::to_string(&g).expect("a gate serialises")
    }

    /// The gate a loop handed over, read back.
    pub fn from_handed(text: &str) -> Result<Option<Gate>, String> {
        let h: Option<Handed> = serde_json::from_str(text)
            .map_err(|e| format!("{}: not a gate ralph wrote: {e}", crate::handoff::env::GATE))?;
        let Some(h) = h else { return Ok(None) };
        Gate::from_config(&GateConfig {
            commands: Some(h.commands),
            timeout: Some(config::Span::secs(h.timeout_s)),
            reports: Some(h.reports),
            ..GateConfig::default()
        })
    }

    /// The gate of a project, from its config file.
    pub fn of(project: &Project) -> Result<Option<Gate>> {
        let cfg = config::load(&project.config())?;
        Gate::from_config(&cfg.gate).map_err(|e| anyhow::anyhow!("{e}"))
    }
}

#[derive(Serialize, Deserialize)]
struct Handed {
    commands: Vec<String>,
    timeout_s: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    reports: Vec<String>,
}

/// What a run of the gate found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub passed: bool,
    /// The command that failed (the gate stops at the first failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// `exit status 1`, `timed out after 20m`, `interrupted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    pub time: String,
    pub duration_s: f64,
    /// The full output, kept in the run folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// The last lines of the failing command's output.
    #[serde(skip)]
    pub tail: Vec<String>,
    #[serde(skip)]
    pub interrupted: bool,
    /// Each command that ran, in order (all of them where the gate runs
    /// every one: for a baseline, and against one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ran: Vec<Ran>,
}

/// One command of the gate, as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ran {
    pub command: String,
    pub passed: bool,
    /// Why not, as `Verdict::why` says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Its tests, where its output says which passed and which failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<crate::work::checks::Results>,
    /// Its output was longer than ralph reads per test.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_long: bool,
    /// The last lines of its output, when it failed (for the next session).
    #[serde(skip)]
    pub tail: Vec<String>,
}

impl Verdict {
    pub fn summary(&self) -> String {
        match (&self.failed, &self.why) {
            (Some(c), Some(w)) => format!("`{c}` failed ({w})"),
            _ => "passed".into(),
        }
    }
}

/// How the gate's commands run: the marker their processes carry (so that
/// whatever they leave running is found and ended, now or by the next loop),
/// for a confined run the sandbox they run in, and where what they show goes.
#[derive(Clone)]
pub struct Runner {
    /// `RALPH_SESSION_TOKEN`'s value for the gate's processes.
    pub token: String,
    pub confined: Option<crate::confinement::Confinement>,
    /// Where what the gate shows as it runs goes (the UI layer prints it).
    pub show: Show,
}

/// What the gate shows as it runs: each command as it starts, and on a
/// terminal the latest line of its output, cleared when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown<'a> {
    Command(&'a str),
    Latest(&'a str),
    Cleared,
}

/// A printer of `Shown`, callable from the thread that reads the output.
pub type Show = std::sync::Arc<dyn Fn(Shown<'_>) + Send + Sync>;

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("confined", &self.confined)
            .finish_non_exhaustive()
    }
}

/// Run the gate's commands in order in `cwd`, stopping at the first failure
/// unless `all` (a baseline, or a gate judged against one, needs each).
/// Output goes to `log` (whole) and, on a terminal, to one line that shows
/// the latest output as it comes. `stops` counts the loop's stop requests
/// (the running command is then ended through the ladder).
pub fn run(
    gate: &Gate,
    cwd: &Path,
    log: Option<&Path>,
    stops: &dyn Fn() -> u32,
    runner: &Runner,
    all: bool,
) -> Result<Verdict> {
    let t0 = Instant::now();
    // Each report as it was before the commands ran: one they did not
    // write again is not theirs (file times are too coarse to compare
    // with the clock).
    let before: Vec<Option<std::time::SystemTime>> = gate
        .reports
        .iter()
        .map(|r| written_at(&cwd.join(r)))
        .collect();
    let time = crate::timefmt::now();
    let mut file = match log {
        Some(p) => Some(
            crate::fsutil::create_new(p)
                .with_context(|| format!("cannot create {}", p.display()))?,
        ),
        None => None,
    };
    let mut ran: Vec<Ran> = Vec::new();
    for cmd in &gate.commands {
        (runner.show)(Shown::Command(cmd));
        if let Some(f) = file.as_mut() {
            let _ = writeln!(f, "$ {cmd}");
        }
        let one = run_one(cmd, cwd, gate.timeout, file.as_mut(), stops, runner)?;
        let why = (one.code != Some(0)).then(|| {
            if one.interrupted {
                "interrupted".to_string()
            } else if one.timed_out {
                format!(
                    "timed out after {}",
                    crate::timefmt::human_duration(gate.timeout)
                )
            } else {
                match one.code {
                    Some(c) => format!("exit status {c}"),
                    None => "killed by a signal".to_string(),
                }
            }
        });
        let too_long = one.output.is_none();
        ran.push(Ran {
            command: cmd.clone(),
            passed: why.is_none(),
            why,
            tests: one.output.as_deref().and_then(crate::work::checks::read),
            too_long,
            tail: one.tail,
        });
        if one.interrupted || (!all && !ran[ran.len() - 1].passed) {
            break;
        }
    }
    // What the commands wrote, read once they all ran.
    if !ran.iter().any(|r| r.why.as_deref() == Some("interrupted")) {
        ran.extend(
            gate.reports
                .iter()
                .zip(&before)
                .map(|(r, b)| report(cwd, r, *b)),
        );
    }
    let first = ran.iter().find(|r| !r.passed);
    Ok(Verdict {
        passed: first.is_none(),
        failed: first.map(|r| r.command.clone()),
        why: first.and_then(|r| r.why.clone()),
        time,
        duration_s: t0.elapsed().as_secs_f64(),
        log: log.map(Path::to_path_buf),
        tail: first.map(|r| r.tail.clone()).unwrap_or_default(),
        interrupted: ran.iter().any(|r| r.why.as_deref() == Some("interrupted")),
        ran,
    })
}

/// When the file at `path` was last written, if it is there.
fn written_at(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
}

/// The test report at `path` (in `cwd`), as one of the gate's checks: its
/// tests when this run of the gate wrote it (it was not there, or written
/// at `before`) and ralph can read them; else why not, failing.
fn report(cwd: &Path, path: &str, before: Option<std::time::SystemTime>) -> Ran {
    let file = cwd.join(path);
    let read = || -> Result<crate::work::checks::Results, (String, bool)> {
        let m = std::fs::symlink_metadata(&file).map_err(|_| ("not written".to_string(), false))?;
        if !m.is_file() {
            return Err(("not a regular file".into(), false));
        }
        if before.is_some() && m.modified().ok() == before {
            return Err(("not written by this run of the gate".into(), false));
        }
        if m.len() > READ_MAX as u64 {
            return Err(("too long to read".into(), true));
        }
        let text = crate::fsutil::read_regular_capped(&file, READ_MAX as u64)
            .map_err(|e| (format!("{e:#}"), false))?
            .ok_or_else(|| ("not written".to_string(), false))?;
        crate::work::checks::read_report(&text)
            .ok_or_else(|| ("no test ralph can read in it".into(), false))
    };
    let command = format!("report {path}");
    match read() {
        Ok(tests) => {
            let failed = tests
                .tests
                .values()
                .any(|s| *s == crate::work::checks::Status::Failed);
            Ran {
                command,
                passed: !failed,
                why: failed.then(|| "tests failed in it".to_string()),
                tests: Some(tests),
                too_long: false,
                tail: Vec::new(),
            }
        }
        Err((why, too_long)) => Ran {
            command,
            passed: false,
            why: Some(why),
            tests: None,
            too_long,
            tail: Vec::new(),
        },
    }
}

/// How one command ran: its exit code, its last lines, its output (`None`:
/// longer than `READ_MAX`), whether it was stopped or timed out.
struct CommandRun {
    code: Option<i32>,
    tail: Vec<String>,
    output: Option<String>,
    interrupted: bool,
    timed_out: bool,
}

/// How long the output pipe is waited on after the command and everything
/// it left were ended: a process that escaped both (it dropped its marker)
/// may hold the pipe, and the loop must not wait on it.
const DRAIN: Duration = Duration::from_secs(2);

fn run_one(
    cmd: &str,
    cwd: &Path,
    timeout: Duration,
    log: Option<&mut std::fs::File>,
    stops: &dyn Fn() -> u32,
    runner: &Runner,
) -> Result<CommandRun> {
    let (reader, writer) = std::io::pipe().context("cannot make a pipe for the gate")?;
    // A confined command's own TMPDIR (private, gone when it is).
    let tmp = runner.confined.as_ref().map(|_| gate_tmp()).transpose()?;
    let argv = match (&runner.confined, &tmp) {
        (Some(c), Some(t)) => {
            let host = crate::sandbox::confine::Host::read();
            crate::sandbox::confine::gate_argv(c, cwd, t.path(), cmd, &host)
        }
        _ => vec!["/bin/sh".into(), "-c".into(), cmd.into()],
    };
    let mut child = crate::github::token::withhold(&mut Command::new(&argv[0]))
        .args(&argv[1..])
        .current_dir(cwd)
        .env(crate::handoff::env::SESSION_TOKEN, &runner.token)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        // Its own group: Ctrl+C reaches the loop, which ends the gate.
        .process_group(0)
        .env_remove(crate::handoff::env::LOOP)
        .spawn()
        .with_context(|| format!("cannot run the gate command `{cmd}`"))?;
    let pump = pump(
        reader,
        log.and_then(|f| f.try_clone().ok()),
        runner.show.clone(),
    );
    let target = Target::Group(child.id());
    let (status, ended) = supervise(
        &mut child,
        target,
        Instant::now().checked_add(timeout),
        stops,
    )?;
    let (interrupted, timed_out) = (ended == Ending::Stopped, ended == Ending::TimedOut);
    // Whatever the command left running may hold the pipe: end its group,
    // then every process that carries its marker (a daemon in a session of
    // its own), then read what is left for a moment at most.
    let _ = Target::Group(child.id()).send(nix::sys::signal::Signal::SIGKILL);
    crate::procs::leftovers::end_marked(&runner.token);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(pump.join().unwrap_or_default());
    });
    let (tail, output) = rx.recv_timeout(DRAIN).unwrap_or_default();
    (runner.show)(Shown::Cleared);
    Ok(CommandRun {
        code: status.code(),
        tail,
        output,
        interrupted,
        timed_out,
    })
}

fn gate_tmp() -> Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("ralph-gate-").tempdir();
    dir.context("cannot make the gate's temporary folder")
}

/// Read a command's output as it comes: the whole of it to the log, each
/// line shown, the tail kept for the next session, and the output (up to
/// `READ_MAX`; `None` past it) kept to read per test.
fn pump(
    reader: std::io::PipeReader,
    mut log: Option<std::fs::File>,
    show: Show,
) -> std::thread::JoinHandle<(Vec<String>, Option<String>)> {
    std::thread::spawn(move || {
        let mut tail: VecDeque<String> = VecDeque::new();
        let mut kept: Option<Vec<u8>> = Some(Vec::new());
        for line in BufReader::new(reader).split(b'\n').map_while(Result::ok) {
            if let Some(f) = log.as_mut() {
                let _ = f.write_all(&line);
                let _ = f.write_all(b"\n");
            }
            if let Some(k) = kept.as_mut() {
                if k.len() + line.len() < READ_MAX {
                    k.extend_from_slice(&line);
                    k.push(b'\n');
                } else {
                    kept = None;
                }
            }
            if tail.len() == TAIL {
                tail.pop_front();
            }
            tail.push_back(String::from_utf8_lossy(&line).into_owned());
            show(Shown::Latest(&tail[tail.len() - 1]));
        }
        let output = kept.map(|k| String::from_utf8_lossy(&k).into_owned());
        (tail.into_iter().collect(), output)
    })
}

/// `.ralph/gate-failed.md`: what the next session reads first.
pub fn feedback_path(project: &Project) -> PathBuf {
    project.ralph_dir().join("gate-failed.md")
}

/// The failure, for the next session.
pub fn feedback(v: &Verdict) -> String {
    let mut s = String::from("# The completion gate failed\n\n");
    s.push_str(&format!(
        "At {}, ralph ran the project's own checks, and `{}` failed ({}). \
         Until it passes, the work is not done: COMPLETE is not accepted.\n\n\
         Fix what it reports (this comes first, before the next step), run the \
         command yourself to see it pass, commit, and then `ralph complete` again \
         if every step is done. ralph removes this file once the gate passes.\n\n",
        v.time,
        v.failed.as_deref().unwrap_or("?"),
        v.why.as_deref().unwrap_or("?")
    ));
    s.push_str(&format!(
        "The last {} lines of its output:\n\n```text\n",
        v.tail.len()
    ));
    for l in &v.tail {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str("```\n");
    s
}

/// Write or remove the feedback file after a gate run.
pub fn hand_over(project: &Project, v: &Verdict) -> Result<()> {
    if v.interrupted && !v.passed {
        return Ok(());
    }
    hand_over_text(project, (!v.passed).then(|| feedback(v)).as_deref())
}

/// Write the feedback file (`text`), or remove it (`None`: nothing failed
/// that is the next session's to fix).
pub fn hand_over_text(project: &Project, text: Option<&str>) -> Result<()> {
    let path = feedback_path(project);
    match text {
        None => crate::fsutil::remove_optional(&path),
        Some(t) => crate::fsutil::atomic_write(&path, t.as_bytes(), 0o644),
    }
}

/// What `which` would say of each command's program (its first word), for
/// `doctor`: names a shell or the system does not know are reported.
pub fn missing_programs(gate: &Gate, cwd: &Path) -> Vec<String> {
    gate.commands
        .iter()
        .filter_map(|c| {
            let words = crate::settings::shell_words(c)?;
            let first = words
                .into_iter()
                .find(|w| !w.contains('=') || w.starts_with('='))?;
            let known = if first.contains('/') {
                cwd.join(&first).is_file()
            } else {
                which::which(&first).is_ok() || SHELL_WORDS.contains(&first.as_str())
            };
            (!known).then_some(first)
        })
        .collect()
}

const SHELL_WORDS: [&str; 12] = [
    "cd", "test", "[", "true", "false", "exit", "set", "export", "if", "for", "!", "{",
];

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::Layer;

    fn cfg(commands: &[&str]) -> GateConfig {
        GateConfig {
            commands: Some(commands.iter().map(|c| c.to_string()).collect()),
            ..Default::default()
        }
    }

    #[test]
    fn the_baseline_is_on_unless_said_off_and_nothing_else_is_read() {
        let with = |b: Option<&str>| {
            Gate::from_config(&GateConfig {
                commands: Some(vec!["true".into()]),
                baseline: b.map(String::from),
                ..GateConfig::default()
            })
        };
        assert!(with(None).unwrap().unwrap().baseline);
        assert!(with(Some("on")).unwrap().unwrap().baseline);
        assert!(!with(Some("off")).unwrap().unwrap().baseline);
        assert_eq!(
            with(Some("yes")).unwrap_err(),
            "[gate] baseline: \"yes\" is neither \"on\" nor \"off\""
        );
        // Reports are read in the project only.
        let reports = |r: &str| {
            Gate::from_config(&GateConfig {
                commands: Some(vec!["true".into()]),
                reports: Some(vec![r.into()]),
                ..GateConfig::default()
            })
        };
        assert!(reports("target/nextest/ci/junit.xml").is_ok());
        for bad in ["/etc/passwd", "../x.xml", "a/../../x.xml", ""] {
            assert_eq!(
                reports(bad).unwrap_err(),
                format!(
                    "[gate] reports: {bad:?} is not a path inside the project (relative, with no `..`)"
                )
            );
        }
    }

    #[test]
    fn a_report_counts_only_when_this_run_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        let junit = "<testsuite><testcase classname=\"t\" name=\"a\"/><testcase classname=\"t\" name=\"b\"><failure/></testcase></testsuite>";
        let old = dir.path().join("old.xml");
        std::fs::write(&old, junit).unwrap();
        let stale = report(dir.path(), "old.xml", written_at(&old));
        assert_eq!(
            (stale.passed, stale.why.as_deref()),
            (false, Some("not written by this run of the gate"))
        );
        let since = written_at(&dir.path().join("new.xml"));
        assert_eq!(since, None);
        std::fs::write(dir.path().join("new.xml"), junit).unwrap();
        let fresh = report(dir.path(), "new.xml", since);
        assert_eq!(fresh.command, "report new.xml");
        assert!(!fresh.passed && fresh.why.as_deref() == Some("tests failed in it"));
        assert_eq!(fresh.tests.unwrap().tests.len(), 2);
        let gone = report(dir.path(), "gone.xml", since);
        assert_eq!(gone.why.as_deref(), Some("not written"));
        std::os::unix::fs::symlink(dir.path().join("new.xml"), dir.path().join("link.xml"))
            .unwrap();
        let link = report(dir.path(), "link.xml", since);
        assert_eq!(link.why.as_deref(), Some("not a regular file"));
    }

    #[test]
    fn the_gate_handed_to_sessions_reads_back_the_same() {
        let g = Gate::from_config(&GateConfig {
            timeout: Some("90s".parse().unwrap()),
            ..cfg(&["make check", "sh -c 'x'"])
        })
        .unwrap()
        .unwrap();
        let back = Gate::from_handed(&Gate::handed(Some(&g))).unwrap().unwrap();
        assert_eq!((back.commands, back.timeout), (g.commands, g.timeout));
        assert_eq!(Gate::from_handed(&Gate::handed(None)), Ok(None));
        assert!(
            Gate::from_handed("rm -rf /")
                .unwrap_err()
                .contains("RALPH_GATE")
        );
    }

    #[test]
    fn config_is_checked() {
        assert_eq!(Gate::from_config(&GateConfig::default()), Ok(None));
        let g = Gate::from_config(&cfg(&["cargo test"])).unwrap().unwrap();
        assert_eq!(
            (g.timeout, g.when, g.max_failures),
            (DEFAULT_TIMEOUT, When::Complete, 3)
        );
        let cli = Gate::from_config(&cfg(&["b"]).over(cfg(&["a"])))
            .unwrap()
            .unwrap();
        assert_eq!(cli.commands, ["b"], "the command line takes over");
        for (c, says) in [
            (
                GateConfig {
                    when: Some("always".into()),
                    ..cfg(&["x"])
                },
                "when",
            ),
            (
                GateConfig {
                    timeout: Some("2d".parse().unwrap()),
                    ..cfg(&["x"])
                },
                "longer than 24h",
            ),
            (
                GateConfig {
                    timeout: Some("0".parse().unwrap()),
                    ..cfg(&["x"])
                },
                "timeout",
            ),
            (
                GateConfig {
                    max_failures: Some(0),
                    ..cfg(&["x"])
                },
                "max_failures",
            ),
            (cfg(&["ok", " "]), "command 2 is empty"),
        ] {
            let e = Gate::from_config(&c).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn runs_in_order_and_stops_at_the_first_failure_with_its_tail() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate {
            commands: vec![
                "echo one".into(),
                "seq 1 100; echo 'the error' >&2; exit 3".into(),
                "touch never".into(),
            ],
            timeout: Duration::from_secs(30),
            when: When::Complete,
            max_failures: 3,
            baseline: true,
            reports: Vec::new(),
        };
        let log = dir.path().join("gate.log");
        let v = run(&gate, dir.path(), Some(&log), &|| 0, &runner(), false).unwrap();
        assert!(!v.passed);
        assert_eq!(
            v.failed.as_deref(),
            Some("seq 1 100; echo 'the error' >&2; exit 3")
        );
        assert_eq!(v.why.as_deref(), Some("exit status 3"));
        assert_eq!(v.tail.len(), TAIL);
        assert_eq!(v.tail.last().map(String::as_str), Some("the error"));
        assert!(!dir.path().join("never").exists());
        let whole = std::fs::read_to_string(&log).unwrap();
        assert!(whole.contains("$ echo one\none\n"), "{whole}");
        assert!(
            whole.contains("\n1\n2\n3\n"),
            "the whole output, not only its tail"
        );
        let text = feedback(&v);
        assert!(text.contains("`seq 1 100; echo 'the error' >&2; exit 3` failed (exit status 3)"));
        assert!(text.contains("the error\n```"));
    }

    fn runner() -> Runner {
        Runner {
            token: crate::handoff::gate_token(&crate::trust::store::random_token()),
            confined: None,
            show: std::sync::Arc::new(|_| {}),
        }
    }

    /// Live processes that carry exactly this environment entry.
    fn carrying(entry: &str) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("environ")).ok())
            .filter(|env| env.split(|&b| b == 0).any(|kv| kv == entry.as_bytes()))
            .count()
    }

    #[test]
    fn a_daemon_left_by_a_command_is_ended_and_never_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate {
            commands: vec!["setsid sleep 7303 & echo started".into()],
            timeout: Duration::from_secs(600),
            when: When::Complete,
            max_failures: 3,
            baseline: true,
            reports: Vec::new(),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let cwd = dir.path().to_path_buf();
        let r = runner();
        let marker = format!("{}={}", crate::handoff::env::SESSION_TOKEN, r.token);
        std::thread::spawn(move || {
            let _ = tx.send(run(&gate, &cwd, None, &|| 0, &r, false).unwrap());
        });
        let v = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the gate returned while its daemon still ran");
        assert!(v.passed, "{v:?}");
        assert_eq!(carrying(&marker), 0, "the daemon was left running");
    }

    #[test]
    fn a_command_past_its_timeout_is_ended() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate {
            commands: vec!["sleep 7301".into()],
            timeout: Duration::from_secs(1),
            when: When::Complete,
            max_failures: 3,
            baseline: true,
            reports: Vec::new(),
        };
        let t0 = Instant::now();
        let v = run(&gate, dir.path(), None, &|| 0, &runner(), false).unwrap();
        assert_eq!(v.why.as_deref(), Some("timed out after 1s"));
        assert!(t0.elapsed() < Duration::from_secs(10));
    }
}
