//! `ralph loop`: sets a run up (options, checks, lock, run folder, resume),
//! then hands it to `run::shell`, which carries out what `run::engine`
//! decides.

use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use crate::config::{Layer, Options};
use crate::exit::{ExitStatus, Stop};
use crate::history::invocation::Invocation;
use crate::history::records::{RunDir, Saved};
use crate::output::visible;
use crate::run::engine::Outcome;
use crate::run::lock::{self, Acquired, LockInfo};
use crate::run::options::{self, LoopArgs};
use crate::run::progress;
use crate::run::shell::Shell;
use crate::run::ui::Ui;
use crate::timefmt;
use crate::work::project::Project;
use crate::work::sentinel;
use crate::work::{completion, readiness};

const EXIT_CODES: &str = "\
Exit status:
  0    complete: .ralph/COMPLETE written and checked (also when the last allowed session completes)
  1    failed: consecutive failing sessions, the completion gate failing again and
       again ([gate] max_failures), another loop running, or an error
  2    usage error: bad options, no prompt, claude not found, not a git repository,
       invalid .ralph/config.toml, what the project's files would run not approved
       (`ralph trust`), nothing to --resume, --confined not possible here or widened
  3    waiting: .ralph/WAITING says a human is needed (its reason is shown): asked
       by a session, stuck on a step (--max-sessions-per-step), the reviewer's
       rejections ([review] max_rounds), protected files changed, a push refused
  4    limit reached: --max-iterations, --max-cost, --max-time or --max-limit-wait
       (`ralph loop --resume` with a higher one goes on with the run)
  5    no progress: sessions changed nothing (WAITING is written with the reason)
  130  interrupted: Ctrl+C, SIGTERM or SIGHUP, or you quit an interactive session

Settings also come from .ralph/config.toml (same names, snake_case, e.g.
max_iterations = 20, timeout = \"45m\", and [hooks] on_complete = \"...\");
the command line overrides it.";

/// Run fresh agent sessions on the prompt until the work is done.
///
/// Before each session: stop if .ralph/COMPLETE exists (done) or
/// .ralph/WAITING exists (a human is needed). Each session is a fresh
/// `claude` (or `codex exec`, `gemini -p`, `pi`, `opencode run` with
/// --agent; never resumed)
/// started with RALPH_LOOP=1, the prompt on stdin (print mode) or as its
/// argument (--interactive, Claude Code only). Sessions stream to the
/// terminal; the raw stream and a record of each session are kept under
/// .ralph/runs/<run-id>/. A COMPLETE written by a session is checked (all
/// steps checked, tracker in sync) and set aside if it does not hold.
#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct Loop {
    #[command(flatten)]
    args: LoopArgs,
}

impl Loop {
    /// A loop with these arguments (`ralph worker`, `ralph merge`).
    pub fn with(args: LoopArgs) -> Loop {
        Loop { args }
    }
}

fn usage(msg: impl std::fmt::Display) -> anyhow::Error {
    Stop::with(ExitStatus::Usage, msg.to_string())
}

/// The run `--resume` goes on with, and what it had counted.
fn resumable(project: &Project) -> Result<(RunDir, Saved)> {
    // The run ralph last started here, as its own record says (a folder a
    // session made, named to sort last, is not it); else the newest.
    let recorded = crate::history::invocation::load(&project.root)
        .map(|i| i.run_id)
        .filter(|id| RunDir::valid_id(id) && project.runs().join(id).is_dir())
        .map(|id| RunDir::open(&project.runs(), &id));
    let Some(run) = recorded.or_else(|| RunDir::latest(&project.runs())) else {
        return Err(usage(
            "nothing to resume: no run in .ralph/runs; start one with `ralph loop`",
        ));
    };
    if let Some(l) = lock::running(&project.lock()) {
        return Err(Stop::with(
            ExitStatus::Failure,
            format!(
                "run {} is still running (pid {}); nothing to resume",
                l.run_id, l.pid
            ),
        ));
    }
    if let Some(s) = run.summary()
        && !s.outcome.resumable()
    {
        return Err(usage(format!(
            "run {} finished ({}: {}); start a new run with `ralph loop`",
            run.id,
            s.outcome.text(),
            s.reason
        )));
    }
    let saved = run
        .state_checked()
        .map_err(|e| {
            usage(format!(
                "run {} cannot be resumed: its saved state is not valid ({e}); start a new run with `ralph loop`",
                run.id
            ))
        })?
        .ok_or_else(|| {
            usage(format!(
                "run {} has no saved state ({}); start a new run with `ralph loop`",
                run.id,
                run.path.join("state.json").display()
            ))
        })?;
    let mut saved = saved;
    crate::run::engine::resume(&mut saved.state, run.summary().map(|s| s.outcome));
    Ok((run, saved))
}

