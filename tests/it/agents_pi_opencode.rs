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
    // Not the hour: well under it, however loaded the machine.
    assert!(took < Duration::from_secs(120), "took {took:?}");
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
    let out = env.opencode_json(PROMPT, &[]);
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
}

// ---- As the loop's agents (`--agent pi`, `--agent opencode`) ----
// (Each agent's spec, limit, timeout and Ctrl+C runs are in `agents`,
// with the other agents'.)

/// `ralph loop --agent <agent>` with its pinned client and the scripted
/// model.
pub(crate) fn agent_loop(env: &TestEnv, agent: &str) -> Ralph {
    let bin = if agent == "pi" {
        pi_bin()
    } else {
        opencode_bin()
    };
    env.ralph()
        .args(["loop", "--agent", agent, &format!("--{agent}")])
        .arg(bin)
        .args(["--model", SCRIPTED_MODEL])
}

/// A TypeScript module that appends `who` to `mark` as it is loaded.
fn marking_module(mark: &std::path::Path, who: &str, export: &str) -> String {
    format!(
        "import {{ appendFileSync }} from \"node:fs\";\nappendFileSync({:?}, \"{who}\\n\");\n{export}\n",
        mark.display().to_string()
    )
}

/// A clone's pi extension and opencode MCP server (which a switch turns
/// off), each appending its name to `mark` as it starts.
fn plant_agent_files(env: &TestEnv, mark: &std::path::Path) {
    fs::create_dir_all(env.project.join(".pi/extensions")).unwrap();
    fs::write(
        env.project.join(".pi/extensions/mark.ts"),
        marking_module(mark, "pi-extension", "export default function (pi: any) {}"),
    )
    .unwrap();
    fs::write(
        env.project.join("opencode.json"),
        serde_json::json!({"mcp": {"mark": {"type": "local",
            "command": ["sh", "-c", format!("echo opencode-mcp >> {}; sleep 5", mark.display())]}}})
        .to_string(),
    )
    .unwrap();
    env.commit_all("as cloned");
}

/// What a clone's pi and opencode files run as the agent starts runs
/// nothing before `ralph trust`: ralph starts pi without extensions and
/// opencode without the project's config, and the loop goes on. opencode's
/// plugins, which it loads whatever the switches say, refuse the loop.
/// Approved, they all run (the test tests something).
#[test]
fn a_clones_pi_and_opencode_files_run_nothing_until_approved() {
    let env = project();
    // A session each, five times.
    let steps: String = (1..=6)
        .map(|i| format!("- [ ] **{i}** Step {i}\n"))
        .collect();
    fs::write(
        env.project.join(".ralph/spec.md"),
        format!("# Spec\n\n{steps}"),
    )
    .unwrap();
    let mark = env.tmp.path().join("agent-files");
    plant_agent_files(&env, &mark);
    let trust = env.ralph().arg("trust").stdout_with(2);
    assert!(
        trust.contains(".pi/extensions/mark.ts")
            && trust.contains("opencode.json = ")
            && trust.contains(
                "Until approved, ralph starts Codex, pi and opencode with these of their files disabled"
            ),
        "{trust}"
    );
    for agent in ["pi", "opencode"] {
        env.api.session(step_session(false));
        let out = agent_loop(&env, agent)
            .args(["--max-iterations", "1"])
            .stdout_with(4);
        assert!(out.contains("Step done."), "{agent}: {out}");
        assert!(
            !mark.exists(),
            "{agent} ran a clone's file before approval: {}",
            fs::read_to_string(&mark).unwrap_or_default()
        );
    }
    // A plugin in .opencode/plugins: opencode 1.18.33 loads it even with
    // its project config off, so the loop refuses until it is approved.
    let plugins = env.project.join(".opencode/plugins");
    fs::create_dir_all(&plugins).unwrap();
    fs::write(
        plugins.join("mark.ts"),
        marking_module(
            &mark,
            "opencode-plugin",
            "export const Mark = async () => ({});",
        ),
    )
    .unwrap();
    // As a clone ships it: the plugin package opencode would install there
    // is already in place (no install from the network).
    opencode_plugin_in(&env.project.join(".opencode"));
    env.commit_all("a plugin");
    let err = agent_loop(&env, "opencode").stderr_with(2);
    assert!(
        err.contains(".opencode/plugins/mark.ts, 3 lines:\n") && err.contains("`ralph trust`"),
        "{err}"
    );
    // A run that starts no opencode is not held up by its plugin; one that
    // could fall back on it is.
    let err = agent_loop(&env, "pi")
        .args(["--fallback", "opencode"])
        .stderr_with(2);
    assert!(err.contains(".opencode/plugins/mark.ts"), "{err}");
    env.api.session(step_session(false));
    let out = agent_loop(&env, "pi")
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(out.contains("Step done."), "{out}");
    assert!(!mark.exists(), "ran before approval");
    // doctor names what is to approve (there is no config here).
    let check = env.doctor_check("config");
    let detail = check["detail"].as_str().unwrap_or_default();
    assert!(
        check["ok"] == false
            && detail.starts_with("the project's agent files not approved")
            && detail.contains(".opencode/plugins/mark.ts"),
        "{check}"
    );
    env.ralph().args(["trust", "--yes"]).assert().success();
    for agent in ["pi", "opencode"] {
        env.api.session(step_session(false));
        agent_loop(&env, agent)
            .args(["--max-iterations", "1"])
            .assert()
            .code(4);
    }
    let ran = fs::read_to_string(&mark).unwrap_or_default();
    assert!(
        ran.contains("pi-extension")
            && ran.contains("opencode-plugin")
            && ran.contains("opencode-mcp"),
        "approved, they run: {ran}"
    );
}

