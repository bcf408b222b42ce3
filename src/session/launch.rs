//! The command line and environment of one agent session (whichever the
//! agent: its own arguments from `agent::*`, the same environment and the
//! prompt on stdin).

use anyhow::{Context, Result};

use crate::agent::stream::Shown;
use crate::confinement::Confinement;
use crate::handoff::{self, env};
use crate::session::{Launch, PrintIo, Seat, Sessions};
use crate::work::project::Project;

/// What a run starts its sessions with: the session part of its settings,
/// its confinement, and what each session hands on to `ralph complete`.
pub struct Given<'a> {
    pub sessions: &'a Sessions,
    pub confined: Option<&'a Confinement>,
    pub gate: Option<&'a crate::work::gate::Gate>,
    /// A worker's step (`RALPH_STEP`).
    pub step: Option<&'a str>,
    pub protect: &'a [String],
    /// ralph holds a GitHub token of its own in this run (`--push`, `--pr`,
    /// a worker's push): its sessions, which run the model's commands, get
    /// none.
    pub withhold_token: bool,
}

pub struct Who<'a> {
    /// The run's folder (its real path: the session is told it).
    pub run_dir: &'a std::path::Path,
    /// Where the session's stream is saved.
    pub stream_file: std::path::PathBuf,
    pub iteration: u32,
    pub session: u32,
    /// The run's secret (see `handoff::session_token`).
    pub secret: &'a str,
    /// The commit the run began at (for what it protects).
    pub base: Option<String>,
}

/// What every session's environment carries: that a loop started it (for
/// the hook), the run folder, and what `ralph complete` in the session checks
/// (the gate, the protected files).
fn environment(g: &Given, who: &Who) -> Vec<(String, String)> {
    let mut env = vec![
        (env::LOOP.to_string(), "1".to_string()),
        (env::RUN_DIR.to_string(), who.run_dir.display().to_string()),
        (env::ITERATION.to_string(), who.iteration.to_string()),
        (
            env::GATE.to_string(),
            crate::work::gate::Gate::handed(g.gate),
        ),
    ];
    if let Some(step) = g.step {
        env.push((env::STEP.to_string(), step.to_string()));
    }
    if let (false, Some(base)) = (g.protect.is_empty(), who.base.as_deref()) {
        let handed = serde_json::json!({"base": base, "globs": g.protect});
        env.push((env::PROTECT.to_string(), handed.to_string()));
    }
    env
}

/// Confined Codex makes its sandbox helper in TMPDIR, and silently runs no
/// command at all when its home is under that folder (~/.codex is, when
/// /tmp holds the home): its own TMPDIR in ralph's state folder.
fn codex_scratch(
    g: &Given,
    seat: Seat,
    env: &mut Vec<(String, String)>,
) -> Result<Option<tempfile::TempDir>> {
    if !seat.agent.caps().sandbox_own_tmpdir || g.confined.is_none() {
        return Ok(None);
    }
    let dir = crate::trust::store::scratch_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let t = tempfile::Builder::new().prefix("codex-").tempdir_in(&dir)?;
    env.push(("TMPDIR".into(), t.path().display().to_string()));
    Ok(Some(t))
}

/// A confined agent with no sandbox of its own (`Confine::Bwrap`): its
/// command line inside ralph's bubblewrap, and the private TMPDIR that
/// lives as long as the session. Its state folders are made first: one
/// that does not exist could not be made inside.
fn in_bwrap(
    project: &Project,
    c: &crate::confinement::Confinement,
    (seat, git): (Seat, Option<&crate::confinement::GitDirs>),
    args: Vec<String>,
) -> Result<(Vec<String>, tempfile::TempDir, Vec<std::path::PathBuf>)> {
    use crate::sandbox::confine;
    let state = seat.agent.state_dirs_here();
    for d in &state {
        std::fs::create_dir_all(d).with_context(|| {
            format!(
                "cannot create {}, where {} keeps its state (a confined session could not)",
                d.display(),
                seat.agent
            )
        })?;
    }
    let (kept, fresh) = kept_and_fresh(seat.agent)?;
    let mut writable = state;
    // A main checkout whose git folder lies elsewhere (`git init
    // --separate-git-dir`) writes it as its `.git`; a linked worktree's
    // commits, parts of it (`confine::agent_over`).
    let real_root = std::fs::canonicalize(&project.root).unwrap_or(project.root.clone());
    writable.extend(
        git.iter()
            .filter(|g| g.own == g.common && !g.common.starts_with(&real_root))
            .map(|g| g.common.clone()),
    );
    let mut over = confine::agent_over(&project.root, git);
    over.extend(kept.into_iter().map(confine::Over::ReadOnly));
    let mut anchors = vec![project.root.as_path()];
    anchors.extend(git.iter().map(|g| g.common.as_path()));
    let over = confine::unlinked_pins(over, &anchors);
    let room = confine::Room { writable, over };
    let tmp = tempfile::Builder::new()
        .prefix(&format!("ralph-{}-", seat.agent))
        .tempdir()
        .context("cannot make the confined session's temporary folder")?;
    let argv = confine::agent_argv(
        c,
        &room,
        (&project.root, tmp.path()),
        &confine::Host::read(),
        (seat.program, &args),
    );
    Ok((argv, tmp, fresh))
}

