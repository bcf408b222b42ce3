//! The loop's options: the command line over `.ralph/config.toml` over the
//! defaults (and, for `--resume`, over the limits the run started with), all
//! checked against their bounds before anything is created or started.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::config::{self, Config, parse_duration};
use crate::run::engine::Limits;
use crate::work::project::Project;
use crate::work::tracker::Kind;

#[derive(Debug, Args, Default)]
pub struct LoopArgs {
    /// The prompt given to every session [default: .ralph/prompt.md, else prompt.md]
    #[arg(long, value_name = "FILE")]
    pub prompt: Option<PathBuf>,

    /// Stop after this many sessions [default: 50]
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,

    /// End a session that runs longer than this, wall clock (at most 7d) [default: 30m]
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,

    /// Stop once the sessions have cost this much, in USD
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,

    /// Stop (writing WAITING) after this many sessions in a row that change
    /// nothing: not git HEAD, the working tree or the spec's checkboxes [default: 3]
    #[arg(long, value_name = "N")]
    pub no_progress_limit: Option<u32>,

    /// Stop after this many failing sessions in a row [default: 3]
    #[arg(long, value_name = "N")]
    pub max_failures: Option<u32>,

    /// Run the interactive TUI in this terminal instead of print mode; the
    /// Stop hook ends each session (quitting claude yourself stops the loop)
    #[arg(long)]
    pub interactive: bool,

    /// The claude executable [default: `claude` on PATH]
    #[arg(long, value_name = "PATH")]
    pub claude: Option<PathBuf>,

    /// The model for the sessions (claude --model)
    #[arg(long)]
    pub model: Option<String>,

    /// claude's permission mode; bypassPermissions means
    /// --dangerously-skip-permissions [default: bypassPermissions]
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,

    /// First wait after a usage limit, rate limit or overload that gives no
    /// reset time; doubles each time, up to 30m [default: 60s]
    #[arg(long, value_name = "DURATION")]
    pub limit_backoff: Option<String>,

    /// Longest the loop waits for usage limits in a row before it stops
    /// (exit 4) [default: 8h]
    #[arg(long, value_name = "DURATION")]
    pub max_limit_wait: Option<String>,

    /// Tracker for the completion check [default: br if installed, else bd]
    #[arg(long, value_enum)]
    pub tracker: Option<Kind>,

    /// Run each session confined by Claude Code's own sandbox instead of with
    /// --dangerously-skip-permissions: acceptEdits, Bash allowed inside the
    /// sandbox, writes only in the project, network only to allowed domains
    #[arg(long)]
    pub confined: bool,

    /// Confined: a path the session may write besides the project (repeatable)
    #[arg(long = "allow-write", value_name = "PATH")]
    pub allow_write: Vec<String>,

    /// Confined: a domain the session's tools may reach (repeatable)
    #[arg(long = "allow-domain", value_name = "DOMAIN")]
    pub allow_domains: Vec<String>,

    /// A command of the completion gate (repeatable; replaces `[gate]
    /// commands`): COMPLETE holds only if every one exits 0
    #[arg(long = "gate", value_name = "CMD")]
    pub gate: Vec<String>,

    /// Go on with the last run that did not finish (interrupted, killed, or
    /// stopped for a human): same run folder, iteration count, cost, counters
    /// and limits; options given here override its limits
    #[arg(long)]
    pub resume: bool,

    /// Run the loop in git worktree NAME, on branch ralph/NAME (made from
    /// --base, or HEAD, if it does not exist yet), beside the checkout in
    /// <checkout>.ralph-worktrees/NAME, with its own .ralph/ state
    #[arg(long, value_name = "NAME")]
    pub worktree: Option<String>,

    /// With --worktree: the commit a new worktree's branch starts from [default: HEAD]
    #[arg(long, value_name = "REF", requires = "worktree")]
    pub base: Option<String>,

    /// With --worktree: this file becomes the worktree's .ralph/spec.md
    #[arg(long, value_name = "FILE", requires = "worktree")]
    pub spec: Option<PathBuf>,

    /// Extra arguments for claude, after `--`
    #[arg(last = true, value_name = "CLAUDE_ARGS")]
    pub claude_args: Vec<String>,
}