/// pi's `.pi/settings.json` no switch turns off (its `shellCommandPrefix`
/// runs before every command): a loop on pi refuses to start until it is
/// approved.
#[test]
fn a_clones_pi_settings_refuse_a_pi_loop_until_approved() {
    let env = project();
    let mark = env.tmp.path().join("prefix");
    fs::create_dir_all(env.project.join(".pi")).unwrap();
    fs::write(
        env.project.join(".pi/settings.json"),
        serde_json::json!({"shellCommandPrefix": format!("echo prefix >> {};", mark.display())})
            .to_string(),
    )
    .unwrap();
    env.commit_all("as cloned");
    let err = agent_loop(&env, "pi").stderr_with(2);
    assert!(
        err.contains(".pi/settings.json") && err.contains("`ralph trust`"),
        "{err}"
    );
    assert!(!mark.exists() && !env.project.join(".ralph/runs").exists());
}

/// Under `--confined`, pi and opencode run inside ralph's bubblewrap: a
/// write to the home or beside the project fails; the step's commit, its
/// own state folder and `ralph complete` work, and the run completes.
#[test]
fn a_confined_pi_or_opencode_session_writes_in_the_project_and_nowhere_else() {
    sandbox_tools();
    for (agent, state) in [
        ("pi", ".pi/agent/mine"),
        ("opencode", ".local/share/opencode/mine"),
    ] {
        let env = one_step_project();
        let outside = env.tmp.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        let tries = [
            format!("{}/outside.txt", env.home.display()),
            format!("{}/escaped.txt", outside.display()),
            ".git/config".into(),
        ];
        let attempts: String = tries
            .iter()
            .map(|p| format!("(echo escaped >> {p}) 2>/dev/null && echo W''ROTE {p}; "))
            .collect();
        env.api.session([
            Reply::bash(format!(
                "{attempts}echo in > inside.txt && git add inside.txt && echo state > $HOME/{state} && {CHECK_THE_BOX} && ralph complete -m done"
            )),
            Reply::text("Step done."),
        ]);
        let out = agent_loop(&env, agent)
            .args(["--confined", "--max-iterations", "2"])
            .stdout_with(0);
        assert!(out.contains("complete: "), "{agent}: {out}");
        let session =
            fs::read_to_string(run_dir(&env).join("session-001.jsonl")).unwrap_or_default();
        assert!(!session.contains("WROTE"), "{agent}: {session}");
        assert!(!env.home.join("outside.txt").exists(), "{agent}");
        assert!(!outside.join("escaped.txt").exists(), "{agent}");
        assert!(
            !fs::read_to_string(env.project.join(".git/config"))
                .unwrap()
                .contains("escaped"),
            "{agent}"
        );
        assert_eq!(
            fs::read_to_string(env.home.join(state)).unwrap_or_default(),
            "state\n",
            "{agent}: {session}"
        );
        let r = &records(&env)[0];
        assert_eq!(
            (r["confined"].as_bool(), r["agent"].as_str()),
            (Some(true), Some(agent))
        );
        assert!(r["command"].to_string().starts_with("[\"bwrap\""), "{r}");
        assert_ne!(
            r["head_before"], r["head_after"],
            "{agent}: no commit: {out}"
        );
    }
}

