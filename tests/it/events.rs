//! The run's journal (`events.jsonl`): what a face reads of a run, line by
//! line, as a user or a script would; and a run from before the journal,
//! read through `status` as the same model.

use std::fs;

use serde_json::Value;

use crate::support::Reply;
use crate::support::*;
use crate::support::{one_step_with_gate, ralph_loop, run_dir};

/// Each line's kind, with a gate's verdict (`gate:failed`).
fn kinds(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| {
            let kind = l["kind"].as_str().unwrap().to_string();
            match l["passed"].as_bool() {
                Some(p) => format!("{kind}:{}", if p { "passed" } else { "failed" }),
                None => kind,
            }
        })
        .collect()
}

/// Two sessions: the first writes COMPLETE by hand and the loop's gate
/// sends it back, the second fixes it.
fn gated_run_to_complete() -> TestEnv {
    let env = one_step_with_gate("test -f fixed.txt");
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && echo done > .ralph/COMPLETE")),
        Reply::text("Step done."),
    ]);
    env.api.session([
        Reply::bash("touch fixed.txt && git add fixed.txt && git commit -qm fix && ralph complete -m 'done, checks pass'"),
        Reply::text("Fixed."),
    ]);
    ralph_loop(&env)
        .args(["--max-iterations", "5"])
        .assert()
        .code(0);
    env
}

#[test]
fn a_run_to_complete_journals_each_session_the_gate_and_its_end() {
    let env = gated_run_to_complete();
    let lines = events(&env);
    assert_eq!(
        kinds(&lines),
        [
            "run_started",
            "estimated",
            "session_started",
            "gate:failed",
            "session_ended",
            "session_started",
            "gate:passed",
            "session_ended",
            "complete",
        ],
        "{lines:#?}"
    );
    for l in &lines {
        assert_eq!(l["v"], 1, "{l}");
        assert!(l["at"].as_u64().unwrap() > 1_700_000_000_000, "{l}");
        assert!(l.get("worker").is_none(), "one loop, no worker: {l}");
    }
    // The estimate before the first session: one open step, no past yet.
    assert_eq!(lines[1]["steps"], 1, "{}", lines[1]);
    assert!(lines[1].get("estimate").is_none(), "{}", lines[1]);
    let lines: Vec<Value> = lines
        .into_iter()
        .filter(|l| l["kind"] != "estimated")
        .collect();
    let started = &lines[0];
    assert_eq!(started["mode"], "loop");
    assert_eq!(started["agent"], "claude");
    assert_eq!(started["limits"]["max_iterations"], 5);
    assert_eq!(
        started["run_id"].as_str().unwrap(),
        run_dir(&env).file_name().unwrap().to_str().unwrap()
    );
    assert_eq!(
        (lines[1]["session"].clone(), lines[4]["session"].clone()),
        (1.into(), 2.into())
    );
    let failed = &lines[2];
    assert_eq!(failed["failed"], "test -f fixed.txt");
    assert_eq!(failed["why"], "exit status 1");
    assert!(failed["duration_s"].as_f64().unwrap() >= 0.0);
    let ended = &lines[3];
    assert_eq!(ended["session"], 1);
    assert_eq!(ended["outcome"]["kind"], "ok");
    assert!(ended["tokens"]["output"].as_u64().unwrap() > 0, "{ended}");
    assert!(ended["cost_usd"].as_f64().is_some(), "{ended}");
    assert!(ended["duration_s"].as_f64().unwrap() > 0.0, "{ended}");
    assert_eq!(lines[7]["reason"], summary(&env)["reason"]);
    // What the terminal's lines said, kept with them: where the run stood
    // as each session began, and what it came to.
    let standing = &lines[1]["standing"];
    assert_eq!(standing["max_iterations"], 5, "{standing}");
    assert_eq!(standing["spec"], "0/1", "{standing}");
    let totals = &lines[7]["totals"];
    let s = summary(&env);
    for field in [
        "iterations",
        "sessions",
        "cost_usd",
        "tokens",
        "commits",
        "spec",
    ] {
        assert_eq!(totals[field], s[field], "{field}: {totals} against {s}");
    }
}

