//! `ralph hook stop`: with the real Claude Code CLI, and with constructed
//! process trees whose processes are real copies of bash named like the
//! ways Claude Code runs (so `comm`, `exe` and argv are what the hook sees).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Reply, TestEnv, claude_bin, eventually, ralph_bin, repo_root};

const LONG: Duration = Duration::from_secs(60);

fn install_hook(env: &TestEnv) {
    env.ralph().args(["install-hook"]).assert().success();
}

#[test]
fn print_mode_in_a_loop_keeps_the_whole_answer_and_exits_zero() {
    let env = TestEnv::new();
    install_hook(&env);
    let run_dir = env.tmp.path().join("run");
    fs::create_dir(&run_dir).unwrap();
    let answer = "The complete answer, every word of it, survives the hook.";
    env.api
        .session([Reply::bash("echo step > step.txt"), Reply::text(answer)]);
    let mut c = env.claude();
    c.args(["-p", "--dangerously-skip-permissions"])
        .env("RALPH_LOOP", "1")
        .env("RALPH_RUN_DIR", &run_dir);
    let out = crate::support::run_with_stdin(c, "do the step", LONG);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), answer);

    env.api.session([Reply::text(answer)]);
    let mut c = env.claude();
    c.args([
        "-p",
        "--dangerously-skip-permissions",
        "--output-format",
        "json",
    ])
    .env("RALPH_LOOP", "1")
    .env("RALPH_RUN_DIR", &run_dir);
    let out = crate::support::run_with_stdin(c, "again", LONG);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], answer);
    assert_eq!(result["is_error"], false);
    assert_eq!(
        result["num_turns"], 1,
        "no extra interrupted turn: {result}"
    );

    // The hook ran, identified the session and left the exit to claude.
    let log = hook_log(&run_dir, 4);
    let acted: Vec<_> = log.iter().filter(|l| l["action"] == "watcher").collect();
    assert_eq!(acted.len(), 2, "{log:?}");
    assert_eq!(acted[0]["identified_by"], "CLAUDE_PID");
    let watched: Vec<_> = log.iter().filter(|l| l["event"] == "watch").collect();
    assert!(
        watched
            .iter()
            .all(|l| l["why"] == "session exited by itself"),
        "{log:?}"
    );
}

