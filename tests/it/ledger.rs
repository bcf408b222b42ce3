//! One budget for the machine: every loop's sessions in one ledger of
//! ralph's state folder, held against the user's own `[budget]` (never a
//! project's config). Two loops in two projects, at once, with the real
//! Claude Code against the scripted API.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::*;

const A_WHILE: Duration = Duration::from_secs(240);

/// A second project beside the test's own, ten steps to do.
fn other_project(env: &TestEnv) -> PathBuf {
    let p = env.tmp.path().join("other");
    fs::create_dir_all(p.join(".ralph")).unwrap();
    env.git_in(&p, &["init", "-q", "-b", "main"]);
    env.git_in(&p, &["config", "user.email", "test@example.com"]);
    env.git_in(&p, &["config", "user.name", "Test"]);
    fs::write(p.join(".ralph/spec.md"), spec_of(10)).unwrap();
    fs::write(p.join(".ralph/prompt.md"), "Do the first open step.\n").unwrap();
    env.git_in(&p, &["add", "-A"]);
    env.git_in(&p, &["commit", "-qm", "start"]);
    p
}

/// `ralph budget --spent --json` (and its exit code).
fn spent(env: &TestEnv) -> (Value, i32) {
    let o = env.ralph().args(["budget", "--spent", "--json"]).assert();
    let o = o.get_output();
    (
        serde_json::from_slice(&o.stdout).unwrap(),
        o.status.code().unwrap(),
    )
}

fn loop_in(env: &TestEnv, dir: &Path) -> Ralph {
    ralph_loop(env)
        .current_dir(dir)
        .args(["--max-iterations", "10"])
}

#[test]
fn two_loops_in_two_projects_stop_together_at_the_users_machine_budget() {
    let env = steps_project(10);
    let other = other_project(&env);
    // No budget yet: said, with where it goes.
    let out = env.ralph().args(["budget", "--spent"]).stdout_with(0);
    assert!(out.contains("  nothing yet\n"), "{out}");
    let config = out
        .lines()
        .find_map(|l| l.strip_prefix("No budget: set one in [budget] of "))
        .and_then(|l| l.split(" (per_day").next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("where the budget goes: {out}"));
    for _ in 0..21 {
        env.api
            .session([Reply::bash(DO_STEP), Reply::text("Step done.")]);
    }
    // What one session costs here: the first one, in the ledger.
    ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    let (v, _) = spent(&env);
    let one = v["spent"]["usd_day"].as_f64().unwrap();
    assert!(one > 0.0, "{v:#}");
    // A budget of four and a half sessions, one already spent.
    let budget = one * 4.5;
    fs::create_dir_all(config.parent().unwrap()).unwrap();
    fs::write(&config, format!("[budget]\nper_day = {budget}\n")).unwrap();
    let a = Live::start(loop_in(&env, &env.project).arg("--resume"));
    let b = Live::start(loop_in(&env, &other));
    let (code_a, out_a, err_a) = a.finish(A_WHILE);
    let (code_b, out_b, err_b) = b.finish(A_WHILE);
    for (code, out, err) in [(code_a, &out_a, &err_a), (code_b, &out_b, &err_b)] {
        assert_eq!(code, Some(4), "{out}\n{err}");
        assert!(
            out.contains("the machine's budget is spent: every loop on this machine has spent $"),
            "{out}"
        );
        assert!(
            out.contains("`ralph loop --resume` goes on with this run once the machine's budget allows (`ralph budget --spent`)."),
            "{out}"
        );
    }
    let (v, code) = spent(&env);
    assert_eq!(code, 1, "the budget is spent: {v:#}");
    let total = v["spent"]["usd_day"].as_f64().unwrap();
    // Reached, and passed by no more than the sessions already running
    // when it was: one a loop, two at most.
    assert!(total >= budget, "{total} < {budget}");
    assert!(
        total <= budget + 2.0 * one + 1e-9,
        "{total} > {budget} + 2 x {one}"
    );
    println!(
        "budget ${budget:.4}: spent ${total:.4}, {:.1} sessions past it",
        (total - budget) / one
    );
    let days = v["days"].as_array().unwrap();
    let projects: Vec<&str> = days.iter().filter_map(|d| d["project"].as_str()).collect();
    assert_eq!(projects.len(), 2, "{v:#}");
    // A budget is the user's alone: a project's config cannot set one.
    fs::write(
        other.join(".ralph/config.toml"),
        "[budget]\nper_day = 1000\n",
    )
    .unwrap();
    let err = ralph_loop(&env).current_dir(&other).stderr_with(2);
    assert!(err.contains("budget"), "{err}");
}
