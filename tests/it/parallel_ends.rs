//! A parallel run always ends: a step is done only when its branch's
//! committed spec says so, a worker that did not start is not done, a step
//! given back to workers that run no session stops the run, `--max-time`
//! bounds the whole run, the run's budget holds any number of session
//! starts, and a resumed board has only the spec's steps, never more
//! workers than slots. Each run is bounded by the test's own deadline: a
//! run that spins fails the test instead of hanging it.

use std::fs;
use std::time::Duration;

use crate::parallel::{head_files, nothing_left, with_spec};
use crate::support::*;

/// Long enough for a few real sessions on a loaded machine; a run that
/// spins is stopped there and the test fails.
const BOUND: Duration = Duration::from_secs(150);

/// A session's Bash command that checks the first open box and commits
/// nothing.
const CHECK_ONLY: &str = "sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md";

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

/// How many workers the run started (`wN starts step ...` lines).
fn workers_started(said: &str) -> usize {
    said.lines().filter(|l| l.contains(" starts step ")).count()
}

fn waiting(env: &TestEnv) -> String {
    fs::read_to_string(env.project.join(".ralph/WAITING")).unwrap_or_default()
}

#[test]
fn a_box_checked_but_not_committed_is_no_step_done_and_the_run_stops_at_its_limit() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n");
    for _ in 0..2 {
        env.api
            .session([Reply::bash(CHECK_ONLY), Reply::text("Done.")]);
    }
    let (code, said) = ended(ralph_loop(&env).args(["--parallel", "2", "--max-iterations", "2"]));
    assert_eq!(code, Some(4), "{said}");
    assert!(said.contains("iteration limit reached"), "{said}");
    assert_eq!(
        workers_started(&said),
        1,
        "one worker, never restarted: {said}"
    );
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(spec.contains("- [ ] **1** One"), "nothing merged: {spec}");
    assert_eq!(
        records(&env).len(),
        2,
        "both sessions ran in the one worker"
    );
}

#[test]
fn a_worker_that_does_not_start_is_not_done_and_the_run_waits_naming_its_step() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n");
    env.approved_config("[gate]\ncommands = [\"test ! -e broken.txt\"]\n");
    env.commit_all("gated");
    // The session breaks the gate and, in its worktree, rewrites the gate
    // to pass: that config is not approved, so the worker the run starts
    // again there (the merge undone) refuses to start.
    env.api.session([
        Reply::bash(format!(
            "echo oops > broken.txt && printf '[gate]\\ncommands = [\"true\"]\\n' > .ralph/config.toml && {CHECK_ONLY} && git add -A && git commit -qm step"
        )),
        Reply::text("Done."),
    ]);
    let (code, said) = ended(ralph_loop(&env).args(["--parallel", "2", "--max-iterations", "3"]));
    assert_eq!(code, Some(3), "{said}");
    let why = waiting(&env);
    assert!(
        why.contains("**1** One") && why.contains("did not start"),
        "WAITING names the step and why: {why}\n{said}"
    );
    assert!(why.contains("ralph trust"), "what to do: {why}");
    assert_eq!(workers_started(&said), 2, "{said}");
    assert!(!head_files(&env).contains(&"broken.txt".to_string()));
}

#[test]
fn a_resolution_that_cannot_begin_stops_the_run_naming_the_step_and_gits_words() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    fs::write(env.project.join("shared.txt"), "base\n").unwrap();
    env.commit_all("shared");
    // Each step rewrites the same line, commits, and leaves a change to
    // that file uncommitted: git refuses to merge into such a worktree.
    let work = format!(
        "sh -c 'sleep 1'; echo \"line of $RALPH_STEP\" > shared.txt && {CHECK_ONLY} && git add -A && git commit -qm \"step $RALPH_STEP\" && echo more >> shared.txt"
    );
    for _ in 0..2 {
        env.api
            .session([Reply::bash(work.clone()), Reply::text("Done.")]);
    }
    let (code, said) = ended(ralph_loop(&env).args(["--parallel", "2", "--max-iterations", "6"]));
    assert_eq!(code, Some(3), "{said}");
    let why = waiting(&env);
    assert!(
        why.contains("shared.txt") && (why.contains("**1** One") || why.contains("**2** Two")),
        "WAITING names the step and the file: {why}\n{said}"
    );
    assert!(why.contains("overwritten"), "git's own words: {why}");
    assert!(workers_started(&said) <= 3, "{said}");
}

