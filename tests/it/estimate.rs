//! The estimate of the open steps, before anything is spent: drawn from
//! what past steps cost (the real Claude Code's sessions against the
//! scripted API, whose cost grows with each request), checked against
//! the distribution those steps were drawn from.

use std::fs;
use std::time::Duration;

use serde_json::Value;

use crate::support::*;

/// How many requests beyond the first a past step's session made: its
/// known distribution, (extra requests, probability).
const EXTRA: [(usize, f64); 4] = [(1, 0.4), (2, 0.3), (3, 0.2), (4, 0.1)];

/// 30 draws from `EXTRA`, by a fixed-seed generator: the past the
/// estimate learns from.
fn drawn() -> Vec<usize> {
    let mut x: u64 = 0x5EED_1234_ABCD_0042;
    (0..30)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let mut acc = 0.0;
            EXTRA
                .iter()
                .find(|(_, p)| {
                    acc += p;
                    u < acc
                })
                .map_or(EXTRA[3].0, |e| e.0)
        })
        .collect()
}

/// The median of the cost of `n` steps whose extra requests follow
/// `EXTRA`, a step with `k` extra requests costing `cost[k]`: exact, over
/// every combination.
fn true_median(n: u32, cost: &[f64; 5]) -> f64 {
    let mut dist: Vec<(f64, f64)> = vec![(0.0, 1.0)];
    for _ in 0..n {
        dist = dist
            .iter()
            .flat_map(|&(c, p)| EXTRA.iter().map(move |&(k, q)| (c + cost[k], p * q)))
            .collect();
    }
    dist.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut acc = 0.0;
    dist.iter()
        .find(|(_, p)| {
            acc += p;
            acc >= 0.5
        })
        .unwrap()
        .0
}

fn estimate_json(env: &TestEnv) -> Value {
    serde_json::from_str(&env.ralph().args(["estimate", "--json"]).stdout_with(0)).unwrap()
}

