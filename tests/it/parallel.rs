//! `ralph loop --parallel N`: steps worked side by side by worker loops in
//! worktrees of their own, merged one at a time (the gate after each), one
//! budget. Sessions are the real Claude Code client against the scripted
//! API where the test is about what a session does; elsewhere a stand-in
//! that logs when it ran (what the real client cannot be made to do on
//! cue: take a given time, need two sessions).

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::*;

/// A project whose spec is `spec`, committed, with br on the PATH.
pub(crate) fn with_spec(spec: &str) -> TestEnv {
    let env = project();
    fs::write(env.project.join(".ralph/spec.md"), spec).unwrap();
    env.commit_all("the spec");
    env
}

fn ralph_br(env: &TestEnv) -> Ralph {
    env.ralph().env("PATH", env.path_with_br())
}

/// A stand-in session that logs its step's start and end (seconds since
/// the epoch, to the nanosecond) in `log`, takes `secs`, writes its own
/// file, checks the first open box (its step, in its worktree), closes its
/// task when the step has one, and commits.
fn timed_stand_in(env: &TestEnv, secs: u32) -> (std::path::PathBuf, std::path::PathBuf) {
    let log = env.tmp.path().join("sessions.log");
    let body = format!(
        r#"echo "$RALPH_STEP start $(date +%s.%N)" >> {log}
sleep {secs}
echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
line=$(grep -m1 -e '- \[ \]' .ralph/spec.md)
case "$line" in *\]) id=${{line##*[}}; br close "${{id%]}}" >/dev/null 2>&1;; esac
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
echo "- step $RALPH_STEP done" >> .ralph/progress.md
git add -A && git commit -qm "step $RALPH_STEP"
echo "$RALPH_STEP end $(date +%s.%N)" >> {log}
echo '{RESULT}'"#,
        log = log.display()
    );
    (stand_in(env, "claude-timed", &body), log)
}

/// (start, end) of each step's sessions, by `RALPH_STEP`.
pub(crate) fn spans(log: &Path) -> std::collections::BTreeMap<String, (f64, f64)> {
    let mut out = std::collections::BTreeMap::new();
    for l in fs::read_to_string(log).unwrap_or_default().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (step, what, t) = (f[0].to_string(), f[1], f[2].parse::<f64>().unwrap());
        let e: &mut (f64, f64) = out.entry(step).or_insert((f64::MAX, 0.0));
        match what {
            "start" => e.0 = e.0.min(t),
            _ => e.1 = e.1.max(t),
        }
    }
    out
}

pub(crate) fn head_files(env: &TestEnv) -> Vec<String> {
    env.git(&["ls-tree", "--name-only", "HEAD"])
        .lines()
        .map(String::from)
        .collect()
}

