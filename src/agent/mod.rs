//! The coding agents a loop can drive (Claude Code, Codex CLI, Gemini CLI,
//! pi, opencode):
//! what each can do (one row each), its command line for a session, how its
//! stream reads (usage limits included) and its token prices, one file each.

pub mod claude;
pub mod codex;
pub mod gemini;
pub mod opencode;
pub mod pi;
pub mod prices;
pub mod stream;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Claude Code (`claude -p`)
    #[default]
    Claude,
    /// OpenAI's Codex CLI (`codex exec`)
    Codex,
    /// Google's Gemini CLI (`gemini -p`)
    Gemini,
    /// pi, the coding agent (`pi --mode json`)
    Pi,
    /// opencode (`opencode run`)
    Opencode,
}

/// What one agent is and can do, in one row: what ralph asks of an agent
/// is asked here, never by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub name: &'static str,
    /// How to install it (the npm registry's package).
    pub install: &'static str,
    /// A TUI ralph can run in your terminal (`--interactive`), ended by
    /// ralph's Stop hook.
    pub interactive: bool,
    /// Takes `--permission-mode`.
    pub permission_modes: bool,
    /// How `--confined` confines its sessions, if at all.
    pub confine: Confine,
    /// Confined, its network can be allowed domain by domain.
    pub network_by_domain: bool,
    /// Its sandbox needs bubblewrap and socat from the system.
    pub sandbox_needs_bwrap: bool,
    /// Its sandbox leaves stray placeholder files in the project (excluded
    /// from git when a run is confined).
    pub sandbox_placeholders: bool,
    /// Confined, its sessions can write `.git` (hooks too): ralph names it
    /// writable, for their commits.
    pub sandbox_writes_git: bool,
    /// Confined, it needs a TMPDIR of its own, outside the one that holds
    /// its home (Codex's sandbox helper).
    pub sandbox_own_tmpdir: bool,
    /// Its stream says what a session cost (else ralph prices its tokens).
    pub reports_cost: bool,
    /// Takes `--disallowedTools` (a reviewer runs without its editing
    /// tools).
    pub disallows_tools: bool,
    /// Runs each command of a session in a login shell (`bash -lc`), whose
    /// profile sets PATH anew: what the session runs must be found there.
    pub login_shell: bool,
    /// Retries a failed model call by itself, silently (for as long as the
    /// API's `retry-after` says), and says so only in its log, which it
    /// writes to stderr: ralph reads it (`Agent::read_log`).
    pub log_on_stderr: bool,
    /// The project's files it reads that ralph asks approval for, as the
    /// names of their parts begin (`trust::approval`; in the project's
    /// folder or one above it).
    pub project_files: &'static [&'static str],
    /// ralph's plugin for it brings `/ralph:ralph-setup` (and the Stop
    /// hook) without `ralph install-command`.
    pub plugin: bool,
}

/// What a line of an agent's log says: a model call failed (`text`), which
/// it now retries by itself; and whether that is a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct LogSaid {
    pub text: String,
    pub limit: Option<crate::agent::stream::Limit>,
}

/// Can an agent reach its model: its login or its key, as asked of it
/// without a session and without the network (`Agent::login`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// Logged in, or what stands for it, in words ("logged in").
    In(String),
    /// A key in the environment, by its variable's name (its value is never
    /// read into what ralph says).
    Key(String),
    /// Neither: every session would fail. Why, and how to log in.
    Out { why: String, fix: String },
    /// It could not be told: why.
    Unknown(String),
}

/// How long an agent has to answer a question about its login.
pub const LOGIN_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

/// An agent's program asked a question of its own (`codex login status`),
/// from a folder no project's files are read in (a repository's agent files
/// are not run to ask), with `env` added; what it said and how it ended.
pub(crate) fn ask(
    program: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Option<std::process::Output> {
    let mut c = std::process::Command::new(program);
    c.args(args).envs(env.iter().copied()).current_dir("/");
    crate::procs::output_within(c, LOGIN_WITHIN)
}

/// Who confines an agent's sessions under `--confined`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confine {
    /// Its own sandbox, configured by ralph for each session.
    Own,
    /// ralph runs the whole agent inside bubblewrap, as it runs a confined
    /// gate (`sandbox::confine::agent_argv`): its files confined, its
    /// network open (the model's API is reached over it), Linux only. For
    /// an agent with no sandbox of its own, or one ralph cannot drive.
    Bwrap,
    /// It cannot be confined: `--confined` is refused for it.
    No,
}

