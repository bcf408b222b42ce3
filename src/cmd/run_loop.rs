use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;

use super::Run;
use crate::config::{self, Config, parse_duration};
use crate::exit::Exit;
use crate::progress::{self, Snapshot};
use crate::project::Project;
use crate::runlock::{self, Acquired, LockInfo};
use crate::runlog::RunDir;
use crate::session::{self, Ending, PrintIo};
use crate::stream::{Limit, Shown, Usage};
use crate::tracker::Kind;
use crate::{completion, sentinel, stop_hook, timefmt};

const EXIT_CODES: &str = "\
Exit status:
  0    complete: .ralph/COMPLETE written and checked (also when the last allowed session completes)
  1    failed: consecutive failing sessions, another loop running, or an error
  2    usage error: bad options, no prompt, claude not found, invalid .ralph/config.toml
  3    waiting: .ralph/WAITING says a human is needed (its reason is shown)
  4    limit reached: --max-iterations or --max-cost
  5    no progress: sessions changed nothing (WAITING is written with the reason)
  130  interrupted: Ctrl+C, SIGTERM or SIGHUP, or you quit an interactive session

Settings also come from .ralph/config.toml (same names, snake_case, e.g.
max_iterations = 20, timeout = \"45m\", and [hooks] on_complete = \"...\");
the command line overrides it.";

/// Run fresh Claude Code sessions on the prompt until the work is done.
///
/// Before each session: stop if .ralph/COMPLETE exists (done) or
/// .ralph/WAITING exists (a human is needed). Each session is a fresh
/// `claude` (never resumed) started with RALPH_LOOP=1, the prompt on stdin
/// (print mode) or as its argument (--interactive). Sessions stream to the
/// terminal; the raw stream and a record of each session are kept under
/// .ralph/runs/<run-id>/. A COMPLETE written by a session is checked (all
/// steps checked, tracker in sync) and set aside if it does not hold.
#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct Loop {
    /// The prompt given to every session [default: .ralph/prompt.md, else prompt.md]
    #[arg(long, value_name = "FILE")]
    prompt: Option<PathBuf>,

    /// Stop after this many sessions [default: 50]
    #[arg(long, value_name = "N")]
    max_iterations: Option<u32>,

    /// End a session that runs longer than this, wall clock [default: 30m]
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,

    /// Stop once the sessions have cost this much, in USD
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,

    /// Stop (writing WAITING) after this many sessions in a row that change
    /// nothing: not git HEAD, the working tree or the spec's checkboxes [default: 3]
    #[arg(long, value_name = "N")]
    no_progress_limit: Option<u32>,

    /// Stop after this many failing sessions in a row [default: 3]
    #[arg(long, value_name = "N")]
    max_failures: Option<u32>,

    /// Run the interactive TUI in this terminal instead of print mode; the
    /// Stop hook ends each session (quitting claude yourself stops the loop)
    #[arg(long)]
    interactive: bool,

    /// The claude executable [default: `claude` on PATH]
    #[arg(long, value_name = "PATH")]
    claude: Option<PathBuf>,

    /// The model for the sessions (claude --model)
    #[arg(long)]
    model: Option<String>,

    /// claude's permission mode; bypassPermissions means
    /// --dangerously-skip-permissions [default: bypassPermissions]
    #[arg(long, value_name = "MODE")]
    permission_mode: Option<String>,

    /// First wait after a usage limit, rate limit or overload that gives no
    /// reset time; doubles each time, up to 30m [default: 60s]
    #[arg(long, value_name = "DURATION")]
    limit_backoff: Option<String>,

    /// Tracker for the completion check [default: br if installed, else bd]
    #[arg(long, value_enum)]
    tracker: Option<Kind>,

    /// Extra arguments for claude, after `--`
    #[arg(last = true, value_name = "CLAUDE_ARGS")]
    claude_args: Vec<String>,
}

