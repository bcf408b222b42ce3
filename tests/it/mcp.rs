//! `ralph mcp`, driven by the MCP Python SDK's client as the user's agent
//! would drive it, and by the real Claude Code: its tools and what they
//! are marked, the loops, a status, a real session's question answered, a
//! running loop stopped; what a hostile call gets; refused in a session.

use std::fs;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::mcp::{call, list_tools};
use crate::support::*;

use crate::answer::a_loop_that_asked_and_ended;

const A_WHILE: Duration = Duration::from_secs(120);

/// A call's text as JSON (the read-only tools answer JSON).
fn json_of(result: &Value) -> Value {
    assert_eq!(result["error"], false, "{result}");
    serde_json::from_str(result["text"].as_str().unwrap()).unwrap()
}

fn events(env: &TestEnv) -> Vec<Value> {
    fs::read_to_string(run_dir(env).join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_tools_are_marked_and_a_real_sessions_question_is_answered_over_mcp() {
    let (env, live) = crate::answer::a_loop_waiting_for_an_answer();
    let r = env.mcp(&[
        list_tools(),
        call("list_loops", json!({})),
        call("loop_status", json!({"loop": "main"})),
        call("answer", json!({"option": 2})),
    ]);
    // What only reads is marked so; what starts or changes a run is not,
    // and a stop is destructive: the client asks its user first.
    let tools = r[0].as_array().unwrap();
    let hint = |name: &str, h: &str| {
        let t = tools.iter().find(|t| t["name"] == name).unwrap();
        t["annotations"][h].clone()
    };
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "list_loops",
            "loop_status",
            "loop_events",
            "start_loop",
            "stop_loop",
            "answer",
            "add_step",
            "raise_limit"
        ]
    );
    for n in ["list_loops", "loop_status", "loop_events"] {
        assert_eq!(hint(n, "readOnlyHint"), true, "{n}");
    }
    for n in [
        "start_loop",
        "stop_loop",
        "answer",
        "add_step",
        "raise_limit",
    ] {
        assert_eq!(hint(n, "readOnlyHint"), false, "{n}");
    }
    assert_eq!(hint("stop_loop", "destructiveHint"), true);
    assert_eq!(hint("answer", "destructiveHint"), false);
    // The loops, as `ralph watch --json` has them.
    let loops = json_of(&r[1]);
    assert_eq!(loops[0]["name"], "main", "{loops}");
    assert_eq!(
        loops[0]["waiting"], "Which database should the app use?",
        "{loops}"
    );
    // The status says the question and its options.
    let status = json_of(&r[2]);
    let q = &status["waiting"]["question"];
    assert_eq!(q["options"][1], "SQLite, for now", "{status}");
    assert!(status["loop"]["pid"].is_u64(), "{status}");
    // Answered: the loop goes on with it, the same run.
    assert_eq!(r[3]["error"], false, "{}", r[3]);
    let said = r[3]["text"].as_str().unwrap();
    assert!(
        said.starts_with("Answered: option 2: SQLite, for now\nThe loop (run "),
        "{said}"
    );
    let (code, out, err) = live.finish(A_WHILE);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("answered by mcp: option 2: SQLite, for now; the run goes on\n"),
        "{out}"
    );
    let answered = events(&env)
        .into_iter()
        .find(|l| l["kind"] == "answered")
        .unwrap();
    assert_eq!(answered["by"], "mcp");
    // The journal's last lines, through the tool.
    let r = env.mcp(&[call("loop_events", json!({"count": 2}))]);
    let ev = json_of(&r[0]);
    let kinds: Vec<&str> = ev["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.len(), 2, "{ev}");
    assert_eq!(*kinds.last().unwrap(), "complete", "{ev}");
}

