//! Codex CLI and Gemini CLI as the loop's agents: the real clients (pinned,
//! from the npm registry), their models played by the scripted API in their
//! own wire formats. The same loop, spec, tracker-free gate and records as
//! for Claude Code.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use crate::support::*;

/// The agent, its pinned client, the model given and what each session's
/// tokens cost at that model's price (two model calls a session, each
/// 1,000 input tokens of which 200 cached, and 50 output): by ralph's
/// price table for Codex and Gemini, by the agent itself for pi and
/// opencode (the test home's prices: 3 in, 15 out, 0.3 cached).
fn agents() -> [(&'static str, PathBuf, &'static str, f64); 4] {
    let own_prices = (1600.0 * 3.0 + 400.0 * 0.3 + 100.0 * 15.0) / 1e6;
    [
        (
            "codex",
            codex_bin(),
            "gpt-5.4",
            (1600.0 * 2.50 + 400.0 * 0.25 + 100.0 * 15.0) / 1e6,
        ),
        (
            "gemini",
            gemini_bin(),
            "gemini-2.5-pro",
            (1600.0 * 1.25 + 400.0 * 0.125 + 100.0 * 10.0) / 1e6,
        ),
        ("pi", pi_bin(), SCRIPTED_MODEL, own_prices),
        ("opencode", opencode_bin(), SCRIPTED_MODEL, own_prices),
    ]
}

fn agent_loop(env: &TestEnv, agent: &str, bin: &PathBuf, model: &str) -> Ralph {
    env.ralph()
        .args(["loop", "--agent", agent, &format!("--{agent}")])
        .arg(bin)
        .args(["--model", model])
}

#[test]
fn each_agent_completes_a_three_step_spec_with_real_tool_calls() {
    for (agent, bin, model, per_session) in agents() {
        let env = project();
        for i in 1..=3 {
            env.api.session(step_session(i == 3));
        }
        let out = agent_loop(&env, agent, &bin, model)
            .args(["--max-iterations", "10", "--max-cost", "5"])
            .stdout_with(0);
        assert!(
            out.contains("complete: all 3 steps done · 3 iterations")
                && out.contains("→ Bash: sed -i")
                && out.contains("Step done."),
            "{agent}: {out}"
        );
        let recs = records(&env);
        assert_eq!(recs.len(), 3, "{agent}");
        for r in &recs {
            assert_eq!(
                (
                    r["agent"].as_str(),
                    r["model"].as_str(),
                    r["outcome"].as_str()
                ),
                (Some(agent), Some(model), Some("ok")),
                "{r}"
            );
            let cost = r["cost_usd"].as_f64().unwrap();
            assert!(
                (cost - per_session).abs() < 1e-9,
                "{agent}: {cost} vs {per_session}"
            );
            assert_eq!(
                (
                    r["tokens"]["input"].as_u64(),
                    r["tokens"]["cache_read"].as_u64(),
                    r["tokens"]["output"].as_u64()
                ),
                (Some(1600), Some(400), Some(100)),
                "{r}"
            );
            assert_ne!(r["head_before"], r["head_after"], "each session committed");
        }
        let s = summary(&env);
        assert_eq!(
            (s["outcome"].as_str(), s["agent"].as_str()),
            (Some("complete"), Some(agent))
        );
        assert!(
            (s["cost_usd"].as_f64().unwrap() - 3.0 * per_session).abs() < 1e-9,
            "{s}"
        );
        let status = env.ralph().arg("status").stdout_with(0);
        assert!(
            status.contains(&format!(", {agent}\n")) || status.contains(&format!(", {agent},")),
            "{status}"
        );
        // The saved stream reads back as the loop showed it: as its agent's.
        let logs = env.ralph().arg("logs").stdout_with(0);
        assert!(
            logs.contains("→ Bash: sed -i") && logs.contains("Step done."),
            "{agent}: {logs}"
        );
    }
}

