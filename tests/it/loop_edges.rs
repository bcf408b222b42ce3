//! `ralph loop` at its edges: stop requests at every point, a killed loop,
//! a lost lock race, sessions without (or with two) results, bounded limit
//! waits, `--resume`, and a project outside git. Real processes and signals;
//! the real client where a session's own behaviour matters, stand-ins where
//! the edge is the loop's.

use std::fs;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use predicates::prelude::*;
use serde_json::Value;

use crate::support::{
    DO_STEP, RESULT, one_step_project, processes_with, project, ralph_loop, records, run_dir,
    spawn_loop, stand_in, step_session, summary,
};
use crate::support::{
    Pty, Reply, TestEnv, check_named, claude_bin, codex_bin, eventually, ralph_bin, sandbox_tools,
    wait_output,
};

fn signal(pid: u32, sig: Signal) {
    kill(Pid::from_raw(pid as i32), sig).unwrap();
}

fn alive(pid: u32) -> bool {
    ralph::procs::tree::ProcReader::new().is_running(pid)
}

/// `ralph <args>` in the background, with piped output.
fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A project whose sessions are `body` (a stand-in for claude), with an
/// `on_session_start` hook that marks its start and then takes a while.
fn with_slow_session_start(tag: &str) -> (TestEnv, std::path::PathBuf, std::path::PathBuf) {
    let env = project();
    let ran = env.tmp.path().join("claude-ran");
    let claude = stand_in(
        &env,
        "marking-claude",
        &format!("touch {}\necho '{RESULT}'", ran.display()),
    );
    let started = env.tmp.path().join("hook-started");
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!(
            "claude = \"{}\"\n[hooks]\non_session_start = \"touch {}; sleep {tag}\"\n",
            claude.display(),
            started.display()
        ),
    )
    .unwrap();
    env.approve_config();
    (env, started, ran)
}

#[test]
fn a_stop_request_during_the_session_start_hook_starts_no_session() {
    for sig in [Signal::SIGTERM, Signal::SIGHUP] {
        let (env, started, ran) = with_slow_session_start("6301");
        let child = env.ralph().args(["loop"]).spawn();
        assert!(
            eventually(Duration::from_secs(30), || started.exists()),
            "the hook never started"
        );
        signal(child.id(), sig);
        let out = wait_output(child, Duration::from_secs(30));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(130), "{sig}: {stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!(
                "interrupted: {} received before the session started",
                sig.as_str()
            )),
            "{stdout}"
        );
        assert!(!ran.exists(), "{sig}: a session ran after the stop request");
        assert!(records(&env).is_empty(), "{sig}: no session recorded");
        assert!(
            stderr.contains("was ended: the loop is stopping") && !stderr.contains("failed"),
            "{sig}: {stderr}"
        );
        assert!(
            eventually(Duration::from_secs(5), || processes_with("sleep 6301")
                .is_empty()),
            "{sig}: the hook's sleep was left running"
        );
        assert_eq!(summary(&env)["outcome"], "interrupted");
    }
}

#[test]
fn ctrl_c_in_a_terminal_during_the_session_start_hook_starts_no_session() {
    let (env, started, ran) = with_slow_session_start("6302");
    let argv = vec![ralph_bin().display().to_string(), "loop".into()];
    let mut pty = Pty::spawn(&argv, &env.vars(), &env.project);
    assert!(
        eventually(Duration::from_secs(30), || started.exists()),
        "the hook never started:\n{}",
        pty.screen()
    );
    // What the terminal does with Ctrl+C: SIGINT to its foreground group.
    pty.send(b"\x03");
    let status = pty
        .wait_exit(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("loop still running:\n{}", pty.screen()));
    assert_eq!(status.exit_code(), 130, "{}", pty.screen());
    assert!(
        pty.has_shown("interrupted: SIGINT received before the session started"),
        "{}",
        pty.screen()
    );
    assert!(!pty.has_shown("failed"), "{}", pty.screen());
    assert!(!ran.exists(), "a session ran after Ctrl+C");
    assert!(
        eventually(Duration::from_secs(5), || processes_with("sleep 6302")
            .is_empty()),
        "the hook's sleep was left running"
    );
}