#[test]
fn the_estimate_of_the_open_steps_is_drawn_from_past_steps_and_near_the_truth() {
    let env = steps_project(30);
    // No past yet: said, and nothing made up.
    let out = env.ralph().arg("estimate").stdout_with(0);
    assert_eq!(
        out,
        "claude: 30 open steps; no past steps of this agent and model to estimate from yet (ralph keeps what each step costs, from this run on).\n"
    );
    assert_eq!(estimate_json(&env)["estimate"], Value::Null);
    // Thirty past steps: step i's session makes `extra[i]` requests before
    // the one that checks its box.
    let extra = drawn();
    for &k in &extra {
        let mut replies: Vec<Reply> = (0..k - 1).map(|_| Reply::bash("true")).collect();
        replies.push(Reply::bash(DO_STEP));
        replies.push(Reply::text("Step done."));
        env.api.session(replies);
    }
    let out = ralph_loop(&env)
        .args(["--max-iterations", "40"])
        .stdout_with(0);
    assert!(
        out.contains("ralph: estimate: 30 open steps; no past steps of this agent and model"),
        "{out}"
    );
    // What a step with k extra requests cost, as the records say.
    let records = records(&env);
    assert_eq!(records.len(), 30);
    let mut cost = [0.0f64; 5];
    for (r, &k) in records.iter().zip(&extra) {
        let c = r["cost_usd"].as_f64().unwrap();
        assert!(c > 0.0);
        assert!(
            cost[k] == 0.0 || (cost[k] - c).abs() < 1e-9,
            "a step of {k} extra requests costs the same each time: {} and {c}",
            cost[k]
        );
        cost[k] = c;
    }
    for k in 1..=4 {
        if cost[k] == 0.0 {
            // Not drawn: priced as the requests it makes.
            cost[k] = cost[1] + (cost[2] - cost[1]) * (k as f64 - 1.0);
        }
    }
    assert!(cost[1] < cost[2] && cost[2] < cost[3], "{cost:?}");
    // Five new steps: the estimate's median within 10% of the true one.
    fs::write(env.project.join(".ralph/spec.md"), spec_of(5)).unwrap();
    fs::remove_file(env.project.join(".ralph/COMPLETE")).ok();
    env.commit_all("five more");
    let e = estimate_json(&env);
    let median = e["estimate"]["usd"]["median"].as_f64().unwrap();
    let truth = true_median(5, &cost);
    // Said, for the README's figure (`--nocapture`).
    println!(
        "five open steps: estimated median ${median:.4}, true median ${truth:.4} ({:+.1}%)",
        (median - truth) / truth * 100.0
    );
    assert!(
        (median - truth).abs() <= truth * 0.10,
        "estimated {median}, truly {truth}: {e:#}"
    );
    assert_eq!(e["estimate"]["from"], "project");
    assert_eq!(e["estimate"]["past_steps"], 30);
    assert_eq!(e["open_steps"], 5);
    let p90 = e["estimate"]["usd"]["p90"].as_f64().unwrap();
    assert!(p90 > median, "{e:#}");
    // A cap under the median: how many steps it likely covers, said
    // before anything is spent.
    let cap = format!("{:.4}", truth * 0.5);
    let out = env
        .ralph()
        .args(["estimate", "--max-cost", &cap])
        .stdout_with(0);
    assert!(
        out.starts_with("claude: 5 open steps, likely $")
            && out.contains("; from 30 past steps of this project."),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "--max-cost ${} likely covers 2 of the 5 open steps.",
            &cap[..4]
        )) || out.contains("likely covers 2 of the 5 open steps."),
        "{out}"
    );
    // `loop --dry-run` says the same and starts nothing.
    let runs = || {
        fs::read_dir(env.project.join(".ralph/runs"))
            .unwrap()
            .count()
    };
    let before = runs();
    let out = ralph_loop(&env)
        .args(["--dry-run", "--max-cost", &cap])
        .stdout_with(0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "ralph loop --dry-run: nothing was started.",
        "{out}"
    );
    assert!(
        lines[1].starts_with("agent: claude · at most 50 sessions · $")
            && lines[1].ends_with(" at most · no time limit"),
        "{out}"
    );
    assert_eq!(lines[2], "spec: 5 steps open of 5", "{out}");
    assert!(
        lines[3].starts_with("estimate: 5 open steps, likely $")
            && lines[4].ends_with("): it likely covers 2 of 5"),
        "{out}"
    );
    assert_eq!(runs(), before, "no run was made");
    assert!(
        env.ralph()
            .arg("status")
            .stdout_with(0)
            .contains("loop:    not running")
    );
    for _ in 0..5 {
        env.api.session([
            Reply::bash("true"),
            Reply::bash(DO_STEP),
            Reply::text("Done."),
        ]);
    }
    let out = ralph_loop(&env)
        .args(["--max-iterations", "10", "--max-cost", &cap])
        .assert()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains("ralph: estimate: 5 open steps, likely $")
            && out.contains("--max-cost $")
            && out.contains("is under the likely cost of the open steps ($")
            && out.contains("): it likely covers 2 of 5"),
        "{out}"
    );
    assert!(out.contains("ralph: the estimate was $"), "{out}");
    println!("{out}");
    let journal = fs::read_to_string(run_dir(&env).join("events.jsonl")).unwrap();
    let estimated: Value = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["kind"] == "estimated")
        .unwrap();
    assert_eq!(estimated["steps"], 5);
    assert_eq!(estimated["estimate"]["usd"]["median"], median);
    assert_eq!(summary(&env)["estimate"]["usd"]["median"], median);
}

#[test]
fn estimate_says_what_is_wrong_with_its_input() {
    let env = project();
    let err = env
        .ralph()
        .args(["estimate", "--max-cost", "0"])
        .stderr_with(2);
    assert_eq!(
        err,
        "ralph estimate: --max-cost 0: a cap is a positive amount of US dollars, at most 1000000\n"
    );
    // A negative amount is refused as a value, not taken for a flag.
    let err = env
        .ralph()
        .args(["estimate", "--max-cost", "-1"])
        .stderr_with(2);
    assert!(
        err.starts_with("ralph estimate: --max-cost -1: a cap is a positive"),
        "{err}"
    );
    fs::write(
        env.project.join(".ralph/config.toml"),
        "max_cost = \"a lot\"\n",
    )
    .unwrap();
    let err = env.ralph().arg("estimate").stderr_with(1);
    assert!(
        err.starts_with("ralph: error: invalid loop configuration") && err.contains("config.toml"),
        "{err}"
    );
    fs::write(env.project.join(".ralph/config.toml"), "max_cost = -3\n").unwrap();
    let err = env.ralph().arg("estimate").stderr_with(2);
    assert!(
        err.starts_with("ralph estimate: max_cost = -3 in ")
            && err.contains(".ralph/config.toml: a cap"),
        "the cap came from the config, not a flag: {err}"
    );
    fs::remove_file(env.project.join(".ralph/config.toml")).unwrap();
    fs::remove_file(env.project.join(".ralph/spec.md")).unwrap();
    let out = env.ralph().arg("estimate").stdout_with(0);
    assert!(
        out.starts_with("There is no spec at ")
            && out.ends_with(": nothing to estimate (`ralph init` writes one).\n"),
        "{out}"
    );
}

