//! The real pi and opencode clients, without ralph, against the scripted
//! Chat Completions API: what the harness gives ralph's tests, seen working
//! as a user would see it (the file written, the stream, the exit code).

use std::fs;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

const PROMPT: &str = "Write hi to step.txt.";

/// A git project and one scripted session that writes step.txt.
fn step_project() -> TestEnv {
    let env = TestEnv::new();
    env.git_init();
    fs::write(env.project.join("README.md"), "a project\n").unwrap();
    env.commit_all("start");
    env.api
        .session([Reply::bash("echo hi > step.txt"), Reply::text("Step done.")]);
    env
}

/// The account's usage limit, said as an OpenAI-style 429.
fn usage_limit() -> Reply {
    Reply::Error {
        status: 429,
        kind: "usage_limit_reached".into(),
        message: "You've hit your usage limit. Try again at 11:29 AM.".into(),
    }
}

/// The stream's lines as JSON; each line must be one object.
fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l}")))
        .collect()
}

fn of_type<'a>(lines: &'a [Value], t: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == t).collect()
}

#[test]
fn pi_runs_a_scripted_bash_step_and_reports_its_cost() {
    let env = step_project();
    let out = env.pi_json(PROMPT, &[]);
    assert!(out.status.success(), "pi failed: {out:?}");
    assert_eq!(
        fs::read_to_string(env.project.join("step.txt")).unwrap(),
        "hi\n"
    );
    let lines = lines(&out);
    assert_eq!(lines[0]["type"], "session", "{:?}", lines[0]);
    let tools = of_type(&lines, "tool_execution_end");
    assert_eq!(tools.len(), 1, "{lines:?}");
    assert_eq!(
        (tools[0]["toolName"].as_str(), tools[0]["isError"].as_bool()),
        (Some("bash"), Some(false))
    );
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "agent_end", "{end}");
    let said: Vec<&Value> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(said.len(), 2, "{end}");
    assert_eq!(said[1]["content"][0]["text"], "Step done.");
    assert_eq!(said[1]["stopReason"], "stop");
    for m in &said {
        assert_eq!(
            (
                m["provider"].as_str(),
                m["model"].as_str(),
                m["usage"]["input"].as_u64(),
                m["usage"]["cacheRead"].as_u64(),
                m["usage"]["output"].as_u64()
            ),
            (
                Some("scripted"),
                Some("scripted-model"),
                Some(800),
                Some(200),
                Some(50)
            ),
            "{m}"
        );
        let cost = m["usage"]["cost"]["total"].as_f64().unwrap();
        assert!((cost - 0.00321).abs() < 1e-9, "{m}");
    }
    let turns = env.api.turns();
    assert_eq!(turns.len(), 2, "one turn for the call, one for its result");
    assert!(turns[0].user_text().contains(PROMPT));
    assert!(
        turns[0]
            .system_text()
            .contains(env.project.to_str().unwrap())
    );
    assert_eq!(turns[0].session_id, turns[1].session_id);
}

#[test]
fn pi_says_a_usage_limit_in_its_stream_and_exits_0_at_once() {
    let env = TestEnv::new();
    env.git_init();
    // A retry-after pi's model client would sleep out, were its retries on.
    env.api.session([usage_limit().retry_after("3600")]);
    let t0 = Instant::now();
    let out = env.pi_json(PROMPT, &[]);
    let took = t0.elapsed();
    assert!(out.status.success(), "pi's json mode exits 0: {out:?}");
    let lines = lines(&out);
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "agent_end", "{end}");
    let last = end["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["stopReason"], "error", "{last}");
    assert_eq!(
        last["errorMessage"],
        "429 You've hit your usage limit. Try again at 11:29 AM."
    );
    assert_eq!(env.api.turns().len(), 1, "no retries, no retry-after wait");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn opencode_runs_a_scripted_bash_step_and_reports_its_cost() {
    let env = step_project();
    let out = env.opencode_json(PROMPT, &[]);
    assert!(out.status.success(), "opencode failed: {out:?}");
    assert_eq!(
        fs::read_to_string(env.project.join("step.txt")).unwrap(),
        "hi\n"
    );
    let lines = lines(&out);
    let tools = of_type(&lines, "tool_use");
    assert_eq!(tools.len(), 1, "{lines:?}");
    let state = &tools[0]["part"]["state"];
    assert_eq!(
        (
            tools[0]["part"]["tool"].as_str(),
            state["status"].as_str(),
            state["input"]["command"].as_str()
        ),
        (Some("bash"), Some("completed"), Some("echo hi > step.txt")),
        "{}",
        tools[0]
    );
    let texts = of_type(&lines, "text");
    assert_eq!(texts.len(), 1, "{lines:?}");
    assert_eq!(texts[0]["part"]["text"], "Step done.");
    let steps = of_type(&lines, "step_finish");
    let reasons: Vec<&str> = steps
        .iter()
        .map(|s| s["part"]["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["tool-calls", "stop"]);
    for s in &steps {
        let p = &s["part"];
        assert_eq!(
            (
                p["tokens"]["input"].as_u64(),
                p["tokens"]["cache"]["read"].as_u64(),
                p["tokens"]["output"].as_u64(),
                p["tokens"]["reasoning"].as_u64()
            ),
            (Some(800), Some(200), Some(40), Some(10)),
            "{s}"
        );
        assert!((p["cost"].as_f64().unwrap() - 0.00321).abs() < 1e-9, "{s}");
    }
    assert_eq!(lines.last().unwrap(), *steps.last().unwrap());
    let turns = env.api.turns();
    assert_eq!(turns.len(), 2, "one turn for the call, one for its result");
    assert!(turns[0].user_text().contains(PROMPT));
    let titles = env.api.requests().len() - turns.len();
    assert_eq!(titles, 1, "one title call besides the turns");
}

#[test]
fn opencode_says_a_usage_limit_as_an_error_line_and_exits_1() {
    let env = TestEnv::new();
    env.git_init();
    // Its retries (five, at least 2 s apart) cannot be turned off; a
    // retry-after of 0 has them come at once.
    env.api.session([usage_limit().retry_after("0")]);
    let t0 = Instant::now();
    let out = env.opencode_json(PROMPT, &[]);
    let took = t0.elapsed();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines = lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let e = &lines[0];
    assert_eq!(
        (
            e["type"].as_str(),
            e["error"]["name"].as_str(),
            e["error"]["data"]["statusCode"].as_u64(),
            e["error"]["data"]["message"].as_str()
        ),
        (
            Some("error"),
            Some("APIError"),
            Some(429),
            Some("You've hit your usage limit. Try again at 11:29 AM.")
        ),
        "{e}"
    );
    assert_eq!(env.api.turns().len(), 6, "the call and its 5 retries");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}