/// The settings in force.
#[derive(Debug, Clone)]
pub struct Settings {
    pub prompt: PathBuf,
    pub limits: Limits,
    pub timeout: Duration,
    pub interactive: bool,
    pub claude: PathBuf,
    pub model: Option<String>,
    pub permission_mode: String,
    pub claude_args: Vec<String>,
    pub hooks: config::Hooks,
    pub tracker: Option<Kind>,
    /// The project's own checks, if it has any.
    pub gate: Option<crate::work::gate::Gate>,
    /// Sessions confined by Claude Code's sandbox, and what they may reach.
    pub confined: Option<crate::run::confine::Confinement>,
}

const DAY: u64 = 86_400;

/// `claude --permission-mode` choices (Claude Code 2.1.330's `--help`).
pub const PERMISSION_MODES: [&str; 6] = [
    "acceptEdits",
    "auto",
    "bypassPermissions",
    "manual",
    "dontAsk",
    "plan",
];

/// The claude to run must be an executable file (checked before any run
/// folder is made or session started).
fn executable(p: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(p) {
        Err(_) => Err(format!("--claude: {} does not exist", p.display())),
        Ok(m) if !m.is_file() => Err(format!("--claude: {} is not a file", p.display())),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err(format!(
            "--claude: {} is not executable (chmod +x it, or name the real claude)",
            p.display()
        )),
        Ok(_) => Ok(()),
    }
}

/// A path from the config file, relative to the project and inside it.
fn inside(project: &Project, p: &std::path::Path) -> Result<PathBuf, String> {
    let bad = || {
        format!(
            "{}: prompt = {:?} must name a file inside the project",
            project.config().display(),
            p.display()
        )
    };
    if p.is_absolute()
        || p.components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(bad());
    }
    let joined = project.root.join(p);
    // A link inside the project may not lead out of it either.
    if let (Ok(real), Ok(root)) = (
        std::fs::canonicalize(&joined),
        std::fs::canonicalize(&project.root),
    ) && !real.starts_with(&root)
    {
        return Err(bad());
    }
    Ok(joined)
}

/// Bounds of each duration option: (name, default, least, most).
const DURATIONS: [(&str, &str, u64, u64); 3] = [
    ("timeout", "30m", 1, 7 * DAY),
    ("limit-backoff", "60s", 1, DAY),
    ("max-limit-wait", "8h", 60, 30 * DAY),
];

fn duration(name: &str, given: Option<&str>) -> Result<Duration, String> {
    let (_, default, least, most) = DURATIONS
        .iter()
        .find(|d| d.0 == name)
        .expect("a known option");
    let text = given.unwrap_or(default);
    let d = parse_duration(text).map_err(|e| format!("--{name}: {e}"))?;
    if d.as_secs() < *least || d.as_secs() > *most {
        return Err(format!(
            "--{name}: {text:?} is out of range: from {} to {}",
            crate::timefmt::human_duration(Duration::from_secs(*least)),
            crate::timefmt::human_duration(Duration::from_secs(*most)),
        ));
    }
    Ok(d)
}

fn count(name: &str, v: u32, most: u32) -> Result<u32, String> {
    if v == 0 || v > most {
        return Err(format!("--{name} must be from 1 to {most}, not {v}"));
    }
    Ok(v)
}

/// Where the prompt was named: on the command line (relative to where you
/// are), in the config (relative to the project, and inside it), or not at
/// all (the project's default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptFrom {
    CommandLine(PathBuf),
    Config(PathBuf),
    Default,
}

/// The settings as given, merged (command line over the run being resumed
/// over the config over the defaults) and checked against their bounds.
/// Pure: nothing is read or run to make it; `settings` then checks it
/// against the machine.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub prompt: PromptFrom,
    /// The claude named, if any (else the one on PATH).
    pub claude: Option<PathBuf>,
    pub settings: Settings,
}