/// No worktree or branch of the run is left.
pub(crate) fn nothing_left(env: &TestEnv) {
    let worktrees = env.git(&["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 1, "{worktrees}");
    let branches = env.git(&["branch", "--list", "ralph/*"]);
    assert_eq!(branches.trim(), "", "the workers' branches are removed");
}

#[test]
fn independent_steps_run_side_by_side_and_every_one_is_merged_with_the_real_client() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n");
    // The same script for each session, whichever worker runs it: its step
    // is `RALPH_STEP`, the first open box of its worktree's spec.
    let work = "sh -c 'sleep 2'; echo \"$RALPH_STEP\" > \"step-$RALPH_STEP.txt\" && \
                sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && \
                git add -A && git commit -qm \"step $RALPH_STEP\"";
    for _ in 0..3 {
        env.api
            .session([Reply::bash(work), Reply::text("Step done.")]);
    }
    let out = ralph_loop(&env)
        .args(["--parallel", "3", "--max-iterations", "6"])
        .stdout_with(0);
    assert!(out.contains("complete: all 3 steps done"), "{out}");
    for w in ["[w1] ", "[w2] ", "[w3] "] {
        assert!(out.contains(w), "each worker's lines say whose: {out}");
    }
    assert!(out.contains("merged **3** Three into main"), "{out}");
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert_eq!(spec.matches("- [x]").count(), 3, "{spec}");
    let files = head_files(&env);
    for f in ["step-1.txt", "step-2.txt", "step-3.txt"] {
        assert!(files.contains(&f.to_string()), "{f} merged: {files:?}");
    }
    nothing_left(&env);
    // The run's records: each session, its worker and its step.
    let recs = records(&env);
    assert_eq!(recs.len(), 3, "{recs:?}");
    let mut workers: Vec<&str> = recs.iter().map(|r| r["worker"].as_str().unwrap()).collect();
    workers.sort_unstable();
    assert_eq!(workers, ["w1", "w2", "w3"]);
    for r in &recs {
        assert!(r["step"].as_str().unwrap().contains("**"), "{r}");
        assert!(
            Path::new(r["stream_file"].as_str().unwrap()).exists(),
            "{r}"
        );
    }
    // Side by side: every session began before any ended.
    let starts: Vec<String> = recs
        .iter()
        .map(|r| r["start"].as_str().unwrap().into())
        .collect();
    let ends: Vec<String> = recs
        .iter()
        .map(|r| r["end"].as_str().unwrap().into())
        .collect();
    assert!(
        starts.iter().max() < ends.iter().min(),
        "{starts:?} {ends:?}"
    );
    let s = summary(&env);
    assert_eq!(s["outcome"], "complete");
    assert_eq!(s["iterations"], 3, "{s}");
    assert!(s["cost_usd"].as_f64().unwrap() > 0.0, "{s}");
}

#[test]
fn without_a_tracker_each_section_is_a_phase() {
    let env = with_spec(
        "# Spec\n\n## First\n\n- [ ] **1** One\n- [ ] **2** Two\n\n## Then\n\n- [ ] **3** Three\n",
    );
    let (claude, log) = timed_stand_in(&env, 1);
    let out = ralph_br(&env)
        .args(["loop", "--parallel", "4", "--claude"])
        .arg(&claude)
        .stdout_with(0);
    assert!(out.contains("complete: all 3 steps done"), "{out}");
    let t = spans(&log);
    assert_eq!(t.len(), 3, "{t:?}");
    assert!(
        t["1"].0 < t["2"].1 && t["2"].0 < t["1"].1,
        "one and two side by side: {t:?}"
    );
    assert!(
        t["3"].0 > t["1"].1 && t["3"].0 > t["2"].1,
        "three waits for the first section: {t:?}"
    );
    nothing_left(&env);
    // ralph merged the logs: each step's line is there once.
    let progress = fs::read_to_string(env.project.join(".ralph/progress.md")).unwrap();
    for n in 1..=3 {
        assert_eq!(
            progress.matches(&format!("- step {n} done")).count(),
            1,
            "{progress}"
        );
    }
}

#[test]
fn a_step_blocked_in_the_tracker_starts_only_once_its_blocker_is_merged() {
    let env = project();
    let (_, tasks) = workspace(&env);
    // Task 3 waits for task 1; task 2 for nothing.
    env.br(&["dep", "add", &tasks[2], &tasks[0]]);
    fs::write(
        env.project.join(".ralph/spec.md"),
        format!(
            "# Spec\n\n- [ ] Third [{}]\n- [ ] First [{}]\n- [ ] Second [{}]\n",
            tasks[2], tasks[0], tasks[1]
        ),
    )
    .unwrap();
    env.commit_all("spec with tasks");
    let (claude, log) = timed_stand_in(&env, 1);
    let out = ralph_br(&env)
        .args(["loop", "--parallel", "3", "--claude"])
        .arg(&claude)
        .stdout_with(0);
    assert!(out.contains("complete: all 3 steps done"), "{out}");
    let t = spans(&log);
    let (first, second, third) = (&t[&tasks[0]], &t[&tasks[1]], &t[&tasks[2]]);
    assert!(first.0 < second.1 && second.0 < first.1, "{t:?}");
    assert!(third.0 > first.1, "the third waited for the first: {t:?}");
    assert_eq!(env.not_closed(&tasks), Vec::<String>::new());
    // Each task was claimed by the worker that did it.
    let shown: Value = serde_json::from_str(&env.br(&["show", &tasks[2], "--json"])).unwrap();
    assert!(
        shown[0]["assignee"]
            .as_str()
            .unwrap_or_default()
            .starts_with('w'),
        "{shown}"
    );
    nothing_left(&env);
    // Steps are named as a person reads them, not by task id alone.
    assert!(
        out.contains(&format!("starts step First [{}] in", tasks[0]))
            && out.contains(&format!("merged First [{}] into main", tasks[0])),
        "{out}"
    );
    // The tracker's closes are the run's, committed with its notes: a
    // fresh clone's tracker has them, and nothing is said to be yours.
    assert!(!out.contains("yours, not a session's"), "{out}");
    assert_eq!(
        env.git(&["status", "--porcelain", "--", ".beads"]).trim(),
        "",
        "{out}"
    );
    let committed = env.git(&["show", "HEAD:.beads/issues.jsonl"]);
    for t in &tasks {
        let line = committed.lines().find(|l| l.contains(t.as_str())).unwrap();
        assert!(line.contains(r#""status":"closed""#), "{line}");
    }
}

#[test]
fn a_merge_that_breaks_the_gate_is_undone_and_its_step_worked_again() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    env.approved_config("[gate]\ncommands = [\"test ! -e broken.txt\"]\n");
    env.commit_all("gated");
    // Step 2's first attempt leaves broken.txt; told why its merge was
    // undone, the next one removes it.
    let body = format!(
        r#"prompt=$(cat)
if [ "$RALPH_STEP" = 2 ]; then
  if printf '%s' "$prompt" | grep -q 'the merge was undone'; then
    printf '%s' "$prompt" | grep -q 'test ! -e broken.txt' && git rm -q broken.txt
  else
    echo oops > broken.txt
  fi
fi
echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
git add -A && git commit -qm "step $RALPH_STEP"
echo '{RESULT}'"#
    );
    let path = env.tmp.path().join("claude-gate");
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    let mut p = fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    fs::set_permissions(&path, p).unwrap();
    let out = ralph_br(&env)
        .args(["loop", "--parallel", "2", "--claude"])
        .arg(&path)
        .stdout_with(0);
    assert!(
        out.contains("the gate failed after merging **2** Two")
            && out.contains("the merge is undone"),
        "{out}"
    );
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    let files = head_files(&env);
    assert!(!files.contains(&"broken.txt".to_string()), "{files:?}");
    assert!(files.contains(&"step-2.txt".to_string()), "{files:?}");
    // The undone merge is in no branch: one merge commit per step.
    let merges = env.git(&["log", "--merges", "--format=%s"]);
    assert_eq!(merges.lines().count(), 2, "{merges}");
    nothing_left(&env);
}

/// A project whose two steps both rewrite the same line of `shared.txt`.
fn conflicting() -> TestEnv {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    fs::write(env.project.join("shared.txt"), "base\n").unwrap();
    env.commit_all("shared");
    env
}

const REWRITE: &str = "sh -c 'sleep 1'; echo \"line of $RALPH_STEP\" > shared.txt && \
    sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && git add -A && git commit -qm \"step $RALPH_STEP\"";

#[test]
fn a_conflicting_merge_waits_for_a_human_naming_the_files_with_on_conflict_wait() {
    let env = conflicting();
    for _ in 0..2 {
        env.api
            .session([Reply::bash(REWRITE), Reply::text("Done.")]);
    }
    let out = ralph_loop(&env)
        .args(["--parallel", "2", "--on-conflict", "wait"])
        .stdout_with(3);
    let waiting = fs::read_to_string(env.project.join(".ralph/WAITING")).unwrap();
    assert!(
        waiting.contains("conflicts") && waiting.contains("shared.txt"),
        "{waiting}\n{out}"
    );
    // One step merged, the other's work kept on its branch.
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert_eq!(spec.matches("- [x]").count(), 1, "{spec}");
    let branches = env.git(&["branch", "--list", "ralph/*"]);
    assert_eq!(branches.lines().count(), 1, "{branches}");
    assert_eq!(summary(&env)["outcome"], "waiting");
}

#[test]
fn a_conflict_is_resolved_by_a_session_and_both_changes_survive() {
    let env = conflicting();
    for _ in 0..2 {
        env.api
            .session([Reply::bash(REWRITE), Reply::text("Done.")]);
    }
    // The resolution session: both lines, no marker, the merge committed.
    env.api.session([
        Reply::bash(
            "printf 'line of 1\\nline of 2\\n' > shared.txt && git add shared.txt && git commit -q --no-edit",
        ),
        Reply::text("Resolved."),
    ]);
    let out = ralph_loop(&env)
        .args(["--parallel", "2", "--max-iterations", "5"])
        .stdout_with(0);
    assert!(
        out.contains("conflicts with what is merged (shared.txt)"),
        "{out}"
    );
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    let shared = fs::read_to_string(env.project.join("shared.txt")).unwrap();
    assert!(
        shared.contains("line of 1") && shared.contains("line of 2"),
        "{shared}"
    );
    assert!(!shared.contains("<<<<<<<"), "{shared}");
    // The resolution session was told both steps and the file.
    let told = env.api.turns().iter().any(|t| {
        let u = t.user_text();
        u.contains("A merge is in progress") && u.contains("shared.txt")
    });
    assert!(told, "the resolution session was told the files");
    nothing_left(&env);
}

#[test]
fn ctrl_c_stops_four_workers_and_every_process_and_resume_finishes() {
    let env = with_spec("# Spec\n\n- [ ] **1** A\n- [ ] **2** B\n- [ ] **3** C\n- [ ] **4** D\n");
    let marker = env.tmp.path().join("go");
    // Each session holds a child until the marker exists (the first run's
    // never does), then does its step.
    let body = format!(
        r#"sh -c 'while [ ! -e {m} ]; do sleep 0.2; done; echo parked-7711' &
wait
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
git add -A && git commit -qm "step $RALPH_STEP"
echo '{RESULT}'"#,
        m = marker.display()
    );
    let claude = stand_in(&env, "claude-parked", &body);
    let child = ralph_br(&env)
        .args(["loop", "--parallel", "4", "--claude"])
        .arg(&claude)
        .spawn();
    let held = || processes_with(&format!("while [ ! -e {}", marker.display())).len();
    assert!(
        eventually(Duration::from_secs(60), || held() == 4),
        "four sessions at once: {}",
        held()
    );
    // Ctrl+C in a terminal: the whole foreground group.
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = wait_output(child, Duration::from_secs(60));
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{said}");
    assert!(said.contains("interrupted: SIGINT received"), "{said}");
    assert!(
        eventually(Duration::from_secs(10), || held() == 0),
        "a session's process was left running"
    );
    assert!(processes_with(&claude.display().to_string()).is_empty());
    assert_eq!(summary(&env)["outcome"], "interrupted");
    // The run goes on where it was: the same worktrees, then merged.
    fs::write(&marker, "").unwrap();
    let out = ralph_br(&env)
        .args(["loop", "--resume", "--claude"])
        .arg(&claude)
        .stdout_with(0);
    assert!(out.contains("complete: all 4 steps done"), "{out}");
    let files = head_files(&env);
    for n in 1..=4 {
        assert!(files.contains(&format!("step-{n}.txt")), "{files:?}");
    }
    nothing_left(&env);
}

#[test]
fn a_cost_cap_is_the_whole_runs_and_stops_every_worker() {
    let env = with_spec("# Spec\n\n- [ ] **1** A\n- [ ] **2** B\n- [ ] **3** C\n");
    // Each session costs $0.75 and changes something, but needs a second
    // session to finish its step.
    let body = format!(
        r#"if [ -e "half-$RALPH_STEP" ]; then sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md; fi
echo x > "half-$RALPH_STEP"
git add -A && git commit -qm "half $RALPH_STEP"
sleep 1
echo '{RESULT}'"#
    );
    let claude = stand_in(&env, "claude-costly", &body);
    let out = ralph_br(&env)
        .args(["loop", "--parallel", "3", "--max-cost", "1", "--claude"])
        .arg(&claude)
        .stdout_with(4);
    // The sessions that ran at once all count: a worker whose session ended
    // first may start one more before the others' costs are in, never
    // once the run's spending has reached the cap.
    assert!(out.contains("the run's workers have spent $"), "{out}");
    let s = summary(&env);
    assert_eq!(s["outcome"], "cost-limit", "{s}");
    let n = s["iterations"].as_u64().unwrap();
    assert!((3..=5).contains(&n), "{s}");
    let recs = records(&env);
    assert_eq!(recs.len() as u64, n);
    // What the run spent is what its sessions spent: each finished one
    // $0.75; one the cap's stop interrupted (it had started before the
    // others' costs were in) reported none.
    let finished = recs.iter().filter(|r| r["outcome"] == "ok").count();
    assert!(finished >= 3, "{recs:?}");
    assert!(
        (s["cost_usd"].as_f64().unwrap() - 0.75 * finished as f64).abs() < 1e-9,
        "{s} {recs:?}"
    );
    for w in ["[w1]", "[w2]", "[w3]"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(w) && l.contains("cost limit reached")),
            "{w} stopped at the cap: {out}"
        );
    }
    assert_eq!(s["spec"], "0/3", "no step was finished: {s}");
}

