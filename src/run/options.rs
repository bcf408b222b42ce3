//! The loop's options: the command line over `.ralph/config.toml` over the
//! defaults (and, for `--resume`, over the limits the run started with), all
//! checked against their bounds before anything is created or started.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::agent::claude::PermissionMode;
use crate::agent::{Agent, Confine};
use crate::config::Kind;
use crate::config::{self, Layer, Options, default_count, parse_duration};
use crate::run::engine::Limits;
use crate::work::project::Project;

/// `ralph loop`'s command line: the loop's settings, and where it runs.
#[derive(Debug, Args, Default)]
pub struct LoopArgs {
    #[command(flatten)]
    pub options: Options,

    /// Go on with the last run that did not finish (interrupted, killed, or
    /// stopped for a human): same run folder, iteration count, cost, counters
    /// and limits; options given here override its limits
    #[arg(long)]
    pub resume: bool,

    /// Say what would run (the agent, the limits, the open steps and what
    /// they will likely cost) and start nothing: no run, no session
    #[arg(long, conflicts_with = "worktree")]
    pub dry_run: bool,

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

    /// A worker of a parallel run works this one step (`Step::key`), set by
    /// the run that starts it
    #[arg(long, hide = true, value_name = "STEP", requires_all = ["worker_name", "worker_budget"])]
    pub worker_step: Option<String>,
    #[arg(long, hide = true, value_name = "NAME", requires = "worker_step")]
    pub worker_name: Option<String>,
    #[arg(long, hide = true, value_name = "FILE", requires = "worker_step")]
    pub worker_budget: Option<PathBuf>,

    /// `ralph merge`: the steps done on the remote's branches, merged by
    /// the coordinator instead of worked here.
    #[arg(skip)]
    pub remote: Option<crate::run::coordinator::RemoteMerge>,
}

/// The settings in force, one typed part per concern; each module is
/// handed only its part.
#[derive(Debug, Clone)]
pub struct Settings {
    pub limits: Limits,
    /// The user's budget for every loop on the machine (their own
    /// settings, never the project's).
    pub machine: Option<crate::config::user::MachineBudget>,
    /// How its sessions are started: agent, prompt, timeout.
    pub session: crate::session::Sessions,
    /// Sessions confined by Claude Code's sandbox, and what they may reach.
    pub confined: Option<crate::confinement::Confinement>,
    /// What a finished step must pass: gate, reviewer, protected files.
    pub completion: crate::work::completion::Completion,
    pub tracker: Option<Kind>,
    /// Steps worked at once and by whom.
    pub workers: crate::parallel::Workers,
    /// Where the run's work goes (`--push`, `--pr`).
    pub shipping: crate::ship::Shipping,
    /// Who is told when the loop needs them (`[notify]`, `--notify`).
    pub notify: Option<crate::notify::Notifier>,
    pub hooks: config::Hooks,
}

impl Settings {
    /// What its sessions are started with, of all the run's settings.
    pub fn given(&self) -> crate::session::launch::Given<'_> {
        crate::session::launch::Given {
            sessions: &self.session,
            confined: self.confined.as_ref(),
            // A worker's step is gated after its merge: its sessions'
            // `ralph complete` runs no gate of its own.
            gate: match self.workers.worker {
                Some(_) => None,
                None => self.completion.gate.as_ref(),
            },
            step: self.workers.worker.as_ref().map(|w| w.label.as_str()),
            protect: &self.completion.protect,
            withhold_token: self.shipping.push || self.shipping.pr || self.workers.worker.is_some(),
        }
    }
}

const DAY: u64 = 86_400;

/// The most `--max-iterations`, `--max-cost` (USD) and `--max-time`
/// (seconds) allow: a limit raised while the run runs stops there too, or
/// the run, saved with it, could not be resumed.
pub const MOST_ITERATIONS: u32 = 1_000_000;
pub const MOST_COST: f64 = 1e6;
pub const MOST_TIME: u64 = 30 * DAY;

