//! Codex CLI 0.169: `codex exec --json`, the prompt on stdin; confined in
//! its own sandbox (`workspace-write`, approvals never). Its sandbox keeps
//! `.git` read-only, which would stop every commit a step makes: the
//! project's `.git` is named writable, as it is for Claude Code's sandbox.
//! `/tmp` is not writable (the session gets a TMPDIR of its own), nor is the
//! network.

use std::path::Path;

use crate::sandbox::confine::Confinement;
use serde_json::Value;

use crate::session::stream::{Session, Shown, Usage, error_line, first_line};

/// `codex exec` arguments before the user's own: the JSON stream, the
/// prompt from stdin (`-`, last), and either its sandbox (confined: writes
/// in the project, its `.git`, `allow_write` and the session's TMPDIR; no
/// network) or none.
pub fn arguments(model: Option<&str>, confined: Option<&Confinement>, root: &Path) -> Vec<String> {
    let mut a: Vec<String> = ["exec", "--json", "--skip-git-repo-check"]
        .map(String::from)
        .into();
    match confined {
        Some(c) => {
            let mut roots = vec![root.join(".git").display().to_string()];
            roots.extend(c.allow_write.iter().cloned());
            let roots = serde_json::to_string(&roots).expect("strings serialise");
            a.extend(["--sandbox", "workspace-write"].map(String::from));
            for setting in [
                "approval_policy=\"never\"".to_string(),
                "sandbox_workspace_write.network_access=false".into(),
                "sandbox_workspace_write.exclude_slash_tmp=true".into(),
                format!("sandbox_workspace_write.writable_roots={roots}"),
            ] {
                a.extend(["-c".into(), setting]);
            }
        }
        None => a.push("--dangerously-bypass-approvals-and-sandbox".into()),
    }
    if let Some(m) = model {
        a.extend(["--model".into(), m.into()]);
    }
    a
}

/// A session's arguments: `arguments`, the project's `.codex` off until
/// approved, the user's own, and `-` (the prompt from stdin).
pub fn session_arguments(a: &super::Ask) -> Vec<String> {
    let mut args = arguments(a.model, a.confined, a.root);
    // Until approved, the project's `.codex` files stay off, even in a
    // folder the user trusts in Codex (`trust::codex_files`).
    if !a.project_files {
        let off = crate::trust::codex_files::untrusted_override(a.root);
        args.extend(["-c".into(), off]);
    }
    args.extend(a.extra.iter().cloned());
    args.push("-".into());
    args
}

/// `/ralph-setup` for Codex: a custom prompt in `$CODEX_HOME/prompts`
/// (default `~/.codex`), with its own front matter.
pub fn setup_command() -> anyhow::Result<super::SetupCommand> {
    use crate::cmd::install_command::{DESCRIPTION, body};
    let codex =
        super::dir_var("CODEX_HOME").map_or_else(|| super::home().map(|h| h.join(".codex")), Ok)?;
    let text = format!(
        "---\ndescription: {DESCRIPTION}\nargument-hint: \"[what you want built]\"\n---\n{}",
        body()
    );
    Ok((
        codex.join("prompts/ralph-setup.md"),
        text,
        "In Codex, in your project: /prompts:ralph-setup <what you want built>",
    ))
}

/// Codex's `exec --json` events, by their `type`.
pub(crate) fn read(s: &mut Session, v: &Value) -> Vec<Shown> {
    match v["type"].as_str() {
        Some(t) => event(s, t, v),
        None => Vec::new(),
    }
}

/// Codex's `exec --json` events.
fn event(s: &mut Session, t: &str, v: &Value) -> Vec<Shown> {
    match t {
        "thread.started" => s.session_id = v["thread_id"].as_str().map(String::from),
        "item.started" | "item.completed" => return item(s, t, &v["item"]),
        "turn.completed" => {
            let u = &v["usage"];
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            let usage = Usage {
                input_tokens: n("input_tokens").saturating_sub(n("cached_input_tokens")),
                output_tokens: n("output_tokens"),
                cache_read_input_tokens: n("cached_input_tokens"),
                cache_creation_input_tokens: n("cache_write_input_tokens"),
            };
            s.end(false, String::new(), usage);
        }
        "turn.failed" => {
            let text = v["error"]["message"]
                .as_str()
                .map(String::from)
                .or_else(|| s.last_error.clone())
                .unwrap_or_else(|| "the turn failed".into());
            s.end(true, text, Usage::default());
        }
        "error" => {
            let text = v["message"].as_str().unwrap_or("").to_string();
            s.api_error(&text);
            return vec![Shown::Note(first_line(&text, 200))];
        }
        _ => {}
    }
    Vec::new()
}

/// One of Codex's items: a command (started, or failed), the agent's
/// words, a file change. Its own notices ("Model metadata not found")
/// are items too, and pass unshown.
fn item(s: &mut Session, t: &str, item: &Value) -> Vec<Shown> {
    match (t, item["type"].as_str()) {
        ("item.started", Some("command_execution")) => {
            s.tool_calls += 1;
            vec![Shown::Tool(format!("Bash: {}", command(item)))]
        }
        ("item.completed", Some("command_execution")) => match item["exit_code"].as_i64() {
            Some(0) | None => Vec::new(),
            Some(code) => {
                let out = item["aggregated_output"].as_str().unwrap_or("");
                let said = format!("Exit code {code}\n{out}");
                vec![Shown::ToolError(error_line(&said, 160))]
            }
        },
        ("item.completed", Some("agent_message")) => {
            let text = item["text"].as_str().unwrap_or("").to_string();
            s.last_said.clone_from(&text);
            let shown = (!text.trim().is_empty()).then_some(Shown::Text(text));
            shown.into_iter().collect()
        }
        ("item.completed", Some("file_change")) => {
            s.tool_calls += 1;
            let paths: Vec<&str> = item["changes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["path"].as_str())
                .collect();
            vec![Shown::Tool(format!(
                "Edit: {}",
                first_line(&paths.join(", "), 120)
            ))]
        }
        _ => Vec::new(),
    }
}

/// The command of a Codex `command_execution`, without the `/bin/bash -lc
/// ...` it wraps every command in.
pub(crate) fn command(item: &Value) -> String {
    let c = item["command"].as_str().unwrap_or("?");
    let inner = shell_words::split(c).ok().and_then(|w| match w.as_slice() {
        [sh, flag, inner] if sh.ends_with("bash") && flag == "-lc" => Some(inner.clone()),
        _ => None,
    });
    first_line(inner.as_deref().unwrap_or(c), 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confined_or_not_and_the_model() {
        assert_eq!(
            arguments(Some("gpt-5.4"), None, Path::new("/p")),
            [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                "--model",
                "gpt-5.4"
            ]
        );
        let c = Confinement {
            allow_write: vec!["/data/x".into()],
            allow_domains: vec![],
        };
        let a = arguments(None, Some(&c), Path::new("/p"));
        assert!(!a.iter().any(|x| x.contains("dangerously")), "{a:?}");
        assert!(a.windows(2).any(|w| w == ["--sandbox", "workspace-write"]));
        assert!(a.contains(
            &"sandbox_workspace_write.writable_roots=[\"/p/.git\",\"/data/x\"]".to_string()
        ));
        assert!(a.contains(&"sandbox_workspace_write.exclude_slash_tmp=true".to_string()));
        assert!(a.contains(&"sandbox_workspace_write.network_access=false".to_string()));
    }
}
