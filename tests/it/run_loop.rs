//! `ralph loop` end to end: the real Claude Code CLI against the scripted
//! API, with the Stop hook installed by `ralph install-hook` in the test home.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use predicates::prelude::*;

use crate::support::*;
use crate::support::{Pty, Reply, eventually, ralph_bin};

/// A session checks the last box and writes no COMPLETE: the loop judges
/// it at once, as a parallel run judges its last merge (the gate ran, the
/// run is complete after that session), instead of starting sessions that
/// find nothing to do. Its COMPLETE is written once accepted.
#[test]
fn the_last_box_checked_without_complete_is_judged_at_once() {
    let env = one_step_project();
    env.api
        .session([Reply::bash(DO_STEP), Reply::text("Step done.")]);
    env.api
        .session([Reply::bash(DO_STEP), Reply::text("A session too many.")]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "5", "--gate", "touch gate-ran"])
        .stdout_with(0);
    assert!(
        out.contains("every step of the spec is checked (and agrees with the tracker), with no COMPLETE written: judging it now")
            && out.contains("complete: its one step done · 1 iteration"),
        "{out}"
    );
    assert!(!out.contains("A session too many."), "{out}");
    assert!(env.project.join("gate-ran").exists(), "the gate judged it");
    let complete = fs::read_to_string(env.project.join(".ralph/COMPLETE")).unwrap();
    assert!(
        complete.contains("every step of the spec is checked"),
        "{complete}"
    );
}

#[test]
fn three_sessions_complete_the_spec() {
    let env = project();
    for i in 1..=3 {
        env.api.session(step_session(i == 3));
    }
    let out = ralph_loop(&env)
        .args(["--max-iterations", "10"])
        .stdout_with(0);
    assert!(out.contains("iteration 3/10 · spec 2/3"), "{out}");
    assert!(
        out.contains("Step done."),
        "the session's text is shown: {out}"
    );
    assert!(
        out.contains("→ Bash: sed -i"),
        "one line per tool call: {out}"
    );
    assert!(
        out.contains("complete: all 3 steps done · 3 iterations"),
        "{out}"
    );
    assert!(
        out.contains("3 commits") && out.contains("spec 3/3"),
        "{out}"
    );
    // What was spent, as spent: the client priced these tokens at a
    // fraction of a cent, which is not $0.00.
    let cost = summary(&env)["cost_usd"].as_f64().unwrap();
    assert!(cost > 0.0 && cost < 0.005, "{cost}");
    assert!(
        out.contains(&format!(" · ${cost:.4} · ")) && !out.contains("$0.00 ·"),
        "{out}"
    );

    assert!(
        !out.contains("left running"),
        "the hook's own watcher is not a leftover: {out}"
    );
    let recs = records(&env);
    assert_eq!(recs.len(), 3);
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r["leftovers_ended"], 0, "{r}");
        assert_eq!(r["iteration"], i + 1);
        assert_eq!(r["outcome"], "ok");
        assert_ne!(r["head_before"], r["head_after"], "each session committed");
        assert!(r["cost_usd"].as_f64().unwrap() > 0.0);
        assert!(Path::new(r["stream_file"].as_str().unwrap()).exists());
    }
    let s = summary(&env);
    assert_eq!(
        (
            s["outcome"].as_str(),
            s["iterations"].as_u64(),
            s["commits"].as_u64()
        ),
        (Some("complete"), Some(3), Some(3))
    );
    assert_eq!(
        env.api
            .turns()
            .iter()
            .filter_map(|t| t.session_id.clone())
            .collect::<std::collections::HashSet<_>>()
            .len(),
        3,
        "three fresh sessions"
    );
    assert!(
        env.api.turns()[0]
            .user_text()
            .contains("do the first open step"),
        "the prompt arrived"
    );
    assert!(
        fs::read_to_string(env.project.join(".ralph/COMPLETE"))
            .unwrap()
            .contains("all three steps")
    );
    env.ralph().arg("status").assert().success().stdout(
        predicate::str::contains("spec:    3/3 steps done")
            .and(predicate::str::contains("COMPLETE since 20"))
            .and(predicate::str::contains("loop:    not running"))
            .and(predicate::str::contains(
                "— complete (all 3 steps done), 3 iterations",
            )),
    );
    assert!(!env.lock().exists() || fs::read_to_string(env.lock()).unwrap().is_empty());
    // Ralph's own files stay out of the user's git status: the run's
    // records and its COMPLETE too (a commit would carry it into every
    // later worktree); the ignore file itself is the project's.
    // (The progress log is the project's, for git, like the spec: the run
    // committed both, on their own.)
    assert_eq!(
        env.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    env.git(&["add", "-A"]);
    assert_eq!(env.git(&["diff", "--cached", "--name-only"]), "");
    assert_eq!(
        env.git(&["show", "--name-only", "--format=%s", "HEAD"]),
        format!(
            "ralph: notes of run {}\n\n.ralph/.gitignore\n.ralph/progress.md\n",
            run_dir(&env).file_name().unwrap().to_string_lossy()
        )
    );
}