impl Caps {
    /// Can `--confined` run it at all?
    pub fn confinable(&self) -> bool {
        self.confine != Confine::No
    }
}

/// Gemini CLI reads `.env` files of the project's folder and those above
/// it: their part, as `trust::approval` names it.
const GEMINI_ENV: &str = ".env (read by Gemini CLI)";

const CAPS: [(Agent, Caps); 5] = [
    (
        Agent::Claude,
        Caps {
            name: "claude",
            install: "npm install -g @anthropic-ai/claude-code",
            interactive: true,
            permission_modes: true,
            confine: Confine::Own,
            network_by_domain: true,
            sandbox_needs_bwrap: true,
            sandbox_placeholders: true,
            sandbox_writes_git: false,
            sandbox_own_tmpdir: false,
            reports_cost: true,
            disallows_tools: true,
            login_shell: false,
            log_on_stderr: false,
            project_files: &[".claude/", ".mcp.json"],
            plugin: true,
        },
    ),
    (
        Agent::Codex,
        Caps {
            name: "codex",
            install: "npm install -g @openai/codex",
            interactive: false,
            permission_modes: false,
            confine: Confine::Own,
            network_by_domain: false,
            sandbox_needs_bwrap: false,
            sandbox_placeholders: false,
            sandbox_writes_git: true,
            sandbox_own_tmpdir: true,
            reports_cost: false,
            disallows_tools: false,
            login_shell: true,
            log_on_stderr: false,
            project_files: &[".codex/"],
            plugin: false,
        },
    ),
    (
        Agent::Gemini,
        Caps {
            name: "gemini",
            install: "npm install -g @google/gemini-cli",
            interactive: false,
            permission_modes: false,
            // Its own sandbox needs a docker or podman daemon.
            confine: Confine::Bwrap,
            network_by_domain: false,
            sandbox_needs_bwrap: false,
            sandbox_placeholders: false,
            sandbox_writes_git: false,
            sandbox_own_tmpdir: false,
            reports_cost: false,
            disallows_tools: false,
            login_shell: false,
            log_on_stderr: false,
            project_files: &[".gemini/", GEMINI_ENV],
            plugin: false,
        },
    ),
    (
        Agent::Pi,
        Caps {
            name: "pi",
            install: "npm install -g @mariozechner/pi-coding-agent",
            interactive: false,
            permission_modes: false,
            // It has no sandbox of its own.
            confine: Confine::Bwrap,
            network_by_domain: false,
            sandbox_needs_bwrap: false,
            sandbox_placeholders: false,
            sandbox_writes_git: false,
            sandbox_own_tmpdir: false,
            reports_cost: true,
            disallows_tools: false,
            login_shell: false,
            log_on_stderr: false,
            project_files: &[".pi/"],
            plugin: false,
        },
    ),
    (
        Agent::Opencode,
        Caps {
            name: "opencode",
            install: "npm install -g opencode-ai",
            interactive: false,
            permission_modes: false,
            // It has no sandbox of its own.
            confine: Confine::Bwrap,
            network_by_domain: false,
            sandbox_needs_bwrap: false,
            sandbox_placeholders: false,
            sandbox_writes_git: false,
            sandbox_own_tmpdir: false,
            reports_cost: true,
            disallows_tools: false,
            login_shell: false,
            log_on_stderr: true,
            project_files: &[".opencode/", "opencode.json"],
            plugin: false,
        },
    ),
];

/// Where `/ralph-setup` goes for an agent, its text there, and how it is
/// run.
pub type SetupCommand = (std::path::PathBuf, String, &'static str);

/// Where an agent's user config names its MCP servers, and `ralph mcp`'s
/// entry there as it expects it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    pub file: std::path::PathBuf,
    pub format: McpFormat,
    /// The server's entry, named `ralph` in that table.
    pub entry: serde_json::Value,
    /// How to see it there.
    pub how: &'static str,
}

/// How that file keeps its servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpFormat {
    /// A JSON file whose top-level object `key` maps names to entries.
    Json { key: &'static str },
    /// A TOML file whose tables `[<table>.<name>]` are the entries.
    Toml { table: &'static str },
}

fn home() -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    crate::fsutil::dir_var("HOME").context("no home folder")
}