/// A resumed run's options: its command line as it was started (and each
/// resume's since), kept in ralph's private state out of the sessions'
/// reach, under what this command line gives, which is said.
fn resumed_options(
    project: &Project,
    run: &RunDir,
    given: &Options,
    ui: &Ui,
) -> Result<(Options, Option<Invocation>)> {
    let Some(inv) = crate::history::invocation::load(&project.root).filter(|i| i.run_id == run.id)
    else {
        ui.note(&format!(
            "ralph has no record of the command line run {} was started with (an older ralph started it, or its record is gone): it goes on with .ralph/config.toml and this command line only",
            run.id
        ));
        return Ok((given.clone(), None));
    };
    let mut saved = Options::default();
    for (i, args) in std::iter::once(&inv.args).chain(&inv.resumed).enumerate() {
        let o = loop_options(args).map_err(|e| {
            usage(format!(
                "run {}'s saved command line `ralph {}` does not parse ({e}); start a new run with `ralph loop`",
                run.id,
                args.join(" ")
            ))
        })?;
        // Paths were given relative to where the run was started.
        let o = if i == 0 {
            options::anchored(o, &inv.cwd)
        } else {
            o
        };
        saved = o.over(saved);
    }
    let changed = options::overridden(given, &saved);
    ui.note(&format!(
        "the options of run {}, as it was started: `ralph {}`",
        run.id,
        // Quoted as a shell reads it: the line can be pasted back.
        visible(&shell_words::join(&inv.args))
    ));
    if !changed.is_empty() {
        ui.note(&format!(
            "this command line changes: {}",
            visible(&changed.join("; "))
        ));
    }
    // The limits a user raises while the run runs (`ralph raise`, the web
    // page, a comment) are kept with the run's state, which comes back
    // under this command line: the command line it was started with must
    // not put them back where they began.
    saved.max_iterations = None;
    saved.max_cost = None;
    saved.max_time = None;
    saved.max_tokens = None;
    Ok((given.clone().over(saved), Some(inv)))
}

/// A resumed run's command line for its workers: as it was started, with
/// what each resume since (this one too) gave in place of what it
/// overrides, as the run's own settings have it.
fn workers_command_line(inv: &Invocation) -> Vec<String> {
    let now: Vec<String> = std::env::args().skip(1).collect();
    let later: Vec<Vec<String>> = inv.resumed.iter().cloned().chain([now]).collect();
    crate::parallel::workers::layered_args(&inv.args, &later, &takes_value)
}

/// Does option `name` (`--max-cost`, `-C`) of `ralph loop` take a value?
fn takes_value(name: &str) -> bool {
    use clap::CommandFactory;
    let root = crate::cli::Cli::command();
    let named = |a: &&clap::Arg| match name.strip_prefix("--") {
        Some(long) => a.get_long() == Some(long),
        None => name.strip_prefix('-').and_then(|s| s.chars().next()) == a.get_short(),
    };
    let sub = root.find_subcommand("loop");
    root.get_arguments()
        .chain(sub.into_iter().flat_map(|l| l.get_arguments()))
        .find(named)
        .is_some_and(|a| a.get_action().takes_values())
}

/// The loop options of a saved `ralph` command line.
pub fn loop_options(args: &[String]) -> Result<Options, String> {
    use clap::Parser;
    let words = std::iter::once("ralph".to_string()).chain(args.iter().cloned());
    match crate::cli::Cli::try_parse_from(words)
        .map_err(|e| e.kind().to_string())?
        .cmd
    {
        crate::cli::Cmd::Loop(l) => Ok(l.args.options),
        _ => Err("not a `ralph loop` command line".into()),
    }
}

impl Run for Loop {
    fn run(&self) -> Result<ExitStatus> {
        self.start()
    }
}

impl Loop {
    /// `--worktree NAME` with `--push`/`--pr` (given, or in the checkout's
    /// config, which its worktree gets) for a worktree not made yet: what
    /// the shipping would refuse (no remote, no token, the default branch)
    /// is said before the worktree is made for nothing.
    fn check_shipping_first(&self) -> Result<()> {
        let (Some(name), o) = (&self.args.worktree, &self.args.options) else {
            return Ok(());
        };
        if self.args.resume {
            return Ok(());
        }
        let here = std::env::current_dir().context("cannot read the current folder")?;
        let Ok(main) = crate::run::worktree::main_root(&here) else {
            return Ok(());
        };
        // A config that cannot be read is refused, and said, as the loop
        // starts in the worktree.
        let cfg = crate::config::load(&Project::at(&main).config()).unwrap_or_default();
        let (push, pr) = (o.push || cfg.push, o.pr || cfg.pr);
        if !(push || pr) || crate::run::worktree::path_for(&main, name).exists() {
            return Ok(());
        }
        let branch = crate::run::worktree::branch(name);
        crate::ship::Ship::check_for(&main, &branch, pr).map_err(usage)
    }

