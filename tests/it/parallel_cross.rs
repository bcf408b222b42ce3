//! `ralph loop --parallel N` where it meets the rest of the loop: workers
//! on Codex and Gemini (their real clients), a reviewer of each step or of
//! the whole, and a confined run stopped with Ctrl+C and resumed. Every
//! session is a real client against the scripted API, which hands out its
//! queued sessions in the order they start: with two workers at once,
//! each queued session's script fits whichever worker takes it (it works
//! the step its worktree's spec and `RALPH_STEP` say).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::parallel::{head_files, nothing_left, with_spec};
use crate::support::*;

const TWO_STEPS: &str = "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n";

/// Both steps merged: their boxes checked in the spec, their files in HEAD.
fn both_merged(env: &TestEnv, out: &str) {
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert_eq!(spec.matches("- [x]").count(), 2, "{spec}\n{out}");
    let files = head_files(env);
    for f in ["step-1.txt", "step-2.txt"] {
        assert!(files.contains(&f.to_string()), "{f} merged: {files:?}");
    }
    nothing_left(env);
}

/// A shell snippet that waits (at most a minute) until the sessions of
/// steps 1 and 2 have both reached it, each leaving a file in `dir`, and
/// fails if they never do: sessions that got past it ran side by side,
/// and both had started before either went on. (No `$(...)`: Gemini CLI's
/// shell tool refuses command substitution.)
fn barrier(dir: &Path) -> String {
    format!(
        "mkdir -p {d} && touch {d}/$RALPH_STEP && \
         timeout 60 sh -c 'until [ -e {d}/1 ] && [ -e {d}/2 ]; do sleep 0.2; done'",
        d = dir.display()
    )
}

/// A worker's step, whichever: its file written, its box (`**N**`, N its
/// `RALPH_STEP`) checked, committed. Only while its box is open: in a
/// session that reviews the step (box checked) or with no step of its own
/// (`RALPH_STEP` unset: the run's review), it changes nothing.
fn own_step(before: &str) -> String {
    format!(
        r#"s="$RALPH_STEP"; if [ -n "$s" ] && grep -q -e "- \[ \] \*\*$s\*\*" .ralph/spec.md; then {before} && echo "work of $s" >> "step-$s.txt" && sed -i "s/- \[ \] \*\*$s\*\*/- [x] **$s**/" .ralph/spec.md && git add -A && git commit -qm "step $s"; fi"#
    )
}

/// The sessions' records, sorted by worker.
fn workers_of(recs: &[&Value]) -> Vec<String> {
    let mut w: Vec<String> = recs
        .iter()
        .map(|r| r["worker"].as_str().unwrap_or("-").to_string())
        .collect();
    w.sort_unstable();
    w
}

fn epoch_of(r: &Value, key: &str) -> std::time::SystemTime {
    humantime::parse_rfc3339(r[key].as_str().unwrap()).unwrap()
}

/// Codex's and Gemini's real clients as the workers' agent: two steps side
/// by side, each merged, each session's record naming its worker and
/// agent.
#[test]
fn workers_on_codex_and_on_gemini_do_their_steps_side_by_side_and_both_are_merged() {
    for (agent, bin, model) in [
        ("codex", codex_bin(), "gpt-5.4"),
        ("gemini", gemini_bin(), "gemini-2.5-pro"),
    ] {
        let env = with_spec(TWO_STEPS);
        let met = env.tmp.path().join("met");
        for _ in 0..2 {
            env.api.session([
                Reply::bash(own_step(&barrier(&met))),
                Reply::text("Step done."),
            ]);
        }
        let out = env
            .ralph()
            .args(["loop", "--agent", agent, &format!("--{agent}")])
            .arg(&bin)
            .args(["--model", model, "--parallel", "2", "--max-iterations", "4"])
            .stdout_with(0);
        both_merged(&env, &out);
        for w in ["[w1] ", "[w2] "] {
            assert!(
                out.contains(w),
                "{agent}: each worker's lines say whose: {out}"
            );
        }
        assert!(out.contains("merged **2** Two into main"), "{agent}: {out}");
        // Each step's work once, by its own worker.
        for n in 1..=2 {
            let text = fs::read_to_string(env.project.join(format!("step-{n}.txt"))).unwrap();
            assert_eq!(text, format!("work of {n}\n"), "{agent}");
        }
        let recs = records(&env);
        let all: Vec<&Value> = recs.iter().collect();
        assert_eq!(workers_of(&all), ["w1", "w2"], "{agent}: {recs:?}");
        for r in &recs {
            assert_eq!(
                (
                    r["agent"].as_str(),
                    r["model"].as_str(),
                    r["outcome"].as_str()
                ),
                (Some(agent), Some(model), Some("ok")),
                "{r}"
            );
            assert!(r["step"].as_str().unwrap().contains("**"), "{r}");
            assert_ne!(r["head_before"], r["head_after"], "it committed: {r}");
        }
        // (Side by side: each step's work got past the barrier only once
        // both sessions had reached it.)
        let s = summary(&env);
        assert_eq!(
            (
                s["outcome"].as_str(),
                s["agent"].as_str(),
                s["iterations"].as_u64()
            ),
            (Some("complete"), Some(agent), Some(2)),
            "{s}"
        );
    }
}