#[test]
fn a_running_loop_is_stopped_over_mcp_and_what_is_not_running_is_refused() {
    let env = one_step_project();
    env.api.session([
        Reply::bash("python3 -c 'import time; time.sleep(60)'"),
        Reply::text("Slept."),
    ]);
    let live = Live::start(ralph_loop(&env).args(["--max-iterations", "3"]));
    live.wait_for("Bash: python3 -c", A_WHILE);
    let r = env.mcp(&[
        call("raise_limit", json!({"iterations": 2, "time": "1h"})),
        call("raise_limit", json!({"time": "1h"})),
        call("stop_loop", json!({})),
    ]);
    assert!(
        r[0]["error"] == true
            && r[0]["text"] == "raise_limit takes one of iterations, cost_usd, time or tokens",
        "{}",
        r[0]
    );
    assert!(
        r[1]["text"]
            .as_str()
            .unwrap()
            .ends_with("): raise --max-time by 1h."),
        "{}",
        r[1]
    );
    let r = &r[2..];
    let said = r[0]["text"].as_str().unwrap();
    assert!(
        r[0]["error"] == false
            && said.starts_with("Sent to the loop (run ")
            && said.ends_with("): stop now."),
        "{}",
        r[0]
    );
    let (code, out, err) = live.finish(A_WHILE);
    assert_eq!(code, Some(130), "{out}\n{err}");
    assert!(out.contains("ralph stop (sent by mcp)"), "{out}");
    let commanded = events(&env)
        .into_iter()
        .find(|l| l["kind"] == "commanded")
        .unwrap();
    assert_eq!(commanded["by"], "mcp");
    // A step is added as `ralph add` adds it, running or not.
    let r = env.mcp(&[call("add_step", json!({"title": "Write the docs"}))]);
    let said = r[0]["text"].as_str().unwrap();
    assert!(
        r[0]["error"] == false && said.starts_with("Added step 2 Write the docs to "),
        "{}",
        r[0]
    );
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(spec.contains("- [ ] **2** Write the docs"), "{spec}");
    // Nothing runs now: a stop or a raise is refused, as a tool's error.
    let r = env.mcp(&[
        call("stop_loop", json!({"after_session": true})),
        call("raise_limit", json!({"iterations": 2})),
        call("loop_status", json!({"loop": "nope"})),
    ]);
    for x in &r {
        assert_eq!(x["error"], true, "{x}");
    }
    assert!(
        r[0]["text"]
            .as_str()
            .unwrap()
            .contains("no loop is running in "),
        "{}",
        r[0]
    );
    assert!(
        r[2]["text"]
            .as_str()
            .unwrap()
            .contains("no loop named \"nope\" in "),
        "{}",
        r[2]
    );
}

/// What a call sends is bounded, a NUL refused; what a session wrote comes
/// back without its escapes; a session cannot start the server.
#[test]
fn hostile_calls_are_refused_or_bounded_and_a_session_cannot_serve() {
    let env = a_loop_that_asked_and_ended();
    // A spec step with escapes, as a session could write it.
    fs::write(
        env.project.join(".ralph/spec.md"),
        format!(
            "# Spec\n\n- [ ] **1** Evil \u{1b}]0;PWNED\u{7}\u{1b}[2J{}\n",
            "y".repeat(100_000)
        ),
    )
    .unwrap();
    let huge = "x".repeat(10 << 20);
    let r = env.mcp(&[
        call("answer", json!({"text": huge})),
        call("answer", json!({"text": "yes\u{0}no"})),
        call("loop_status", json!({})),
        call(
            "answer",
            json!({"text": format!("ok\u{1b}[2J{}", "z".repeat(100_000))}),
        ),
    ]);
    assert_eq!(r[0]["error"], true);
    assert!(
        r[0]["text"]
            .as_str()
            .unwrap()
            .contains("bytes, more than the 262144 ralph takes"),
        "{}",
        &r[0]["text"].as_str().unwrap()[..200.min(r[0]["text"].as_str().unwrap().len())]
    );
    assert_eq!(r[1]["error"], true);
    assert!(r[1]["text"].as_str().unwrap().contains("NUL"), "{}", r[1]);
    let status = r[2]["text"].as_str().unwrap();
    assert!(!status.contains('\u{1b}') && !status.contains('\u{7}'));
    assert!(status.contains("Evil ]0;PWNED[2J"), "{}", &status[..500]);
    assert!(status.len() < 20_000, "{}", status.len());
    // Under the bound, an answer is taken as `ralph answer` takes it: cut,
    // its escapes gone.
    let said = r[3]["text"].as_str().unwrap();
    assert!(!said.contains('\u{1b}') && said.starts_with("Answered: ok[2Jzzz"));
    assert!(said.len() < 5_000, "{}", said.len());
    // A session's `ralph mcp` is refused before it serves.
    let err = env.ralph().arg("mcp").env("RALPH_LOOP", "1").stderr_with(2);
    assert!(err.contains("refused inside a loop's session"), "{err}");
}

