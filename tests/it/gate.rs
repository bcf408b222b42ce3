//! The completion gate: the project's own checks decide whether COMPLETE
//! holds. Real client where a session reads and fixes a failure; stand-ins
//! where the edge is the loop's.

use std::fs;

use predicates::prelude::*;
use serde_json::Value;

use crate::support::Reply;
use crate::support::*;
use crate::support::{RESULT, project, ralph_loop, records, run_dir, stand_in, summary};

#[test]
fn a_failing_gate_sends_the_work_back_and_the_next_session_fixes_it() {
    let env = one_step_with_gate("test -f fixed.txt");
    // Session 1 does the step and claims completion; the gate refuses.
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && ralph complete -m 'done'")),
        Reply::text("Step done."),
    ]);
    // Session 2 reads what failed, fixes it, and completes.
    env.api.session([
        Reply::bash("cat .ralph/gate-failed.md"),
        Reply::bash("touch fixed.txt && git add fixed.txt && git commit -qm fix && ralph complete -m 'done, checks pass'"),
        Reply::text("Fixed."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "5"])
        .stdout_with(0);
    assert!(out.contains("the gate passed"), "{out}");
    assert!(
        out.contains("complete: its one step done · 2 iterations"),
        "{out}"
    );
    assert_eq!(records(&env).len(), 2, "exactly two sessions");

    // What session 1's `ralph complete` said, and what session 2 read.
    let turns = env.api.turns();
    let session_ids: Vec<_> = turns.iter().filter_map(|t| t.session_id.clone()).collect();
    let second = turns
        .iter()
        .filter(|t| t.session_id.as_ref() == session_ids.last())
        .map(|t| t.body.to_string())
        .collect::<String>();
    assert!(
        second.contains("The completion gate failed")
            && second.contains("`test -f fixed.txt` failed (exit status 1)"),
        "session 2 read the failure: {second}"
    );
    assert!(
        !env.project.join(".ralph/gate-failed.md").exists(),
        "removed once the gate passed"
    );
    assert!(run_dir(&env).join("gate-001.log").exists());
    assert_eq!(summary(&env)["gate"]["passed"], true);
    let status: Value = env.ralph().args(["status", "--json"]).json_with(0);
    assert_eq!(status["gate"]["passed"], true, "{status}");
    assert!(status["gate"]["time"].is_string(), "{status}");
}

#[test]
fn a_gate_given_on_the_command_line_is_run_by_a_sessions_ralph_complete() {
    let env = one_step_project();
    // Session 1 does the step and runs `ralph complete`: the loop's gate,
    // given only with --gate, refuses it there and then (before, the
    // session's `ralph complete` knew only [gate] in config.toml).
    env.api.session([
        Reply::bash(format!(
            "{CHECK_THE_BOX} && ralph complete -m done; echo \"complete exited $?\"; ls .ralph"
        )),
        Reply::text("Step done."),
    ]);
    env.api.session([
        Reply::bash("touch fixed.txt && git add fixed.txt && git commit -qm fix && ralph complete -m 'done, checks pass'"),
        Reply::text("Fixed."),
    ]);
    let out = ralph_loop(&env)
        .args([
            "--max-iterations",
            "5",
            "--gate",
            "test -f fixed.txt",
            "--gate-baseline",
            "off",
        ])
        .stdout_with(0);
    assert!(
        out.contains("complete: its one step done · 2 iterations"),
        "{out}"
    );
    let first = records(&env)[0]["stream_file"]
        .as_str()
        .unwrap()
        .to_string();
    let stream = fs::read_to_string(first).unwrap();
    assert!(
        stream.contains("the completion gate: `test -f fixed.txt` failed (exit status 1)")
            && stream.contains("complete exited 1"),
        "session 1's `ralph complete` ran the loop's gate: {stream}"
    );
    // Its box checked, the loop judged the step at once too (the gate
    // refused it again), and session 2 was told why.
    assert!(
        out.contains("with no COMPLETE written: judging it now")
            && out.matches("COMPLETE rejected").count() == 1,
        "{out}"
    );
}