/// Wait for `n` lines in the run folder's hook log.
fn hook_log(run_dir: &Path, n: usize) -> Vec<Value> {
    let path = run_dir.join("hook.log");
    let read = || -> Vec<Value> {
        fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    eventually(Duration::from_secs(15), || read().len() >= n);
    read()
}

#[test]
fn interactive_session_in_a_loop_ends_after_the_turn() {
    let env = TestEnv::new();
    install_hook(&env);
    env.api.session([Reply::text("Turn finished, ending now.")]);
    let mut pty = env.claude_interactive(&["do one step"], &[("RALPH_LOOP", "1")]);
    // The TUI may draw the answer and clear it on exit in one burst: watch
    // the API for the turn, then the process for its end.
    assert!(
        eventually(LONG, || !env.api.turns().is_empty()),
        "the turn never reached the API:\n{}",
        pty.screen()
    );
    let t0 = Instant::now();
    let status = pty.wait_exit(Duration::from_secs(15));
    let status =
        status.unwrap_or_else(|| panic!("session still open after the turn:\n{}", pty.screen()));
    assert!(status.success(), "{status:?}");
    eprintln!(
        "interactive session ended {:?} after its turn was answered",
        t0.elapsed()
    );
}

#[test]
fn interactive_session_without_a_loop_stays_open() {
    let env = TestEnv::new();
    let marker = env.tmp.path().join("stop-hooks-ran");
    env.stop_hook_marker(&marker);
    install_hook(&env);
    env.api.session([
        Reply::text("Just a normal turn."),
        Reply::text("A second turn, same session"),
    ]);
    let mut pty = env.claude_interactive(&["hello"], &[]);
    pty.wait_for("Just a normal turn.", LONG);
    pty.answers_again(&marker, "A second turn, same session");
}

#[test]
fn ralph_loop_from_a_project_settings_env_does_not_end_the_session() {
    let env = TestEnv::new();
    install_hook(&env);
    let marker = env.tmp.path().join("hook-saw-env");
    fs::create_dir_all(env.project.join(".claude")).unwrap();
    // The cloned repository tries to switch the loop on, and we also record
    // that the variable really reached the hooks.
    let settings = serde_json::json!({
        "env": {"RALPH_LOOP": "1"},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": format!("env | grep RALPH_LOOP= > {}", marker.display())}]}]}
    });
    fs::write(
        env.project.join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    env.api.session([
        Reply::text("A turn in a cloned repository."),
        Reply::text("A second turn, same session"),
    ]);
    let mut pty = env.claude_interactive(&["hello"], &[]);
    pty.wait_for("A turn in a cloned repository.", LONG);
    assert!(
        eventually(Duration::from_secs(10), || marker.exists()),
        "project hook did not run"
    );
    assert_eq!(
        fs::read_to_string(&marker).unwrap().trim(),
        "RALPH_LOOP=1",
        "settings env reached the hooks"
    );
    // Settings' env alone does not end the session.
    pty.answers_again(&marker, "A second turn, same session");
}

#[test]
fn nested_session_hook_ends_only_the_inner_session() {
    let env = TestEnv::new();
    install_hook(&env);
    let inner_out = env.tmp.path().join("inner.txt");
    let inner_cmd = format!(
        "echo 'inner prompt' | {} -p --dangerously-skip-permissions > {out} 2>&1; echo \"inner-exit=$?\" >> {out}",
        claude_bin().display(),
        out = inner_out.display()
    );
    env.api.session([
        Reply::bash(inner_cmd),
        Reply::text("Outer turn completed after the inner one."),
    ]);
    env.api.session([Reply::text("Inner answer.")]);
    let mut pty = env.claude_interactive(&["run a nested session"], &[("RALPH_LOOP", "1")]);
    // The outer session must live through the inner one: its second turn
    // (carrying the Bash result) reaches the API, then its own hook ends it.
    let outer_turns = || {
        let turns = env.api.turns();
        let first = turns.first().and_then(|t| t.session_id.clone());
        turns.iter().filter(|t| t.session_id == first).count()
    };
    assert!(
        eventually(LONG, || outer_turns() >= 2),
        "outer session did not continue:\n{}",
        pty.screen()
    );
    let inner = fs::read_to_string(&inner_out).unwrap();
    assert!(inner.contains("Inner answer."), "{inner}");
    assert!(inner.contains("inner-exit=0"), "{inner}");
    // And the outer one is ended by its own hook, after its own turn.
    let status = pty.wait_exit(Duration::from_secs(15));
    assert!(
        status.is_some_and(|s| s.success()),
        "outer session:\n{}",
        pty.screen()
    );
}

// ---- constructed process trees -------------------------------------------

/// A copy of bash at `dir/rel`, so the process's name and executable are
/// whatever Claude Code's would be.
fn fake_binary(dir: &Path, rel: &str) -> PathBuf {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::copy("/bin/bash", &path).unwrap();
    path
}

struct Tree {
    child: Child,
    signals: PathBuf,
    stderr: PathBuf,
}

impl Tree {
    /// Did the fake session receive SIGINT within `limit`?
    fn interrupted(&self, limit: Duration) -> bool {
        eventually(limit, || {
            fs::read_to_string(&self.signals)
                .unwrap_or_default()
                .contains("INT")
        })
    }
    /// Wait until the hook has returned (or the session was interrupted):
    /// a signal sent by the hook arrives before it returns, so afterwards
    /// "not interrupted" is final.
    fn hook_returned(&self) -> bool {
        eventually(LONG, || {
            let s = fs::read_to_string(&self.signals).unwrap_or_default();
            s.contains("hook-returned") || s.contains("INT")
        })
    }
    fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }
    fn stdout(&self) -> String {
        fs::read_to_string(format!("{}.stdout", self.stderr.display())).unwrap_or_default()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `program` (a bash copy) as the fake session: it runs the hook as its
/// child, like Claude Code does (`sh -c`), then waits to be signalled.
fn session(
    dir: &Path,
    program: &Path,
    extra_args: &[&str],
    hook_prefix: &str,
    env: &[(&str, &str)],
) -> Tree {
    session_fed(
        dir,
        program,
        extra_args,
        hook_prefix,
        env,
        r#"{"hook_event_name":"Stop","session_id":"s1"}"#,
    )
}

/// As `session`, with `input` as the hook's stdin; its stdout is kept too.
fn session_fed(
    dir: &Path,
    program: &Path,
    extra_args: &[&str],
    hook_prefix: &str,
    env: &[(&str, &str)],
    input: &str,
) -> Tree {
    let input_file = dir.join(format!(
        "input-{}",
        program.file_name().unwrap().to_string_lossy()
    ));
    fs::write(&input_file, input).unwrap();
    let signals = dir.join(format!(
        "signals-{}",
        program.file_name().unwrap().to_string_lossy()
    ));
    let stderr = dir.join(format!(
        "stderr-{}",
        program.file_name().unwrap().to_string_lossy()
    ));
    let script = format!(
        "trap 'echo INT >> {sig}; exit 0' INT; trap 'echo TERM >> {sig}; exit 0' TERM; \
         /bin/sh -c '{hook_prefix} {ralph} hook stop' < {input} > {err}.stdout 2> {err}; \
         echo hook-returned >> {sig}; for i in $(seq 300); do sleep 0.1; done",
        sig = signals.display(),
        err = stderr.display(),
        input = input_file.display(),
        ralph = ralph_bin().display(),
    );
    let mut c = Command::new(program);
    crate::support::default_signals(&mut c);
    c.arg("-c").arg(script).args(extra_args);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("CLAUDE_CODE_ENTRYPOINT", "cli");
    for (k, v) in env {
        c.env(k, v);
    }
    let child = c.stdin(Stdio::null()).spawn().unwrap();
    Tree {
        child,
        signals,
        stderr,
    }
}

#[test]
fn constructed_trees_signal_exactly_the_claude_process() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let loop_env = [("RALPH_LOOP", "1")];

    let named = session(d, &fake_binary(d, "bin/claude"), &[], "", &loop_env);
    assert!(
        named.interrupted(Duration::from_secs(10)),
        "process named claude: {}",
        named.stderr()
    );

    let versioned = session(
        d,
        &fake_binary(d, "share/claude/versions/2.1.330"),
        &[],
        "",
        &loop_env,
    );
    assert!(
        versioned.interrupted(Duration::from_secs(10)),
        "native versioned binary: {}",
        versioned.stderr()
    );

    let cli_js = d.join("lib/node_modules/@anthropic-ai/claude-code/cli.js");
    let node = session(
        d,
        &fake_binary(d, "node/node"),
        &[cli_js.to_str().unwrap()],
        "",
        &loop_env,
    );
    assert!(
        node.interrupted(Duration::from_secs(10)),
        "node running cli.js: {}",
        node.stderr()
    );

    let other = session(d, &fake_binary(d, "bin/not-claude"), &[], "", &loop_env);
    assert!(other.hook_returned());
    assert!(
        !other.interrupted(Duration::ZERO),
        "a process that is not Claude Code was signalled"
    );
    assert!(
        other.stderr().contains("no Claude Code process"),
        "{}",
        other.stderr()
    );
}

#[test]
fn garbage_or_empty_input_is_tolerated_and_stdout_stays_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let loop_env = [("RALPH_LOOP", "1")];
    for (i, input) in [
        "",
        "not json at all \u{0}\u{1}",
        r#"{"hook_event_name":"Stop","future_field":{"x":[1,2]}}"#,
    ]
    .iter()
    .enumerate()
    {
        let tree = session_fed(
            d,
            &fake_binary(d, &format!("s{i}/claude")),
            &[],
            "",
            &loop_env,
            input,
        );
        assert!(
            tree.interrupted(Duration::from_secs(10)),
            "input {input:?}: {}",
            tree.stderr()
        );
        assert_eq!(tree.stdout(), "", "input {input:?}");
    }
}

#[test]
fn loop_variable_only_in_the_hook_environment_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // Claude was started without RALPH_LOOP; only the hook has it, as a
    // settings file's "env" would arrange.
    let tree = session(d, &fake_binary(d, "bin/claude"), &[], "RALPH_LOOP=1", &[]);
    assert!(tree.hook_returned());
    assert!(!tree.interrupted(Duration::ZERO));
    assert!(
        tree.stderr()
            .contains("not in the environment claude was started with"),
        "{}",
        tree.stderr()
    );
}

