//! Claude Code 2.1.330: `claude -p --output-format stream-json --verbose`,
//! the prompt on stdin (interactive: its TUI, the prompt as its argument);
//! confined in its own sandbox (`--settings` with the sandbox, only your
//! settings and no MCP servers), else without its permission prompts.

use super::Ask;
use serde_json::Value;

use crate::agent::stream::{
    Outcome, RawUsage, Session, Shown, Usage, classify, describe_tool, tool_errors,
};

/// Claude Code's permission mode (`--permission-mode`, `permission_mode =`
/// in the config), one of its own (Claude Code 2.1.330's `--help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionMode {
    AcceptEdits,
    Auto,
    /// Given as `--dangerously-skip-permissions`.
    BypassPermissions,
    Manual,
    DontAsk,
    Plan,
}

impl PermissionMode {
    pub const ALL: [PermissionMode; 6] = [
        PermissionMode::AcceptEdits,
        PermissionMode::Auto,
        PermissionMode::BypassPermissions,
        PermissionMode::Manual,
        PermissionMode::DontAsk,
        PermissionMode::Plan,
    ];

    /// Claude Code's word for it.
    pub fn word(self) -> &'static str {
        match self {
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Auto => "auto",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::Manual => "manual",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::Plan => "plan",
        }
    }

    /// The mode Claude Code calls `word` (as it writes it: its own flag
    /// takes no other case).
    pub fn parse(word: &str) -> Option<PermissionMode> {
        Self::ALL.into_iter().find(|m| m.word() == word)
    }
}

/// `claude` arguments before the prompt: print mode's stream, the
/// permissions (confined, bypassed, or the mode given), the model, then the
/// user's own.
pub fn arguments(a: &Ask) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    if !a.interactive {
        args.extend(["-p", "--output-format", "stream-json", "--verbose"].map(String::from));
    }
    match &a.sandbox {
        Some(settings) => {
            args.extend(["--permission-mode".to_string(), "acceptEdits".to_string()]);
            // Only the user's own settings and no MCP servers: the project's
            // .claude/ and .mcp.json (a clone's, or written by a session)
            // would run hooks and servers outside the sandbox, and merge
            // their own allow lists into it.
            args.extend(["--setting-sources", "user", "--strict-mcp-config"].map(String::from));
            args.extend(["--settings".to_string(), settings.clone()]);
        }
        None if a.permission_mode == PermissionMode::BypassPermissions => {
            args.push("--dangerously-skip-permissions".into());
        }
        None => args.extend([
            "--permission-mode".to_string(),
            a.permission_mode.word().to_string(),
        ]),
    }
    if let Some(m) = a.model {
        args.extend(["--model".to_string(), m.to_string()]);
    }
    args.extend(a.extra.iter().cloned());
    args
}

/// `/ralph-setup` for Claude Code: its user commands folder (under
/// `$CLAUDE_CONFIG_DIR` when set), the command as it is.
pub fn setup_command() -> anyhow::Result<super::SetupCommand> {
    use anyhow::Context;
    let settings = crate::settings::target::user_settings_path()?;
    let dir = settings.parent().context("Claude Code's folder")?;
    Ok((
        dir.join("commands/ralph-setup.md"),
        crate::ralph_setup::RALPH_SETUP.to_string(),
        "In Claude Code, in your project: /ralph-setup <what you want built>",
    ))
}

/// `ralph mcp` for Claude Code: a user-scope server in `~/.claude.json`
/// (`$CLAUDE_CONFIG_DIR/.claude.json` when set), as `claude mcp add
/// --scope user ralph -- PROGRAM mcp` writes it (2.1.330).
pub fn mcp_server(program: String) -> anyhow::Result<super::McpServer> {
    let file = match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(d) => std::path::absolute(std::path::PathBuf::from(d))?.join(".claude.json"),
        None => super::home()?.join(".claude.json"),
    };
    Ok(super::McpServer {
        file,
        format: super::McpFormat::Json { key: "mcpServers" },
        entry: serde_json::json!({"type": "stdio", "command": program, "args": ["mcp"], "env": {}}),
        how: "In Claude Code: /mcp lists it (`claude mcp list` too); its tools are mcp__ralph__*",
    })
}

