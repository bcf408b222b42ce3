//! The loop's settings, defined once: the command line (`ralph loop`'s
//! flags) and `.ralph/config.toml` fill the same `Options`, which
//! `run::options::resolve` layers (defaults < config < resumed run <
//! command line) and bounds.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use serde::Deserialize;

use crate::fsutil;
mod kinds;
mod placement;
pub mod user;

pub use kinds::{Kind, OnConflict};

/// One loop setting per field. Its doc comment is its `--help`; its name is
/// its key in `config.toml` and, in kebab case, its flag. A field that only
/// one side may set says so (`arg(skip)`, `serde(skip)`).
#[derive(Debug, Default, Clone, Args, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The prompt given to every session [default: .ralph/prompt.md, else prompt.md]
    #[arg(long, value_name = "FILE")]
    pub prompt: Option<PathBuf>,

    /// Stop after this many sessions
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,

    /// End a session that runs longer than this, wall clock (at most 7d)
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<Span>,

    /// Stop once the sessions have cost this much, in USD
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,

    /// Pause a step once the sessions that worked on it without finishing
    /// it have cost this much, in USD: the run asks you (the step's work
    /// kept) whether to give it as much again or stop (with --parallel: or
    /// skip it; the other steps go on meanwhile) [default: no limit]
    #[arg(long, value_name = "USD")]
    pub max_cost_per_step: Option<f64>,

    /// Stop once the sessions have used this many tokens (input, output
    /// and cache): a cap for those on a plan, who count tokens, or whose
    /// agent reports no dollars
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,

    /// Start no session once the run has taken this long, wall clock, and
    /// end the one running then at it (e.g. `5h` under a CI job's limit)
    /// [default: no limit]
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<Span>,

    /// Stop (writing WAITING) after this many sessions in a row that change
    /// nothing: not git HEAD, the working tree or the spec's checkboxes
    #[arg(long, value_name = "N")]
    pub no_progress_limit: Option<u32>,

    /// Stop (writing WAITING) after this many sessions in a row that began
    /// and ended with the same step open
    #[arg(long, value_name = "N")]
    pub max_sessions_per_step: Option<u32>,

    /// Start at most this many sessions in any 60 minutes, counted over every
    /// run of the project; the loop waits (with a countdown) for the next
    /// [default: no limit]
    #[arg(long, value_name = "N")]
    pub max_sessions_per_hour: Option<u32>,

    /// After a session that left changes uncommitted: `auto` commits them
    /// (with the project's own git hooks), `off` only says so [default: off]
    #[arg(long, value_enum, value_name = "MODE")]
    pub commit: Option<CommitMode>,

    /// Stop after this many failing sessions in a row
    #[arg(long, value_name = "N")]
    pub max_failures: Option<u32>,

    /// Work up to N of the spec's steps at once, each by a worker loop in a
    /// worktree of its own, merged back one at a time (gate after each);
    /// steps wait for their tracker blockers, or, without a tracker, for the
    /// spec's earlier `##` sections [default: 1, one step at a time]
    #[arg(long, value_name = "N")]
    pub parallel: Option<u32>,

    /// With --parallel: when a finished step's merge conflicts, `resolve`
    /// runs a session that merges both, `wait` stops for a human (WAITING
    /// names the files) [default: resolve]
    #[arg(long, value_enum, value_name = "WHAT")]
    pub on_conflict: Option<OnConflict>,

    /// Run the interactive TUI in this terminal instead of print mode; the
    /// Stop hook ends each session (quitting claude yourself stops the loop)
    #[arg(long)]
    #[serde(default)]
    pub interactive: bool,

    /// The coding agent that does each step [default: claude]
    #[arg(long, value_enum)]
    pub agent: Option<crate::agent::Agent>,

    /// An agent to run the next sessions on while the one in use is at its
    /// usage limit (repeatable, in order); the loop returns to its own agent
    /// once the limit has reset
    #[arg(long = "fallback", value_enum, value_name = "AGENT")]
    pub fallback: Option<Vec<crate::agent::Agent>>,

    /// Fall back only for a usage limit that resets later than this;
    /// shorter ones are waited out
    #[arg(long, value_name = "DURATION")]
    pub fallback_after: Option<Span>,

    /// The claude executable [default: `claude` on PATH]
    #[arg(long, value_name = "PATH")]
    pub claude: Option<PathBuf>,

    /// The codex executable, for --agent codex [default: `codex` on PATH]
    #[arg(long, value_name = "PATH")]
    pub codex: Option<PathBuf>,

    /// The gemini executable, for --agent gemini [default: `gemini` on PATH]
    #[arg(long, value_name = "PATH")]
    pub gemini: Option<PathBuf>,

    /// The pi executable, for --agent pi [default: `pi` on PATH]
    #[arg(long, value_name = "PATH")]
    pub pi: Option<PathBuf>,

    /// The opencode executable, for --agent opencode [default: `opencode`
    /// on PATH]
    #[arg(long, value_name = "PATH")]
    pub opencode: Option<PathBuf>,

    /// The model for the sessions (the agent's --model)
    #[arg(long)]
    pub model: Option<String>,

    /// claude's permission mode; bypassPermissions means
    /// --dangerously-skip-permissions
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,

    /// First wait after a usage limit, rate limit or overload that gives no
    /// reset time; doubles each time, up to 30m
    #[arg(long, value_name = "DURATION")]
    pub limit_backoff: Option<Span>,

    /// Longest the loop waits for usage limits in a row before it stops
    /// (exit 4)
    #[arg(long, value_name = "DURATION")]
    pub max_limit_wait: Option<Span>,

    /// Tracker for the completion check; github: the issues of `origin`'s
    /// repository, each step's task `[#N]`, closed by ralph once its step is
    /// done [default: br if installed, else bd]
    #[arg(long, value_enum)]
    pub tracker: Option<Kind>,

    /// Run each session confined instead of with
    /// --dangerously-skip-permissions: writes only in the project (and
    /// --allow-write). Claude Code: its own sandbox, network only to
    /// --allow-domain. Codex: its own sandbox, no network. Gemini, pi and
    /// opencode: inside ralph's bubblewrap, files only: network open, no
    /// --allow-domain
    #[arg(long)]
    #[serde(default)]
    pub confined: bool,

    /// Confined: a path the session may write besides the project (repeatable)
    #[arg(long = "allow-write", value_name = "PATH")]
    pub allow_write: Option<Vec<String>>,

    /// Confined: a domain the session's tools may reach (repeatable)
    #[arg(long = "allow-domain", value_name = "DOMAIN")]
    pub allow_domains: Option<Vec<String>>,

    /// Push the run's branch to its upstream (default origin) after each
    /// session that committed and at the end: never forced; a rejected
    /// push is rebased onto the remote's branch only if that applies
    /// cleanly, else the loop waits for you
    #[arg(long)]
    #[serde(default)]
    pub push: bool,

    /// Push (as --push) and open a pull request for the run's branch, or
    /// update the open one: a draft until the run completes. Needs a branch
    /// other than the default (--worktree NAME, or your own) and a GitHub
    /// token (GH_TOKEN or GITHUB_TOKEN for github.com, GH_ENTERPRISE_TOKEN
    /// for another host, or `gh auth login`)
    #[arg(long)]
    #[serde(default)]
    pub pr: bool,

    #[command(flatten)]
    #[serde(default)]
    pub gate: GateConfig,

    #[command(flatten)]
    #[serde(default)]
    pub review: ReviewConfig,

    #[command(flatten)]
    #[serde(default)]
    pub notify: NotifyConfig,

    #[command(flatten)]
    #[serde(default)]
    pub waiting: WaitingConfig,

    #[arg(skip)]
    #[serde(default)]
    pub hooks: Hooks,

    /// `[prices]`: USD per million tokens by model, for agents that report
    /// tokens only (over ralph's own table).
    #[arg(skip)]
    pub prices: Option<std::collections::BTreeMap<String, crate::agent::prices::Price>>,

    /// Extra arguments for the agent, after `--` (Claude Code's, or the
    /// agent's given with --agent)
    #[arg(last = true, value_name = "AGENT_ARGS")]
    pub claude_args: Option<Vec<String>>,
}