#[test]
fn without_ralph_loop_the_hook_does_nothing_and_says_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let tree = session(d, &fake_binary(d, "bin/claude"), &[], "", &[]);
    assert!(tree.hook_returned());
    assert!(!tree.interrupted(Duration::ZERO));
    assert_eq!(tree.stderr(), "");
}

/// A session of a name the hook does not know (a wrapper the user gave as
/// `--claude`), with no `CLAUDE_PID`: found as the child of the ralph loop
/// that started it, and ended; under a parent that is not ralph, nothing
/// is found. The loop hands its sessions no pid of its own to find it by.
#[test]
fn an_unrecognisable_session_is_found_as_ralphs_child_and_only_there() {
    for (parent, expect_signal) in [("ralph", true), ("fake-loop", false)] {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let fake_loop = fake_binary(d, &format!("bin/{parent}"));
        let session_bin = fake_binary(d, "bin/custom-wrapper");
        let signals = d.join("signals");
        let err = d.join("stderr");
        let inner = format!(
            "trap 'echo INT >> {sig}; exit 0' INT; echo '{{}}' | /bin/sh -c '{ralph} hook stop' 2> {err}; echo hook-returned >> {sig}; for i in $(seq 300); do sleep 0.1; done",
            sig = signals.display(),
            err = err.display(),
            ralph = ralph_bin().display()
        );
        // As the loop starts a session: RALPH_LOOP=1 in its start
        // environment, and it is the loop's child.
        let script = format!("RALPH_LOOP=1 {} -c \"$0\"; true", session_bin.display());
        let mut loop_proc = Command::new(&fake_loop);
        crate::support::default_signals(&mut loop_proc);
        let mut loop_proc = loop_proc
            .arg("-c")
            .arg(script)
            .arg(inner)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("CLAUDE_CODE_ENTRYPOINT", "cli")
            .spawn()
            .unwrap();
        // The hook's answer, either way: a signal, or its return without one.
        assert!(
            eventually(LONG, || {
                let s = fs::read_to_string(&signals).unwrap_or_default();
                s.contains("INT") || s.contains("hook-returned")
            }),
            "under {parent}: the hook never returned"
        );
        let got = fs::read_to_string(&signals)
            .unwrap_or_default()
            .contains("INT");
        let stderr = fs::read_to_string(&err).unwrap_or_default();
        let _ = loop_proc.kill();
        let _ = loop_proc.wait();
        assert_eq!(got, expect_signal, "under {parent}: {stderr}");
        if !expect_signal {
            assert!(stderr.contains("no Claude Code process"), "{stderr}");
        }
    }
}

