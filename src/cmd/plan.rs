//! `ralph plan "WHAT TO BUILD"`: one headless planning session of the
//! run's agent drafts the spec and the readme and makes the tracker's
//! tasks; ralph checks the draft before it replaces anything.
//!
//! Why a draft folder, and not the real files with a backup to restore:
//! the session writes `.ralph/plan-draft/spec.md` and `readme.md`, and
//! ralph writes the real ones itself, atomically, only once the draft has
//! passed the check. So the user's files are never, not for a moment,
//! something unchecked: a ralph killed mid-session (SIGKILL, the machine
//! going down), which could restore nothing, leaves them as they were and
//! at worst a draft folder (git-ignored, replaced by the next plan). A
//! backup design is only as good as the restore that must run after every
//! way a session can end. The model is not trusted to keep to its draft
//! either: ralph's own files are read before the session and put back if
//! it changed them, and the tasks a plan that is not kept made are deleted
//! (a tracker it set up is removed whole).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use super::import::{There, project_tracker, template};
use crate::config::{Options, Span};
use crate::exit::{ExitStatus, Stop};
use crate::outln;
use crate::output::visible_line;
use crate::run::engine::SessionOutcome;
use crate::run::options::{Settings, planning_settings};
use crate::run::ui::Ui;
use crate::work::plan::{self, DRAFT_DIR, Draft, Outcome};
use crate::work::project::Project;
use crate::work::tracker::{self, Beads};

const EXIT_CODES: &str = "\
Exit status:
  0    the plan passed the check and replaced the spec and readme
  1    not kept: it failed the check (each problem said), the session failed,
       or a spec or readme of your own is there (--force replaces them)
  2    usage error: bad options, the agent or the tracker (br) not found,
       what the project's files would run not approved (`ralph trust`)
  130  interrupted: Ctrl+C, SIGTERM or SIGHUP (nothing kept)";

/// The most ralph reads of a drafted or guarded file.
const CAP: u64 = 4 << 20;

/// ralph's files the session may not change (it writes its draft): read
/// before it, put back after it.
const GUARDED: [&str; 6] = [
    "spec.md",
    "readme.md",
    "prompt.md",
    "learnings.md",
    "config.toml",
    ".gitignore",
];

/// Plan the work from a sentence: a headless session writes the spec.
///
/// One session of the run's agent (--agent, or `agent` in
/// .ralph/config.toml; Claude Code by default), in print mode, with ralph's
/// planning prompt (the rules /ralph-setup follows too): it reads the
/// project and drafts .ralph/spec.md (steps small enough for one session
/// each, every step with its tracker task), .ralph/readme.md (where the
/// reference docs are), and makes the tasks in the tracker (br; set up with
/// `br init` where there is none), their acceptance criteria in the tasks,
/// with dependencies where steps depend on each other. ralph then checks
/// the draft as `ralph loop` would before its first session (a spec still
/// ralph init's template, no steps, a step without a task, a task the
/// tracker does not know, no readme) and only then writes the spec and the
/// readme (and ralph init's prompt where there is none). A plan that fails
/// leaves your files as they were and its tasks deleted, says why, and
/// keeps its draft in .ralph/plan-draft/ to read. It says what it wrote and
/// what the session cost. It replaces ralph init's templates, never your
/// own spec or readme (--force does). What a clone's .ralph/config.toml or
/// agent files would run needs `ralph trust` first, as for a loop.
#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct Plan {
    /// What to build, in a sentence (or several)
    what: String,

    /// Replace the spec and readme even where they are your own, not
    /// ralph init's templates
    #[arg(long)]
    force: bool,

    /// Say what it came to as JSON (the session's stream is not shown)
    #[arg(long)]
    json: bool,

    /// The coding agent that plans [default: claude]
    #[arg(long, value_enum)]
    agent: Option<crate::agent::Agent>,

    /// The model for the session (the agent's --model)
    #[arg(long)]
    model: Option<String>,

    /// End the session if it runs longer than this, wall clock
    #[arg(long, value_name = "DURATION")]
    timeout: Option<Span>,

    /// Which tracker to use [default: br if installed, else bd]
    #[arg(long, value_enum)]
    tracker: Option<crate::config::Kind>,

    /// The claude executable [default: `claude` on PATH]
    #[arg(long, value_name = "PATH")]
    claude: Option<PathBuf>,

    /// The codex executable, for --agent codex [default: `codex` on PATH]
    #[arg(long, value_name = "PATH")]
    codex: Option<PathBuf>,

    /// The gemini executable, for --agent gemini [default: `gemini` on PATH]
    #[arg(long, value_name = "PATH")]
    gemini: Option<PathBuf>,

    /// The pi executable, for --agent pi [default: `pi` on PATH]
    #[arg(long, value_name = "PATH")]
    pi: Option<PathBuf>,

    /// The opencode executable, for --agent opencode [default: `opencode`
    /// on PATH]
    #[arg(long, value_name = "PATH")]
    opencode: Option<PathBuf>,
}

