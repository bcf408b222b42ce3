//! Nothing a session or a cloned repository writes makes ralph act outside
//! the sandbox: config that runs things needs the user's approval, confined
//! sessions cannot be widened, the gate runs confined, locks and tokens live
//! where the project cannot write, run folders cannot be redirected, saved
//! state and git arguments are checked.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use predicates::prelude::*;

use crate::support::CHECK_THE_BOX;
use crate::support::{DO_STEP, RESULT, project, records, run_dir, stand_in, step_session};
use crate::support::{Reply, TestEnv, claude_bin, eventually, sandbox_tools, wait_output};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A stand-in claude that does one step (checks a box) per session.
fn quick_claude(env: &TestEnv) -> std::path::PathBuf {
    stand_in(
        env,
        "quick-claude",
        &format!("{DO_STEP} >/dev/null 2>&1\necho '{RESULT}'"),
    )
}

/// The start time of a process, as /proc gives it (clock ticks since boot).
fn start_time(pid: u32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(19).unwrap().parse().unwrap()
}

fn alive(c: &mut std::process::Child) -> bool {
    c.try_wait().unwrap().is_none()
}

fn end(mut c: std::process::Child) {
    let _ = c.kill();
    let _ = c.wait();
}

/// A one-step project whose gate is given on the command line (the user's
/// own words: no approval needed).
fn one_step() -> TestEnv {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** The one step\n",
    )
    .unwrap();
    env.git(&["commit", "-qam", "one step"]);
    env
}

#[test]
fn a_config_the_user_has_not_approved_runs_nothing() {
    let env = project();
    let mark = env.tmp.path().join("ran");
    let evil = stand_in(
        &env,
        "evil-claude",
        &format!("touch {}-claude\necho '{RESULT}'", mark.display()),
    );
    let config = format!(
        "max_iterations = 1\nclaude = \"{}\"\n[hooks]\non_loop_start = \"touch {m}-hook\"\n[gate]\ncommands = [\"touch {m}-gate\"]\n",
        evil.display(),
        m = mark.display()
    );
    fs::write(env.project.join(".ralph/config.toml"), &config).unwrap();
    let ran = |what: &str| env.tmp.path().join(format!("ran-{what}")).exists();

    // As cloned: refused before anything runs, showing what would run.
    let out = env
        .ralph()
        .arg("loop")
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = text(&out.stderr);
    for says in [
        "has not been approved",
        &format!("claude = \"{}\"", evil.display()),
        "    [hooks]\n    on_loop_start = \"touch",
        "    [gate]\n    commands = [\"touch",
        "`ralph trust`",
    ] {
        assert!(err.contains(says), "{says:?} not in: {err}");
    }
    assert!(!ran("claude") && !ran("hook") && !ran("gate"));
    assert!(!env.project.join(".ralph/runs").exists(), "nothing started");

    // doctor names the configured claude and does not run it; status says.
    env.ralph().arg("doctor").assert().code(1).stdout(
        predicate::str::contains("FAIL config")
            .and(predicate::str::contains(evil.display().to_string()))
            .and(predicate::str::contains("not approved: not run")),
    );
    assert!(!ran("claude"), "doctor ran the configured claude");
    env.ralph()
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains("config:  not approved"));
    // ralph complete does not run an unapproved gate either.
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [x] **1** Done\n",
    )
    .unwrap();
    env.ralph()
        .arg("complete")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the completion gate was not run"));
    assert!(!ran("gate"));
    fs::write(env.project.join(".ralph/spec.md"), crate::support::SPEC).unwrap();

    // Nobody to ask: no approval without --yes.
    env.ralph()
        .arg("trust")
        .assert()
        .code(2)
        .stdout(predicate::str::contains("[hooks]\n    on_loop_start = "))
        .stderr(predicate::str::contains("ralph trust --yes"));
    env.ralph()
        .args(["trust", "--yes"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Approved"));
    env.ralph()
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains("config:  approved"));
    env.ralph().arg("loop").assert().code(4);
    assert!(ran("claude") && ran("hook"), "approved, they run");

    // Changed afterwards (as a session could): refused again.
    fs::write(
        env.project.join(".ralph/config.toml"),
        config.replace("-hook", "-changed"),
    )
    .unwrap();
    env.ralph()
        .arg("loop")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "has changed since you approved it",
        ));
    assert!(!ran("changed"));
    // Settings that run nothing need no approval; --revoke withdraws it.
    env.ralph()
        .args(["trust", "--revoke"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Withdrew"));
    fs::write(
        env.project.join(".ralph/config.toml"),
        "max_iterations = 1\n",
    )
    .unwrap();
    env.ralph()
        .args(["loop", "--claude"])
        .arg(quick_claude(&env))
        .assert()
        .code(4);
    // A prompt named by the config must be in the project.
    fs::write(
        env.project.join(".ralph/config.toml"),
        "prompt = \"../../../etc/passwd\"\n",
    )
    .unwrap();
    env.ralph()
        .args(["loop", "--claude", "/bin/true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "must name a file inside the project",
        ));
}

#[test]
fn confined_sessions_refuse_arguments_that_widen_them() {
    sandbox_tools();
    let env = project();
    for arg in [
        "--dangerously-skip-permissions",
        "--add-dir",
        "--allowedTools",
        "--settings",
        "--mcp-config",
    ] {
        env.ralph()
            .args(["loop", "--confined", "--claude"])
            .arg(claude_bin())
            .args(["--", arg, "/"])
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains(format!("{arg:?} would widen a confined session"))
                    .and(predicate::str::contains("--model")),
            );
    }
    // From an approved config too: approval does not let it widen.
    env.approved_config("claude_args = [\"--permission-mode\", \"bypassPermissions\"]\n");
    env.ralph()
        .args(["loop", "--confined", "--claude"])
        .arg(claude_bin())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "\"--permission-mode\" would widen",
        ));
    assert!(!env.project.join(".ralph/runs").exists(), "nothing started");
}

