//! Answering a loop: a real Claude Code session asks a question with
//! `ralph waiting --question ... --option ...`; the loop waits for an
//! answer (`--wait-for-answer`) or ends as before; `ralph answer` from
//! another terminal; the next session is handed the answer; and what a
//! session or a hostile answer cannot do.

use std::fs;
use std::time::Duration;

use serde_json::Value;

use crate::support::*;
use crate::support::{Live, Reply};

pub(crate) const ASK: &str = "ralph waiting --question 'Which database should the app use?' \
    --option Postgres --option 'SQLite, for now' --blocker decision";

const A_WHILE: Duration = Duration::from_secs(120);

/// A one-step project whose first session asks `ASK` and whose second does
/// the step; the loop started with `--wait-for-answer 10m`, waiting.
pub(crate) fn a_loop_waiting_for_an_answer() -> (TestEnv, Live) {
    let env = one_step_project();
    env.api.session([Reply::bash(ASK), Reply::text("Asked.")]);
    env.api.session([
        Reply::bash(CHECK_THE_BOX),
        Reply::text("Done, with SQLite."),
    ]);
    let live =
        Live::start(ralph_loop(&env).args(["--wait-for-answer", "10m", "--max-iterations", "5"]));
    live.wait_for("waiting up to 10m for an answer", A_WHILE);
    (env, live)
}

/// A one-step project whose first session asked `ASK`, its loop ended for
/// a human (exit 3), as a loop without `--wait-for-answer` does.
pub(crate) fn a_loop_that_asked_and_ended() -> TestEnv {
    let env = one_step_project();
    env.api.session([Reply::bash(ASK), Reply::text("Asked.")]);
    ralph_loop(&env)
        .args(["--max-iterations", "5"])
        .assert()
        .code(3);
    env
}

#[test]
fn a_sessions_question_is_answered_from_another_terminal_and_the_same_run_goes_on() {
    let (env, live) = a_loop_waiting_for_an_answer();
    // Where the user looks: status says the question, its options and how
    // to answer.
    let status = env.ralph().arg("status").stdout_with(0);
    for part in [
        "Which database should the app use?",
        "1. Postgres",
        "2. SQLite, for now",
        "ralph answer --option <1-2>",
    ] {
        assert!(status.contains(part), "{part}: {status}");
    }
    let out = env.ralph().args(["answer", "--option", "2"]).stdout_with(0);
    assert!(
        out.starts_with("Answered: option 2: SQLite, for now\nThe loop (run "),
        "{out}"
    );
    let (code, out, err) = live.finish(A_WHILE);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("  Which database should the app use?\n")
            && out.contains("    2. SQLite, for now\n")
            && out.contains("answered by terminal: option 2: SQLite, for now; the run goes on\n"),
        "{out}"
    );
    // The next session was told, first, the question and the answer.
    let second = told(&env, 2);
    assert!(
        second.contains("# A human answered the question this run asked\n")
            && second.contains("The answer (option 2):\n\n> SQLite, for now\n"),
        "{second}"
    );
    assert!(!told(&env, 1).contains("A human answered"));
    // One run, its journal saying who answered what.
    let lines = events(&env);
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "run_started").count(),
        1,
        "{kinds:?}"
    );
    let asked = lines.iter().find(|l| l["kind"] == "asked").unwrap();
    assert_eq!(asked["question"]["options"][1], "SQLite, for now");
    assert_eq!(asked["question"]["blocker"], "decision");
    let answered = lines.iter().find(|l| l["kind"] == "answered").unwrap();
    assert_eq!(answered["by"], "terminal");
    assert_eq!(answered["answer"]["option"], 2);
    assert_eq!(*kinds.last().unwrap(), "complete");
    assert!(!env.project.join(".ralph/WAITING").exists());
    assert!(!env.project.join(".ralph/answer.md").exists());
}

