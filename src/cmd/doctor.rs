use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

use super::Run;
use crate::agent::{Agent, Confine, Login};
use crate::config::Options;
use crate::exit::ExitStatus;
use crate::outln;
use crate::settings::target as hook_target;
use crate::trust::approval::{self, Standing};
use crate::work::budget::{self, BUDGETS, TOTAL_BUDGET};
use crate::work::project::Project;
use crate::work::spec;
use crate::{fsutil, settings};

/// Check that ralph can run here, and say how to fix what is off.
///
/// Checks: claude is installed (and its version); the Stop hook is installed
/// (in which settings file) and points at an existing ralph; the /ralph-setup
/// command is installed; a task tracker (br or bd) is available; RALPH_LOOP is
/// not exported in your shell (it would end every interactive session); the
/// project is in a git repository (the loop measures progress with git); the
/// project's ralph files are present and within their token budget; what
/// the project's files would run is approved (`ralph trust`; a configured
/// claude is named, and run for its version only once approved); and that
/// a loop here could finish at all (`ralph loop` refuses to start one that
/// could not: a template spec, a tracker missing or not initialised, tasks
/// it does not know, gate programs not found). Exits 1 if any check fails.
#[derive(Debug, Args)]
pub struct Doctor {
    /// Print the checks as JSON.
    #[arg(long)]
    json: bool,
}

/// One check's result, as printed and as `--json` gives it.
#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    ok: bool,
    detail: String,
    /// The command (or action) that fixes a failed check.
    fix: Option<String>,
}

/// A check's verdict before it is named.
struct Verdict {
    ok: bool,
    detail: String,
    fix: Option<String>,
}

fn pass(detail: impl Into<String>) -> Verdict {
    Verdict {
        ok: true,
        detail: detail.into(),
        fix: None,
    }
}

fn fail(detail: impl Into<String>, fix: &str) -> Verdict {
    Verdict {
        ok: false,
        detail: detail.into(),
        fix: Some(fix.to_string()),
    }
}

fn verdict(ok: bool, detail: impl Into<String>, fix: &str) -> Verdict {
    if ok { pass(detail) } else { fail(detail, fix) }
}

/// What the checks look at, read once: the project, its config, where the
/// config stands, and ralph's hooks in Claude Code's settings.
struct Here {
    project: Project,
    cfg: Result<Options>,
    standing: Option<Standing>,
    hooks: Vec<(hook_target::Scope, PathBuf, String)>,
    via_plugin: bool,
}

/// How a check is made.
type Make = fn(&Here) -> Verdict;

/// Every check, in the order shown. A new check is a row here and a
/// function below. Doctor is read-only: nothing a repository chose is run.
const CHECKS: [(&str, Make); 13] = [
    ("claude", claude),
    ("agents", agents),
    ("review", review),
    ("hook", hook),
    ("slash-command", slash_command),
    ("tracker", tracker),
    ("environment", environment),
    ("git", git),
    ("confined", confined),
    ("config", config),
    ("gate", gate),
    ("project", project_files),
    ("finish", finish),
];

fn claude_version(bin: &Path) -> Option<String> {
    let ask = || {
        let mut c = Command::new(bin);
        c.arg("--version");
        c
    };
    let within = Duration::from_secs(10);
    let said = crate::procs::stdout_within(ask(), within)?;
    // pi says its version on stderr.
    let said = match said.trim() {
        "" => crate::procs::stderr_within(ask(), within)?,
        _ => said,
    };
    Some(said.trim().to_string()).filter(|v| !v.is_empty())
}