#[test]
fn three_interactive_sessions_complete_the_spec() {
    let env = project();
    for i in 1..=3 {
        env.api.session(step_session(i == 3));
    }
    let argv: Vec<String> = vec![
        ralph_bin().display().to_string(),
        "loop".into(),
        "--interactive".into(),
        "--max-iterations".into(),
        "10".into(),
        "--claude".into(),
        crate::support::claude_bin().display().to_string(),
    ];
    let mut pty = Pty::spawn(&argv, &env.vars(), &env.project);
    let status = pty
        .wait_exit(Duration::from_secs(120))
        .unwrap_or_else(|| panic!("loop still running:\n{}", pty.screen()));
    assert_eq!(status.exit_code(), 0, "{}", pty.screen());
    assert!(
        pty.has_shown("complete: all 3 steps done · 3 iterations"),
        "{}",
        pty.screen()
    );
    assert_eq!(records(&env).len(), 3);
    let hook_log = fs::read_to_string(run_dir(&env).join("hook.log")).unwrap();
    assert_eq!(
        hook_log
            .lines()
            .filter(|l| l.contains("\"action\":\"SIGINT\""))
            .count(),
        3,
        "{hook_log}"
    );
}

#[test]
fn waiting_stops_the_loop_with_its_reason() {
    let env = project();
    env.api.session([
        Reply::bash("ralph waiting --reason 'Need the staging database password'"),
        Reply::text("Asked for help."),
    ]);
    ralph_loop(&env)
        .assert()
        .code(3)
        .stdout(predicate::str::contains(
            "waiting for a human: Need the staging database password",
        ));
    // Before any session too.
    ralph_loop(&env)
        .assert()
        .code(3)
        .stdout(predicate::str::contains(
            "Need the staging database password",
        ));
    assert_eq!(records(&env).len(), 1);
}

#[test]
fn an_iteration_limit_exits_4_and_raised_the_run_goes_on_with_resume() {
    let env = project();
    env.api.session(step_session(false));
    env.api.session(step_session(false));
    let out = ralph_loop(&env)
        .args(["--max-iterations", "2"])
        .stdout_with(4);
    assert!(
        out.contains("iteration limit reached")
            && out.ends_with(
                "`ralph loop --resume --max-iterations <higher>` goes on with this run.\n"
            ),
        "{out}"
    );
    assert_eq!(summary(&env)["iterations"], 2);
    let id = run_id(&env);

    // Raised, the limit lets the same run go on; a completion in the last
    // allowed session is a completion.
    env.api.session(step_session(true));
    let out = env
        .ralph()
        .args(["loop", "--resume", "--max-iterations", "3"])
        .stdout_with(0);
    assert!(
        out.contains("max_iterations = 3 (was 2)")
            && out.contains(&format!("resuming run {id} at iteration 2/3"))
            && out.contains("complete: all 3 steps done · 3 iterations"),
        "{out}"
    );
    assert_eq!(run_id(&env), id);
}

#[test]
fn no_progress_exits_5_and_writes_waiting() {
    let env = project();
    for _ in 0..3 {
        env.api
            .session([Reply::text("I looked around and did nothing.")]);
    }
    ralph_loop(&env)
        .assert()
        .code(5)
        .stdout(predicate::str::contains("no progress"));
    let waiting = fs::read_to_string(env.project.join(".ralph/WAITING")).unwrap();
    assert!(
        waiting.contains("3 sessions in a row changed nothing"),
        "{waiting}"
    );
    assert_eq!(records(&env).len(), 3);
}

#[test]
fn a_stalled_session_is_ended_at_the_timeout() {
    let env = project();
    env.api.session([
        Reply::Stall(Duration::from_secs(120)),
        Reply::text("too late"),
    ]);
    let t0 = Instant::now();
    ralph_loop(&env)
        .args(["--timeout", "3s", "--max-iterations", "1"])
        .assert()
        .code(4)
        .stdout(predicate::str::contains("timed out after 3s"));
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "took {:?}",
        t0.elapsed()
    );
    let r = &records(&env)[0];
    assert_eq!(r["outcome"], "timeout");
    assert!(r["duration_s"].as_f64().unwrap() < 20.0, "{r}");
}