#[test]
fn what_a_parallel_run_cannot_do_is_refused_before_anything_starts() {
    // (br itself refuses tasks that wait on each other: ralph's own check of
    // that is for trackers that do not, and is unit-tested.)
    let env = project();
    let (_, tasks) = workspace(&env);
    fs::write(
        env.project.join(".ralph/spec.md"),
        format!("# Spec\n\n- [ ] A [{}]\n- [ ] B [{}]\n", tasks[0], tasks[1]),
    )
    .unwrap();
    env.commit_all("spec");
    let refused = |extra: &[&str]| {
        let out = ralph_br(&env)
            .args(["loop", "--claude", "/bin/true"])
            .args(extra)
            .assert()
            .code(2)
            .get_output()
            .clone();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(refused(&["--parallel", "0"]).contains("--parallel must be 1 to 16"));
    assert!(refused(&["--parallel", "17"]).contains("--parallel must be 1 to 16"));
    let err = refused(&["--parallel", "2", "--interactive"]);
    assert!(
        err.contains("an interactive loop has one terminal"),
        "{err}"
    );
    fs::write(
        env.project.join(".ralph/spec.md"),
        format!(
            "# Spec\n\n- [ ] A [{}]\n- [ ] B [{}]\n- [ ] C\n",
            tasks[0], tasks[1]
        ),
    )
    .unwrap();
    let err = refused(&["--parallel", "2"]);
    assert!(err.contains("not committed"), "{err}");
    // Nothing was made.
    assert!(!env.project.join(".ralph/runs").exists());
    assert_eq!(env.git(&["worktree", "list"]).lines().count(), 1);
}

#[test]
fn a_step_that_waits_for_a_task_outside_the_spec_stops_for_a_human_and_status_shows_the_board() {
    let env = project();
    let (_, tasks) = workspace(&env);
    // The second waits for the third task, which no step of the spec does.
    env.br(&["dep", "add", &tasks[1], &tasks[2]]);
    fs::write(
        env.project.join(".ralph/spec.md"),
        format!("# Spec\n\n- [ ] A [{}]\n- [ ] B [{}]\n", tasks[0], tasks[1]),
    )
    .unwrap();
    env.commit_all("spec");
    let (claude, _) = timed_stand_in(&env, 0);
    let out = ralph_br(&env)
        .args(["loop", "--parallel", "2", "--claude"])
        .arg(&claude)
        .stdout_with(3);
    let waiting = fs::read_to_string(env.project.join(".ralph/WAITING")).unwrap();
    assert!(
        waiting.contains(&tasks[2]) && waiting.contains("no step of the spec"),
        "{waiting}\n{out}"
    );
    let status = ralph_br(&env).args(["status"]).stdout_with(0);
    assert!(
        status.contains("parallel: up to 2 at once · 0 working · 0 queued · 1 merged"),
        "{status}"
    );
    assert!(
        status.contains(&format!("w1   merged    {}", tasks[0])),
        "{status}"
    );
    let json = ralph_br(&env).args(["status", "--json"]).json_with(0);
    assert_eq!(
        json["parallel"]["steps"][&tasks[0]]["place"], "merged",
        "{json}"
    );
}

#[test]
fn a_usage_limit_one_worker_meets_holds_the_others_on_that_agent_until_it_resets() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n");
    let reset = now_epoch() + 14;
    let work = "echo \"$RALPH_STEP\" > \"step-$RALPH_STEP.txt\" && \
                sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && \
                git add -A && git commit -qm \"step $RALPH_STEP\"";
    // Whichever worker's session comes first meets the limit; the other
    // does its step, which frees a slot for the third step's worker.
    env.api.session([Reply::usage_limit(format!(
        "Claude AI usage limit reached|{reset}"
    ))]);
    env.api.session([
        Reply::Stall(Duration::from_secs(2)),
        Reply::bash(work),
        Reply::text("Done."),
    ]);
    for _ in 0..2 {
        env.api.session([Reply::bash(work), Reply::text("Done.")]);
    }
    let out = ralph_loop(&env)
        .args(["--parallel", "2", "--max-iterations", "8"])
        .stdout_with(0);
    assert!(out.contains("complete: all 3 steps done"), "{out}");
    let recs = records(&env);
    let limited: Vec<&Value> = recs
        .iter()
        .filter(|r| r["outcome"].as_str().unwrap().starts_with("limited"))
        .collect();
    assert_eq!(limited.len(), 1, "one session met the limit: {recs:?}");
    // The third step's worker started after the limit was known: it waited
    // for the reset instead of meeting the limit itself.
    let w3: Vec<&Value> = recs.iter().filter(|r| r["worker"] == "w3").collect();
    assert!(!w3.is_empty(), "{recs:?}");
    for r in &w3 {
        let start = humantime::parse_rfc3339(r["start"].as_str().unwrap())
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(start >= reset, "w3's session started before the reset: {r}");
    }
    assert!(
        out.lines()
            .any(|l| l.starts_with("[w3]") && l.contains("usage limit reached")),
        "w3 said why it waited: {out}"
    );
}