/// A confined agent's program started as its sessions start, inside the
/// sandbox ralph runs them in (`in_bwrap`, the loop's own command line),
/// with `args` (`--version`): what it printed and how it ended, `None`
/// where it did not end within `within`. What the start made that a
/// session's end removes is removed too. `Ok(None)` when ralph does not
/// confine the agent itself (its own sandbox confines what it runs, not
/// its program).
pub fn try_confined(
    project: &Project,
    c: &Confinement,
    (agent, program): (crate::agent::Agent, &std::path::Path),
    args: &[&str],
    within: std::time::Duration,
) -> Result<Option<Option<std::process::Output>>> {
    if agent.caps().confine != crate::agent::Confine::Bwrap {
        return Ok(None);
    }
    let seat = Seat {
        agent,
        program,
        model: None,
        extra: &[],
    };
    let git = git_dirs(&project.root);
    let args = args.iter().map(|a| a.to_string()).collect();
    let (argv, _tmp, fresh) = in_bwrap(project, c, (seat, git.as_ref()), args)?;
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]).current_dir(&project.root);
    let out = crate::procs::output_within(cmd, within);
    super::remove_planted(&fresh);
    Ok(Some(out))
}

/// What runs code later (the agent's `kept_paths`): those there, to bind
/// read-only, and those not, to remove after the session. What the agent
/// makes itself as it starts is made first, so that it is among the first.
/// (ralph's own config is bound read-only with the project's control
/// files; one the session makes where there was none, the shell removes,
/// whatever the agent.)
fn kept_and_fresh(
    agent: crate::agent::Agent,
) -> Result<(Vec<std::path::PathBuf>, Vec<std::path::PathBuf>)> {
    for (path, text, mode) in agent.made_at_start(crate::fsutil::dir_var) {
        if std::fs::symlink_metadata(&path).is_err() {
            crate::fsutil::atomic_write(&path, text.as_bytes(), mode)
                .with_context(|| format!("cannot make {}", path.display()))?;
        }
    }
    Ok(agent
        .kept_paths(crate::fsutil::dir_var)
        .into_iter()
        .partition(|p| std::fs::symlink_metadata(p).is_ok()))
}