/// The real client, confined: the session rewrites the gate's script to
/// write $HOME and tries to add a hook to the config and plant a file in the
/// run folders. The gate runs confined (the write fails), and ralph's
/// control files are out of the session's reach.
#[test]
fn a_confined_session_cannot_make_ralph_act_outside_the_sandbox() {
    sandbox_tools();
    let env = one_step();
    fs::write(env.project.join("check.sh"), "exit 0\n").unwrap();
    fs::write(
        env.project.join(".ralph/config.toml"),
        "max_iterations = 5\n",
    )
    .unwrap();
    env.commit_all("gated");
    let escaped = env.home.join("escaped");
    env.api.session([
        Reply::bash(format!(
            "{CHECK_THE_BOX} && ralph complete -m done && \
             printf 'touch {e}-gate; echo gate-ran; exit 0\\n' > check.sh",
            e = escaped.display()
        )),
        // Through a shell inside the sandbox, so Claude Code's own checks
        // of the command line do not refuse it before the sandbox is tried.
        Reply::bash(format!(
            "sh -c 'printf \"[hooks]\\non_loop_start = \\\"touch {e}-hook\\\"\\n\" >> .ralph/config.toml'; \
             sh -c 'touch .ralph/runs/planted'; true",
            e = escaped.display()
        )),
        Reply::text("Done."),
    ]);
    let out = env
        .ralph()
        .args(["loop", "--confined", "--max-iterations", "2"])
        .args([
            "--gate",
            "sh check.sh",
            "--gate-baseline",
            "off",
            "--claude",
        ])
        .arg(claude_bin())
        .assert()
        .get_output()
        .clone();
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let log = fs::read_to_string(run_dir(&env).join("gate-001.log")).unwrap();
    assert!(
        log.contains("gate-ran") && log.contains("cannot touch"),
        "the session's script ran, confined: {log}"
    );
    assert!(
        !env.home.join("escaped-gate").exists(),
        "the gate wrote $HOME"
    );
    assert_eq!(
        fs::read_to_string(env.project.join(".ralph/config.toml")).unwrap(),
        "max_iterations = 5\n",
        "the session wrote ralph's config"
    );
    assert!(!env.project.join(".ralph/runs/planted").exists());
    let session = fs::read_to_string(run_dir(&env).join("session-001.jsonl")).unwrap();
    assert!(session.contains("Read-only file system"), "{session}");
    // The record says what ran: confined, nothing that widens it.
    let command = records(&env)[0]["command"].to_string();
    assert!(
        command.contains("\"acceptEdits\"")
            && command.contains("denyWrite")
            && !command.contains("--dangerously-skip-permissions"),
        "{command}"
    );
}