#[test]
fn print_mode_watcher_ends_a_session_that_lingers_but_not_one_that_works_on() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let run_dir = d.join("run");
    fs::create_dir(&run_dir).unwrap();
    let env = [
        ("RALPH_LOOP", "1"),
        ("CLAUDE_CODE_ENTRYPOINT", "sdk-cli"),
        ("RALPH_HOOK_GRACE_MS", "300"),
        ("RALPH_RUN_DIR", run_dir.to_str().unwrap()),
    ];
    let lingering = session(d, &fake_binary(d, "a/claude"), &[], "", &env);
    assert!(
        lingering.interrupted(Duration::from_secs(10)),
        "{}",
        lingering.stderr()
    );

    // A session that goes on working (its transcript grows after the Stop
    // hook, as when another Stop hook blocks the stop) is left alone.
    let transcript = d.join("transcript.jsonl");
    fs::write(&transcript, "{}\n").unwrap();
    let signals = d.join("signals-working");
    let script = format!(
        "trap 'echo INT >> {sig}; exit 0' INT; echo '{{\"transcript_path\":\"{t}\"}}' | {ralph} hook stop; \
         for i in $(seq 30); do echo '{{}}' >> {t}; sleep 0.1; done",
        sig = signals.display(),
        t = transcript.display(),
        ralph = ralph_bin().display()
    );
    let mut c = Command::new(fake_binary(d, "b/claude"));
    crate::support::default_signals(&mut c);
    c.arg("-c")
        .arg(script)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    assert!(child.wait().unwrap().success());
    assert!(!signals.exists(), "a working session was interrupted");
    let log = hook_log(&run_dir, 4);
    assert!(
        log.iter()
            .any(|l| l["why"] == "session went on working after the Stop hook"),
        "{log:?}"
    );
    assert!(log.iter().any(|l| l["action"] == "SIGINT"), "{log:?}");
}