#[test]
fn a_killed_loop_takes_its_session_along_and_the_next_loop_cleans_up_and_resumes() {
    let env = project();
    env.api.session([
        Reply::bash("sh -c 'sleep 6303' > /dev/null 2>&1 &"),
        Reply::Stall(Duration::from_secs(120)),
        Reply::text("late"),
    ]);
    let mut first = spawn_loop(&env, &[]);
    assert!(
        eventually(Duration::from_secs(60), || !processes_with("sleep 6303")
            .is_empty()),
        "the session's background process never started"
    );
    // The loop names the session in its lock just after starting it; on a
    // loaded machine the session's first tool call can come first.
    let read_lock = || -> Value {
        serde_json::from_str(&fs::read_to_string(env.lock()).unwrap_or_default())
            .unwrap_or(Value::Null)
    };
    assert!(
        eventually(Duration::from_secs(10), || read_lock()["session"][0]
            .is_u64()),
        "the lock never named the session: {}",
        read_lock()
    );
    let lock = read_lock();
    let claude_pid = lock["session"][0]
        .as_u64()
        .expect("the lock names the session") as u32;
    let run_id = lock["run_id"].as_str().unwrap().to_string();
    assert!(alive(claude_pid));

    // SIGKILL: the loop gets no chance to clean up.
    signal(first.id(), Signal::SIGKILL);
    first.wait().unwrap();
    assert!(
        eventually(Duration::from_secs(10), || !alive(claude_pid)),
        "claude (pid {claude_pid}) outlived the killed loop"
    );
    env.ralph().arg("status").assert().success().stdout(
        predicate::str::contains("loop:    not running").and(predicate::str::contains(format!(
            "last run: {run_id} — ended abnormally"
        ))),
    );

    // The next loop ends what the dead run left, records it, and --resume
    // goes on with its counters: the killed session was iteration 1.
    env.api.session(step_session(false));
    let out = ralph_loop(&env)
        .args(["--resume", "--max-iterations", "2"])
        .stdout_with(4);
    assert!(
        out.contains(&format!(
            "took over a stale lock of pid {} (started",
            first.id()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("its run {run_id} ended abnormally"))
            && out.contains("process(es) it left running"),
        "{out}"
    );
    assert!(
        out.contains(&format!("resuming run {run_id} at iteration 1/2")),
        "{out}"
    );
    assert!(
        processes_with("sleep 6303").is_empty(),
        "the dead run's background process is still running"
    );
    let recs = records(&env);
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(
        (recs[0]["iteration"].as_u64(), recs[0]["session"].as_u64()),
        (Some(2), Some(2))
    );
    let s = summary(&env);
    assert_eq!(
        (
            s["run_id"].as_str(),
            s["outcome"].as_str(),
            s["resumed"].as_u64()
        ),
        (Some(run_id.as_str()), Some("iteration-limit"), Some(1))
    );
}

#[test]
fn resume_goes_on_with_the_interrupted_run_and_its_cost() {
    let env = project();
    let paused = env.tmp.path().join("paused");
    // Session 2 does its work, reports its cost, then lingers until stopped.
    let claude = stand_in(
        &env,
        "counting-claude",
        &format!(
            "n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}\n\
             echo x >> work.txt\necho '{RESULT}'\n\
             if [ $n = 2 ]; then touch {paused}; sleep 6304; fi",
            count = env.tmp.path().join("count").display(),
            paused = paused.display()
        ),
    );
    let claude = claude.to_str().unwrap();
    let child = env
        .ralph()
        .args(["loop", "--max-cost", "2.0", "--claude", claude])
        .spawn();
    assert!(eventually(Duration::from_secs(30), || paused.exists()));
    signal(child.id(), Signal::SIGINT);
    let out = wait_output(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert!(text(&out.stdout).contains("`ralph loop --resume` goes on with this run."));
    let first = run_dir(&env);

    // A new run would start from zero; --resume keeps iteration and cost:
    // $1.50 spent, the third session's $0.75 passes --max-cost $2.00.
    let out = env
        .ralph()
        .args(["loop", "--resume", "--claude", claude])
        .stdout_with(4);
    assert!(
        out.contains("resuming run") && out.contains("at iteration 2/50, $1.50 spent"),
        "{out}"
    );
    assert!(out.contains("iteration 3/50"), "{out}");
    assert!(
        out.contains("cost limit reached: $2.25 spent of --max-cost $2.00"),
        "{out}"
    );
    assert_eq!(run_dir(&env), first, "the same run folder");
    assert_eq!(records(&env).len(), 3);
    let s = summary(&env);
    assert_eq!(
        (s["iterations"].as_u64(), s["cost_usd"].as_f64()),
        (Some(3), Some(2.25))
    );

    assert!(
        out.ends_with("`ralph loop --resume --max-cost <higher>` goes on with this run.\n"),
        "{out}"
    );
    // Resumed at the same limit: it stops there again, with no session.
    let out = env
        .ralph()
        .args(["loop", "--resume", "--claude", claude])
        .stdout_with(4);
    assert!(out.contains("cost limit reached"), "{out}");
    assert_eq!(records(&env).len(), 3, "{out}");
    assert_eq!(run_dir(&env), first, "the same run folder");
}

#[test]
fn resume_is_refused_with_nothing_to_resume_or_while_running() {
    let env = project();
    env.ralph()
        .args(["loop", "--resume"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nothing to resume"));
    let claude = stand_in(&env, "lingering-claude", "sleep 6305");
    let mut running = env
        .ralph()
        .args(["loop", "--claude", claude.to_str().unwrap()])
        .spawn();
    assert!(eventually(Duration::from_secs(30), || !processes_with(
        "sleep 6305"
    )
    .is_empty()));
    env.ralph()
        .args(["loop", "--resume"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "is still running (pid {})",
            running.id()
        )));
    signal(running.id(), Signal::SIGTERM);
    assert_eq!(running.wait().unwrap().code(), Some(130));
}

#[test]
fn two_loops_racing_for_a_stale_lock_name_each_other() {
    let env = project();
    let claude = stand_in(&env, "slow-claude", "sleep 6306");
    let claude = claude.to_str().unwrap();
    let stale = r#"{"pid":999999,"start_time":1,"started_at":"2026-01-01T00:00:00Z","run_id":"old","iteration":7,"max_iterations":50}"#;
    for round in 0..5 {
        env.plant_lock(stale);
        let mut a = env.ralph().args(["loop", "--claude", claude]).spawn();
        let mut b = env.ralph().args(["loop", "--claude", claude]).spawn();
        let mut loser = None;
        assert!(
            eventually(Duration::from_secs(30), || {
                if a.try_wait().unwrap().is_some() {
                    loser = Some(true);
                } else if b.try_wait().unwrap().is_some() {
                    loser = Some(false);
                }
                loser.is_some()
            }),
            "round {round}: neither loop gave way"
        );
        let (lost, won) = if loser == Some(true) { (a, b) } else { (b, a) };
        let out = wait_output(lost, Duration::from_secs(10));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "round {round}: {err}");
        assert!(
            err.contains(&format!(
                "already running in {} (pid {},",
                env.project.display(),
                won.id()
            )),
            "round {round}: the loser must name the winner: {err}"
        );
        signal(won.id(), Signal::SIGTERM);
        let out = wait_output(won, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(130), "round {round}: {out:?}");
    }
}

#[test]
fn a_session_without_a_result_says_so() {
    let env = project();
    let claude = stand_in(&env, "silent-claude", "exit 0");
    env.ralph()
        .args(["loop", "--claude"])
        .arg(&claude)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "3 failing sessions in a row; last error: claude exited with status 0 without reporting a result",
        ));
}