/// The settings in force: command line over config over defaults.
struct Settings {
    prompt: PathBuf,
    max_iterations: u32,
    timeout: Duration,
    max_cost: Option<f64>,
    no_progress_limit: u32,
    max_failures: u32,
    interactive: bool,
    claude: PathBuf,
    model: Option<String>,
    permission_mode: String,
    limit_backoff: Duration,
    claude_args: Vec<String>,
    hooks: config::Hooks,
}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    Exit::with_message(2, format!("ralph loop: {}", msg.into())).into()
}

impl Loop {
    fn settings(&self, project: &Project) -> Result<Settings> {
        let cfg: Config = config::load(&project.config()).map_err(|e| usage(format!("{e:#}")))?;
        // --prompt is relative to where you are; the config's to the project.
        let prompt = match (&self.prompt, &cfg.prompt) {
            (Some(p), _) => std::path::absolute(p)?,
            (None, Some(p)) => project.root.join(p),
            (None, None) => project.default_prompt(),
        };
        if !prompt.is_file() {
            return Err(usage(format!(
                "no prompt at {} (write one with /ralph-setup or `ralph init`, or pass --prompt FILE)",
                prompt.display()
            )));
        }
        let dur = |cli: &Option<String>,
                   cfg: &Option<String>,
                   default: &str,
                   what: &str|
         -> Result<Duration> {
            let s = cli
                .clone()
                .or(cfg.clone())
                .unwrap_or_else(|| default.to_string());
            parse_duration(&s).map_err(|e| usage(format!("--{what}: {e}")))
        };
        let claude = match self.claude.clone().or(cfg.claude.clone()) {
            Some(p) if p.components().count() > 1 => std::path::absolute(p)?,
            Some(p) => which::which(&p).map_err(|_| usage(format!("{} not found on PATH", p.display())))?,
            None => which::which("claude").map_err(|_| {
                usage("`claude` not found on PATH. Install Claude Code (npm install -g @anthropic-ai/claude-code) or pass --claude PATH")
            })?,
        };
        let max_cost = self.max_cost.or(cfg.max_cost);
        if max_cost.is_some_and(|c| c.is_nan() || c <= 0.0) {
            return Err(usage("--max-cost must be a positive amount of USD"));
        }
        let interactive = self.interactive || cfg.interactive.unwrap_or(false);
        // Without the hook an interactive session never ends by itself.
        let (hooks, via_plugin) = crate::hook_target::installed_hooks(&project.root);
        if interactive && hooks.is_empty() && !via_plugin {
            return Err(usage(
                "--interactive needs ralph's Stop hook to end each session, and it is not installed: run `ralph install-hook`",
            ));
        }
        let max_iterations = self.max_iterations.or(cfg.max_iterations).unwrap_or(50);
        if max_iterations == 0 {
            return Err(usage("--max-iterations must be at least 1"));
        }
        Ok(Settings {
            prompt,
            max_iterations,
            timeout: dur(&self.timeout, &cfg.timeout, "30m", "timeout")?,
            max_cost,
            no_progress_limit: self
                .no_progress_limit
                .or(cfg.no_progress_limit)
                .unwrap_or(3)
                .max(1),
            max_failures: self.max_failures.or(cfg.max_failures).unwrap_or(3).max(1),
            interactive,
            claude,
            model: self.model.clone().or(cfg.model.clone()),
            permission_mode: self
                .permission_mode
                .clone()
                .or(cfg.permission_mode.clone())
                .unwrap_or_else(|| "bypassPermissions".into()),
            limit_backoff: dur(
                &self.limit_backoff,
                &cfg.limit_backoff,
                "60s",
                "limit-backoff",
            )?,
            claude_args: if self.claude_args.is_empty() {
                cfg.claude_args.clone().unwrap_or_default()
            } else {
                self.claude_args.clone()
            },
            hooks: cfg.hooks.clone(),
        })
    }
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Outcome {
    Complete,
    Failed,
    Waiting,
    IterationLimit,
    CostLimit,
    NoProgress,
    Interrupted,
}

impl Outcome {
    fn code(self) -> u8 {
        match self {
            Outcome::Complete => 0,
            Outcome::Failed => 1,
            Outcome::Waiting => 3,
            Outcome::IterationLimit | Outcome::CostLimit => 4,
            Outcome::NoProgress => 5,
            Outcome::Interrupted => 130,
        }
    }
    fn text(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Failed => "failed",
            Outcome::Waiting => "waiting for a human",
            Outcome::IterationLimit => "iteration limit reached",
            Outcome::CostLimit => "cost limit reached",
            Outcome::NoProgress => "no progress",
            Outcome::Interrupted => "interrupted",
        }
    }
}