#[test]
fn each_agent_waits_out_a_usage_limit_and_refuses_a_false_complete() {
    for (agent, bin, model, _) in agents() {
        let env = project();
        // The account's limit (Codex: usage_limit_reached; Gemini: the daily
        // quota), then a session that claims COMPLETE with steps open, then
        // the work.
        let limit = match agent {
            "codex" => Reply::Error {
                status: 429,
                kind: "usage_limit_reached".into(),
                message: "scripted usage limit".into(),
            },
            "gemini" => Reply::Error {
                status: 429,
                kind: "RESOURCE_EXHAUSTED".into(),
                message: "Quota exceeded for quota metric generate_content requests per day".into(),
            },
            // opencode retries silently first (5 times): at once, when
            // the API says so.
            _ => Reply::usage_limit("You've hit your usage limit. Try again at 11:29 AM.")
                .retry_after("0"),
        };
        env.api.session([limit]);
        env.api.session([
            Reply::bash("printf 'done, trust me\\n' > .ralph/COMPLETE"),
            Reply::text("All done."),
        ]);
        for i in 1..=3 {
            env.api.session(step_session(i == 3));
        }
        let out = agent_loop(&env, agent, &bin, model)
            .args(["--max-iterations", "10", "--limit-backoff", "1s"])
            .stdout_with(0);
        assert!(
            out.contains("usage limit reached")
                && out.contains("COMPLETE rejected")
                && out.contains("complete: all 3 steps done"),
            "{agent}: {out}"
        );
        let recs = records(&env);
        assert_eq!(
            recs[0]["outcome"], "limited: usage limit reached",
            "{agent}: {}",
            recs[0]
        );
        assert_eq!(recs[0]["counted"], false);
        assert_eq!(recs.len(), 5, "{agent}");
    }
}

#[test]
fn an_agent_session_past_its_timeout_is_ended_with_what_it_started() {
    for (i, (agent, bin, model, _)) in (0..).zip(agents()) {
        let marker = 7781 + i;
        ended_with_what_it_started((agent, &bin, model), &[], marker);
    }
}

/// Ralph runs a confined Gemini CLI inside its own bubblewrap: the timeout
/// and Ctrl+C end it and what it started all the same.
#[test]
fn a_confined_gemini_session_is_ended_with_what_it_started() {
    sandbox_tools();
    ended_with_what_it_started(
        ("gemini", &gemini_bin(), "gemini-2.5-pro"),
        &["--confined"],
        7811,
    );
}

/// A session that started a process in a session of its own, then
/// stalled: past its timeout, and then at a Ctrl+C, it and what it started
/// end.
fn ended_with_what_it_started(
    (agent, bin, model): (&str, &PathBuf, &str),
    extra: &[&str],
    marker: u32,
) {
    let env = project();
    env.api.session([
        Reply::bash(format!("setsid sleep {marker} > /dev/null 2>&1 &")),
        Reply::Stall(Duration::from_secs(60)),
        Reply::text("late"),
    ]);
    // Long enough for a client to start and run its command on a loaded
    // machine (opencode took more than 5 s), short of the stall: a session
    // that timed out before it asked would leave its replies to the next.
    let out = agent_loop(&env, agent, bin, model)
        .args(extra)
        .args(["--max-iterations", "1", "--timeout", "25s"])
        .stdout_with(4);
    assert!(out.contains("timed out after 25s"), "{agent}: {out}");
    assert!(
        out.contains(&format!("setsid sleep {marker}")),
        "{agent}: the session never ran its command: {out}"
    );
    assert!(
        eventually(Duration::from_secs(10), || processes_with(&format!(
            "sleep {marker}"
        ))
        .is_empty()),
        "{agent}: the session's leftover was not ended"
    );
    let name = bin.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        eventually(Duration::from_secs(10), || crate::support::processes_with(
            &format!("{name} ")
        )
        .iter()
        .all(|p| !is_in(&env, *p))),
        "{agent}: its client was left running"
    );

    // Ctrl+C (SIGINT to the loop): the session and what it started end,
    // and the loop stops with 130.
    let marker = marker + 10;
    env.api.session([
        Reply::bash(format!("setsid sleep {marker} > /dev/null 2>&1 &")),
        Reply::Stall(Duration::from_secs(60)),
        Reply::text("late"),
    ]);
    let turns = env.api.requests().len();
    let child = agent_loop(&env, agent, bin, model)
        .args(extra)
        .args(["--max-iterations", "1"])
        .spawn();
    // Generous: under load opencode alone can take half a minute to start.
    let started = eventually(Duration::from_secs(120), || {
        !processes_with(&format!("sleep {marker}")).is_empty()
            && env.api.requests().len() > turns + 1
    });
    if !started {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let out = wait_output(child, Duration::from_secs(60));
        panic!(
            "{agent}: the session never started its command: {out:?}\n{:?}",
            env.api
                .requests()
                .iter()
                .skip(turns)
                .map(|r| r.path.clone())
                .collect::<Vec<_>>()
        );
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = wait_output(child, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(130), "{agent}: {out:?}");
    assert!(
        eventually(Duration::from_secs(10), || processes_with(&format!(
            "sleep {marker}"
        ))
        .is_empty()),
        "{agent}: Ctrl+C left the session's leftover running"
    );
    assert!(
        crate::support::processes_with(&format!("{name} "))
            .iter()
            .all(|p| !is_in(&env, *p)),
        "{agent}: Ctrl+C left its client running"
    );
}