#[test]
fn a_gate_that_never_passes_ends_the_loop_at_its_limit_and_hand_written_completes_are_gated() {
    let env = project();
    // Every box checked, so only the gate can refuse.
    fs::write(env.project.join(".ralph/spec.md"), "- [x] **1** done\n").unwrap();
    env.git(&["commit", "-qam", "all checked"]);
    // Every box is checked, so the loop writes COMPLETE and runs the gate
    // before any session (failure 1). Each session then (the real client)
    // changes something and writes COMPLETE by hand, past `ralph complete`.
    for _ in 0..2 {
        env.api.session([
            Reply::bash("echo x >> work.txt && printf 'done, trust me\\n' > .ralph/COMPLETE"),
            Reply::text("All done, trust me."),
        ]);
    }
    let out = env
        .ralph()
        .args([
            "loop",
            "--gate",
            "echo the build is broken >&2; exit 7",
            "--gate-baseline",
            "off",
            "--claude",
        ])
        .arg(crate::support::claude_bin())
        .stdout_with(1);
    assert!(
        out.contains("the gate failed: `echo the build is broken >&2; exit 7` failed (exit status 7)")
            && out.contains(
                "failed: the completion gate failed 3 times in a row: `echo the build is broken >&2; exit 7` failed (exit status 7)",
            ),
        "{out}"
    );
    // Its output shown once a failure (it was twice: again as COMPLETE was set aside).
    assert_eq!(out.matches("| the build is broken").count(), 3, "{out}");
    assert_eq!(records(&env).len(), 2);
    let fb = fs::read_to_string(env.project.join(".ralph/gate-failed.md")).unwrap();
    assert!(fb.contains("the build is broken"), "{fb}");
    for (n, wrote) in [
        (1, "every step was already checked"),
        (2, "done, trust me"),
        (3, "done, trust me"),
    ] {
        let aside =
            fs::read_to_string(run_dir(&env).join(format!("COMPLETE.rejected-{n}"))).unwrap();
        assert!(
            aside.contains(wrote) && aside.contains("the completion gate"),
            "{aside}"
        );
    }
    assert_eq!(summary(&env)["gate"]["passed"], false);

    // A COMPLETE already there when the loop starts is checked too: with a
    // passing gate it is accepted without a session.
    fs::write(env.project.join(".ralph/COMPLETE"), "done by hand\n").unwrap();
    env.ralph()
        .args(["loop", "--gate", "true", "--claude"])
        .arg(crate::support::claude_bin())
        .assert()
        .code(0)
        .stdout(
            predicate::str::contains("COMPLETE is there").and(predicate::str::contains(
                "complete: its one step done · 0 iterations",
            )),
        );
    assert!(!env.project.join(".ralph/gate-failed.md").exists());
}

#[test]
fn with_when_each_every_session_that_changed_something_is_checked() {
    let env = project();
    env.approved_config(
        "[gate]\ncommands = [\"test -f ok.txt\"]\nwhen = \"each\"\nbaseline = \"off\"\n",
    );
    let count = env.tmp.path().join("count");
    let claude = stand_in(
        &env,
        "two-sessions",
        &format!(
            "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}\n\
             echo x >> work.txt\nif [ $n = 2 ]; then test -f .ralph/gate-failed.md && touch ok.txt; fi\n\
             echo '{RESULT}'",
            c = count.display()
        ),
    );
    env.ralph()
        .args(["loop", "--max-iterations", "2", "--claude"])
        .arg(&claude)
        .assert()
        .code(4);
    let recs = records(&env);
    assert_eq!(recs[0]["gate"]["passed"], false, "{}", recs[0]);
    assert_eq!(
        recs[1]["gate"]["passed"], true,
        "session 2 read the failure and fixed it"
    );
    assert!(!env.project.join(".ralph/gate-failed.md").exists());
}