/// The real Claude Code, with the server added as `install-command --mcp`
/// adds it: its model's calls to `mcp__ralph__*` reach the loops.
/// The real Claude Code asked `prompt` in print mode, its MCP tools offered
/// outright, not deferred behind its tool search (which a model would call
/// first): the script calls them directly.
fn ask_claude(env: &TestEnv, prompt: &str) {
    let mut c = env.claude();
    c.args(["-p", "--dangerously-skip-permissions"])
        .env("ENABLE_TOOL_SEARCH", "false");
    let done = run_with_stdin(c, prompt, A_WHILE);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

#[test]
fn claude_code_calls_ralphs_tools_after_install_command_mcp() {
    let env = a_loop_that_asked_and_ended();
    let out = env
        .ralph()
        .args(["install-command", "--mcp"])
        .stdout_with(0);
    assert!(out.contains("Added the MCP server ralph (`"), "{out}");
    let tool = |name: &str, input: Value| Reply::Tool {
        name: format!("mcp__ralph__{name}"),
        input,
    };
    env.api.session([
        tool("list_loops", json!({})),
        tool("loop_status", json!({"loop": "main"})),
        tool("answer", json!({"loop": "main", "option": 2})),
        Reply::text("It asks which database; answered SQLite."),
    ]);
    ask_claude(&env, "What does my loop ask?");
    let turns = env.api.turns();
    let offered: Vec<String> = turns.last().unwrap().body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .filter(|n| n.starts_with("mcp__ralph__"))
        .collect();
    assert!(
        offered.contains(&"mcp__ralph__answer".to_string()),
        "{offered:?} {:#}",
        turns.last().unwrap().body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].clone())
            .collect::<Value>()
    );
    let seen = turns.last().unwrap().user_text();
    assert!(
        seen.contains("\"name\": \"main\"")
            && seen.contains("\"waiting\": \"Which database should the app use?\""),
        "{seen}"
    );
    assert!(seen.contains("\"SQLite, for now\""), "{seen}");
    assert!(
        seen.contains("Answered: option 2: SQLite, for now"),
        "{seen}"
    );
    // The loop, resumed, takes the answer Claude Code gave.
    env.api.session([
        Reply::bash(CHECK_THE_BOX),
        Reply::text("Done, with SQLite."),
    ]);
    let out = ralph_loop(&env).arg("--resume").stdout_with(0);
    assert!(
        out.contains("answered by mcp: option 2: SQLite, for now; the run goes on"),
        "{out}"
    );
    // And stops a running one.
    env.ralph().args(["add", "Another step"]).stdout_with(0);
    env.api.session([
        Reply::bash("python3 -c 'import time; time.sleep(60)'"),
        Reply::text("Slept."),
    ]);
    let live = Live::start(ralph_loop(&env).args(["--max-iterations", "3"]));
    live.wait_for("Bash: python3 -c", A_WHILE);
    env.api.session([
        tool("stop_loop", json!({"loop": "main"})),
        Reply::text("Stopped."),
    ]);
    ask_claude(&env, "Stop my loop.");
    let (code, out, err) = live.finish(A_WHILE);
    assert_eq!(code, Some(130), "{out}\n{err}");
    assert!(out.contains("ralph stop (sent by mcp)"), "{out}");
}

