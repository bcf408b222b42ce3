//! pi 0.73 (`@mariozechner/pi-coding-agent`): `pi --mode json`, the prompt
//! on stdin. It has no sandbox and no permission prompts; its model and
//! provider are the user's own (`models.json`). In JSON mode it exits 0 even
//! when the model call failed: the failure is an assistant message with
//! `stopReason: "error"`, read here as what it is (a usage limit, an API
//! error).

use std::path::PathBuf;

use serde_json::Value;

use crate::agent::stream::{Session, Shown, Usage, classify, describe_tool, error_line};

/// What a project of a clone may not load before `ralph trust`: its
/// extensions (TypeScript run at start-up) and, with them, the skills,
/// prompt templates and themes pi would discover there. (`.pi/settings.json`
/// no switch turns off: an unapproved one refuses the run.)
const UNTRUSTED: [&str; 4] = [
    "--no-extensions",
    "--no-skills",
    "--no-prompt-templates",
    "--no-themes",
];

/// `pi` arguments before the user's own (the prompt comes on stdin).
pub fn arguments(model: Option<&str>, project_files: bool) -> Vec<String> {
    let mut a: Vec<String> = ["--mode", "json"].map(String::from).into();
    if !project_files {
        a.extend(UNTRUSTED.map(String::from));
    }
    if let Some(m) = model {
        a.extend(["--model".into(), m.into()]);
    }
    a
}

/// A session's arguments: `arguments`, then the user's own.
pub fn session_arguments(a: &super::Ask) -> Vec<String> {
    let mut args = arguments(a.model, a.project_files);
    args.extend(a.extra.iter().cloned());
    args
}

/// Where pi keeps its state (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`),
/// `var` reading a folder from the environment.
pub fn state_dir(var: impl Fn(&str) -> Option<PathBuf>) -> Option<PathBuf> {
    var("PI_CODING_AGENT_DIR").or_else(|| var("HOME").map(|h| h.join(".pi/agent")))
}

/// What in its folder runs code or names what runs: settings
/// (`shellCommandPrefix`, `packages`), models and credentials (an `apiKey`
/// of `"!command"` runs it), extensions, the `bin` put first on the bash
/// tool's PATH, and what its packages bring.
const KEPT: [&str; 11] = [
    "settings.json",
    "models.json",
    "auth.json",
    "keybindings.json",
    "extensions",
    "bin",
    "prompts",
    "skills",
    "themes",
    "npm",
    "git",
];

/// What pi makes as it starts: its credentials file, empty, private.
pub fn made_at_start(var: impl Fn(&str) -> Option<PathBuf>) -> Vec<(PathBuf, &'static str, u32)> {
    state_dir(var)
        .map(|d| vec![(d.join("auth.json"), "{}", 0o600)])
        .unwrap_or_default()
}

/// `KEPT` in its folder (see `Agent::kept_paths`).
pub fn kept(var: impl Fn(&str) -> Option<PathBuf>) -> Vec<PathBuf> {
    state_dir(var)
        .map(|d| KEPT.iter().map(|k| d.join(k)).collect())
        .unwrap_or_default()
}

/// `/ralph-setup` for pi: a prompt template in its state folder's
/// `prompts`.
pub fn setup_command() -> anyhow::Result<super::SetupCommand> {
    use crate::ralph_setup::{DESCRIPTION, body};
    use anyhow::Context;
    let text = format!("---\ndescription: {DESCRIPTION}\n---\n{}", body());
    Ok((
        state_dir(crate::fsutil::dir_var)
            .context("no home folder")?
            .join("prompts/ralph-setup.md"),
        text,
        "In pi, in your project: /ralph-setup <what you want built>",
    ))
}

/// pi's `--mode json` events.
pub(crate) fn read(s: &mut Session, v: &Value) -> Vec<Shown> {
    match v["type"].as_str().unwrap_or("") {
        "session" => s.session_id = v["id"].as_str().map(String::from),
        "message_end" if v["message"]["role"] == "assistant" => {
            return assistant(s, &v["message"]);
        }
        "tool_execution_start" => {
            s.tool_calls += 1;
            return vec![Shown::Tool(tool(
                v["toolName"].as_str().unwrap_or("?"),
                &v["args"],
            ))];
        }
        "tool_execution_end" if v["isError"] == true => {
            let text = exit_first(&text_of(&v["result"]["content"]));
            return vec![Shown::ToolError(error_line(&text, 160))];
        }
        "agent_end" => {
            let error = s.last_error.clone();
            s.end(error.is_some(), error.unwrap_or_default(), Usage::default());
        }
        // Its own retry of a failed call: what the failed attempt said is
        // undone, and the retry is said.
        "auto_retry_start" => {
            s.any_error = false;
            s.limit = None;
            s.last_error = None;
            return vec![Shown::Note(format!(
                "API error ({}), pi retries (attempt {} of {}, in {} s)",
                v["errorMessage"].as_str().unwrap_or("?"),
                v["attempt"],
                v["maxAttempts"],
                v["delayMs"].as_u64().unwrap_or(0) / 1000
            ))];
        }
        _ => {}
    }
    Vec::new()
}