/// Merge and bound. `saved` holds the limits of a run being resumed.
/// Errors are usage errors (exit 2), said with the option's name.
pub fn resolve(a: &LoopArgs, cfg: &Config, saved: Option<&Limits>) -> Result<Resolved, String> {
    let prompt = match (&a.prompt, &cfg.prompt) {
        (Some(p), _) => PromptFrom::CommandLine(p.clone()),
        (None, Some(p)) => PromptFrom::Config(p.clone()),
        (None, None) => PromptFrom::Default,
    };
    let permission_mode = a
        .permission_mode
        .clone()
        .or(cfg.permission_mode.clone())
        .unwrap_or_else(|| "bypassPermissions".into());
    if !PERMISSION_MODES.contains(&permission_mode.as_str()) {
        return Err(format!(
            "--permission-mode: {permission_mode:?} is not one of Claude Code's modes: {}",
            PERMISSION_MODES.join(", ")
        ));
    }
    let pick = |cli: &Option<String>, cfg: &Option<String>, saved: Option<Duration>| {
        cli.clone()
            .or_else(|| saved.map(|d| d.as_secs().to_string()))
            .or(cfg.clone())
    };
    let max_cost = a
        .max_cost
        .or(saved.and_then(|s| s.max_cost))
        .or(cfg.max_cost);
    if max_cost.is_some_and(|c| !c.is_finite() || c <= 0.0 || c > 1e6) {
        return Err("--max-cost must be a positive amount of USD, at most 1000000".into());
    }
    let gate = crate::work::gate::Gate::from_config(&cfg.gate, &a.gate)?;
    let claude_args = if a.claude_args.is_empty() {
        cfg.claude_args.clone().unwrap_or_default()
    } else {
        a.claude_args.clone()
    };
    let confined = confinement(a, cfg, &claude_args)?;
    let limits = Limits {
        max_iterations: count(
            "max-iterations",
            a.max_iterations
                .or(saved.map(|s| s.max_iterations))
                .or(cfg.max_iterations)
                .unwrap_or(50),
            1_000_000,
        )?,
        max_cost,
        no_progress_limit: count(
            "no-progress-limit",
            a.no_progress_limit
                .or(saved.map(|s| s.no_progress_limit))
                .or(cfg.no_progress_limit)
                .unwrap_or(3),
            10_000,
        )?,
        max_failures: count(
            "max-failures",
            a.max_failures
                .or(saved.map(|s| s.max_failures))
                .or(cfg.max_failures)
                .unwrap_or(3),
            10_000,
        )?,
        limit_backoff: duration(
            "limit-backoff",
            pick(
                &a.limit_backoff,
                &cfg.limit_backoff,
                saved.map(|s| s.limit_backoff),
            )
            .as_deref(),
        )?,
        max_limit_wait: duration(
            "max-limit-wait",
            pick(
                &a.max_limit_wait,
                &cfg.max_limit_wait,
                saved.map(|s| s.max_limit_wait),
            )
            .as_deref(),
        )?,
        max_gate_failures: gate.as_ref().map_or(3, |g| g.max_failures),
    };
    Ok(Resolved {
        prompt,
        claude: a.claude.clone().or(cfg.claude.clone()),
        settings: Settings {
            prompt: PathBuf::new(),
            limits,
            timeout: duration("timeout", a.timeout.as_deref().or(cfg.timeout.as_deref()))?,
            interactive: a.interactive || cfg.interactive.unwrap_or(false),
            claude: PathBuf::new(),
            model: a.model.clone().or(cfg.model.clone()),
            permission_mode,
            claude_args,
            hooks: cfg.hooks.clone(),
            tracker: a.tracker,
            gate,
            confined,
        },
    })
}

/// `--confined` and what it allows, from the command line over the config;
/// nothing that would widen a confined session.
fn confinement(
    a: &LoopArgs,
    cfg: &Config,
    claude_args: &[String],
) -> Result<Option<crate::run::confine::Confinement>, String> {
    let pick = |cli: &Vec<String>, cfg: &Option<Vec<String>>| {
        if cli.is_empty() {
            cfg.clone().unwrap_or_default()
        } else {
            cli.clone()
        }
    };
    if !(a.confined || cfg.confined.unwrap_or(false)) {
        if !a.allow_write.is_empty() || !a.allow_domains.is_empty() {
            return Err("--allow-write and --allow-domain are for --confined sessions".into());
        }
        return Ok(None);
    }
    if a.permission_mode.is_some() || cfg.permission_mode.is_some() {
        return Err(
            "--confined sets the permission mode itself (acceptEdits inside the sandbox); drop --permission-mode / permission_mode"
                .into(),
        );
    }
    if let Some(arg) = crate::run::confine::widening(claude_args) {
        return Err(format!(
            "--confined: the claude argument {:?} would widen a confined session (only {} are allowed); drop it",
            arg,
            crate::run::confine::NARROW_ARGS.join(", ")
        ));
    }
    Ok(Some(crate::run::confine::Confinement {
        allow_write: pick(&a.allow_write, &cfg.allow_write),
        allow_domains: pick(&a.allow_domains, &cfg.allow_domains),
    }))
}