#[test]
fn read_only_commands_never_run_gate_commands() {
    let env = project();
    let marker = env.tmp.path().join("gate-ran");
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!("[gate]\ncommands = [\"touch {}\"]\n", marker.display()),
    )
    .unwrap();
    for cmd in ["status", "doctor", "verify-sync", "budget"] {
        env.ralph().arg(cmd).assert();
    }
    env.ralph().arg("doctor").assert().stdout(
        predicate::str::contains("gate").and(predicate::str::contains("COMPLETE must pass `touch")),
    );
    assert!(!marker.exists(), "a read-only command ran a gate command");
    // And complete runs it (after the spec check passes; here it does not).
    env.ralph().arg("complete").assert().code(1);
    assert!(!marker.exists());
}

#[test]
fn a_session_that_deletes_a_protected_test_cannot_complete() {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** The one step\n",
    )
    .unwrap();
    fs::create_dir_all(env.project.join("tests")).unwrap();
    fs::write(env.project.join("tests/check.sh"), "exit 1\n").unwrap();
    env.approved_config("[gate]\ncommands = [\"sh tests/check.sh\"]\nprotect = [\"tests/**\"]\n");
    env.commit_all("protected tests");
    // The failing test deleted: `ralph complete` says so at once; COMPLETE
    // written by hand instead is refused by the loop, which stops for a human.
    env.api.session([
        Reply::bash(format!(
            "git rm -q tests/check.sh && {CHECK_THE_BOX} && ralph complete -m done; echo \"complete exited $?\""
        )),
        Reply::bash("printf 'done\\n' > .ralph/COMPLETE"),
        Reply::text("Done."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "3"])
        .stdout_with(3);
    let stream = fs::read_to_string(records(&env)[0]["stream_file"].as_str().unwrap()).unwrap();
    assert!(
        stream.contains("refused: protected files changed since the run began:")
            && stream.contains("D tests/check.sh")
            && stream.contains("complete exited 1"),
        "{stream}"
    );
    assert!(out.contains("COMPLETE rejected"), "{out}");
    let waiting = fs::read_to_string(env.project.join(".ralph/WAITING")).unwrap();
    assert!(
        waiting.contains(
            "protected files changed since the run began (protected: D tests/check.sh; in commit "
        ) && waiting.contains("revert them"),
        "{waiting}"
    );
    assert!(
        env.ralph()
            .arg("status")
            .stdout_with(0)
            .contains("protected: D tests/check.sh (since the run began)\n")
    );
    assert_eq!(records(&env).len(), 1, "no session after it");
}

/// A listening Unix socket at `path` that touches `mark` when anything
/// connects to it (a stand-in for an agent, a bus or a daemon of the host).
fn listener(path: &std::path::Path, mark: &std::path::Path) -> std::process::Child {
    let child = std::process::Command::new("socat")
        .arg(format!("UNIX-LISTEN:{},fork", path.display()))
        .arg(format!("SYSTEM:touch {}", mark.display()))
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("socat (apt-get install socat)");
    assert!(
        eventually(std::time::Duration::from_secs(10), || path.exists()),
        "socat never listened at {}",
        path.display()
    );
    child
}