#[test]
fn without_wait_for_answer_the_run_ends_as_before_and_resume_takes_the_answer() {
    let env = a_loop_that_asked_and_ended();
    let out = env
        .ralph()
        .args(["answer", "Postgres, and say why in progress.md"])
        .stdout_with(0);
    assert!(
        out.contains("No loop is running in ")
            && out.ends_with(": `ralph loop --resume` goes on with this answer.\n"),
        "{out}"
    );
    // An option the question does not offer is refused, naming them.
    let err = env.ralph().args(["answer", "--option", "3"]).stderr_with(2);
    assert!(
        err.contains("--option 3: option 3 is not one of the question's (1 to 2)"),
        "{err}"
    );
    env.api.session([
        Reply::bash(CHECK_THE_BOX),
        Reply::text("Done, with Postgres."),
    ]);
    let out = ralph_loop(&env).arg("--resume").stdout_with(0);
    assert!(
        out.contains("answered by terminal: Postgres, and say why in progress.md; the run goes on"),
        "{out}"
    );
    assert!(
        told(&env, 2).contains("The answer:\n\n> Postgres, and say why in progress.md\n"),
        "{}",
        told(&env, 2)
    );
}

#[test]
fn no_answer_in_time_ends_the_run_waiting_as_before() {
    let env = one_step_project();
    env.api.session([Reply::bash(ASK), Reply::text("Asked.")]);
    let out = ralph_loop(&env)
        .args(["--wait-for-answer", "1s", "--max-iterations", "5"])
        .stdout_with(3);
    assert!(out.contains("no answer came within 1s\n"), "{out}");
    assert!(env.project.join(".ralph/WAITING").exists());
    let end = events(&env).pop().unwrap();
    assert_eq!(end["kind"], "waiting", "{end}");
}

/// The channel is the user's: a session's `ralph answer` is refused, and
/// the loop does not take an answer the session wrote itself.
#[test]
fn a_session_cannot_answer_its_own_question() {
    let env = one_step_project();
    env.api.session([
        Reply::bash(format!(
            "{ASK}; ralph answer --option 1 > answered.txt 2>&1; echo \"exit $?\" >> answered.txt"
        )),
        Reply::text("Asked, and tried to answer."),
    ]);
    let out = ralph_loop(&env)
        .args(["--wait-for-answer", "2s", "--max-iterations", "5"])
        .stdout_with(3);
    let tried = fs::read_to_string(env.project.join("answered.txt")).unwrap();
    assert!(
        tried.contains("refused inside a loop's session") && tried.ends_with("exit 2\n"),
        "{tried}"
    );
    assert!(out.contains("no answer came within 2s"), "{out}");
}

/// An answer is text from outside: its escapes never reach the terminal
/// or the session as escapes, and a huge one is cut.
#[test]
fn a_hostile_answer_is_bounded_and_shown_without_its_escapes() {
    let env = a_loop_that_asked_and_ended();
    let hostile = format!("yes\u{1b}]0;PWNED\u{7}\u{1b}[2J{}", "x".repeat(100_000));
    let out = env.ralph().args(["answer", &hostile]).stdout_with(0);
    assert!(!out.contains('\u{1b}'), "{out:?}");
    env.api
        .session([Reply::bash(CHECK_THE_BOX), Reply::text("Done.")]);
    let out = ralph_loop(&env).arg("--resume").stdout_with(0);
    assert!(!out.contains('\u{1b}'), "{out:?}");
    let second = told(&env, 2);
    assert!(
        !second.contains('\u{1b}') && second.contains("> yes]0;PWNED[2Jxxx"),
        "{}",
        &second[..300.min(second.len())]
    );
    assert!(second.len() < 20_000, "{}", second.len());
}

/// `ralph stop` from another terminal ends the running session as Ctrl+C
/// does: the run is interrupted, resumable, and says who stopped it.
#[test]
fn ralph_stop_ends_the_running_session_now_and_the_run_stays_resumable() {
    let env = one_step_project();
    env.api.session([
        Reply::bash("python3 -c 'import time; time.sleep(60)'"),
        Reply::text("Slept."),
    ]);
    let live = Live::start(ralph_loop(&env).args(["--max-iterations", "3"]));
    live.wait_for("Bash: python3 -c", A_WHILE);
    let out = env.ralph().arg("stop").stdout_with(0);
    assert!(
        out.starts_with("Sent to the loop (run ") && out.ends_with("): stop now.\n"),
        "{out}"
    );
    let (code, out, err) = live.finish(A_WHILE);
    assert_eq!(code, Some(130), "{out}\n{err}");
    assert!(out.contains("ralph stop (sent by terminal)"), "{out}");
    let lines = events(&env);
    let commanded = lines.iter().find(|l| l["kind"] == "commanded").unwrap();
    assert_eq!(commanded["by"], "terminal");
    assert_eq!(commanded["command"]["kind"], "stop");
    assert_eq!(lines.last().unwrap()["outcome"], "interrupted");
    // Nothing runs now: a stop is refused, not kept for the next loop.
    let err = env.ralph().arg("stop").stderr_with(1);
    assert!(err.contains("no loop is running in "), "{err}");
}

