//! `ralph loop --confined`: sessions without --dangerously-skip-permissions,
//! inside Claude Code's own sandbox, with the real client.

use std::fs;

use predicates::prelude::*;

use crate::support::workspace;
use crate::support::{Reply, TestEnv, sandbox_tools};
use crate::support::{records, summary};

/// A git project with a beads workspace, a three-step spec naming its tasks,
/// and the Stop hook installed.
fn project() -> (TestEnv, Vec<String>) {
    sandbox_tools();
    let env = TestEnv::new();
    env.ralph().args(["install-hook"]).assert().success();
    env.git_init();
    let (epic, t) = workspace(&env);
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    fs::write(
        env.project.join(".ralph/spec.md"),
        format!(
            "# Spec\n\nEpic: [{epic}]\n\n- [ ] **1** First [{}]\n- [ ] **2** Second [{}]\n- [ ] **3** Third [{}]\n",
            t[0], t[1], t[2]
        ),
    )
    .unwrap();
    fs::write(
        env.project.join(".ralph/prompt.md"),
        "Do the first open step.\n",
    )
    .unwrap();
    env.commit_all("start");
    (env, t)
}

/// One step from inside a confined session, whichever is next: write a
/// file, check the first open box, close its task, commit everything (`git
/// add -A`: the sandbox's placeholders must not break it), and `ralph
/// complete` once no box is open.
const STEP: &str = "line=$(grep -m1 -e '- \\[ \\]' .ralph/spec.md); id=${line##*[}; id=${id%]}; \
echo \"$id\" >> work.txt && sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && br close \"$id\" && \
git add -A && git commit -qm \"step $id\" && \
if ! grep -q -e '- \\[ \\]' .ralph/spec.md; then ralph complete -m 'all three steps'; fi";

fn step() -> Vec<Reply> {
    vec![Reply::bash(STEP), Reply::text("Step done.")]
}

/// What the tools of every session of the last run answered with an error:
/// the evidence when a confined step did not go through.
fn tool_errors(env: &TestEnv) -> String {
    let dir = crate::support::run_dir(env);
    let mut out = String::new();
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files.iter().filter(|f| {
        f.to_string_lossy().ends_with(".jsonl") && f.to_string_lossy().contains("session-")
    }) {
        for line in fs::read_to_string(f).unwrap_or_default().lines() {
            if line.contains("\"is_error\":true") && line.contains("tool_result") {
                out.push_str(&format!(
                    "{}: {}\n",
                    f.file_name().unwrap().to_string_lossy(),
                    &line[..line.len().min(1500)]
                ));
            }
        }
    }
    out
}

/// Run the confined loop, which must complete (exit 0); its stdout. A
/// failure shows every tool error of the run.
fn completes(env: &TestEnv) -> String {
    let out = confined_loop(env).assert().get_output().clone();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", tool_errors(env));
    stdout
}

fn confined_loop(env: &TestEnv) -> crate::support::Ralph {
    env.ralph()
        .env("PATH", env.path_with_br())
        .args(["loop", "--confined", "--max-iterations", "6", "--claude"])
        .arg(crate::support::claude_bin())
}

#[test]
fn a_three_step_spec_completes_confined() {
    let (env, t) = project();
    for _ in 0..3 {
        env.api.session(step());
    }
    let stdout = completes(&env);
    assert!(
        stdout.contains("complete: all 3 steps done · 3 iterations"),
        "{stdout}"
    );
    assert_eq!(
        fs::read_to_string(env.project.join("work.txt")).unwrap(),
        format!("{}\n{}\n{}\n", t[0], t[1], t[2])
    );
    assert_eq!(env.not_closed(&t), Vec::<String>::new(), "tasks not closed");
    let recs = records(&env);
    assert!(recs.iter().all(|r| r["confined"] == true), "{recs:?}");
    assert_eq!(summary(&env)["confined"], true);
    env.ralph().arg("status").assert().success().stdout(
        predicate::str::contains("3 iterations").and(predicate::str::contains(", confined")),
    );
    // The sessions were asked to run without skip-permissions, sandboxed.
    let requests = env.api.turns();
    assert!(!requests.is_empty());
}