/// A project with two steps and a reviewer (`[review]` with `review`'s
/// lines).
fn reviewed(review: &str) -> TestEnv {
    let env = with_spec(TWO_STEPS);
    env.approved_config(format!("[review]\n{review}"));
    env.commit_all("reviewed");
    env
}

/// `when = "step"`: each worker's step is reviewed in its worker, right
/// after the session that checked it; a rejected step goes back to its
/// own worker (told why), and only an approved step is merged. No review
/// of the whole follows.
#[test]
fn with_a_reviewer_of_each_step_each_workers_step_is_reviewed_before_it_is_merged() {
    let env = reviewed("when = \"step\"\nmax_rounds = 3\n");
    let met = env.tmp.path().join("met");
    // A work session reads the findings it is handed first, as the
    // prompt's rule 0 has it.
    let work = format!(
        "{{ cat .ralph/review-failed.md 2>/dev/null; true; }} && {}",
        barrier(&met)
    );
    let session = |verdict: &str| vec![Reply::bash(own_step(&work)), Reply::text(verdict)];
    // The two work sessions wait for each other, so they are the queue's
    // first two; the first review after them (either worker's) rejects.
    for _ in 0..2 {
        env.api.session(session("Step done.\nVERDICT: approve"));
    }
    env.api.session(session(
        "Not yet.\n\nVERDICT: reject\n- the step's file says too little",
    ));
    for _ in 0..4 {
        env.api.session(session("Fine.\nVERDICT: approve"));
    }
    let out = ralph_loop(&env)
        .args(["--parallel", "2", "--max-iterations", "6"])
        .stdout_with(0);
    both_merged(&env, &out);
    assert!(
        out.contains("the reviewer did not approve") && out.contains("the reviewer approved"),
        "{out}"
    );
    let recs = records(&env);
    let reviews: Vec<&Value> = recs.iter().filter(|r| !r["review"].is_null()).collect();
    let work: Vec<&Value> = recs.iter().filter(|r| r["review"].is_null()).collect();
    assert_eq!(reviews.len(), 3, "two steps, one reviewed twice: {recs:?}");
    assert_eq!(work.len(), 3, "{recs:?}");
    let rejected: Vec<&&Value> = reviews
        .iter()
        .filter(|r| r["review"]["verdict"] == "rejected")
        .collect();
    assert_eq!(rejected.len(), 1, "{reviews:?}");
    let sent_back = rejected[0]["worker"].as_str().unwrap();
    // Each review is its worker's, of its step.
    for r in &reviews {
        assert!(r["worker"].is_string() && r["step"].is_string(), "{r}");
        assert_eq!(r["counted"], false, "{r}");
    }
    let mut reviewed_by: Vec<String> = reviews
        .iter()
        .filter(|r| r["review"]["verdict"] == "approved")
        .map(|r| r["worker"].as_str().unwrap().to_string())
        .collect();
    reviewed_by.sort_unstable();
    assert_eq!(reviewed_by, ["w1", "w2"], "{reviews:?}");
    // The rejected worker worked its step again, told why; that work was
    // merged with the first.
    let again: Vec<&&Value> = work.iter().filter(|r| r["worker"] == sent_back).collect();
    assert_eq!(again.len(), 2, "{work:?}");
    let step = rejected[0]["step"].as_str().unwrap();
    let n = if step.contains("**1**") { 1 } else { 2 };
    let text = fs::read_to_string(env.project.join(format!("step-{n}.txt"))).unwrap();
    assert_eq!(text, format!("work of {n}\nwork of {n}\n"), "{out}");
    let told = env.api.turns().iter().any(|t| {
        let u = t.user_text();
        u.contains("The reviewer rejected the work")
            && u.contains("the step's file says too little")
    });
    assert!(told, "the step's next session was told the finding");
    // A step is merged only once its review approved it.
    let merged_at = out
        .lines()
        .position(|l| l.contains(&format!("merged **{n}**")))
        .expect("its merge said");
    let approved_at = out
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            l.starts_with(&format!("[{sent_back}]")) && l.contains("the reviewer approved")
        })
        .map(|(i, _)| i)
        .next()
        .expect("its approval said");
    assert!(approved_at < merged_at, "{out}");
}

