//! Smoke tests of the harness itself, against the real Claude Code CLI.

use std::fs;
use std::time::Duration;

use serde_json::Value;

use crate::support::{Reply, TestEnv, eventually};

#[test]
fn print_session_runs_a_scripted_bash_command() {
    let env = TestEnv::new();
    env.api.session([
        Reply::bash("echo hello > made-by-claude.txt"),
        Reply::text("Made the file."),
    ]);
    let out = env.claude_print("please make the file", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "claude failed: {out:?}");
    assert_eq!(
        fs::read_to_string(env.project.join("made-by-claude.txt")).unwrap(),
        "hello\n"
    );
    assert!(stdout.contains("Made the file."), "stdout: {stdout}");
    let turns = env.api.turns();
    assert_eq!(
        turns.len(),
        2,
        "one turn for the tool call, one for its result"
    );
    assert!(turns[0].user_text().contains("please make the file"));
    assert!(
        turns[0].system_text().contains("Claude"),
        "the system prompt arrived"
    );
    assert!(
        turns[1].user_text().contains("tool_result")
            || turns[1].body.to_string().contains("tool_result")
    );
    assert_eq!(turns[0].session_id, turns[1].session_id);
}

#[test]
fn print_session_reports_an_api_error() {
    let env = TestEnv::new();
    env.api.session([Reply::Error {
        status: 400,
        kind: "invalid_request_error".into(),
        message: "scripted failure".into(),
    }]);
    let out = env.claude_print("hi", &["--output-format", "json"]);
    let result: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(result["is_error"], true, "{result}");
    assert!(result.to_string().contains("scripted failure"), "{result}");
}

#[test]
fn interactive_session_shows_the_answer_and_stays_open() {
    let env = TestEnv::new();
    let marker = env.tmp.path().join("stop-hook-ran");
    env.stop_hook_marker(&marker);
    env.api.session([
        Reply::text("Scripted hello from the model"),
        Reply::text("A second answer, same session"),
    ]);
    let mut pty = env.claude_interactive(&["say hello"], &[]);
    pty.wait_for("Scripted hello from the model", Duration::from_secs(60));
    pty.answers_again(&marker, "A second answer, same session");
}

#[test]
fn stop_hook_runs_and_receives_the_documented_json() {
    let env = TestEnv::new();
    let out_file = env.tmp.path().join("stop-input.json");
    let env_file = env.tmp.path().join("stop-env.txt");
    let settings = serde_json::json!({
        "skipDangerousModePermissionPrompt": true,
        "hooks": {"Stop": [{"hooks": [{"type": "command",
            "command": format!("cat > {} && env > {}", out_file.display(), env_file.display())}]}]}
    });
    fs::write(env.user_settings(), settings.to_string()).unwrap();
    env.api.session([Reply::text("Turn over.")]);
    let out = env.claude_print("hi", &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        eventually(Duration::from_secs(10), || out_file.exists()),
        "the Stop hook never ran"
    );
    let input: Value = serde_json::from_str(&fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Stop");
    for key in ["session_id", "transcript_path", "cwd", "stop_hook_active"] {
        assert!(input.get(key).is_some(), "Stop input lacks {key}: {input}");
    }
    assert_eq!(input["cwd"], env.project.to_str().unwrap());
    let hook_env = fs::read_to_string(&env_file).unwrap();
    assert!(
        hook_env.lines().any(|l| l.starts_with("CLAUDE_PID=")),
        "CLAUDE_PID not given to hooks:\n{hook_env}"
    );
    assert!(hook_env.contains("CLAUDE_CODE_ENTRYPOINT=sdk-cli"));
}