#[test]
fn a_lock_in_the_project_names_nothing_ralph_would_end() {
    let env = project();
    // An unrelated process, and one that carries a forged run's marker.
    let victim = Command::new("sleep").arg("6411").spawn().unwrap();
    let marked = Command::new("sleep")
        .arg("6412")
        .env("RALPH_SESSION_TOKEN", "2026-1")
        .spawn()
        .unwrap();
    let forged = serde_json::json!({
        "pid": 999999, "start_time": 1, "started_at": "2026-01-01T00:00:00Z",
        "run_id": "2026", "iteration": 3, "max_iterations": 50,
        "session": [victim.id(), start_time(victim.id())], "token": "2026",
    });
    fs::write(env.project.join(".ralph/loop.lock"), forged.to_string()).unwrap();
    let (mut victim, mut marked) = (victim, marked);
    let out = env
        .ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(quick_claude(&env))
        .assert()
        .code(4)
        .get_output()
        .clone();
    let all = text(&out.stdout) + &text(&out.stderr);
    assert!(!all.contains("took over"), "{all}");
    assert!(
        alive(&mut victim),
        "ralph ended the process a forged lock named"
    );
    assert!(
        alive(&mut marked),
        "ralph ended a process by a forged run id"
    );
    end(victim);
    end(marked);

    // Whatever is put at .ralph/loop.lock while a loop runs, it stays the
    // one loop; a FIFO there blocks nothing.
    let slow = stand_in(&env, "slow-claude", "sleep 6403");
    let first = env.ralph().args(["loop", "--claude"]).arg(&slow).spawn();
    assert!(eventually(Duration::from_secs(30), || {
        !crate::support::processes_with("sleep 6403").is_empty()
    }));
    let _ = fs::remove_file(env.project.join(".ralph/loop.lock"));
    nix::unistd::mkfifo(
        &env.project.join(".ralph/loop.lock"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    let status: serde_json::Value = env.ralph().args(["status", "--json"]).json_with(0);
    assert_eq!(status["loop"]["pid"], first.id(), "{status}");
    assert!(
        status["loop"].get("token").is_none(),
        "the run's secret is shown: {status}"
    );
    let second = env.ralph().args(["loop", "--claude"]).arg(&slow).spawn();
    let out = wait_output(second, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        text(&out.stderr).contains(&format!(
            "already running in {} (pid {},",
            env.project.display(),
            first.id()
        )),
        "{}",
        text(&out.stderr)
    );
    kill(Pid::from_raw(first.id() as i32), Signal::SIGTERM).unwrap();
    assert_eq!(
        wait_output(first, Duration::from_secs(30)).status.code(),
        Some(130)
    );
}

#[test]
fn a_fifo_where_ralph_keeps_the_lock_is_refused_at_once() {
    let env = project();
    fs::create_dir_all(env.lock().parent().unwrap()).unwrap();
    nix::unistd::mkfifo(&env.lock(), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let child = env.ralph().args(["loop", "--claude", "/bin/true"]).spawn();
    let out = wait_output(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(text(&out.stderr).contains("not a regular file"), "{out:?}");
}

#[test]
fn a_daemon_left_by_a_gate_command_neither_hangs_nor_outlives_the_loop() {
    let env = one_step();
    let gate = "setsid sleep 6471 & echo started";
    let claude = stand_in(
        &env,
        "completing-claude",
        &format!("{CHECK_THE_BOX} && ralph complete -m done >/dev/null 2>&1\necho '{RESULT}'"),
    );
    let child = env
        .ralph()
        .args(["loop", "--max-iterations", "2", "--gate", gate, "--claude"])
        .arg(&claude)
        .spawn();
    let out = wait_output(child, Duration::from_secs(90));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        eventually(Duration::from_secs(10), || crate::support::processes_with(
            "sleep 6471"
        )
        .is_empty()),
        "the gate's daemon outlived the loop"
    );
}

/// A loop whose one session writes COMPLETE, running `gate` (which must
/// touch `gate-started` first) when this returns.
fn gate_running(gate: &str) -> (TestEnv, std::process::Child) {
    let env = one_step();
    let claude = stand_in(
        &env,
        "completing-claude",
        &format!("{CHECK_THE_BOX} && touch .ralph/COMPLETE\necho '{RESULT}'"),
    );
    let child = env
        .ralph()
        .args(["loop", "--max-iterations", "2", "--gate", gate])
        // The gate starts as COMPLETE is judged, not as a baseline first.
        .args(["--gate-baseline", "off", "--claude"])
        .arg(&claude)
        .spawn();
    let started = env.project.join("gate-started");
    assert!(eventually(Duration::from_secs(60), || started.exists()));
    (env, child)
}

#[test]
fn a_killed_loops_gate_command_is_ended_by_the_next_loop() {
    let (env, first) = gate_running("touch gate-started; setsid sleep 6472 & sleep 6473");
    assert!(eventually(Duration::from_secs(10), || {
        !crate::support::processes_with("sleep 6473").is_empty()
    }));
    // SIGKILL while the gate runs: the loop gets no chance to clean up.
    kill(Pid::from_raw(first.id() as i32), Signal::SIGKILL).unwrap();
    let _ = wait_output(first, Duration::from_secs(10));
    assert!(!crate::support::processes_with("sleep 6472").is_empty());
    fs::remove_file(env.project.join(".ralph/COMPLETE")).unwrap();
    let out = env
        .ralph()
        .args(["loop", "--max-iterations", "1", "--claude", "/bin/true"])
        .assert()
        .get_output()
        .clone();
    assert!(
        text(&out.stdout).contains("took over a stale lock"),
        "{out:?}"
    );
    assert!(
        eventually(Duration::from_secs(15), || {
            crate::support::processes_with("sleep 6472").is_empty()
                && crate::support::processes_with("sleep 6473").is_empty()
        }),
        "the killed loop's gate commands were left running: {out:?}"
    );
}

#[test]
fn a_stop_request_ends_a_gate_command_and_the_loop() {
    let (_env, child) = gate_running("touch gate-started; sleep 6474");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let out = wait_output(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert!(crate::support::processes_with("sleep 6474").is_empty());
}

/// Files of ralph's in `dir`, recursively: none may land outside.
fn files_in(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        v.push(e.path().display().to_string());
        if e.file_type().unwrap().is_dir() {
            v.extend(files_in(&e.path()));
        }
    }
    v
}

#[test]
fn a_session_that_swaps_the_run_folder_for_a_link_redirects_no_write() {
    let env = project();
    let outside = env.tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    for (name, swap) in [
        (
            "swap-runs",
            "[ -L .ralph/runs ] || { mv .ralph/runs .ralph/runs.moved && ln -s {out} .ralph/runs; }",
        ),
        (
            "swap-run-dir",
            "[ -L \"$RALPH_RUN_DIR\" ] || { mv \"$RALPH_RUN_DIR\" \"$RALPH_RUN_DIR.moved\" && ln -s {out} \"$RALPH_RUN_DIR\"; }",
        ),
    ] {
        let claude = stand_in(
            &env,
            name,
            &format!(
                "{}\necho '{RESULT}'",
                swap.replace("{out}", &outside.display().to_string())
            ),
        );
        let out = env
            .ralph()
            .args(["loop", "--max-iterations", "2", "--claude"])
            .arg(&claude)
            .assert()
            .get_output()
            .clone();
        assert_eq!(out.status.code(), Some(4), "{name}: {out:?}");
        assert_eq!(
            files_in(&outside),
            Vec::<String>::new(),
            "{name}: written through the link"
        );
        // Put things back for the next round.
        let ralph = env.project.join(".ralph");
        if ralph.join("runs.moved").exists() {
            fs::remove_file(ralph.join("runs")).unwrap();
            fs::rename(ralph.join("runs.moved"), ralph.join("runs")).unwrap();
        }
        let _ = fs::remove_file(ralph.join("WAITING"));
    }
    // The run files went to the real folders.
    let moved: Vec<_> = fs::read_dir(env.project.join(".ralph/runs"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".moved"))
        .collect();
    assert_eq!(moved.len(), 1);
    let recs = fs::read_to_string(moved[0].path().join("records.jsonl")).unwrap();
    assert_eq!(recs.lines().count(), 2, "{recs}");
    // A link at .ralph itself: refused before anything is written.
    let ralph = env.project.join(".ralph");
    fs::rename(&ralph, env.project.join("ralph.real")).unwrap();
    symlink(env.project.join("ralph.real"), &ralph).unwrap();
    env.ralph()
        .args(["loop", "--claude", "/bin/true"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(".ralph is a symlink"));
}

/// A repository's `.claude/settings.json` points the hook at a folder of
/// its choosing; the real client's Stop hook in a real loop writes only to
/// the run folder the loop named.
#[test]
fn a_repositorys_settings_env_cannot_redirect_the_hook() {
    let env = project();
    let planted = env.tmp.path().join("planted");
    fs::create_dir(&planted).unwrap();
    fs::create_dir_all(env.project.join(".claude")).unwrap();
    fs::write(
        env.project.join(".claude/settings.json"),
        serde_json::json!({"env": {"RALPH_RUN_DIR": planted, "RALPH_HOOK_GRACE_MS": "1"}})
            .to_string(),
    )
    .unwrap();
    // Refused as cloned; approved (say the user wants the grace setting),
    // the hook still takes its run folder only from the loop.
    crate::support::ralph_loop(&env)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(".claude/settings.json env"));
    env.approve_config();
    env.api.session(step_session(false));
    crate::support::ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .assert()
        .code(4);
    assert_eq!(files_in(&planted), Vec::<String>::new());
    let log = fs::read_to_string(run_dir(&env).join("hook.log")).unwrap();
    assert!(log.contains("\"authorised_by\""), "{log}");
    assert_eq!(records(&env).len(), 1);
}

/// A run stopped by the user, to resume.
fn interrupted_run(env: &TestEnv) -> std::path::PathBuf {
    let paused = env.tmp.path().join("paused");
    let claude = stand_in(
        env,
        "pausing-claude",
        &format!("echo '{RESULT}'\ntouch {}; sleep 6481", paused.display()),
    );
    let child = env.ralph().args(["loop", "--claude"]).arg(&claude).spawn();
    assert!(eventually(Duration::from_secs(30), || paused.exists()));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    assert_eq!(
        wait_output(child, Duration::from_secs(30)).status.code(),
        Some(130)
    );
    run_dir(env)
}

#[test]
fn saved_state_out_of_range_or_form_is_refused_and_nothing_removed() {
    let env = project();
    let dir = interrupted_run(&env);
    let state_path = dir.join("state.json");
    let good: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&state_path).unwrap()).unwrap();
    let written = env.tmp.path().join("x");
    for (key, value, says) in [
        ("elapsed_s", serde_json::json!(-1), "elapsed_s"),
        ("elapsed_s", serde_json::json!(1e300), "elapsed_s"),
        (
            "first_head",
            serde_json::json!(format!("--output={}", written.display())),
            "first_head",
        ),
    ] {
        let mut bad = good.clone();
        bad[key] = value;
        fs::write(&state_path, bad.to_string()).unwrap();
        env.ralph()
            .args(["loop", "--resume", "--claude", "/bin/true"])
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("saved state is not valid")
                    .and(predicate::str::contains(says)),
            );
        assert!(
            dir.join("summary.json").exists(),
            "removed before the resume was known to be valid"
        );
        env.ralph().arg("status").assert().success();
        env.ralph().args(["status", "--json"]).assert().success();
        env.ralph().args(["status", "--all"]).assert().success();
    }
    let mut bad = good.clone();
    bad["state"]["cost_usd"] = serde_json::json!(-5.0);
    fs::write(&state_path, bad.to_string()).unwrap();
    env.ralph()
        .args(["loop", "--resume", "--claude", "/bin/true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cost_usd"));
    assert!(!written.exists(), "a saved value reached git as an option");
}