#[test]
fn confined_workers_put_the_shared_git_setup_back_as_the_run_found_it() {
    sandbox_tools();
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n");
    let mark = env.tmp.path().join("PWNED");
    // Step 1's session plants a hook and a config key in the git folder
    // every worktree shares, and works on; step 3's session starts while
    // they are there and ends after step 1's guard removed them.
    let body = format!(
        r#"c=$(git rev-parse --git-common-dir)
case "$RALPH_STEP" in
1) printf '#!/bin/sh\ntouch {m}-hook\n' > "$c/hooks/post-checkout"; chmod +x "$c/hooks/post-checkout"
   git config --file "$c/config" core.fsmonitor "touch {m}-fsmonitor; false"; sleep 4;;
3) sleep 6;;
esac
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md; echo "$RALPH_STEP" > "f$RALPH_STEP.txt"
git add -A; git -c core.fsmonitor=false -c core.hooksPath=/dev/null commit -qm step
echo '{RESULT}'"#,
        m = mark.display()
    );
    let claude = stand_in(&env, "claude-planter", &body);
    let out = ralph_br(&env)
        .args([
            "loop",
            "--confined",
            "--parallel",
            "2",
            "--max-iterations",
            "6",
            "--claude",
        ])
        .arg(&claude)
        .stdout_with(0);
    assert!(out.contains("complete: all 3 steps done"), "{out}");
    assert!(
        !out.lines()
            .any(|l| l.starts_with("[w3]") && l.contains("put back .git/hooks/post-checkout")),
        "w3's guard put back what w1's session planted: {out}"
    );
    let fsmonitor = env
        .command("git")
        .args(["config", "--get-all", "core.fsmonitor"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&fsmonitor.stdout), "", "{out}");
    assert!(
        !env.project.join(".git/hooks/post-checkout").exists(),
        "{out}"
    );
}