impl Agent {
    /// Which of `programs` a session of this agent would not find: for an
    /// agent that runs commands in a login shell, asked of that shell, with
    /// the environment sessions get (`None`: it could not be asked).
    pub fn unfound(self, programs: &[&str]) -> Option<Vec<String>> {
        if !self.caps().login_shell {
            return Some(Vec::new());
        }
        let script = r#"for p; do command -v "$p" >/dev/null 2>&1 || printf '%s\n' "$p"; done"#;
        let mut c = std::process::Command::new("bash");
        c.args(["-lc", script, "ralph-check"]).args(programs);
        // A profile that waits for a terminal must not hold the loop up.
        let said = crate::procs::stdout_within(c, std::time::Duration::from_secs(10))?;
        Some(said.lines().map(String::from).collect())
    }

    /// What to do when its login shell does not find `missing`.
    pub fn unfound_fix(self, missing: &[String]) -> String {
        let here = |p: &str| {
            which::which(p)
                .ok()
                .and_then(|w| w.parent().map(|d| d.display().to_string()))
        };
        let dirs: Vec<String> = missing.iter().filter_map(|p| here(p)).collect();
        let export = if dirs.is_empty() {
            "the folder that holds it".to_string()
        } else {
            format!("`export PATH=\"{}:$PATH\"`", dirs.join(":"))
        };
        format!(
            "{self} runs each command in a login shell (bash -lc), whose profile sets PATH anew, and there {} not found: add {export} to your ~/.profile (or ~/.bash_profile), or install {} into /usr/local/bin",
            missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(" and ")
                + if missing.len() == 1 { " is" } else { " are" },
            if missing.len() == 1 { "it" } else { "them" }
        )
    }

    /// Where it keeps its state (settings, chats, logs), which ralph's
    /// bubblewrap must leave writable when it confines the agent
    /// (`Confine::Bwrap`); `var` reads a folder from the environment. An
    /// agent confined by its own sandbox writes its state outside it: none.
    pub fn state_dirs(
        self,
        var: impl Fn(&str) -> Option<std::path::PathBuf>,
    ) -> Vec<std::path::PathBuf> {
        let under_home = |p: &str| var("HOME").map(|h| h.join(p));
        match self {
            Agent::Gemini => var("GEMINI_CLI_HOME")
                .map(|h| h.join(".gemini"))
                .or_else(|| under_home(".gemini"))
                .into_iter()
                .collect(),
            Agent::Pi => pi::state_dir(&var).into_iter().collect(),
            Agent::Opencode => opencode::state_dirs(&var),
            Agent::Claude | Agent::Codex => Vec::new(),
        }
    }

    /// What in its state folders runs code or names what runs (its
    /// settings, extensions, plugins, credentials that may be commands):
    /// read-only to a session ralph's bubblewrap confines, and what was not
    /// there before the session is removed after it, so that nothing a
    /// confined session plants runs later outside any sandbox.
    pub fn kept_paths(
        self,
        var: impl Fn(&str) -> Option<std::path::PathBuf>,
    ) -> Vec<std::path::PathBuf> {
        match self {
            Agent::Pi => pi::kept(&var),
            Agent::Opencode => opencode::kept(&var),
            Agent::Gemini => gemini::kept(self.state_dirs(&var)),
            Agent::Claude | Agent::Codex => Vec::new(),
        }
    }

    /// The files it makes itself as it starts, as it makes them (path,
    /// text, mode): made by ralph first where missing, so that they can be
    /// kept read-only (`kept_paths`) to a confined session.
    pub fn made_at_start(
        self,
        var: impl Fn(&str) -> Option<std::path::PathBuf>,
    ) -> Vec<(std::path::PathBuf, &'static str, u32)> {
        match self {
            Agent::Pi => pi::made_at_start(var),
            _ => Vec::new(),
        }
    }

    /// Whether its program at `program` can reach its model here: its
    /// login or key, asked without a session and without the network, and
    /// what fixes it where it cannot.
    pub fn login(self, program: &std::path::Path, root: &std::path::Path) -> Login {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        match self {
            Agent::Claude => claude::login(program),
            Agent::Codex => codex::login(program, var),
            Agent::Gemini => gemini::login(root, var),
            Agent::Pi => pi::login(program),
            Agent::Opencode => opencode::login(program),
        }
    }