/// The plugin's hook and the installed one both run for one Stop, at once, as
/// Claude Code runs them. The stand-in session survives SIGINT, so every
/// signal either hook sends is counted: exactly one, and the other hook says
/// it deferred. (The real client exits at the first SIGINT, so there whether
/// the second hook gets as far as its log line is a race.)
#[test]
fn the_plugin_and_installed_hooks_at_once_signal_the_session_once() {
    let env = TestEnv::new();
    install_hook(&env);
    let stop_command = |file: &Path| -> String {
        let v: Value = serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
        let all: Vec<String> = v["hooks"]["Stop"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["hooks"].as_array().unwrap().clone())
            .filter_map(|h| h["command"].as_str().map(String::from))
            .collect();
        assert_eq!(all.len(), 1, "{all:?} in {}", file.display());
        all[0].clone()
    };
    let installed = stop_command(&env.user_settings());
    let plugin = stop_command(&repo_root().join("hooks/hooks.json"));
    assert_ne!(installed, plugin);

    let d = env.tmp.path();
    let run_dir = d.join("run");
    fs::create_dir(&run_dir).unwrap();
    let input = d.join("stop.json");
    fs::write(&input, r#"{"hook_event_name":"Stop","session_id":"s1"}"#).unwrap();
    let sig = d.join("signals");
    let script = r#"trap 'echo INT >> "$SIG"' INT
/bin/sh -c "$PLUGIN_HOOK; echo plugin-returned >> \"\$SIG\"" < "$IN" 2>> "$SIG.err" &
/bin/sh -c "$INSTALLED_HOOK; echo installed-returned >> \"\$SIG\"" < "$IN" 2>> "$SIG.err" &
for i in $(seq 600); do sleep 0.1; echo "$i" > "$SIG.tick"; done"#;
    let mut c = Command::new(fake_binary(d, "bin/claude"));
    crate::support::default_signals(&mut c);
    let path = format!("{}:/usr/bin:/bin", ralph_bin().parent().unwrap().display());
    c.arg("-c").arg(script).env_clear();
    for (k, v) in [
        ("PATH", path.as_str()),
        ("HOME", env.home.to_str().unwrap()),
        ("CLAUDE_CODE_ENTRYPOINT", "cli"),
        ("RALPH_LOOP", "1"),
        ("RALPH_RUN_DIR", run_dir.to_str().unwrap()),
        ("SIG", sig.to_str().unwrap()),
        ("IN", input.to_str().unwrap()),
        ("PLUGIN_HOOK", plugin.as_str()),
        ("INSTALLED_HOOK", installed.as_str()),
    ] {
        c.env(k, v);
    }
    let tree = Tree {
        child: c.stdin(Stdio::null()).spawn().unwrap(),
        signals: sig.clone(),
        stderr: d.join("signals.err"),
    };
    let returned = eventually(LONG, || {
        let s = fs::read_to_string(&sig).unwrap_or_default();
        s.contains("plugin-returned") && s.contains("installed-returned")
    });
    // Both hooks have returned, so every signal either sent is pending or
    // taken; a trap runs once the stand-in's current `sleep 0.1` ends. Two
    // more turns of its loop (its tick) and every trap has recorded.
    let tick = || {
        fs::read_to_string(sig.with_extension("tick"))
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
            .unwrap_or(0)
    };
    let now = tick();
    assert!(
        eventually(LONG, || tick() >= now + 2),
        "the stand-in stopped turning:\n{}",
        tree.stderr()
    );
    let signals = fs::read_to_string(&sig).unwrap_or_default();
    assert!(returned, "{signals}\n{}", tree.stderr());
    assert_eq!(
        signals.lines().filter(|l| *l == "INT").count(),
        1,
        "{signals}"
    );
    let log = hook_log(&run_dir, 2);
    let actions: Vec<&str> = log.iter().map(|l| l["action"].as_str().unwrap()).collect();
    assert_eq!(actions.len(), 2, "{log:?}");
    assert!(actions.contains(&"SIGINT"), "{log:?}");
    assert!(
        log.iter().any(|l| l["why"]
            .as_str()
            .is_some_and(|w| w.contains("another ralph hook already handled"))),
        "{log:?}"
    );
    assert_ne!(log[0]["hook_pid"], log[1]["hook_pid"]);
}

/// The claim files a session outside a run folder leaves in
/// `$TMPDIR/ralph-<uid>/` are swept by the next hook run once their session
/// has ended: only regular files named as claims, of sessions not running;
/// a link of that name is left (and what it points to untouched).
#[test]
fn claims_of_ended_sessions_are_swept_and_nothing_else() {
    use std::os::unix::fs::{DirBuilderExt, symlink};
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let temp = d.join("temp");
    let claims = temp.join(format!("ralph-{}", nix::unistd::getuid()));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&claims)
        .unwrap();
    let me = ralph::procs::tree::ProcReader::new()
        .get_basic(std::process::id())
        .unwrap();
    let live = format!("stop-claim-{}-{}-0123456789abcdef", me.pid, me.start_time);
    let ended = format!(
        "stop-claim-{}-{}-0123456789abcdef",
        me.pid,
        me.start_time + 1
    );
    let linked = format!(
        "stop-claim-{}-{}-fedcba9876543210",
        me.pid,
        me.start_time + 1
    );
    for name in [&live, &ended] {
        fs::write(claims.join(name), "").unwrap();
    }
    let target = d.join("target");
    fs::write(&target, "keep me\n").unwrap();
    symlink(&target, claims.join(&linked)).unwrap();
    fs::write(claims.join("notes.txt"), "mine\n").unwrap();
    let listing = || {
        let mut names: Vec<String> = fs::read_dir(&claims)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };

    let temp_env = [("RALPH_LOOP", "1"), ("TMPDIR", temp.to_str().unwrap())];
    // Each session in a folder of its own (its signals file is named by
    // the program's name, claude).
    let (a, b) = (d.join("a"), d.join("b"));
    let first = session(&a, &fake_binary(&a, "claude"), &[], "", &temp_env);
    assert!(
        first.interrupted(Duration::from_secs(10)),
        "{}",
        first.stderr()
    );
    let after_first = listing();
    let own: Vec<&String> = after_first
        .iter()
        .filter(|n| n.starts_with(&format!("stop-claim-{}-", first.child.id())))
        .collect();
    assert_eq!(own.len(), 1, "{after_first:?}");
    let mut expected = vec![
        linked.clone(),
        live.clone(),
        "notes.txt".to_string(),
        own[0].clone(),
    ];
    expected.sort();
    assert_eq!(after_first, expected, "the ended session's claim is swept");
    let first_claim = own[0].clone();
    drop(first);

    // The next session's hook sweeps the first one's claim, now it ended.
    let second = session(&b, &fake_binary(&b, "claude"), &[], "", &temp_env);
    assert!(
        second.interrupted(Duration::from_secs(10)),
        "{}",
        second.stderr()
    );
    let after_second = listing();
    assert!(!after_second.contains(&first_claim), "{after_second:?}");
    assert!(
        after_second.contains(&live) && after_second.contains(&linked),
        "{after_second:?}"
    );
    assert_eq!(fs::read_to_string(&target).unwrap(), "keep me\n");
    assert_eq!(
        fs::read_to_string(claims.join("notes.txt")).unwrap(),
        "mine\n"
    );
}