fn connect(path: &std::path::Path) -> bool {
    std::process::Command::new("socat")
        .args(["-u", "OPEN:/dev/null"])
        .arg(format!("UNIX-CONNECT:{}", path.display()))
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_confined_gate_reaches_no_socket_of_the_host() {
    sandbox_tools();
    tmux_tool();
    let env = one_step_with_gate("sh check.sh");
    let marks = env.tmp.path().join("marks");
    fs::create_dir_all(&marks).unwrap();
    // A socket in /tmp, one in your real home (outside /tmp and /run), and a
    // real tmux server, which runs whatever a client asks.
    let in_tmp = env.tmp.path().join("agent.sock");
    let home_dir = std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(format!(
        ".cache/ralph-test/gate-sock-{}",
        std::process::id()
    ));
    fs::create_dir_all(&home_dir).unwrap();
    let in_home = home_dir.join("agent.sock");
    let _ = fs::remove_file(&in_home);
    let mut listeners = [
        listener(&in_tmp, &marks.join("tmp")),
        listener(&in_home, &marks.join("home")),
    ];
    let tmux_sock = env.tmp.path().join("tmux-sock");
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .arg("-S")
            .arg(&tmux_sock)
            .args(args)
            .env_remove("TMUX")
            .status()
            .unwrap()
    };
    assert!(tmux(&["new-session", "-d", "-s", "t", "sleep 600"]).success());
    let check = format!(
        "tmux -S \"${{TMUX%%,*}}\" run-shell 'touch {m}/tmux'\n\
         socat -u OPEN:/dev/null UNIX-CONNECT:\"$SSH_AUTH_SOCK\"\n\
         socat -u OPEN:/dev/null UNIX-CONNECT:{tmp}\n\
         socat -u OPEN:/dev/null UNIX-CONNECT:{home}\n\
         env > gate-env.txt\n\
         exit 0\n",
        m = marks.display(),
        tmp = in_tmp.display(),
        home = in_home.display(),
    );
    env.api.session([
        Reply::bash(format!(
            "printf '%s' {} > check.sh && git add check.sh && {CHECK_THE_BOX} && ralph complete -m done",
            shell_words::quote(&check)
        )),
        Reply::text("Done."),
    ]);
    let out = ralph_loop(&env)
        .env("TMUX", format!("{},1,0", tmux_sock.display()))
        .env("SSH_AUTH_SOCK", &in_home)
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            format!("unix:path={}", in_tmp.display()),
        )
        .args(["--confined", "--max-iterations", "2"])
        .stdout_with(0);
    let seen = fs::read_to_string(env.project.join("gate-env.txt")).unwrap_or_default();
    let ran: Vec<String> = fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // The same sockets do answer outside: the test tests something.
    let reachable = [connect(&in_tmp), connect(&in_home)];
    let tmux_runs = tmux(&["run-shell", &format!("touch {}/outside", marks.display())]).success();
    let _ = tmux(&["kill-server"]);
    for l in &mut listeners {
        let _ = l.kill();
        let _ = l.wait();
    }
    let _ = fs::remove_dir_all(&home_dir);
    assert!(
        ran.is_empty(),
        "the gate reached the host through {ran:?}\n{out}"
    );
    assert!(
        out.contains("gate: sh check.sh") && out.contains("the gate passed") && !seen.is_empty(),
        "{out}"
    );
    for var in ["TMUX=", "SSH_AUTH_SOCK=", "DBUS_SESSION_BUS_ADDRESS="] {
        assert!(!seen.lines().any(|l| l.starts_with(var)), "{var} in {seen}");
    }
    assert_eq!(reachable, [true, true]);
    assert!(tmux_runs && marks.join("outside").exists());
}

/// A project a run finished: `ralph loop` again says so and how to go on,
/// and runs nothing: no session, no gate, no review (it used to run the
/// gate and start a paid review of an empty diff). The gate runs again
/// when asked, with `ralph complete`.
#[test]
fn a_finished_project_is_already_complete_and_runs_nothing() {
    let runs = tempfile::NamedTempFile::new().unwrap();
    let env = one_step_with_gate(&format!("echo ran >> {}", runs.path().display()));
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Step done."),
    ]);
    ralph_loop(&env).stdout_with(0);
    let gate_runs = || fs::read_to_string(runs.path()).unwrap().lines().count();
    let (gated, turns) = (gate_runs(), env.api.turns().len());
    let first = run_dir(&env);
    let out = ralph_loop(&env)
        .args(["--review", "complete"])
        .stdout_with(0);
    let id = first.file_name().unwrap().to_string_lossy();
    assert!(
        out.contains(&format!(", accepted by run {id}; nothing to do. More work: `ralph add \"<step>\"` (then `ralph loop`); the project's checks again: `ralph complete`; start over: `ralph reset`.")),
        "{out}"
    );
    assert!(!out.contains("review"), "{out}");
    assert_eq!((gate_runs(), env.api.turns().len()), (gated, turns));
    assert_eq!(run_dir(&env), first, "no new run");
    env.ralph().args(["complete"]).assert().code(0);
    assert_eq!(gate_runs(), gated + 1, "asked for, the gate runs");
}