/// `when = "complete"`: no worker reviews; once both steps are merged, one
/// review of the whole run (both steps' changes) judges COMPLETE.
#[test]
fn with_a_reviewer_of_the_whole_one_review_judges_everything_merged() {
    let env = reviewed("when = \"complete\"\n");
    let met = env.tmp.path().join("met");
    for _ in 0..2 {
        env.api.session([
            Reply::bash(own_step(&barrier(&met))),
            Reply::text("Step done."),
        ]);
    }
    env.api.session([
        Reply::bash(own_step("false")),
        Reply::text("Both steps do what they say.\nVERDICT: approve"),
    ]);
    let out = ralph_loop(&env)
        .args(["--parallel", "2", "--max-iterations", "6"])
        .stdout_with(0);
    both_merged(&env, &out);
    assert!(
        out.contains("review session") && out.contains("the whole run"),
        "{out}"
    );
    let recs = records(&env);
    let reviews: Vec<&Value> = recs.iter().filter(|r| !r["review"].is_null()).collect();
    assert_eq!(reviews.len(), 1, "{recs:?}");
    let review = reviews[0];
    assert_eq!(review["review"]["verdict"], "approved", "{review}");
    assert!(review["worker"].is_null(), "the run's own review: {review}");
    for r in recs.iter().filter(|r| r["review"].is_null()) {
        assert!(
            epoch_of(r, "end") <= epoch_of(review, "start"),
            "{r}\n{review}"
        );
    }
    // What it was given: both steps' changes, merged.
    let given = env
        .api
        .turns()
        .iter()
        .map(|t| t.user_text())
        .find(|u| u.contains("You are the reviewer of a Ralph loop"))
        .expect("the reviewer's prompt");
    for part in ["step-1.txt", "step-2.txt", "+work of 1", "+work of 2"] {
        assert!(given.contains(part), "{part}: {given}");
    }
    let s = summary(&env);
    assert_eq!(
        (s["outcome"].as_str(), &s["review"]["verdict"]),
        (Some("complete"), &"approved".into()),
        "{s}"
    );
}