    /// Make (or reuse) the worktree and continue as if started in it.
    fn enter_worktree(&self, name: &str) -> Result<std::path::PathBuf> {
        use crate::run::worktree;
        crate::git::check_worktree_name(name).map_err(usage)?;
        let here = std::env::current_dir().context("cannot read the current folder")?;
        let main = worktree::main_root(&here).map_err(|e| usage(format!("--worktree: {e:#}")))?;
        let spec = match &self.args.spec {
            Some(p) => Some(std::path::absolute(p)?),
            None => None,
        };
        let (path, made) = worktree::ensure(&main, name, self.args.base.as_deref())
            .map_err(|e| usage(format!("--worktree {name}: {e:#}")))?;
        let seeded = worktree::seed(&main, &path, spec.as_deref())?;
        // What the user approved in the checkout holds in its worktree.
        if let Ok(cfg) = crate::config::load(&Project::at(&path).config()) {
            crate::trust::approval::carry_over(&main, &path, &cfg)?;
        }
        let mut from = Vec::new();
        if let Some(spec) = &seeded.spec_from {
            from.push(format!("spec.md from {}", spec.display()));
        }
        if !seeded.copied.is_empty() {
            let checkout = main.join(".ralph");
            from.push(format!(
                "copied {} from {}",
                seeded.copied.join(", "),
                checkout.display()
            ));
        }
        let from = if from.is_empty() {
            String::new()
        } else {
            format!(" ({})", from.join("; "))
        };
        Ui::for_loop(name, true).note(&format!(
            "{} worktree {} on branch {}{from}",
            if made { "made" } else { "in" },
            path.display(),
            worktree::branch(name),
        ));
        std::env::set_current_dir(&path)
            .with_context(|| format!("cannot change to {}", path.display()))?;
        Ok(path)
    }

    fn start(&self) -> Result<ExitStatus> {
        self.check_shipping_first()?;
        let worktree = match &self.args.worktree {
            Some(name) => Some(self.enter_worktree(name)?),
            None => None,
        };
        let project = Project::find()?;
        let ui = match (&self.args.worker_name, &self.args.worktree) {
            // A worker's lines are shown among its siblings': each says whose.
            (Some(name), _) | (None, Some(name)) => Ui::for_loop(name, true),
            (None, None) => Ui::for_loop(&folder_name(&project.root), false),
        };
        self.run_in(project, ui, worktree.is_some())
    }