/// One assistant message, whole: its text, its tokens and cost (pi prices
/// each message from its own table), and the error it ended on.
fn assistant(s: &mut Session, m: &Value) -> Vec<Shown> {
    let u = &m["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    s.usage.add(&Usage {
        input_tokens: n("input"),
        output_tokens: n("output"),
        cache_read_input_tokens: n("cacheRead"),
        cache_creation_input_tokens: n("cacheWrite"),
    });
    s.cost_usd += u["cost"]["total"].as_f64().unwrap_or(0.0);
    if let Some(model) = m["model"].as_str() {
        s.model = Some(model.to_string());
    }
    if m["stopReason"] == "error" {
        let text = m["errorMessage"]
            .as_str()
            .unwrap_or("the model call failed");
        // "429 provider: message": the status first.
        let status = text.get(..3).and_then(|d| d.parse::<u64>().ok());
        s.limit = classify(text, status);
        s.last_error = Some(text.to_string());
        return vec![Shown::Note(crate::agent::stream::first_line(text, 200))];
    }
    let said = text_of(&m["content"]);
    if said.trim().is_empty() {
        return Vec::new();
    }
    s.last_said.clone_from(&said);
    vec![Shown::Text(said)]
}

/// The text blocks of a content list, joined.
fn text_of(content: &Value) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

/// pi's bash tool ends a failed command's output with `Command exited
/// with code N`: put first, as the other agents say it, so the telling
/// line joins it.
fn exit_first(text: &str) -> String {
    let t = text.trim_end();
    match t.rsplit_once('\n') {
        Some((out, last)) if last.starts_with("Command exited with code ") => {
            let code = last.trim_start_matches("Command exited with code ");
            format!("Exit code {code}\n{out}")
        }
        _ => text.to_string(),
    }
}

/// One line for a pi tool call: its shell command, or the file a file tool
/// acts on.
fn tool(name: &str, args: &Value) -> String {
    match name {
        "bash" => describe_tool("Bash", args),
        "read" | "write" | "edit" => match args["path"].as_str().or(args["file_path"].as_str()) {
            Some(p) => format!("{name}: {}", crate::agent::stream::first_line(p, 120)),
            None => name.to_string(),
        },
        _ => name.to_string(),
    }
}