/// Claude Code's `stream-json` events.
pub(crate) fn read(s: &mut Session, v: &Value) -> Vec<Shown> {
    match v["type"].as_str() {
        Some("system") => {
            if v["subtype"] == "init" {
                s.session_id = v["session_id"].as_str().map(String::from);
                return Vec::new();
            }
            if v["subtype"] == "api_retry" {
                return vec![Shown::Note(format!(
                    "API error {} ({}), Claude Code retries (attempt {})",
                    v["error_status"],
                    v["error"].as_str().unwrap_or("?"),
                    v["attempt"]
                ))];
            }
            Vec::new()
        }
        Some("assistant") => assistant(s, &v["message"]),
        Some("user") => tool_errors(&v["message"]),
        Some("result") => {
            result(s, v);
            Vec::new()
        }
        _ => Vec::new(),
    }
}

pub(crate) fn assistant(s: &mut Session, msg: &Value) -> Vec<Shown> {
    let synthetic = msg["model"] == "<synthetic>";
    let mut out = Vec::new();
    for block in msg["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => {
                let text = block["text"].as_str().unwrap_or("").to_string();
                if synthetic && text.starts_with("API Error") {
                    if let Some(l) = classify(&text, None) {
                        s.limit = Some(l);
                    }
                    s.last_error = Some(text.clone());
                }
                if !text.trim().is_empty() {
                    out.push(Shown::Text(text));
                }
            }
            Some("tool_use") => {
                s.tool_calls += 1;
                out.push(Shown::Tool(describe_tool(
                    block["name"].as_str().unwrap_or("?"),
                    &block["input"],
                )));
            }
            _ => {}
        }
    }
    out
}

pub(crate) fn result(s: &mut Session, v: &Value) {
    let usage = serde_json::from_value::<RawUsage>(v["usage"].clone())
        .map(Usage::from)
        .unwrap_or_default();
    let o = Outcome {
        subtype: v["subtype"].as_str().unwrap_or("").to_string(),
        is_error: v["is_error"].as_bool().unwrap_or(false),
        text: v["result"].as_str().unwrap_or("").to_string(),
        cost_usd: v["total_cost_usd"].as_f64().unwrap_or(0.0),
        usage,
        num_turns: v["num_turns"].as_u64().unwrap_or(0),
        api_error_status: v["api_error_status"].as_u64(),
    };
    if o.is_error
        && let Some(l) = classify(&o.text, o.api_error_status)
    {
        s.limit = Some(l);
    }
    s.results += 1;
    s.cost_usd = s.cost_usd.max(o.cost_usd);
    s.usage.add(&o.usage);
    s.num_turns += o.num_turns;
    s.any_error |= o.is_error || o.subtype.starts_with("error");
    s.final_message = Some(o.text.clone());
    s.outcome = Some(o);
}

/// Claude Code's login, as `claude auth status` answers it (no session,
/// nothing spent).
pub fn login(program: &std::path::Path) -> super::Login {
    super::ask(program, &["auth", "status"], &[])
        .and_then(|o| login_said(&String::from_utf8_lossy(&o.stdout)))
        .unwrap_or_else(|| super::Login::Unknown("`claude auth status` did not answer".into()))
}

