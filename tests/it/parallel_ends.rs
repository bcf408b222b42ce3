//! A parallel run always ends: a step is done only when its branch's
//! committed spec says so, a worker that did not start is not done, a step
//! given back to workers that run no session stops the run, `--max-time`
//! bounds the whole run, the run's budget holds any number of session
//! starts, and a resumed board has only the spec's steps, never more
//! workers than slots. Each run is bounded by the test's own deadline: a
//! run that spins fails the test instead of hanging it.

use std::fs;
use std::time::Duration;

use crate::parallel::{nothing_left, with_spec};
use crate::support::*;

/// Long enough for a few real sessions on a loaded machine; a run that
/// spins is stopped there and the test fails.
const BOUND: Duration = Duration::from_secs(150);

/// The run to its end (or the test's bound): its exit status, and its
/// stdout then stderr.
fn ended(run: Ralph) -> (Option<i32>, String) {
    let out = wait_output(run.spawn(), BOUND);
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

#[test]
fn a_run_starts_and_ends_with_more_session_starts_in_the_last_hour_than_a_page_holds() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let claude = stepping_stand_in(&env, "claude-steps");
    // A first run, one session: its record is what every start looks like.
    env.ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .stdout_with(4);
    let run = run_dir(&env);
    let text = fs::read_to_string(run.join("records.jsonl")).unwrap();
    let mut record: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    // 600 more sessions started in the last hour, as that run's records.
    let now = std::time::SystemTime::now();
    let mut more = text.clone();
    for i in 0..600u64 {
        let at = now - Duration::from_secs(3000 - i * 5);
        record["start"] = humantime::format_rfc3339_seconds(at).to_string().into();
        more.push_str(&format!("{record}\n"));
    }
    fs::write(run.join("records.jsonl"), more).unwrap();
    let (code, said) = ended(
        env.ralph()
            .args(["loop", "--parallel", "2", "--claude"])
            .arg(&claude),
    );
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("complete: all 2 steps done"), "{said}");
    nothing_left(&env);
}