#[test]
fn writes_outside_the_project_are_refused_and_the_loop_carries_on() {
    let (env, t) = project();
    let tmp_escape = format!("/tmp/ralph-escape-{}", std::process::id());
    let home_escape = env.home.join("escaped-home");
    let unsandboxed = env.home.join("escaped-unsandboxed");
    let hook = env.project.join(".git/hooks/pre-commit");
    // Each attempt fails on its own; the step itself still gets done.
    let mut first = vec![
        Reply::bash(format!(
            "echo x > {}; echo x > {tmp_escape}; echo x > .git/hooks/pre-commit; true",
            home_escape.display()
        )),
        Reply::Tool {
            name: "Bash".into(),
            input: serde_json::json!({
                "command": format!("echo x > {}", unsandboxed.display()),
                "description": "try to leave the sandbox",
                "dangerouslyDisableSandbox": true
            }),
        },
    ];
    first.extend(step());
    env.api.session(first);
    // Two sessions for the other two steps, and one spare: a step that does
    // not go through is taken up again by the next session, as in a real
    // loop (the failure shows in the assertion message).
    for _ in 0..3 {
        env.api.session(step());
    }
    let stdout = completes(&env);
    for p in [
        home_escape.as_path(),
        std::path::Path::new(&tmp_escape),
        unsandboxed.as_path(),
        hook.as_path(),
    ] {
        assert!(
            !p.exists(),
            "{} was written from a confined session",
            p.display()
        );
    }
    assert!(stdout.contains("complete: all 3 steps done"), "{stdout}");
    assert_eq!(env.not_closed(&t), Vec::<String>::new(), "tasks not closed");
}

#[test]
fn without_bubblewrap_confined_refuses_to_start_and_says_how_to_fix_it() {
    let env = TestEnv::new();
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    fs::write(env.project.join(".ralph/prompt.md"), "go\n").unwrap();
    env.git(&["init", "-q"]);
    // A PATH with git but neither bwrap nor socat.
    let bin = env.tmp.path().join("bin-without-bwrap");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(which::which("git").unwrap(), bin.join("git")).unwrap();
    env.ralph()
        .env("PATH", &bin)
        .args(["loop", "--confined", "--claude"])
        .arg(crate::support::claude_bin())
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--confined cannot be had here")
                .and(predicate::str::contains("bwrap and socat not found"))
                .and(predicate::str::contains("apt-get install bubblewrap socat")),
        );
    assert!(!env.project.join(".ralph/runs").exists(), "nothing started");
    // Asked for in the config, doctor fails the check with the fix.
    fs::write(env.project.join(".ralph/config.toml"), "confined = true\n").unwrap();
    env.ralph()
        .env("PATH", &bin)
        .arg("doctor")
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("FAIL confined")
                .and(predicate::str::contains("apt-get install bubblewrap socat")),
        );
}