/// Gemini CLI has no sandbox ralph can drive: under `--confined` ralph
/// runs it inside bubblewrap. Its writes outside the project, to git's
/// config and hooks and to ralph's control files fail; its commit, its
/// `ralph complete` and what it left running in the background go as they
/// would, the last ending with it.
#[test]
fn a_confined_gemini_session_writes_in_the_project_and_nowhere_else() {
    sandbox_tools();
    let env = one_step_project();
    let outside = env.tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let tmp_escape = format!("/tmp/ralph-gemini-escape-{}", std::process::id());
    fs::create_dir_all(env.project.join(".ralph/runs")).unwrap();
    let tries = [
        format!("{}/outside.txt", env.home.display()),
        format!("{}/escaped.txt", outside.display()),
        tmp_escape.clone(),
        ".git/hooks/pre-commit".into(),
        ".git/config".into(),
        ".ralph/runs/planted".into(),
    ];
    let attempts: String = tries
        .iter()
        .map(|p| format!("(echo escaped >> {p}) 2>/dev/null && echo W''ROTE {p}; "))
        .collect();
    env.api.session([
        Reply::bash(format!(
            "{attempts}setsid nohup sleep 7815 > /dev/null 2>&1 & echo in > inside.txt && git add inside.txt && echo state > $GEMINI_CLI_HOME/.gemini/mine && {CHECK_THE_BOX} && ralph complete -m done"
        )),
        Reply::text("Step done."),
    ]);
    let out = agent_loop(&env, "gemini", &gemini_bin(), "gemini-2.5-pro")
        .args(["--confined", "--max-iterations", "2"])
        .stdout_with(0);
    assert!(out.contains("complete: "), "{out}");
    let session = fs::read_to_string(run_dir(&env).join("session-001.jsonl")).unwrap_or_default();
    // (Its /tmp is a fresh one of its own: written there, gone with it.)
    for p in tries.iter().filter(|p| **p != tmp_escape) {
        assert!(!session.contains(&format!("WROTE {p}")), "{session}");
    }
    assert!(!env.home.join("outside.txt").exists(), "{out}");
    assert!(!outside.join("escaped.txt").exists(), "{out}");
    assert!(!std::path::Path::new(&tmp_escape).exists(), "{out}");
    assert!(!env.project.join(".git/hooks/pre-commit").exists(), "{out}");
    assert!(!env.project.join(".ralph/runs/planted").exists(), "{out}");
    assert!(
        !fs::read_to_string(env.project.join(".git/config"))
            .unwrap()
            .contains("escaped"),
        "{out}"
    );
    // What it may write: the project, its commit, its own state folder.
    assert!(env.project.join("inside.txt").exists(), "{out}\n{session}");
    assert_eq!(
        fs::read_to_string(env.home.join(".gemini/mine")).unwrap_or_default(),
        "state\n",
        "{session}"
    );
    let r = &records(&env)[0];
    assert_eq!(r["confined"], true);
    assert_ne!(r["head_before"], r["head_after"], "no commit: {out}");
    let command = r["command"].to_string();
    assert!(command.starts_with("[\"bwrap\""), "{command}");
    assert!(
        eventually(Duration::from_secs(10), || processes_with("sleep 7815")
            .is_empty()),
        "what the session left running outlived it"
    );
}

/// Was process `pid` started for this test (its environment names the test's HOME)?
fn is_in(env: &TestEnv, pid: u32) -> bool {
    fs::read(format!("/proc/{pid}/environ"))
        .map(|e| String::from_utf8_lossy(&e).contains(&env.home.display().to_string()))
        .unwrap_or(false)
}