/// The loop's defaults, in one place, by option (its field): `--help` shows
/// them (`cli::command`), and options and the engine take them from here.
pub const DEFAULTS: [(&str, &str); 9] = [
    ("max_iterations", "50"),
    ("timeout", "30m"),
    ("no_progress_limit", "3"),
    ("max_sessions_per_step", "5"),
    ("max_failures", "3"),
    ("fallback_after", "10m"),
    ("limit_backoff", "60s"),
    ("max_limit_wait", "8h"),
    ("permission_mode", "bypassPermissions"),
];

/// An option's default, as `--help` says it.
pub fn default_of(key: &str) -> &'static str {
    DEFAULTS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, d)| *d)
        .expect("an option with a default")
}

/// A count option's default.
pub fn default_count(key: &str) -> u32 {
    default_of(key)
        .parse()
        .expect("a count's default is a number")
}

impl Options {
    /// Each agent's program field, by its key (`Agent::program_key`, the
    /// agent's own): the one place that reads a field per agent. (They stay
    /// fields of their own, as the flags and top-level keys users have:
    /// serde cannot flatten a table into a struct that refuses unknown
    /// keys.)
    fn programs(&self) -> [(&'static str, Option<&PathBuf>); 5] {
        [
            ("claude", self.claude.as_ref()),
            ("codex", self.codex.as_ref()),
            ("gemini", self.gemini.as_ref()),
            ("pi", self.pi.as_ref()),
            ("opencode", self.opencode.as_ref()),
        ]
    }

    /// The program named for `agent` (`--claude`, `--codex`, ...).
    pub fn program_of(&self, agent: crate::agent::Agent) -> Option<&PathBuf> {
        self.programs()
            .into_iter()
            .find(|(k, _)| *k == agent.program_key())
            .and_then(|(_, p)| p)
    }
}

/// What the loop does with a session's uncommitted changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CommitMode {
    Off,
    Auto,
}

