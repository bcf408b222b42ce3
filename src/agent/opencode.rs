//! opencode 1.18 (`opencode-ai`): `opencode run --format json`, the prompt
//! on stdin (given as an argument it reaches the model in quotes). It has
//! no sandbox; its model and provider are the user's own (`opencode.json`).
//! Its stream has no start or end event and no model name: a step's
//! `step_finish` carries the tokens and the cost, and an API error is one
//! `error` line (exit 1) after its own silent retries.

use std::path::PathBuf;

use serde_json::Value;

use crate::agent::stream::{Session, Shown, Usage, classify, describe_tool, error_line};

/// `opencode run` arguments before the user's own: every permission that
/// would ask is granted (headless, an "ask" is refused and the session
/// stops there, exit 0, with nothing done).
pub fn arguments(model: Option<&str>) -> Vec<String> {
    // Its log on stderr, errors only: where its silent retries show.
    let mut a: Vec<String> = [
        "run",
        "--format",
        "json",
        "--auto",
        "--print-logs",
        "--log-level",
        "ERROR",
    ]
    .map(String::from)
    .into();
    if let Some(m) = model {
        a.extend(["--model".into(), m.into()]);
    }
    a
}

/// A session's arguments: `arguments`, then the user's own (the prompt
/// comes on stdin).
pub fn session_arguments(a: &super::Ask) -> Vec<String> {
    let mut args = arguments(a.model);
    args.extend(a.extra.iter().cloned());
    args
}

/// What the session's environment adds: no self-update or sharing in an
/// unattended run; and, before `ralph trust`, none of the project's config
/// (its `opencode.json` and `.opencode/`: plugins, MCP servers,
/// permissions, providers).
pub fn env(project_files: bool) -> Vec<(String, String)> {
    let mut e = vec![
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("OPENCODE_DISABLE_SHARE", "1"),
    ];
    if !project_files {
        e.push(("OPENCODE_DISABLE_PROJECT_CONFIG", "1"));
    }
    e.into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Its XDG folders (config, data with its sessions' database and shadow
/// git repositories, cache, state), each `$XDG_*_HOME` or its default
/// under the home.
const XDG: [(&str, &str); 4] = [
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_CACHE_HOME", ".cache"),
    ("XDG_STATE_HOME", ".local/state"),
];

/// Where opencode keeps its state: `opencode` in each XDG folder (the
/// first, its config), `var` reading a folder from the environment.
pub fn state_dirs(var: impl Fn(&str) -> Option<PathBuf>) -> Vec<PathBuf> {
    XDG.iter()
        .filter_map(|(k, default)| var(k).or_else(|| var("HOME").map(|h| h.join(default))))
        .map(|d| d.join("opencode"))
        .collect()
}

/// What in its folders runs code or names what runs: its config
/// (`mcp` servers, `plugin` names), plugins and tools in its config
/// folder, and the programs it downloads (`bin`) and plugins it installs
/// (`node_modules`) in its data and cache folders. (What it writes there
/// itself as it starts, `package.json` and the plugin API's package in
/// its config folder, is left writable: it would fail without.)
pub fn kept(var: impl Fn(&str) -> Option<PathBuf>) -> Vec<PathBuf> {
    let dirs = state_dirs(var);
    let mut out = Vec::new();
    if let [config, data, cache, ..] = &dirs[..] {
        for k in [
            "opencode.json",
            "opencode.jsonc",
            "config.json",
            "plugin",
            "plugins",
            "tool",
            "tools",
        ] {
            out.push(config.join(k));
        }
        out.extend([
            data.join("bin"),
            cache.join("bin"),
            cache.join("node_modules"),
        ]);
    }
    out
}

/// Its config folder (`$XDG_CONFIG_HOME/opencode`, else
/// `~/.config/opencode`).
pub fn config_dir() -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    state_dirs(crate::fsutil::dir_var)
        .into_iter()
        .next()
        .context("no home folder")
}

/// `ralph mcp` for opencode: a local server in `mcp` of its user config,
/// `opencode.json` in its config folder (its `opencode.jsonc` when that is
/// the one there), as `opencode mcp add` writes it (1.18.33).
pub fn mcp_server(program: String) -> anyhow::Result<super::McpServer> {
    let dir = config_dir()?;
    let jsonc = dir.join("opencode.jsonc");
    let file = if jsonc.exists() && !dir.join("opencode.json").exists() {
        jsonc
    } else {
        dir.join("opencode.json")
    };
    Ok(super::McpServer {
        file,
        format: super::McpFormat::Json { key: "mcp" },
        entry: serde_json::json!({"type": "local", "command": [program, "mcp"]}),
        how: "In opencode: `opencode mcp list` lists it",
    })
}

/// `/ralph-setup` for opencode: a custom command in its config folder's
/// `commands`.
pub fn setup_command() -> anyhow::Result<super::SetupCommand> {
    use crate::ralph_setup::{DESCRIPTION, body};
    let text = format!("---\ndescription: {DESCRIPTION}\n---\n{}", body());
    Ok((
        config_dir()?.join("commands/ralph-setup.md"),
        text,
        "In opencode, in your project: /ralph-setup <what you want built>",
    ))
}

/// A line of its log (`--print-logs`): a failed model call of the
/// session's own (not the title's), which opencode now retries by itself,
/// as its error text and the limit it reads as. Seen on 1.18.33:
/// `timestamp=… level=ERROR … message="stream error" … agent=build …
/// error.error="AI_APICallError: You've hit your usage limit. …"`.
pub fn read_log(line: &str) -> Option<super::LogSaid> {
    if !line.contains(r#"message="stream error""#) || line.contains(" agent=title ") {
        return None;
    }
    let (_, rest) = line.split_once(r#"error.error=""#)?;
    // Up to the closing quote (an escaped one is part of the text).
    let mut text = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => text.extend(chars.next()),
            '"' => break,
            c => text.push(c),
        }
    }
    let text = text
        .strip_prefix("AI_APICallError: ")
        .unwrap_or(&text)
        .to_string();
    let limit = classify(&text, None);
    Some(super::LogSaid { text, limit })
}