    /// What `--confined` gives its sessions, in words (`--help`, doctor
    /// and the README say the same).
    pub fn confined_means(self) -> String {
        let c = self.caps();
        match c.confine {
            Confine::Own if c.network_by_domain => format!(
                "{self}: its own sandbox, files confined and network only to --allow-domain"
            ),
            Confine::Own => format!("{self}: its own sandbox, files confined and no network"),
            Confine::Bwrap => format!(
                "{self}: inside ralph's bubblewrap, files confined only (network open, no --allow-domain)"
            ),
            Confine::No => format!("{self}: cannot be confined"),
        }
    }

    /// `state_dirs` as this process's environment names them.
    pub fn state_dirs_here(self) -> Vec<std::path::PathBuf> {
        self.state_dirs(crate::fsutil::dir_var)
    }

    /// `/ralph-setup` for it (`ralph install-command`).
    pub fn setup_command(self) -> anyhow::Result<SetupCommand> {
        match self {
            Agent::Claude => claude::setup_command(),
            Agent::Codex => codex::setup_command(),
            Agent::Gemini => gemini::setup_command(),
            Agent::Pi => pi::setup_command(),
            Agent::Opencode => opencode::setup_command(),
        }
    }

    /// Where `ralph mcp` (run as `program mcp`) is added for it, as the
    /// agent's own `mcp add` writes it; why not, for an agent with no MCP.
    pub fn mcp_server(self, program: &std::path::Path) -> anyhow::Result<McpServer> {
        let program = program.display().to_string();
        match self {
            Agent::Claude => claude::mcp_server(program),
            Agent::Codex => codex::mcp_server(program),
            Agent::Gemini => gemini::mcp_server(program),
            Agent::Pi => anyhow::bail!(
                "pi has no MCP (it is extended with its own extensions): nothing to add"
            ),
            Agent::Opencode => opencode::mcp_server(program),
        }
    }

    /// The key that names its program in `config.toml`, and its flag
    /// (`--codex`): its name (`config::Options::program_of` reads it).
    pub fn program_key(self) -> &'static str {
        self.caps().name
    }

    /// After a confined session: what its stream cannot tell of its
    /// sandbox (Codex's refused commands), into the session's facts.
    pub fn judge_confined(self, s: &mut crate::agent::stream::Session) {
        if self == Agent::Codex {
            codex::judge_refusals(s);
        }
    }

    /// Read one line of its log (`log_on_stderr`): a failed model call it
    /// retries by itself, or `None`.
    pub fn read_log(self, line: &str) -> Option<LogSaid> {
        match self {
            Agent::Opencode => opencode::read_log(line),
            _ => None,
        }
    }

    /// Read one event of its stream into the session's facts; what to show
    /// for it.
    pub(crate) fn read(
        self,
        s: &mut crate::agent::stream::Session,
        v: &serde_json::Value,
    ) -> Vec<crate::agent::stream::Shown> {
        match self {
            Agent::Claude => claude::read(s, v),
            Agent::Codex => codex::read(s, v),
            Agent::Gemini => gemini::read(s, v),
            Agent::Pi => pi::read(s, v),
            Agent::Opencode => opencode::read(s, v),
        }
    }
}

/// What a session's command line is made of, whichever the agent.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    /// Its TUI in your terminal (Claude Code only), else print mode.
    pub interactive: bool,
    /// Confined: what it may reach besides the project.
    pub confined: Option<&'a crate::confinement::Confinement>,
    /// Confined: Claude Code's sandbox settings, as text.
    pub sandbox: Option<String>,
    /// Claude Code's permission mode, unconfined.
    pub permission_mode: claude::PermissionMode,
    pub model: Option<&'a str>,
    /// The user's own arguments, after ralph's.
    pub extra: &'a [String],
    /// The project.
    pub root: &'a std::path::Path,
    /// The project's own agent files that a switch can turn off (pi's
    /// extensions, opencode's project config) are approved: loaded.
    pub project_files: bool,
    /// Confined: the user's credential stores there are, which its
    /// sandbox hides.
    pub secrets: &'a [crate::confinement::Secret],
    /// Confined: where git keeps the project's repository, as git said
    /// before the session.
    pub git: Option<&'a crate::confinement::GitDirs>,
    /// A name of the session's own, that no file can know beforehand
    /// (Codex's permissions profile).
    pub own_name: &'a str,
    /// The project's folders as the agent's own trust names them, marked
    /// untrusted while `project_files` is false (Codex's `[projects]`).
    pub project_folders: &'a [String],
}