#[test]
fn workers_end_with_a_run_killed_outright_and_a_step_text_may_begin_with_a_dash() {
    let env = with_spec("# Spec\n\n- [ ] --claude=/bin/false odd\n- [ ] plain\n");
    let marker = env.tmp.path().join("never");
    let body = format!(
        r#"sh -c 'while [ ! -e {m} ]; do sleep 0.2; done; echo parked-4242' &
wait
echo '{RESULT}'"#,
        m = marker.display()
    );
    let claude = stand_in(&env, "claude-parked", &body);
    let child = ralph_br(&env)
        .args(["loop", "--parallel", "2", "--claude"])
        .arg(&claude)
        .spawn();
    let held = || processes_with(&format!("while [ ! -e {}", marker.display())).len();
    assert!(
        eventually(Duration::from_secs(60), || held() == 2),
        "both steps' sessions, the dashed one's too: {}",
        held()
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = wait_output(child, Duration::from_secs(10));
    assert!(
        eventually(Duration::from_secs(20), || processes_with("--worker-step=")
            .is_empty()),
        "a worker outlived its run"
    );
    assert!(
        eventually(Duration::from_secs(10), || held() == 0),
        "a worker's session outlived its run"
    );
}

#[test]
fn a_worker_run_folder_swapped_for_a_link_is_not_copied_through() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let secrets = env.tmp.path().join("secrets");
    fs::create_dir_all(&secrets).unwrap();
    fs::write(secrets.join("id_rsa"), "PRIVATE KEY").unwrap();
    let body = format!(
        r#"mv "$RALPH_RUN_DIR" "$RALPH_RUN_DIR.away" && ln -s {s} "$RALPH_RUN_DIR"
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md; echo "$RALPH_STEP" > "f$RALPH_STEP.txt"
git add -A; git commit -qm step
echo '{RESULT}'"#,
        s = secrets.display()
    );
    let claude = stand_in(&env, "claude-swapper", &body);
    let out = ralph_br(&env)
        .args(["loop", "--parallel", "2", "--claude"])
        .arg(&claude)
        .assert()
        .get_output()
        .clone();
    let said = String::from_utf8_lossy(&out.stdout);
    let copies: Vec<String> = walkdir::WalkDir::new(env.project.join(".ralph/runs"))
        .into_iter()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("id_rsa"))
        .map(|e| e.path().display().to_string())
        .collect();
    assert!(
        copies.is_empty(),
        "copied through the link: {copies:?}\n{said}"
    );
    assert!(said.contains("is not a folder of ralph's"), "{said}");
}