/// `claude auth status`'s JSON: its `loggedIn`, and the variable its key
/// came from (`apiKeySource`); `None`: not that JSON.
fn login_said(said: &str) -> Option<super::Login> {
    use super::Login;
    let v: Value = serde_json::from_str(said.trim()).ok()?;
    Some(
        match (v.get("loggedIn")?.as_bool()?, v["apiKeySource"].as_str()) {
            (true, Some(var)) => Login::Key(var.to_string()),
            (true, None) => Login::In("logged in".into()),
            (false, _) => Login::Out {
                why: "not logged in (`claude auth status`)".into(),
                fix: "`claude auth login`, or set ANTHROPIC_API_KEY: every session would fail"
                    .into(),
            },
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `claude auth status` as Claude Code 2.1.330 prints it, logged out
    /// and with a key in the environment; anything else is no answer.
    #[test]
    fn a_login_is_read_from_claudes_auth_status() {
        use crate::agent::Login;
        let out = r#"{"loggedIn": false, "authMethod": "none", "apiProvider": "firstParty"}"#;
        assert!(matches!(login_said(out), Some(Login::Out { .. })));
        let key = "{\n  \"loggedIn\": true,\n  \"authMethod\": \"api_key\",\n  \"apiKeySource\": \"ANTHROPIC_API_KEY\"\n}\n";
        assert_eq!(
            login_said(key),
            Some(Login::Key("ANTHROPIC_API_KEY".into()))
        );
        let oauth = r#"{"loggedIn": true, "authMethod": "claude.ai"}"#;
        assert_eq!(login_said(oauth), Some(Login::In("logged in".into())));
        assert_eq!(login_said("error: unknown command 'auth'"), None);
        assert_eq!(login_said(r#"{"loggedIn": "yes"}"#), None);
    }

    /// Its assistant messages: each tool call counted and said; an `API
    /// Error` text is a limit only when Claude Code itself wrote it
    /// (`<synthetic>`), never when the model says those words.
    #[test]
    fn tool_calls_are_counted_and_only_its_own_api_errors_are_limits() {
        let mut s = Session::of(super::super::Agent::Claude);
        let ev = |model: &str, content: &str| {
            serde_json::from_str::<Value>(&format!(
                r#"{{"type":"assistant","message":{{"model":"{model}","content":{content}}}}}"#
            ))
            .unwrap()
        };
        let tools = r#"[{"type":"tool_use","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","name":"Read","input":{"file_path":"a.rs"}}]"#;
        assert_eq!(read(&mut s, &ev("claude-x", tools)).len(), 2);
        assert_eq!(s.tool_calls, 2);
        let said = r#"[{"type":"text","text":"API Error: 429 rate limited, the docs say"}]"#;
        read(&mut s, &ev("claude-x", said));
        assert_eq!(
            (&s.limit, &s.last_error),
            (&None, &None),
            "the model's words"
        );
        read(&mut s, &ev("<synthetic>", said));
        assert!(s.limit.is_some() && s.last_error.is_some());
    }

    /// Its system events: the init names the session, an API retry is
    /// said, anything else is nothing to show.
    #[test]
    fn its_system_events_name_the_session_and_say_its_retries() {
        let mut s = Session::of(super::super::Agent::Claude);
        let ev = |t: &str| serde_json::from_str::<Value>(t).unwrap();
        assert!(
            read(
                &mut s,
                &ev(r#"{"type":"system","subtype":"init","session_id":"s-1"}"#)
            )
            .is_empty()
        );
        assert_eq!(s.session_id.as_deref(), Some("s-1"));
        let retry = r#"{"type":"system","subtype":"api_retry","error_status":529,"error":"overloaded","attempt":2,"session_id":"s-2"}"#;
        assert_eq!(
            read(&mut s, &ev(retry)),
            vec![Shown::Note(
                "API error 529 (overloaded), Claude Code retries (attempt 2)".into()
            )]
        );
        assert_eq!(
            s.session_id.as_deref(),
            Some("s-1"),
            "only the init names it"
        );
        assert!(
            read(
                &mut s,
                &ev(r#"{"type":"system","subtype":"hook_response"}"#)
            )
            .is_empty()
        );
    }

    fn ask<'a>(sandbox: Option<String>, mode: &str, extra: &'a [String]) -> Ask<'a> {
        Ask {
            interactive: false,
            confined: None,
            sandbox,
            permission_mode: PermissionMode::parse(mode).unwrap(),
            model: Some("opus"),
            extra,
            root: std::path::Path::new("/p"),
            project_files: true,
            secrets: &[],
            git: None,
            own_name: "s",
            project_folders: &[],
        }
    }

    #[test]
    fn a_permission_mode_is_claude_codes_word_exactly() {
        for m in PermissionMode::ALL {
            assert_eq!(PermissionMode::parse(m.word()), Some(m));
        }
        for word in ["yolo", "bypasspermissions", "Plan", "", " plan"] {
            assert_eq!(PermissionMode::parse(word), None, "{word:?}");
        }
        // The default the config and `--help` name is one of them.
        assert_eq!(
            PermissionMode::parse(crate::config::default_of("permission_mode")),
            Some(PermissionMode::BypassPermissions)
        );
    }

    #[test]
    fn confined_bypassed_or_the_mode_given() {
        let extra = ["--effort".to_string(), "high".to_string()];
        let a = arguments(&ask(None, "bypassPermissions", &extra));
        assert_eq!(
            a,
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--dangerously-skip-permissions",
                "--model",
                "opus",
                "--effort",
                "high"
            ]
        );
        let a = arguments(&ask(Some("{}".into()), "bypassPermissions", &[]));
        assert!(
            a.windows(2)
                .any(|w| w == ["--permission-mode", "acceptEdits"])
                && a.windows(2).any(|w| w == ["--settings", "{}"])
                && !a.iter().any(|x| x.contains("dangerously")),
            "{a:?}"
        );
        let a = arguments(&ask(None, "plan", &[]));
        assert!(
            a.windows(2).any(|w| w == ["--permission-mode", "plan"]),
            "{a:?}"
        );
    }
}