#[test]
fn what_only_claude_can_do_is_refused_for_the_other_agents_before_anything_runs() {
    let env = project();
    let gemini = gemini_bin();
    env.ralph()
        .args(["loop", "--agent", "gemini", "--gemini"])
        .arg(&gemini)
        .args(["--confined", "--allow-domain", "example.org"])
        .prints(
            2,
            "",
            "ralph loop: --agent gemini: ralph confines gemini with bubblewrap, its files only: its network stays open (its model's API is reached over it), with no filtering by domain: drop --allow-domain (Claude Code's sandbox is the one that filters by domain)\n",
        );
    // Without bubblewrap, a confined Gemini run is refused with the fix.
    let bin = env.tmp.path().join("bin-without-bwrap");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(which::which("git").unwrap(), bin.join("git")).unwrap();
    let err = env
        .ralph()
        .env("PATH", &bin)
        .args(["loop", "--agent", "gemini", "--gemini"])
        .arg(&gemini)
        .arg("--confined")
        .stderr_with(2);
    assert!(
        err.contains("--confined cannot be had here: ralph confines gemini with bubblewrap, and bwrap is not found: install it (Debian/Ubuntu: apt-get install bubblewrap;"),
        "{err}"
    );
    env.ralph()
        .args(["loop", "--agent", "codex", "--codex"])
        .arg(codex_bin())
        .args(["--max-cost", "2"])
        .prints(
            2,
            "",
            "ralph loop: --agent codex: --max-cost 2 needs the cost of each session, and codex reports tokens only: give --model with a price ralph knows (README, Agents) or one in [prices] of .ralph/config.toml\n",
        );
    assert!(!env.project.join(".ralph/runs").exists());
}