/// `[gate]`: the project's own checks, which decide whether COMPLETE holds.
#[derive(Debug, Default, Clone, Args, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    /// A command of the completion gate (repeatable; replaces `[gate]
    /// commands`): COMPLETE holds only if every one exits 0
    #[arg(long = "gate", value_name = "CMD")]
    pub commands: Option<Vec<String>>,
    /// Longest one command may run [default: 20m].
    #[arg(skip)]
    pub timeout: Option<Span>,
    /// `complete` (when COMPLETE appears) or `each` (also after every
    /// session that changed something).
    #[arg(skip)]
    pub when: Option<String>,
    /// Gate failures in a row before the loop gives up (exit 1) [default: 3].
    #[arg(skip)]
    pub max_failures: Option<u32>,
    /// A box checked by a session that changed nothing besides `.ralph/`
    /// does not count: ralph unchecks it and tells the next session.
    #[arg(skip)]
    pub require_change: Option<bool>,
    /// Files the run's sessions may not change (a glob, repeatable; replaces
    /// `[gate] protect`): any change to them since the run began refuses
    /// COMPLETE and stops the run for a human
    #[arg(long = "protect", value_name = "GLOB")]
    pub protect: Option<Vec<String>>,
    /// `on` (the default): the gate runs once before the first session,
    /// and what fails then (each test, where its output says) does not
    /// block COMPLETE, only what fails anew; `off`: every check must pass
    #[arg(long = "gate-baseline", value_name = "on|off", value_parser = ["on", "off"])]
    pub baseline: Option<String>,
    /// Test reports the commands write, read test by test after they run
    /// (JUnit XML: cargo-nextest, pytest --junitxml, jest-junit, Vitest;
    /// or Jest's JSON), each a path in the project.
    #[arg(skip)]
    pub reports: Option<Vec<String>>,
}

/// `[waiting]`: what a run does when a human is needed.
#[derive(Debug, Default, Clone, Args, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct WaitingConfig {
    /// When a human is needed (WAITING), wait this long for an answer
    /// (`ralph answer`) with no session running, then go on with the same
    /// run; with none by then, stop as without it (exit 3). With
    /// --parallel, only for a step paused at its budget, once nothing else
    /// runs [default: stop at once]
    #[arg(long = "wait-for-answer", value_name = "DURATION")]
    pub wait: Option<Span>,
}

/// `[review]`: an independent review session before COMPLETE (or a checked
/// step) counts. On when the table is there, or with `--review`.
#[derive(Debug, Default, Clone, Args, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewConfig {
    /// Have a fresh reviewer session judge the work before it counts:
    /// `complete` (once the gate passes) or `step` (after each checked step)
    #[arg(long = "review", id = "review_when", value_name = "WHEN")]
    pub when: Option<String>,
    /// The reviewer's agent [default: the run's agent]
    #[arg(
        long = "review-agent",
        id = "review_agent",
        value_name = "AGENT",
        value_enum
    )]
    pub agent: Option<crate::agent::Agent>,
    /// The reviewer's model [default: its agent's own]
    #[arg(long = "review-model", id = "review_model", value_name = "MODEL")]
    pub model: Option<String>,
    /// The reviewer's standing instructions, a file inside the project
    /// [default: ralph's own].
    #[arg(skip)]
    pub prompt: Option<PathBuf>,
    /// Rejections in a row before the loop stops for a human [default: 3].
    #[arg(skip)]
    pub max_rounds: Option<u32>,
    /// `false` turns a `[review]` table off; the table alone turns it on.
    #[arg(skip)]
    #[serde(default = "present")]
    pub enabled: Option<bool>,
}