    /// The loop in `project`, its worktree entered if it has one.
    fn run_in(&self, project: Project, ui: Ui, in_worktree: bool) -> Result<ExitStatus> {
        let resume = if self.args.resume {
            Some(resumable(&project)?)
        } else {
            None
        };
        let (cli, record) = match &resume {
            Some((run, _)) => resumed_options(&project, run, &self.args.options, &ui)?,
            None => (self.args.options.clone(), None),
        };
        let limits = resume.as_ref().map(|(_, s)| &s.limits);
        let (settings, mut ship, checked) =
            self.checked_settings((&project, &ui), &cli, limits, in_worktree)?;
        if self.args.dry_run {
            return dry_run(&project, &settings);
        }
        // An answer sent after the run stopped for it: the run goes on with
        // it, taken once the lock is ours (a loop refused before then leaves
        // it where it was, for the next).
        // (A parallel run's answer is about its paused step; a worker's
        // and `ralph merge`'s ask nothing of their own.)
        // Nothing else hands a run of many steps an answer: one to the
        // question a worker's session asked would reach no session, so it
        // is left where it is, the run waiting as before.
        let asks = settings.workers.worker.is_none() && self.args.remote.is_none();
        let single = settings.workers.count == 1;
        let answer_waits = asks
            && sentinel::Waiting::read(&project.waiting())?.is_some_and(|w| {
                (single || crate::run::engine::pause::asked_about(&w.options))
                    && crate::run::tell::answer_pending(&project.root, &w)
            });
        if let Some(done) = first_move(&settings, &project, &checked, &ui, answer_waits)? {
            return Ok(done);
        }

        // Before the lock is ours: a stop request from then on is the run's
        // to answer (exit 130), never a death that leaves the lock behind.
        crate::procs::signals::become_subreaper();
        crate::procs::signals::install_signal_handlers()?;
        let invocation_args = record.as_ref().map(workers_command_line);
        let resumed_id = resume.as_ref().map(|(r, _)| r.id.clone());
        let (run, saved, mut lock) = take_lock(&project, &settings, resume, record, &ui)?;
        let answered = if answer_waits {
            crate::run::asking::answered_at_start(&project, resumed_id.as_deref(), &ui)?
        } else {
            None
        };
        let own_dirty = self.own_dirty(&project);
        // Keep ralph's own run files out of the user's git status.
        super::init::ensure_gitignore(&project)?;
        let mut outbox = crate::notify::send::Outbox::new(
            settings.notify.clone(),
            loop_name(&project.root),
            project.root.clone(),
            run.new_file("notifications.jsonl").ok(),
        );
        let journal = crate::history::events::Journal::of(&run).by(settings
            .workers
            .worker
            .as_ref()
            .map(|w| (w.name.as_str(), w.step.as_str())));
        let told = journal.clone();
        outbox.tell_to(std::sync::Arc::new(move |s: crate::notify::send::Sent| {
            told.add(crate::history::events::Event::Notice {
                notice: s.notice,
                channel: s.channel,
                ok: s.ok,
            })
        }));
        if let Some(s) = &mut ship {
            s.log_to(run.new_file("ship.jsonl").ok());
        }
        journal.seed(&run);
        journal.add(run_started(
            &run,
            &settings,
            saved.as_ref(),
            self.args.remote.is_some(),
        ));
        let shell = Shell {
            project: &project,
            s: &settings,
            run: &run,
            ui,
            secret: lock.info.token.clone(),
            outbox,
            pacing: std::cell::RefCell::new(None),
            own_dirty,
            ship,
            clock: std::cell::Cell::new(None),
            handed: std::cell::RefCell::new(None),
            standing: std::cell::RefCell::new(None),
            answered: std::cell::RefCell::new(None),
            asking: Default::default(),
            limits: std::cell::RefCell::new(settings.limits.clone()),
            claimed_at: std::cell::RefCell::new(None),
        };
        let mut saved = saved;
        if let Some(given) = answered {
            use crate::run::engine::pause::{Choice, choice};
            match (choice(&given.answer), saved.as_mut()) {
                // "Stop the run", answered once it had stopped: this run
                // is the user's later word.
                (Choice::Stop, _) => ui.note("the answer was to stop the run, which had stopped already: this run goes on, the step with its budget again"),
                // A parallel run's board skips it (its coordinator).
                (Choice::Skip, Some(s)) if settings.workers.count == 1 => {
                    if let Some(step) = &s.state.step {
                        ui.note(&format!(
                            "step {} is skipped at your answer: left open, its work kept; the run goes on with the others",
                            crate::output::visible_line(step)
                        ));
                    }
                    crate::run::engine::skip(&mut s.state);
                }
                _ => {}
            }
            shell.hand(given)?;
        }
        // `ralph stop` (now) is taken at once, whatever the run is doing;
        // what is written on GitHub or the ntfy topic comes the same way.
        if settings.workers.worker.is_none() {
            crate::run::control::watch(project.root.clone(), run.id.clone(), shell.journal());
            if let Some(channels) =
                crate::run::remote::Channels::of(&settings, &project, shell.ship.as_ref())
            {
                crate::run::remote::read(
                    channels,
                    project.root.clone(),
                    run.id.clone(),
                    shell.asking.clone(),
                    ui,
                );
            }
        }
        let result = match (settings.workers.count, &self.args.remote) {
            (1, None) => shell.run(&mut lock, saved),
            (_, remote) => in_parallel(&shell, &mut lock, saved, invocation_args, remote.as_ref()),
        };
        lock.release();
        Ok(ExitStatus::from(result?))
    }
}

