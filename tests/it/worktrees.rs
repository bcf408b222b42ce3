//! Many loops at once: two loops in two git worktrees of one repository,
//! with the real client, the real tracker and the Stop hook installed.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use predicates::prelude::*;
use serde_json::Value;

use crate::support::workspace;
use crate::support::*;
use crate::support::{Reply, TestEnv, claude_bin, eventually, ralph_bin, wait_output};
use crate::support::{records_in, run_dir_in, stand_in};

/// Any session's one step: the first open box, its task closed, a commit,
/// and `ralph complete` once no box is open. The same script serves every
/// session, whichever loop it belongs to.
/// ralph with the real `br` on its PATH (for the sessions too).
fn with_br(env: &TestEnv) -> crate::support::Ralph {
    env.ralph().env("PATH", env.path_with_br())
}

const STEP: &str = "line=$(grep -m1 -e '- \\[ \\]' .ralph/spec.md); id=${line##*[}; id=${id%]}; \
sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && br close \"$id\" && mkdir -p done && echo \"$id\" > \"done/$id\" && git add -A && git commit -qm \"step $id\" && \
if ! grep -q -e '- \\[ \\]' .ralph/spec.md; then ralph complete -m done; fi";

fn hook_pids(dir: &Path) -> Vec<u64> {
    fs::read_to_string(run_dir_in(dir).join("hook.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["session_pid"].as_u64())
        .collect()
}

#[test]
fn two_loops_in_two_worktrees_complete_side_by_side() {
    let env = TestEnv::new();
    env.ralph().arg("install-hook").assert().success();
    let root = env.project.clone();
    env.git_init();
    let (_epic, t) = {
        let (e, mut t) = workspace(&env);
        let more = env.br(&["create", "Task 4", "--type", "task", "--json"]);
        let v: Value = serde_json::from_str(&more).unwrap();
        t.push(
            v["id"]
                .as_str()
                .or(v[0]["id"].as_str())
                .unwrap()
                .to_string(),
        );
        (e, t)
    };
    fs::create_dir_all(root.join(".ralph")).unwrap();
    fs::write(root.join(".ralph/prompt.md"), "Do the first open step.\n").unwrap();
    // The checkout's own spec, which the worktree loops' merges must leave be.
    let main_spec = "# Main\n\n- [ ] **1** the checkout's own step\n";
    fs::write(root.join(".ralph/spec.md"), main_spec).unwrap();
    env.commit_all("start");
    let spec = |name: &str, a: &str, b: &str| -> PathBuf {
        let p = env.tmp.path().join(format!("spec-{name}.md"));
        fs::write(
            &p,
            format!("# {name}\n\n- [ ] **1** first [{a}]\n- [ ] **2** second [{b}]\n"),
        )
        .unwrap();
        p
    };
    let (spec_a, spec_b) = (spec("a", &t[0], &t[1]), spec("b", &t[2], &t[3]));
    // Four sessions, two a loop; each shows its tool call, then takes a
    // moment, so both loops are seen running (long enough that a loop
    // started late on a loaded machine still overlaps the other: 2 s was
    // missed once in a full-suite run).
    for _ in 0..4 {
        env.api.session([
            Reply::bash(STEP),
            Reply::Stall(Duration::from_secs(5)),
            Reply::text("Step done."),
        ]);
    }
    let claude = claude_bin();
    let claude = claude.to_str().unwrap();
    let t0 = Instant::now();
    let a = with_br(&env)
        .args([
            "loop",
            "--worktree",
            "a",
            "--spec",
            spec_a.to_str().unwrap(),
            "--max-iterations",
            "4",
            "--claude",
            claude,
        ])
        .spawn();
    let b = with_br(&env)
        .args([
            "loop",
            "--worktree",
            "b",
            "--spec",
            spec_b.to_str().unwrap(),
            "--max-iterations",
            "4",
            "--claude",
            claude,
        ])
        .spawn();
    let wt = |n: &str| {
        root.parent()
            .unwrap()
            .join("project.ralph-worktrees")
            .join(n)
    };
    let (wa, wb) = (wt("a"), wt("b"));

    // Both visible from the main checkout while they run.
    let running_both = || {
        let out = env
            .ralph()
            .args(["status", "--all", "--json"])
            .cmd
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let running: Vec<&str> = v
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| !l["running"].is_null())
            .filter_map(|l| l["name"].as_str())
            .collect();
        running.contains(&"a") && running.contains(&"b")
    };
    // Generous: in a fresh clone this runs beside install.sh's release build.
    if !eventually(Duration::from_secs(150), running_both) {
        // Say why: what each loop printed (one may have stopped early).
        let said = [("a", a), ("b", b)].map(|(name, child)| {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let out = wait_output(child, Duration::from_secs(30));
            format!(
                "loop {name} ({:?}):\n{}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        panic!(
            "status --all never showed both loops running\n{}",
            said.join("\n")
        );
    }

    // Follow loop a from elsewhere: its tool lines arrive while it runs.
    let mut follow = env
        .command(ralph_bin())
        .args(["logs", "-f", "--worktree", "a"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen: Arc<Mutex<Vec<(Duration, String)>>> = Arc::default();
    let reader = {
        let (seen, out) = (seen.clone(), follow.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                seen.lock().unwrap().push((t0.elapsed(), line));
            }
        })
    };
    // A second loop in the same worktree is refused; one in the main
    // checkout runs beside them.
    with_br(&env)
        .args(["loop", "--worktree", "a", "--claude", claude])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("another loop is already running"));
    let idle = stand_in(&env, "idle-claude", "sleep 6401");
    let main_loop = with_br(&env)
        .args(["loop", "--claude", idle.to_str().unwrap()])
        .spawn();
    assert!(
        eventually(Duration::from_secs(30), || crate::support::processes_with(
            "sleep 6401"
        )
        .len()
            == 1),
        "the main checkout's loop did not start beside the worktree loops"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(main_loop.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(
        wait_output(main_loop, Duration::from_secs(30))
            .status
            .code(),
        Some(130)
    );

    let out_a = wait_output(a, Duration::from_secs(180));
    let a_done = t0.elapsed();
    let out_b = wait_output(b, Duration::from_secs(180));
    for (name, out, spec) in [("a", &out_a, &spec_a), ("b", &out_b, &spec_b)] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "loop {name}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains(&format!("The work is on branch ralph/{name}"))
                && stdout.contains(&format!("`ralph worktree merge {name}`")),
            "{stdout}"
        );
        // Where its spec came from: --spec, not the checkout.
        assert!(
            stdout.contains(&format!(
                "on branch ralph/{name} (spec.md from {})",
                spec.display()
            )) && !stdout.contains("copied spec.md"),
            "{stdout}"
        );
    }
    let _ = wait_output(follow, Duration::from_secs(30));
    reader.join().unwrap();
    let seen = seen.lock().unwrap();
    let first_tool = seen.iter().find(|(_, l)| l.contains("→ Bash: line=$(grep"));
    assert!(
        first_tool.is_some_and(|(at, _)| *at < a_done),
        "logs -f showed no tool line while loop a ran: {seen:?}"
    );

    // Each loop's commits are on its own branch; main has none of them.
    let log = |r: &str| env.git(&["log", "--format=%s", r]);
    assert!(
        log("ralph/a").contains(&format!("step {}", t[0]))
            && log("ralph/a").contains(&format!("step {}", t[1]))
    );
    assert!(
        log("ralph/b").contains(&format!("step {}", t[2]))
            && log("ralph/b").contains(&format!("step {}", t[3]))
    );
    assert!(!log("ralph/a").contains(&format!("step {}", t[2])));
    assert_eq!(log("main").trim(), "start", "no session committed on main");

    // Every session ran in its own worktree, and each hook ended only its
    // own loop's sessions.
    for dir in [&wa, &wb] {
        let recs = records_in(dir);
        assert_eq!(recs.len(), 2, "{}", dir.display());
        for r in &recs {
            let sid = r["session_id"].as_str().unwrap();
            // Claude Code's own account of where the session ran: the
            // `cwd` of its stream's init event.
            let stream = fs::read_to_string(r["stream_file"].as_str().unwrap()).unwrap();
            let init: Value = serde_json::from_str(stream.lines().next().unwrap()).unwrap();
            assert_eq!(
                init["cwd"].as_str(),
                Some(dir.to_str().unwrap()),
                "session {sid} ran elsewhere: {init}"
            );
        }
        let pids: Vec<u64> = recs.iter().map(|r| r["pid"].as_u64().unwrap()).collect();
        let hooked = hook_pids(dir);
        assert!(
            !hooked.is_empty() && hooked.iter().all(|p| pids.contains(p)),
            "{hooked:?} vs {pids:?}"
        );
    }

    // The tasks both loops closed are closed in the tracker the user sees.
    assert_eq!(
        env.not_closed(&t),
        Vec::<String>::new(),
        "tasks not closed in the tracker the user sees"
    );

    // Removal: refused while the branch has commits on no other branch.
    env.ralph()
        .args(["worktree", "remove", "a"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("on no other branch"));
    // Both merged into the checkout, one after the other, as the README
    // says: the work of both, and the checkout's own spec as it was (a plain
    // `git merge` put a worktree's spec over it, then conflicted on the
    // second). The main loop's untracked .ralph/ files are no obstacle.
    for n in ["a", "b"] {
        env.ralph()
            .args(["worktree", "merge", n])
            .assert()
            .success()
            .stdout(predicates::str::contains(format!(
                "Merged ralph/{n} into {}",
                root.display()
            )));
    }
    assert_eq!(
        fs::read_to_string(root.join(".ralph/spec.md")).unwrap(),
        main_spec
    );
    for id in &t {
        assert_eq!(
            fs::read_to_string(root.join("done").join(id))
                .unwrap()
                .trim(),
            id.as_str()
        );
    }
    // (br's own files are the checkout's: the loops closed tasks there.)
    assert_eq!(
        env.git(&["status", "--porcelain", "--untracked-files=no"]),
        " M .beads/issues.jsonl\n"
    );
    let merges = env.git(&["log", "--merges", "--format=%s"]);
    assert_eq!(
        merges.trim(),
        "Merge branch 'ralph/b'\nMerge branch 'ralph/a'"
    );
    env.ralph()
        .args(["worktree", "remove", "a"])
        .assert()
        .success();
    assert!(!wa.exists());
    env.ralph()
        .args(["worktree", "list"])
        .assert()
        .success()
        .stdout(
            predicates::str::contains("ralph/b").and(predicates::str::contains("ralph/a").not()),
        );
}

#[test]
fn logs_render_a_saved_session_and_worktree_remove_guards_the_work() {
    let env = crate::support::project();
    let text = serde_json::json!({"type": "assistant", "message": {"model": "m", "content": [
        {"type": "text", "text": "Working on it."},
        {"type": "tool_use", "name": "Bash", "input": {"command": "cargo test"}}
    ]}});
    let claude = stand_in(
        &env,
        "talker",
        &format!(
            "echo x >> work.txt\necho '{text}'\necho '{}'",
            crate::support::RESULT
        ),
    );
    let claude = claude.to_str().unwrap();
    env.ralph()
        .args([
            "loop",
            "--worktree",
            "w",
            "--max-iterations",
            "2",
            "--claude",
            claude,
        ])
        .assert()
        .code(4);
    // The latest session, as the loop showed it; plain through a pipe.
    let wt = wt_dir(&env.project, "w");
    let run = run_dir_in(&wt);
    let id = run.file_name().unwrap().to_string_lossy().into_owned();
    let session = |n: u32| {
        format!("── ralph: run {id} · session {n} ──\nWorking on it.\n  → Bash: cargo test\n")
    };
    env.ralph()
        .args(["logs", "--worktree", "w"])
        .prints(0, &session(2), "");
    // The whole run, in order.
    env.ralph()
        .args(["logs", "--worktree", "w", "--all"])
        .prints(0, &(session(1) + &session(2)), "");
    // A session that is not there: which ones are.
    env.ralph()
        .args(["logs", "--worktree", "w", "--session", "9"])
        .prints(
            1,
            "",
            &format!("ralph logs: run {id} has no session 9: it has sessions 1 to 2\n"),
        );
    // No loop there now: -f waits for one, until Ctrl+C.
    let waiting = crate::support::Live::start(env.ralph().args(["logs", "-f", "--worktree", "w"]));
    waiting.wait_for("waiting for one to start", Duration::from_secs(60));
    waiting.signal(nix::sys::signal::Signal::SIGINT);
    assert_eq!(waiting.finish(Duration::from_secs(60)).0, Some(130));

    // Uncommitted work in the worktree: kept unless --force.
    let wt = env
        .project
        .parent()
        .unwrap()
        .join("project.ralph-worktrees/w");
    assert!(
        wt.join("work.txt").exists(),
        "the sessions worked in the worktree"
    );
    assert!(
        !env.project.join("work.txt").exists(),
        "and not in the checkout"
    );
    env.ralph()
        .args(["worktree", "remove", "w"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("uncommitted changes")
                .and(predicate::str::contains("work.txt")),
        );
    assert!(wt.exists());
    env.ralph()
        .args(["worktree", "remove", "w", "--force"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Removed worktree"));
    assert!(!wt.exists());
    env.ralph()
        .args(["worktree", "remove", "nope"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("there is no worktree nope"));
    env.ralph()
        .args(["loop", "--worktree", "../evil"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--worktree"));
}

/// Two confined loops at once, in two worktrees: each session's sandbox
/// settings are its own (Claude Code keeps identical inline settings in one
/// shared file, which a session deletes when it ends), and a worktree's
/// sessions may write the main checkout's tracker.
#[test]
fn two_confined_loops_in_worktrees_at_once() {
    crate::support::sandbox_tools();
    let env = TestEnv::new();
    env.ralph().arg("install-hook").assert().success();
    let root = env.project.clone();
    env.git_init();
    let (_epic, t) = workspace(&env);
    fs::create_dir_all(root.join(".ralph")).unwrap();
    fs::write(root.join(".ralph/prompt.md"), "Do the first open step.\n").unwrap();
    // The checkout's own spec, which the worktree loops' merges must leave be.
    let main_spec = "# Main\n\n- [ ] **1** the checkout's own step\n";
    fs::write(root.join(".ralph/spec.md"), main_spec).unwrap();
    env.commit_all("start");
    let spec = |name: &str, ids: &[&String]| -> PathBuf {
        let p = env.tmp.path().join(format!("spec-{name}.md"));
        let steps: String = ids
            .iter()
            .map(|id| format!("- [ ] a step [{id}]\n"))
            .collect();
        fs::write(&p, format!("# {name}\n\n{steps}")).unwrap();
        p
    };
    let (spec_a, spec_b) = (spec("a", &[&t[0], &t[1]]), spec("b", &[&t[2]]));
    // The sessions of the two loops overlap and end at different times. With
    // one shared settings file, a Bash call set up while another session
    // ends and deletes it fails; seen in 2 of about 10 full-suite runs before
    // each session got its own settings text (not reproducible on demand).
    env.api.session([
        Reply::Stall(Duration::from_secs(3)),
        Reply::bash(STEP),
        Reply::text("Step done."),
    ]);
    for _ in 0..3 {
        env.api
            .session([Reply::bash(STEP), Reply::text("Step done.")]);
    }
    let claude = claude_bin();
    let claude = claude.to_str().unwrap();
    let common = ["--confined", "--max-iterations", "4", "--claude", claude];
    let mut args_a = vec![
        "loop",
        "--worktree",
        "ca",
        "--spec",
        spec_a.to_str().unwrap(),
    ];
    args_a.extend(common);
    let mut args_b = vec![
        "loop",
        "--worktree",
        "cb",
        "--spec",
        spec_b.to_str().unwrap(),
    ];
    args_b.extend(common);
    let (a, b) = (
        with_br(&env).args(&args_a).spawn(),
        with_br(&env).args(&args_b).spawn(),
    );
    for (name, out) in [
        ("ca", wait_output(a, Duration::from_secs(180))),
        ("cb", wait_output(b, Duration::from_secs(180))),
    ] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "loop {name}: {stdout}");
        assert!(stdout.contains("complete: "), "{stdout}");
        assert!(!stdout.contains("uncommitted before"), "{stdout}");
    }
    for dir in [wt_dir(&root, "ca"), wt_dir(&root, "cb")] {
        for r in records_in(&dir) {
            let stream = fs::read_to_string(r["stream_file"].as_str().unwrap()).unwrap();
            assert!(
                !stream.contains("Can't find source path"),
                "a sandboxed command lost its settings file: {stream}"
            );
        }
    }
    assert_eq!(
        env.not_closed(&t),
        Vec::<String>::new(),
        "tasks not closed in the tracker the user sees"
    );
}

#[test]
fn a_worktree_loop_whose_steps_are_all_checked_starts_no_session() {
    let env = crate::support::project();
    let done = env.tmp.path().join("done.md");
    fs::write(&done, "# Done\n\n- [x] **1** one\n- [x] **2** two\n").unwrap();
    let claude = stand_in(&env, "marking-claude", "touch \"$HOME/claude-ran\"");
    let out = env
        .ralph()
        .args(["loop", "--worktree", "done", "--spec"])
        .arg(&done)
        .args(["--gate", "true", "--claude"])
        .arg(&claude)
        .stdout_with(0);
    assert!(
        !env.home.join("claude-ran").exists(),
        "a session ran: {out}"
    );
    assert!(
        out.contains("every step of the spec is already checked (and agrees with the tracker): judging COMPLETE, no session needed")
            && out.contains("the gate passed")
            && out.contains("complete: all 2 steps done · 0 iterations"),
        "{out}"
    );
    // Accepted, the loop's own COMPLETE is written where the loop ran.
    let written: Vec<String> = walkdir::WalkDir::new(env.tmp.path())
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().ends_with(".ralph/COMPLETE"))
        .map(|e| fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(
        written[0].contains("every step was already checked when the loop started"),
        "{}",
        written[0]
    );
}

/// The same, with a gate that fails: the loop's own COMPLETE is rejected
/// into the run folder, none is left in the project, and the loop goes on
/// to a session; one that changes nothing is not followed by the gate
/// again.
#[test]
fn a_loop_whose_steps_are_all_checked_but_whose_gate_fails_writes_no_complete() {
    let env = crate::support::project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Done\n\n- [x] **1** one\n",
    )
    .unwrap();
    env.commit_all("the spec");
    let claude = stand_in(&env, "marking-claude", "touch \"$HOME/claude-ran\"");
    let out = env
        .ralph()
        .args([
            "loop",
            "--max-iterations",
            "1",
            "--gate",
            "false",
            "--gate-baseline",
            "off",
            "--claude",
        ])
        .arg(&claude)
        .stdout_with(4);
    assert!(
        out.contains("judging COMPLETE, no session needed")
            && out.contains("COMPLETE rejected (1 problem), moved to"),
        "{out}"
    );
    assert!(
        env.home.join("claude-ran").exists(),
        "no session ran: {out}"
    );
    assert!(!env.project.join(".ralph/COMPLETE").exists(), "{out}");
    let run = crate::support::run_dir(&env);
    let aside = fs::read_to_string(run.join("COMPLETE.rejected-1")).unwrap();
    // The session changed nothing: the same work is not judged again.
    assert!(!run.join("COMPLETE.rejected-2").exists(), "{out}");
    assert!(
        aside.contains("every step was already checked when the loop started")
            && aside.contains("rejected by ralph loop at")
            && aside.contains("the completion gate"),
        "{aside}"
    );
}

#[test]
fn worktrees_are_made_one_at_a_time() {
    // Two `git worktree add` at once can fail ("failed to read
    // .git/worktrees/a/commondir"), as two loops started together did: ralph
    // makes a worktree only while it holds a lock on the repository's .git.
    let env = crate::support::project();
    let git_dir = std::fs::File::open(env.project.join(".git")).unwrap();
    let held = nix::fcntl::Flock::lock(git_dir, nix::fcntl::FlockArg::LockExclusive).unwrap();
    let loop_ = env
        .ralph()
        .args([
            "loop",
            "--worktree",
            "one",
            "--max-iterations",
            "1",
            "--claude",
            "/bin/false",
        ])
        .spawn();
    // The kernel lists the loop as waiting for the lock this test holds:
    // it has come as far as making the worktree, and stopped there.
    let ino = std::os::unix::fs::MetadataExt::ino(&env.project.join(".git").metadata().unwrap());
    let waiting = format!(" {} ", loop_.id());
    let blocked = || {
        std::fs::read_to_string("/proc/locks")
            .unwrap()
            .lines()
            .any(|l| {
                l.contains("-> FLOCK") && l.contains(&waiting) && l.contains(&format!(":{ino} "))
            })
    };
    assert!(
        crate::support::eventually(Duration::from_secs(60), blocked),
        "the loop never waited for .git's lock:\n{}",
        std::fs::read_to_string("/proc/locks").unwrap()
    );
    let wt = crate::support::wt_dir(&env.project, "one");
    assert!(!wt.exists(), "the worktree was made while .git was locked");
    drop(held);
    let out = wait_output(loop_, Duration::from_secs(60));
    assert!(wt.is_dir(), "{out:?}");
}

/// `ralph worktree remove` deletes the branch, and its section of the
/// config if it has one (an upstream set by a push), and nothing else.
#[test]
fn worktree_remove_deletes_the_branch_and_its_config_section_only() {
    let env = project();
    let path = env.project.parent().unwrap().join(format!(
        "{}.ralph-worktrees/x",
        env.project.file_name().unwrap().to_str().unwrap()
    ));
    env.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "ralph/x",
        path.to_str().unwrap(),
    ]);
    env.git(&["config", "branch.ralph/x.remote", "origin"]);
    env.git(&["config", "branch.ralph/x.merge", "refs/heads/ralph/x"]);
    env.git(&["config", "branch.main.description", "mine"]);
    env.ralph()
        .args(["worktree", "remove", "x"])
        .assert()
        .success();
    assert!(!path.exists());
    assert_eq!(env.git(&["branch", "--list", "ralph/*"]).trim(), "");
    let config = fs::read_to_string(env.project.join(".git/config")).unwrap();
    assert!(!config.contains("ralph/x"), "{config}");
    assert!(config.contains("description = mine"), "{config}");
}

/// `ralph worktree merge` of a branch already in the checkout does nothing
/// and says so; of one whose work conflicts with the checkout's, it stops
/// naming the files, the merge left in progress with this checkout's
/// `.ralph/` already kept.
#[test]
fn worktree_merge_says_when_there_is_nothing_to_merge_and_names_conflicting_files() {
    let env = TestEnv::new();
    let root = env.project.clone();
    env.git_init();
    fs::create_dir_all(root.join(".ralph")).unwrap();
    fs::write(root.join(".ralph/spec.md"), "- [ ] ours\n").unwrap();
    fs::write(root.join("a.txt"), "one\n").unwrap();
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "base"]);
    env.git(&["branch", "ralph/x"]);
    env.ralph()
        .args(["worktree", "merge", "x"])
        .assert()
        .success()
        .stdout(format!(
            "ralph/x is already merged into {}; nothing to do.\n",
            root.display()
        ));

    env.git(&["checkout", "-q", "ralph/x"]);
    fs::write(root.join("a.txt"), "theirs\n").unwrap();
    fs::write(root.join(".ralph/spec.md"), "- [x] theirs\n").unwrap();
    env.git(&["commit", "-qam", "theirs"]);
    env.git(&["checkout", "-q", "main"]);
    fs::write(root.join("a.txt"), "ours\n").unwrap();
    env.git(&["commit", "-qam", "ours"]);
    env.ralph()
        .args(["worktree", "merge", "x"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "merging ralph/x stopped on conflicts in a.txt: resolve them and `git commit` (this checkout's .ralph/ is already kept), or `git merge --abort`",
        ));
    assert_eq!(
        fs::read_to_string(root.join(".ralph/spec.md")).unwrap(),
        "- [ ] ours\n"
    );
    assert_eq!(
        env.git(&["diff", "--name-only", "--diff-filter=U"]),
        "a.txt\n"
    );
}

/// `ralph worktree merge` of a worktree that worked a copy of the
/// checkout's spec: the code is merged and the steps done there are
/// checked in the checkout's spec, which a `ralph loop` here then finds
/// done; a branch that brings nothing but its own `.ralph/` (its loop
/// finished no step) is refused, not merged as an empty commit.
#[test]
fn worktree_merge_checks_the_steps_done_there_and_refuses_a_branch_with_nothing() {
    let env = TestEnv::new();
    let root = env.project.clone();
    env.git_init();
    fs::create_dir_all(root.join(".ralph")).unwrap();
    let spec = "# Spec\n\n- [ ] **1** Parser\n- [ ] **2** Printer\n";
    fs::write(root.join(".ralph/spec.md"), spec).unwrap();
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "base"]);
    // Worktree `idle`: only its own notes changed.
    env.git(&["checkout", "-q", "-b", "ralph/idle"]);
    fs::write(root.join(".ralph/progress.md"), "- nothing done\n").unwrap();
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "notes"]);
    // Worktree `x`: step 1 done, its box checked in its copy.
    env.git(&["checkout", "-q", "-b", "ralph/x", "main"]);
    fs::write(root.join("parser.rs"), "fn parse() {}\n").unwrap();
    fs::write(
        root.join(".ralph/spec.md"),
        spec.replace("- [ ] **1**", "- [x] **1**"),
    )
    .unwrap();
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "step 1"]);
    env.git(&["checkout", "-q", "main"]);

    env.ralph()
        .args(["worktree", "merge", "idle"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "ralph/idle has nothing to merge: what it changed is only its own .ralph/ (its loop finished no step); `ralph worktree remove idle` removes it",
        ));
    assert_eq!(env.git(&["rev-list", "--count", "HEAD"]).trim(), "1");

    let out = env.ralph().args(["worktree", "merge", "x"]).stdout_with(0);
    assert!(
        out.contains("the steps done there are checked in this checkout's spec (**1** Parser)"),
        "{out}"
    );
    assert_eq!(
        fs::read_to_string(root.join(".ralph/spec.md")).unwrap(),
        "# Spec\n\n- [x] **1** Parser\n- [ ] **2** Printer\n"
    );
    assert!(root.join("parser.rs").exists());
    assert_eq!(env.git(&["status", "--porcelain"]).trim(), "", "{out}");
}