/// opencode's `run --format json` events.
pub(crate) fn read(s: &mut Session, v: &Value) -> Vec<Shown> {
    if s.session_id.is_none() {
        s.session_id = v["sessionID"].as_str().map(String::from);
    }
    let part = &v["part"];
    match v["type"].as_str().unwrap_or("") {
        "tool_use" => return tool_use(s, part),
        "text" => {
            let text = part["text"].as_str().unwrap_or("").to_string();
            if !text.trim().is_empty() {
                s.last_said.clone_from(&text);
                return vec![Shown::Text(text)];
            }
        }
        "step_finish" => step_finish(s, part),
        "error" => return error(s, &v["error"]),
        _ => {}
    }
    Vec::new()
}

/// A tool call, reported once it has run: the line for it, and its error.
fn tool_use(s: &mut Session, part: &Value) -> Vec<Shown> {
    s.tool_calls += 1;
    let name = part["tool"].as_str().unwrap_or("?");
    let st = &part["state"];
    let input = &st["input"];
    let line = match name {
        "bash" => describe_tool("Bash", input),
        "read" | "write" | "edit" => match input["filePath"].as_str() {
            Some(p) => format!("{name}: {}", crate::agent::stream::first_line(p, 120)),
            None => name.to_string(),
        },
        _ => name.to_string(),
    };
    let mut out = vec![Shown::Tool(line)];
    let exit = st["metadata"]["exit"].as_i64().filter(|&c| c != 0);
    if st["status"] == "error" {
        let text = st["error"].as_str().unwrap_or("the tool failed");
        out.push(Shown::ToolError(error_line(text, 160)));
    } else if let Some(code) = exit {
        let said = format!("Exit code {code}\n{}", st["output"].as_str().unwrap_or(""));
        out.push(Shown::ToolError(error_line(&said, 160)));
    }
    out
}