/// The settings in force: the config approved, the options merged and
/// bounded (`resolve`), then checked against the machine: the prompt there
/// and not empty, the claude executable, the sandbox's programs.
pub fn settings(
    a: &LoopArgs,
    project: &Project,
    saved: Option<&Limits>,
) -> Result<Settings, String> {
    let cfg: Config = config::load(&project.config()).map_err(|e| format!("{e:#}"))?;
    // What the file makes ralph run or allow counts only once approved.
    let parts = crate::trust::approval::project_parts(&project.root, &cfg);
    let standing = crate::trust::approval::standing_of(&project.root, &parts);
    if let crate::trust::approval::Standing::NotApproved { .. } = standing {
        return Err(crate::trust::approval::refusal(
            &project.root,
            &parts,
            &standing,
        ));
    }
    let r = resolve(a, &cfg, saved)?;
    let mut s = r.settings;
    s.prompt = prompt_file(project, &r.prompt)?;
    s.claude = claude_file(r.claude)?;
    if s.confined.is_some()
        && let Some(why) = crate::run::confine::unavailable(|p| which::which(p).is_ok())
    {
        return Err(format!("--confined cannot be had here: {why}"));
    }
    Ok(s)
}

/// The prompt file, there and not empty. The config's (and the default)
/// must be inside the project: the prompt goes to the model.
fn prompt_file(project: &Project, from: &PromptFrom) -> Result<PathBuf, String> {
    let prompt = match from {
        PromptFrom::CommandLine(p) => std::path::absolute(p).map_err(|e| e.to_string())?,
        PromptFrom::Config(p) => inside(project, p)?,
        PromptFrom::Default => {
            let d = project.default_prompt();
            inside(project, d.strip_prefix(&project.root).unwrap_or(&d))?
        }
    };
    match crate::fsutil::read_optional(&prompt) {
        Ok(None) => Err(format!(
            "no prompt at {} (write one with /ralph-setup or `ralph init`, or pass --prompt FILE)",
            prompt.display()
        )),
        Ok(Some(t)) if t.trim().is_empty() => Err(format!(
            "the prompt {} is empty: write the standing instructions every session gets",
            prompt.display()
        )),
        Ok(Some(_)) => Ok(prompt),
        Err(e) => Err(format!("the prompt: {e:#}")),
    }
}

