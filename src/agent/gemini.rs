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

#[cfg(test)]
mod tests {
    use super::*;

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