/// The end of one model step: its tokens and cost count; the turn is over
/// when a step stops for a reason other than calling tools.
fn step_finish(s: &mut Session, part: &Value) {
    let t = &part["tokens"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let usage = Usage {
        input_tokens: n(&t["input"]),
        // Reasoning is output, counted apart.
        output_tokens: n(&t["output"]) + n(&t["reasoning"]),
        cache_read_input_tokens: n(&t["cache"]["read"]),
        cache_creation_input_tokens: n(&t["cache"]["write"]),
    };
    s.cost_usd += part["cost"].as_f64().unwrap_or(0.0);
    if part["reason"] == "tool-calls" {
        s.usage.add(&usage);
    } else {
        s.end(false, String::new(), usage);
    }
}

/// Its one `error` line: the API's message and status, a limit when it
/// reads as one.
fn error(s: &mut Session, e: &Value) -> Vec<Shown> {
    let d = &e["data"];
    let text = d["message"]
        .as_str()
        .or(e["message"].as_str())
        .or(e["name"].as_str())
        .unwrap_or("opencode failed")
        .to_string();
    s.limit = classify(&text, d["statusCode"].as_u64());
    s.last_error = Some(text.clone());
    s.end(true, text.clone(), Usage::default());
    vec![Shown::Note(crate::agent::stream::first_line(&text, 200))]
}

/// opencode's login: the models it can use, as `opencode models` lists
/// them (offline: its model list is not fetched), by provider. Its own
/// free models (provider `opencode`) need none: with only those, it runs,
/// and says so.
pub fn login(program: &std::path::Path) -> super::Login {
    let env = [
        ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
    ];
    match super::ask(program, &["models"], &env) {
        Some(o) if o.status.success() => models_said(&String::from_utf8_lossy(&o.stdout)),
        _ => super::Login::Unknown("`opencode models` did not answer".into()),
    }
}

/// `opencode models` (1.18): one `provider/model` a line.
fn models_said(said: &str) -> super::Login {
    use super::Login;
    let mut providers: Vec<&str> = Vec::new();
    for p in said
        .lines()
        .filter_map(|l| l.trim().split_once('/').map(|(p, _)| p))
    {
        if !providers.contains(&p) {
            providers.push(p);
        }
    }
    let others: Vec<&str> = providers
        .iter()
        .copied()
        .filter(|p| *p != "opencode")
        .collect();
    match (others.is_empty(), providers.is_empty()) {
        (false, _) => Login::In(format!("models of {} (`opencode models`)", others.join(", "))),
        (true, false) => Login::In(
            "no provider logged in: only opencode's own free models (`opencode auth login` for another)".into(),
        ),
        (true, true) => Login::Unknown("`opencode models` listed none".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// opencode 1.18.33's `models`: with a key or a provider of the
    /// user's, and with neither (its own free models only).
    #[test]
    fn opencodes_login_is_read_from_its_models() {
        use crate::agent::Login;
        let free = "opencode/big-pickle\nopencode/space-bunny-free\n";
        let Login::In(said) = models_said(free) else {
            panic!("free models run")
        };
        assert!(said.starts_with("no provider logged in"), "{said}");
        let keyed =
            format!("anthropic/claude-x\nanthropic/claude-y\n{free}scripted/scripted-model\n");
        assert_eq!(
            models_said(&keyed),
            Login::In("models of anthropic, scripted (`opencode models`)".into())
        );
        assert!(matches!(models_said(""), Login::Unknown(_)));
    }
    use crate::agent::Agent;
    use crate::agent::stream::Limit;

    fn fed(stream: &str) -> (Session, Vec<Shown>) {
        let mut s = Session::of(Agent::Opencode);
        let shown = stream.lines().flat_map(|l| s.feed(l)).collect();
        (s, shown)
    }

    #[test]
    fn run_as_json_with_its_asks_granted_and_the_model() {
        assert_eq!(
            arguments(None),
            [
                "run",
                "--format",
                "json",
                "--auto",
                "--print-logs",
                "--log-level",
                "ERROR"
            ]
        );
        assert_eq!(
            arguments(Some("anthropic/claude-sonnet-4-5"))[7..],
            ["--model", "anthropic/claude-sonnet-4-5"]
        );
        let has = |e: &[(String, String)], k: &str| e.iter().any(|(n, _)| n == k);
        assert!(has(&env(false), "OPENCODE_DISABLE_PROJECT_CONFIG"));
        assert!(!has(&env(true), "OPENCODE_DISABLE_PROJECT_CONFIG"));
        assert!(has(&env(true), "OPENCODE_DISABLE_AUTOUPDATE"));
    }

    #[test]
    fn a_session_that_ran_a_command_is_read_with_its_tokens_and_cost() {
        let (s, shown) = fed(include_str!(
            "../../tests/fixtures/agents/opencode-ref.jsonl"
        ));
        assert!(s.result_ok(), "{s:?}");
        assert_eq!(
            shown,
            [
                Shown::Tool("Bash: sh .agent-step.sh".into()),
                Shown::Text("Step done.".into())
            ]
        );
        // Both steps: 800 + 800 uncached in, (40 + 10) * 2 out.
        assert_eq!(
            (
                s.usage.input_tokens,
                s.usage.output_tokens,
                s.usage.cache_read_input_tokens
            ),
            (1600, 100, 400)
        );
        assert!((s.cost_usd - 0.00642).abs() < 1e-9, "{}", s.cost_usd);
        assert!(
            s.session_id
                .as_deref()
                .is_some_and(|i| i.starts_with("ses_"))
        );
        assert_eq!(s.final_message.as_deref(), Some("Step done."));
    }

    #[test]
    fn its_error_line_is_a_usage_limit_or_an_api_error() {
        let (s, shown) = fed(include_str!(
            "../../tests/fixtures/agents/opencode-ref-429.jsonl"
        ));
        assert!(!s.result_ok());
        assert!(matches!(s.limit, Some(Limit::Usage { .. })), "{s:?}");
        assert!(matches!(&shown[..], [Shown::Note(n)] if n.contains("usage limit")));
        let (s, _) = fed(
            r#"{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Internal Server Error","statusCode":500}}}"#,
        );
        assert!(!s.result_ok() && s.limit.is_none());
        let (s, _) = fed(
            r#"{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Too Many Requests","statusCode":429}}}"#,
        );
        assert_eq!(s.limit, Some(Limit::RateLimit));
    }

    /// Its log's failed model calls: the session's own (a usage limit, or
    /// an error that is none), not its title call's, nor other lines.
    #[test]
    fn its_log_says_the_failed_calls_it_retries_by_itself() {
        let line = |agent: &str, err: &str| {
            format!(
                r#"timestamp=2026-11-26T01:13:37.929Z level=ERROR run=8b3042b7 message="stream error" providerID=fake modelID=m session.id=ses_1 small=false agent={agent} mode=primary error.error="{err}""#
            )
        };
        let said = read_log(&line(
            "build",
            "AI_APICallError: You've hit your usage limit. Try again at 11:29 AM.",
        ))
        .unwrap();
        assert_eq!(
            said.text,
            "You've hit your usage limit. Try again at 11:29 AM."
        );
        assert!(matches!(said.limit, Some(Limit::Usage { .. })));
        let said = read_log(&line("build", r#"AI_APICallError: Bad \"gateway\""#)).unwrap();
        assert_eq!((said.text.as_str(), said.limit), (r#"Bad "gateway""#, None));
        assert_eq!(
            read_log(&line("title", "AI_APICallError: usage limit")),
            None
        );
        assert_eq!(read_log("timestamp=x level=ERROR message=\"other\""), None);
    }

    #[test]
    fn a_failed_command_or_a_refused_tool_says_why() {
        let (s, shown) = fed(
            r#"{"type":"tool_use","part":{"tool":"bash","state":{"status":"completed","input":{"command":"cargo test"},"output":"running\nerror[E0425]: cannot find value\n","metadata":{"exit":101}}}}
{"type":"tool_use","part":{"tool":"edit","state":{"status":"error","input":{"filePath":"/p/src/a.rs"},"error":"The user rejected permission to use this specific tool call."}}}"#,
        );
        assert_eq!(
            shown,
            [
                Shown::Tool("Bash: cargo test".into()),
                Shown::ToolError("Exit code 101 · error[E0425]: cannot find value".into()),
                Shown::Tool("edit: /p/src/a.rs".into()),
                Shown::ToolError(
                    "The user rejected permission to use this specific tool call.".into()
                ),
            ]
        );
        assert_eq!(s.tool_calls, 2);
    }
}