fn usage(m: impl Into<String>) -> anyhow::Error {
    Stop::with(ExitStatus::Usage, m)
}

fn refuse(m: impl Into<String>) -> anyhow::Error {
    Stop::with(ExitStatus::Failure, m)
}

impl Plan {
    /// This command line as the loop's options (the config fills the rest).
    fn options(&self) -> Options {
        Options {
            agent: self.agent,
            model: self.model.clone(),
            timeout: self.timeout.clone(),
            tracker: self.tracker,
            claude: self.claude.clone(),
            codex: self.codex.clone(),
            gemini: self.gemini.clone(),
            pi: self.pi.clone(),
            opencode: self.opencode.clone(),
            ..Options::default()
        }
    }
}

impl Run for Plan {
    fn run(&self) -> Result<ExitStatus> {
        let planned = self.plan();
        // `--json` answers in JSON whatever comes of it: a refusal too (its
        // words are said on stderr as well, once).
        if self.json
            && let Err(e) = &planned
        {
            let refused = serde_json::json!({ "kept": false, "refused": format!("{e:#}") });
            outln!("{}", serde_json::to_string_pretty(&refused)?);
        }
        planned
    }
}

impl Plan {
    fn plan(&self) -> Result<ExitStatus> {
        if self.what.trim().is_empty() {
            return Err(usage("say what to build: `ralph plan \"a CLI that ...\"`"));
        }
        let project = Project::find()?;
        let s = planning_settings(&self.options(), &project).map_err(usage)?;
        if let Some(l) = crate::run::lock::running(&project.lock()) {
            return Err(refuse(format!(
                "a loop is running here (run {}, pid {}): plan once it has stopped; nothing planned",
                l.run_id, l.pid
            )));
        }
        let dir = project.ralph_dir();
        crate::fsutil::real_dir(&dir)?;
        refuse_own_files(&project, self.force)?;
        let (beads, made_tracker) = self.tracker_here(&project, &s)?;
        let ui = if self.json {
            None
        } else {
            Some(Ui::for_stdout())
        };
        let outcome = Session {
            project: &project,
            s: &s,
            beads: &beads,
            made_tracker,
            ui,
        }
        .run(&self.what)?;
        self.say(&outcome.0, &outcome.1)
    }
}

impl Plan {
    /// The project's tracker, set up (`br init`) where there is none: the
    /// plan's steps each get a task. Whether ralph set it up.
    fn tracker_here(&self, project: &Project, s: &Settings) -> Result<(Beads, bool)> {
        if let Some(b) = project_tracker(project, s.tracker, "nothing planned")? {
            return Ok((b, false));
        }
        let b = tracker::detect(s.tracker, &project.root).map_err(|e| {
            usage(format!(
                "ralph plan makes a tracker task for each step, and {e}"
            ))
        })?;
        b.init()
            .map_err(|e| refuse(format!("{e}; nothing planned")))?;
        Ok((b, true))
    }