#[test]
fn a_resolution_that_leaves_conflict_markers_goes_on_until_none_is_left() {
    let env = conflicting();
    for _ in 0..2 {
        env.api
            .session([Reply::bash(REWRITE), Reply::text("Done.")]);
    }
    // The first resolution commits the markers as they are; told so, the
    // next one resolves.
    env.api.session([
        Reply::bash("git add -A && git commit -q --no-edit"),
        Reply::text("Resolved (not really)."),
    ]);
    env.api.session([
        Reply::bash(
            "printf 'line of 1\\nline of 2\\n' > shared.txt && sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && git commit -qam 'resolve the markers'",
        ),
        Reply::text("Resolved."),
    ]);
    let out = ralph_loop(&env)
        .args(["--parallel", "2", "--max-iterations", "6"])
        .stdout_with(0);
    assert!(
        out.contains("conflict markers are left in shared.txt"),
        "{out}"
    );
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    let shared = fs::read_to_string(env.project.join("shared.txt")).unwrap();
    assert_eq!(shared, "line of 1\nline of 2\n");
    let told = env.api.turns().iter().any(|t| {
        t.user_text()
            .contains("committed with conflict markers still in: shared.txt")
    });
    assert!(told, "the next session was told where the markers are");
}

#[test]
fn the_pace_counts_every_workers_sessions() {
    let env = with_spec("# Spec\n\n- [ ] **1** A\n- [ ] **2** B\n- [ ] **3** C\n");
    let (claude, log) = timed_stand_in(&env, 1);
    let run = Live::start(
        ralph_br(&env)
            .args([
                "loop",
                "--parallel",
                "3",
                "--max-sessions-per-hour",
                "2",
                "--claude",
            ])
            .arg(&claude),
    );
    let pacing = || spans(&log).values().filter(|(_, end)| *end > 0.0).count() == 2;
    assert!(
        eventually(Duration::from_secs(40), pacing),
        "{:?}",
        spans(&log)
    );
    // The third step's worker says it waits for the hour: the moment it
    // would have started a session has passed.
    run.wait_for(
        "2 sessions started in the last hour (--max-sessions-per-hour)",
        Duration::from_secs(60),
    );
    assert_eq!(
        spans(&log).len(),
        2,
        "a third session started: {:?}",
        spans(&log)
    );
    run.signal(nix::sys::signal::Signal::SIGINT);
    let (code, said, _) = run.finish(Duration::from_secs(30));
    assert_eq!(code, Some(130), "{said}");
}