#[test]
fn a_run_that_stops_for_a_human_ends_its_journal_waiting_with_why() {
    let env = one_step_project();
    env.api.session([
        Reply::bash("ralph waiting --reason 'the staging password is needed'"),
        Reply::text("Asked for help."),
    ]);
    ralph_loop(&env)
        .args(["--max-iterations", "3"])
        .assert()
        .code(3);
    let lines = events(&env);
    assert_eq!(
        kinds(&lines),
        [
            "run_started",
            "estimated",
            "session_started",
            "session_ended",
            "waiting"
        ],
        "{lines:#?}"
    );
    let end = &lines[4];
    assert_eq!(end["outcome"], "waiting");
    assert!(
        end["reason"]
            .as_str()
            .unwrap()
            .contains("the staging password is needed"),
        "{end}"
    );
}

#[test]
fn a_run_from_before_the_journal_reads_the_same_through_status_and_watch() {
    let env = gated_run_to_complete();
    let status = |env: &TestEnv| -> Value { env.ralph().args(["status", "--json"]).json_with(0) };
    let watch = |env: &TestEnv| -> Value {
        let rows: Value = env.ralph().args(["watch", "--once", "--json"]).json_with(0);
        rows[0].clone()
    };
    let (with_journal, row) = (status(&env), watch(&env));
    assert_eq!(with_journal["gate"]["passed"], true, "{with_journal}");
    assert_eq!(row["gate"], true, "{row}");
    // The run as an older ralph left it: records, state, summary, no journal.
    fs::remove_file(run_dir(&env).join("events.jsonl")).unwrap();
    let old = status(&env);
    assert_eq!(old, with_journal);
    assert_eq!(watch(&env), row);
    // A journal with a line of a later ralph's is read around it.
    fs::write(
        run_dir(&env).join("events.jsonl"),
        "{\"v\":1,\"at\":1,\"kind\":\"teleported\"}\n",
    )
    .unwrap();
    let later = status(&env);
    assert!(later["gate"].is_null(), "{later}");
    assert_eq!(later["last_run"], with_journal["last_run"]);
}

#[test]
fn a_parallel_runs_journal_names_the_worker_of_each_session_and_merge() {
    let env = crate::parallel::with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let work = "echo \"$RALPH_STEP\" > \"step-$RALPH_STEP.txt\" && \
                sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && \
                git add -A && git commit -qm \"step $RALPH_STEP\"";
    for _ in 0..2 {
        env.api
            .session([Reply::bash(work), Reply::text("Step done.")]);
    }
    ralph_loop(&env)
        .args(["--parallel", "2", "--max-iterations", "4"])
        .assert()
        .code(0);
    let lines = events(&env);
    assert_eq!(lines[0]["kind"], "run_started", "{lines:#?}");
    assert_eq!(lines[0]["mode"], "parallel");
    // The run's own end: the last line, no worker's.
    let last = lines.last().unwrap();
    assert_eq!(
        (last["kind"].as_str(), last.get("worker")),
        (Some("complete"), None)
    );
    // Each worker's session, adopted from its journal, named by it.
    let by = |kind: &str| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = lines
            .iter()
            .filter(|l| l["kind"] == kind)
            .map(|l| {
                let s = |k: &str| l[k].as_str().unwrap_or("-").to_string();
                (s("worker"), s("step"))
            })
            .collect();
        v.sort();
        v
    };
    let ended = by("session_ended");
    assert_eq!(ended.len(), 2, "{lines:#?}");
    assert_ne!(ended[0].0, ended[1].0, "two workers: {ended:?}");
    assert!(
        ended
            .iter()
            .all(|(w, s)| w.starts_with('w') && s.contains("**")),
        "{ended:?}"
    );
    // Each merge names its step and the worker whose branch it was.
    assert_eq!(by("merged"), ended, "{lines:#?}");
    // A worker's own end is its, not the run's.
    let workers_ends = by("stopped");
    assert_eq!(workers_ends, ended, "{lines:#?}");
    assert!(
        lines
            .iter()
            .filter(|l| l["kind"] == "stopped")
            .all(|l| l["outcome"] == "step-done"),
        "{lines:#?}"
    );
}