    /// The outcome, said; the exit status it comes to (`how`: how the
    /// session ended).
    fn say(&self, o: &Outcome, how: &SessionOutcome) -> Result<ExitStatus> {
        let status = if o.kept {
            ExitStatus::Success
        } else if matches!(how, SessionOutcome::Interrupted(_)) {
            ExitStatus::Code(130)
        } else {
            ExitStatus::Failure
        };
        if self.json {
            outln!("{}", serde_json::to_string_pretty(o)?);
            return Ok(status);
        }
        let ui = Ui::for_stdout();
        for l in o.lines() {
            ui.note(&l);
        }
        if o.kept {
            outln!(
                "Next: `ralph doctor` (can a loop here finish?), commit .ralph/ and .beads/, then `ralph loop`."
            );
        }
        Ok(status)
    }
}

/// A spec or readme of the user's own is refused before any session
/// (whose cost would be wasted), unless `force`.
fn refuse_own_files(project: &Project, force: bool) -> Result<()> {
    let mut yours = Vec::new();
    for name in ["spec.md", "readme.md"] {
        let path = project.ralph_dir().join(name);
        let now = crate::fsutil::read_optional_capped(&path, CAP)
            .map_err(|e| refuse(format!("{e:#}; nothing planned")))?;
        if There::of(now.as_deref(), Some(template(name))) == There::Yours {
            yours.push(path.display().to_string());
        }
    }
    if yours.is_empty() || force {
        return Ok(());
    }
    Err(refuse(format!(
        "nothing planned: {} {} your own, not ralph init's template (--force replaces {})",
        yours.join(", "),
        if yours.len() == 1 { "is" } else { "are" },
        if yours.len() == 1 { "it" } else { "them" }
    )))
}

/// One planning session and what becomes of its draft.
struct Session<'a> {
    project: &'a Project,
    s: &'a Settings,
    beads: &'a Beads,
    made_tracker: bool,
    /// Where the session's stream is shown (`None`: --json).
    ui: Option<Ui>,
}

/// ralph's files as they were before the session: `None` for no file.
/// Links are left out (ralph writes through none).
type Guarded = Vec<(PathBuf, Option<Vec<u8>>)>;

/// What was there before the session, to tell what it did.
struct Before {
    tasks: Vec<String>,
    guarded: Guarded,
    /// Files `git status` showed changed outside `.ralph/` and `.beads/`.
    outside: Vec<String>,
}