/// `ralph install-command --agent pi|opencode` puts `/ralph-setup` where
/// each looks for its own commands (pi's prompt templates, opencode's
/// custom commands), and the real client expands it: the command's text,
/// the argument in place, reaches the model.
#[test]
fn ralph_setup_is_installed_for_pi_and_opencode_and_each_expands_it() {
    let env = TestEnv::new();
    env.git_init();
    let want = "a CLI that converts CSV to JSON";
    for (agent, file, how) in [
        (
            "pi",
            ".pi/agent/prompts/ralph-setup.md",
            "In pi, in your project: /ralph-setup <what you want built>",
        ),
        (
            "opencode",
            ".config/opencode/commands/ralph-setup.md",
            "In opencode, in your project: /ralph-setup <what you want built>",
        ),
    ] {
        env.ralph()
            .args(["install-command", "--agent", agent])
            .prints(
                0,
                &format!(
                    "Installed /ralph-setup in {}.\n{how}\n",
                    env.home.join(file).display()
                ),
                "",
            );
        let text = fs::read_to_string(env.home.join(file)).unwrap();
        assert!(
            text.starts_with("---\ndescription: Set up a Ralph loop")
                && text.contains("The user wants this built: $ARGUMENTS"),
            "{agent}: {text}"
        );
        let before = env.api.requests().len();
        env.api
            .session([Reply::text("Let us start with the interview.")]);
        let out = if agent == "pi" {
            env.pi_json(&format!("/ralph-setup {want}"), &[])
        } else {
            env.opencode_json(want, &["--command", "ralph-setup"])
        };
        assert!(out.status.success(), "{agent}: {out:?}");
        let sent: String = env.api.requests()[before..]
            .iter()
            .map(|r| r.body.to_string())
            .collect();
        assert!(
            sent.contains("# Set up a Ralph loop")
                && sent.contains(&format!("The user wants this built: {want}")),
            "{agent}: {sent}"
        );
    }
}

/// `ralph doctor` checks pi and opencode as it checks the other agents
/// the config names: found, and their versions (pi says its version on
/// stderr).
#[test]
fn doctor_finds_pi_and_opencode_and_says_their_versions() {
    let env = project();
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!(
            "agent = \"pi\"\nfallback = [\"opencode\"]\npi = {:?}\nopencode = {:?}\n",
            pi_bin().display().to_string(),
            opencode_bin().display().to_string()
        ),
    )
    .unwrap();
    env.approve_config();
    let out = env.ralph().arg("doctor").assert().get_output().clone();
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = out
        .lines()
        .find(|l| l.contains(" agents"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.starts_with("ok")
            && line.contains(&format!("pi: {PI_VERSION}"))
            && line.contains(&format!("opencode: {OPENCODE_VERSION}")),
        "{out}"
    );
    // Claude Code's own checks have nothing to check where no loop runs it;
    // /ralph-setup is looked for where pi keeps it.
    for check in ["claude", "hook"] {
        let c = env.doctor_check(check);
        assert_eq!(
            (c["ok"].as_bool(), c["detail"].as_str()),
            (
                Some(true),
                Some("not used here: the config runs pi, opencode")
            ),
            "{check}: {c}"
        );
    }
    let c = env.doctor_check("slash-command");
    assert_eq!(
        (c["ok"].as_bool(), c["detail"].as_str(), c["fix"].as_str()),
        (
            Some(false),
            Some("/ralph-setup is not installed for pi"),
            Some("ralph install-command --agent pi")
        ),
        "{c}"
    );
    env.ralph()
        .args(["install-command", "--agent", "pi"])
        .assert()
        .success();
    assert_eq!(env.doctor_check("slash-command")["ok"], true);
}