#[test]
fn a_session_with_two_results_counts_its_cost_once() {
    let env = project();
    // What claude -p prints when it ran another turn after a background
    // task: two results, the second restating the process's running total.
    let second = RESULT
        .replace("0.75", "1.25")
        .replace("\"ok\"", "\"later\"");
    let claude = stand_in(
        &env,
        "two-results",
        &format!("{DO_STEP} >/dev/null 2>&1\necho '{RESULT}'\necho '{second}'"),
    );
    let out = env
        .ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .stdout_with(4);
    assert!(out.contains("reported 2 results"), "{}", out);
    let r = &records(&env)[0];
    assert_eq!(
        (
            r["cost_usd"].as_f64(),
            r["results"].as_u64(),
            r["num_turns"].as_u64(),
            r["outcome"].as_str()
        ),
        (Some(1.25), Some(2), Some(2), Some("ok"))
    );
    assert_eq!(r["tokens"]["input"], 20, "tokens of both turns");
    assert_eq!(summary(&env)["cost_usd"], 1.25);
}

#[test]
fn a_usage_limit_further_out_than_max_limit_wait_stops_the_loop() {
    let env = project();
    let reset = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 7300;
    env.api.session([Reply::usage_limit(format!(
        "Claude AI usage limit reached|{reset}"
    ))]);
    ralph_loop(&env)
        .args(["--max-limit-wait", "10m"])
        .assert()
        .code(4)
        .stdout(
            predicate::str::contains(
                "usage limit wait too long: usage limit reached; waiting 2h 1m",
            )
            .and(predicate::str::contains("would pass --max-limit-wait 10m")),
        );
    assert_eq!(summary(&env)["iterations"], 0);
}