/// pi's login: whether it has a model to use, a provider logged in or
/// with a key (its own `models.json` included), as `pi --list-models`
/// lists them (offline: no update check, nothing sent).
pub fn login(program: &std::path::Path) -> super::Login {
    match super::ask(program, &["--list-models"], &[("PI_OFFLINE", "1")]) {
        Some(o) => models_said(&format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        None => super::Login::Unknown("`pi --list-models` did not answer".into()),
    }
}

/// `pi --list-models` (0.73, on stderr): a table of the models it can use,
/// their providers first, or "No models available" when no provider is
/// logged in or has a key.
fn models_said(said: &str) -> super::Login {
    use super::Login;
    if said.contains("No models available") {
        return Login::Out {
            why: "not logged in: no provider has a key or a login (`pi --list-models` lists no model)".into(),
            fix: "set your provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...), or run `pi` and `/login`: every session would fail".into(),
        };
    }
    let mut lines = said.lines().skip_while(|l| !l.starts_with("provider "));
    if lines.next().is_none() {
        return Login::Unknown("`pi --list-models` listed nothing it knows".into());
    }
    let mut providers: Vec<&str> = Vec::new();
    for p in lines.filter_map(|l| l.split_whitespace().next()) {
        if !providers.contains(&p) {
            providers.push(p);
        }
    }
    Login::In(format!(
        "models of {} (`pi --list-models`)",
        providers.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pi 0.73.1's `--list-models`, with no provider and with one.
    #[test]
    fn pis_login_is_read_from_its_list_of_models() {
        use crate::agent::Login;
        let none = "No models available. Use /login to log into a provider via OAuth or API key. See:\n  /x/docs/providers.md\n";
        assert!(matches!(models_said(none), Login::Out { .. }));
        let some = "provider   model                       context  max-out  thinking  images\nanthropic  claude-3-5-haiku-20241022   200K     8.2K     no        yes\nanthropic  claude-x   200K     8.2K     no        yes\nscripted  scripted-model  128K     4.1K     no        no\n";
        assert_eq!(
            models_said(some),
            Login::In("models of anthropic, scripted (`pi --list-models`)".into())
        );
        assert!(matches!(models_said("Error: boom"), Login::Unknown(_)));
    }
    use crate::agent::Agent;

    fn fed(stream: &str) -> (Session, Vec<Shown>) {
        let mut s = Session::of(Agent::Pi);
        let shown = stream.lines().flat_map(|l| s.feed(l)).collect();
        (s, shown)
    }

    #[test]
    fn json_mode_with_the_model_and_the_clones_files_off_until_trusted() {
        assert_eq!(arguments(None, true), ["--mode", "json"]);
        assert_eq!(
            arguments(Some("anthropic/claude-sonnet-4-5"), false),
            [
                "--mode",
                "json",
                "--no-extensions",
                "--no-skills",
                "--no-prompt-templates",
                "--no-themes",
                "--model",
                "anthropic/claude-sonnet-4-5"
            ]
        );
    }

    #[test]
    fn a_session_that_ran_a_command_is_read_with_its_tokens_and_cost() {
        let (s, shown) = fed(include_str!("../../tests/fixtures/agents/pi-ref.jsonl"));
        assert!(s.result_ok(), "{s:?}");
        assert_eq!(s.tool_calls, 1);
        assert!(
            matches!(&shown[0], Shown::Tool(t) if t.starts_with("Bash: ")),
            "{shown:?}"
        );
        assert!(matches!(shown.last(), Some(Shown::Text(_))), "{shown:?}");
        assert!(s.cost_usd > 0.0 && s.usage.input_tokens > 0, "{s:?}");
        assert!(s.session_id.is_some() && s.model.is_some());
        assert_eq!(s.limit, None);
    }

    #[test]
    fn a_usage_limit_in_json_mode_is_an_error_and_a_limit_though_pi_exits_0() {
        let (s, shown) = fed(include_str!("../../tests/fixtures/agents/pi-ref-429.jsonl"));
        assert!(!s.result_ok());
        assert!(matches!(
            s.limit,
            Some(crate::agent::stream::Limit::Usage { .. })
        ));
        assert!(
            matches!(&shown[..], [Shown::Note(n)] if n.contains("usage limit")),
            "{shown:?}"
        );
        // With pi's own retries: each said, the last failure stands.
        let (s, shown) = fed(include_str!(
            "../../tests/fixtures/agents/pi-ref-429-retries.jsonl"
        ));
        assert!(!s.result_ok());
        assert!(matches!(
            s.limit,
            Some(crate::agent::stream::Limit::Usage { .. })
        ));
        let retries = shown
            .iter()
            .filter(|x| matches!(x, Shown::Note(n) if n.contains("pi retries")))
            .count();
        assert_eq!(retries, 3, "{shown:?}");
        // A 500 is an API error, not a limit.
        let (s, _) = fed(
            r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"500 internal error"}}
{"type":"agent_end","messages":[]}"#,
        );
        assert!(!s.result_ok() && s.limit.is_none());
        assert_eq!(s.last_error.as_deref(), Some("500 internal error"));
    }

    #[test]
    fn a_retry_that_succeeds_leaves_a_good_session_and_says_the_retry() {
        let err = r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"429 rate limited"}}"#;
        let ok = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],"stopReason":"stop","usage":{"input":5,"output":1,"cost":{"total":0.5}}}}"#;
        let retry = r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"429 rate limited"}"#;
        let end = r#"{"type":"agent_end","messages":[]}"#;
        let (s, shown) = fed(&[err, end, retry, ok, end].join("\n"));
        assert!(s.result_ok() && s.limit.is_none(), "{s:?}");
        assert!(shown.contains(&Shown::Note(
            "API error (429 rate limited), pi retries (attempt 1 of 3, in 2 s)".into()
        )));
        assert_eq!(s.final_message.as_deref(), Some("Done."));
        assert_eq!(s.cost_usd, 0.5);
    }

    /// A tool that did not fail says nothing more; a failed one without
    /// pi's exit line is said as it is.
    #[test]
    fn only_a_failed_tool_is_an_error_and_its_text_stays_as_it_is() {
        let (_, shown) = fed(
            r#"{"type":"tool_execution_end","toolName":"bash","result":{"content":[{"type":"text","text":"fine"}]},"isError":false}"#,
        );
        assert_eq!(shown, []);
        assert_eq!(exit_first("no such file\nmore"), "no such file\nmore");
        assert_eq!(
            exit_first("out\nCommand exited with code 2\n"),
            "Exit code 2\nout"
        );
    }

    #[test]
    fn a_failed_tool_says_its_telling_line() {
        let (_, shown) = fed(
            r#"{"type":"tool_execution_start","toolName":"write","args":{"path":"src/a.rs","content":"x"}}
{"type":"tool_execution_end","toolName":"bash","result":{"content":[{"type":"text","text":"compiling\nerror: no such file\n\nCommand exited with code 1"}]},"isError":true}"#,
        );
        assert_eq!(
            shown,
            [
                Shown::Tool("write: src/a.rs".into()),
                Shown::ToolError("Exit code 1 · error: no such file".into()),
            ]
        );
    }
}