/// `--dry-run`: what would run, with the estimate of its open steps; nothing
/// started, nothing written.
fn dry_run(project: &Project, settings: &options::Settings) -> Result<ExitStatus> {
    use crate::outln;
    let (s, l) = (&settings.session, &settings.limits);
    let spec = crate::fsutil::read_optional(&project.spec())?.unwrap_or_default();
    let parsed = crate::work::spec::parse(&spec);
    let open = u32::try_from(parsed.total() - parsed.done()).unwrap_or(u32::MAX);
    let model = s.model.as_deref();
    outln!("ralph loop --dry-run: nothing was started.");
    outln!(
        "agent: {}{} · at most {} · {} · {}",
        s.agent,
        model
            .map(|m| format!(", model {}", crate::output::visible_line(m)))
            .unwrap_or_default(),
        crate::output::counted(l.max_iterations, "session", "sessions"),
        l.max_cost.map_or("no cost limit".into(), |c| format!(
            "{} at most",
            crate::output::usd(c)
        )),
        l.max_time.map_or("no time limit".into(), |t| format!(
            "{} at most",
            crate::timefmt::human_duration(t)
        ))
    );
    outln!(
        "spec: {} open of {}",
        crate::output::counted(open, "step", "steps"),
        parsed.total()
    );
    if open > 0 {
        let (event, past) = crate::history::costs::estimated(
            &project.root,
            open,
            (&s.agent.to_string(), model),
            &s.prices,
        );
        if let Some(line) = crate::history::said::said(&event, None) {
            outln!("{}", crate::output::visible_line(&line));
        }
        if let Some(cap) = l.max_cost
            && let Some(line) = crate::history::said::cap_short(cap, &event, &past)
        {
            outln!("{line}");
        }
    }
    Ok(ExitStatus::Success)
}

impl Loop {
    /// The settings in force, checked against the machine and the project
    /// before anything is made; the run's shipping; the spec as checked.
    fn checked_settings(
        &self,
        (project, ui): (&Project, &Ui),
        cli: &Options,
        limits: Option<&crate::run::engine::Limits>,
        in_worktree: bool,
    ) -> Result<(options::Settings, Option<crate::ship::Ship>, Checked)> {
        let mut settings = options::settings(cli, project, limits).map_err(usage)?;
        refuse_what_cannot_run(&settings, project)?;
        if let Some(step) = &self.args.worker_step {
            self.as_worker(&mut settings, project, step)?;
        }
        // A parallel run's workers stop for a human each on its own, and
        // the run with them; the one answer such a run waits for is about
        // a step paused at its budget, which the others go on beside.
        let many = settings.workers.count > 1
            || settings.workers.worker.is_some()
            || self.args.remote.is_some();
        if many && let Some(within) = settings.limits.wait_for_answer.take() {
            let coordinator = self.args.worker_step.is_none();
            if coordinator && settings.limits.max_cost_per_step.is_some() {
                settings.workers.answer_within = Some(within);
            } else if coordinator {
                ui.note("--wait-for-answer: a run of many steps waits only for the answer about a step over its --max-cost-per-step, which this run does not set; it stops for a human as before (exit 3)");
            }
        }
        prepare_confined(&mut settings, project, in_worktree, ui)?;
        // --push / --pr: the branch, its remote, the pull request's base,
        // the token: what is missing is said before anything runs.
        let mut ship =
            crate::ship::Ship::start(&project.root, settings.shipping.push, settings.shipping.pr)
                .map_err(usage)?;
        // `ralph merge` pushes with the token its remote was reached with.
        if let (Some(s), Some(r)) = (ship.as_mut(), &self.args.remote) {
            s.target = r.target.for_branch(&s.target.branch);
        }
        let checked = completion::check_run(
            &project.spec(),
            &project.root,
            settings.tracker,
            settings.shipping.pr,
        )?;
        refuse_what_cannot_finish(&settings, project, &checked, ui)?;
        if settings.workers.count > 1 {
            crate::run::coordinator::refuse_what_cannot_start(project, settings.tracker)?;
        }
        Ok((settings, ship, checked))
    }

    /// ralph's own files that have your changes: left to you at the end
    /// (a resumed run's are its own, from before it was stopped).
    fn own_dirty(&self, project: &Project) -> Vec<String> {
        if self.args.resume {
            return Vec::new();
        }
        progress::uncommitted_among(&project.root, &progress::OWN)
            .unwrap_or_else(|| progress::OWN.map(String::from).to_vec())
    }

    /// A worker of a parallel run: its one step, its run's budget; its run
    /// tells (no notices), coordinates and pushes.
    fn as_worker(
        &self,
        settings: &mut options::Settings,
        project: &Project,
        step: &str,
    ) -> Result<()> {
        let text = crate::fsutil::read_optional(&project.spec())?.unwrap_or_default();
        let parsed = crate::work::spec::parse(&text);
        let label = crate::parallel::texts::find(&parsed.steps, step)
            .map(|s| {
                s.label
                    .clone()
                    .or(s.task.clone())
                    .unwrap_or(s.title.clone())
            })
            .ok_or_else(|| usage(format!("the spec here has no step {step}")))?;
        settings.workers.worker = Some(crate::parallel::Worker {
            step: step.to_string(),
            label,
            name: self.args.worker_name.clone().unwrap_or_default(),
            budget: self.args.worker_budget.clone().unwrap_or_default(),
        });
        settings.workers.count = 1;
        settings.notify = None;
        settings.shipping.push = false;
        settings.shipping.pr = false;
        // The coordinator closes the step's issue as it merges it.
        settings.limits.closes_issues = false;
        // The run took the gate's baseline once, on its starting tree; a
        // worker's gate is judged against that one (`Shell::open`).
        settings.limits.baseline = false;
        settings.limits.push_each = false;
        Ok(())
    }
}