impl Session<'_> {
    fn run(&self, what: &str) -> Result<(Outcome, SessionOutcome)> {
        let project = self.project;
        let draft_dir = project.ralph_dir().join(DRAFT_DIR);
        fresh_dir(&draft_dir)?;
        let shown_draft = format!(".ralph/{DRAFT_DIR}");
        let text = plan::prompt(what, &shown_draft, self.beads.name());
        let prompt = draft_dir.join("planning-prompt.md");
        crate::fsutil::atomic_write(&prompt, text.as_bytes(), 0o644)?;
        let before = Before {
            tasks: self.task_ids()?,
            // Its draft stays out of git, kept or not (before the guard).
            guarded: super::init::ensure_gitignore(project).map(|_| guard(project))?,
            outside: changed_outside(&project.root),
        };
        let mut s = self.s.clone();
        s.session.prompt = prompt;
        let ended = match self.session(&s, &draft_dir) {
            Ok(e) => e,
            Err(e) => {
                // Not started, or not waited for: what it made goes too.
                let places = self.places();
                let mut notes =
                    plan::redirected(places, &project.ralph_dir().display().to_string());
                if places.ralph_real {
                    notes.extend(put_back(&before.guarded));
                }
                if places.tracker_own {
                    let made = self.made_since(&before.tasks).unwrap_or_default();
                    self.undo_tasks(&made, &mut notes);
                }
                for n in notes {
                    crate::errln!("{}", visible_line(&n));
                }
                return Err(e);
            }
        };
        let how = outcome_of(&ended);
        let o = Outcome {
            agent: s.session.agent.to_string(),
            model: s.session.model.clone(),
            session: how.as_text(),
            cost_usd: crate::run::shell::cost_of(
                &ended.stream,
                s.session.seat(0),
                &s.session.prices,
            ),
            draft: Some(shown_draft),
            ..Outcome::default()
        };
        let o = self.after(o, &before, &ended, &how)?;
        Ok((o, how))
    }

    /// Where the session left `.ralph` and the tracker.
    fn places(&self) -> plan::Places {
        let dir = self.project.ralph_dir();
        plan::Places {
            ralph_real: std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()),
            tracker_own: !super::import::beads_elsewhere(&self.project.root.join(".beads")),
        }
    }

    /// After the session: ralph's files put back, the draft checked and
    /// kept, or its tasks deleted; never through a place the session
    /// pointed elsewhere (`.ralph`, the tracker).
    fn after(
        &self,
        mut o: Outcome,
        before: &Before,
        ended: &crate::session::Finished,
        how: &SessionOutcome,
    ) -> Result<Outcome> {
        let project = self.project;
        let draft_dir = project.ralph_dir().join(DRAFT_DIR);
        let places = self.places();
        let redirected = plan::redirected(places, &project.ralph_dir().display().to_string());
        if places.ralph_real {
            o.notes = put_back(&before.guarded);
        } else {
            o.draft = None;
        }
        o.notes.extend(left_outside(&project.root, &before.outside));
        if places.tracker_own {
            o.tasks_made = self.made_since(&before.tasks)?;
        }
        if redirected.is_empty() {
            let draft = read_draft(&draft_dir, &mut o.problems);
            self.judge(&mut o, &draft, ended, how);
            if o.problems.is_empty() {
                o.written = keep(project, &draft)?;
                o.kept = true;
                o.draft = None;
                let _ = std::fs::remove_dir_all(&draft_dir);
                return Ok(o);
            }
        } else {
            o.problems = redirected;
        }
        if places.tracker_own {
            o.tasks_deleted = self.undo_tasks(&o.tasks_made, &mut o.notes);
        }
        Ok(o)
    }

    /// The draft of a session that ended well, checked: its problems (and
    /// its steps and epic) in `o`.
    fn judge(
        &self,
        o: &mut Outcome,
        draft: &Draft,
        ended: &crate::session::Finished,
        how: &SessionOutcome,
    ) {
        if *how != SessionOutcome::Ok {
            o.problems.insert(0, self.ended_badly(ended, &o.session));
            return;
        }
        if !o.problems.is_empty() {
            return;
        }
        let root = &self.project.root;
        let judged = draft
            .spec
            .as_deref()
            .map(|t| crate::work::completion::check_text(t, root, self.s.tracker));
        if let Some(Ok(j)) = &judged {
            o.steps = j.spec.total();
            o.epic = j.spec.epic.as_ref().map(|(_, e)| e.clone());
        }
        o.problems = plan::problems(draft, judged.as_ref(), template("readme.md"));
    }

    /// The tasks in the tracker now that were not among `before`.
    fn made_since(&self, before: &[String]) -> Result<Vec<String>> {
        Ok(self
            .task_ids()?
            .into_iter()
            .filter(|id| !before.contains(id))
            .collect())
    }

    /// Start the session and wait for its end, its stream shown as a
    /// loop's is (or not at all, for --json).
    fn session(&self, s: &Settings, draft_dir: &Path) -> Result<crate::session::Finished> {
        let seat = s.session.seat(0);
        if let Some(ui) = self.ui {
            let model = s
                .session
                .model
                .as_deref()
                .map_or(String::new(), |m| format!(" ({m})"));
            ui.status(&format!("planning session: {}{model}", seat.agent));
        }
        if s.confined.is_some()
            && seat.agent.caps().sandbox_placeholders
            && let Some(path) = crate::sandbox::confine::prepare(&self.project.root)?
            && let Some(ui) = self.ui
        {
            ui.note(&format!(
                "confined: Claude Code's sandbox placeholders excluded from git in {}",
                path.display()
            ));
        }
        // Ended as a loop's session is: Ctrl+C ends it cleanly, then what
        // it started.
        crate::procs::signals::become_subreaper();
        crate::procs::signals::install_signal_handlers()?;
        let ui = self.ui;
        let show: Box<dyn FnMut(crate::agent::stream::Shown) + Send> = match ui {
            Some(ui) => Box::new(move |x| ui.show(x)),
            // `--json`: stdout is the JSON's; the agent's own stderr still
            // passes to ralph's, as in every session.
            None => Box::new(|x| {
                if let crate::agent::stream::Shown::Stderr(t) = x {
                    eprintln!("{}", crate::output::visible_line(&t));
                }
            }),
        };
        let secret = format!("plan-{}-{}", std::process::id(), crate::timefmt::now());
        let stream = draft_dir.join("session.jsonl");
        let launch =
            crate::session::launch::lone(self.project, &s.given(), seat, (&secret, stream), show)?;
        let kept = s
            .confined
            .as_ref()
            .and_then(|_| crate::sandbox::gitguard::keep(&self.project.root));
        let ended = crate::session::spawn(launch)?.wait()?;
        if let Some(k) = kept {
            let said = k.restore().map_err(|e| anyhow::anyhow!("{e}"))?;
            if let (false, Some(ui)) = (said.is_empty(), self.ui) {
                ui.note(&format!(
                    "the planning session changed the repository's git setup, which a confined session may not: {}",
                    said.join("; ")
                ));
            }
        }
        Ok(ended)
    }

    /// Why a session that did not end well gives no plan.
    fn ended_badly(&self, ended: &crate::session::Finished, how: &str) -> String {
        let said = ended
            .stream
            .last_error
            .as_deref()
            .map(|e| format!(": {}", crate::agent::stream::first_line(e, 200)))
            .unwrap_or_default();
        format!("the planning session did not end well ({how}){said}")
    }

    /// The ids of every task in the tracker now.
    fn task_ids(&self) -> Result<Vec<String>> {
        let snap = self.beads.snapshot(None).map_err(|e| {
            refuse(format!(
                "cannot read {}: {e}; nothing planned",
                self.beads.name()
            ))
        })?;
        Ok(snap.issues.into_iter().map(|i| i.id).collect())
    }

    /// A plan that is not kept leaves no task behind: the tracker ralph
    /// set up for it goes whole; else the tasks it made are deleted. What
    /// was deleted; what could not be, said in `notes`.
    fn undo_tasks(&self, made: &[String], notes: &mut Vec<String>) -> Vec<String> {
        if self.made_tracker {
            let dot_beads = self.project.root.join(".beads");
            match std::fs::remove_dir_all(&dot_beads) {
                Ok(()) => notes.push(format!(
                    "removed {}, which ralph set up for this plan",
                    dot_beads.display()
                )),
                Err(e) => notes.push(format!(
                    "could not remove {} ({e}): remove it yourself",
                    dot_beads.display()
                )),
            }
            return made.to_vec();
        }
        match self
            .beads
            .delete(made, "made by a `ralph plan` that was not kept")
        {
            Ok(()) => made.to_vec(),
            Err(e) => {
                notes.push(format!(
                    "{e}: the tasks it made are still in the tracker: {}",
                    made.join(" ")
                ));
                Vec::new()
            }
        }
    }
}