/// `--max-cost-per-step`: a step whose unfinished sessions cost past its
/// budget pauses (its work kept), the run asks, and an answer gives the
/// step as much again: the same run goes on, the answer in the next
/// session's prompt, and completes.
#[test]
fn a_step_over_its_budget_pauses_and_an_answer_lets_it_finish() {
    let env = steps_project(1);
    env.api.session([
        Reply::bash("echo tried > attempt.txt && git add attempt.txt && git commit -qm attempt"),
        Reply::text("Not done yet."),
    ]);
    env.api
        .session([Reply::bash(DO_STEP), Reply::text("Done.")]);
    let live = Live::start(ralph_loop(&env).args([
        "--max-cost-per-step",
        "0.000001",
        "--wait-for-answer",
        "2m",
        "--max-iterations",
        "5",
    ]));
    live.wait_for(
        "a human is needed; waiting up to 2m",
        Duration::from_secs(120),
    );
    let waiting = fs::read_to_string(env.project.join(".ralph/WAITING")).unwrap();
    assert!(
        waiting.contains("a step is over its budget: step **1** Step 1 has cost $")
            && waiting.contains(
                "in 1 session without being finished, past its budget of <$0.0001 (--max-cost-per-step); its work is kept"
            ),
        "{waiting}"
    );
    env.ralph()
        .args(["answer", "Keep going: check the box once the step is done."])
        .stdout_with(0);
    let (code, out, err) = live.finish(Duration::from_secs(120));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("answered by terminal: Keep going"), "{out}");
    assert!(
        told(&env, 2).contains("> Keep going: check the box once the step is done."),
        "{}",
        told(&env, 2)
    );
    // The paused step's work stayed.
    assert!(env.project.join("attempt.txt").exists());
    assert_eq!(summary(&env)["iterations"], 2);
}

/// The paused step's question offers more, a skip or a stop; "stop the
/// run" stops it as `ralph stop` does, resumable, and no session is told
/// the answer.
#[test]
fn a_paused_steps_stop_option_stops_the_run_resumable() {
    let env = steps_project(1);
    env.api.session([
        Reply::bash("echo tried > attempt.txt && git add attempt.txt && git commit -qm attempt"),
        Reply::text("Not done yet."),
    ]);
    let live = Live::start(ralph_loop(&env).args([
        "--max-cost-per-step",
        "0.000001",
        "--wait-for-answer",
        "2m",
    ]));
    live.wait_for(
        "a human is needed; waiting up to 2m",
        Duration::from_secs(120),
    );
    let waiting = fs::read_to_string(env.project.join(".ralph/WAITING")).unwrap();
    let options: Vec<&str> = waiting
        .lines()
        .filter(|l| l.starts_with("option: "))
        .collect();
    assert_eq!(options.len(), 3, "{waiting}");
    assert!(
        options[0].starts_with("option: give the step <$0.0001 more and go on")
            && options[1].starts_with("option: skip the step: leave it open")
            && options[2].starts_with("option: stop the run;"),
        "{waiting}"
    );
    env.ralph().args(["answer", "--option", "3"]).stdout_with(0);
    let (code, out, err) = live.finish(Duration::from_secs(120));
    assert_eq!(code, Some(130), "{out}\n{err}");
    assert!(
        out.contains("answered by terminal: option 3: stop the run;")
            && out.contains("no session is told it")
            && out.contains("stopped at the answer of terminal")
            && out.contains("`ralph loop --resume` goes on with this run."),
        "{out}"
    );
    assert!(!env.project.join(".ralph/WAITING").exists());
    assert!(!env.project.join(".ralph/answer.md").exists());
    assert_eq!(summary(&env)["outcome"], "interrupted");
}

/// Two steps: the first session commits a try at step 1 and leaves it
/// open; the second checks step 2 (leaving step 1 as it is).
fn step_one_tries_then_step_two() -> TestEnv {
    let env = steps_project(2);
    env.api.session([
        Reply::bash("echo tried > attempt.txt && git add attempt.txt && git commit -qm attempt"),
        Reply::text("Not done yet."),
    ]);
    env.api.session([
        Reply::bash(
            "sed -i 's/- \\[ \\] \\*\\*2\\*\\*/- [x] **2**/' .ralph/spec.md && git commit -qam two",
        ),
        Reply::text("Step 2 done."),
    ]);
    env
}