#[test]
fn a_confined_codex_session_writes_in_the_project_and_nowhere_else() {
    let env = project();
    let outside = env.tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    env.api.session([
        Reply::bash(format!(
            "echo escaped > $HOME/escaped.txt; echo escaped > {}/escaped.txt; echo in > inside.txt; {DO_STEP}",
            outside.display()
        )),
        Reply::text("Step done."),
    ]);
    let out = env
        .ralph()
        .args(["loop", "--agent", "codex", "--codex"])
        .arg(codex_bin())
        .args(["--confined", "--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        env.project.join("inside.txt").exists(),
        "the session could not write in the project: {out}"
    );
    assert!(!env.home.join("escaped.txt").exists(), "{out}");
    assert!(!outside.join("escaped.txt").exists(), "{out}");
    let r = &records(&env)[0];
    assert_eq!(r["confined"], true);
    assert_ne!(
        r["head_before"], r["head_after"],
        "the session could not commit: {out}"
    );
    assert!(
        out.contains("→ Bash: echo escaped > $HOME/escaped.txt"),
        "{out}"
    );
    let command: Vec<&str> = r["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // Its own sandbox, as a permissions profile of the session's own.
    assert!(
        command
            .iter()
            .any(|a| a.starts_with("default_permissions=\"ralph-"))
            && command.iter().any(
                |a| a.starts_with("permissions.ralph-") && a.contains("extends=\":workspace\"")
            )
            && !command.iter().any(|a| a.contains("dangerously")),
        "{command:?}"
    );
}

#[test]
fn a_run_falls_back_to_codex_while_claude_is_at_its_usage_limit() {
    let env = project();
    let reset = now_epoch() + 7200;
    env.api.session([Reply::usage_limit(format!(
        "Claude AI usage limit reached|{reset}"
    ))]);
    // The first Codex session takes a moment, for status to be seen.
    let mut first = vec![Reply::Stall(Duration::from_secs(4))];
    first.extend(step_session(false));
    env.api.session(first);
    for i in 2..=3 {
        env.api.session(step_session(i == 3));
    }
    let child = ralph_loop(&env)
        .args(["--fallback", "codex", "--codex"])
        .arg(codex_bin())
        .args(["--max-iterations", "10"])
        .spawn();
    let mut seen = String::new();
    assert!(
        eventually(Duration::from_secs(30), || {
            seen = env.ralph().arg("status").stdout_with(0);
            seen.contains("agents:  claude limited until ") && seen.contains(", codex in use\n")
        }),
        "status never showed the agents' limits: {seen}"
    );
    let out = wait_output(child, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        // (For about 2 hours: the reset is counted from when the session
        // met the limit.)
        (out.contains("claude: usage limit reached for 1h 59m")
            || out.contains("claude: usage limit reached for 2h"))
            && out.contains("the next sessions run on codex until it resets")
            && out.contains("complete: all 3 steps done · 3 iterations"),
        "{out}"
    );
    let agents: Vec<(String, String)> = records(&env)
        .iter()
        .map(|r| {
            (
                r["agent"].as_str().unwrap().to_string(),
                r["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        agents,
        [
            (
                "claude".to_string(),
                "limited: usage limit reached".to_string()
            ),
            ("codex".into(), "ok".into()),
            ("codex".into(), "ok".into()),
            ("codex".into(), "ok".into()),
        ]
    );
    // Each session's stream reads back as its own agent's: Claude's limit,
    // then Codex's work.
    let logs = env.ralph().args(["logs", "--all"]).stdout_with(0);
    assert!(
        logs.contains("usage limit reached") && logs.matches("Step done.").count() == 3,
        "{logs}"
    );
}

#[test]
fn ralph_setup_is_installed_for_codex_and_gemini_and_gemini_expands_it() {
    let env = TestEnv::new();
    env.ralph()
        .args(["install-command", "--agent", "codex"])
        .prints(
            0,
            &format!(
                "Installed /ralph-setup in {}.\nIn Codex, in your project: /prompts:ralph-setup <what you want built>\n",
                env.home.join(".codex/prompts/ralph-setup.md").display()
            ),
            "",
        );
    let prompt = fs::read_to_string(env.home.join(".codex/prompts/ralph-setup.md")).unwrap();
    assert!(
        prompt.starts_with("---\ndescription: Set up a Ralph loop")
            && prompt.contains("The user wants this built: $ARGUMENTS")
            && !prompt.contains("allowed-tools"),
        "{prompt}"
    );
    env.ralph()
        .args(["install-command", "--agent", "gemini"])
        .assert()
        .success();
    // The real Gemini CLI reads the command and sends its text, the
    // argument in place, to the model.
    env.api
        .session([Reply::text("Let us start with the interview.")]);
    let out = env
        .command(gemini_bin())
        .args([
            "-p",
            "/ralph-setup a CLI that converts CSV to JSON",
            "-m",
            "gemini-2.5-pro",
            "--output-format",
            "stream-json",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let sent: String = env
        .api
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        sent.contains("# Set up a Ralph loop")
            && sent.contains("The user wants this built: a CLI that converts CSV to JSON"),
        "{sent}"
    );
    // Installed again: the same, so nothing to do.
    env.ralph()
        .args(["install-command", "--agent", "gemini"])
        .assert()
        .success()
        .stdout(predicates::str::contains("already installed"));
}

#[test]
fn doctor_checks_the_agents_the_config_names() {
    let env = project();
    let check = |env: &TestEnv| env.doctor_check("agents");
    assert_eq!(check(&env)["ok"], true);
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!(
            "agent = \"codex\"\ncodex = {:?}\nfallback = [\"gemini\"]\n",
            codex_bin().display().to_string()
        ),
    )
    .unwrap();
    // Named by the project's config: not run before the user approves it.
    let c = check(&env);
    assert_eq!(c["ok"], false, "{c}");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("not approved: not run"),
        "{c}"
    );
    env.approve_config();
    // Approved: codex answers; gemini is not on this PATH.
    let c = check(&env);
    assert_eq!(
        (c["ok"].as_bool(), c["detail"].as_str()),
        (Some(false), Some("gemini is not on PATH")),
        "{c}"
    );
    assert_eq!(c["fix"], "npm install -g @google/gemini-cli");
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!(
            "agent = \"codex\"\ncodex = {:?}\nfallback = [\"gemini\"]\ngemini = {:?}\n",
            codex_bin().display().to_string(),
            gemini_bin().display().to_string()
        ),
    )
    .unwrap();
    env.approve_config();
    let c = check(&env);
    let detail = c["detail"].as_str().unwrap();
    assert!(
        c["ok"] == true
            && detail.contains(&format!("codex: codex-cli {CODEX_VERSION}"))
            && detail.contains(&format!("gemini: {GEMINI_VERSION}")),
        "{c}"
    );
}

#[test]
fn a_process_that_keeps_an_agents_output_open_is_ended_with_its_session() {
    for (i, (agent, bin, model, _)) in (0..).zip(agents()) {
        let env = project();
        let marker = 7861 + i;
        // Started in a session of its own, holding the command's output.
        // (Codex returns from the command; Gemini CLI waits on the pipe
        // until the session's timeout ends it.)
        env.api.session([
            Reply::bash(format!("setsid sleep {marker} &")),
            Reply::text("Left it running."),
        ]);
        let t0 = std::time::Instant::now();
        let out = agent_loop(&env, agent, &bin, model)
            .args(["--max-iterations", "1", "--timeout", "30s"])
            .assert()
            .get_output()
            .clone();
        assert!(matches!(out.status.code(), Some(4)), "{agent}: {out:?}");
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{agent}: {:?}",
            t0.elapsed()
        );
        assert!(
            eventually(Duration::from_secs(10), || processes_with(&format!(
                "sleep {marker}"
            ))
            .is_empty()),
            "{agent}: the process holding the output was left running"
        );
    }
}

/// The git keys that name a program, as a confined Codex session (its
/// sandbox leaves `.git` writable) sets them, each touching a file outside
/// the sandbox; `.gitattributes` names the drivers.
fn git_programs(marks: &std::path::Path) -> String {
    let m = |name: &str| {
        format!(
            "ps -o args= -p $PPID > {}/{name}; ps -o args= -p $(ps -o ppid= -p $PPID) >> {}/{name}; cat",
            marks.display(),
            marks.display()
        )
    };
    let mut script = String::from(
        "printf '* diff=drv filter=flt merge=mrg\\n' > .gitattributes && git add .gitattributes",
    );
    for (key, value) in [
        ("diff.external", m("diff-external")),
        ("diff.drv.command", m("diff-command")),
        ("diff.drv.textconv", m("textconv")),
        ("filter.flt.clean", m("clean")),
        ("filter.flt.smudge", m("smudge")),
        ("filter.flt.process", m("process")),
        ("filter.flt.required", "true".into()),
        ("merge.mrg.driver", m("merge-driver")),
        ("core.fsmonitor", m("fsmonitor")),
        ("core.hooksPath", ".githooks".into()),
        ("core.pager", m("pager")),
        ("pager.status", m("pager-status")),
        ("core.editor", m("editor")),
        ("core.sshCommand", m("ssh")),
        ("core.askPass", m("askpass")),
        ("credential.helper", format!("!{}", m("credential"))),
        ("core.alternateRefsCommand", m("alternates")),
        ("commit.gpgSign", "true".into()),
        ("gpg.program", format!("{}/gpg", marks.display())),
        ("log.showSignature", "true".into()),
        ("gc.auto", "1".into()),
    ] {
        script.push_str(&format!(" && git config {key} '{value}'"));
    }
    script.push_str(&format!(
        " && mkdir -p .githooks && printf '#!/bin/sh\\ntouch {}/hook\\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit && git config --list --show-scope | grep -c '^local' > configured.txt",
        marks.display()
    ));
    script
}

#[test]
fn a_confined_codex_session_cannot_make_ralphs_git_run_its_programs() {
    let env = one_step_project();
    let marks = env.home.join("marks");
    fs::create_dir_all(&marks).unwrap();
    // The session sets every key, leaves a change uncommitted, and
    // completes; the loop's git, the gate, the protected paths and the
    // reviewer's diff all run after it.
    env.api.session([
        Reply::bash(format!(
            "echo change > work.txt && git add work.txt && {CHECK_THE_BOX} && echo more >> work.txt"
        )),
        Reply::bash(git_programs(&marks)),
        Reply::bash("ralph complete -m done"),
        Reply::text("Step done."),
    ]);
    env.api.session([
        Reply::bash("git log --oneline"),
        Reply::text("VERDICT: approve"),
    ]);
    let out = env
        .ralph()
        .args(["loop", "--agent", "codex", "--codex"])
        .arg(codex_bin())
        .args(["--confined", "--max-iterations", "3"])
        .args([
            "--gate",
            "true",
            "--protect",
            "tests/**",
            "--review",
            "complete",
        ])
        .stdout_with(0);
    let configured = fs::read_to_string(env.project.join("configured.txt")).unwrap_or_default();
    assert!(
        configured.trim().parse::<u32>().unwrap_or(0) > 15,
        "the session could not write .git/config: {configured:?} {out}"
    );
    assert!(
        out.contains("the reviewer approved")
            && out.contains("session 1 changed the repository's git setup, which a confined session may not (git would run what it names): put back .git/config"),
        "{out}"
    );
    // The next session's client (Codex runs git itself as it starts,
    // outside its sandbox) found the config as it was.
    let config = fs::read_to_string(env.project.join(".git/config")).unwrap();
    assert!(!config.contains("marks"), "{config}");
    let ran: Vec<String> = fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let said: Vec<String> = ran
        .iter()
        .map(|n| {
            format!(
                "{n}: {}",
                fs::read_to_string(marks.join(n)).unwrap_or_default()
            )
        })
        .collect();
    assert!(ran.is_empty(), "ralph's git ran: {said:?}\n{out}");
}

/// A cloned repository's Gemini CLI files (hooks, an MCP server, a tool
/// discovery command, a command file, a `.env` that moves its home) run
/// nothing until `ralph trust` has shown and approved them.
#[test]
fn a_clones_gemini_files_run_nothing_until_approved() {
    let env = project();
    let mark = env.tmp.path().join("gemini-files");
    let touch = |what: &str| format!("echo {what} >> {}", mark.display());
    fs::create_dir_all(env.project.join(".gemini/commands")).unwrap();
    fs::write(
        env.project.join(".gemini/settings.json"),
        serde_json::json!({
            "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": touch("hook")}]}]},
            "mcpServers": {"x": {"command": "sh", "args": ["-c", format!("{}; sleep 3", touch("mcp"))]}},
            "tools": {"discoveryCommand": format!("sh -c '{}; echo []'", touch("discovery"))}
        })
        .to_string(),
    )
    .unwrap();
    fs::write(
        env.project.join(".gemini/commands/go.toml"),
        format!("prompt = \"!{{{}}}\"\n", touch("command")),
    )
    .unwrap();
    fs::write(
        env.project.join(".env"),
        "GEMINI_CLI_NO_RELAUNCH=true\nAPP_SECRET=s3cr3t\n",
    )
    .unwrap();
    env.commit_all("as cloned");
    let trust = env.ralph().arg("trust").stdout_with(2);
    assert!(
        trust.contains(".gemini/settings.json = ")
            && trust.contains(".gemini/commands/go.toml = ")
            && trust.contains(".env (read by Gemini CLI) = {\"GEMINI_CLI_NO_RELAUNCH\"")
            && !trust.contains("s3cr3t")
            && !trust.contains("APP_SECRET"),
        "{trust}"
    );
    let err = agent_loop(&env, "gemini", &gemini_bin(), "gemini-2.5-pro").stderr_with(2);
    assert!(
        err.contains(".gemini/settings.json = ") && err.contains("`ralph trust`"),
        "{err}"
    );
    let doctor = env.ralph().arg("doctor").stdout_with(1);
    assert!(
        doctor.contains("FAIL config") && doctor.contains(".gemini/settings.json"),
        "{doctor}"
    );
    assert!(!mark.exists(), "ran before approval");
    // Approved, Gemini runs them (the test tests something).
    env.ralph().args(["trust", "--yes"]).assert().success();
    env.api.session(step_session(false));
    let done = agent_loop(&env, "gemini", &gemini_bin(), "gemini-2.5-pro")
        .args(["--max-iterations", "1"])
        .assert()
        .code(4);
    let o = done.get_output();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let ran = fs::read_to_string(&mark).unwrap_or_default();
    let session = fs::read_to_string(run_dir(&env).join("session-001.jsonl")).unwrap_or_default();
    assert!(
        ran.contains("hook") && ran.contains("discovery"),
        "{ran}\n{out}\n{session}"
    );
}