/// `--parallel N`: the coordinator, with the run's command line for its
/// workers (a resumed run's as it was started, with what its resumes
/// changed).
fn in_parallel(
    shell: &Shell,
    lock: &mut crate::run::lock::LoopLock,
    saved: Option<Saved>,
    invocation_args: Option<Vec<String>>,
    remote: Option<&crate::run::coordinator::RemoteMerge>,
) -> Result<u8> {
    let before = progress::take(&shell.project.root, &shell.project.spec());
    let args = match (remote, invocation_args) {
        (Some(r), _) => r.args.clone(),
        (None, Some(a)) => a,
        (None, None) => std::env::args().skip(1).collect(),
    };
    let saved = shell.open(saved, &before)?;
    crate::run::coordinator::Coordinator {
        shell,
        args,
        remote,
    }
    .run(lock, saved)
}

/// What stops a run before anything is made: an interactive run without the
/// Stop hook (or, confined, without it in the user's settings), a project
/// outside git.
fn refuse_what_cannot_run(settings: &options::Settings, project: &Project) -> Result<()> {
    // Without the hook an interactive session never ends by itself.
    let (hooks, via_plugin) = crate::settings::target::installed_hooks(&project.root);
    if settings.session.interactive && hooks.is_empty() && !via_plugin {
        return Err(usage(
            "--interactive needs ralph's Stop hook to end each session, and it is not installed: run `ralph install-hook`",
        ));
    }
    // A confined session loads only the user's settings.
    if settings.session.interactive
        && settings.confined.is_some()
        && !via_plugin
        && !hooks
            .iter()
            .any(|(role, _, _)| *role == crate::settings::target::Scope::User)
    {
        return Err(usage(
            "--interactive --confined needs ralph's Stop hook in your user settings (confined sessions do not load the project's): run `ralph install-hook`",
        ));
    }
    // A desktop notice found impossible only when the run ends is no notice.
    if settings
        .notify
        .as_ref()
        .is_some_and(|n| n.channels.contains(&crate::notify::Channel::Desktop))
    {
        crate::notify::send::desktop_notifier().map_err(usage)?;
    }
    // Every session of an agent whose commands run in a login shell would
    // fail on `ralph complete` (and the tracker) until the iteration limit.
    let programs = crate::work::tracker::session_programs(settings.tracker, &project.root);
    let agents = std::iter::once(settings.session.agent)
        .chain(settings.session.fallbacks.iter().map(|(a, _)| *a))
        .chain(settings.completion.review.as_ref().map(|r| r.agent));
    for agent in agents {
        if let Some(missing) = agent.unfound(&programs)
            && !missing.is_empty()
        {
            return Err(usage(format!(
                "--agent {agent}: {}",
                agent.unfound_fix(&missing)
            )));
        }
    }
    // Progress that cannot be measured must not read as "no change".
    if !progress::in_git(&project.root) {
        return Err(usage(format!(
            "{} is not in a git repository, and the loop measures each session's progress with git \
                 (HEAD, working tree). Run `git init && git add -A && git commit -m start` there first.",
            project.root.display()
        )));
    }
    Ok(())
}

/// A confined run's preparation: the main checkout's tracker writable for a
/// worktree's sessions, the sandbox's placeholders out of git, a word on the
/// gate's network.
fn prepare_confined(
    settings: &mut options::Settings,
    project: &Project,
    in_worktree: bool,
    ui: &Ui,
) -> Result<()> {
    // A worktree's sessions close tasks in the main checkout's tracker
    // (br goes there by itself): confined, they may write it.
    if in_worktree
        && let Some(c) = settings.confined.as_mut()
        && let Ok(main) = crate::run::worktree::main_root(&project.root)
        && main.join(".beads").is_dir()
    {
        c.allow_write
            .push(main.join(".beads").display().to_string());
    }
    if settings.confined.is_some()
        && settings.session.agent.caps().sandbox_placeholders
        && let Some(path) = crate::sandbox::confine::prepare(&project.root)?
    {
        ui.note(&format!(
                "confined: Claude Code's sandbox placeholders (.bashrc, .vscode, ...) excluded from git in {}",
                path.display()
            ));
    }
    if let (Some(c), Some(_)) = (&settings.confined, &settings.completion.gate)
        && !c.allow_domains.is_empty()
    {
        ui.note(&format!(
            "confined: the gate's commands run with no network at all (the sessions may reach {})",
            c.allow_domains.join(", ")
        ));
    }
    Ok(())
}