#[test]
fn a_parallel_runs_coordinator_workers_and_their_sessions_hold_no_github_token() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let seen = env.tmp.path().join("seen");
    fs::create_dir_all(&seen).unwrap();
    // The stand-in's parent is the worker loop that started it.
    let body = format!(
        r#"env > {seen}/session-$RALPH_STEP.env
tr '\0' '\n' < /proc/$PPID/environ > {seen}/worker-$RALPH_STEP.env
tr '\0' '\n' < /proc/$(sed 's/.*) //' /proc/$PPID/stat | cut -d' ' -f2)/environ > {seen}/coordinator-$RALPH_STEP.env
tr '\0' ' ' < /proc/$PPID/cmdline > {seen}/worker-$RALPH_STEP.cmd
echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
git add -A && git commit -qm "step $RALPH_STEP"
echo '{RESULT}'"#,
        seen = seen.display()
    );
    let claude = stand_in(&env, "claude-env", &body);
    let tokens = [
        ("GH_TOKEN", "ghp_parallelTESTtoken01234567"),
        ("GITHUB_TOKEN", "ghs_parallelTESTtoken01234567"),
        ("GH_ENTERPRISE_TOKEN", "ghe_parallelTESTtoken0123456"),
        ("GITHUB_ENTERPRISE_TOKEN", "ghe_parallelTESTtoken7654321"),
    ];
    let mut run = ralph_br(&env)
        .args(["loop", "--claude"])
        .arg(&claude)
        .args(["--parallel", "2", "--max-iterations", "4"])
        .env("RALPH_TEST_MARK", "seen");
    for (k, v) in tokens {
        run = run.env(k, v);
    }
    let out = run.stdout_with(0);
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    for step in ["1", "2"] {
        let cmd = fs::read_to_string(seen.join(format!("worker-{step}.cmd"))).unwrap();
        assert!(cmd.contains("--worker-step"), "a worker loop: {cmd}");
        for f in [
            format!("worker-{step}.env"),
            format!("session-{step}.env"),
            format!("coordinator-{step}.env"),
        ] {
            let text = fs::read_to_string(seen.join(&f)).unwrap();
            assert!(text.contains("RALPH_TEST_MARK=seen"), "{f}: {text}");
            assert!(!text.contains("RALPH_LOOP_PID"), "{f}: {text}");
            for (k, v) in tokens {
                assert!(
                    !text.contains(&format!("{k}=")) && !text.contains(v),
                    "{k} reached {f}"
                );
            }
        }
    }
}