/// Not a test: the benchmark of confined mode's cost per session, run by
/// `benches/confined.sh` (`--ignored`). Sessions of each mode alternate, so
/// the machine's drift hits both alike; each session makes one Bash call.
#[test]
#[ignore = "a benchmark: benches/confined.sh runs it"]
fn bench_confined_overhead_per_session() {
    let (env, _) = project();
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (i, confined) in [false, true].into_iter().enumerate() {
            env.api
                .session([Reply::bash("echo bench >> bench.txt"), Reply::text("ok")]);
            let mut r = env
                .ralph()
                .env("PATH", env.path_with_br())
                .args([
                    "loop",
                    "--max-iterations",
                    "1",
                    "--no-progress-limit",
                    "9",
                    "--claude",
                ])
                .arg(crate::support::claude_bin());
            if confined {
                r = r.arg("--confined");
            }
            let t0 = std::time::Instant::now();
            r.assert().code(4);
            times[i].push(t0.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (plain, confined) = (median(&mut times[0]), median(&mut times[1]));
    println!(
        "{rounds} interleaved rounds, one session of one Bash call each, median: default {:.0} ms, confined {:.0} ms: +{:.0} ms per session ({:.2}x)",
        plain * 1000.0,
        confined * 1000.0,
        (confined - plain) * 1000.0,
        confined / plain
    );
}

/// A confined session may not make `.ralph/config.toml` where there is
/// none (its keys that need no approval would set the next run's
/// options): Claude Code's sandbox lets it, so ralph removes it after the
/// session, and says so.
#[test]
fn a_confined_claude_session_cannot_leave_a_config_of_its_making() {
    let (env, _) = project();
    let config = env.project.join(".ralph/config.toml");
    assert!(!config.exists());
    env.api.session([
        Reply::bash("printf 'max_iterations = 1000\\n' > .ralph/config.toml && echo made"),
        Reply::text("Done."),
    ]);
    let out = env
        .ralph()
        .env("PATH", env.path_with_br())
        .args(["loop", "--confined", "--max-iterations", "1", "--claude"])
        .arg(crate::support::claude_bin())
        .assert()
        .code(4)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains(
            "session 1 (claude) made .ralph/config.toml, which a confined session may not: removed"
        ),
        "{out}"
    );
    assert!(!config.exists(), "{out}");
}

#[test]
fn ralph_waiting_works_from_inside_a_confined_session() {
    let (env, _) = project();
    env.api.session([
        Reply::bash("ralph waiting --reason 'the staging password is needed'"),
        Reply::text("Asked for help."),
    ]);
    confined_loop(&env)
        .assert()
        .code(3)
        .stdout(predicate::str::contains(
            "waiting for a human: the staging password is needed",
        ));
}

#[test]
fn the_reviewer_of_a_confined_run_is_confined_too() {
    let (env, _t) = project();
    fs::write(env.project.join(".ralph/config.toml"), "[review]\n").unwrap();
    env.approve_config();
    env.commit_all("reviewed");
    for _ in 0..3 {
        env.api.session(step());
    }
    // The reviewer tries to write outside the project, then approves.
    let escape = env.home.join("escaped-by-the-reviewer");
    env.api.session([
        Reply::bash(format!("echo x > {}", escape.display())),
        Reply::text("Checked.\n\nVERDICT: approve"),
    ]);
    let stdout = completes(&env);
    assert!(
        stdout.contains("the reviewer approved") && stdout.contains("complete: all 3 steps done"),
        "{stdout}"
    );
    assert!(!escape.exists(), "the reviewer wrote outside the project");
    let recs = records(&env);
    let review = recs.last().unwrap();
    assert_eq!(
        (&review["review"]["verdict"], &review["confined"]),
        (&"approved".into(), &true.into())
    );
    let command = review["command"].to_string();
    assert!(
        command.contains("--setting-sources") && command.contains("\\\"sandbox\\\""),
        "{command}"
    );
}

/// The control channel is the user's: a confined session's `ralph stop` is
/// refused, and it cannot write into the loop's inbox (ralph's state
/// folder) itself; the run goes on.
#[test]
fn a_confined_session_cannot_use_the_loops_control_channel() {
    let (env, _) = project();
    env.api.session([
        Reply::bash(
            "ralph stop > tried.txt 2>&1; echo \"stop: $?\" >> tried.txt; \
             mkdir -p \"$HOME/.local/state/ralph/loops/probe.inbox\" 2>/dev/null \
             && echo WROTE >> tried.txt; ralph waiting --reason 'seen'",
        ),
        Reply::text("Tried."),
    ]);
    let out = confined_loop(&env).stdout_with(3);
    let tried = fs::read_to_string(env.project.join("tried.txt")).unwrap();
    assert!(
        tried.contains("refused inside a loop's session") && tried.contains("stop: 2\n"),
        "{tried}"
    );
    assert!(!tried.contains("WROTE"), "{tried}");
    assert!(
        !env.home
            .join(".local/state/ralph/loops/probe.inbox")
            .exists()
    );
    assert!(out.contains("waiting for a human: seen"), "{out}");
}