#[derive(Serialize)]
struct Tokens {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_creation: u64,
}

impl From<&Usage> for Tokens {
    fn from(u: &Usage) -> Self {
        Tokens {
            input: u.input_tokens,
            output: u.output_tokens,
            cache_read: u.cache_read_input_tokens,
            cache_creation: u.cache_creation_input_tokens,
        }
    }
}

/// One line of records.jsonl.
#[derive(Serialize)]
struct Record {
    iteration: u32,
    counted: bool,
    session_id: Option<String>,
    pid: u32,
    start: String,
    end: String,
    duration_s: f64,
    exit_code: Option<i32>,
    outcome: String,
    is_error: bool,
    cost_usd: f64,
    tokens: Tokens,
    num_turns: u64,
    tool_calls: u64,
    head_before: Option<String>,
    head_after: Option<String>,
    spec_before: String,
    spec_after: String,
    leftovers_ended: usize,
    stream_file: Option<String>,
}

#[derive(Serialize)]
struct Summary {
    run_id: String,
    outcome: Outcome,
    exit_code: u8,
    reason: String,
    iterations: u32,
    max_iterations: u32,
    duration: String,
    duration_s: f64,
    cost_usd: f64,
    tokens: Tokens,
    commits: Option<u64>,
    spec: String,
    started: String,
    ended: String,
}

struct Ui {
    color: bool,
}