/// How the session ended (the records say it as `ok`, `failed`, ...).
fn outcome_of(ended: &crate::session::Finished) -> SessionOutcome {
    let end = crate::run::engine::SessionEnd {
        ending: ended.ending,
        interactive: false,
        exit_ok: ended.status.is_some_and(|x| x.success()),
        result_ok: ended.stream.result_ok(),
        limit: ended.stream.limit.clone(),
    };
    crate::run::engine::classify(&end, crate::procs::signals::stop_requested().as_deref())
}

/// The draft folder, made anew (an older plan's draft, or a link planted
/// there, removed first).
fn fresh_dir(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(dir),
        Ok(_) => std::fs::remove_file(dir),
        Err(_) => Ok(()),
    }
    .with_context(|| format!("cannot remove the old draft {}", dir.display()))?;
    crate::fsutil::real_dir(dir)
}

/// The drafted spec and readme, never read through a link, the folder's
/// or a file's (a link to your secrets would be written into `.ralph/`);
/// what cannot be read is a problem.
fn read_draft(dir: &Path, problems: &mut Vec<String>) -> Draft {
    // Nor through its folder made a link.
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        problems.push(format!(
            "{} is a link now, or no folder: ralph reads no draft through it",
            dir.display()
        ));
        return Draft::default();
    }
    let mut read = |name: &str| match crate::fsutil::read_regular_capped(&dir.join(name), CAP) {
        Ok(t) => t,
        Err(e) => {
            problems.push(visible_line(&format!("{e:#}")));
            None
        }
    };
    Draft {
        spec: read("spec.md"),
        readme: read("readme.md"),
    }
}