#[test]
fn a_usage_limit_waits_for_the_reset_and_does_not_count() {
    let env = project();
    let reset = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3;
    env.api.session([Reply::usage_limit(format!(
        "Claude AI usage limit reached|{reset}"
    ))]);
    env.api.session(step_session(false));
    env.api.session(step_session(false));
    env.api.session(step_session(true));
    let t0 = Instant::now();
    let out = ralph_loop(&env)
        .args(["--max-iterations", "3"])
        .stdout_with(0);
    assert!(out.contains("usage limit reached; waiting"), "{out}");
    assert!(t0.elapsed() >= Duration::from_secs(2));
    let recs = records(&env);
    assert_eq!(recs.len(), 4);
    assert_eq!(recs[0]["counted"], false);
    assert_eq!(recs[0]["outcome"], "limited: usage limit reached");
    // The retry is iteration 1 again, but a session (and stream) of its own.
    let numbers: Vec<_> = recs
        .iter()
        .map(|r| {
            (
                r["iteration"].as_u64().unwrap(),
                r["session"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(numbers, [(1, 1), (1, 2), (2, 3), (3, 4)]);
    let streams: std::collections::HashSet<_> = recs
        .iter()
        .map(|r| r["stream_file"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(streams.len(), 4, "one stream file per session: {streams:?}");
    for f in &streams {
        assert!(Path::new(f).exists(), "{f}");
    }
    assert!(
        fs::read_to_string(run_dir(&env).join("session-001.jsonl"))
            .unwrap()
            .contains("usage limit reached"),
        "the limited session's stream is kept, not overwritten"
    );
    assert_eq!(
        summary(&env)["iterations"],
        3,
        "the limited session is not an iteration"
    );
}

#[test]
fn a_false_complete_is_rejected_and_the_loop_goes_on() {
    let env = project();
    // The model claims completion with every box still open.
    env.api.session([
        Reply::bash("printf 'completed: now\\n\\nall done, trust me\\n' > .ralph/COMPLETE"),
        Reply::text("Done!"),
    ]);
    for i in 1..=3 {
        env.api.session(step_session(i == 3));
    }
    let out = ralph_loop(&env).stdout_with(0);
    assert!(out.contains("COMPLETE rejected"), "{out}");
    assert!(out.contains("open step: line 3: 1 First step"), "{out}");
    let aside = fs::read_to_string(run_dir(&env).join("COMPLETE.rejected-1")).unwrap();
    assert!(
        aside.contains("trust me") && aside.contains("rejected by ralph loop"),
        "{aside}"
    );
    assert_eq!(records(&env).len(), 4);
}

#[test]
fn ctrl_c_ends_the_session_and_everything_it_started() {
    let env = project();
    // Claude Code 2.1.330 blocks a standalone `sleep N` in its Bash tool; a
    // shell around it is what a real dev server or watcher looks like anyway.
    env.api.session([
        Reply::bash("sh -c 'sleep 6123' > /dev/null 2>&1 &"),
        Reply::Stall(Duration::from_secs(120)),
        Reply::text("late"),
    ]);
    let child = spawn_loop(&env, &[]);
    if !eventually(Duration::from_secs(60), || {
        !processes_with("sleep 6123").is_empty()
    }) {
        let stream =
            fs::read_to_string(run_dir(&env).join("session-001.jsonl")).unwrap_or_default();
        panic!(
            "the background sleep never started:\n{stream}\n{:?}",
            env.api
                .turns()
                .iter()
                .map(|t| t
                    .body
                    .to_string()
                    .chars()
                    .rev()
                    .take(600)
                    .collect::<String>())
                .collect::<Vec<_>>()
        );
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = crate::support::wait_output(child, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("interrupted: SIGINT received"),
        "{out:?}"
    );
    assert!(
        eventually(Duration::from_secs(5), || processes_with("sleep 6123")
            .is_empty()),
        "sleep 6123 was left running"
    );
    assert_eq!(
        fs::read_to_string(env.lock()).unwrap_or_default(),
        "",
        "lock released"
    );
    assert_eq!(summary(&env)["outcome"], "interrupted");
}

#[test]
fn a_second_loop_is_refused_and_a_stale_lock_taken_over() {
    let env = project();
    env.api
        .session([Reply::Stall(Duration::from_secs(120)), Reply::text("late")]);
    let first = spawn_loop(&env, &[]);
    assert!(
        eventually(Duration::from_secs(30), || !env.api.turns().is_empty()),
        "first loop's session never reached the API"
    );
    assert!(
        fs::read_to_string(env.lock())
            .unwrap()
            .contains("\"iteration\":1")
    );
    ralph_loop(&env).assert().code(1).stderr(
        predicate::str::contains("another loop is already running")
            .and(predicate::str::contains(format!("pid {}", first.id()))),
    );
    env.ralph().arg("status").assert().success().stdout(
        predicate::str::contains(format!("loop:    running, pid {}", first.id()))
            .and(predicate::str::contains("iteration 1/50")),
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = crate::support::wait_output(first, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(130));

    // A lock left by a loop that died without releasing it.
    let stale = r#"{"pid":999999,"start_time":1,"started_at":"2026-01-01T00:00:00Z","run_id":"old","iteration":7,"max_iterations":50}"#;
    env.plant_lock(stale);
    env.api.session(step_session(false));
    env.api.session(step_session(false));
    env.api.session(step_session(true));
    ralph_loop(&env)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "took over a stale lock of pid 999999",
        ));

    // While a loop runs, status shows its run, not the one before it.
    env.ralph().arg("reset").assert().success();
    fs::write(env.project.join(".ralph/spec.md"), "- [ ] **4** one more\n").unwrap();
    let turns = env.api.turns().len();
    env.api
        .session([Reply::Stall(Duration::from_secs(120)), Reply::text("late")]);
    let third = spawn_loop(&env, &[]);
    assert!(
        eventually(Duration::from_secs(30), || env.api.turns().len() > turns),
        "the third loop's session never reached the API"
    );
    let status = env.ralph().arg("status").stdout_with(0);
    let running: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(env.lock()).unwrap()).unwrap();
    assert!(
        status.contains(&format!(
            "loop:    running, pid {}, started {}, iteration 1/50 (run {}), $0.00 spent so far\n",
            third.id(),
            running["started_at"].as_str().unwrap(),
            running["run_id"].as_str().unwrap()
        )) && !status.contains("last run:"),
        "{status}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(third.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = crate::support::wait_output(third, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(130));
}

#[test]
fn consecutive_failures_exit_1_with_the_last_error() {
    let env = project();
    let claude = stand_in(
        &env,
        "failing-claude",
        "echo 'boom: the model crashed' >&2\nexit 7",
    );
    env.ralph()
        .args(["loop", "--claude"])
        .arg(&claude)
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "3 failing sessions in a row; last error: claude exited with status 7",
        ));
    assert_eq!(records(&env).len(), 3);
}

#[test]
fn cost_limit_exits_4() {
    let env = project();
    let claude = stand_in(
        &env,
        "costly-claude",
        &format!("{DO_STEP} >/dev/null 2>&1\necho '{RESULT}'"),
    );
    env.ralph()
        .args(["loop", "--max-cost", "1.00", "--claude"])
        .arg(&claude)
        .assert()
        .code(4)
        .stdout(predicate::str::contains(
            "cost limit reached: $1.50 spent of --max-cost $1.00",
        ));
    assert_eq!(summary(&env)["cost_usd"], 1.5);
}

#[test]
fn config_file_and_lifecycle_hooks() {
    let env = project();
    let claude = stand_in(
        &env,
        "quick-claude",
        &format!("{DO_STEP} >/dev/null 2>&1\necho '{RESULT}'"),
    );
    let log = env.tmp.path().join("events.log");
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!(
            "max_iterations = 2\nclaude = \"{}\"\n[hooks]\non_loop_start = \"echo start $RALPH_ITERATION >> {log}\"\non_session_end = \"echo end $RALPH_ITERATION $RALPH_SESSION_OUTCOME >> {log}\"\non_limit = \"echo limit $RALPH_REASON >> {log}; exit 3\"\n",
            claude.display(),
            log = log.display()
        ),
    )
    .unwrap();
    env.approve_config();
    env.ralph()
        .arg("loop")
        .assert()
        .code(4)
        .stderr(predicate::str::contains("the limit hook").and(predicate::str::contains("failed")));
    let events = fs::read_to_string(&log).unwrap();
    assert_eq!(
        events,
        "start 0\nend 1 ok\nend 2 ok\nlimit 2 sessions run (--max-iterations)\n"
    );
    // The command line overrides the file (its session checks the last
    // box: judged at once, complete).
    env.ralph()
        .args(["loop", "--max-iterations", "1"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("iteration 1/1 "));

    fs::write(
        env.project.join(".ralph/config.toml"),
        "max_iteration = 2\n",
    )
    .unwrap();
    env.ralph().arg("loop").assert().code(2).stderr(
        predicate::str::contains("config.toml").and(predicate::str::contains("max_iteration")),
    );
}

#[test]
fn usage_errors_exit_2_and_say_what_is_wrong() {
    let env = project();
    env.ralph()
        .args(["loop", "--claude", "/bin/true", "--timeout", "5x"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--timeout").and(predicate::str::contains("unknown unit")),
        );
    env.ralph()
        .args(["loop", "--claude", "/nonexistent/claude-binary"])
        .assert()
        .code(2)
        .stderr("ralph loop: --claude: /nonexistent/claude-binary does not exist\n");
    env.ralph()
        .args(["loop", "--prompt", "missing.md"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no prompt at"));
    env.ralph()
        .env("PATH", "/usr/bin:/bin")
        .arg("loop")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("`claude` not found on PATH"));
    env.ralph()
        .args(["loop", "--max-iterations", "0"])
        .assert()
        .code(2);
    // Absurd limits are refused before anything starts (they used to panic
    // with claude already running).
    for (args, says) in [
        (vec!["--timeout", "18446744073709551615"], "out of range"),
        (vec!["--timeout", "9999999999999999h"], "too long"),
        (vec!["--timeout", "0"], "out of range"),
        (vec!["--max-failures", "0"], "--max-failures"),
        (vec!["--no-progress-limit", "0"], "--no-progress-limit"),
        (vec!["--max-limit-wait", "40d"], "--max-limit-wait"),
    ] {
        env.ralph()
            .args(["loop", "--claude", "/bin/true"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    fs::write(
        env.project.join(".ralph/config.toml"),
        "timeout = \"9999999999999999h\"\n",
    )
    .unwrap();
    env.ralph()
        .args(["loop", "--claude", "/bin/true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("too long"));
    fs::remove_file(env.project.join(".ralph/config.toml")).unwrap();
    assert!(
        !env.project.join(".ralph/runs").exists(),
        "no run folder for a refused start"
    );
    env.ralph().args(["loop", "--bogus"]).assert().code(2);
    let help = env
        .ralph()
        .args(["loop", "--help"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let help = String::from_utf8_lossy(&help);
    for code in [
        "0    complete",
        "3    waiting",
        "4    limit reached",
        "5    no progress",
        "130  interrupted",
    ] {
        assert!(
            help.contains(code),
            "--help lists exit code {code}:\n{help}"
        );
    }
}

#[test]
fn editing_the_same_uncommitted_file_counts_as_progress() {
    let env = project();
    // `git status` shows `?? notes.txt` after every session; its content grows.
    let claude = stand_in(
        &env,
        "note-taker",
        &format!("echo more >> notes.txt\necho '{RESULT}'"),
    );
    // (Five sessions on one step would be a stuck step: not this test's.)
    env.ralph()
        .args([
            "loop",
            "--max-iterations",
            "5",
            "--max-sessions-per-step",
            "10",
            "--claude",
        ])
        .arg(&claude)
        .assert()
        .code(4);
    assert!(!env.project.join(".ralph/WAITING").exists());
}

#[test]
fn a_failing_tool_call_shows_the_line_that_says_why() {
    let env = project();
    // Claude Code reports a failed command as `Exit code 3`, then its output.
    env.api.session([
        Reply::bash("echo 'looking up the task' && echo 'Error: Issue not found: calc-l56.66' >&2 && exit 3"),
        Reply::text("The task is gone."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        out.contains("  ✗ Exit code 3 · Error: Issue not found: calc-l56.66\n"),
        "{out}"
    );
}

#[test]
fn a_step_that_sessions_keep_leaving_open_stops_the_loop_for_a_human() {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1.1** The hard step\n",
    )
    .unwrap();
    env.commit_all("one hard step");
    // Each session works (a commit, so no "no progress") but never finishes.
    for n in 1..=2 {
        env.api.session([
            Reply::bash(format!(
                "echo try {n} >> notes.txt && git add -A && git commit -qm 'try {n}'"
            )),
            Reply::text("Not there yet."),
        ]);
    }
    let out = ralph_loop(&env)
        .args(["--max-sessions-per-step", "2"])
        .stdout_with(3);
    assert!(
        out.contains("stuck on a step: step **1.1** The hard step: 2 sessions in a row did not finish it (ok, ok); split it, or say more in the spec"),
        "{out}"
    );
    assert_eq!(records(&env).len(), 2);
    let waiting = fs::read_to_string(env.project.join(".ralph/WAITING")).unwrap();
    assert!(
        waiting.contains("stuck on a step: step **1.1** The hard step: 2 sessions"),
        "{waiting}"
    );
    // The human splits the step, says go on: the count starts again.
    env.ralph().arg("resume").assert().success();
    env.api.session([
        Reply::bash(format!("{DO_STEP} && ralph complete -m done")),
        Reply::text("Done."),
    ]);
    ralph_loop(&env)
        .args(["--resume", "--max-sessions-per-step", "2"])
        .assert()
        .code(0);
    assert_eq!(summary(&env)["outcome"], "complete");
}

#[test]
fn pacing_waits_for_the_hour_counted_over_earlier_runs_and_a_stop_ends_the_wait() {
    let env = project();
    env.api.session(step_session(false));
    ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .assert()
        .code(4);
    // That earlier run's session started nearly an hour ago.
    let records = run_dir(&env).join("records.jsonl");
    let back = |secs: u64| {
        let text = fs::read_to_string(&records).unwrap();
        let mut r: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let t = std::time::UNIX_EPOCH + Duration::from_secs(crate::support::now_epoch() - secs);
        r["start"] = serde_json::Value::from(humantime::format_rfc3339_seconds(t).to_string());
        fs::write(&records, format!("{r}\n")).unwrap();
    };
    back(3597);
    let t0 = std::time::Instant::now();
    env.api.session(step_session(false));
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1", "--max-sessions-per-hour", "1"])
        .stdout_with(4);
    assert!(
        out.contains(
            "ralph: 1 sessions started in the last hour (--max-sessions-per-hour); waiting "
        ) && out.contains("iteration 1/1"),
        "{out}"
    );
    assert!(t0.elapsed() >= Duration::from_secs(2), "it did not wait");
    // Far from the hour: a stop request ends the wait at once.
    back(600);
    let runs = fs::read_dir(env.project.join(".ralph/runs"))
        .unwrap()
        .count();
    let waiting = crate::support::Live::start(ralph_loop(&env).args([
        "--max-iterations",
        "1",
        "--max-sessions-per-hour",
        "1",
    ]));
    // It says it waits (for about 50 minutes) before the signal comes.
    waiting.wait_for(
        "sessions started in the last hour (--max-sessions-per-hour); waiting ",
        Duration::from_secs(20),
    );
    assert!(
        fs::read_dir(env.project.join(".ralph/runs"))
            .unwrap()
            .count()
            > runs
    );
    let t0 = std::time::Instant::now();
    waiting.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, out, err) = waiting.finish(Duration::from_secs(10));
    assert_eq!(code, Some(130), "{out}\n{err}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{out}\n{err}");
}

#[test]
fn a_sessions_uncommitted_work_is_committed_with_the_projects_hooks_or_said() {
    let env = project();
    let leave = |n: u32| {
        vec![
            Reply::bash(format!("echo work {n} > work-{n}.txt")),
            Reply::text("Left it there."),
        ]
    };
    // Off (the default): said, and in the record.
    env.api.session(leave(1));
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        out.contains("ralph: session 1 left changes uncommitted\n"),
        "{out}"
    );
    let r = &records(&env)[0];
    assert_eq!(
        (r["left_uncommitted"].as_bool(), r["auto_commit"].as_str()),
        (Some(true), None),
        "{r}"
    );
    assert!(
        env.ralph().arg("status").stdout_with(0).contains(
            "changes: the last session left changes uncommitted (see `git status`; `--commit auto` commits them)\n"
        )
    );
    env.commit_all("by hand");

    // Auto: committed, with the project's own pre-commit hook run.
    let hook = env.project.join(".git/hooks/pre-commit");
    fs::write(&hook, "#!/bin/sh\ntouch hook-ran\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.api.session(leave(2));
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1", "--commit", "auto"])
        .stdout_with(4);
    assert!(
        out.contains("ralph: committed what session 1 left uncommitted: "),
        "{out}"
    );
    assert!(
        env.git(&["log", "-2", "--format=%s"])
            .contains("ralph: uncommitted work of session 1 (step **1** First step)\n")
    );
    assert!(
        env.project.join("hook-ran").exists(),
        "the pre-commit hook was skipped"
    );
    assert!(records(&env)[0]["auto_commit"].is_string());

    // A hook that refuses: said, and the changes stay.
    fs::write(&hook, "#!/bin/sh\necho 'lint: 3 problems' >&2\nexit 1\n").unwrap();
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "--no-verify", "-m", "hook that refuses"]);
    env.api.session(leave(3));
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1", "--commit", "auto"])
        .stdout_with(4);
    assert!(
        out.contains("ralph: session 1's uncommitted changes were not committed (they stay as they are): lint: 3 problems"),
        "{out}"
    );
    assert!(env.git(&["status", "--porcelain"]).contains("work-3.txt"));
}

#[test]
fn each_session_gets_a_progress_entry_and_one_without_evidence_is_named() {
    let env = project();
    // The standing prompt ralph init writes, which asks for both.
    fs::write(
        env.project.join(".ralph/prompt.md"),
        include_str!("../../src/templates/prompt.md"),
    )
    .unwrap();
    // Learnings grown past their budget: the next heading says to condense.
    fs::write(
        env.project.join(".ralph/learnings.md"),
        "- a long lesson\n".repeat(250),
    )
    .unwrap();
    // Session 1 does as told: evidence under its heading, the learnings
    // condensed; session 2 checks its box and writes nothing.
    env.api.session([
        Reply::bash(format!(
            "echo '- verified: `true` exits 0' >> .ralph/progress.md && printf '# Learnings\\n- tests: true\\n' > .ralph/learnings.md && {DO_STEP}"
        )),
        Reply::text("Step done."),
    ]);
    env.api
        .session([Reply::bash(DO_STEP), Reply::text("Step done.")]);
    ralph_loop(&env)
        .args(["--max-iterations", "2"])
        .stdout_with(4);
    let log = fs::read_to_string(env.project.join(".ralph/progress.md")).unwrap();
    let one = log.find("## Session 1 · ").unwrap();
    let two = log.find("## Session 2 · ").unwrap();
    let first = &log[one..two];
    assert!(
        first.contains(" · claude · step **1** First step\n")
            && first.contains("> ralph: .ralph/learnings.md is over its budget (~1000/800 tokens): condense it first")
            && first.contains("- verified: `true` exits 0\n")
            && first.contains("_ralph: session ok · 1 commit · $"),
        "{log}"
    );
    assert!(log[two..].contains(" · step **2** Second step\n"), "{log}");
    assert!(!log[two..].contains("over its budget"), "condensed: {log}");
    let asked = env.api.turns()[0].user_text();
    assert!(
        asked.contains(
            "Under your heading at the end of `.ralph/progress.md`, append what you verified"
        ) && asked.contains("add it to `.ralph/learnings.md`: merge and shorten"),
        "{asked}"
    );
    let recs = records(&env);
    assert_eq!(
        (
            recs[0]["no_evidence"].as_bool(),
            recs[1]["no_evidence"].as_bool()
        ),
        (None, Some(true))
    );
    let status = env.ralph().arg("status").stdout_with(0);
    assert!(
        status.contains(
            "evidence: session 2 checked a box but wrote no evidence in .ralph/progress.md\n"
        ),
        "{status}"
    );
    // What a session reads of it is its tail: counted so by `ralph budget`.
    let budget = env.ralph().arg("budget").stdout_with(0);
    assert!(
        budget.contains(".ralph/progress.md (tail)      ~"),
        "{budget}"
    );
}

#[test]
fn a_progress_log_or_learnings_that_is_a_fifo_or_a_link_never_stalls_or_misleads_the_loop() {
    let env = project();
    let outside = env.tmp.path().join("outside.md");
    fs::write(&outside, "not the project's\n").unwrap();
    std::os::unix::fs::symlink(&outside, env.project.join(".ralph/progress.md")).unwrap();
    let fifo = env.project.join(".ralph/learnings.md");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let claude = stepping_stand_in(&env, "plain-claude");
    let out = env
        .ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .stdout_with(4);
    assert!(
        out.contains("progress.md")
            && out.contains("the session goes on without its progress entry"),
        "{out}"
    );
    assert_eq!(fs::read_to_string(&outside).unwrap(), "not the project's\n");
    // `ralph budget` says what is wrong with the FIFO, at once.
    env.ralph()
        .arg("budget")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            ".ralph/learnings.md is a FIFO (named pipe), not a regular file",
        ));
    // A progress log of 100 MB: the loop and `ralph budget` read its end only.
    fs::remove_file(env.project.join(".ralph/progress.md")).unwrap();
    fs::remove_file(&fifo).unwrap();
    let big = "- a line of old notes, again and again\n".repeat(100 << 20 >> 5);
    fs::write(env.project.join(".ralph/progress.md"), &big).unwrap();
    let t0 = std::time::Instant::now();
    env.ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .assert()
        .code(4);
    let budget = env.ralph().arg("budget").stdout_with(0);
    assert!(budget.contains(".ralph/progress.md (tail)"), "{budget}");
    assert!(t0.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_box_checked_with_no_change_is_named_and_with_require_change_does_not_count() {
    let env = project();
    // DO_STEP checks the box and commits the spec: nothing else changes.
    env.api.session(step_session(false));
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        out.contains("ralph: session 1 checked a box but changed nothing besides .ralph/\n"),
        "{out}"
    );
    assert_eq!(records(&env)[0]["no_change"], true);
    assert!(
        env.ralph()
            .arg("status")
            .stdout_with(0)
            .contains("change:  session 1 checked a box but changed nothing besides .ralph/\n")
    );

    // With [gate] require_change the box is unchecked, and the next session told.
    fs::write(
        env.project.join(".ralph/config.toml"),
        "[gate]\nrequire_change = true\n",
    )
    .unwrap();
    env.api.session(step_session(false));
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        out.contains("ralph: [gate] require_change: unchecked line 4: 2 Second step again; the next session finds why in .ralph/gate-failed.md\n"),
        "{out}"
    );
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(
        spec.contains("- [x] **1** First step\n- [ ] **2** Second step\n"),
        "{spec}"
    );
    let told = fs::read_to_string(env.project.join(".ralph/gate-failed.md")).unwrap();
    assert!(
        told.starts_with("# A step was checked without a change"),
        "{told}"
    );
    assert_eq!(summary(&env)["outcome"], "iteration-limit");
}

/// Files uncommitted before the run (the user forgot to commit after
/// `ralph init`) are said at the start as the user's; a session is blamed
/// only for what it changed, and `--commit auto` commits only that.
#[test]
fn what_was_uncommitted_before_the_run_is_the_users_and_never_committed_by_it() {
    let env = project();
    fs::write(env.project.join("README.md"), "committed\n").unwrap();
    env.commit_all("readme");
    fs::write(env.project.join("notes.txt"), "mine\n").unwrap();
    fs::write(env.project.join("README.md"), "edited, not committed\n").unwrap();
    // Session 1 changes nothing; session 2 leaves a file of its own.
    env.api.session([Reply::text("Nothing to do here.")]);
    env.api.session([
        Reply::bash("echo work > work.txt"),
        Reply::text("Left it there."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "2", "--commit", "auto"])
        .stdout_with(4);
    assert!(
        out.contains("ralph: uncommitted before this run began (yours, not a session's): README.md, notes.txt; ralph leaves them as they are (--commit auto leaves them out); commit them first so that each session's changes stand alone\n"),
        "{out}"
    );
    assert!(!out.contains("session 1 left changes uncommitted"), "{out}");
    assert!(
        out.contains("ralph: committed what session 2 left uncommitted: "),
        "{out}"
    );
    let recs = records(&env);
    assert_eq!(
        recs.iter()
            .map(|r| r["left_uncommitted"].as_bool().unwrap_or(false))
            .collect::<Vec<_>>(),
        [false, true]
    );
    let session_commit = env.git(&[
        "log",
        "-1",
        "--name-only",
        "--format=",
        "--grep=uncommitted work of session 2",
    ]);
    assert!(
        session_commit.contains("work.txt")
            && !session_commit.contains("notes.txt")
            && !session_commit.contains("README.md"),
        "only the session's files: {session_commit}"
    );
    let status = env.git(&["status", "--porcelain"]);
    assert!(
        status.contains(" M README.md") && status.contains("?? notes.txt"),
        "the user's changes stay as they were: {status}"
    );
}

/// A finished run leaves nothing of ralph's uncommitted in files meant for
/// git: the notes it wrote after the last session (and the run files it
/// keeps out of git) are committed on their own, and said; what you had
/// changed of them yourself is left to you.
#[test]
fn a_finished_run_leaves_nothing_of_ralphs_uncommitted() {
    let env = one_step_project();
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Step done."),
    ]);
    let out = ralph_loop(&env).stdout_with(0);
    let id = run_id(&env);
    assert!(
        // The project had no `.ralph/.gitignore`: the loop wrote one.
        out.contains("ralph: committed ralph's notes (.ralph/.gitignore, .ralph/progress.md): "),
        "{out}"
    );
    assert_eq!(env.git(&["status", "--porcelain"]), "", "{out}");
    assert_eq!(
        env.git(&["log", "-1", "--format=%s"]).trim(),
        format!("ralph: notes of run {id}")
    );
    assert_eq!(
        env.git(&["show", "--name-only", "--format=", "HEAD"])
            .trim(),
        ".ralph/.gitignore\n.ralph/progress.md"
    );
    // Your own edits to the notes, uncommitted when a run starts, stay
    // yours: neither committed nor lost.
    let notes = env.project.join(".ralph/progress.md");
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **2** Another\n",
    )
    .unwrap();
    env.commit_all("another step");
    let mut text = fs::read_to_string(&notes).unwrap();
    text.push_str("\nmy own note\n");
    fs::write(&notes, &text).unwrap();
    env.ralph().arg("reset").assert().code(0);
    env.api.session([Reply::text("Not this time.")]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(!out.contains("committed ralph's notes"), "{out}");
    assert!(fs::read_to_string(&notes).unwrap().contains("my own note"));
    assert!(
        env.git(&["status", "--porcelain"])
            .contains(".ralph/progress.md")
    );
}

/// Loops that share a terminal (`ralph loop --worktree auth ... &` twice)
/// say whose each line is: a worktree loop tags every line with its name,
/// and any loop does when its output is not a terminal; a loop alone in
/// its terminal does not.
#[test]
fn each_line_says_whose_loop_it_is_unless_the_loop_has_the_terminal() {
    let env = one_step_project();
    env.api
        .session([Reply::bash(DO_STEP), Reply::text("Did it.")]);
    let out = ralph_loop(&env)
        .args(["--worktree", "auth", "--max-iterations", "1"])
        .stdout_with(0);
    let untagged: Vec<&str> = out.lines().filter(|l| !l.starts_with("[auth] ")).collect();
    assert!(untagged.is_empty(), "{untagged:?} in\n{out}");
    assert!(out.contains("[auth] Did it.\n"), "{out}");
    // The checkout's loop, piped: tagged with the project's folder.
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **2** Two\n",
    )
    .unwrap();
    env.commit_all("another step");
    env.api.session([Reply::text("Not yet.")]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        out.lines().all(|l| l.starts_with("[project] ")) && out.contains("[project] Not yet.\n"),
        "{out}"
    );
    // Alone in its terminal: as it always was.
    env.api.session([Reply::text("Still not.")]);
    let argv: Vec<String> = vec![
        ralph_bin().display().to_string(),
        "loop".into(),
        "--max-iterations".into(),
        "1".into(),
        "--claude".into(),
        crate::support::claude_bin().display().to_string(),
    ];
    let mut pty = Pty::spawn(&argv, &env.vars(), &env.project);
    pty.wait_exit(Duration::from_secs(120))
        .unwrap_or_else(|| panic!("loop still running:\n{}", pty.screen()));
    let screen = pty.screen();
    assert!(
        screen.contains("Still not.") && !screen.contains("[project]"),
        "{screen}"
    );
}

/// `ralph loop` in an empty folder says what is missing where a loop looks
/// for it, that the folder is no git repository, and how to set it up.
#[test]
fn a_loop_in_an_empty_folder_says_how_to_set_it_up() {
    let env = project();
    let empty = env.tmp.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let at = empty.canonicalize().unwrap().display().to_string();
    let err = env
        .ralph()
        .args(["-C", &at, "loop", "--claude", "/bin/true"])
        .stderr_with(2);
    assert_eq!(
        err,
        format!(
            "ralph loop: no prompt at {at}/.ralph/prompt.md (nor {at}/prompt.md): this folder is not set up for ralph yet. It is no git repository either, and the loop measures progress with git: run `git init && git commit --allow-empty -m start`, then `ralph init` (or /ralph-setup in Claude Code), or pass --prompt FILE\n"
        )
    );
}

/// What the agent writes to its stderr passes to ralph's, and is tagged
/// as the loop's other lines are when its output may be read beside other
/// loops' (here: a pipe).
#[test]
fn the_agents_own_stderr_lines_are_tagged_with_the_loop_when_piped() {
    let env = one_step_project();
    env.api.session([
        Reply::bash(format!(
            "{}echo 'a warning of the agent' > /proc/$agent/fd/2; {CHECK_THE_BOX}",
            crate::agents_pi_opencode::FIND_AGENT
        )),
        Reply::text("Step done."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .assert()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    let name = env.project.file_name().unwrap().to_string_lossy();
    assert!(
        err.lines()
            .any(|l| l == format!("[{name}] a warning of the agent")),
        "{err}"
    );
}

/// `ralph add` then `ralph loop`, as the README's day to day has it: the
/// step is committed, so the loop starts from a clean tree and blames
/// nobody; a spec you had changed yourself is left for you to commit.
#[test]
fn a_step_added_is_committed_so_the_loop_starts_clean() {
    let env = one_step_project();
    let out = env.ralph().args(["add", "Write the docs"]).stdout_with(0);
    assert!(
        out.contains("Added step 2 Write the docs to ")
            && out.contains("\nCommitted .ralph/spec.md ("),
        "{out}"
    );
    assert_eq!(env.git(&["status", "--porcelain"]), "");
    assert_eq!(
        env.git(&["log", "-1", "--format=%s"]).trim(),
        "ralph: add step 2 Write the docs"
    );
    env.api
        .session([Reply::bash(CHECK_THE_BOX), Reply::text("Step done.")]);
    // (The stand-in session checks every box at once.)
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(0);
    assert!(!out.contains("uncommitted before this run began"), "{out}");
    // Your own change to the spec: not ralph's to commit.
    let spec = env.project.join(".ralph/spec.md");
    let text = fs::read_to_string(&spec).unwrap();
    fs::write(&spec, format!("{text}\nA note of mine.\n")).unwrap();
    let out = env.ralph().args(["add", "Three"]).stdout_with(0);
    assert!(
        out.contains("Not committed: .ralph/spec.md had changes of yours before; commit them before `ralph loop`"),
        "{out}"
    );
    let out = env
        .ralph()
        .args(["add", "Four", "--no-commit"])
        .stdout_with(0);
    assert!(!out.contains("ommitted"), "{out}");
}
