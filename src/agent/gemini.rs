//! Gemini CLI 0.61: `gemini -p "" --output-format stream-json`, the prompt
//! on stdin, tools approved (`--approval-mode yolo`: without it the shell and
//! edit tools are not offered at all). Its own sandbox needs a container
//! daemon: under `--confined` ralph runs it inside its own bubblewrap
//! instead (`Confine::Bwrap`), its state in `$GEMINI_CLI_HOME/.gemini`.

use serde_json::Value;

use crate::agent::stream::{Session, Shown, Usage, describe_tool, error_line, first_line};

/// `gemini` arguments before the user's own.
pub fn arguments(model: Option<&str>) -> Vec<String> {
    let mut a: Vec<String> = [
        "-p",
        "",
        "--output-format",
        "stream-json",
        "--approval-mode",
        "yolo",
    ]
    .map(String::from)
    .into();
    if let Some(m) = model {
        a.extend(["-m".into(), m.into()]);
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

/// What the session's environment adds: no relaunch of itself as a child
/// node process (one process to supervise and signal).
pub const ENV: [(&str, &str); 1] = [("GEMINI_CLI_NO_RELAUNCH", "true")];

/// What in its folder runs code or names what runs: its settings (MCP
/// servers, hooks, tool commands), extensions, custom commands (`!{...}`)
/// and `.env`.
pub fn kept(state: Vec<std::path::PathBuf>) -> Vec<std::path::PathBuf> {
    state
        .iter()
        .flat_map(|d| {
            [
                "settings.json",
                "extensions",
                "commands",
                ".env",
                "policies",
            ]
            .map(|k| d.join(k))
        })
        .collect()
}

/// `ralph mcp` for Gemini CLI: `mcpServers` of its user settings,
/// `~/.gemini/settings.json` (under `$GEMINI_CLI_HOME` when set), as
/// `gemini mcp add -s user ralph PROGRAM mcp` writes it (0.61.0).
pub fn mcp_server(program: String) -> anyhow::Result<super::McpServer> {
    let base = crate::fsutil::dir_var("GEMINI_CLI_HOME").map_or_else(super::home, Ok)?;
    Ok(super::McpServer {
        file: base.join(".gemini/settings.json"),
        format: super::McpFormat::Json { key: "mcpServers" },
        entry: serde_json::json!({"command": program, "args": ["mcp"]}),
        how: "In Gemini CLI: /mcp lists it (`gemini mcp list` too)",
    })
}

/// `/ralph-setup` for Gemini CLI: a custom command (TOML) in
/// `~/.gemini/commands` (under `$GEMINI_CLI_HOME` when set).
pub fn setup_command() -> anyhow::Result<super::SetupCommand> {
    use crate::ralph_setup::{DESCRIPTION, body};
    let base = crate::fsutil::dir_var("GEMINI_CLI_HOME").map_or_else(super::home, Ok)?;
    // A JSON string is a TOML basic string too (the same escapes).
    let quoted = |t: &str| serde_json::to_string(t).expect("a string serialises");
    let prompt = body().replace("$ARGUMENTS", "{{args}}");
    let text = format!(
        "description = {}\nprompt = {}\n",
        quoted(DESCRIPTION),
        quoted(&prompt)
    );
    Ok((
        base.join(".gemini/commands/ralph-setup.toml"),
        text,
        "In Gemini CLI, in your project: /ralph-setup <what you want built>",
    ))
}

/// Gemini's `stream-json` events.
pub(crate) fn read(s: &mut Session, v: &Value) -> Vec<Shown> {
    let mut out = Vec::new();
    let t = v["type"].as_str().unwrap_or("");
    if !(t == "message" && v["role"] == "assistant") {
        out.extend(s.flush_text());
    }
    match t {
        "init" => {
            s.session_id = v["session_id"].as_str().map(String::from);
            s.model = v["model"].as_str().map(String::from);
        }
        "message" if v["role"] == "assistant" => {
            s.pending_text.push_str(v["content"].as_str().unwrap_or(""));
        }
        "tool_use" => {
            s.tool_calls += 1;
            out.push(Shown::Tool(tool(v)));
        }
        "tool_result" if v["status"] != "success" => {
            let text = v["output"]
                .as_str()
                .or(v["error"]["message"].as_str())
                .unwrap_or("the tool failed");
            out.push(Shown::ToolError(error_line(text, 160)));
        }
        "error" => {
            let text = v["message"].as_str().unwrap_or("").to_string();
            out.push(Shown::Note(first_line(&text, 200)));
        }
        "result" => result(s, v),
        _ => {}
    }
    out
}

/// Gemini's result: how the turn ended, its tokens, and their split by
/// model (its router and the model that worked).
fn result(s: &mut Session, v: &Value) {
    let error = v["status"] != "success";
    let text = v["error"]["message"].as_str().unwrap_or("").to_string();
    if error {
        s.api_error(&text);
    }
    let st = &v["stats"];
    for (m, u) in st["models"].as_object().into_iter().flatten() {
        s.by_model.push((m.clone(), usage(u)));
    }
    s.end(error, text, usage(st));
}

/// Gemini's tokens (`input_tokens` counts the cached ones too).
fn usage(u: &Value) -> Usage {
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    Usage {
        input_tokens: n("input_tokens").saturating_sub(n("cached")),
        output_tokens: n("output_tokens"),
        cache_read_input_tokens: n("cached"),
        cache_creation_input_tokens: 0,
    }
}

/// One line for a Gemini tool call: its shell command, or the file a file
/// tool acts on.
pub(crate) fn tool(v: &Value) -> String {
    let name = v["tool_name"].as_str().unwrap_or("?");
    let p = &v["parameters"];
    match (name, p["file_path"].as_str()) {
        ("run_shell_command", _) => describe_tool("Bash", p),
        ("write_file" | "replace" | "read_file", Some(f)) => {
            format!("{name}: {}", first_line(f, 120))
        }
        _ => name.to_string(),
    }
}

/// Gemini CLI's sign-in, as it chooses one before a session (0.61,
/// `validateNonInteractiveAuth`): the user's settings' choice
/// (`security.auth.selectedType`), else the environment's, with what that
/// one needs; the variables of the `.env` file it would load count (their
/// names only are read). Nothing is run: it has no command that says.
pub fn login(root: &std::path::Path, var: impl Fn(&str) -> Option<String>) -> super::Login {
    use std::path::PathBuf;
    let home = var("HOME").map(PathBuf::from);
    let dir = var("GEMINI_CLI_HOME")
        .map(PathBuf::from)
        .or(home.clone())
        .map(|h| h.join(".gemini"));
    let selected = dir
        .as_ref()
        .and_then(|d| std::fs::read_to_string(d.join("settings.json")).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| {
            v["security"]["auth"]["selectedType"]
                .as_str()
                .map(String::from)
        });
    let file = env_file(root, home.as_deref())
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| env_file_names(&t))
        .unwrap_or_default();
    let set = |k: &str| var(k).or_else(|| file.contains(&k.to_string()).then(String::new));
    let signed_in = dir.is_some_and(|d| {
        ["oauth_creds.json", "gemini-credentials.json"]
            .iter()
            .any(|f| d.join(f).is_file())
    });
    login_of(selected.as_deref(), &set, signed_in)
}

/// The `.env` file Gemini CLI loads: the first `.gemini/.env` or `.env`
/// from `root` up, else the home's.
fn env_file(root: &std::path::Path, home: Option<&std::path::Path>) -> Option<std::path::PathBuf> {
    let mut places: Vec<std::path::PathBuf> = root
        .ancestors()
        .flat_map(|d| [d.join(".gemini/.env"), d.join(".env")])
        .collect();
    if let Some(h) = home {
        places.extend([h.join(".gemini/.env"), h.join(".env")]);
    }
    places.into_iter().find(|p| p.is_file())
}

/// The names a `.env` file sets (`NAME=...`, `export NAME=...`).
fn env_file_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("export ").unwrap_or(l);
            let (name, _) = l.split_once('=')?;
            let name = name.trim();
            (!name.is_empty() && !name.starts_with('#')).then(|| name.to_string())
        })
        .collect()
}