/// An agent's program as the loop would run it: the config's (named, and
/// run for its version only once approved), else the one on PATH. Its
/// version and where it is, or the failed verdict.
fn agent_version(h: &Here, agent: Agent) -> Result<(String, PathBuf), Verdict> {
    let configured = h
        .cfg
        .as_ref()
        .ok()
        .and_then(|c| c.program_of(agent).cloned());
    let program = match &configured {
        Some(p) if p.components().count() > 1 => Some(h.project.root.join(p)),
        Some(p) => which::which(p).ok(),
        None => which::which(agent.name()).ok(),
    };
    let Some(p) = program else {
        return Err(fail(format!("{agent} is not on PATH"), agent.install()));
    };
    if configured.is_some() && h.standing != Some(Standing::Approved) {
        return Err(fail(
            format!(
                "{} (named by .ralph/config.toml, not approved: not run)",
                p.display()
            ),
            "read .ralph/config.toml, then `ralph trust`",
        ));
    }
    match claude_version(&p) {
        Some(v) => Ok((v, p)),
        None => Err(fail(
            format!("{} does not answer --version", p.display()),
            agent.install(),
        )),
    }
}

/// The agents a loop here runs: the config's agent, its fallbacks, and
/// its reviewer's (Claude Code when the config does not read).
fn agents_used(h: &Here) -> Vec<Agent> {
    let Ok(cfg) = h.cfg.as_ref() else {
        return vec![Agent::default()];
    };
    let own = cfg.agent.unwrap_or_default();
    let mut used = vec![own];
    used.extend(cfg.fallback.iter().flatten().copied());
    if cfg.review.on() {
        used.push(cfg.review.agent.unwrap_or(own));
    }
    used
}