/// A worktree loop stopped at its limit says how to go on as it is typed
/// from the checkout (`--worktree NAME`), and that command goes on with the
/// same run in the worktree.
#[test]
fn a_worktree_loops_hint_names_the_worktree_and_resumes_it() {
    let env = crate::support::project();
    env.api.session(crate::support::step_session(false));
    let out = crate::support::ralph_loop(&env)
        .args(["--worktree", "feat", "--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        out.ends_with(
            "`ralph loop --worktree feat --resume --max-iterations <higher>` goes on with this run.\n"
        ),
        "{out}"
    );
    env.api.session(crate::support::step_session(false));
    let again = env
        .ralph()
        .args([
            "loop",
            "--worktree",
            "feat",
            "--resume",
            "--max-iterations",
            "2",
        ])
        .stdout_with(4);
    assert!(
        again.contains("resuming run") && again.contains("at iteration 1/2"),
        "{again}"
    );
}

/// Removing a checkout's last worktree takes the folder that held them
/// (`<checkout>.ralph-worktrees/`), which ralph made; not before, and not
/// while anything else is in it.
#[test]
fn removing_the_last_worktree_removes_its_empty_folder() {
    let env = TestEnv::new();
    env.git_init();
    env.git(&["commit", "-q", "--allow-empty", "-m", "start"]);
    let holder = env
        .project
        .parent()
        .unwrap()
        .join("project.ralph-worktrees");
    for n in ["a", "b"] {
        let dir = holder.join(n);
        env.git(&[
            "worktree",
            "add",
            "-q",
            "-b",
            &format!("ralph/{n}"),
            dir.to_str().unwrap(),
        ]);
    }
    env.ralph().args(["worktree", "remove", "a"]).prints(
        0,
        "Removed worktree {project}.ralph-worktrees/a and branch ralph/a\n",
        "",
    );
    assert!(holder.join("b").is_dir());
    env.ralph().args(["worktree", "remove", "b"]).prints(
        0,
        "Removed worktree {project}.ralph-worktrees/b and branch ralph/b\n\
         Removed {project}.ralph-worktrees, now empty\n",
        "",
    );
    assert!(!holder.exists());

    // A file of the user's there: the folder stays, with it.
    env.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "ralph/c",
        holder.join("c").to_str().unwrap(),
    ]);
    fs::write(holder.join("notes.txt"), "mine\n").unwrap();
    env.ralph().args(["worktree", "remove", "c"]).prints(
        0,
        "Removed worktree {project}.ralph-worktrees/c and branch ralph/c\n",
        "",
    );
    assert_eq!(
        fs::read_to_string(holder.join("notes.txt")).unwrap(),
        "mine\n"
    );
}