/// pi prices tokens from the user's own `models.json`: a model with no
/// prices there is $0 to pi for work done. ralph counts that as a cost it
/// does not know, and a run with `--max-cost` stops rather than spend past
/// a cap it cannot count.
#[test]
fn a_pi_model_without_prices_is_a_cost_unknown_and_stops_a_capped_run() {
    let env = project();
    let models = env.home.join(".pi/agent/models.json");
    let mut m: Value = serde_json::from_str(&fs::read_to_string(&models).unwrap()).unwrap();
    for model in m["providers"]["scripted"]["models"].as_array_mut().unwrap() {
        model.as_object_mut().unwrap().remove("cost");
    }
    fs::write(&models, m.to_string()).unwrap();
    env.api.session(step_session(false));
    env.api.session(step_session(false));
    let out = agent_loop(&env, "pi")
        .args(["--max-iterations", "3", "--max-cost", "5"])
        .assert()
        .code(4)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains("session 1's cost is not known: pi priced its 2100 tokens at $0 (its own config has no price for this model)")
            && out.contains("the last session's cost is not known (said above), so --max-cost $5.00 cannot be held")
            && out.contains("cost unknown"),
        "{out}"
    );
    assert_eq!(records(&env).len(), 1, "no second session: {out}");
    // Without a cap the run goes on, its cost said as unknown.
    env.api.session(step_session(false));
    let out = agent_loop(&env, "pi")
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(out.contains("cost unknown"), "{out}");
}

/// opencode waits out an API's `retry-after` by itself, silently, for as
/// long as it says (an hour here): ralph reads the failed call in its log,
/// ends the session as a usage limit at once, and waits its own way (its
/// backoff, `--max-limit-wait`, a fallback agent); the next session does
/// the step.
#[test]
fn an_opencode_session_waiting_out_a_limit_by_itself_is_ended_as_a_limit() {
    let env = one_step_project();
    env.api.session([
        Reply::usage_limit("You've hit your usage limit. Try again at 11:29 AM.")
            .retry_after("3600"),
    ]);
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Step done."),
    ]);
    let t0 = Instant::now();
    let out = agent_loop(&env, "opencode")
        .args([
            "--max-iterations",
            "3",
            "--limit-backoff",
            "1s",
            "--timeout",
            "10m",
        ])
        .stdout_with(0);
    assert!(
        out.contains("opencode: You've hit your usage limit. Try again at 11:29 AM. (ralph ends the session and waits its own way)")
            && out.contains("usage limit reached; waiting")
            && out.contains("complete: its one step done"),
        "{out}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(120),
        "{:?}",
        t0.elapsed()
    );
    let recs = records(&env);
    assert_eq!(
        recs[0]["outcome"], "limited: usage limit reached",
        "{}",
        recs[0]
    );
    assert_eq!(recs[0]["counted"], false);
    assert_eq!(recs.len(), 2);
}

// ---- What a hostile session tries (found by probing) ----

/// Shell that finds the agent's own process (the first ancestor of the
/// tool's shell that is no shell) and sets `$agent` to its pid.
pub(crate) const FIND_AGENT: &str = "agent=$PPID; while :; do c=$(cat /proc/$agent/comm); \
case $c in bash|sh|dash) agent=$(awk '{print $4}' /proc/$agent/stat);; *) break;; esac; done; ";

/// A folder the sandbox cannot write (beside the project): a mark there
/// means something ran outside any sandbox.
fn outside(env: &TestEnv) -> std::path::PathBuf {
    let d = env.tmp.path().join("outside");
    fs::create_dir_all(&d).unwrap();
    d
}