/// What a check of the default agent's own (its program, its Stop hook)
/// says where no loop here runs it.
fn claude_unused(h: &Here) -> Option<Verdict> {
    let used = agents_used(h);
    (!used.contains(&Agent::default())).then(|| {
        pass(format!(
            "not used here: the config runs {}",
            used.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// The claude the loop would run.
fn claude(h: &Here) -> Verdict {
    if let Some(v) = claude_unused(h) {
        return v;
    }
    match agent_ready(h, Agent::default()) {
        Ok(said) => pass(said),
        Err(failed) => failed,
    }
}

/// An agent's program as the loop would run it (`agent_version`), and
/// whether it can reach its model (its login or key, asked of the agent
/// without a session): "<version> at <path>, <login>", or the failed
/// verdict with the fix.
fn agent_ready(h: &Here, agent: Agent) -> Result<String, Verdict> {
    let (v, p) = agent_version(h, agent)?;
    let at = format!("{v} at {}", p.display());
    // A failure stands alone on its line: whose it is, said.
    login_said(&at, agent.login(&p, &h.project.root)).map_err(|mut v| {
        v.detail = format!("{agent}: {}", v.detail);
        v
    })
}

/// What a login adds to the agent's `at` ("<version> at <path>"). A key
/// is named by its variable, never shown.
fn login_said(at: &str, login: Login) -> Result<String, Verdict> {
    match login {
        Login::In(how) => Ok(format!("{at}, {how}")),
        Login::Key(var) => Ok(format!("{at}, key set ({var})")),
        Login::Out { why, fix } => Err(fail(format!("{at}, {why}"), &fix)),
        Login::Unknown(why) => Ok(format!("{at} (its login could not be asked: {why})")),
    }
}

/// The other agents the config names (`agent`, `fallback`): each one's
/// program, as `claude` checks claude's; gemini not asked to run confined.
fn agents(h: &Here) -> Verdict {
    let Ok(cfg) = h.cfg.as_ref() else {
        return pass("(the config does not read; see the config check)");
    };
    let named: Vec<Agent> = cfg
        .agent
        .into_iter()
        .chain(cfg.fallback.iter().flatten().copied())
        .filter(|&a| a != Agent::default())
        .collect();
    if named.is_empty() {
        return pass("no other agent configured (`agent = \"codex\"`, `fallback = [...]`)");
    }
    let mut said = Vec::new();
    for agent in named {
        let ready = match agent_ready(h, agent) {
            Ok(said) => said,
            Err(failed) => return failed,
        };
        if cfg.confined
            && let Some((why, fix)) = unconfinable(agent)
        {
            return fail(format!("{agent} cannot run confined here: {why}"), &fix);
        }
        let programs = crate::work::tracker::session_programs(cfg.tracker, &h.project.root);
        if let Some(missing) = agent.unfound(&programs)
            && !missing.is_empty()
        {
            return fail(
                format!("{agent}'s shell does not find {}", missing.join(", ")),
                &agent.unfound_fix(&missing),
            );
        }
        said.push(format!("{agent}: {ready}"));
    }
    pass(said.join("; "))
}

/// The reviewer `[review]` asks for: its `when`, its prompt file, and its
/// agent's program, as `claude` checks claude's.
fn review(h: &Here) -> Verdict {
    use crate::work::review::When;
    let Ok(cfg) = h.cfg.as_ref() else {
        return pass("(the config does not read; see the config check)");
    };
    let r = &cfg.review;
    if !r.on() {
        return pass("no reviewer configured (`[review]` in .ralph/config.toml, or --review)");
    }
    let when = match When::parse(r.when.as_deref().unwrap_or("complete")) {
        Ok(w) => w,
        Err(e) => return fail(e, "in [review]: when = \"complete\" or \"step\""),
    };
    let agent = r.agent.or(cfg.agent).unwrap_or_default();
    if cfg.confined
        && let Some((why, fix)) = unconfinable(agent)
    {
        return fail(
            format!("the reviewer {agent} cannot run confined here: {why}"),
            &fix,
        );
    }
    if let Some(p) = &r.prompt {
        let inside = p.is_relative()
            && !p
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
        let text = crate::fsutil::read_optional(&h.project.root.join(p))
            .ok()
            .flatten();
        if !inside || text.is_none_or(|t| t.trim().is_empty()) {
            return fail(
                format!(
                    "[review] prompt = {:?}: not a file with text inside the project",
                    p.display()
                ),
                "write it, or drop `prompt` for ralph's own reviewer instructions",
            );
        }
    }
    match agent_ready(h, agent) {
        Ok(ready) => pass(format!(
            "{agent} reviews {}: {ready}",
            match when {
                When::Complete => "each COMPLETE",
                When::Step => "each checked step",
            },
        )),
        Err(failed) => failed,
    }
}

fn hook(h: &Here) -> Verdict {
    if let Some(v) = claude_unused(h) {
        return v;
    }
    let Some((role, path, cmd)) = h.hooks.first() else {
        return if h.via_plugin && which::which("ralph").is_ok() {
            pass("through the ralph plugin (ralph is on PATH)")
        } else if h.via_plugin {
            fail(
                "the ralph plugin is enabled but `ralph` is not on PATH",
                "put the ralph binary on PATH: ./install.sh in the ralph source folder",
            )
        } else {
            fail(
                "no ralph Stop hook in the user, project or local settings",
                "ralph install-hook",
            )
        };
    };
    let bin = settings::shell_words(cmd)
        .and_then(|w| w.into_iter().next())
        .unwrap_or_default();
    let exists = if bin.contains('/') {
        Path::new(&bin).is_file()
    } else {
        which::which(&bin).is_ok()
    };
    if exists {
        pass(format!(
            "in the {} settings {}: {cmd}",
            role.word(),
            path.display()
        ))
    } else {
        fail(
            format!(
                "the hook in {} runs {bin}, which does not exist",
                path.display()
            ),
            "ralph install-hook",
        )
    }
}

fn slash_command(h: &Here) -> Verdict {
    let own = agents_used(h)[0];
    let installed = own.setup_command().ok().map(|(p, _, _)| p);
    // The default agent's goes unnamed, as `ralph install-command` installs
    // it without `--agent`.
    let (of, flag) = if own == Agent::default() {
        (String::new(), String::new())
    } else {
        (format!(" for {own}"), format!(" --agent {own}"))
    };
    match (
        installed.filter(|p| p.is_file()),
        own.caps().plugin && h.via_plugin,
    ) {
        (Some(p), _) => pass(format!("/ralph-setup{of} from {}", p.display())),
        (None, true) => pass("/ralph:ralph-setup from the ralph plugin"),
        (None, false) => fail(
            format!("/ralph-setup is not installed{of}"),
            &format!("ralph install-command{flag}"),
        ),
    }
}

fn tracker(h: &Here) -> Verdict {
    let kind = h.cfg.as_ref().ok().and_then(|c| c.tracker);
    match crate::work::tracker::health(kind, &h.project) {
        crate::work::tracker::Health::Pass(said) => pass(said),
        crate::work::tracker::Health::Fail(what, fix) => fail(what, &fix),
    }
}

fn environment(_: &Here) -> Verdict {
    let exported = std::env::var("RALPH_LOOP").is_ok_and(|v| v == "1");
    verdict(
        !exported,
        if exported {
            "RALPH_LOOP=1 is set in your shell: every claude you start would end after its first turn"
        } else {
            "RALPH_LOOP is not set in your shell"
        },
        "unset RALPH_LOOP, and remove its export from your shell profile",
    )
}

fn git(h: &Here) -> Verdict {
    let root = h.project.root.display();
    if crate::run::progress::in_git(&h.project.root) {
        // Sessions commit, and so does ralph (its notes at a run's end).
        // As git itself works it out (config, or EMAIL and GIT_* variables).
        let who = |k: &str| crate::git::at(&h.project.root).ok(&["var", k], &[]);
        if !(who("GIT_AUTHOR_IDENT") && who("GIT_COMMITTER_IDENT")) {
            return fail(
                format!(
                    "{root} is in a git repository, but git has no identity to commit with (user.name, user.email)"
                ),
                "git config --global user.name \"Your Name\" && git config --global user.email you@example.com",
            );
        }
        pass(format!(
            "{root} is in a git repository, commits as its identity"
        ))
    } else {
        fail(
            format!(
                "{root} is not in a git repository: `ralph loop` measures progress with git and refuses to start"
            ),
            "git init && git add -A && git commit -m start",
        )
    }
}

/// Why `agent` cannot run confined here, and the fix.
fn unconfinable(agent: Agent) -> Option<(String, String)> {
    let why = crate::sandbox::confine::cannot_confine(agent, |p| which::which(p).is_ok())?;
    let fix = match agent.caps().confine {
        Confine::No => "drop confined = true, or use agent = \"codex\" or \"claude\"",
        Confine::Bwrap => "apt-get install bubblewrap (or your system's package of it)",
        Confine::Own => "apt-get install bubblewrap socat (or your system's packages of them)",
    };
    Some((why, fix.into()))
}

/// Can the run's agents (Claude Code by default) be confined here? A
/// failure only when the project asks for confinement. What each agent's
/// confinement keeps in is said either way. An agent ralph confines itself
/// is started there (`--version`), as its sessions start: one that cannot
/// run inside (installed where the sandbox empties, say) is named, with
/// what it said.
fn confined(h: &Here) -> Verdict {
    let wants = h.cfg.as_ref().is_ok_and(|c| c.confined);
    let means = Agent::ALL
        .iter()
        .map(|a| a.confined_means())
        .collect::<Vec<_>>()
        .join("; ");
    let mut named: Vec<Agent> = Vec::new();
    let listed: Vec<Agent> = h.cfg.as_ref().map_or_else(
        |_| vec![Agent::default()],
        |c| {
            std::iter::once(c.agent.unwrap_or_default())
                .chain(c.fallback.iter().flatten().copied())
                .chain(c.review.agent)
                .collect()
        },
    );
    for a in listed {
        if !named.contains(&a) {
            named.push(a);
        }
    }
    let cannot = |why: String, fix: &str| {
        verdict(
            !wants,
            format!(
                "`ralph loop --confined` cannot run here{}: {why}",
                if wants {
                    " (and .ralph/config.toml asks for it)"
                } else {
                    ""
                }
            ),
            fix,
        )
    };
    if let Some((why, fix)) = named.iter().copied().find_map(unconfinable) {
        return cannot(why, &fix);
    }
    let mut started = Vec::new();
    for agent in named {
        match started_confined(h, agent) {
            Ok(Some(())) => started.push(agent.name()),
            Ok(None) => {}
            Err(why) => {
                let fix = format!(
                    "install {agent} where the sandbox sees it: not under /tmp, /run or /var/tmp (it empties them), nor behind a launcher that runs a program there ({})",
                    agent.install()
                );
                return cannot(why, &fix);
            }
        }
    }
    let ran = match started.as_slice() {
        [] => String::new(),
        s => format!("; {} started inside ralph's bubblewrap", s.join(", ")),
    };
    pass(format!("`ralph loop --confined` works here ({means}){ran}"))
}

/// `agent`'s program (as the loop would run it) started with `--version`
/// inside the sandbox its confined sessions run in. `Ok(None)`: not asked
/// (ralph does not confine it itself, or its program is the `agents`
/// check's to find or approve); `Err`: what went wrong.
fn started_confined(h: &Here, agent: Agent) -> Result<Option<()>, String> {
    if agent.caps().confine != Confine::Bwrap {
        return Ok(None);
    }
    let Ok((_, program)) = agent_version(h, agent) else {
        return Ok(None);
    };
    let c = h
        .cfg
        .as_ref()
        .map(|c| crate::confinement::Confinement {
            allow_write: c.allow_write.clone().unwrap_or_default(),
            allow_domains: c.allow_domains.clone().unwrap_or_default(),
        })
        .unwrap_or_default();
    let within = Duration::from_secs(20);
    let out = crate::session::launch::try_confined(
        &h.project,
        &c,
        (agent, &program),
        &["--version"],
        within,
    )
    .map_err(|e| format!("{agent}'s sandbox could not be made: {e:#}"))?;
    match out {
        None => Ok(None),
        Some(Some(o)) if o.status.success() => Ok(Some(())),
        Some(Some(o)) => Err(format!(
            "{} does not run inside ralph's bubblewrap ({}): {}",
            program.display(),
            o.status,
            last_words(&o.stderr, &o.stdout)
        )),
        Some(None) => Err(format!(
            "{} does not answer --version inside ralph's bubblewrap within {}s",
            program.display(),
            within.as_secs()
        )),
    }
}

/// What a program that failed said last: its last line on stderr, else
/// on stdout (one line, cut short).
fn last_words(stderr: &[u8], stdout: &[u8]) -> String {
    let last = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(String::from)
    };
    let said = last(stderr)
        .or_else(|| last(stdout))
        .unwrap_or_else(|| "it said nothing".into());
    crate::output::visible_line(&said)
        .chars()
        .take(300)
        .collect()
}

/// Is what the project's files would run approved? (Codex's, pi's and
/// opencode's files that a switch disables refuse nothing: said, never failed.)
fn config(h: &Here) -> Verdict {
    let path = h.project.config();
    let (cfg, standing) = match (&h.cfg, &h.standing) {
        (Err(e), _) => return fail(format!("{e:#}"), "fix .ralph/config.toml"),
        (Ok(c), Some(s)) => (c, s),
        (Ok(_), None) => unreachable!("a loaded config has a standing"),
    };
    let parts = approval::project_parts(&h.project.root, cfg);
    let agents = switchable_files(&h.project.root);
    let exists = path.exists();
    if parts.is_empty() {
        let nothing = if exists {
            format!(
                "{}: nothing in it runs programs or allows more",
                path.display()
            )
        } else {
            format!(
                "no {}: nothing runs programs or allows more",
                path.display()
            )
        };
        return pass(match agents {
            Some(a) => format!("{nothing}; {a}"),
            None => nothing,
        });
    }
    let ok = !matches!(standing, Standing::NotApproved { .. });
    verdict(
        ok,
        format!(
            "{} {}: {}{}{}",
            if exists {
                format!("{} and the project's agent files", path.display())
            } else {
                "the project's agent files".to_string()
            },
            standing.text(),
            approval::summary(&parts),
            if ok {
                ""
            } else {
                " (`ralph loop` refuses to run until approved)"
            },
            agents.map(|a| format!("; {a}")).unwrap_or_default()
        ),
        "read them (`ralph trust` shows them), then `ralph trust`",
    )
}

/// Codex's, pi's and opencode's files that a switch turns off, by name (a plugin's
/// whole text is no line to read here), and their standing; `None`: none.
fn switchable_files(root: &Path) -> Option<String> {
    let switchable = approval::switchable_parts(root);
    (!switchable.is_empty()).then(|| {
        let s = approval::switchable_standing_of(root, &switchable);
        format!(
            "Codex's, pi's and opencode's files {}: {}{}",
            s.text(),
            switchable
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if s == Standing::Approved {
                ""
            } else {
                " (disabled until approved: `ralph trust`)"
            }
        )
    })
}

/// The gate's commands: shown, and whether their programs exist; never run.
fn gate(h: &Here) -> Verdict {
    const WHERE: &str = "install them, or change [gate] commands in .ralph/config.toml";
    // A config that does not read is the config check's to say, once, with
    // its fix: the gate's own error would be the same text again, with a
    // fix pointing at [gate] when the fault may be anywhere in the file.
    if h.cfg.is_err() {
        return pass("(the config does not read; see the config check)");
    }
    match crate::work::gate::Gate::of(&h.project) {
        Err(e) => fail(format!("{e:#}"), "fix [gate] in .ralph/config.toml"),
        Ok(None) => pass(
            "no [gate] commands: COMPLETE rests on the spec and tracker alone (add `[gate] commands = [\"...\"]` to .ralph/config.toml)",
        ),
        Ok(Some(g)) => {
            let missing = crate::work::gate::missing_programs(&g, &h.project.root);
            let list = g
                .commands
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if missing.is_empty() {
                pass(format!("COMPLETE must pass {list}"))
            } else {
                fail(format!("{list}: not found: {}", missing.join(", ")), WHERE)
            }
        }
    }
}

/// The project's ralph files: there, readable, within budget, and a spec
/// without broken checkboxes.
fn project_files(h: &Here) -> Verdict {
    let dir = h.project.ralph_dir();
    let (mut missing, mut over, mut unreadable) = (Vec::new(), Vec::new(), Vec::new());
    let mut total = 0;
    let mut problems = 0;
    for (name, limit) in BUDGETS {
        // A file that cannot be read is a failed check, not an abort.
        match fsutil::read_optional(&dir.join(name)) {
            Err(e) => unreadable.push(format!("{e:#}")),
            Ok(None) => missing.push(name),
            Ok(Some(t)) => {
                if name == "spec.md" {
                    problems = spec::parse(&t).problems.len();
                }
                let n = budget::estimate(&t);
                total += n;
                if n > limit {
                    over.push(format!("{name} ~{n}/{limit}"));
                }
            }
        }
    }
    if total > TOTAL_BUDGET {
        over.push(format!("total ~{total}/{TOTAL_BUDGET}"));
    }
    if !unreadable.is_empty() {
        fail(
            unreadable.join("; "),
            "make them plain UTF-8 text files (`ralph init --force` writes fresh ones)",
        )
    } else if !missing.is_empty() {
        fail(
            format!("missing in {}: {}", dir.display(), missing.join(", ")),
            "ralph init (or /ralph-setup in Claude Code)",
        )
    } else if !over.is_empty() {
        fail(
            format!("over the token budget: {}", over.join(", ")),
            "shorten them; `ralph budget` shows the figures",
        )
    } else if problems > 0 {
        fail(
            format!("{problems} broken checkbox line(s) in the spec"),
            "ralph status (lists them with line numbers)",
        )
    } else {
        pass(format!(
            "spec, readme and prompt in {} (~{total} tokens)",
            dir.display()
        ))
    }
}

/// Could a loop here ever finish? What `ralph loop` refuses before its
/// first session: a template spec, a tracker missing or not set up, tasks it
/// does not know, gate programs not found.
fn finish(h: &Here) -> Verdict {
    // A clone's `tracker = "github"` calls GitHub only once approved.
    let tracker = match crate::work::tracker::configured(None, &h.project) {
        Ok(t) => t,
        Err(e) => return fail(e.to_string(), "read .ralph/config.toml, then `ralph trust`"),
    };
    let checked = match crate::work::completion::check(&h.project.spec(), &h.project.root, tracker)
    {
        Ok(c) => c,
        Err(e) => return fail(format!("{e:#}"), "make .ralph/spec.md a readable text file"),
    };
    let missing = match crate::work::gate::Gate::of(&h.project) {
        Ok(Some(g)) => crate::work::gate::missing_programs(&g, &h.project.root),
        _ => Vec::new(),
    };
    let found = crate::work::readiness::hindrances(&checked, &missing);
    let fatal: Vec<_> = found.iter().filter(|h| h.fatal()).collect();
    if let Some(first) = fatal.first() {
        let what: Vec<String> = fatal.iter().map(|h| h.to_string()).collect();
        return fail(
            format!("a loop here could never finish: {}", what.join("; ")),
            first.fix(),
        );
    }
    let steps = checked.as_ref().map_or(0, |j| j.spec.total());
    match found.len() {
        0 => pass(format!(
            "a loop here can finish: {}, nothing in the way",
            crate::output::counted(steps as u64, "step", "steps")
        )),
        n => pass(format!(
            "a loop here can finish ({steps} step(s)); worth fixing ({n}): {}",
            found
                .iter()
                .map(|h| h.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

impl Run for Doctor {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let cfg = crate::config::load(&project.config());
        let standing = cfg
            .as_ref()
            .ok()
            .map(|c| approval::standing(&project.root, c));
        let (hooks, via_plugin) = hook_target::installed_hooks(&project.root);
        let here = Here {
            project,
            cfg,
            standing,
            hooks,
            via_plugin,
        };
        let checks: Vec<Check> = CHECKS
            .iter()
            .map(|(name, run)| {
                let v = run(&here);
                Check {
                    name,
                    ok: v.ok,
                    detail: v.detail,
                    fix: v.fix,
                }
            })
            .collect();
        let failed = checks.iter().filter(|c| !c.ok).count();
        if self.json {
            let report = serde_json::json!({"ok": failed == 0, "checks": checks});
            outln!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            render(&checks, failed);
        }
        Ok(if failed == 0 {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        })
    }
}

/// The checks as text: one line each, its fix under a failing one.
fn render(checks: &[Check], failed: usize) {
    for c in checks {
        let verdict = if c.ok { "ok  " } else { "FAIL" };
        // A detail of several lines (a TOML error with its snippet) keeps
        // them, each under the first.
        let mut lines = c.detail.lines().map(crate::output::visible_line);
        outln!(
            "{verdict} {:<14} {}",
            c.name,
            lines.next().unwrap_or_default()
        );
        for l in lines {
            outln!("     {:<14} {l}", "");
        }
        if let Some(f) = &c.fix {
            outln!("     {:<14} fix: {f}", "");
        }
    }
    if failed == 0 {
        outln!("All checks passed.");
    } else {
        outln!(
            "{} failed.",
            crate::output::counted(failed as u64, "check", "checks")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A login as doctor says it: a key by its name, a missing login
    /// failed with its fix, one it could not ask passed and said.
    #[test]
    fn a_login_is_said_after_the_agents_version() {
        let at = "1.0 at /bin/x";
        let key = login_said(at, Login::Key("CODEX_API_KEY".into()));
        assert_eq!(
            key.ok().as_deref(),
            Some("1.0 at /bin/x, key set (CODEX_API_KEY)")
        );
        let out = Login::Out {
            why: "not logged in".into(),
            fix: "log in".into(),
        };
        let Err(v) = login_said(at, out) else {
            panic!("a missing login fails")
        };
        assert_eq!(
            (v.ok, v.detail.as_str(), v.fix.as_deref()),
            (false, "1.0 at /bin/x, not logged in", Some("log in"))
        );
        let unknown = login_said(at, Login::Unknown("no answer".into()));
        assert_eq!(
            unknown.ok().as_deref(),
            Some("1.0 at /bin/x (its login could not be asked: no answer)")
        );
    }
}