impl Ui {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn show(&self, s: Shown) {
        let line = match s {
            Shown::Text(t) => t,
            Shown::Tool(t) => format!("  {} {t}", self.paint("36", "→")),
            Shown::ToolError(t) => format!("  {} {t}", self.paint("31", "✗")),
            Shown::Note(t) => format!("  {} {t}", self.paint("33", "!")),
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
    }
    fn status(&self, s: &str) {
        println!("{}", self.paint("1;35", &format!("── ralph: {s} ──")));
    }
    fn note(&self, s: &str) {
        println!("{} {s}", self.paint("33", "ralph:"));
    }
}

fn spec_text(s: &Snapshot) -> String {
    format!("{}/{}", s.done, s.total)
}

impl Run for Loop {
    fn run(&self) -> Result<()> {
        let project = Project::find()?;
        let settings = self.settings(&project)?;
        let ui = Ui {
            color: std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        };

        if let Some(c) = sentinel::read(&project.complete())? {
            println!(
                "Already complete (since {}); nothing to do. `ralph reset` to run again.",
                c.field("completed").unwrap_or("?")
            );
            return Ok(());
        }
        if let Some(w) = sentinel::read(&project.waiting())? {
            println!(
                "Waiting for a human (since {}): {}",
                w.field("since").unwrap_or("?"),
                w.text
            );
            println!("Run `ralph resume` once that is done.");
            return Err(Exit::code(3).into());
        }

        let me = std::process::id();
        let my_start = crate::proc_tree::ProcReader::new()
            .get(me)
            .map(|p| p.start_time)
            .unwrap_or(0);
        let runs = project.runs();
        std::fs::create_dir_all(&runs)
            .with_context(|| format!("cannot create {}", runs.display()))?;
        let run = RunDir::create(&runs)?;
        let info = LockInfo {
            pid: me,
            start_time: my_start,
            started_at: timefmt::now(),
            run_id: run.id.clone(),
            iteration: 0,
            max_iterations: settings.max_iterations,
        };
        let mut lock = match runlock::acquire(&project.lock(), info)? {
            Acquired::Lock(lock, stale) => {
                if let Some(s) = stale.filter(|s| s.pid != 0) {
                    ui.note(&format!(
                        "took over a stale lock of pid {} (started {}, no longer running)",
                        s.pid, s.started_at
                    ));
                }
                lock
            }
            Acquired::Held(holder) => {
                let _ = std::fs::remove_dir(&run.path);
                let who = holder
                    .map(|h| {
                        format!(
                            "pid {}, started {}, iteration {}/{}",
                            h.pid, h.started_at, h.iteration, h.max_iterations
                        )
                    })
                    .unwrap_or_else(|| "another process".into());
                return Err(Exit::with_message(
                    1,
                    format!(
                        "ralph loop: another loop is already running in {} ({who})",
                        project.root.display()
                    ),
                )
                .into());
            }
        };
        // Keep ralph's own run files out of the user's git status.
        super::init::ensure_gitignore(&project)?;
        session::become_subreaper();
        session::install_signal_handlers()?;
        let result = run_loop(&project, &settings, &run, &mut lock, &ui, self.tracker);
        lock.release();
        let code = result?;
        if code == 0 {
            Ok(())
        } else {
            Err(Exit::code(code).into())
        }
    }
}

struct Totals {
    cost: f64,
    usage: Usage,
}

fn run_loop(
    project: &Project,
    s: &Settings,
    run: &RunDir,
    lock: &mut runlock::LoopLock,
    ui: &Ui,
    tracker: Option<Kind>,
) -> Result<u8> {
    let t0 = Instant::now();
    let started = timefmt::now();
    let mut totals = Totals {
        cost: 0.0,
        usage: Usage::default(),
    };
    let first = progress::take(&project.root, &project.spec());
    let mut before = first.clone();
    let (mut iteration, mut failures, mut stalled, mut limit_waits, mut rejected) =
        (0u32, 0u32, 0u32, 0u32, 0u32);
    lifecycle(
        &s.hooks.on_loop_start,
        "loop_start",
        project,
        run,
        iteration,
        s,
        &[],
    );
    ui.note(&format!("run {} in {}", run.id, run.path.display()));

    let (outcome, reason) = 'run: loop {
        if session::signals_received() > 0 {
            break (
                Outcome::Interrupted,
                format!("{} received", session::last_signal_name()),
            );
        }
        if project.complete().exists() {
            break (Outcome::Complete, "COMPLETE appeared".into());
        }
        if let Some(w) = sentinel::read(&project.waiting())? {
            break (Outcome::Waiting, w.text);
        }
        if iteration >= s.max_iterations {
            break (
                Outcome::IterationLimit,
                format!("{} sessions run (--max-iterations)", s.max_iterations),
            );
        }
        iteration += 1;
        lock.set_iteration(iteration)?;
        let cost = if totals.cost > 0.0 {
            format!(" · ${:.2}", totals.cost)
        } else {
            String::new()
        };
        ui.status(&format!(
            "iteration {iteration}/{} · spec {} · {} elapsed{cost}",
            s.max_iterations,
            spec_text(&before),
            timefmt::human_duration(t0.elapsed())
        ));
        lifecycle(
            &s.hooks.on_session_start,
            "session_start",
            project,
            run,
            iteration,
            s,
            &[],
        );

        let start = timefmt::now();
        let ended = session::run(session_spec(
            project,
            s,
            run,
            iteration,
            ui,
            lock.info.start_time,
        )?)?;
        let after = progress::take(&project.root, &project.spec());
        let exit_ok = ended.status.is_some_and(|st| st.success());
        let st = &ended.stream;
        let limited = if s.interactive {
            None
        } else {
            st.limit.clone()
        };
        let failed = match ended.ending {
            Ending::TimedOut => true,
            _ if s.interactive => !exit_ok,
            _ => st.failed(exit_ok),
        };
        let outcome_text = match (ended.ending, &limited) {
            (Ending::Interrupted, _) => "interrupted".to_string(),
            (Ending::TimedOut, _) => "timeout".to_string(),
            (_, Some(l)) => format!("limited: {}", l.describe()),
            _ if failed => "failed".to_string(),
            _ => "ok".to_string(),
        };
        if let Some(o) = &st.outcome {
            totals.cost += o.cost_usd;
            totals.usage.add(&o.usage);
        }
        if ended.leftovers > 0 {
            ui.note(&format!(
                "ended {} process(es) the session left running",
                ended.leftovers
            ));
        }
        let o = st.outcome.clone().unwrap_or_default();
        run.append_record(&Record {
            iteration,
            counted: limited.is_none(),
            session_id: st.session_id.clone(),
            pid: ended.pid,
            start,
            end: timefmt::now(),
            duration_s: ended.duration.as_secs_f64(),
            exit_code: ended.status.and_then(|s| s.code()),
            outcome: outcome_text.clone(),
            is_error: o.is_error,
            cost_usd: o.cost_usd,
            tokens: Tokens::from(&o.usage),
            num_turns: o.num_turns,
            tool_calls: st.tool_calls,
            head_before: before.head.clone(),
            head_after: after.head.clone(),
            spec_before: spec_text(&before),
            spec_after: spec_text(&after),
            leftovers_ended: ended.leftovers,
            stream_file: (!s.interactive).then(|| run.stream_file(iteration).display().to_string()),
        })?;
        lifecycle(
            &s.hooks.on_session_end,
            "session_end",
            project,
            run,
            iteration,
            s,
            &[("RALPH_SESSION_OUTCOME", &outcome_text)],
        );

        match ended.ending {
            Ending::Interrupted => {
                break (
                    Outcome::Interrupted,
                    format!("{} received", session::last_signal_name()),
                );
            }
            Ending::TimedOut => ui.note(&format!(
                "session {iteration} timed out after {}; ended it",
                timefmt::human_duration(s.timeout)
            )),
            Ending::Exited => {}
        }
        if s.interactive && ended.ending == Ending::Exited && !hook_ended(run, ended.pid) {
            break (
                Outcome::Interrupted,
                "claude was quit before the Stop hook ended the session".into(),
            );
        }

        // The completion gate: a COMPLETE written by a session must hold.
        if project.complete().exists() {
            match completion::check(&project.spec(), &project.root, tracker)? {
                Ok(c) if c.is_complete() => {
                    break (
                        Outcome::Complete,
                        format!("all {} steps done", c.spec.total()),
                    );
                }
                check => {
                    rejected += 1;
                    let why = match check {
                        Ok(c) => c.blockers(),
                        Err(e) => vec![format!("cannot check: {e}")],
                    };
                    let aside = run.path.join(format!("COMPLETE.rejected-{rejected}"));
                    std::fs::rename(project.complete(), &aside)
                        .with_context(|| format!("cannot move COMPLETE to {}", aside.display()))?;
                    let mut f = std::fs::OpenOptions::new().append(true).open(&aside)?;
                    writeln!(f, "\nrejected by ralph loop at {}:", timefmt::now())?;
                    for w in &why {
                        writeln!(f, "  {w}")?;
                    }
                    ui.note(&format!(
                        "COMPLETE rejected ({} problem(s)), moved to {}; the loop goes on:",
                        why.len(),
                        aside.display()
                    ));
                    for w in why.iter().take(10) {
                        println!("    {w}");
                    }
                }
            }
        }
        if let Some(w) = sentinel::read(&project.waiting())? {
            break (Outcome::Waiting, w.text);
        }

        if let Some(l) = limited {
            // Not the session's fault and not an iteration: wait and retry.
            iteration -= 1;
            let wait = limit_wait(&l, s.limit_backoff, limit_waits);
            limit_waits += 1;
            lifecycle(
                &s.hooks.on_limit,
                "limit",
                project,
                run,
                iteration,
                s,
                &[("RALPH_REASON", l.describe())],
            );
            if !countdown(ui, l.describe(), wait) {
                break (
                    Outcome::Interrupted,
                    format!("{} received while waiting", session::last_signal_name()),
                );
            }
            continue;
        }
        limit_waits = 0;

        if failed {
            failures += 1;
            let last_error = st
                .last_error
                .clone()
                .or_else(|| {
                    st.outcome
                        .as_ref()
                        .filter(|o| o.is_error)
                        .map(|o| o.text.clone())
                })
                .unwrap_or_else(|| match (ended.ending, ended.status) {
                    (Ending::TimedOut, _) => {
                        format!("timed out after {}", timefmt::human_duration(s.timeout))
                    }
                    (_, Some(st)) => format!("claude exited with {st}"),
                    _ => "claude ended without a result".into(),
                });
            ui.note(&format!(
                "session {iteration} failed ({failures} in a row): {last_error}"
            ));
            if failures >= s.max_failures {
                break (
                    Outcome::Failed,
                    format!("{failures} failing sessions in a row; last error: {last_error}"),
                );
            }
        } else {
            failures = 0;
        }

        let same =
            before.head == after.head && before.tree == after.tree && before.boxes == after.boxes;
        stalled = if same { stalled + 1 } else { 0 };
        before = after;
        if stalled >= s.no_progress_limit {
            let why = format!(
                "no progress: {stalled} sessions in a row changed nothing (git HEAD, working tree, spec checkboxes); see {}",
                run.path.display()
            );
            let w = sentinel::Sentinel {
                fields: vec![("since".into(), timefmt::now())],
                text: why.clone(),
            };
            sentinel::write(&project.waiting(), &w)?;
            break 'run (Outcome::NoProgress, why);
        }
        if let Some(max) = s.max_cost
            && totals.cost >= max
        {
            break (
                Outcome::CostLimit,
                format!("${:.2} spent of --max-cost ${max:.2}", totals.cost),
            );
        }
    };