#[test]
fn values_that_git_would_read_as_options_are_refused() {
    let env = project();
    for base in ["-f", "--orphan"] {
        env.ralph()
            .args(["loop", "--worktree", "w", "--claude", "/bin/true"])
            .arg(format!("--base={base}"))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("is not a commit"));
    }
    let branches = env.git(&["branch", "--list", "ralph/*"]);
    assert_eq!(branches.trim(), "", "no branch was made");
}

#[test]
fn run_ids_that_are_not_ralphs_are_neither_followed_nor_printed() {
    let env = project();
    env.ralph()
        .args(["logs", "--run", "../../../etc"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a run id"));
    // A clone ships a run folder whose name is an escape sequence.
    let evil = "2026-x\u{1b}]52;c;aGk=\u{7}";
    fs::create_dir_all(env.project.join(".ralph/runs").join(evil)).unwrap();
    fs::write(
        env.project
            .join(".ralph/runs")
            .join(evil)
            .join("summary.json"),
        "{}",
    )
    .unwrap();
    for args in [&["status"][..], &["status", "--all"], &["logs"]] {
        let out = env
            .ralph()
            .args(args)
            .env("CLICOLOR_FORCE", "0")
            .assert()
            .get_output()
            .clone();
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(
            !all.contains('\u{1b}') && !all.contains('\u{7}'),
            "{args:?}: {all:?}"
        );
    }
}

/// A clone's Claude Code files: hooks and MCP servers that a `claude -p`
/// would run outside any sandbox without asking. Refused until approved;
/// approved, a default session runs them, a confined one never loads them.
#[test]
fn a_clones_claude_files_run_nothing_until_approved_and_never_confined() {
    sandbox_tools();
    let env = project();
    let mark = env.tmp.path().join("claude-files");
    fs::create_dir_all(env.project.join(".claude")).unwrap();
    fs::write(
        env.project.join(".claude/settings.json"),
        serde_json::json!({"hooks": {"SessionStart": [{"hooks": [
            {"type": "command", "command": format!("echo hook >> {}", mark.display())}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    fs::write(
        env.project.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"x": {"command": "sh", "args": ["-c",
            format!("echo mcp >> {}; sleep 3", mark.display())]}}})
        .to_string(),
    )
    .unwrap();
    env.commit_all("as cloned");
    crate::support::ralph_loop(&env).assert().code(2).stderr(
        predicate::str::contains(".claude/settings.json hooks")
            .and(predicate::str::contains(".mcp.json = "))
            .and(predicate::str::contains("`ralph trust`")),
    );
    env.ralph()
        .arg("doctor")
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL config"));
    assert!(!mark.exists(), "ran before approval");

    env.approve_config();
    env.api.session(step_session(false));
    env.ralph()
        .args(["loop", "--confined", "--max-iterations", "1", "--claude"])
        .arg(claude_bin())
        .assert()
        .code(4);
    assert!(
        !mark.exists(),
        "a confined session loaded the project's hooks or servers"
    );
    assert_eq!(records(&env).len(), 1);

    env.api.session(step_session(false));
    crate::support::ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .assert()
        .code(4);
    assert!(
        fs::read_to_string(&mark).unwrap().contains("hook"),
        "approved, a default session runs the project's hooks"
    );
}

#[test]
fn a_worktree_loop_carries_the_checkouts_approval_over_and_no_further() {
    let env = project();
    env.approved_config("[gate]\ncommands = [\"true\"]\n");
    env.commit_all("gated");
    let claude = quick_claude(&env);
    let worktree_loop = || {
        env.ralph()
            .args([
                "loop",
                "--worktree",
                "w",
                "--max-iterations",
                "1",
                "--claude",
            ])
            .arg(&claude)
    };
    worktree_loop().assert().code(4);
    // Changed in the worktree (as its session could): not approved there.
    let wt = crate::support::wt_dir(&env.project, "w");
    fs::write(
        wt.join(".ralph/config.toml"),
        "[gate]\ncommands = [\"touch pwned\"]\n",
    )
    .unwrap();
    worktree_loop()
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "has changed since you approved it",
        ));
}

#[test]
fn a_session_cannot_make_git_run_its_programs_through_ralph_or_the_user() {
    // Unconfined (it may write .git/config): ralph's own `git status` after
    // the session does not run the fsmonitor it names.
    let env = one_step();
    let pwned = env.home.join("pwned-by-fsmonitor");
    let claude = stand_in(
        &env,
        "configuring-claude",
        &format!(
            "{CHECK_THE_BOX}\ngit config core.fsmonitor 'touch {}; false'\necho '{RESULT}'",
            pwned.display()
        ),
    );
    // (Its box checked, the run is judged at once and complete: every git
    // of ralph's after the session ran with the override.)
    env.ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .assert()
        .code(0);
    assert!(!env.git(&["config", "--get", "core.fsmonitor"]).is_empty());
    assert!(
        !pwned.exists(),
        "ralph's git ran the session's core.fsmonitor"
    );

    // Confined: git's config and hooks are not the session's to write; its
    // commit still goes through.
    sandbox_tools();
    let env = one_step();
    env.api.session([
        Reply::bash(format!(
            "sh -c \"git config core.fsmonitor 'touch {p}'\"; sh -c 'echo touch {p} > .git/hooks/pre-commit'; {CHECK_THE_BOX} && ralph complete -m done",
            p = pwned.display()
        )),
        Reply::text("Done."),
    ]);
    env.ralph()
        .args(["loop", "--confined", "--max-iterations", "1", "--claude"])
        .arg(claude_bin())
        .assert()
        .code(0);
    let config = fs::read_to_string(env.project.join(".git/config")).unwrap();
    assert!(
        !config.contains("fsmonitor"),
        "the session wrote .git/config: {config}"
    );
    assert!(
        !env.project.join(".git/hooks/pre-commit").exists(),
        "the session wrote a git hook"
    );
    let session = fs::read_to_string(run_dir(&env).join("session-001.jsonl")).unwrap();
    assert!(
        session.contains("Read-only file system") || session.contains("Permission denied"),
        "{session}"
    );
}

/// `ralph complete` run by hand in a project whose config says `confined =
/// true` runs the approved gate confined, as the loop would: its write
/// outside the project fails (it ran unconfined before).
#[test]
fn a_gate_run_by_hand_in_a_confined_project_is_confined() {
    sandbox_tools();
    let env = one_step();
    let escaped = env.home.join("escaped-by-hand");
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!(
            "confined = true\n[gate]\ncommands = [\"touch {}\"]\n",
            escaped.display()
        ),
    )
    .unwrap();
    env.approve_config();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [x] **1** The one step\n",
    )
    .unwrap();
    env.commit_all("done, gated, confined");
    let out = env
        .ralph()
        .arg("complete")
        .assert()
        .code(1)
        .get_output()
        .clone();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(said.contains("the completion gate: `touch "), "{said}");
    assert!(!escaped.exists(), "the gate wrote $HOME: {said}");
    assert!(!env.project.join(".ralph/COMPLETE").exists());
}