/// `ralph stop --after-session` lets the session finish and starts no
/// other; `ralph raise` takes the run past its limit.
#[test]
fn stop_after_the_session_and_a_raised_limit_are_taken_between_sessions() {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n",
    )
    .unwrap();
    env.commit_all("three steps");
    let one = "sleep 3; sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && git commit -qam step";
    for _ in 0..3 {
        env.api
            .session([Reply::bash(one), Reply::text("One step.")]);
    }
    // A limit of one session, raised by two while the first runs.
    let live = Live::start(ralph_loop(&env).args(["--max-iterations", "1"]));
    live.wait_for("Bash: sleep 3", A_WHILE);
    let out = env
        .ralph()
        .args(["raise", "--iterations", "2"])
        .stdout_with(0);
    assert!(out.ends_with(": raise --max-iterations by 2.\n"), "{out}");
    live.wait_for("iteration 2/3", A_WHILE);
    let out = env.ralph().args(["stop", "--after-session"]).stdout_with(0);
    assert!(out.ends_with(": stop after this session.\n"), "{out}");
    let (code, out, err) = live.finish(A_WHILE);
    assert_eq!(code, Some(130), "{out}\n{err}");
    assert!(
        out.contains("raise --max-iterations by 2 (sent by terminal)")
            && out.contains("stop after this session, sent by terminal"),
        "{out}"
    );
    // Two sessions ran: the raised limit's second, and no third.
    assert_eq!(summary(&env)["iterations"], 2, "{out}");
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert_eq!(spec.matches("- [x]").count(), 2, "{spec}");
    // Kept for the run: resumed, it goes on under the raised limit.
    let saved: Value =
        serde_json::from_str(&fs::read_to_string(run_dir(&env).join("state.json")).unwrap())
            .unwrap();
    assert_eq!(saved["limits"]["max_iterations"], 3, "{saved}");
    // And so it goes: `--resume` takes the run's third session, the one the
    // raise allowed, though it was started with `--max-iterations 1`.
    let out = ralph_loop(&env).arg("--resume").stdout_with(0);
    assert!(out.contains("iteration 3/3"), "{out}");
    assert!(out.contains("complete: all 3 steps done"), "{out}");
}

/// A session that writes WAITING itself, hostile: escapes, NUL bytes and
/// megabytes in its question and options. The run still stops for a human
/// and waits; what it shows, journals and hands on is bounded and without
/// an escape.
#[test]
fn a_hostile_question_written_by_a_session_is_bounded_and_shown_without_its_escapes() {
    for size in [100_000usize, 10 << 20] {
        let env = one_step_project();
        let write = format!(
            "python3 -c \"import sys; open('.ralph/WAITING','w').write('blocker: decision\\noption: A\\x1b]0;PWNED\\x07\\noption: B\\x00B\\n\\nWhich\\x1b[2J one?\\x00' + 'q' * {size})\""
        );
        env.api.session([Reply::bash(write), Reply::text("Asked.")]);
        let o = ralph_loop(&env)
            .args(["--wait-for-answer", "2s", "--max-iterations", "3"])
            .assert();
        let o = o.get_output();
        let (code, out, err) = (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        );
        assert_eq!(code, Some(3), "{size}: {out}\n{err}");
        assert!(
            !out.contains('\u{1b}') && !out.contains('\0') && !err.contains('\u{1b}'),
            "{size}: {out:?}"
        );
        assert!(out.len() < 40_000, "{size}: {} bytes said", out.len());
        assert!(out.contains("no answer came within 2s"), "{size}: {out}");
        let journal = fs::read_to_string(run_dir(&env).join("events.jsonl")).unwrap();
        assert!(journal.len() < 100_000, "{size}: {} bytes", journal.len());
        assert!(!journal.contains('\u{1b}'), "{size}: escapes kept escaped");
        let status = env.ralph().arg("status").stdout_with(0);
        assert!(
            !status.contains('\u{1b}') && status.len() < 40_000,
            "{size}"
        );
    }
}