    let last = progress::take(&project.root, &project.spec());
    let commits = match (&first.head, &last.head) {
        (Some(a), Some(b)) => progress::commits_between(&project.root, Some(a.as_str()), b),
        (None, Some(b)) => progress::commits_between(&project.root, None, b),
        _ => Some(0),
    };
    let summary = Summary {
        run_id: run.id.clone(),
        outcome,
        exit_code: outcome.code(),
        reason: reason.clone(),
        iterations: iteration,
        max_iterations: s.max_iterations,
        duration: timefmt::human_duration(t0.elapsed()),
        duration_s: t0.elapsed().as_secs_f64(),
        cost_usd: totals.cost,
        tokens: Tokens::from(&totals.usage),
        commits,
        spec: spec_text(&last),
        started,
        ended: timefmt::now(),
    };
    run.write_summary(&summary)?;
    let hook = match outcome {
        Outcome::Complete => Some((&s.hooks.on_complete, "complete")),
        Outcome::Waiting | Outcome::NoProgress => Some((&s.hooks.on_waiting, "waiting")),
        Outcome::IterationLimit | Outcome::CostLimit => Some((&s.hooks.on_limit, "limit")),
        _ => None,
    };
    if let Some((cmd, event)) = hook {
        lifecycle(
            cmd,
            event,
            project,
            run,
            iteration,
            s,
            &[("RALPH_REASON", &reason), ("RALPH_OUTCOME", outcome.text())],
        );
    }
    let commits = commits
        .map(|c| format!(", {c} commit(s)"))
        .unwrap_or_default();
    ui.status(&format!(
        "{}: {reason} · {iteration} iteration(s) in {} · ${:.2} · {} tokens{commits} · spec {}",
        outcome.text(),
        summary.duration,
        totals.cost,
        totals.usage.total(),
        spec_text(&last)
    ));
    if outcome == Outcome::Waiting || outcome == Outcome::NoProgress {
        println!("Run `ralph resume` once a human has acted.");
    }
    Ok(outcome.code())
}