#[test]
fn max_time_is_the_whole_runs_and_a_late_worker_gets_what_is_left() {
    let env = with_spec("# Spec\n\n## First\n\n- [ ] **1** A\n\n## Then\n\n- [ ] **2** B\n");
    let (claude, _) = timed_stand_in(&env, 3);
    let out = ralph_br(&env)
        .args(["loop", "--parallel", "2", "--max-time", "5s", "--claude"])
        .arg(&claude)
        .assert()
        .get_output()
        .clone();
    let said = String::from_utf8_lossy(&out.stdout);
    // The second step's worker starts after ~3 s of a 5 s run: its own
    // limit is what was left, not 5 s again, so its 3 s session is cut.
    assert!(said.contains("merged **1** A"), "{said}");
    assert!(
        said.lines()
            .any(|l| l.starts_with("[w2]") && l.contains("time limit")),
        "w2 stopped at the run's deadline: {said}"
    );
    let s = summary(&env);
    assert!(s["duration_s"].as_f64().unwrap() < 8.0, "{s}");
    assert_eq!(out.status.code(), Some(4), "{said}");
}

/// A lifecycle hook may leave a process running that holds the worker's
/// output open (`setsid daemon &` after the last session, which no session
/// sweep ends): the run reads the worker's last lines and goes on without
/// waiting for that process.
#[test]
fn a_hook_that_leaves_a_process_holding_a_workers_output_does_not_hold_the_run() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let (claude, _log) = timed_stand_in(&env, 0);
    fs::write(
        env.project.join(".ralph/config.toml"),
        format!(
            "claude = \"{}\"\n[hooks]\non_session_end = \"setsid sleep 6417 &\"\n",
            claude.display()
        ),
    )
    .unwrap();
    env.commit_all("the config");
    env.approve_config();
    let child = ralph_br(&env).args(["loop", "--parallel", "2"]).spawn();
    let out = wait_output(child, Duration::from_secs(120));
    let left = processes_with("sleep 6417");
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("complete: all 2 steps done"), "{stdout}");
    nothing_left(&env);
}

/// A program named by a path from where the run starts (`--claude
/// tools/claude`, not committed) is the same program for every worker,
/// though each starts in a worktree of its own.
#[test]
fn a_program_path_on_the_command_line_is_read_from_where_the_run_starts() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let (claude, _log) = timed_stand_in(&env, 0);
    fs::create_dir(env.project.join("tools")).unwrap();
    fs::copy(&claude, env.project.join("tools/claude")).unwrap();
    fs::write(env.project.join(".git/info/exclude"), "tools/\n").unwrap();
    let out = ralph_br(&env)
        .args(["loop", "--parallel", "2", "--claude", "tools/claude"])
        .stdout_with(0);
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    nothing_left(&env);
}

/// The shared `.git/config` is never rewritten by the run (a merged
/// worker's branch is deleted without it): Claude Code's sandbox binds
/// `config.lock` as it sets up a confined Bash call, and one appearing and
/// going under a sibling worker's call failed that call.
#[test]
fn a_parallel_run_leaves_the_shared_git_config_untouched() {
    use std::os::unix::fs::MetadataExt;
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n");
    let (claude, _log) = timed_stand_in(&env, 0);
    let config = env.project.join(".git/config");
    let before = fs::metadata(&config).unwrap();
    let text = fs::read_to_string(&config).unwrap();
    let out = ralph_br(&env)
        .args(["loop", "--parallel", "2", "--claude"])
        .arg(&claude)
        .stdout_with(0);
    assert!(out.contains("complete: all 3 steps done"), "{out}");
    nothing_left(&env);
    let after = fs::metadata(&config).unwrap();
    assert_eq!(
        (after.ino(), after.mtime(), after.mtime_nsec()),
        (before.ino(), before.mtime(), before.mtime_nsec()),
        "rewritten: {}",
        fs::read_to_string(&config).unwrap()
    );
    assert_eq!(fs::read_to_string(&config).unwrap(), text);
}