/// The agent's program must be an executable file (checked before any run
/// folder is made or session started).
fn executable(agent: Agent, p: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(p) {
        Err(_) => Err(format!("--{agent}: {} does not exist", p.display())),
        Ok(m) if !m.is_file() => Err(format!("--{agent}: {} is not a file", p.display())),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err(format!(
            "--{agent}: {} is not executable (chmod +x it, or name the real {agent})",
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

/// Bounds of each duration option: (name, least, most). Defaults are
/// `config::DEFAULTS`' (`limit-wait-over`, `[notify]`'s, has its own).
const DURATIONS: [(&str, u64, u64); 7] = [
    ("timeout", 1, 7 * DAY),
    ("max-time", 1, MOST_TIME),
    ("limit-backoff", 1, DAY),
    ("max-limit-wait", 60, 30 * DAY),
    ("fallback-after", 1, 30 * DAY),
    ("limit-wait-over", 60, 7 * DAY),
    ("wait-for-answer", 1, 30 * DAY),
];

fn duration(name: &str, given: Option<&config::Span>) -> Result<Duration, String> {
    let (_, least, most) = DURATIONS
        .iter()
        .find(|d| d.0 == name)
        .expect("a known option");
    let default = || match name {
        "limit-wait-over" => "30m",
        _ => crate::config::default_of(&name.replace('-', "_")),
    };
    let (text, d) = match given {
        Some(span) => (span.text(), span.value()),
        None => (
            default(),
            parse_duration(default()).expect("a default that parses"),
        ),
    };
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
    /// The agent's program as named, if it was (else its name on PATH).
    pub program: Option<PathBuf>,
    /// The agents' programs as named (`--claude`, `--codex`, ...).
    pub named: Vec<(Agent, PathBuf)>,
    pub settings: Settings,
}

/// Options from a command line given in `cwd`, with their paths made
/// absolute (a resume may run elsewhere).
pub fn anchored(mut o: Options, cwd: &std::path::Path) -> Options {
    for p in [
        &mut o.prompt,
        &mut o.claude,
        &mut o.codex,
        &mut o.gemini,
        &mut o.pi,
        &mut o.opencode,
    ]
    .into_iter()
    .flatten()
    .filter(|p| p.is_relative())
    {
        *p = cwd.join(&*p);
    }
    o
}

/// An option's default as `--help` says it, for a key that has one.
fn default_said(key: &str) -> Option<&'static str> {
    crate::config::DEFAULTS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v)
}

/// What `given` sets differently from `saved`, one `key = value (was
/// value)` each (nested keys as `gate.commands`): what a resume's command
/// line changes.
pub fn overridden(given: &Options, saved: &Options) -> Vec<String> {
    use serde_json::Value;
    fn walk(prefix: &str, g: &Value, s: &Value, out: &mut Vec<String>) {
        let Value::Object(g) = g else { return };
        for (k, v) in g {
            let was = s.get(k).unwrap_or(&Value::Null);
            let key = format!("{prefix}{k}");
            match v {
                Value::Null | Value::Bool(false) => {}
                Value::Object(_) => walk(&format!("{key}."), v, was, out),
                _ if v == was => {}
                Value::Array(a) if a.is_empty() && was.is_null() => {}
                _ => out.push(format!(
                    "{key} = {v} (was {})",
                    match (was.is_null(), default_said(&key)) {
                        (false, _) => was.to_string(),
                        (true, Some(d)) => format!("the default, {d}"),
                        (true, None) => "not given".to_string(),
                    }
                )),
            }
        }
    }
    let mut out = Vec::new();
    let (g, s) = (
        serde_json::to_value(given).unwrap_or_default(),
        serde_json::to_value(saved).unwrap_or_default(),
    );
    walk("", &g, &s, &mut out);
    if given.notify.to.is_some() && given.notify.to != saved.notify.to {
        out.push(format!(
            "notify = {:?} (was {:?})",
            given.notify.to.clone().unwrap_or_default(),
            saved.notify.to.clone().unwrap_or_default()
        ));
    }
    out
}

/// A resumed run's limits as options, to layer between the command line
/// and the config.
fn saved_options(l: &Limits) -> Options {
    let secs = |d: Duration| Some(config::Span::secs(d.as_secs()));
    Options {
        max_iterations: Some(l.max_iterations),
        max_cost: l.max_cost,
        max_cost_per_step: l.max_cost_per_step,
        max_tokens: l.max_tokens,
        max_time: l.max_time.map(|d| config::Span::secs(d.as_secs())),
        no_progress_limit: Some(l.no_progress_limit),
        max_failures: Some(l.max_failures),
        max_sessions_per_step: Some(l.max_sessions_per_step),
        max_sessions_per_hour: l.max_sessions_per_hour,
        limit_backoff: secs(l.limit_backoff),
        max_limit_wait: secs(l.max_limit_wait),
        ..Options::default()
    }
}

/// Layer and bound. `saved` holds the limits of a run being resumed.
/// Errors are usage errors (exit 2), said with the option's name.
pub fn resolve(cli: &Options, cfg: &Options, saved: Option<&Limits>) -> Result<Resolved, String> {
    layered(cli, cfg, saved).map_err(|e| where_from(e, cli, cfg))
}

/// An error about `--name` names where its value came from: the config's
/// key when the command line did not give it.
fn where_from(e: String, cli: &Options, cfg: &Options) -> String {
    let Some(rest) = e.strip_prefix("--") else {
        return e;
    };
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let said = &rest[name.len()..];
    // About the value itself (`--timeout: ...`, `--max-failures must be`),
    // not about how it goes with others (`--agent codex: --interactive`).
    if !(said.starts_with(": ") || said.starts_with(" must be")) {
        return e;
    }
    let key = name.replace('-', "_");
    let given = |o: &Options| {
        serde_json::to_value(o)
            .ok()
            .and_then(|v| v.get(&key).cloned())
            .is_some_and(|v| !v.is_null())
    };
    if given(cli) || !given(cfg) {
        return e;
    }
    format!("{key} (.ralph/config.toml){said}")
}

impl PromptFrom {
    fn of(cli: &Options, cfg: &Options) -> PromptFrom {
        match (&cli.prompt, &cfg.prompt) {
            (Some(p), _) => PromptFrom::CommandLine(p.clone()),
            (None, Some(p)) => PromptFrom::Config(p.clone()),
            (None, None) => PromptFrom::Default,
        }
    }
}

fn layered(cli: &Options, cfg: &Options, saved: Option<&Limits>) -> Result<Resolved, String> {
    let prompt = PromptFrom::of(cli, cfg);
    let o = cli
        .clone()
        .over(saved.map(saved_options).unwrap_or_default())
        .over(cfg.clone());
    let agent = o.agent.unwrap_or_default();
    let fallbacks = agents_of(agent, &o)?;
    let permission_mode = permission_mode_of(&o)?;
    check_money(&o)?;
    let gate = crate::work::gate::Gate::from_config(&o.gate)?;
    let claude_args = o.claude_args.clone().unwrap_or_default();
    let confined = confinement(cli, &o, agent, &claude_args)?;
    refuse_commit_with_git_writer(&o, confined.is_some(), agent, &fallbacks)?;
    let review = reviewer_of(cli, &o, agent)?;
    let notify = notifier_of(&o.notify)?;
    let limits = limits_of(&o, (gate.as_ref(), review.as_ref()), 1 + fallbacks.len())?;
    let parallel = parallel_of(&o)?;
    let named = Agent::ALL
        .iter()
        .filter_map(|&a| Some((a, o.program_of(a)?.clone())))
        .collect();
    Ok(Resolved {
        prompt,
        program: o.program_of(agent).cloned(),
        named,
        settings: Settings {
            limits,
            machine: None,
            session: crate::session::Sessions {
                prompt: PathBuf::new(),
                timeout: duration("timeout", o.timeout.as_ref())?,
                interactive: o.interactive,
                agent,
                program: PathBuf::new(),
                fallbacks: fallbacks.iter().map(|&f| (f, PathBuf::new())).collect(),
                prices: o.prices.clone().unwrap_or_default(),
                model: o.model,
                permission_mode,
                claude_args,
            },
            completion: crate::work::completion::Completion {
                commit_auto: o.commit == Some(crate::config::CommitMode::Auto),
                protect: o.gate.protect.clone().unwrap_or_default(),
                gate,
                review,
            },
            hooks: o.hooks,
            tracker: o.tracker,
            notify,
            confined,
            workers: crate::parallel::Workers {
                count: parallel,
                on_conflict: o.on_conflict.unwrap_or_default(),
                worker: None,
                answer_within: None,
            },
            shipping: crate::ship::Shipping {
                push: o.push || o.pr,
                pr: o.pr,
            },
        },
    })
}

/// A confined agent that can write `.git` (its hooks too) and `--commit
/// auto`, which runs the project's git hooks outside the sandbox.
fn refuse_commit_with_git_writer(
    o: &Options,
    confined: bool,
    agent: Agent,
    fallbacks: &[Agent],
) -> Result<(), String> {
    if o.commit == Some(crate::config::CommitMode::Auto)
        && confined
        && std::iter::once(&agent)
            .chain(fallbacks)
            .any(|a| a.caps().sandbox_writes_git)
    {
        return Err(COMMIT_WITH_CODEX.into());
    }
    Ok(())
}

/// `--parallel N`: 1 to 16 (each a session, a worktree, a share of the
/// machine); not with an interactive loop, which has one terminal.
fn parallel_of(o: &Options) -> Result<u32, String> {
    let n = o.parallel.unwrap_or(1);
    if !(1..=16).contains(&n) {
        return Err("--parallel must be 1 to 16".into());
    }
    if n > 1 && o.interactive {
        return Err("--parallel: an interactive loop has one terminal; run the workers in print mode (without --interactive)".into());
    }
    Ok(n)
}

/// `--max-cost` and `[prices]`: what the cost cap counts with.
fn check_money(o: &Options) -> Result<(), String> {
    if o.max_cost
        .is_some_and(|c| !c.is_finite() || c <= 0.0 || c > MOST_COST)
    {
        return Err("--max-cost must be a positive amount of USD, at most 1000000".into());
    }
    if o.max_cost_per_step
        .is_some_and(|c| !c.is_finite() || c <= 0.0 || c > MOST_COST)
    {
        return Err("--max-cost-per-step must be a positive amount of USD, at most 1000000".into());
    }
    check_prices(o.prices.as_ref())
}

/// The most a price may say, USD per million tokens.
const MAX_PRICE: f64 = 100_000.0;

/// `[prices]`: each a finite amount, not negative (a NaN or negative price
/// would switch `--max-cost` off).
fn check_prices(
    prices: Option<&std::collections::BTreeMap<String, crate::agent::prices::Price>>,
) -> Result<(), String> {
    for (model, p) in prices.into_iter().flatten() {
        for (key, v) in [
            ("input", p.input),
            ("cached_input", p.cached_input),
            ("output", p.output),
        ] {
            if !v.is_finite() || !(0.0..=MAX_PRICE).contains(&v) {
                return Err(format!(
                    "[prices.{model:?}] {key} = {v}: a price is USD per million tokens, from 0 to {MAX_PRICE}"
                ));
            }
        }
    }
    Ok(())
}

/// The run's notifications: `--notify` targets, else `[notify]`'s channels;
/// `None` when there are none.
fn notifier_of(n: &config::NotifyConfig) -> Result<Option<crate::notify::Notifier>, String> {
    use crate::notify::{Channel, Event, Notifier};
    let channels: Vec<Channel> = match &n.to {
        Some(to) => to
            .iter()
            .map(|t| {
                // A secret: out of ralph's environment once read.
                let env = crate::secrets::var;
                let config = |kind: &str| match kind {
                    "ntfy" => n.ntfy.clone(),
                    "slack" => n.slack.clone(),
                    "discord" => n.discord.clone(),
                    _ => None,
                };
                Channel::parse(t, &env, &config)
            })
            .collect::<Result<_, _>>()?,
        None => {
            let keys = [
                ("ntfy", &n.ntfy),
                ("slack", &n.slack),
                ("discord", &n.discord),
                ("command", &n.command),
            ];
            let mut channels: Vec<Channel> = Vec::new();
            if n.desktop == Some(true) {
                channels.push(Channel::Desktop);
            }
            for (kind, value) in keys {
                let Some(value) = value else { continue };
                match Channel::of(kind, value).map_err(|e| format!("[notify] {e}"))? {
                    Some(c) => channels.push(c),
                    None => return Err(format!("[notify] {kind} is empty")),
                }
            }
            channels
        }
    };
    if channels.is_empty() {
        return Ok(None);
    }
    let events = match &n.events {
        Some(e) => e
            .iter()
            .map(|e| Event::parse(e))
            .collect::<Result<_, _>>()?,
        None => Event::ALL.to_vec(),
    };
    Ok(Some(Notifier {
        channels,
        events,
        limit_wait_over: duration("limit-wait-over", n.limit_wait_over.as_ref())
            .map_err(|e| e.replace("--limit-wait-over", "[notify] limit_wait_over"))?,
    }))
}

/// The reviewer, if the run has one: on with `--review`, a `[review]` table
/// (unless `enabled = false`), or a reviewer's agent or model given. Its
/// agent is checked as a fallback's is, in print mode.
fn reviewer_of(
    cli: &Options,
    o: &Options,
    agent: Agent,
) -> Result<Option<crate::work::review::Reviewer>, String> {
    use crate::work::review::{Reviewer, When};
    let r = &o.review;
    if !(cli.review.when.is_some() || r.on()) {
        return Ok(None);
    }
    let when = When::parse(r.when.as_deref().unwrap_or("complete"))
        .map_err(|e| format!("--review / [review] when: {e}"))?;
    let reviewer = r.agent.unwrap_or(agent);
    let own = Options {
        model: r.model.clone(),
        interactive: false,
        permission_mode: None,
        ..o.clone()
    };
    agent_fits(reviewer, &own).map_err(|e| format!("the reviewer: {e}"))?;
    Ok(Some(Reviewer {
        agent: reviewer,
        program: PathBuf::new(),
        model: r.model.clone(),
        when,
        prompt: r.prompt.clone(),
        max_rounds: count("review max_rounds", r.max_rounds.unwrap_or(3), 100)
            .map_err(|e| e.replace("--review max_rounds", "[review] max_rounds"))?,
    }))
}

/// `--commit auto` runs the project's hooks, which confined Codex can write.
const COMMIT_WITH_CODEX: &str = "--commit auto runs the project's git hooks, which a confined Codex session can write (its sandbox leaves .git writable): drop one of them";

/// Claude Code's permission mode, one of its own.
fn permission_mode_of(o: &Options) -> Result<PermissionMode, String> {
    let mode = o
        .permission_mode
        .as_deref()
        .unwrap_or(crate::config::default_of("permission_mode"));
    PermissionMode::parse(mode).ok_or_else(|| {
        let modes: Vec<&str> = PermissionMode::ALL.iter().map(|m| m.word()).collect();
        format!(
            "--permission-mode: {mode:?} is not one of Claude Code's modes: {}",
            modes.join(", ")
        )
    })
}

/// The run's fallback agents, each checked as the run's own agent is (with
/// its own default model: a price cap is the run's agent's).
fn agents_of(agent: Agent, o: &Options) -> Result<Vec<Agent>, String> {
    agent_fits(agent, o)?;
    let mut fallbacks: Vec<Agent> = Vec::new();
    for &f in o.fallback.iter().flatten() {
        if f == agent || fallbacks.contains(&f) {
            return Err(format!("--fallback {f}: it is already in the run's agents"));
        }
        let own = Options {
            model: None,
            max_cost: None,
            max_cost_per_step: None,
            ..o.clone()
        };
        agent_fits(f, &own)?;
        fallbacks.push(f);
    }
    Ok(fallbacks)
}

/// The run's limits, each within its bounds.
fn limits_of(
    o: &Options,
    (gate, review): (
        Option<&crate::work::gate::Gate>,
        Option<&crate::work::review::Reviewer>,
    ),
    agents: usize,
) -> Result<Limits, String> {
    Ok(Limits {
        max_iterations: count(
            "max-iterations",
            o.max_iterations.unwrap_or(default_count("max_iterations")),
            MOST_ITERATIONS,
        )?,
        max_cost: o.max_cost,
        max_cost_per_step: o.max_cost_per_step,
        max_tokens: match o.max_tokens {
            Some(0) => return Err("--max-tokens must be more than 0".into()),
            t => t,
        },
        no_progress_limit: count(
            "no-progress-limit",
            o.no_progress_limit
                .unwrap_or(default_count("no_progress_limit")),
            10_000,
        )?,
        max_failures: count(
            "max-failures",
            o.max_failures.unwrap_or(default_count("max_failures")),
            10_000,
        )?,
        limit_backoff: duration("limit-backoff", o.limit_backoff.as_ref())?,
        max_limit_wait: duration("max-limit-wait", o.max_limit_wait.as_ref())?,
        max_gate_failures: gate.map_or(3, |g| g.max_failures),
        agents,
        max_sessions_per_step: count(
            "max-sessions-per-step",
            o.max_sessions_per_step
                .unwrap_or(default_count("max_sessions_per_step")),
            1_000,
        )?,
        max_sessions_per_hour: o
            .max_sessions_per_hour
            .map(|n| count("max-sessions-per-hour", n, 10_000))
            .transpose()?,
        fallback_after: duration("fallback-after", o.fallback_after.as_ref())?,
        review_each_step: review.is_some_and(|r| r.when == crate::work::review::When::Step),
        max_review_rounds: review.map_or(3, |r| r.max_rounds),
        review_complete: review.is_some_and(|r| r.when == crate::work::review::When::Complete),
        gate_each: gate.is_some_and(|g| g.when == crate::work::gate::When::Each),
        require_change: o.gate.require_change.unwrap_or(false),
        baseline: gate.is_some_and(|g| g.baseline),
        max_time: o
            .max_time
            .as_ref()
            .map(|t| duration("max-time", Some(t)))
            .transpose()?,
        push_each: o.push || o.pr,
        closes_issues: crate::work::tracker::caps(o.tracker).ralph_closes,
        wait_for_answer: o
            .waiting
            .wait
            .as_ref()
            .map(|t| duration("wait-for-answer", Some(t)))
            .transpose()?,
    })
}

/// What only some agents can do, refused for the others by name: the
/// interactive TUI and the permission mode are Claude Code's; only Claude
/// Code's sandbox filters the network by domain (Codex's allows all or
/// none, ralph's bubblewrap leaves it open); a cost cap needs the model's
/// price.
fn agent_fits(agent: Agent, o: &Options) -> Result<(), String> {
    let can = agent.caps();
    let refuse = |what: &str| Err(format!("--agent {agent}: {what}"));
    if o.interactive && !can.interactive {
        return refuse(
            "--interactive is for Claude Code's TUI only (its Stop hook ends each session); drop it",
        );
    }
    if o.permission_mode.is_some() && !can.permission_modes {
        return refuse("--permission-mode is Claude Code's; drop it");
    }
    if o.confined && !can.confinable() {
        return refuse(&format!(
            "--confined cannot confine {agent}; use --agent claude or codex for a confined run"
        ));
    }
    if o.confined
        && !can.network_by_domain
        && o.allow_domains.as_ref().is_some_and(|d| !d.is_empty())
    {
        return refuse(&match can.confine {
            Confine::Bwrap => format!(
                "ralph confines {agent} with bubblewrap, its files only: its network stays open (its model's API is reached over it), with no filtering by domain: drop --allow-domain (Claude Code's sandbox is the one that filters by domain)"
            ),
            _ => "Codex's sandbox allows the network to every domain or none: drop --allow-domain (confined Codex sessions get no network)".into(),
        });
    }
    let cap = o
        .max_cost
        .map(|c| ("--max-cost", c))
        .or(o.max_cost_per_step.map(|c| ("--max-cost-per-step", c)));
    if let Some((flag, max)) = cap.filter(|_| !can.reports_cost) {
        let priced = o
            .model
            .as_deref()
            .and_then(|m| crate::agent::prices::price(m, &o.prices.clone().unwrap_or_default()));
        if priced.is_none() {
            return refuse(&format!(
                "{flag} {max} needs the cost of each session, and {agent} reports tokens only: give --model with a price ralph knows (README, Agents) or one in [prices] of .ralph/config.toml"
            ));
        }
    }
    Ok(())
}

/// `--confined` and what it allows; nothing that would widen a confined
/// session. What it allows given without it on the command line is a
/// mistake worth saying; in the config it waits for `confined = true`.
fn confinement(
    cli: &Options,
    o: &Options,
    agent: Agent,
    claude_args: &[String],
) -> Result<Option<crate::confinement::Confinement>, String> {
    if !o.confined {
        if cli.allow_write.is_some() || cli.allow_domains.is_some() {
            return Err("--allow-write and --allow-domain are for --confined sessions".into());
        }
        return Ok(None);
    }
    if o.permission_mode.is_some() {
        return Err(
            "--confined sets the permission mode itself (acceptEdits inside the sandbox); drop --permission-mode / permission_mode"
                .into(),
        );
    }
    // The agent's own arguments could widen its own sandbox; ralph's
    // bubblewrap is outside their reach.
    if let Some(arg) = crate::sandbox::confine::widening(claude_args)
        .filter(|_| agent.caps().confine != Confine::Bwrap)
    {
        return Err(format!(
            "--confined: the claude argument {:?} would widen a confined session (only {} are allowed); drop it",
            arg,
            crate::sandbox::confine::NARROW_ARGS.join(", ")
        ));
    }
    Ok(Some(crate::confinement::Confinement {
        allow_write: o.allow_write.clone().unwrap_or_default(),
        allow_domains: o.allow_domains.clone().unwrap_or_default(),
    }))
}

/// The settings in force: the config approved, the options merged and
/// bounded (`resolve`), then checked against the machine: the prompt there
/// and not empty, the claude executable, the sandbox's programs.
pub fn settings(
    cli: &Options,
    project: &Project,
    saved: Option<&Limits>,
) -> Result<Settings, String> {
    let cfg: Options = config::load(&project.config()).map_err(|e| format!("{e:#}"))?;
    // Merged and bounded only (nothing read or run): which agents the run
    // starts, for what it must have approved.
    let r = resolve(cli, &cfg, saved)?;
    approved_for(project, &cfg, &r.settings)?;
    let prompt = prompt_file(project, &r.prompt)?;
    let mut s = on_this_machine(cli, project, r)?;
    s.session.prompt = prompt;
    s.machine = config::user::budget().map_err(|e| format!("{e:#}"))?;
    Ok(s)
}

/// The settings of one planning session (`ralph plan`): the run's agent
/// alone (no fallback, no reviewer), approved as a loop's, without the
/// loop's prompt (the session gets the planning prompt).
pub fn planning_settings(cli: &Options, project: &Project) -> Result<Settings, String> {
    let cfg: Options = config::load(&project.config()).map_err(|e| format!("{e:#}"))?;
    let mut r = resolve(cli, &cfg, None)?;
    r.settings.session.fallbacks.clear();
    r.settings.completion.review = None;
    r.settings.session.interactive = false;
    approved_for(project, &cfg, &r.settings)?;
    on_this_machine(cli, project, r)
}

/// Resolved settings checked against the machine: the programs there and
/// executable, the sandbox's programs.
fn on_this_machine(cli: &Options, project: &Project, r: Resolved) -> Result<Settings, String> {
    // A path the config names (`claude = "bin/claude"`) is the project's,
    // as every config path is, whatever folder ralph runs from (doctor
    // reads it so too); one typed on the command line is where you are.
    let located = |agent: Agent, p: PathBuf| match cli.program_of(agent) {
        None if p.is_relative() && p.components().count() > 1 => project.root.join(p),
        _ => p,
    };
    let named = |agent: Agent| {
        r.named
            .iter()
            .find(|(a, _)| *a == agent)
            .map(|(_, p)| located(agent, p.clone()))
    };
    let program = r
        .program
        .clone()
        .map(|p| located(r.settings.session.agent, p));
    let mut s = r.settings;
    s.session.program = program_file(s.session.agent, program)?;
    for (agent, program) in &mut s.session.fallbacks {
        *program = program_file(*agent, named(*agent))?;
    }
    if let Some(rv) = &mut s.completion.review {
        rv.program =
            program_file(rv.agent, named(rv.agent)).map_err(|e| format!("the reviewer: {e}"))?;
        if let Some(p) = &rv.prompt {
            let p = inside(project, p).map_err(|e| e.replace("prompt =", "[review] prompt ="))?;
            review_prompt_file(&p)?;
            rv.prompt = Some(p);
        }
    }
    // Claude Code's sandbox needs bubblewrap and socat here; Codex brings
    // its own; ralph's own confinement needs bubblewrap.
    let agents: Vec<Agent> = std::iter::once(s.session.agent)
        .chain(s.session.fallbacks.iter().map(|(a, _)| *a))
        .chain(s.completion.review.as_ref().map(|r| r.agent))
        .collect();
    let why = agents
        .iter()
        .filter(|_| s.confined.is_some())
        .find_map(|&a| crate::sandbox::confine::cannot_confine(a, |p| which::which(p).is_ok()));
    if let Some(why) = why {
        return Err(format!("--confined cannot be had here: {why}"));
    }
    Ok(s)
}

/// What the config makes ralph run or allow, and what the files of the
/// agents this run starts (its own, its fallbacks, its reviewer) make them
/// run, count only once approved; another agent's files do not hold the
/// run up.
fn approved_for(project: &Project, cfg: &Options, s: &Settings) -> Result<(), String> {
    use crate::trust::approval;
    let mut agents = vec![s.session.agent];
    agents.extend(s.session.fallbacks.iter().map(|(a, _)| *a));
    agents.extend(s.completion.review.as_ref().map(|r| r.agent));
    let parts = approval::project_parts(&project.root, cfg);
    let standing = approval::standing_for(&project.root, &parts, &agents);
    if let approval::Standing::NotApproved { .. } = standing {
        let read = approval::parts_for(&parts, &agents);
        return Err(approval::refusal(&project.root, &read, &standing));
    }
    Ok(())
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
        Ok(None) if matches!(from, PromptFrom::Default) => Err(not_set_up(project)),
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

/// No prompt where a loop looks for one: what is missing, and the way to
/// set the folder up (with git first, where it is no repository).
fn not_set_up(project: &Project) -> String {
    let root = &project.root;
    let mut said = format!(
        "no prompt at {} (nor {}): ",
        project.ralph_dir().join("prompt.md").display(),
        root.join("prompt.md").display()
    );
    if !project.ralph_dir().is_dir() {
        said.push_str("this folder is not set up for ralph yet. ");
    }
    if !crate::run::progress::in_git(root) {
        said.push_str(
            "It is no git repository either, and the loop measures progress with git: run `git init && git commit --allow-empty -m start`, then ",
        );
    } else {
        said.push_str("Run ");
    }
    said.push_str("`ralph init` (or /ralph-setup in Claude Code), or pass --prompt FILE");
    said
}

/// `[review] prompt`: there and not empty.
fn review_prompt_file(p: &std::path::Path) -> Result<(), String> {
    match crate::fsutil::read_optional(p) {
        Ok(Some(t)) if !t.trim().is_empty() => Ok(()),
        Ok(Some(_)) => Err(format!("[review] prompt {} is empty", p.display())),
        Ok(None) => Err(format!("[review] prompt: no file at {}", p.display())),
        Err(e) => Err(format!("[review] prompt: {e:#}")),
    }
}

/// The agent's program: the one named (a path, or a name on PATH), else its
/// name on PATH; an executable file.
fn program_file(agent: Agent, named: Option<PathBuf>) -> Result<PathBuf, String> {
    let program = match named {
        Some(p) if p.components().count() > 1 => {
            std::path::absolute(p).map_err(|e| e.to_string())?
        }
        Some(p) => which::which(&p).map_err(|_| format!("{} not found on PATH", p.display()))?,
        None => which::which(agent.name()).map_err(|_| {
            format!(
                "`{agent}` not found on PATH. Install it ({}) or pass --{agent} PATH",
                agent.install()
            )
        })?,
    };
    executable(agent, &program)?;
    Ok(program)
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

    fn args() -> Options {
        Options {
            claude: Some(PathBuf::from("/bin/true")),
            ..Default::default()
        }
    }

    /// `--help` says each default, and a loop with no options runs with it.
    #[test]
    fn the_defaults_help_shows_are_the_ones_a_loop_runs_with() {
        let help = crate::cli::command()
            .find_subcommand_mut("loop")
            .expect("ralph loop")
            .render_help()
            .to_string();
        // Each option's entry: its line and those after it, up to the next.
        let mut entries: Vec<String> = Vec::new();
        for raw in help.lines() {
            let line = raw.trim();
            // An option's line is indented by at most 6 (`  -C`, `      --x`);
            // its help's by more.
            let starts = line.starts_with('-') && raw.len() - raw.trim_start().len() <= 6;
            match entries.last_mut() {
                Some(e) if !starts => {
                    e.push(' ');
                    e.push_str(line);
                }
                _ => entries.push(line.to_string()),
            }
        }
        for (key, default) in crate::config::DEFAULTS {
            let flag = format!("--{} ", key.replace('_', "-"));
            let entry = entries
                .iter()
                .find(|e| e.starts_with(&flag))
                .expect("the flag is in --help");
            assert!(
                entry.trim_end().ends_with(&format!("[default: {default}]")),
                "{entry}"
            );
        }
        let (_d, p) = project("");
        let s = settings(&args(), &p, None).unwrap();
        let l = &s.limits;
        let d = |k: &str| parse_duration(crate::config::default_of(k)).unwrap();
        assert_eq!(
            (
                l.max_iterations,
                l.no_progress_limit,
                l.max_sessions_per_step,
                l.max_failures
            ),
            (50, 3, 5, 3)
        );
        assert_eq!(
            (
                s.session.timeout,
                l.fallback_after,
                l.limit_backoff,
                l.max_limit_wait
            ),
            (
                d("timeout"),
                d("fallback_after"),
                d("limit_backoff"),
                d("max_limit_wait")
            )
        );
        assert_eq!(s.session.permission_mode, PermissionMode::BypassPermissions);
    }

    /// A bad value says where it was given: the flag, or the config's key.
    #[test]
    fn an_error_names_the_flag_or_the_config_key_it_came_from() {
        // Not a duration: the config's reader says where.
        let (_d, p) = project("timeout = \"5x\"\n");
        let e = settings(&args(), &p, None).unwrap_err();
        assert!(
            e.contains("config.toml") && e.contains("line 1") && e.contains("unknown unit \"x\""),
            "{e}"
        );
        // A duration out of range: the key is named.
        let (_d, p) = project("timeout = \"0\"\n");
        let e = settings(&args(), &p, None).unwrap_err();
        assert!(
            e.starts_with("timeout (.ralph/config.toml): \"0\" is out of range"),
            "{e}"
        );
        let (_d, p) = project("max_iterations = 0\n");
        let e = settings(&args(), &p, None).unwrap_err();
        assert_eq!(
            e,
            "max_iterations (.ralph/config.toml) must be from 1 to 1000000, not 0"
        );
        let flag = Options {
            max_iterations: Some(0),
            ..args()
        };
        let e = settings(&flag, &p, None).unwrap_err();
        assert!(e.starts_with("--max-iterations must be"), "{e}");
    }

    #[test]
    fn durations_and_counts_are_bounded() {
        let (_d, p) = project("");
        let s = settings(&args(), &p, None).unwrap();
        assert_eq!(
            (
                s.session.timeout.as_secs(),
                s.limits.max_limit_wait.as_secs()
            ),
            (1800, 8 * 3600)
        );
        // Too long to be a duration at all: clap (or the config's reader)
        // refuses it as it parses it.
        let e = "9999999999999999h".parse::<config::Span>().unwrap_err();
        assert!(e.contains("too long"), "{e}");
        let bad: [(&str, Options); 6] = [
            (
                "--timeout",
                Options {
                    timeout: Some("18446744073709551615".parse().unwrap()),
                    ..args()
                },
            ),
            (
                "--timeout",
                Options {
                    timeout: Some("0".parse().unwrap()),
                    ..args()
                },
            ),
            (
                "--max-iterations",
                Options {
                    max_iterations: Some(0),
                    ..args()
                },
            ),
            (
                "--no-progress-limit",
                Options {
                    no_progress_limit: Some(0),
                    ..args()
                },
            ),
            (
                "--max-failures",
                Options {
                    max_failures: Some(0),
                    ..args()
                },
            ),
            (
                "--max-cost",
                Options {
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
        let e = settings(&args(), &p, None).unwrap_err();
        assert!(e.contains("line 1") && e.contains("too long"), "{e}");
    }

    #[test]
    fn prices_are_finite_and_not_negative() {
        let cfg = |t: &str| -> Options { toml::from_str(t).unwrap() };
        for (text, says) in [
            (
                "[prices.m]\ninput = -1.0\ncached_input = 0.0\noutput = 1.0",
                "[prices.\"m\"] input = -1",
            ),
            (
                "[prices.m]\ninput = 1.0\ncached_input = nan\noutput = 1.0",
                "cached_input = NaN",
            ),
            (
                "[prices.m]\ninput = 1.0\ncached_input = 0.0\noutput = inf",
                "output = inf",
            ),
            (
                "[prices.m]\ninput = 1.0\ncached_input = 0.0\noutput = 1e9",
                "from 0 to 100000",
            ),
        ] {
            let e = resolve(&Options::default(), &cfg(text), None).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        let ok = cfg("[prices.m]\ninput = 0.0\ncached_input = 0.0\noutput = 2.5");
        assert!(resolve(&Options::default(), &ok, None).is_ok());
    }

    #[test]
    fn a_resumes_changes_are_named_and_the_rest_is_kept() {
        let saved = Options {
            confined: true,
            max_iterations: Some(50),
            gate: crate::config::GateConfig {
                commands: Some(vec!["false".into()]),
                ..Default::default()
            },
            ..Default::default()
        };
        let given = Options {
            max_iterations: Some(9),
            gate: crate::config::GateConfig {
                commands: Some(vec!["false".into()]),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            overridden(&given, &saved),
            vec!["max_iterations = 9 (was 50)".to_string()]
        );
        assert!(overridden(&Options::default(), &saved).is_empty());
        // What the run was started without: its default, said with it.
        let started_bare = Options::default();
        let raised = Options {
            max_iterations: Some(3),
            max_cost: Some(2.0),
            ..Default::default()
        };
        assert_eq!(
            overridden(&raised, &started_bare),
            [
                "max_iterations = 3 (was the default, 50)",
                "max_cost = 2.0 (was not given)"
            ]
        );
        let merged = given.over(saved);
        assert!(merged.confined && merged.max_iterations == Some(9));
        let rel = anchored(
            Options {
                prompt: Some("p.md".into()),
                claude: Some("/bin/claude".into()),
                ..Default::default()
            },
            std::path::Path::new("/w"),
        );
        assert_eq!(
            (rel.prompt, rel.claude),
            (Some("/w/p.md".into()), Some("/bin/claude".into()))
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
            ..Limits::sample()
        };
        let s = settings(&args(), &p, Some(&saved)).unwrap();
        assert_eq!(s.limits, saved);
        let s = settings(
            &Options {
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

    /// A limit raised while the run ran (`ralph raise`, a `/ralph raise`
    /// comment) is saved with the run: however far it was raised, the run
    /// resumes, its limits at most what the command line allows.
    #[test]
    fn a_run_raised_past_an_options_most_still_resumes() {
        use crate::control::Limit;
        let (_d, p) = project("");
        let mut saved = Limits {
            max_cost: Some(5.0),
            max_time: Some(Duration::from_secs(3600)),
            ..Limits::sample()
        };
        for l in [
            Limit::Time(u64::MAX),
            Limit::Cost(999_999.0),
            Limit::Iterations(u32::MAX),
        ] {
            assert!(crate::run::control::raise(&mut saved, l), "{l:?}");
        }
        let s = settings(&args(), &p, Some(&saved)).expect("the raised run resumes");
        assert_eq!(
            (
                s.limits.max_time,
                s.limits.max_cost,
                s.limits.max_iterations
            ),
            (Some(Duration::from_secs(30 * DAY)), Some(1e6), 1_000_000)
        );
    }

    #[test]
    fn resolving_reads_nothing_and_takes_the_command_line_over_the_config() {
        let cfg: Options = toml::from_str(
            "prompt = \"p.md\"\nclaude = \"/nowhere/claude\"\nmax_iterations = 7\nmodel = \"m\"\n",
        )
        .unwrap();
        let r = resolve(&Options::default(), &cfg, None).unwrap();
        assert_eq!(r.prompt, PromptFrom::Config(PathBuf::from("p.md")));
        assert_eq!(r.program, Some(PathBuf::from("/nowhere/claude")));
        assert_eq!(
            (
                r.settings.limits.max_iterations,
                r.settings.session.model.as_deref()
            ),
            (7, Some("m"))
        );
        let a = Options {
            prompt: Some(PathBuf::from("mine.md")),
            max_iterations: Some(9),
            ..Default::default()
        };
        let r = resolve(&a, &cfg, None).unwrap();
        assert_eq!(r.prompt, PromptFrom::CommandLine(PathBuf::from("mine.md")));
        assert_eq!(r.settings.limits.max_iterations, 9);
        assert_eq!(
            resolve(&Options::default(), &Options::default(), None)
                .unwrap()
                .prompt,
            PromptFrom::Default
        );
        let confined = Options {
            confined: true,
            claude_args: Some(vec!["--add-dir".into(), "/".into()]),
            ..Default::default()
        };
        assert!(
            resolve(&confined, &Options::default(), None)
                .unwrap_err()
                .contains("\"--add-dir\" would widen")
        );
    }

    #[test]
    fn what_only_claude_can_do_is_refused_for_the_other_agents() {
        let agent = |a: Agent, extra: &str| -> Result<Resolved, String> {
            let cfg: Options = toml::from_str(&format!("agent = \"{a}\"\n{extra}")).unwrap();
            resolve(&Options::default(), &cfg, None)
        };
        for (a, extra, says) in [
            (
                Agent::Codex,
                "interactive = true",
                "--interactive is for Claude Code",
            ),
            (
                Agent::Gemini,
                "permission_mode = \"plan\"",
                "--permission-mode is Claude Code's",
            ),
            (
                Agent::Gemini,
                "confined = true\nallow_domains = [\"x.org\"]",
                "ralph confines gemini with bubblewrap, its files only",
            ),
            (
                Agent::Codex,
                "confined = true\nallow_domains = [\"x.org\"]",
                "drop --allow-domain",
            ),
            (Agent::Codex, "max_cost = 5.0", "reports tokens only"),
            (
                Agent::Gemini,
                "max_cost = 5.0\nmodel = \"my-model\"",
                "reports tokens only",
            ),
        ] {
            let e = agent(a, extra).unwrap_err();
            assert!(
                e.starts_with(&format!("--agent {a}: ")) && e.contains(says),
                "{e}"
            );
        }
        let r = agent(
            Agent::Codex,
            "max_cost = 5.0\nmodel = \"gpt-5.4\"\nconfined = true",
        )
        .unwrap();
        assert_eq!(r.settings.session.agent, Agent::Codex);
        assert!(r.settings.confined.is_some());
        // Gemini's own arguments reach no further than ralph's bubblewrap.
        let r = agent(
            Agent::Gemini,
            "confined = true\nclaude_args = [\"--sandbox\"]",
        )
        .unwrap();
        assert!(r.settings.confined.is_some());
        let priced = "max_cost = 5.0\nmodel = \"mine\"\n[prices.mine]\ninput = 1.0\ncached_input = 0.1\noutput = 2.0\n";
        assert!(agent(Agent::Gemini, priced).is_ok());
        assert!(agent(Agent::Claude, "interactive = true\nmax_cost = 5.0").is_ok());
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
            let a = Options {
                max_iterations,
                max_cost,
                no_progress_limit: no_progress,
                max_failures,
                timeout: timeout.and_then(|t| t.parse().ok()),
                limit_backoff: backoff.and_then(|t| t.parse().ok()),
                max_limit_wait: limit_wait.and_then(|t| t.parse().ok()),
                permission_mode: mode,
                ..args()
            };
            if let Ok(s) = settings(&a, &p, None) {
                prop_assert!(s.session.timeout.as_secs() >= 1 && s.session.timeout.as_secs() <= 7 * DAY);
                prop_assert!(s.limits.max_iterations >= 1);
                prop_assert!(s.limits.max_cost.is_none_or(|c| c.is_finite() && c > 0.0));
            }
        }
    }
}