fn session_spec(
    project: &Project,
    s: &Settings,
    run: &RunDir,
    iteration: u32,
    ui: &Ui,
    // The loop's own start time, as the lock records it: the hook checks it.
    loop_start: u64,
) -> Result<session::Spec> {
    let env = vec![
        (stop_hook::env::LOOP.to_string(), "1".to_string()),
        (
            stop_hook::env::LOOP_PID.to_string(),
            std::process::id().to_string(),
        ),
        (
            stop_hook::env::LOOP_START.to_string(),
            loop_start.to_string(),
        ),
        (
            stop_hook::env::RUN_DIR.to_string(),
            run.path.display().to_string(),
        ),
        ("RALPH_ITERATION".to_string(), iteration.to_string()),
    ];
    let mut args: Vec<String> = Vec::new();
    if !s.interactive {
        args.extend(["-p", "--output-format", "stream-json", "--verbose"].map(String::from));
    }
    if s.permission_mode == "bypassPermissions" {
        args.push("--dangerously-skip-permissions".into());
    } else {
        args.extend(["--permission-mode".to_string(), s.permission_mode.clone()]);
    }
    if let Some(m) = &s.model {
        args.extend(["--model".to_string(), m.clone()]);
    }
    args.extend(s.claude_args.iter().cloned());
    let print = if s.interactive {
        let prompt = std::fs::read_to_string(&s.prompt)
            .with_context(|| format!("cannot read {}", s.prompt.display()))?;
        args.push(prompt);
        None
    } else {
        let ui = Ui { color: ui.color };
        Some(PrintIo {
            prompt: s.prompt.clone(),
            stream_file: run.stream_file(iteration),
            show: Box::new(move |x| ui.show(x)),
        })
    };
    Ok(session::Spec {
        program: s.claude.clone(),
        args,
        env,
        cwd: project.root.clone(),
        print,
        timeout: s.timeout,
        token: format!("{}-{iteration}", run.id),
    })
}