impl ReviewConfig {
    /// Is a reviewer asked for? The table (unless `enabled = false`), or a
    /// reviewer's `when`, agent or model given.
    pub fn on(&self) -> bool {
        self.enabled
            .unwrap_or(self.when.is_some() || self.agent.is_some() || self.model.is_some())
    }
}

/// A `[review]` table that is there asks for a review.
fn present() -> Option<bool> {
    Some(true)
}

/// `[notify]`: who is told when the loop needs them, and of what.
#[derive(Debug, Default, Clone, Args, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// Tell someone when the loop completes, waits for a human, fails,
    /// stops at a limit, waits long for a usage limit, or its work is sent
    /// back: desktop, ntfy, slack, discord or command=CMD (repeatable;
    /// replaces [notify]'s channels). A URL is a secret and never given
    /// here: ntfy, slack and discord take theirs from RALPH_NOTIFY_NTFY,
    /// RALPH_NOTIFY_SLACK, RALPH_NOTIFY_DISCORD, else from [notify] in the
    /// config; KIND=env:VAR takes it from the variable VAR
    #[arg(long = "notify", id = "notify_to", value_name = "TARGET")]
    #[serde(skip)]
    pub to: Option<Vec<String>>,
    /// The desktop's notifier (notify-send, osascript).
    #[arg(skip)]
    pub desktop: Option<bool>,
    /// An ntfy topic URL.
    #[arg(skip)]
    pub ntfy: Option<String>,
    /// A Slack-compatible incoming webhook URL.
    #[arg(skip)]
    pub slack: Option<String>,
    /// A Discord webhook URL.
    #[arg(skip)]
    pub discord: Option<String>,
    /// A shell command (`RALPH_EVENT`, `RALPH_MESSAGE`).
    #[arg(skip)]
    pub command: Option<String>,
    /// Which events [default: all].
    #[arg(skip)]
    pub events: Option<Vec<String>>,
    /// A usage-limit wait longer than this is told [default: 30m].
    #[arg(skip)]
    pub limit_wait_over: Option<Span>,
}

/// Shell commands run at points of the loop's life, with the facts in
/// `RALPH_*` environment variables. A failing one is reported, never fatal.
/// From the config only: a hook is a program to approve (`ralph trust`).
#[derive(Debug, Default, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Hooks {
    pub on_loop_start: Option<String>,
    pub on_session_start: Option<String>,
    pub on_session_end: Option<String>,
    pub on_complete: Option<String>,
    pub on_waiting: Option<String>,
    pub on_limit: Option<String>,
}

/// Layering: a value given at a higher layer wins over a lower one's.
pub trait Layer {
    fn over(self, lower: Self) -> Self;
}

impl<T> Layer for Option<T> {
    fn over(self, lower: Self) -> Self {
        self.or(lower)
    }
}

impl Layer for bool {
    fn over(self, lower: Self) -> Self {
        self || lower
    }
}

/// Field by field; a field missing from the list does not compile.
macro_rules! layered {
    ($t:ident { $($f:ident),* $(,)? }) => {
        impl Layer for $t {
            fn over(self, lower: Self) -> Self {
                $t { $($f: self.$f.over(lower.$f)),* }
            }
        }
    };
}

layered!(Options {
    prompt,
    max_iterations,
    timeout,
    max_cost,
    max_cost_per_step,
    max_tokens,
    max_time,
    no_progress_limit,
    max_sessions_per_step,
    max_sessions_per_hour,
    commit,
    max_failures,
    parallel,
    on_conflict,
    interactive,
    agent,
    fallback,
    fallback_after,
    claude,
    codex,
    gemini,
    pi,
    opencode,
    model,
    permission_mode,
    limit_backoff,
    max_limit_wait,
    tracker,
    confined,
    allow_write,
    allow_domains,
    push,
    pr,
    gate,
    review,
    notify,
    waiting,
    hooks,
    prices,
    claude_args,
});
layered!(WaitingConfig { wait });
layered!(NotifyConfig {
    to,
    desktop,
    ntfy,
    slack,
    discord,
    command,
    events,
    limit_wait_over
});
layered!(ReviewConfig {
    when,
    agent,
    model,
    prompt,
    max_rounds,
    enabled
});
layered!(GateConfig {
    commands,
    timeout,
    when,
    max_failures,
    require_change,
    protect,
    baseline,
    reports
});
layered!(Hooks {
    on_loop_start,
    on_session_start,
    on_session_end,
    on_complete,
    on_waiting,
    on_limit
});