/// Where git keeps the repository of the checkout at `root`, as git
/// itself says before the session (a `.git` file's text is git's to read,
/// not ralph's); `None` outside a repository.
fn git_dirs(root: &std::path::Path) -> Option<crate::confinement::GitDirs> {
    let out = crate::git::at(root)
        .run(
            &[
                "rev-parse",
                "--path-format=absolute",
                "--git-common-dir",
                "--git-dir",
            ],
            &[],
        )
        .ok()?;
    let mut dirs = out
        .lines()
        .map(|l| std::fs::canonicalize(l).unwrap_or_else(|_| l.into()));
    let (common, own) = (dirs.next()?, dirs.next()?);
    let mut modules: Vec<std::path::PathBuf> = std::fs::read_dir(common.join("modules"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    modules.sort();
    Some(crate::confinement::GitDirs {
        common,
        own,
        modules,
        dot_git_file: std::fs::symlink_metadata(root.join(".git")).is_ok_and(|m| m.is_file()),
    })
}

/// Print mode: `claude -p --output-format stream-json --verbose`, the prompt
/// on stdin. Interactive: the prompt as the argument, the terminal claude's.
pub fn session(
    project: &Project,
    g: &Given,
    seat: Seat,
    who: Who,
    show: Box<dyn FnMut(Shown) + Send>,
) -> Result<Launch> {
    let env = environment(g, &who);
    let token = handoff::session_token(who.secret, who.session);
    let print = if g.sessions.interactive {
        None
    } else {
        Some(PrintIo {
            prompt: g.sessions.prompt.clone(),
            stream_file: who.stream_file,
            show,
        })
    };
    assemble(project, g, seat, (env, token), print)
}

/// One print-mode session outside any loop (`ralph plan`): the prompt
/// file on stdin, its stream saved to `stream_file` and shown by `show`.
/// None of the loop's environment: its Stop hook and `ralph complete`
/// see no loop.
pub fn lone(
    project: &Project,
    g: &Given,
    seat: Seat,
    (secret, stream_file): (&str, std::path::PathBuf),
    show: Box<dyn FnMut(Shown) + Send>,
) -> Result<Launch> {
    let print = PrintIo {
        prompt: g.sessions.prompt.clone(),
        stream_file,
        show,
    };
    let token = handoff::session_token(secret, 1);
    assemble(project, g, seat, (Vec::new(), token), Some(print))
}

/// What a confined session's sandbox is made of, read off the machine
/// once for its every part: the user's credential stores, where git keeps
/// the repository; and a name of the session's own.
fn sandbox_parts(
    project: &Project,
    g: &Given,
) -> (
    Vec<crate::confinement::Secret>,
    Option<crate::confinement::GitDirs>,
    String,
) {
    let own_name = format!("ralph-{}", &crate::trust::store::random_token()[..16]);
    match g.confined {
        Some(_) => (
            crate::sandbox::credentials::here(),
            git_dirs(&project.root),
            own_name,
        ),
        None => (Vec::new(), None, own_name),
    }
}

/// The agent's command line and environment around `env`, in ralph's
/// bubblewrap where it is confined by ralph.
fn assemble(
    project: &Project,
    g: &Given,
    seat: Seat,
    (mut env, token): (Vec<(String, String)>, String),
    print: Option<PrintIo>,
) -> Result<Launch> {
    let (secrets, git, own_name) = sandbox_parts(project, g);
    let ask = crate::agent::Ask {
        interactive: print.is_none(),
        confined: g.confined,
        sandbox: g.confined.map(|c| {
            crate::sandbox::confine::settings(c, &token, &project.root, &secrets).to_string()
        }),
        permission_mode: g.sessions.permission_mode,
        model: seat.model,
        extra: seat.extra,
        root: &project.root,
        // Asked as each session starts: a session may have written them.
        project_files: crate::trust::approval::agent_files_approved(&project.root),
        project_folders: &crate::trust::codex_files::folder_keys(&project.root),
        secrets: &secrets,
        git: git.as_ref(),
        own_name: &own_name,
    };
    let mut args = seat.agent.arguments(&ask);
    env.extend(seat.agent.env(&ask));
    let mut scratch = codex_scratch(g, seat, &mut env)?;
    if print.is_none() {
        let prompt = crate::fsutil::read_optional(&g.sessions.prompt)?
            .with_context(|| format!("{} is gone", g.sessions.prompt.display()))?;
        args.push(prompt);
    }
    let mut program = seat.program.to_path_buf();
    let mut not_after = Vec::new();
    if let Some(c) = g.confined
        && seat.agent.caps().confine == crate::agent::Confine::Bwrap
    {
        let (argv, tmp, fresh) = in_bwrap(project, c, (seat, git.as_ref()), args)?;
        program = std::path::PathBuf::from(&argv[0]);
        args = argv[1..].to_vec();
        scratch = Some(tmp);
        not_after = fresh;
    }
    Ok(Launch {
        program,
        args,
        env,
        cwd: project.root.clone(),
        print,
        timeout: g.sessions.timeout,
        token,
        scratch,
        not_after,
        agent: seat.agent,
        unset: ralphs_token_vars(g),
        confined: g.confined.is_some(),
    })
}

/// ralph's own GitHub token (`--push`, `--pr`, a worker's push) is ralph's:
/// its sessions run the model's commands.
fn ralphs_token_vars(g: &Given) -> Vec<&'static str> {
    if g.withhold_token {
        vec!["GH_TOKEN", "GITHUB_TOKEN"]
    } else {
        Vec::new()
    }
}

/// The sandbox knows no agent: what confining one takes is told it from
/// the agent's row.
impl From<crate::agent::Agent> for crate::sandbox::confine::ToConfine {
    fn from(a: crate::agent::Agent) -> Self {
        use crate::agent::Confine;
        use crate::sandbox::confine::ConfinedBy;
        let c = a.caps();
        let by = match c.confine {
            Confine::Own => ConfinedBy::Own {
                needs_bwrap: c.sandbox_needs_bwrap,
            },
            Confine::Bwrap => ConfinedBy::Bwrap,
            Confine::No => ConfinedBy::No,
        };
        crate::sandbox::confine::ToConfine { name: a.name(), by }
    }
}