/// Did the Stop hook end this (interactive) session? It logs what it did.
fn hook_ended(run: &RunDir, pid: u32) -> bool {
    session::read_lines(&run.hook_log()).iter().any(|l| {
        serde_json::from_str::<serde_json::Value>(l)
            .is_ok_and(|v| v["session_pid"] == pid && v["action"] == "SIGINT")
    })
}

fn limit_wait(l: &Limit, base: Duration, waits: u32) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    match l {
        Limit::Usage { reset_at: Some(t) } if *t > now => {
            Duration::from_secs((t - now).min(12 * 3600) + 1)
        }
        _ => (base * 2u32.saturating_pow(waits.min(10))).min(Duration::from_secs(1800)),
    }
}

/// Wait, showing the time left; false if a signal cut it short.
fn countdown(ui: &Ui, what: &str, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    let tty = std::io::stdout().is_terminal();
    ui.note(&format!(
        "{what}; waiting {} before the next session (not counted as an iteration)",
        timefmt::human_duration(wait)
    ));
    let mut last_shown = u64::MAX;
    while Instant::now() < until {
        if session::signals_received() > 0 {
            return false;
        }
        let left = until.saturating_duration_since(Instant::now()).as_secs();
        if tty && left != last_shown {
            print!(
                "\r  {} left   ",
                timefmt::human_duration(Duration::from_secs(left))
            );
            let _ = std::io::stdout().flush();
            last_shown = left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if tty {
        println!();
    }
    true
}

/// Run a lifecycle hook; a failure is reported, never fatal.
fn lifecycle(
    cmd: &Option<String>,
    event: &str,
    project: &Project,
    run: &RunDir,
    iteration: u32,
    s: &Settings,
    extra: &[(&str, &str)],
) {
    let Some(cmd) = cmd else { return };
    let mut c = std::process::Command::new("/bin/sh");
    c.args(["-c", cmd])
        .current_dir(&project.root)
        .stdin(std::process::Stdio::null());
    c.env("RALPH_EVENT", event)
        .env("RALPH_PROJECT", &project.root)
        .env("RALPH_RUN_DIR", &run.path)
        .env("RALPH_ITERATION", iteration.to_string())
        .env("RALPH_MAX_ITERATIONS", s.max_iterations.to_string())
        .env_remove("RALPH_LOOP");
    for (k, v) in extra {
        c.env(k, v);
    }
    match c.status() {
        Ok(st) if st.success() => {}
        Ok(st) => eprintln!("ralph: the {event} hook `{cmd}` failed ({st}); carrying on"),
        Err(e) => eprintln!("ralph: cannot run the {event} hook `{cmd}`: {e}; carrying on"),
    }
}