/// ralph's files as they are now (links and unreadable files left out).
fn guard(project: &Project) -> Guarded {
    GUARDED
        .iter()
        .map(|n| project.ralph_dir().join(n))
        .filter(|p| !std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
        .filter_map(|p| {
            let bytes = crate::fsutil::read_bytes_capped(&p, CAP).ok()?;
            Some((p, bytes))
        })
        .collect()
}

/// What the session changed of ralph's files, put back; each said.
fn put_back(guarded: &Guarded) -> Vec<String> {
    let mut said = Vec::new();
    for (path, before) in guarded {
        let now = std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|_| crate::fsutil::read_bytes_capped(path, CAP).ok().flatten());
        let there = std::fs::symlink_metadata(path).is_ok();
        if now.as_deref() == before.as_deref() && (there == before.is_some()) {
            continue;
        }
        let done = match before {
            Some(b) => {
                let _ = remove_any(path);
                crate::fsutil::atomic_write(path, b, 0o644)
            }
            None => remove_any(path),
        };
        said.push(match done {
            Ok(()) => format!(
                "the planning session changed {}, which it may not: put back as it was",
                path.display()
            ),
            Err(e) => format!(
                "the planning session changed {}, and it could not be put back: {e:#}",
                path.display()
            ),
        });
    }
    said
}

/// Remove what is at `path`, whatever it is.
fn remove_any(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path)?,
        Ok(_) => std::fs::remove_file(path)?,
        Err(_) => {}
    }
    Ok(())
}

/// The files `git status` shows changed outside `.ralph/` and `.beads/`.
fn changed_outside(root: &Path) -> Vec<String> {
    crate::git::at(root)
        .run(
            &["status", "--porcelain", "--untracked-files=all"],
            &[".", ":(exclude).ralph", ":(exclude).beads"],
        )
        .map(|out| {
            out.lines()
                .map(|l| l.get(3..).unwrap_or(l).to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// What the session changed in the project beyond its plan: left as it
/// is (it may be work of yours), said.
fn left_outside(root: &Path, before: &[String]) -> Vec<String> {
    let new: Vec<String> = changed_outside(root)
        .into_iter()
        .filter(|f| !before.contains(f))
        .map(|f| visible_line(&f))
        .collect();
    if new.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "the planning session changed files outside .ralph/ (left as they are, for you to look at): {}",
        new.join(", ")
    )]
}

/// The draft in place: the readme, the spec last (atomically, each), with
/// ralph init's prompt where there is none and the .gitignore; the paths
/// written.
fn keep(project: &Project, draft: &Draft) -> Result<Vec<String>> {
    let dir = project.ralph_dir();
    let mut written = Vec::new();
    let mut write = |path: PathBuf, text: &str| -> Result<()> {
        crate::fsutil::atomic_write(&path, text.as_bytes(), 0o644)
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path.display().to_string());
        Ok(())
    };
    let prompt = dir.join("prompt.md");
    if std::fs::symlink_metadata(&prompt).is_err() {
        write(prompt, template("prompt.md"))?;
    }
    write(
        dir.join("readme.md"),
        draft.readme.as_deref().unwrap_or_default(),
    )?;
    write(project.spec(), draft.spec.as_deref().unwrap_or_default())?;
    super::init::ensure_gitignore(project)?;
    Ok(written)
}