#[test]
fn outside_git_the_loop_refuses_to_start_and_doctor_says_why() {
    let env = TestEnv::new();
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    fs::write(env.project.join(".ralph/prompt.md"), "do it\n").unwrap();
    let claude = stand_in(&env, "never-run", "touch ran");
    env.ralph()
        .args(["loop", "--claude"])
        .arg(&claude)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not in a git repository").and(
            predicate::str::contains("git init && git add -A && git commit -m start"),
        ));
    assert!(!env.project.join("ran").exists());
    env.ralph()
        .args(["doctor"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL git"));
}

#[test]
fn a_background_task_in_print_mode_gives_two_results_counted_once() {
    let env = project();
    env.api.session([
        Reply::Tool {
            name: "Bash".into(),
            input: serde_json::json!({
                "command": "sh -c 'sleep 2; echo finished > bg.txt'",
                "description": "a background task",
                "run_in_background": true
            }),
        },
        Reply::text("Started the task."),
        Reply::text("The task finished."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(out.contains("reported 2 results"), "{}", out);
    let stream = fs::read_to_string(run_dir(&env).join("session-001.jsonl")).unwrap();
    let results: Vec<Value> = stream
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "result")
        .collect();
    assert_eq!(results.len(), 2, "{stream}");
    // Observed on 2.1.330: each result's total_cost_usd is the process's
    // running total; its usage and num_turns are that turn's own.
    let cost = |i: usize| results[i]["total_cost_usd"].as_f64().unwrap();
    let turns = |i: usize| results[i]["num_turns"].as_u64().unwrap();
    let input = |i: usize| results[i]["usage"]["input_tokens"].as_u64().unwrap();
    assert!(cost(1) > cost(0), "the second result restates the total");
    let r = &records(&env)[0];
    assert_eq!(r["outcome"], "ok");
    assert_eq!(r["results"], 2);
    assert_eq!(
        r["cost_usd"].as_f64(),
        Some(cost(1)),
        "cost counted once: {r}"
    );
    assert_eq!(r["num_turns"].as_u64(), Some(turns(0) + turns(1)));
    assert_eq!(r["tokens"]["input"].as_u64(), Some(input(0) + input(1)));
    assert_eq!(summary(&env)["cost_usd"].as_f64(), Some(cost(1)));
    assert_eq!(
        fs::read_to_string(env.project.join("bg.txt")).unwrap(),
        "finished\n"
    );
}

/// `--resume` is the same run: every setting the run was started with comes
/// back from ralph's own record of its command line (never from a file the
/// sessions can write), and what the new command line changes is said.
#[test]
fn a_resumed_run_keeps_every_setting_it_started_with() {
    sandbox_tools();
    let env = one_step_project();
    // Session 1 stalls until Ctrl+C; after the resume, session 2 does a
    // step and completes, and the gate (`false`) sends it back.
    env.api.session([Reply::Stall(Duration::from_secs(600))]);
    env.api.session([
        Reply::bash(format!(
            "{DO_STEP} && echo mine > mine.txt && ralph complete -m done"
        )),
        Reply::text("Done."),
    ]);
    let started = [
        "loop",
        "--confined",
        "--gate",
        "false",
        "--gate-baseline",
        "off",
        "--protect",
        "tests/**",
        "--review",
        "complete",
        "--notify",
        "ntfy",
        "--commit",
        "auto",
        "--max-sessions-per-hour",
        "40",
        "--max-iterations",
        "2",
        "--timeout",
        "25m",
        "--claude",
    ];
    let child = env
        .ralph()
        .env("RALPH_NOTIFY_NTFY", "http://127.0.0.1:9/t")
        .args(started)
        .arg(claude_bin())
        .spawn();
    let mut child = child;
    assert!(eventually(Duration::from_secs(60), || {
        !env.api.turns().is_empty() || child.try_wait().is_ok_and(|s| s.is_some())
    }));
    signal(child.id(), Signal::SIGINT);
    let first = wait_output(child, Duration::from_secs(30));
    assert_eq!(
        first.status.code(),
        Some(130),
        "{}{}",
        text(&first.stdout),
        text(&first.stderr)
    );
    let out = env
        .ralph()
        .env("RALPH_NOTIFY_NTFY", "http://127.0.0.1:9/t")
        .args(["loop", "--resume", "--max-iterations", "3"])
        .stdout_with(4);
    for said in [
        "resuming run ",
        "as it was started: `ralph loop --confined --gate false --gate-baseline off --protect 'tests/**' --review complete --notify ntfy --commit auto --max-sessions-per-hour 40 --max-iterations 2 --timeout 25m --claude ",
        "this command line changes: max_iterations = 3 (was 2)",
        "a claude review session judges each COMPLETE",
        "notices go to ntfy http://127.0.0.1:9/…",
        "the completion gate: `false` failed",
        "committed what session 2 left uncommitted",
        // What the run wrote before it was stopped is its own: committed.
        "committed ralph's notes (",
    ] {
        assert!(out.contains(said), "{said}: {out}");
    }
    assert!(
        !env.git(&["status", "--porcelain"])
            .contains(".ralph/progress.md"),
        "{out}"
    );
    let recs = records(&env);
    let resumed = recs.last().unwrap();
    let command = resumed["command"].to_string();
    assert!(
        resumed["confined"] == true
            && !command.contains("dangerously")
            && command.contains("\\\"sandbox\\\""),
        "{resumed}"
    );
    let s = summary(&env);
    assert!(
        s["reason"].as_str().unwrap_or("").contains("3 sessions"),
        "{s}"
    );
}

/// The run's agent and its fallbacks come back with `--resume` too.
#[test]
fn a_resumed_run_keeps_its_agent_and_fallbacks() {
    let env = one_step_project();
    env.api.session([Reply::Stall(Duration::from_secs(600))]);
    env.api.session(step_session(false));
    let mut child = env
        .ralph()
        .args(["loop", "--agent", "codex", "--codex"])
        .arg(codex_bin())
        .args(["--fallback", "claude", "--claude"])
        .arg(claude_bin())
        .args(["--max-iterations", "2"])
        .spawn();
    assert!(eventually(Duration::from_secs(60), || {
        !env.api.turns().is_empty() || child.try_wait().is_ok_and(|s| s.is_some())
    }));
    signal(child.id(), Signal::SIGINT);
    let first = wait_output(child, Duration::from_secs(30));
    assert_eq!(first.status.code(), Some(130), "{}", text(&first.stdout));
    // Nothing but `--resume`: no agent, no program named.
    let out = env.ralph().args(["loop", "--resume"]).stdout_with(0);
    assert!(
        out.contains("as it was started: `ralph loop --agent codex --codex ")
            && out.contains(" --fallback claude --claude "),
        "{out}"
    );
    let recs = records(&env);
    assert_eq!(recs.last().unwrap()["agent"], "codex", "{out}");
}

/// A relative `claude = "bin/claude"` in the config is the project's, for
/// the loop as for doctor, from whatever folder of the project ralph runs
/// in; the loop resolved it against the current folder.
#[test]
fn a_relative_agent_path_in_the_config_is_the_projects_wherever_ralph_runs() {
    let env = one_step_project();
    let bin = env.project.join("bin");
    fs::create_dir_all(&bin).unwrap();
    fs::write(
        bin.join("claude"),
        format!(
            "#!/bin/sh\ncat > /dev/null\n[ \"$1\" = --version ] && echo '2.1.330 (Claude Code)' && exit 0\n{DO_STEP} >/dev/null 2>&1\necho '{RESULT}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("claude"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    env.approved_config("claude = \"bin/claude\"\n");
    env.commit_all("a claude of the project's");
    // From a folder of the project (ralph finds the project above it).
    let elsewhere = env.project.join("src/deep");
    fs::create_dir_all(&elsewhere).unwrap();
    let at = env.project.display().to_string();
    let out = env
        .ralph()
        .current_dir(&elsewhere)
        .args(["loop", "--max-iterations", "1"])
        .stdout_with(0);
    // Its one step checked: judged at once.
    assert!(out.contains("complete: its one step done"), "{out}");
    assert_eq!(records(&env).len(), 1, "the project's claude ran: {out}");
    let doctor = env
        .ralph()
        .current_dir(&elsewhere)
        .args(["-C", &at, "doctor", "--json"])
        .json_with(1);
    let claude = check_named(&doctor, "claude");
    assert!(
        claude["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("at {at}/bin/claude ")),
        "{claude}"
    );
}

/// A session stopped with Ctrl+C in the middle of its work: what it left
/// is the run's, not yours. `--resume` does not say it was uncommitted
/// before the run began; what was yours before the run still is.
#[test]
fn what_an_interrupted_session_left_is_the_runs_on_resume() {
    let env = one_step_project();
    fs::write(env.project.join("mine.txt"), "yours\n").unwrap();
    env.api.session([
        Reply::bash("mkdir -p work && echo half > work/step_5.txt"),
        Reply::Stall(Duration::from_secs(600)),
    ]);
    env.api.session(step_session(false));
    let child = ralph_loop(&env).args(["--max-iterations", "3"]).spawn();
    let left = env.project.join("work/step_5.txt");
    assert!(eventually(Duration::from_secs(60), || left.exists()));
    signal(child.id(), Signal::SIGINT);
    let first = wait_output(child, Duration::from_secs(30));
    assert_eq!(first.status.code(), Some(130), "{}", text(&first.stdout));
    assert!(
        text(&first.stdout).contains("yours, not a session's): mine.txt;"),
        "{}",
        text(&first.stdout)
    );
    let out = env.ralph().args(["loop", "--resume"]).stdout_with(0);
    assert!(
        out.contains("uncommitted before this run began (yours, not a session's): mine.txt;"),
        "{out}"
    );
    assert!(!out.contains("work/step_5.txt"), "{out}");
}