/// What would keep the run from ever finishing (a template spec, a tracker
/// missing or not set up, tasks it does not know, gate programs not found):
/// refused before any session, with the fix. The rest is said, and the run
/// goes on.
fn refuse_what_cannot_finish(
    settings: &options::Settings,
    project: &Project,
    checked: &Checked,
    ui: &Ui,
) -> Result<()> {
    let missing = settings
        .completion
        .gate
        .as_ref()
        .map(|g| crate::work::gate::missing_programs(g, &project.root))
        .unwrap_or_default();
    let found = readiness::hindrances(checked, &missing);
    let (fatal, rest): (Vec<_>, Vec<_>) = found.into_iter().partition(|h| h.fatal());
    for h in &rest {
        ui.note(&format!("worth fixing: {h}"));
    }
    if fatal.is_empty() {
        return Ok(());
    }
    let mut msg = String::from("this run could never finish, so no session was started:");
    for h in &fatal {
        msg.push_str(&format!(
            "\n  {}\n    fix: {}",
            visible(&h.to_string()),
            h.fix()
        ));
    }
    msg.push_str("\n`ralph doctor` checks all of this.");
    Err(usage(msg))
}

/// The project's folder name (its path, for `/`).
fn folder_name(root: &std::path::Path) -> String {
    root.file_name().map_or_else(
        || root.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The loop's name in notices: its folder, and its branch.
fn loop_name(root: &std::path::Path) -> String {
    let dir = folder_name(root);
    match crate::git::branch(root) {
        Some(b) => format!("{dir} ({b})"),
        None => dir,
    }
}

type Checked = std::result::Result<completion::Judgement, completion::CannotCheck>;

/// How the run starts, by the sentinels there (the engine decides): `Some`
/// status when it ends before it begins.
fn first_move(
    settings: &options::Settings,
    project: &Project,
    checked: &Checked,
    ui: &Ui,
    answered: bool,
) -> Result<Option<ExitStatus>> {
    // What the sentinels there say decides how the run starts (a WAITING
    // whose answer waits in the inbox is as good as gone).
    let complete = sentinel::Complete::read(&project.complete())?;
    let waiting = sentinel::Waiting::read(&project.waiting())?.filter(|_| !answered);
    // The run that ended last accepted this COMPLETE (gate, reviewer and
    // all): judging it again would run the checks and pay a reviewer for
    // nothing. One found otherwise (a session's, a run killed before it
    // judged it, `ralph complete --force`) is judged: a reviewer of the run
    // judges it, as the gate does.
    let accepted = complete
        .as_ref()
        .and_then(|_| RunDir::latest(&project.runs()))
        .filter(|r| r.summary().is_some_and(|s| s.outcome == Outcome::Complete));
    let judged = accepted.is_none()
        && (settings.completion.gate.is_some()
            || settings
                .completion
                .review
                .as_ref()
                .is_some_and(|r| r.when == crate::work::review::When::Complete));
    let holds = complete.as_ref().map(|_| {
        matches!(
            completion::rule(checked, judged),
            completion::Rule::Holds { .. }
        )
    });
    let start = crate::run::engine::start(holds, waiting.is_some());
    if let Some(c) = &complete {
        ui.line(&if start == crate::run::engine::Start::AlreadyComplete {
            let by = accepted.map_or(String::new(), |r| format!(", accepted by run {}", r.id));
            format!(
                "Already complete{}{by}; nothing to do. More work: `ralph add \"<step>\"` (then `ralph loop`); the project's checks again: `ralph complete`; start over: `ralph reset`.",
                c.since()
            )
        } else {
            format!(
                "COMPLETE is there{}; checking it before anything else.",
                c.since()
            )
        });
    }
    match (start, &waiting) {
        (crate::run::engine::Start::AlreadyComplete, _) => return Ok(Some(ExitStatus::Success)),
        (crate::run::engine::Start::Waiting, Some(w)) => {
            ui.line(&format!(
                "Waiting for a human{}: {}",
                w.since(),
                visible(&w.reason)
            ));
            ui.line("Run `ralph resume` once that is done.");
            return Ok(Some(ExitStatus::from(3)));
        }
        _ => {}
    }
    Ok(None)
}

/// The run folder (new, or the one resumed) and the project's lock; a stale
/// lock's run is taken over. Refused while another loop runs.
fn take_lock(
    project: &Project,
    settings: &options::Settings,
    resume: Option<(RunDir, Saved)>,
    record: Option<Invocation>,
    ui: &Ui,
) -> Result<(RunDir, Option<Saved>, lock::LoopLock)> {
    let me = std::process::id();
    let my_start = crate::procs::tree::ProcReader::new()
        .get(me)
        .map(|p| p.start_time)
        .unwrap_or(0);
    let runs = project.runs();
    let (run, saved) = match resume {
        Some((run, saved)) => (run, Some(saved)),
        None => (RunDir::create(&runs)?, None),
    };
    let info = LockInfo {
        pid: me,
        start_time: my_start,
        started_at: timefmt::now(),
        run_id: run.id.clone(),
        iteration: 0,
        max_iterations: settings.limits.max_iterations,
        session: None,
        token: crate::trust::store::random_token(),
        waiting_until: None,
    };
    let acquired = lock::acquire(&project.lock(), info);
    if acquired.is_err() && saved.is_none() {
        let _ = std::fs::remove_dir(&run.path);
    }
    let lock = match acquired? {
        Acquired::Lock(lock, stale) => {
            if let Some(s) = stale.filter(|s| s.pid != 0) {
                crate::run::takeover::take_over(ui, &runs, &s);
            }
            keep_invocation(project, &run, record, ui);
            lock
        }
        Acquired::Held(holder) => {
            if saved.is_none() {
                let _ = std::fs::remove_dir(&run.path);
            }
            return Err(held_by(project, holder));
        }
    };
    Ok((run, saved, lock))
}

/// Keep how the run was started (and resumed), for `--resume` and `ralph
/// watch` to go on with the same options; a failure to keep it is said.
fn keep_invocation(project: &Project, run: &RunDir, record: Option<Invocation>, ui: &Ui) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let inv = match record {
        Some(mut inv) => {
            inv.resumed.push(args);
            inv
        }
        None => Invocation {
            run_id: run.id.clone(),
            args,
            cwd: std::env::current_dir().unwrap_or_default(),
            resumed: Vec::new(),
            issues_at_start: None,
            pr_issues_at_start: None,
            // The project's pull request stays known to the runs after it.
            pull_request: crate::history::invocation::load(&project.root)
                .and_then(|i| i.pull_request),
        },
    };
    if let Err(e) = crate::history::invocation::save(&project.root, &inv) {
        ui.note(&format!(
            "{e:#}; a `--resume` of this run will not know its command line"
        ));
    }
}

/// The refusal while another loop holds the project's lock.
fn held_by(project: &Project, holder: Option<LockInfo>) -> anyhow::Error {
    let who = holder
        .map(|h| {
            format!(
                "pid {}, started {}, iteration {}/{}",
                h.pid, h.started_at, h.iteration, h.max_iterations
            )
        })
        .unwrap_or_else(|| "another process".into());
    Stop::with(
        ExitStatus::Failure,
        format!(
            "another loop is already running in {} ({who})",
            project.root.display()
        ),
    )
}

/// How the run starts, as its journal's first line of this stretch says.
fn run_started(
    run: &RunDir,
    s: &options::Settings,
    saved: Option<&Saved>,
    remote: bool,
) -> crate::history::events::Event {
    use crate::history::events::{Event, Mode, RunLimits};
    let mode = match (&s.workers.worker, s.workers.count, remote) {
        (Some(_), _, _) => Mode::Worker,
        (None, _, true) => Mode::Merge,
        (None, 1, false) => Mode::Loop,
        (None, _, false) => Mode::Parallel,
    };
    Event::RunStarted {
        run_id: run.id.clone(),
        mode,
        resumed: saved.map_or(0, |s| s.resumed + 1),
        agent: s.session.agent,
        limits: RunLimits {
            max_iterations: s.limits.max_iterations,
            max_cost_usd: s.limits.max_cost,
            max_time: s.limits.max_time,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_options_of_loop_take_a_value() {
        for (name, takes) in [
            ("--max-iterations", true),
            ("--claude", true),
            ("--gate", true),
            ("-C", true),
            ("--confined", false),
            ("--resume", false),
            ("--no-such-option", false),
        ] {
            assert_eq!(takes_value(name), takes, "{name}");
        }
    }
}