/// Codex refuses a project's own `.codex/config.toml` until you trust the
/// project in Codex itself: a clone's `notify` program and MCP server never
/// run through ralph's sessions.
#[test]
fn codex_ignores_a_clones_codex_config() {
    let env = project();
    let mark = env.tmp.path().join("codex-files");
    fs::create_dir_all(env.project.join(".codex")).unwrap();
    fs::write(
        env.project.join(".codex/config.toml"),
        format!(
            "notify = [\"sh\", \"-c\", \"echo notify >> {m}\"]\n\n[mcp_servers.x]\ncommand = \"sh\"\nargs = [\"-c\", \"echo mcp >> {m}; sleep 3\"]\n",
            m = mark.display()
        ),
    )
    .unwrap();
    env.commit_all("as cloned");
    env.api.session(step_session(false));
    let out = agent_loop(&env, "codex", &codex_bin(), "gpt-5.4")
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert_eq!(records(&env).len(), 1, "{out}");
    assert!(!mark.exists(), "Codex ran a clone's config: {out}");
}

/// A folder the user trusts in Codex (as most do) is no trusted clone: the
/// clone's `.codex/config.toml` (an MCP server, `[hooks]`, `notify`) and
/// `.codex/hooks.json` run nothing until `ralph trust`, which shows them,
/// their secrets by digest. Approved, Codex runs them (the test tests
/// something). The user lets Codex run hooks without its own review
/// (`--dangerously-bypass-hook-trust`), as one who reviewed them in Codex
/// would have them run.
#[test]
fn a_clones_codex_files_run_nothing_until_approved_in_a_folder_codex_trusts() {
    let env = project();
    let user = env.home.join(".codex/config.toml");
    let mut config = fs::read_to_string(&user).unwrap();
    config.push_str(&format!(
        "\n[projects.{:?}]\ntrust_level = \"trusted\"\n",
        env.project.display().to_string()
    ));
    fs::write(&user, config).unwrap();
    let mark = env.tmp.path().join("codex-files");
    let m = mark.display();
    fs::create_dir_all(env.project.join(".codex")).unwrap();
    fs::write(
        env.project.join(".codex/config.toml"),
        format!(
            "notify = [\"sh\", \"-c\", \"echo notify >> {m}\"]\n\n\
             [mcp_servers.x]\ncommand = \"sh\"\nargs = [\"-c\", \"echo mcp >> {m}\"]\n\
             env = {{ API_TOKEN = \"s3cr3t\" }}\n\n\
             [[hooks.SessionStart]]\n[[hooks.SessionStart.hooks]]\n\
             type = \"command\"\ncommand = \"echo toml-hook >> {m}\"\n"
        ),
    )
    .unwrap();
    fs::write(
        env.project.join(".codex/hooks.json"),
        serde_json::json!({"hooks": {"SessionStart": [{"hooks": [
            {"type": "command", "command": format!("echo json-hook >> {m}")}]}]}})
        .to_string(),
    )
    .unwrap();
    env.commit_all("as cloned");
    let session = || {
        env.api.session(step_session(false));
        agent_loop(&env, "codex", &codex_bin(), "gpt-5.4")
            .args([
                "--max-iterations",
                "1",
                "--",
                "--dangerously-bypass-hook-trust",
            ])
            .stdout_with(4)
    };
    let out = session();
    assert!(
        out.contains("Step done.")
            && out.contains("codex: the project's .codex files are off: `ralph trust` shows them"),
        "{out}"
    );
    assert!(
        !mark.exists(),
        "Codex ran a clone's files before approval: {}\n{out}",
        fs::read_to_string(&mark).unwrap_or_default()
    );
    let trust = env.ralph().arg("trust").stdout_with(2);
    assert!(
        trust.contains(
            "Until approved, ralph starts Codex, pi and opencode with these of their files disabled:"
        ) && trust.contains(".codex/config.toml = {")
            && trust.contains(&format!("\"args\":[\"-c\",\"echo mcp >> {m}\"]"))
            && trust.contains(&format!("\"command\":\"echo toml-hook >> {m}\""))
            && trust.contains(&format!("\"notify\":[\"sh\",\"-c\",\"echo notify >> {m}\"]"))
            && trust.contains(".codex/hooks.json = {")
            && trust.contains(&format!("echo json-hook >> {m}"))
            && trust.contains("\"API_TOKEN\":\"(sha256 ")
            && !trust.contains("s3cr3t"),
        "{trust}"
    );
    let check = env.doctor_check("config");
    assert!(
        check["detail"]
            .as_str()
            .is_some_and(|d| d.contains(".codex/config.toml") && d.contains("disabled until")),
        "{check}"
    );
    env.ralph().args(["trust", "--yes"]).assert().success();
    let out = session();
    let ran = fs::read_to_string(&mark).unwrap_or_default();
    // (Codex 0.169 ignores a project's `notify` itself, trusted or not.)
    assert!(
        ran.contains("mcp") && ran.contains("toml-hook") && ran.contains("json-hook"),
        "approved, Codex runs them: {ran}\n{out}"
    );
}