#[test]
fn max_time_bounds_the_whole_run_and_no_worker_starts_past_it() {
    let env = with_spec("# Spec\n\n## First\n\n- [ ] **1** A\n\n## Then\n\n- [ ] **2** B\n");
    // The gate after the first merge takes the rest of the run's time.
    // (No baseline: it would take the run's time before any worker.)
    env.approved_config("[gate]\ncommands = [\"sleep 6\"]\nbaseline = \"off\"\n");
    env.commit_all("a slow gate");
    let stand_in = stand_in(
        &env,
        "claude-step",
        &format!(
            "echo \"$RALPH_STEP\" >> {log}\n{CHECK_ONLY} && git add -A && git commit -qm step\necho '{RESULT}'",
            log = env.tmp.path().join("steps.log").display()
        ),
    );
    let (code, said) = ended(
        env.ralph()
            .args(["loop", "--parallel", "2", "--max-time", "3s", "--claude"])
            .arg(&stand_in),
    );
    assert_eq!(code, Some(4), "{said}");
    assert!(said.contains("time limit reached"), "{said}");
    // (`RALPH_STEP` is the step's label.)
    let steps = fs::read_to_string(env.tmp.path().join("steps.log")).unwrap_or_default();
    assert_eq!(steps, "1\n", "a session started past --max-time: {said}");
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

/// A stand-in that asks for a human while `hold` exists; else takes two
/// seconds over its step (logging when, as `parallel::spans` reads), checks
/// its box and commits.
fn holding_stand_in(
    env: &TestEnv,
    hold: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let log = env.tmp.path().join("sessions.log");
    let body = format!(
        r#"if [ -e {hold} ]; then ralph waiting --reason "hold on" >/dev/null; echo '{RESULT}'; exit 0; fi
echo "$RALPH_STEP start $(date +%s.%N)" >> {log}
sleep 2
echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
{CHECK_ONLY} && git add -A && git commit -qm "step $RALPH_STEP"
echo "$RALPH_STEP end $(date +%s.%N)" >> {log}
echo '{RESULT}'"#,
        hold = hold.display(),
        log = log.display()
    );
    (stand_in(env, "claude-holding", &body), log)
}

/// The most sessions that ran at once, by their logged spans.
fn most_at_once(log: &std::path::Path) -> usize {
    let spans = crate::parallel::spans(log);
    spans
        .values()
        .map(|(start, _)| {
            spans
                .values()
                .filter(|(s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_tampered_board_on_resume_has_only_the_specs_steps_and_never_more_workers_than_slots() {
    let env = with_spec("# Spec\n\n- [ ] **1** A\n- [ ] **2** B\n- [ ] **3** C\n- [ ] **4** D\n");
    let hold = env.tmp.path().join("hold");
    fs::write(&hold, "").unwrap();
    let (claude, log) = holding_stand_in(&env, &hold);
    let (code, said) = ended(
        env.ralph()
            .args(["loop", "--parallel", "2", "--claude"])
            .arg(&claude),
    );
    assert_eq!(code, Some(3), "the first run waits: {said}");
    // The board (in the project, where a session can write) gets the
    // spec's other two steps as queued, and 500 steps the spec lacks.
    let board_path = run_dir(&env).join("parallel.json");
    let mut board: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&board_path).unwrap()).unwrap();
    let steps = board["steps"].as_object_mut().unwrap();
    let slot = |n: usize| serde_json::json!({"worktree": format!("par-tampered-{n}-abcdef"), "worker": null, "place": "queued"});
    steps.insert("**3** C".into(), slot(3));
    steps.insert("**4** D".into(), slot(4));
    for n in 0..500 {
        steps.insert(format!("**x{n}** not in the spec"), slot(100 + n));
    }
    fs::write(&board_path, board.to_string()).unwrap();
    fs::remove_file(&hold).unwrap();
    env.ralph().args(["resume"]).assert().success();
    let (code, said) = ended(
        env.ralph()
            .args(["loop", "--resume", "--parallel", "2", "--claude"])
            .arg(&claude),
    );
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("complete: all 4 steps done"), "{said}");
    assert!(
        said.contains("500 steps the spec does not have"),
        "the dropped steps are said: {said}"
    );
    assert!(!said.contains("not in the spec starts"), "{said}");
    assert!(
        most_at_once(&log) <= 2,
        "more than 2 at once: {:?}",
        crate::parallel::spans(&log)
    );
    let files = head_files(&env);
    for n in 1..=4 {
        assert!(files.contains(&format!("step-{n}.txt")), "{files:?}");
    }
    nothing_left(&env);
}

/// A session's Bash command: step 1's first session commits a try and
/// leaves the step open; any other checks its step's box and commits.
const ONE_TRIES_FIRST: &str = "if [ \"$RALPH_STEP\" = 1 ] && [ ! -e tried-1 ]; then \
     echo x > tried-1 && git add -A && git commit -qm try; \
     else echo \"$RALPH_STEP\" > \"step-$RALPH_STEP.txt\" && \
     sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && \
     git add -A && git commit -qm \"step $RALPH_STEP\"; fi";

/// A project of the steps in `spec`, with `sessions` sessions queued, each
/// running `script`.
fn trying(spec: &str, script: &str, sessions: usize) -> TestEnv {
    let env = with_spec(spec);
    for _ in 0..sessions {
        env.api
            .session([Reply::bash(script), Reply::text("Done for now.")]);
    }
    env
}

/// Two steps, step 1 over its budget at once, `sessions` queued, run
/// with no wait: it ends asking (exit 3); what it said.
fn ended_paused(sessions: usize) -> (TestEnv, String) {
    let env = trying(
        "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n",
        ONE_TRIES_FIRST,
        sessions,
    );
    let (code, out) = ended(ralph_loop(&env).args([
        "--parallel",
        "2",
        "--max-cost-per-step",
        "0.000001",
        "--max-iterations",
        "6",
    ]));
    assert_eq!(code, Some(3), "{out}");
    (env, out)
}

/// `--max-cost-per-step` in a run of many steps: the step over its budget
/// pauses (its work kept) and the others go on and merge; the run asks,
/// waits once nothing else is left, and an answer giving the step more
/// has a new worker finish it, told the answer.
#[test]
fn a_step_over_its_budget_pauses_while_the_others_merge_and_an_answer_resumes_it() {
    let env = trying(
        "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n",
        ONE_TRIES_FIRST,
        3,
    );
    let live = Live::start(ralph_loop(&env).args([
        "--parallel",
        "2",
        "--max-cost-per-step",
        "0.000001",
        "--wait-for-answer",
        "2m",
        "--max-iterations",
        "6",
    ]));
    live.wait_for("merged **2** Two into main", BOUND);
    live.wait_for(
        "a step is paused at its budget; the others go on while you answer:",
        BOUND,
    );
    let waiting = fs::read_to_string(env.project.join(".ralph/WAITING")).unwrap();
    assert!(
        waiting.contains("a step is over its budget: w")
            && waiting.contains("(step **1** One): step **1** One has cost $")
            && waiting.contains("option: give the step <$0.0001 more and go on")
            && waiting.contains("option: skip the step: leave it open")
            && waiting.contains("option: stop the run;"),
        "{waiting}"
    );
    // Paused: no worker works it, its try kept in its worktree.
    let status = env.ralph().arg("status").stdout_with(0);
    assert!(
        status.contains("1 paused at its budget")
            && status.contains("paused at its budget **1** One"),
        "{status}"
    );
    env.ralph()
        .args(["answer", "Finish it: check its box."])
        .stdout_with(0);
    let (code, out, err) = live.finish(BOUND);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("answered by terminal: Finish it: check its box.")
            && out.contains(
                "step **1** One has its budget again (the answer of terminal): it is worked again"
            )
            && out.contains("complete: all 2 steps done"),
        "{out}"
    );
    // Its new worker was told the answer, and finished on its try.
    assert!(
        told(&env, 3).contains("> Finish it: check its box."),
        "{}",
        told(&env, 3)
    );
    let files = head_files(&env);
    for f in ["tried-1", "step-1.txt", "step-2.txt"] {
        assert!(files.contains(&f.to_string()), "{f} merged: {files:?}");
    }
    assert!(!env.project.join(".ralph/WAITING").exists());
    nothing_left(&env);
    assert_eq!(summary(&env)["iterations"], 3);
}

/// A run of many steps that does not wait ends asking about its paused
/// step (exit 3); the answer "skip" sent then is taken by `--resume`: the
/// step is left open, its work kept, and the run ends with the rest merged.
#[test]
fn a_paused_step_skipped_after_the_run_stopped_is_left_open_with_its_work() {
    let (env, out) = ended_paused(2);
    assert!(
        out.contains("merged **2** Two into main")
            && out.contains("── ralph: a step is over its budget: w")
            && out.contains("Answer WAITING's question (`ralph answer --option <n>`"),
        "{out}"
    );
    let answered = env.ralph().args(["answer", "--option", "2"]).stdout_with(0);
    assert!(answered.contains("skip the step"), "{answered}");
    let (code, out) = ended(ralph_loop(&env).arg("--resume"));
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("step **1** One is skipped (the answer of terminal): left open, its work kept in worktree par-")
            && out.contains("skipped at your answer and still open: **1** One"),
        "{out}"
    );
    // No session ran for it; its try is in its worktree, not merged.
    assert_eq!(records(&env).len(), 2);
    assert!(!head_files(&env).contains(&"tried-1".to_string()));
    let worktrees = env.git(&["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 2, "{worktrees}");
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(
        spec.contains("- [ ] **1** One") && spec.contains("- [x] **2** Two"),
        "{spec}"
    );
}

/// A session's Bash command: step 1's first session asks a question (the
/// marker `{0}`, outside the project, says it asked); any other checks
/// its step's box and commits.
fn one_asks_first(marker: &std::path::Path) -> String {
    format!(
        "if [ \"$RALPH_STEP\" = 1 ] && [ ! -e {m} ]; then touch {m}; \
         ralph waiting --question 'Which database?' --option Postgres --option SQLite; \
         else echo \"$RALPH_STEP\" > \"step-$RALPH_STEP.txt\" && \
         sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && \
         git add -A && git commit -qm \"step $RALPH_STEP\"; fi",
        m = marker.display()
    )
}

/// A run of many steps that stops for a worker's question (not a step's
/// budget), answered before `--resume`: nothing would hand that answer to
/// the step's next worker, so the resumed run does not take it (saying
/// "the run goes on" and dropping it) but waits for a human as before,
/// the answer left in the inbox.
#[test]
fn an_answer_to_a_workers_question_is_not_taken_and_dropped_at_resume() {
    let env = with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let marker = env.tmp.path().join("asked-1");
    for _ in 0..4 {
        env.api
            .session([Reply::bash(one_asks_first(&marker)), Reply::text("Done.")]);
    }
    let (code, out) = ended(ralph_loop(&env).args([
        "--parallel",
        "2",
        "--max-cost-per-step",
        "5",
        "--max-iterations",
        "6",
    ]));
    assert_eq!(code, Some(3), "{out}");
    assert!(
        waiting(&env).contains("Which database?"),
        "{}",
        waiting(&env)
    );
    env.ralph().args(["answer", "Use SQLite"]).stdout_with(0);
    let (code, out) = ended(ralph_loop(&env).arg("--resume"));
    assert_eq!(code, Some(3), "{out}");
    assert!(
        !out.contains("answered by terminal") && out.contains("Waiting for a human"),
        "{out}"
    );
    assert!(waiting(&env).contains("Which database?"));
    assert_eq!(records(&env).len(), 2, "no session ran after the answer");
}

/// A session's Bash command: steps 1 and 2 each commit a try first and
/// stay open; any other session checks its step's box and commits.
const TWO_TRY_FIRST: &str = "if [ \"$RALPH_STEP\" != 3 ] && [ ! -e \"tried-$RALPH_STEP\" ]; then \
     echo x > \"tried-$RALPH_STEP\" && git add -A && git commit -qm try; \
     else echo \"$RALPH_STEP\" > \"step-$RALPH_STEP.txt\" && \
     sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && \
     git add -A && git commit -qm \"step $RALPH_STEP\"; fi";

/// Two steps paused at once are asked about in turn: the second as soon as
/// the first is answered (the run, with nothing else left, waits for it
/// rather than ending); a second answer sent to the first question (a
/// change of mind, another channel) is no answer to the next one, however
/// soon that is asked: it is dropped, said, and the next question waits
/// for its own answer.
#[test]
fn two_paused_steps_are_asked_in_turn_and_a_late_answer_to_the_first_is_not_the_seconds() {
    let env = trying(
        "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n",
        TWO_TRY_FIRST,
        3,
    );
    let live = Live::start(ralph_loop(&env).args([
        "--parallel",
        "3",
        "--max-cost-per-step",
        "0.000001",
        "--wait-for-answer",
        "2m",
        "--max-iterations",
        "8",
    ]));
    // Both paused, nothing else left: the run waits on the first question.
    live.wait_for("merged **3** Three into main", BOUND);
    for n in ["**1** One", "**2** Two"] {
        live.wait_for(&format!("{n} has cost $0.0016 in 1 session without being finished, past its budget of <$0.0001 (--max-cost-per-step); its work is kept; its step is paused"), BOUND);
    }
    live.wait_for(
        "a step is paused at its budget; the others go on while you answer:",
        BOUND,
    );
    let since = |w: &str| {
        w.lines()
            .find_map(|l| l.strip_prefix("since: "))
            .unwrap_or_default()
            .to_string()
    };
    let first = since(&waiting(&env));
    let skip = env.ralph().args(["answer", "--option", "2"]).stdout_with(0);
    assert!(skip.contains("skip the step"), "{skip}");
    // The next question, asked once the first is answered.
    let asked = std::time::Instant::now();
    while since(&waiting(&env)).is_empty() || since(&waiting(&env)) == first {
        assert!(
            asked.elapsed() < BOUND,
            "no second question: {}",
            live.stdout()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Then a second answer to the first question (a change of mind sent
    // from elsewhere), as the inbox holds one: "stop the run".
    let inbox = fs::read_dir(env.home.join(".local/state/ralph/loops"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "inbox"))
        .expect("the loop's inbox");
    let late = serde_json::json!({"v": 1, "at": 1, "by": "terminal", "asked": first,
        "command": {"kind": "answer", "option": 3,
            "text": "stop the run; its work is kept and `ralph loop --resume` goes on"}});
    fs::write(inbox.join("9999999999999-late.json"), late.to_string()).unwrap();
    live.wait_for("was to an earlier question: dropped", BOUND);
    // The second question, asked after the first was answered.
    let second = waiting(&env);
    assert!(second.contains("option: skip the step"), "{second}");
    env.ralph().args(["answer", "--option", "2"]).stdout_with(0);
    let (code, out, err) = live.finish(BOUND);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.matches("is skipped (the answer of terminal)").count() == 2
            && !out.contains("the run stops")
            && out.contains("merged **3** Three into main")
            && out.contains("skipped at your answer and still open: **1** One, **2** Two"),
        "{out}"
    );
}

/// The board is in the run folder, where a session can write: a step
/// planted there as skipped is worked again when the run is resumed, and
/// the run completes.
#[test]
fn a_skip_planted_in_the_board_does_not_hold_on_resume() {
    let (env, _) = ended_paused(3);
    let board_path = run_dir(&env).join("parallel.json");
    let board = fs::read_to_string(&board_path).unwrap();
    assert!(board.contains("\"paused\""), "{board}");
    fs::write(&board_path, board.replace("\"paused\"", "\"skipped\"")).unwrap();
    env.ralph().arg("resume").stdout_with(0);
    let (code, out) = ended(ralph_loop(&env).args(["--resume", "--max-cost-per-step", "5"]));
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("starts step **1** One") && out.contains("complete: all 2 steps done"),
        "{out}"
    );
    assert_eq!(records(&env).len(), 3);
}