/// The worktrees of the run (`<checkout>.ralph-worktrees/*`).
fn worktrees(env: &TestEnv) -> Vec<PathBuf> {
    let dir = env.project.with_extension("ralph-worktrees");
    fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// Start a parallel run whose two sessions each park (a file `parked` in
/// their worktree says so) until it is stopped with Ctrl+C; its output.
fn parked_then_ctrl_c(env: &TestEnv, run: Ralph) -> String {
    let marker = env.tmp.path().join("never");
    for _ in 0..2 {
        env.api.session([
            Reply::bash(format!(
                "touch parked; while [ ! -e {} ]; do sleep 0.2; done",
                marker.display()
            )),
            Reply::text("Parked."),
        ]);
    }
    let child = run.spawn();
    let parked = || {
        worktrees(env)
            .iter()
            .filter(|w| w.join("parked").exists())
            .count()
    };
    assert!(
        eventually(Duration::from_secs(120), || parked() == 2),
        "both sessions parked: {}",
        parked()
    );
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = wait_output(child, Duration::from_secs(60));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(said.contains("interrupted: SIGINT received"), "{said}");
    // How to go on is said once, by the run, not by each worker.
    assert_eq!(
        said.matches("`ralph loop --resume` goes on with this run.")
            .count(),
        1,
        "{said}"
    );
    assert!(
        eventually(Duration::from_secs(10), || processes_with(&format!(
            "while [ ! -e {}",
            marker.display()
        ))
        .is_empty()),
        "a parked session outlived the stop"
    );
    assert_eq!(summary(env)["outcome"], "interrupted");
    said
}

/// A confined parallel run stopped with Ctrl+C, then `ralph loop --resume`
/// with nothing else said: the same worktrees go on, the resumed workers'
/// sessions are confined (their writes outside their worktree fail), and
/// both steps are merged.
#[test]
fn a_confined_parallel_run_resumed_after_ctrl_c_stays_confined_and_finishes() {
    sandbox_tools();
    let env = with_spec(TWO_STEPS);
    let first = ralph_loop(&env).args(["--confined", "--parallel", "2"]);
    parked_then_ctrl_c(&env, first);
    let before: Vec<PathBuf> = worktrees(&env);
    assert_eq!(before.len(), 2, "{before:?}");
    // The resumed sessions try to write outside, then do their step.
    let outside = env.tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let escapes = format!(
        "(echo x > {home}/escaped-$RALPH_STEP) 2>/dev/null; (echo x > {out}/escaped-$RALPH_STEP) 2>/dev/null; true",
        home = env.home.display(),
        out = outside.display()
    );
    for _ in 0..2 {
        env.api
            .session([Reply::bash(own_step(&escapes)), Reply::text("Step done.")]);
    }
    let out = env.ralph().args(["loop", "--resume"]).stdout_with(0);
    both_merged(&env, &out);
    // What the stopped sessions left in their worktrees (`parked`) is the
    // run's, not said to be yours by each worker.
    assert!(!out.contains("yours, not a session's"), "{out}");
    for n in 1..=2 {
        for dir in [env.home.as_path(), outside.as_path()] {
            let p = dir.join(format!("escaped-{n}"));
            assert!(
                !p.exists(),
                "{} written by a resumed session: {out}",
                p.display()
            );
        }
    }
    let recs = records(&env);
    let done: Vec<&Value> = recs.iter().filter(|r| r["outcome"] == "ok").collect();
    assert_eq!(workers_of(&done).len(), 2, "{recs:?}");
    for r in &recs {
        assert_eq!(r["confined"], true, "{r}");
    }
    assert_eq!(summary(&env)["confined"], true);
}

/// A resume's own options reach the resumed run's workers: a run stopped
/// at its `--max-iterations`' worth of sessions goes on with the higher
/// cap the resume gives.
#[test]
fn a_resumes_own_options_reach_the_workers_it_starts() {
    let env = with_spec(TWO_STEPS);
    let first = ralph_loop(&env).args(["--parallel", "2", "--max-iterations", "2"]);
    parked_then_ctrl_c(&env, first);
    for _ in 0..2 {
        env.api
            .session([Reply::bash(own_step("true")), Reply::text("Step done.")]);
    }
    let out = env
        .ralph()
        .args(["loop", "--resume", "--max-iterations", "6"])
        .stdout_with(0);
    assert!(out.contains("max_iterations = 6 (was 2)"), "{out}");
    both_merged(&env, &out);
}

/// `--parallel 2 --push`: each merged step goes to the remote as it lands
/// (the board's `after_merge`), then the run's notes at its end; the
/// remote's branch ends where the checkout is.
#[test]
fn with_push_each_merge_goes_to_the_remote_as_it_lands() {
    let env = with_spec(TWO_STEPS);
    let origin = crate::support::github::Origin::new(&env, "octo", "hello");
    origin.link(&env, &env.project);
    env.git(&["switch", "-q", "-c", "work"]);
    let gh = crate::support::github::GitHub::start("octo", "hello");
    for _ in 0..2 {
        env.api
            .session([Reply::bash(own_step("true")), Reply::text("Step done.")]);
    }
    let out = crate::ship::shipping_loop(&env, &gh)
        .args(["--parallel", "2", "--push"])
        .stdout_with(0);
    both_merged(&env, &out);
    let journal = fs::read_to_string(run_dir(&env).join("events.jsonl")).unwrap();
    let kinds: Vec<String> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| ["merged", "pushed", "complete"].contains(&l["kind"].as_str().unwrap()))
        .map(|l| l["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        ["merged", "pushed", "merged", "pushed", "pushed", "complete"],
        "{journal}\n{out}"
    );
    assert_eq!(
        origin.head_of(&env, "work").unwrap(),
        env.git(&["rev-parse", "HEAD"]).trim(),
        "{out}"
    );
    assert!(gh.pulls().is_empty(), "no pull request without --pr");
}

/// `ralph watch --once --json` of a parallel run's workers: each row names
/// its worker as the run's lines do (`w1`), and shows the worker's own step,
/// not the first open step of its copy of the spec (which may be another
/// worker's).
#[test]
fn watch_names_each_worker_and_its_own_step() {
    let env = with_spec(TWO_STEPS);
    let first = ralph_loop(&env).args(["--parallel", "2"]);
    parked_then_ctrl_c(&env, first);
    let rows = env.ralph().args(["watch", "--json"]).json_with(0);
    let mut workers: Vec<(String, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["worker"].is_null())
        .map(|r| {
            (
                r["worker"].as_str().unwrap().to_string(),
                r["step"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    workers.sort();
    assert_eq!(workers.len(), 2, "{rows}");
    let steps: Vec<&str> = workers.iter().map(|(_, s)| s.as_str()).collect();
    let mut sorted = steps.clone();
    sorted.sort();
    assert_eq!(sorted, ["**1** One", "**2** Two"], "{rows}");
    let text = env.ralph().args(["watch", "--once"]).stdout_with(0);
    for (w, _) in &workers {
        assert!(text.contains(&format!("{w} (par-")), "{text}");
    }
}