pub fn load(path: &Path) -> Result<Options> {
    let Some(text) = fsutil::read_optional(path)? else {
        return Ok(Options::default());
    };
    toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), said(&e, &text)))
        .context("invalid loop configuration")
}

/// toml's error as it shows it (the line, the text there, what is wrong),
/// but for a key under the wrong table: where it landed and where it
/// belongs, instead of the keys of the table it landed in.
fn said(e: &toml::de::Error, text: &str) -> String {
    let shown = e.to_string();
    let shown = shown.trim_end();
    let better = placement::unknown_key(e.message()).and_then(|key| {
        let doc = text.parse::<toml::Table>().ok()?;
        placement::misplaced(key, &doc)
    });
    match (better, shown.strip_suffix(e.message().trim_end())) {
        (Some(better), Some(where_)) => format!("{where_}{better}"),
        _ => shown.to_string(),
    }
}

/// `30m`, `90s`, `1h30m`, `2h`, `1d` (humantime's units), or plain seconds.
/// Overflow is an error, never a wrap or a panic; each option checks its
/// own bounds.
/// A duration as written (`30m`, `90s`, `1h30m`, or seconds): parsed by
/// clap for a flag and by serde for a config key, so a bad one is refused
/// naming where it was written; its bounds are checked when options are
/// resolved. Said back as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    text: String,
    value: std::time::Duration,
}

impl Span {
    pub fn value(&self) -> std::time::Duration {
        self.value
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// A span of whole seconds (a saved run's limits).
    pub fn secs(n: u64) -> Span {
        Span {
            text: n.to_string(),
            value: std::time::Duration::from_secs(n),
        }
    }
}

impl std::str::FromStr for Span {
    type Err = String;