/// `install-command --mcp` writes each agent's config as its own `mcp add`
/// does: each real client lists the server and reaches it; `--remove`
/// gives back the user's file as it was, their own servers kept.
#[test]
fn each_agent_lists_the_server_install_command_adds_and_remove_keeps_the_users_own() {
    let env = one_step_project();
    let codex_toml = env.home.join(".codex/config.toml");
    fs::create_dir_all(codex_toml.parent().unwrap()).unwrap();
    let mine = "# my settings\n[mcp_servers.db]\ncommand = \"true\"\n";
    fs::write(&codex_toml, mine).unwrap();
    let gemini = env.home.join(".gemini/settings.json");
    fs::create_dir_all(gemini.parent().unwrap()).unwrap();
    fs::write(&gemini, r#"{"mcpServers": {"db": {"command": "true"}}}"#).unwrap();
    let gemini_before: Value = serde_json::from_str(&fs::read_to_string(&gemini).unwrap()).unwrap();
    let clients = [
        ("claude", claude_bin(), vec!["mcp", "list"]),
        ("codex", codex_bin(), vec!["mcp", "list"]),
        ("gemini", gemini_bin(), vec!["mcp", "list"]),
        ("opencode", opencode_bin(), vec!["mcp", "list"]),
    ];
    for (agent, bin, args) in &clients {
        env.ralph()
            .args(["install-command", "--mcp", "--agent", agent])
            .stdout_with(0);
        let out = env.command(bin).args(args).output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.lines()
                .any(|l| l.contains("ralph") && l.contains(" mcp")),
            "{agent} lists no ralph: {said}"
        );
        // Those that start the server to list it say it connected.
        if *agent != "codex" {
            assert!(said.to_lowercase().contains("connected"), "{agent}: {said}");
        }
        // Again: nothing to do.
        let again = env
            .ralph()
            .args(["install-command", "--mcp", "--agent", agent])
            .stdout_with(0);
        assert!(again.contains("already there; nothing to do"), "{again}");
    }
    for (agent, _, _) in &clients {
        let out = env
            .ralph()
            .args(["install-command", "--mcp", "--remove", "--agent", agent])
            .stdout_with(0);
        assert!(
            out.starts_with("Removed the MCP server ralph from "),
            "{out}"
        );
    }
    assert_eq!(fs::read_to_string(&codex_toml).unwrap(), mine);
    let gemini_after: Value = serde_json::from_str(&fs::read_to_string(&gemini).unwrap()).unwrap();
    assert_eq!(gemini_after["mcpServers"], gemini_before["mcpServers"]);
    let claude: Value =
        serde_json::from_str(&fs::read_to_string(env.home.join(".claude.json")).unwrap()).unwrap();
    assert!(claude["mcpServers"].get("ralph").is_none(), "{claude}");
    let err = env
        .ralph()
        .args(["install-command", "--mcp", "--agent", "pi"])
        .stderr_with(1);
    assert!(err.contains("pi has no MCP"), "{err}");
}

/// `start_loop`: only a worktree's name and a bound come from the caller;
/// refused until the project's config is approved; then a confined loop
/// runs in the background, in its worktree, and does the step.
#[test]
fn start_loop_runs_a_confined_loop_in_a_worktree_only_with_the_approved_config() {
    sandbox_tools();
    let env = one_step_project();
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!("claude = {:?}\n", claude_bin().display().to_string()),
    )
    .unwrap();
    env.commit_all("config");
    let r = env.mcp(&[
        call("start_loop", json!({"worktree": "w1"})),
        call("start_loop", json!({"worktree": "../x"})),
        call(
            "start_loop",
            json!({"worktree": "w2", "claude_args": ["--dangerously-skip-permissions"]}),
        ),
    ]);
    for x in &r {
        assert_eq!(x["error"], true, "{x}");
    }
    let refused = r[0]["text"].as_str().unwrap();
    assert!(
        refused.starts_with("refused, as `ralph loop` would refuse it: ")
            && refused.contains("ralph trust"),
        "{refused}"
    );
    assert!(
        r[1]["text"].as_str().unwrap().starts_with("worktree: "),
        "{}",
        r[1]
    );
    assert!(
        r[2]["text"]
            .as_str()
            .unwrap()
            .contains("takes no argument \"claude_args\""),
        "{}",
        r[2]
    );
    assert!(!wt_dir(&env.project, "w1").exists());
    env.approve_config();
    env.api
        .session([Reply::bash(CHECK_THE_BOX), Reply::text("Done.")]);
    let r = env.mcp(&[call(
        "start_loop",
        json!({"worktree": "w1", "max_iterations": 2}),
    )]);
    let said = r[0]["text"].as_str().unwrap();
    assert!(
        r[0]["error"] == false
            && said.starts_with(
                "Started `ralph loop --worktree w1 --confined --max-iterations 2` (pid "
            )
            && said.contains(" on branch ralph/w1, confined. Its output: "),
        "{said}"
    );
    let wt = wt_dir(&env.project, "w1");
    let summary = wt_summary(&wt);
    assert_eq!(summary["outcome"], "complete", "{summary}");
    assert_eq!(summary["confined"], true, "{summary}");
}

/// The summary of the newest run in `root`, once the loop has written it.
fn wt_summary(root: &std::path::Path) -> Value {
    let t0 = std::time::Instant::now();
    loop {
        let runs = root.join(".ralph/runs");
        let found = fs::read_dir(&runs).ok().and_then(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path().join("summary.json"))
                .find(|p| p.exists())
        });
        if let Some(p) = found {
            return serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap();
        }
        assert!(t0.elapsed() < A_WHILE, "no run ended in {}", root.display());
        std::thread::sleep(Duration::from_millis(200));
    }
}