/// "Skip the step": left open, its work kept, and each next session told
/// to leave it; with only skipped steps open, the run ends, the rest done.
#[test]
fn a_skipped_step_is_left_open_and_the_run_does_the_others() {
    let env = step_one_tries_then_step_two();
    let live = Live::start(ralph_loop(&env).args([
        "--max-cost-per-step",
        "0.000001",
        "--wait-for-answer",
        "2m",
        "--max-iterations",
        "5",
    ]));
    live.wait_for(
        "a human is needed; waiting up to 2m",
        Duration::from_secs(120),
    );
    env.ralph().args(["answer", "--option", "2"]).stdout_with(0);
    let (code, out, err) = live.finish(Duration::from_secs(120));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("the step is skipped and the run goes on")
            || out.contains("answered by terminal: option 2: skip the step"),
        "{out}"
    );
    assert!(
        out.contains("── ralph: done but for the steps you skipped: every open step is one you skipped: **1** Step 1 (left open, their work kept"),
        "{out}"
    );
    let second = told(&env, 2);
    assert!(
        second.contains("# Steps the user skipped") && second.contains("- **1** Step 1"),
        "{second}"
    );
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(
        spec.contains("- [ ] **1** Step 1") && spec.contains("- [x] **2** Step 2"),
        "{spec}"
    );
    assert!(env.project.join("attempt.txt").exists(), "its work kept");
    let s = summary(&env);
    assert_eq!(
        (s["outcome"].as_str(), s["iterations"].as_u64()),
        (Some("skipped"), Some(2))
    );
}

/// "Skip" answered after the run stopped is taken by `--resume`: the step
/// is left open and the resumed run does the others.
#[test]
fn a_skip_answered_after_the_run_stopped_is_taken_by_resume() {
    let env = step_one_tries_then_step_two();
    let out = ralph_loop(&env)
        .args(["--max-cost-per-step", "0.000001"])
        .stdout_with(3);
    assert!(
        out.contains("── ralph: a step is over its budget: "),
        "{out}"
    );
    env.ralph().args(["answer", "--option", "2"]).stdout_with(0);
    let out = ralph_loop(&env).arg("--resume").stdout_with(0);
    assert!(
        out.contains("step **1** Step 1 is skipped at your answer: left open, its work kept")
            && out.contains("── ralph: done but for the steps you skipped: every open step is one you skipped: **1** Step 1"),
        "{out}"
    );
    assert!(
        told(&env, 2).contains("- **1** Step 1"),
        "{}",
        told(&env, 2)
    );
    assert_eq!(records(&env).len(), 2);
}

/// For those on a plan: while a loop waits out a usage limit, `ralph
/// status` says until when and why, and what its sessions used in tokens.
#[test]
fn status_shows_the_usage_limit_window_and_the_tokens_used() {
    let env = steps_project(2);
    env.api
        .session([Reply::bash(DO_STEP), Reply::text("Step done.")]);
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    env.api.session([Reply::usage_limit(format!(
        "Claude AI usage limit reached|{reset}"
    ))]);
    let live = Live::start(ralph_loop(&env).args(["--max-iterations", "3"]));
    live.wait_for("usage limit reached; waiting", Duration::from_secs(120));
    let out = env.ralph().arg("status").stdout_with(0);
    let line = out
        .lines()
        .find(|l| l.starts_with("paused:  until "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("usage limit reached"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("loop:    running") && l.ends_with(" tokens spent so far")),
        "{out}"
    );
    let json: Value =
        serde_json::from_str(&env.ralph().args(["status", "--json"]).stdout_with(0)).unwrap();
    let until = json["loop"]["paused"]["until"].as_str().unwrap();
    assert!(line.contains(until), "{line} {json}");
    assert!(json["loop"]["tokens"].as_u64().unwrap() > 0, "{json}");
    env.ralph().arg("stop").stdout_with(0);
    let (code, out, err) = live.finish(Duration::from_secs(60));
    assert_eq!(code, Some(130), "{out}\n{err}");
}

/// `--max-tokens`: for those on a plan, a cap in tokens; the run stops at
/// it, resumable with a higher one, and says so.
#[test]
fn the_token_cap_stops_a_run_in_tokens() {
    let env = steps_project(3);
    for _ in 0..3 {
        env.api
            .session([Reply::bash(DO_STEP), Reply::text("Step done.")]);
    }
    let out = ralph_loop(&env).args(["--max-tokens", "1"]).stdout_with(4);
    assert!(
        out.contains("── ralph: token limit reached: ")
            && out.contains(" tokens used of --max-tokens 1 · 1 iteration in "),
        "{out}"
    );
    assert!(
        out.contains("`ralph loop --resume --max-tokens <higher>` goes on with this run."),
        "{out}"
    );
    let out = ralph_loop(&env)
        .args(["--resume", "--max-tokens", "100000000"])
        .stdout_with(0);
    assert!(out.contains("complete"), "{out}");
    assert_eq!(summary(&env)["iterations"], 3);
    let err = ralph_loop(&env).args(["--max-tokens", "0"]).stderr_with(2);
    assert!(err.contains("--max-tokens must be more than 0"), "{err}");
}