/// The claude to run: the one named (a path, or a name on PATH), else
/// `claude` on PATH; an executable file.
fn claude_file(named: Option<PathBuf>) -> Result<PathBuf, String> {
    let claude = match named {
        Some(p) if p.components().count() > 1 => {
            std::path::absolute(p).map_err(|e| e.to_string())?
        }
        Some(p) => which::which(&p).map_err(|_| format!("{} not found on PATH", p.display()))?,
        None => which::which("claude").map_err(|_| {
            "`claude` not found on PATH. Install Claude Code (npm install -g @anthropic-ai/claude-code) or pass --claude PATH".to_string()
        })?,
    };
    executable(&claude)?;
    Ok(claude)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(config: &str) -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".ralph")).unwrap();
        std::fs::write(dir.path().join(".ralph/prompt.md"), "do it\n").unwrap();
        std::fs::write(dir.path().join(".ralph/config.toml"), config).unwrap();
        let p = Project::at(dir.path());
        (dir, p)
    }

    fn args() -> LoopArgs {
        LoopArgs {
            claude: Some(PathBuf::from("/bin/true")),
            ..Default::default()
        }
    }

    #[test]
    fn durations_and_counts_are_bounded() {
        let (_d, p) = project("");
        let s = settings(&args(), &p, None).unwrap();
        assert_eq!(
            (s.timeout.as_secs(), s.limits.max_limit_wait.as_secs()),
            (1800, 8 * 3600)
        );
        let bad: [(&str, LoopArgs); 7] = [
            (
                "--timeout",
                LoopArgs {
                    timeout: Some("18446744073709551615".into()),
                    ..args()
                },
            ),
            (
                "--timeout",
                LoopArgs {
                    timeout: Some("0".into()),
                    ..args()
                },
            ),
            (
                "--timeout",
                LoopArgs {
                    timeout: Some("9999999999999999h".into()),
                    ..args()
                },
            ),
            (
                "--max-iterations",
                LoopArgs {
                    max_iterations: Some(0),
                    ..args()
                },
            ),
            (
                "--no-progress-limit",
                LoopArgs {
                    no_progress_limit: Some(0),
                    ..args()
                },
            ),
            (
                "--max-failures",
                LoopArgs {
                    max_failures: Some(0),
                    ..args()
                },
            ),
            (
                "--max-cost",
                LoopArgs {
                    max_cost: Some(f64::INFINITY),
                    ..args()
                },
            ),
        ];
        for (name, a) in bad {
            let e = settings(&a, &p, None).unwrap_err();
            assert!(e.contains(name), "{name}: {e}");
        }
        let (_d, p) = project("timeout = \"9999999999999999h\"\n");
        assert!(
            settings(&args(), &p, None)
                .unwrap_err()
                .contains("too long")
        );
    }

    #[test]
    fn resumed_limits_sit_between_the_command_line_and_the_config() {
        let (_d, p) = project("max_iterations = 7\nmax_cost = 3.0\n");
        let saved = Limits {
            max_iterations: 20,
            max_cost: Some(5.0),
            no_progress_limit: 4,
            max_failures: 2,
            limit_backoff: Duration::from_secs(30),
            max_limit_wait: Duration::from_secs(3600),
            max_gate_failures: 3,
        };
        let s = settings(&args(), &p, Some(&saved)).unwrap();
        assert_eq!(s.limits, saved);
        let s = settings(
            &LoopArgs {
                max_iterations: Some(40),
                ..args()
            },
            &p,
            Some(&saved),
        )
        .unwrap();
        assert_eq!(
            (s.limits.max_iterations, s.limits.max_cost),
            (40, Some(5.0))
        );
    }

    #[test]
    fn resolving_reads_nothing_and_takes_the_command_line_over_the_config() {
        let cfg: Config = toml::from_str(
            "prompt = \"p.md\"\nclaude = \"/nowhere/claude\"\nmax_iterations = 7\nmodel = \"m\"\n",
        )
        .unwrap();
        let r = resolve(&LoopArgs::default(), &cfg, None).unwrap();
        assert_eq!(r.prompt, PromptFrom::Config(PathBuf::from("p.md")));
        assert_eq!(r.claude, Some(PathBuf::from("/nowhere/claude")));
        assert_eq!(
            (
                r.settings.limits.max_iterations,
                r.settings.model.as_deref()
            ),
            (7, Some("m"))
        );
        let a = LoopArgs {
            prompt: Some(PathBuf::from("mine.md")),
            max_iterations: Some(9),
            ..Default::default()
        };
        let r = resolve(&a, &cfg, None).unwrap();
        assert_eq!(r.prompt, PromptFrom::CommandLine(PathBuf::from("mine.md")));
        assert_eq!(r.settings.limits.max_iterations, 9);
        assert_eq!(
            resolve(&LoopArgs::default(), &Config::default(), None)
                .unwrap()
                .prompt,
            PromptFrom::Default
        );
        let confined = LoopArgs {
            confined: true,
            claude_args: vec!["--add-dir".into(), "/".into()],
            ..Default::default()
        };
        assert!(
            resolve(&confined, &Config::default(), None)
                .unwrap_err()
                .contains("\"--add-dir\" would widen")
        );
    }

    use proptest::prelude::*;

    fn duration_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9]{1,25}[dhms]?",
            "([0-9]{1,20}[dhms]){1,4}",
            "[ -~]{0,12}",
            Just("18446744073709551615".to_string()),
            Just("0".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Any values of the loop's options, from the command line or the
        /// config file, are accepted or refused with a message: no panic.
        #[test]
        fn any_option_values_are_accepted_or_refused(
            max_iterations in proptest::option::of(any::<u32>()),
            max_cost in proptest::option::of(any::<f64>()),
            no_progress in proptest::option::of(any::<u32>()),
            max_failures in proptest::option::of(any::<u32>()),
            timeout in proptest::option::of(duration_text()),
            backoff in proptest::option::of(duration_text()),
            limit_wait in proptest::option::of(duration_text()),
            mode in proptest::option::of("[a-zA-Z]{0,20}"),
            config_timeout in duration_text(),
            config_iterations in any::<i64>(),
        ) {
            let (_d, p) = project(&format!(
                "timeout = {config_timeout:?}\nmax_iterations = {config_iterations}\n"
            ));
            let a = LoopArgs {
                max_iterations,
                max_cost,
                no_progress_limit: no_progress,
                max_failures,
                timeout,
                limit_backoff: backoff,
                max_limit_wait: limit_wait,
                permission_mode: mode,
                ..args()
            };
            if let Ok(s) = settings(&a, &p, None) {
                prop_assert!(s.timeout.as_secs() >= 1 && s.timeout.as_secs() <= 7 * DAY);
                prop_assert!(s.limits.max_iterations >= 1);
                prop_assert!(s.limits.max_cost.is_none_or(|c| c.is_finite() && c > 0.0));
            }
        }
    }
}