/// a confined pi session writes a global pi
/// extension into pi's state folder (`~/.pi/agent/extensions`), which ralph
/// leaves writable. The user's next pi, outside any sandbox, runs it.
#[test]
fn confined_pi_cannot_plant_code_in_its_state_folder() {
    sandbox_tools();
    let env = one_step_project();
    let mark = outside(&env).join("pi-global-extension");
    let ext = format!(
        "import {{ appendFileSync }} from \"node:fs\"; appendFileSync({:?}, \"ran\\n\"); export default function (pi: any) {{}}",
        mark.display().to_string()
    );
    let plant = format!(
        "mkdir -p $HOME/.pi/agent/extensions && printf '%s\\n' '{ext}' > $HOME/.pi/agent/extensions/evil.ts; "
    );
    env.api.session([
        Reply::bash(format!("{plant}{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Step done."),
    ]);
    let out = agent_loop(&env, "pi")
        .args(["--confined", "--max-iterations", "2"])
        .stdout_with(0);
    assert!(out.contains("complete: "), "{out}");
    assert!(
        out.contains("session 1 (pi) made what a confined session may not")
            && out.contains(".pi/agent/extensions"),
        "{out}"
    );
    assert!(!mark.exists(), "ran inside the sandbox?");
    let planted = env.home.join(".pi/agent/extensions/evil.ts");
    // The user's own pi, later, unconfined.
    env.api.session([Reply::text("hi")]);
    let _ = env.pi_json("hi", &[]);
    assert!(
        !mark.exists(),
        "a confined session planted {} and the user's next pi ran it outside any sandbox",
        planted.display()
    );
}

/// the same with opencode: a plugin in
/// `$XDG_CONFIG_HOME/opencode/plugins`, which every later opencode (ralph's
/// unconfined sessions included: OPENCODE_DISABLE_PROJECT_CONFIG does not
/// cover the user's own config) loads.
#[test]
fn confined_opencode_cannot_plant_a_plugin_in_its_config_folder() {
    sandbox_tools();
    let env = one_step_project();
    let mark = outside(&env).join("opencode-global-plugin");
    let plugin = format!(
        "import {{ appendFileSync }} from \"node:fs\"; appendFileSync({:?}, \"ran\\n\"); export const Evil = async () => ({{}});",
        mark.display().to_string()
    );
    let plant = format!(
        "mkdir -p $XDG_CONFIG_HOME/opencode/plugins && printf '%s\\n' '{plugin}' > $XDG_CONFIG_HOME/opencode/plugins/evil.ts; "
    );
    env.api.session([
        Reply::bash(format!("{plant}{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Step done."),
    ]);
    let out = agent_loop(&env, "opencode")
        .args(["--confined", "--max-iterations", "2"])
        .stdout_with(0);
    assert!(out.contains("complete: "), "{out}");
    fs::remove_file(&mark).ok(); // what ran inside (it could not write there anyway)
    env.api.session([Reply::text("hi")]);
    let _ = env.opencode_json("hi", &[]);
    assert!(
        !mark.exists(),
        "a confined session planted a global opencode plugin and the next opencode ran it outside any sandbox"
    );
}

/// the agent's stderr is ralph's own (the
/// user's terminal), inherited unfiltered; a session's command writes
/// escape sequences there through `/proc/<agent>/fd/2` (or opens /dev/tty:
/// print sessions keep the controlling terminal).
#[test]
fn a_sessions_command_cannot_send_escape_sequences_to_the_terminal() {
    let mut failed = Vec::new();
    for agent in ["pi", "opencode"] {
        let env = one_step_project();
        env.api.session([
            Reply::bash(format!(
                "{FIND_AGENT}printf '\\033]0;PWNED\\007\\033]52;c;ZWNobyBwd25lZA==\\007' > /proc/$agent/fd/2; {CHECK_THE_BOX}"
            )),
            Reply::text("Step done."),
        ]);
        let out = agent_loop(&env, agent)
            .args(["--max-iterations", "1"])
            .assert()
            .get_output()
            .clone();
        let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
        if all.windows(2).any(|w| w == b"\x1b]") {
            failed.push(format!(
                "{agent}: a session's escape sequences reached ralph's terminal: {:?}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The pi and opencode state folders ralph binds writable are the
/// user's: a session cannot write beside them (a sibling of `~/.pi/agent`).
#[test]
fn confined_session_writes_nothing_beside_its_state_folders() {
    sandbox_tools();
    for agent in ["pi", "opencode"] {
        let env = one_step_project();
        let tries = [
            format!("{}/.pi/beside", env.home.display()),
            format!("{}/.config/beside", env.home.display()),
            format!("{}/.bashrc", env.home.display()),
            ".git/hooks/pre-commit".to_string(),
            ".git/config".to_string(),
        ];
        let attempts: String = tries
            .iter()
            .map(|p| format!("(echo escaped >> {p}) 2>/dev/null && echo W''ROTE {p}; "))
            .collect();
        env.api.session([
            Reply::bash(format!(
                "{attempts}{CHECK_THE_BOX} && ralph complete -m done"
            )),
            Reply::text("Step done."),
        ]);
        let out = agent_loop(&env, agent)
            .args(["--confined", "--max-iterations", "2"])
            .stdout_with(0);
        let session =
            fs::read_to_string(run_dir(&env).join("session-001.jsonl")).unwrap_or_default();
        assert!(!session.contains("WROTE"), "{agent}: {session}\n{out}");
        for p in &tries[..3] {
            assert!(!std::path::Path::new(p).exists(), "{agent}: {p}");
        }
    }
}

/// `.ralph/config.toml` is bound read-only
/// only where it exists (`--ro-bind-try`): a confined session in a project
/// without one creates it, and its keys that need no approval (`model`,
/// `timeout`, `max_iterations`, `max_cost`, `prompt`, ...) apply to the
/// user's next run.
#[test]
fn confined_session_cannot_create_ralphs_config() {
    sandbox_tools();
    for agent in ["pi", "opencode"] {
        let env = one_step_project();
        assert!(!env.project.join(".ralph/config.toml").exists());
        env.api.session([
            Reply::bash(format!(
                "printf 'max_iterations = 1000\\nmodel = \\\"expensive\\\"\\n' > .ralph/config.toml; {CHECK_THE_BOX} && ralph complete -m done"
            )),
            Reply::text("Step done."),
        ]);
        let out = agent_loop(&env, agent)
            .args(["--confined", "--max-iterations", "2"])
            .stdout_with(0);
        assert!(
            !env.project.join(".ralph/config.toml").exists(),
            "{agent}: a confined session wrote ralph's config: {:?}\n{out}",
            fs::read_to_string(env.project.join(".ralph/config.toml"))
        );
    }
}

/// A confined session makes a nested git repository whose own config
/// names a program (`core.fsmonitor`), and stages it as a gitlink: the
/// user's next plain `git status` in the project would run it outside any
/// sandbox. ralph renames the nested `.git` after the session, and says so.
#[test]
fn confined_session_cannot_make_the_users_git_status_run_a_program() {
    sandbox_tools();
    let mut failed = Vec::new();
    for agent in ["pi", "opencode"] {
        let env = one_step_project();
        let mark = outside(&env).join("fsmonitor");
        let nested = format!(
            "mkdir -p sub && (cd sub && git init -q && git -c user.name=x -c user.email=x@x commit -q --allow-empty -m s \
             && git config core.fsmonitor 'echo ran >> {m}; false') && git add sub 2>/dev/null; ",
            m = mark.display()
        );
        env.api.session([
            Reply::bash(format!("{nested}{CHECK_THE_BOX} && ralph complete -m done")),
            Reply::text("Step done."),
        ]);
        let out = agent_loop(&env, agent)
            .args(["--confined", "--max-iterations", "2"])
            .stdout_with(0);
        assert!(
            out.contains("complete: ")
                && out.contains("renamed sub/.git to sub/.git.ralph-quarantined"),
            "{agent}: {out}"
        );
        assert!(
            !mark.exists(),
            "{agent}: ran already (outside the sandbox?)"
        );
        // The user, after the run.
        let st = env.command("git").arg("status").output().unwrap();
        assert!(st.status.success(), "{st:?}");
        if mark.exists() {
            failed.push(format!(
                "{agent}: the user's `git status` ran a program a confined session named in sub/.git/config"
            ));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// pi installed under `/tmp` (a folder ralph's sandbox empties): under
/// `--confined` its program and package are bound back read-only, so the
/// session runs and the step is done (before, every session failed with
/// "pi exited with status 1").
#[test]
fn a_confined_agent_installed_under_tmp_still_runs() {
    sandbox_tools();
    let env = one_step_project();
    let installed = pi_bin()
        .ancestors()
        .nth(3)
        .expect("the pinned pi's install folder")
        .to_path_buf();
    let copy = env.tmp.path().join("pi-install");
    assert!(copy.starts_with("/tmp"), "{}", copy.display());
    // Hard links where they can be (same file system), else a copy.
    let linked = std::process::Command::new("cp")
        .arg("-al")
        .arg(&installed)
        .arg(&copy)
        .status()
        .unwrap();
    if !linked.success() {
        let _ = fs::remove_dir_all(&copy);
        let copied = std::process::Command::new("cp")
            .arg("-a")
            .arg(&installed)
            .arg(&copy)
            .status()
            .unwrap();
        assert!(copied.success());
    }
    let pi = copy.join("node_modules/.bin/pi");
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Step done."),
    ]);
    let out = env
        .ralph()
        .args(["loop", "--agent", "pi", "--pi"])
        .arg(&pi)
        .args(["--model", SCRIPTED_MODEL])
        .args(["--confined", "--max-iterations", "2"])
        .stdout_with(0);
    assert!(out.contains("complete: its one step done"), "{out}");
    assert!(!out.contains("pi exited with status"), "{out}");
}
