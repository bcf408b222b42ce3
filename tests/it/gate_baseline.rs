//! `[gate] baseline`: the gate runs once before the first session, and
//! only what fails anew blocks COMPLETE. Real projects of each toolchain
//! (cargo, pytest, Go, Node's test runner), each with one test failing
//! before the run; sessions are the real Claude Code client.

use std::fs;

use serde_json::Value;

use crate::support::*;

/// A project of one toolchain: its files, its gate, the ids of its passing
/// test and of the test that fails before the run (as ralph names them),
/// and a Bash command that breaks the passing test and one that mends it.
struct Toolchain {
    files: Vec<(&'static str, &'static str)>,
    gate: String,
    /// More of `[gate]` (its reports).
    more: &'static str,
    passing: &'static str,
    broken: &'static str,
    breaks: &'static str,
    mends: &'static str,
}

/// One step, the toolchain's project committed, its gate approved.
fn gated(tc: &Toolchain) -> TestEnv {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** The one step\n",
    )
    .unwrap();
    for (path, text) in &tc.files {
        let p = env.project.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    env.approved_config(format!("[gate]\ncommands = [{:?}]\n{}", tc.gate, tc.more));
    env.commit_all("a project with one test failing");
    env
}

/// Session 1 breaks the test that passed and writes COMPLETE by hand: the
/// loop's gate refuses it for that test alone. Session 2 mends it and
/// `ralph complete` (judged against the run's baseline too) accepts the
/// work with the old failure still failing. The end, the summary and
/// `status` say what failed before the run.
fn old_failures_do_not_block_and_new_ones_do(tc: &Toolchain) {
    let env = gated(tc);
    env.api.session([
        Reply::bash(format!(
            "{} && {CHECK_THE_BOX} && git commit -qam broke; printf 'done\\n' > .ralph/COMPLETE",
            tc.breaks
        )),
        Reply::text("Done."),
    ]);
    env.api.session([
        Reply::bash(format!(
            "cat .ralph/gate-failed.md; {} && git commit -qam mended && ralph complete -m done",
            tc.mends
        )),
        Reply::text("Mended."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "4"])
        .stdout_with(0);
    let said = |what: &str| assert!(out.contains(what), "{what:?} in:\n{out}");
    said("running the project's checks before the first session (the gate's baseline)");
    // (Go names the failing package too.)
    let before = out
        .lines()
        .find(|l| l.contains("the gate fails before the run: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        before.contains(tc.broken) && !before.contains(tc.passing),
        "{before}"
    );
    said("only what fails anew blocks COMPLETE");
    said("the gate failed anew: ");
    // Named with what said it: the command, or the report it wrote.
    let by = match tc.more {
        "" => format!(" fails (`{}`)", tc.gate),
        _ => " fails (`report report.xml`)".to_string(),
    };
    said(&by);
    said("complete: its one step done · 2 iterations");
    said("the gate: failing before the run, and still: ");
    // What the first refusal named: the broken test, not the old one.
    let refusal = out
        .lines()
        .find(|l| l.contains("the gate failed anew: "))
        .unwrap();
    assert!(
        refusal.contains(tc.passing) && !refusal.contains(tc.broken),
        "{refusal}"
    );
    // Session 2 read it first.
    let second = env
        .api
        .turns()
        .into_iter()
        .filter(|t| t.body.to_string().contains("The completion gate failed"))
        .count();
    assert!(second > 0, "session 2 read .ralph/gate-failed.md");
    let s = summary(&env);
    let still = s["baseline"]["still_failing"].to_string();
    assert!(still.contains(tc.broken), "{s}");
    assert_eq!(s["gate"]["passed"], true, "{s}");
    assert!(run_dir(&env).join("baseline.json").exists());
    let status = env.ralph().arg("status").stdout_with(0);
    assert!(
        status.contains("gate:    passed at ")
            && status.contains("; failing before the run, and still: ")
            && status.contains(tc.broken),
        "{status}"
    );
    let json: Value = env.ralph().args(["status", "--json"]).json_with(0);
    assert!(
        json["baseline"]["still_failing"]
            .to_string()
            .contains(tc.broken),
        "{json}"
    );
}

const LIB_RS: &str = "pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(2, 2), 4);
    }

    #[test]
    fn old_broken() {
        assert_eq!(super::add(1, 1), 3, \"broken before the run\");
    }
}
";

/// `cargo test` as the gate runs it: the test's cargo and toolchain (the
/// test's home has neither), its own target folder (never the one the
/// tests themselves build in).
fn cargo_gate() -> String {
    let cargo = which::which("cargo").expect("cargo on PATH");
    let home = std::env::var("HOME").unwrap_or_default();
    let var = |k: &str, default: String| std::env::var(k).unwrap_or(default);
    format!(
        "env PATH={}:/usr/bin:/bin RUSTUP_HOME={} CARGO_HOME={} cargo test --offline --target-dir target",
        cargo.parent().unwrap().display(),
        var("RUSTUP_HOME", format!("{home}/.rustup")),
        var("CARGO_HOME", format!("{home}/.cargo")),
    )
}

fn cargo() -> Toolchain {
    Toolchain {
        // A workspace of two crates: each test named by its crate.
        files: vec![
            (
                "Cargo.toml",
                "[workspace]\nmembers = [\"demo\", \"util\"]\nresolver = \"2\"\n",
            ),
            (
                "demo/Cargo.toml",
                "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            ("demo/src/lib.rs", LIB_RS),
            (
                "util/Cargo.toml",
                "[package]\nname = \"util\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            (
                "util/src/lib.rs",
                "#[cfg(test)]\nmod tests {\n    #[test]\n    fn works() {}\n}\n",
            ),
            (".gitignore", "target/\nCargo.lock\n"),
        ],
        gate: cargo_gate(),
        more: "",
        passing: "tests::adds",
        broken: "tests::old_broken",
        breaks: "sed -i 's/a + b/a - b/' demo/src/lib.rs",
        mends: "sed -i 's/a - b/a + b/' demo/src/lib.rs",
    }
}

#[test]
fn cargo_test_an_old_failure_does_not_block_and_a_new_one_does() {
    old_failures_do_not_block_and_new_ones_do(&cargo());
}

/// A test deleted, then one newly `#[ignore]`d, each refused as what it
/// is; the work is accepted once both are back.
#[test]
fn cargo_test_a_deleted_or_newly_ignored_test_is_refused() {
    let tc = cargo();
    let env = gated(&tc);
    let without = LIB_RS.replace(
        "    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n\n",
        "",
    );
    let ignored = LIB_RS.replace("    fn adds", "    #[ignore]\n    fn adds");
    assert!(without != LIB_RS && ignored != LIB_RS);
    // Each session puts its version of the file in place.
    let put = |name: &str, text: &str| {
        let path = env.tmp.path().join(name);
        fs::write(&path, text).unwrap();
        format!("cp {} demo/src/lib.rs", path.display())
    };
    let (gone, skip, back) = (
        put("without.rs", &without),
        put("ignored.rs", &ignored),
        put("lib.rs", LIB_RS),
    );
    env.api.session([
        Reply::bash(format!(
            "{gone} && {CHECK_THE_BOX}; printf 'done\\n' > .ralph/COMPLETE"
        )),
        Reply::text("Done."),
    ]);
    env.api.session([
        Reply::bash(format!(
            "{skip} && git commit -qam ignored; printf 'done\\n' > .ralph/COMPLETE"
        )),
        Reply::text("Done."),
    ]);
    env.api.session([
        Reply::bash(format!(
            "{back} && git commit -qam back && ralph complete -m done"
        )),
        Reply::text("Done."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "5"])
        .stdout_with(0);
    let gate = &tc.gate;
    assert!(
        out.contains(&format!(
            "the gate failed anew: demo::tests::adds no longer runs (`{gate}`)"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "the gate failed anew: demo::tests::adds is skipped now (`{gate}`)"
        )),
        "{out}"
    );
    assert!(
        out.contains("complete: its one step done · 3 iterations"),
        "{out}"
    );
}

#[test]
fn pytest_an_old_failure_does_not_block_and_a_new_one_does() {
    let python = pytest_python();
    old_failures_do_not_block_and_new_ones_do(&Toolchain {
        files: vec![
            ("demo.py", "def add(a, b):\n    return a + b\n"),
            (
                "test_demo.py",
                "from demo import add\n\n\ndef test_adds():\n    assert add(2, 2) == 4\n\n\ndef test_old_broken():\n    assert add(1, 1) == 3\n",
            ),
            (".gitignore", "__pycache__/\n"),
        ],
        gate: format!("{} -m pytest -v -p no:cacheprovider", python.display()),
        more: "",
        passing: "test_demo.py::test_adds",
        broken: "test_demo.py::test_old_broken",
        breaks: "sed -i 's/a + b/a - b/' demo.py",
        mends: "sed -i 's/a - b/a + b/' demo.py",
    });
}

#[test]
fn go_test_json_an_old_failure_does_not_block_and_a_new_one_does() {
    go_tool();
    old_failures_do_not_block_and_new_ones_do(&Toolchain {
        files: vec![
            ("go.mod", "module example.com/demo\n\ngo 1.19\n"),
            (
                "demo.go",
                "package demo\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
            ),
            (
                "demo_test.go",
                "package demo\n\nimport \"testing\"\n\nfunc TestAdds(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"2+2\")\n\t}\n}\n\nfunc TestOldBroken(t *testing.T) {\n\tif Add(1, 1) != 3 {\n\t\tt.Fatal(\"broken before the run\")\n\t}\n}\n",
            ),
        ],
        gate: "go test -json ./...".into(),
        more: "",
        passing: "TestAdds",
        broken: "TestOldBroken",
        breaks: "sed -i 's/a + b/a - b/' demo.go",
        mends: "sed -i 's/a - b/a + b/' demo.go",
    });
}

#[test]
fn node_test_runner_an_old_failure_does_not_block_and_a_new_one_does() {
    old_failures_do_not_block_and_new_ones_do(&Toolchain {
        files: vec![
            ("add.js", "exports.add = (a, b) => a + b;\n"),
            (
                "demo.test.js",
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('./add.js');\n\ntest('adds', () => {\n  assert.strictEqual(add(2, 2), 4);\n});\n\ntest('old broken', () => {\n  assert.strictEqual(add(1, 1), 3);\n});\n",
            ),
        ],
        gate: "node --test".into(),
        more: "",
        passing: "adds",
        broken: "old broken",
        breaks: "sed -i 's/a + b/a - b/' add.js",
        mends: "sed -i 's/a - b/a + b/' add.js",
    });
}

/// `[gate] baseline = "off"`: what failed before the run blocks as ever.
#[test]
fn with_the_baseline_off_an_old_failure_blocks() {
    let mut tc = cargo();
    tc.files.push((".ralph/config.toml", ""));
    let env = gated(&tc);
    env.approved_config(format!(
        "[gate]\ncommands = [{:?}]\nbaseline = \"off\"\n",
        tc.gate
    ));
    env.commit_all("strict");
    env.api.session([
        Reply::bash(format!(
            "{CHECK_THE_BOX}; printf 'done\\n' > .ralph/COMPLETE"
        )),
        Reply::text("Done."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(!out.contains("the gate's baseline"), "{out}");
    assert!(
        out.contains(&format!(
            "the gate failed: `{}` failed (exit status 101)",
            tc.gate
        )),
        "{out}"
    );
}

/// A run of many steps takes the baseline once, on its starting tree, and
/// judges the gate after each merge against it: the old failure blocks no
/// merge, and the run completes.
#[test]
fn a_parallel_run_takes_the_baseline_once_and_each_merge_is_judged_against_it() {
    let mut tc = cargo();
    tc.files.push((
        ".ralph/spec.md",
        "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n",
    ));
    let env = gated(&tc);
    let work = "echo \"$RALPH_STEP\" > \"step-$RALPH_STEP.txt\" && \
                sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && \
                git add -A && git commit -qm \"step $RALPH_STEP\"";
    for _ in 0..2 {
        env.api
            .session([Reply::bash(work), Reply::text("Step done.")]);
    }
    let out = ralph_loop(&env)
        .args(["--parallel", "2", "--max-iterations", "4"])
        .stdout_with(0);
    assert_eq!(
        out.matches("the gate's baseline").count(),
        1,
        "taken once: {out}"
    );
    assert!(
        out.contains("merged **1** One into main") && out.contains("merged **2** Two into main"),
        "{out}"
    );
    assert!(!out.contains("the gate failed"), "{out}");
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    assert!(
        summary(&env)["baseline"]["still_failing"]
            .to_string()
            .contains("tests::old_broken")
    );
}

/// What a gate prints is the project's: 100 MB of it is judged by the
/// command's exit status alone (and said), and a test's name with escape
/// sequences reaches the terminal only as visible text.
#[test]
fn hostile_gate_output_is_bounded_and_never_reaches_the_terminal_raw() {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** The one step\n",
    )
    .unwrap();
    // A "test runner" printing TAP, one test's name with an escape
    // sequence; and a command printing 100 MB on one go, failing.
    let tap = "printf 'TAP version 13\\nok 1 - \\033[2Jcleared\\nnot ok 2 - old \\033]0;title\\007\\n1..2\\n'; exit 1";
    let flood = "head -c 100000000 /dev/zero | tr '\\\\0' x; echo; exit 1";
    env.approved_config(format!("[gate]\ncommands = [{tap:?}, {flood:?}]\n"));
    env.commit_all("a hostile gate");
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Done."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "2"])
        .stdout_with(0);
    assert!(!out.contains('\u{1b}'), "no raw escape: {out:?}");
    let before = out
        .lines()
        .find(|l| l.contains("the gate fails before the run: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        before.contains("old ^[]0;title") && before.contains("`head -c 100000000"),
        "{before}"
    );
    assert!(out.contains("complete: its one step done"), "{out}");
    // The flood was read no further than ralph reads per test.
    let base: Value =
        serde_json::from_str(&fs::read_to_string(run_dir(&env).join("baseline.json")).unwrap())
            .unwrap();
    assert_eq!(base["ran"][1]["too_long"], true, "{base}");
    assert!(base["ran"][1].get("tests").is_none(), "{base}");
}

/// `[gate] reports`: pytest's JUnit report is read test by test, though
/// its quiet output names no passing test.
#[test]
fn a_junit_report_is_read_test_by_test() {
    let python = pytest_python();
    old_failures_do_not_block_and_new_ones_do(&Toolchain {
        files: vec![
            ("demo.py", "def add(a, b):\n    return a + b\n"),
            (
                "test_demo.py",
                "from demo import add\n\n\ndef test_adds():\n    assert add(2, 2) == 4\n\n\ndef test_old_broken():\n    assert add(1, 1) == 3\n",
            ),
            (".gitignore", "__pycache__/\nreport.xml\n"),
        ],
        gate: format!(
            // Quiet, with no summary: its output names no test.
            "{} -m pytest -q -rN -p no:cacheprovider --junitxml=report.xml",
            python.display()
        ),
        more: "reports = [\"report.xml\"]\n",
        passing: "test_demo::test_adds",
        broken: "test_demo::test_old_broken",
        breaks: "sed -i 's/a + b/a - b/' demo.py",
        mends: "sed -i 's/a - b/a + b/' demo.py",
    });
}

/// A TAP "test runner" of two tests: `adds` fails once the file `broken`
/// is there, `old broken` fails always (before the run too).
fn tap_project() -> (TestEnv, String) {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** The one step\n",
    )
    .unwrap();
    fs::write(
        env.project.join("check.sh"),
        "echo 'TAP version 13'\n\
         if [ -e broken ]; then echo 'not ok 1 - adds'; else echo 'ok 1 - adds'; fi\n\
         echo 'not ok 2 - old broken'\necho '1..2'\nexit 1\n",
    )
    .unwrap();
    let gate = "sh check.sh".to_string();
    env.approved_config(format!("[gate]\ncommands = [{gate:?}]\n"));
    env.commit_all("a project with one test failing");
    (env, gate)
}

/// An unconfined session breaks the test that passed, writes into the
/// run's saved state (in the run folder, where it can write) that this
/// test failed before the run too, rewrites `baseline.json` alike, and
/// kills ralph before it saves its state again. You resume the run: the
/// gate is judged against the baseline ralph took, and the broken test
/// blocks COMPLETE.
/// A stand-in session (`name`) whose first run does `first` and kills the
/// loop outright (ralph cleans nothing up), and whose later runs write
/// COMPLETE; the first loop run with it, as far as the kill. Returned: the
/// stand-in, for the resumed run.
fn killed_after(env: &TestEnv, name: &str, first: &str) -> std::path::PathBuf {
    let mark = env.tmp.path().join("killed");
    let body = format!(
        "if [ ! -e {mark} ]; then\n  touch {mark}\n{first}\n  kill -9 $PPID\n  exit 0\nfi\n\
         printf 'done\\n' > .ralph/COMPLETE\necho '{RESULT}'",
        mark = mark.display()
    );
    let claude = stand_in(env, name, &body);
    env.ralph()
        .args(["loop", "--max-iterations", "3", "--claude"])
        .arg(&claude)
        .assert();
    assert!(mark.exists(), "the first session never ran");
    claude
}

#[test]
fn a_resumed_run_is_judged_against_its_own_baseline_not_one_a_session_planted() {
    let (env, _gate) = tap_project();
    let claude = killed_after(
        &env,
        "claude-plants",
        &format!(
            "touch broken && {CHECK_THE_BOX} && git add -A && git commit -qm broke\n\
             sed -i 's/\"adds\": *\"passed\"/\"adds\": \"failed\"/' \"$RALPH_RUN_DIR/state.json\" \"$RALPH_RUN_DIR/baseline.json\""
        ),
    );
    let state = fs::read_to_string(run_dir(&env).join("state.json")).unwrap();
    assert!(
        state.contains("\"adds\": \"failed\""),
        "the session's edit is in place: {state}"
    );
    let out = env
        .ralph()
        .args(["loop", "--resume", "--max-iterations", "2", "--claude"])
        .arg(&claude)
        .stdout_with(4);
    assert!(
        out.contains("the gate failed anew: adds fails (`sh check.sh`)"),
        "{out}"
    );
    assert!(!out.contains("complete: its one step done"), "{out}");
}

/// The same plant, with the loop running on: it judges with the baseline
/// it holds, never the run folder's.
#[test]
fn a_baseline_planted_mid_run_changes_nothing() {
    let (env, _gate) = tap_project();
    env.api.session([
        Reply::bash(format!(
            "touch broken && {CHECK_THE_BOX} && git add -A && git commit -qm broke && \
             sed -i 's/\"adds\": *\"passed\"/\"adds\": \"failed\"/' \"$RALPH_RUN_DIR/state.json\" \"$RALPH_RUN_DIR/baseline.json\" && \
             grep -q '\"adds\": \"failed\"' \"$RALPH_RUN_DIR/state.json\" && printf 'done\\n' > .ralph/COMPLETE"
        )),
        Reply::text("Done."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        fs::read_to_string(run_dir(&env).join("COMPLETE.rejected-1")).is_ok(),
        "{out}"
    );
    assert!(
        out.contains("the gate failed anew: adds fails (`sh check.sh`)"),
        "{out}"
    );
}

/// `check.sh` made to take `secs` the first time it runs (a cold build),
/// marking that it began in the file `mark` (returned) of the test's folder.
fn slow_once(env: &TestEnv, mark: &str, secs: u32) -> std::path::PathBuf {
    let mark = env.tmp.path().join(mark);
    let check = fs::read_to_string(env.project.join("check.sh")).unwrap();
    fs::write(
        env.project.join("check.sh"),
        format!(
            "if [ ! -e {m} ]; then touch {m}; sleep {secs}; fi\n{check}",
            m = mark.display()
        ),
    )
    .unwrap();
    mark
}

/// The gate times out before the run (its first build is slow); the
/// session breaks a test in it: that blocks COMPLETE, and the start says
/// the gate did not finish (no failure of it is kept as failing before).
#[test]
fn a_gate_that_timed_out_before_the_run_keeps_no_failure() {
    let (env, _gate) = tap_project();
    slow_once(&env, "slow-once", 5);
    env.approved_config("[gate]\ncommands = [\"sh check.sh\"]\ntimeout = \"2s\"\n");
    env.commit_all("slow once");
    env.api.session([
        Reply::bash(format!(
            "touch broken && {CHECK_THE_BOX} && git add -A && git commit -qm broke; printf 'done\\n' > .ralph/COMPLETE"
        )),
        Reply::text("Done."),
    ]);
    let out = ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        out.contains("the gate did not finish before the run (`sh check.sh` failed (timed out after 2s)): every check must pass at the end"),
        "{out}"
    );
    assert!(
        out.contains("the gate failed anew: `sh check.sh` failed (exit status 1)"),
        "{out}"
    );
    assert!(!out.contains("complete: its one step done"), "{out}");
}

/// Ctrl+C while the baseline runs: no session starts, nothing is kept as
/// the baseline, and `--resume` takes it anew (a broken test is then
/// refused, not passed as failing before the run).
#[test]
fn a_baseline_stopped_by_ctrl_c_is_taken_anew_on_resume() {
    let (env, _gate) = tap_project();
    let started = slow_once(&env, "started", 60);
    env.commit_all("slow once");
    let mut child = ralph_loop(&env).args(["--max-iterations", "1"]).spawn();
    assert!(eventually(std::time::Duration::from_secs(60), || started
        .exists()
        || child.try_wait().is_ok_and(|s| s.is_some())));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let first = wait_output(child, std::time::Duration::from_secs(30));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(first.status.code(), Some(130), "{said}");
    assert!(env.api.turns().is_empty(), "no session ran: {said}");
    assert!(!run_dir(&env).join("baseline.json").exists(), "{said}");
    env.api.session([
        Reply::bash(format!(
            "touch broken && {CHECK_THE_BOX} && git add -A && git commit -qm broke; printf 'done\\n' > .ralph/COMPLETE"
        )),
        Reply::text("Done."),
    ]);
    let out = ralph_loop(&env)
        .args(["--resume", "--max-iterations", "1"])
        .stdout_with(4);
    assert!(
        out.contains("running the project's checks before the first session"),
        "{out}"
    );
    assert!(
        out.contains("the gate failed anew: adds fails (`sh check.sh`)"),
        "{out}"
    );
}

/// `[gate] baseline = "off"` is no approved part of the config: a session
/// turns it on in the file, breaks a test and kills ralph. The resumed run
/// takes no baseline on the tree the session left: the strict gate holds.
#[test]
fn a_baseline_turned_on_by_a_session_is_not_taken_on_resume() {
    let (env, _gate) = tap_project();
    env.approved_config("[gate]\ncommands = [\"sh check.sh\"]\nbaseline = \"off\"\n");
    env.commit_all("strict");
    let claude = killed_after(
        &env,
        "claude-turns-on",
        &format!(
            "sed -i '/baseline/d' .ralph/config.toml\n\
             touch broken && {CHECK_THE_BOX} && git add -A && git commit -qm broke"
        ),
    );
    let config = fs::read_to_string(env.project.join(".ralph/config.toml")).unwrap();
    assert!(!config.contains("baseline"), "{config}");
    let out = env
        .ralph()
        .args(["loop", "--resume", "--max-iterations", "2", "--claude"])
        .arg(&claude)
        .stdout_with(4);
    assert!(!out.contains("the gate's baseline"), "{out}");
    assert!(
        out.contains("the gate failed: `sh check.sh` failed (exit status 1)"),
        "{out}"
    );
}
