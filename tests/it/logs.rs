//! `ralph logs` as a user meets it: a run or a worktree that is not there,
//! a worktree with no loop, and `-f` started before its loop, waiting for
//! it, following it, and ended by Ctrl+C. Stand-in agents: the edge is
//! ralph's.

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::support::{Live, RESULT, TestEnv, project, run_id, stand_in};

/// What the stand-in session says.
const SAID: &str = "Working on it.";

/// A stand-in claude that waits `before`, says `SAID`, waits `after` and
/// ends with a result.
fn talker(env: &TestEnv, before: u32, after: u32) -> PathBuf {
    let text = serde_json::json!({"type": "assistant", "message": {"model": "m", "content": [
        {"type": "text", "text": SAID}
    ]}});
    stand_in(
        env,
        "talker",
        &format!("sleep {before}\necho '{text}'\nsleep {after}\necho '{RESULT}'"),
    )
}

fn waiting_line(dir: &std::path::Path) -> String {
    format!(
        "ralph logs: no loop is running in {} yet; waiting for one to start (Ctrl+C to stop)\n",
        dir.display()
    )
}

const A_WHILE: Duration = Duration::from_secs(60);

#[test]
fn logs_follow_started_before_the_loop_waits_for_it_and_follows_it() {
    let env = project();
    // Long enough a session that the follower's next look finds it running.
    let claude = talker(&env, 1, 1);
    let follow = Live::start(env.ralph().args(["logs", "-f"]));
    follow.wait_for("waiting for one to start", A_WHILE);
    env.ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .assert()
        .code(4);
    let (code, out, err) = follow.finish(A_WHILE);
    assert_eq!(
        (code, err.as_str()),
        (Some(0), waiting_line(&env.project).as_str()),
        "{out}"
    );
    let id = run_id(&env);
    assert!(
        out.starts_with(&format!("following run {id} (pid "))
            && out.ends_with(&format!("── ralph: session 1 ──\n{SAID}\n")),
        "{out}"
    );
}

#[test]
fn logs_follow_ends_on_ctrl_c_with_130_waiting_or_following() {
    let env = project();
    let waiting = Live::start(env.ralph().args(["logs", "-f"]));
    waiting.wait_for("Ctrl+C to stop", A_WHILE);
    // Several looks at the lock later (each a sleep), it has still said
    // so once.
    let slept = waiting.sleeps();
    assert!(crate::support::eventually(A_WHILE, || waiting.sleeps() >= slept + 5));
    waiting.signal(Signal::SIGINT);
    let (code, out, err) = waiting.finish(A_WHILE);
    assert_eq!(
        (code, out.as_str(), err),
        (Some(130), "", waiting_line(&env.project))
    );

    let claude = talker(&env, 0, 600);
    let running = Live::start(
        env.ralph()
            .args(["loop", "--max-iterations", "1", "--claude"])
            .arg(&claude),
    );
    running.wait_for("iteration 1/1", A_WHILE);
    let following = Live::start(env.ralph().args(["logs", "-f"]));
    following.wait_for(SAID, A_WHILE);
    following.signal(Signal::SIGINT);
    let (code, out, err) = following.finish(A_WHILE);
    assert_eq!((code, err.as_str()), (Some(130), ""), "{out}");
    // The loop itself is not the follower's to stop.
    running.signal(Signal::SIGTERM);
    assert_eq!(running.finish(A_WHILE).0, Some(130));
}

#[test]
fn logs_of_a_run_that_is_not_there_names_the_runs_that_are() {
    let env = project();
    let claude = talker(&env, 0, 0);
    env.ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .assert()
        .code(4);
    let id = run_id(&env);
    env.ralph().args(["logs", "--run", "nope"]).prints(
        1,
        "",
        &format!(
            "ralph logs: there is no run nope in {{project}}/.ralph/runs; the runs there, newest last: {id}\n"
        ),
    );
}

#[test]
fn logs_of_a_worktree_that_is_not_there_and_of_one_with_no_loop() {
    let env = project();
    let worktrees = env
        .project
        .parent()
        .unwrap()
        .join("project.ralph-worktrees");
    for args in [
        &["logs", "-f", "--worktree", "nosuch"][..],
        &["logs", "--worktree", "nosuch"],
    ] {
        env.ralph().args(args).prints(
            1,
            "",
            "ralph logs: there is no worktree nosuch ({project}.ralph-worktrees/nosuch); `ralph worktree list` lists the repository's worktrees\n",
        );
    }
    // A worktree that is there, with no loop yet: -f waits for one.
    let wt = worktrees.join("w");
    env.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "ralph/w",
        wt.to_str().unwrap(),
    ]);
    let waiting = Live::start(env.ralph().args(["logs", "-f", "--worktree", "w"]));
    waiting.wait_for("Ctrl+C to stop", A_WHILE);
    waiting.signal(Signal::SIGINT);
    let (code, out, err) = waiting.finish(A_WHILE);
    assert_eq!(
        (code, out.as_str(), err),
        (Some(130), "", waiting_line(&wt))
    );
}

/// A session that printed nothing (an agent that failed before a word)
/// says so in `logs`, with how it ended, rather than nothing at all.
#[test]
fn logs_of_a_session_that_printed_nothing_says_how_it_ended() {
    let env = project();
    let claude = stand_in(&env, "silent", "exit 3");
    env.ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .assert()
        .code(4);
    let out = env.ralph().arg("logs").stdout_with(0);
    let id = run_id(&env);
    assert_eq!(
        out,
        format!(
            "── ralph: run {id} · session 1 ──\n(session 1 printed nothing: it ended failed after 0s, exit code 3)\n"
        )
    );
}