    fn from_str(s: &str) -> Result<Span, String> {
        Ok(Span {
            text: s.to_string(),
            value: parse_duration(s)?,
        })
    }
}

impl serde::Serialize for Span {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Span, D::Error> {
        d.deserialize_any(SpanVisitor)
    }
}

/// `timeout = "30m"`, or plain seconds: `timeout = 90`.
struct SpanVisitor;

impl serde::de::Visitor<'_> for SpanVisitor {
    type Value = Span;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a duration such as \"30m\", \"90s\", \"1h30m\", or seconds")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Span, E> {
        s.parse().map_err(E::custom)
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Span, E> {
        Ok(Span::secs(n))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Span, E> {
        u64::try_from(n)
            .map(Span::secs)
            .map_err(|_| E::custom(format!("a duration cannot be negative ({n})")))
    }
}

pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    use humantime::DurationError as E;
    let s = s.trim();
    let too_long = || format!("invalid duration {s:?}: too long");
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse()
            .map(std::time::Duration::from_secs)
            .map_err(|_| too_long());
    }
    humantime::parse_duration(s).map_err(|e| match e {
        E::NumberOverflow => too_long(),
        E::UnknownUnit { unit, .. } => {
            format!("invalid duration {s:?}: unknown unit {unit:?} (use d, h, m, s)")
        }
        _ => format!("invalid duration {s:?}: expected e.g. 30m, 90s, 1h30m"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every agent's program is read from the field its key names, and
    /// every program field is an agent's.
    #[test]
    fn each_agents_program_is_its_own_field() {
        let o: Options = toml::from_str(
            "claude = \"/c\"\ncodex = \"/x\"\ngemini = \"/g\"\npi = \"/p\"\nopencode = \"/o\"\n",
        )
        .unwrap();
        let named: Vec<String> = crate::agent::Agent::ALL
            .iter()
            .map(|&a| o.program_of(a).unwrap().display().to_string())
            .collect();
        assert_eq!(named, ["/c", "/x", "/g", "/p", "/o"]);
        let keys: Vec<&str> = o.programs().iter().map(|(k, _)| *k).collect();
        let agents: Vec<&str> = crate::agent::Agent::ALL
            .iter()
            .map(|a| a.program_key())
            .collect();
        assert_eq!(keys, agents);
    }

    /// `--confined`'s help names each agent and what its confinement keeps
    /// in: an agent in ralph's bubblewrap is said to get files only.
    #[test]
    fn the_confined_flags_help_says_what_each_agent_gets() {
        let cmd = <Options as clap::Args>::augment_args(clap::Command::new("loop"));
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_id() == "confined")
            .unwrap();
        let help = arg.get_help().unwrap().to_string().to_lowercase();
        for a in crate::agent::Agent::ALL {
            assert!(help.contains(a.name()), "{a}: {help}");
        }
        if crate::agent::Agent::ALL
            .iter()
            .any(|a| a.caps().confine == crate::agent::Confine::Bwrap)
        {
            assert!(help.contains("files only: network open"), "{help}");
        }
    }

    /// A duration in the config: as text, or plain seconds (as the README
    /// says); anything else refused saying what a duration is.
    #[test]
    fn a_duration_is_text_or_plain_seconds() {
        let read = |t: &str| toml::from_str::<Options>(t).map(|o| o.timeout);
        assert_eq!(read("timeout = 90").unwrap().unwrap().value().as_secs(), 90);
        assert_eq!(
            read("timeout = \"2m\"").unwrap().unwrap().value().as_secs(),
            120
        );
        let e = read("timeout = -5").unwrap_err().to_string();
        assert!(e.contains("a duration cannot be negative (-5)"), "{e}");
        let e = read("timeout = true").unwrap_err().to_string();
        assert!(e.contains("expected a duration such as \"30m\""), "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30m").unwrap().as_secs(), 1800);
        assert_eq!(parse_duration("1h30m").unwrap().as_secs(), 5400);
        assert_eq!(parse_duration("45").unwrap().as_secs(), 45);
        assert!(parse_duration("5x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("10m5").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(parse_duration("1h 30m").unwrap().as_secs(), 5400);
        assert_eq!(parse_duration("2d").unwrap().as_secs(), 172_800);
        for huge in [
            "99999999999999999999",
            "9999999999999999h",
            "18446744073709551615s1s",
        ] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.contains("too long"), "{huge}: {e}");
        }
        // Representable, if absurd: each option's own bounds refuse it.
        assert_eq!(
            parse_duration("18446744073709551615").unwrap().as_secs(),
            u64::MAX
        );
        assert!(
            parse_duration("9999999999999999h")
                .unwrap_err()
                .contains("too long")
        );
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(
            &p,
            "max_iterations = 5\ntimeout = \"10m\"\n[hooks]\non_complete = \"echo done\"\n",
        )
        .unwrap();
        let c = load(&p).unwrap();
        assert_eq!(
            (c.max_iterations, c.hooks.on_complete.as_deref()),
            (Some(5), Some("echo done"))
        );
        // The command line's own flags (where the loop runs) are not settings.
        for wrong in [
            "max_iteration = 5\n",
            "resume = true\n",
            "worktree = \"a\"\n",
        ] {
            std::fs::write(&p, wrong).unwrap();
            let e = format!("{:#}", load(&p).unwrap_err());
            let key = wrong.split(' ').next().unwrap();
            assert!(e.contains("config.toml") && e.contains(key), "{e}");
        }
        std::fs::write(&p, "tracker = \"bd\"\n").unwrap();
        assert_eq!(load(&p).unwrap().tracker, Some(Kind::Bd));
    }

    #[test]
    fn a_higher_layer_wins_field_by_field() {
        let high: Options =
            toml::from_str("max_iterations = 9\n[gate]\nwhen = \"each\"\n").unwrap();
        let low: Options = toml::from_str(
            "max_iterations = 1\nmodel = \"m\"\nconfined = true\n[gate]\ncommands = [\"make\"]\nwhen = \"complete\"\n[hooks]\non_complete = \"x\"\n",
        )
        .unwrap();
        let o = high.over(low);
        assert_eq!(
            (
                o.max_iterations,
                o.model.as_deref(),
                o.confined,
                o.gate.commands.as_deref(),
                o.gate.when.as_deref(),
                o.hooks.on_complete.as_deref()
            ),
            (
                Some(9),
                Some("m"),
                true,
                Some(&["make".to_string()][..]),
                Some("each"),
                Some("x")
            )
        );
    }
}