impl Agent {
    pub const ALL: [Agent; 5] = [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Pi,
        Agent::Opencode,
    ];

    /// What ralph says instead of a line of the agent's stderr, if
    /// anything (advice that does not hold under ralph).
    pub fn stderr_note(self, line: &str) -> Option<&'static str> {
        match self {
            Agent::Codex => codex::stderr_note(line),
            _ => None,
        }
    }

    /// Its arguments before the prompt (in print mode, the prompt comes on
    /// stdin).
    pub fn arguments(self, a: &Ask) -> Vec<String> {
        match self {
            Agent::Claude => claude::arguments(a),
            Agent::Codex => codex::session_arguments(a),
            Agent::Gemini => gemini::session_arguments(a),
            Agent::Pi => pi::session_arguments(a),
            Agent::Opencode => opencode::session_arguments(a),
        }
    }

    /// What its session's environment adds.
    pub fn env(self, a: &Ask) -> Vec<(String, String)> {
        let fixed = |e: &[(&str, &str)]| {
            e.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        match self {
            Agent::Gemini => fixed(&gemini::ENV),
            Agent::Opencode => opencode::env(a.project_files),
            Agent::Claude | Agent::Codex | Agent::Pi => Vec::new(),
        }
    }

    /// Its row (every agent has one).
    pub fn caps(self) -> &'static Caps {
        &CAPS
            .iter()
            .find(|(a, _)| *a == self)
            .expect("every agent has its row")
            .1
    }

    pub fn name(self) -> &'static str {
        self.caps().name
    }

    /// How to install it (the npm registry's package).
    pub fn install(self) -> &'static str {
        self.caps().install
    }

    /// Does its stream say what a session cost? (Else ralph prices its
    /// tokens.)
    pub fn reports_cost(self) -> bool {
        self.caps().reports_cost
    }
}

impl Agent {
    /// Whose project file a part to approve is (`name`, as
    /// `trust::approval` names it), if an agent's.
    pub fn of_project_file(name: &str) -> Option<Agent> {
        let mut n = name;
        while let Some(rest) = n.strip_prefix("../") {
            n = rest;
        }
        Agent::ALL
            .into_iter()
            .find(|a| a.caps().project_files.iter().any(|f| n.starts_with(f)))
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_agent_has_one_row_and_its_name_parses_back() {
        for a in Agent::ALL {
            assert_eq!(CAPS.iter().filter(|(x, _)| *x == a).count(), 1);
            assert_eq!(Agent::from_str(a.name(), false), Ok(a));
            // What only an interactive TUI has, only it has.
            assert!(!a.caps().permission_modes || a.caps().interactive);
            assert!(!a.caps().network_by_domain || a.caps().confine == Confine::Own);
            // Its own sandbox's quirks mean nothing without one.
            let c = a.caps();
            if c.confine != Confine::Own {
                assert!(!c.sandbox_needs_bwrap && !c.sandbox_placeholders);
                assert!(!c.sandbox_writes_git && !c.sandbox_own_tmpdir);
            }
            // ralph's bubblewrap must know where the agent writes, and its
            // new session takes the terminal from a TUI.
            if c.confine == Confine::Bwrap {
                assert!(!c.interactive, "{a}");
                let var = |k: &str| (k == "HOME").then(|| std::path::PathBuf::from("/h"));
                assert!(!a.state_dirs(var).is_empty(), "{a}");
            }
        }
    }

    #[test]
    fn geminis_state_is_under_its_home_variable_else_the_users() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::path::PathBuf::from(v))
            }
        };
        assert_eq!(
            Agent::Gemini.state_dirs(env(&[("HOME", "/h"), ("GEMINI_CLI_HOME", "/g")])),
            [std::path::PathBuf::from("/g/.gemini")]
        );
        assert_eq!(
            Agent::Gemini.state_dirs(env(&[("HOME", "/h")])),
            [std::path::PathBuf::from("/h/.gemini")]
        );
        assert!(Agent::Gemini.state_dirs(env(&[])).is_empty());
        assert!(Agent::Claude.state_dirs(env(&[("HOME", "/h")])).is_empty());
    }
}