/// Codex runs each command in a login shell whose profile sets PATH anew.
/// A user whose profile does not put ralph back is told, with the fix, by
/// doctor and by the loop before any session (every session used to fail
/// `ralph: not found` until the iteration limit, with the spec done).
#[test]
fn a_codex_whose_shell_cannot_find_ralph_is_refused_before_any_session() {
    let env = project();
    fs::write(env.home.join(".profile"), "PATH=/usr/bin:/bin\n").unwrap();
    let ralph_dir = ralph_bin().parent().unwrap().display().to_string();
    let fix = format!(
        "codex runs each command in a login shell (bash -lc), whose profile sets PATH anew, and there `ralph` is not found: add `export PATH=\"{ralph_dir}:$PATH\"` to your ~/.profile (or ~/.bash_profile), or install it into /usr/local/bin"
    );
    let err = agent_loop(&env, "codex", &codex_bin(), "gpt-5.4").stderr_with(2);
    assert_eq!(err, format!("ralph loop: --agent codex: {fix}\n"));
    assert!(env.api.turns().is_empty(), "no session ran");
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!(
            "agent = \"codex\"\ncodex = {:?}\n",
            codex_bin().display().to_string()
        ),
    )
    .unwrap();
    env.approve_config();
    let c = env.doctor_check("agents");
    assert_eq!(
        (c["ok"].as_bool(), c["detail"].as_str(), c["fix"].as_str()),
        (
            Some(false),
            Some("codex's shell does not find ralph"),
            Some(fix.as_str())
        ),
        "{c}"
    );
    // With the profile putting it back, both pass.
    fs::write(
        env.home.join(".profile"),
        format!("PATH=\"{ralph_dir}:$PATH\"\n"),
    )
    .unwrap();
    assert_eq!(env.doctor_check("agents")["ok"], true);
}