/// Its sign-in as Gemini CLI 0.61 picks it: `selected`, else the
/// environment's (`getAuthTypeFromEnv`), checked as `validateAuthMethod`
/// checks it; `signed_in`: its Google login's file is there.
fn login_of(
    selected: Option<&str>,
    var: &dyn Fn(&str) -> Option<String>,
    signed_in: bool,
) -> super::Login {
    use super::Login;
    let yes = |k: &str| var(k).is_some_and(|v| v == "true");
    let from_env = if yes("GOOGLE_GENAI_USE_GCA") {
        Some("oauth-personal")
    } else if yes("GOOGLE_GENAI_USE_VERTEXAI") {
        Some("vertex-ai")
    } else if var("GOOGLE_GEMINI_BASE_URL").is_some() {
        Some("gateway")
    } else if var("GEMINI_API_KEY").is_some() {
        Some("gemini-api-key")
    } else if yes("CLOUD_SHELL") || yes("GEMINI_CLI_USE_COMPUTE_ADC") {
        Some("compute-default-credentials")
    } else {
        None
    };
    let every = ": every session would fail";
    match selected.or(from_env) {
        None => Login::Out {
            why: "not logged in: no GEMINI_API_KEY, and no sign-in chosen (`security.auth.selectedType` in ~/.gemini/settings.json)".into(),
            fix: format!("set GEMINI_API_KEY, or run `gemini` once and sign in{every}"),
        },
        Some("gemini-api-key") if var("GEMINI_API_KEY").is_some() => {
            Login::Key("GEMINI_API_KEY".into())
        }
        Some("gemini-api-key") => Login::Unknown(
            "GEMINI_API_KEY is not set; a key Gemini CLI saved itself (in your keychain) is not read without running it".into(),
        ),
        Some("oauth-personal") if signed_in => Login::In("signed in with Google".into()),
        Some("oauth-personal") => Login::Unknown(
            "it signs in with Google, and ~/.gemini holds no login: it may be in your keychain".into(),
        ),
        Some("vertex-ai") if var("GOOGLE_API_KEY").is_some() => Login::Key("GOOGLE_API_KEY".into()),
        Some("vertex-ai")
            if var("GOOGLE_CLOUD_PROJECT").is_some() && var("GOOGLE_CLOUD_LOCATION").is_some() =>
        {
            Login::In("Vertex AI (GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION)".into())
        }
        Some("vertex-ai") => Login::Out {
            why: "Vertex AI is chosen, and neither GOOGLE_API_KEY nor GOOGLE_CLOUD_PROJECT with GOOGLE_CLOUD_LOCATION is set".into(),
            fix: format!("set GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION{every}"),
        },
        Some("gateway") => Login::Out {
            why: "GOOGLE_GEMINI_BASE_URL alone chooses the gateway sign-in, which `gemini -p` refuses".into(),
            fix: format!(
                "set `security.auth.selectedType = \"gemini-api-key\"` in ~/.gemini/settings.json, with GEMINI_API_KEY{every}"
            ),
        },
        Some(other) => Login::Unknown(format!("it signs in by {other}, which ralph does not check")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gemini CLI 0.61's choice of sign-in, from its settings or the
    /// environment, and what each choice needs.
    #[test]
    fn geminis_sign_in_is_read_from_its_settings_and_environment() {
        use crate::agent::Login;
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let none = env(&[]);
        assert!(matches!(login_of(None, &none, false), Login::Out { .. }));
        let key = env(&[("GEMINI_API_KEY", "k")]);
        assert_eq!(
            login_of(None, &key, false),
            Login::Key("GEMINI_API_KEY".into())
        );
        assert_eq!(
            login_of(Some("gemini-api-key"), &key, false),
            Login::Key("GEMINI_API_KEY".into())
        );
        assert!(matches!(
            login_of(Some("gemini-api-key"), &none, false),
            Login::Unknown(_)
        ));
        assert_eq!(
            login_of(Some("oauth-personal"), &none, true),
            Login::In("signed in with Google".into())
        );
        // The base URL alone is the gateway, which print mode refuses; the
        // settings' choice wins over it.
        let gateway = env(&[("GOOGLE_GEMINI_BASE_URL", "u"), ("GEMINI_API_KEY", "k")]);
        assert!(matches!(login_of(None, &gateway, false), Login::Out { .. }));
        assert_eq!(
            login_of(Some("gemini-api-key"), &gateway, false),
            Login::Key("GEMINI_API_KEY".into())
        );
        assert!(matches!(
            login_of(Some("vertex-ai"), &none, false),
            Login::Out { .. }
        ));
        assert_eq!(
            env_file_names("# c\nGEMINI_API_KEY=abc\nexport OTHER = x\nnot a line\n"),
            ["GEMINI_API_KEY", "OTHER"]
        );
    }

    #[test]
    fn print_mode_with_its_tools_and_the_model_given() {
        assert_eq!(
            arguments(Some("gemini-2.5-pro")),
            [
                "-p",
                "",
                "--output-format",
                "stream-json",
                "--approval-mode",
                "yolo",
                "-m",
                "gemini-2.5-pro"
            ]
        );
        assert_eq!(arguments(None).len(), 6);
        assert_eq!(ENV, [("GEMINI_CLI_NO_RELAUNCH", "true")]);
    }
}
