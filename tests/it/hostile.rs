//! A repository's files and a model's output are untrusted input: writes
//! that cannot be redirected, reads that are bounded, output that cannot
//! drive the terminal, closed pipes, a hook that writes nothing before it
//! knows a loop started the session, settings checked before anything runs.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::support::{DO_STEP, RESULT, project, records, stand_in};
use crate::support::{Reply, TestEnv, ralph_bin, wait_output};

/// A file outside the project that a planted symlink points at.
fn outside(env: &TestEnv, name: &str) -> PathBuf {
    let p = env.tmp.path().join(name);
    fs::write(&p, "precious, outside the project\n").unwrap();
    p
}

fn untouched(p: &Path) {
    assert_eq!(
        fs::read_to_string(p).unwrap(),
        "precious, outside the project\n",
        "{} was written through a symlink",
        p.display()
    );
}

fn quick_claude(env: &TestEnv) -> PathBuf {
    stand_in(
        env,
        "quick-claude",
        &format!("{DO_STEP} >/dev/null 2>&1\necho '{RESULT}'"),
    )
}

#[test]
fn planted_symlinks_redirect_no_write() {
    let env = project();
    let claude = quick_claude(&env);
    let ralph = env.project.join(".ralph");

    // The lock (in ralph's state folder): a link there is refused, its
    // target untouched (it used to be truncated).
    let target = outside(&env, "lock-target");
    fs::create_dir_all(env.lock().parent().unwrap()).unwrap();
    symlink(&target, env.lock()).unwrap();
    env.ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(env.lock().display().to_string()));
    untouched(&target);
    fs::remove_file(env.lock()).unwrap();

    // The runs folder: ralph writes runs only into a real folder.
    let _ = fs::remove_dir_all(ralph.join("runs"));
    let elsewhere = env.tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, ralph.join("runs")).unwrap();
    env.ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("runs is a symlink"));
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
    fs::remove_file(ralph.join("runs")).unwrap();

    // Files ralph replaces: the link is replaced, never followed.
    let gitignore = outside(&env, "gitignore-target");
    symlink(&gitignore, ralph.join(".gitignore")).unwrap();
    let waiting = outside(&env, "waiting-target");
    symlink(&waiting, ralph.join("WAITING")).unwrap();
    env.ralph()
        .args(["waiting", "--reason", "a human is needed"])
        .assert()
        .success();
    untouched(&waiting);
    assert!(
        !fs::symlink_metadata(ralph.join("WAITING"))
            .unwrap()
            .is_symlink()
    );
    env.ralph().arg("resume").assert().success();
    env.ralph()
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .assert()
        .code(4);
    untouched(&gitignore);
    let complete = outside(&env, "complete-target");
    symlink(&complete, ralph.join("COMPLETE")).unwrap();
    env.ralph()
        .args(["complete", "--force", "-m", "done"])
        .assert()
        .success();
    untouched(&complete);
}

#[test]
fn reads_are_bounded_and_never_block() {
    let env = project();
    let spec = env.project.join(".ralph/spec.md");
    fs::remove_file(&spec).unwrap();
    // git stores such a symlink; every reader used to grow without bound.
    symlink("/dev/zero", &spec).unwrap();
    let t0 = Instant::now();
    for (args, code, out_or_err) in [
        (vec!["status"], 1, "spec.md is a device, not a regular file"),
        (vec!["budget"], 1, "spec.md is a device, not a regular file"),
        (
            vec!["verify-sync"],
            2,
            "spec.md is a device, not a regular file",
        ),
        (vec!["doctor"], 1, "FAIL project"),
    ] {
        let a = env.ralph().args(&args).assert().code(code);
        let out = a.get_output();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(all.contains(out_or_err), "{args:?}: {all}");
    }
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());

    // Claude Code's settings as a device: doctor answers.
    fs::create_dir_all(env.project.join(".claude")).unwrap();
    symlink("/dev/zero", env.project.join(".claude/settings.json")).unwrap();
    env.ralph().arg("doctor").assert().code(1);

    // A FIFO as the settings file: refused at once, the folder's lock let go.
    let dir = env.tmp.path().join("fifo-settings");
    fs::create_dir(&dir).unwrap();
    let fifo = dir.join("settings.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    env.ralph()
        .args(["install-hook", "--settings"])
        .arg(&fifo)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "is a FIFO (named pipe), not a regular file",
        ));
    env.ralph()
        .args(["install-hook", "--settings"])
        .arg(dir.join("other.json"))
        .assert()
        .success();

    // A settings file past the cap is refused, naming the cap.
    let big = env.tmp.path().join("big-settings.json");
    let mut text = String::from("{\"padding\": \"");
    text.push_str(&"x".repeat(9 << 20));
    text.push_str("\"}\n");
    fs::write(&big, &text).unwrap();
    env.ralph()
        .args(["install-hook", "--settings"])
        .arg(&big)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "is larger than ralph reads (8 MiB at most)",
        ));
}

/// What a model (or a tool it ran) may print to take over a terminal.
const EVIL: &str = "\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[8mhidden";

/// `[1;35m...`: a colour (SGR) sequence and nothing else.
fn is_sgr(after_esc: &str) -> bool {
    after_esc
        .strip_prefix('[')
        .and_then(|r| r.split_once('m'))
        .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == ';'))
}

#[test]
fn a_sessions_output_cannot_drive_the_terminal() {
    let env = project();
    let text = serde_json::json!({"type": "assistant", "message": {"model": "m", "content": [
        {"type": "text", "text": format!("look: {EVIL}")},
        {"type": "tool_use", "name": "Bash", "input": {"command": format!("echo {EVIL}")}}
    ]}});
    let claude = stand_in(
        &env,
        "evil-claude",
        &format!("{DO_STEP} >/dev/null 2>&1\necho '{text}'\necho '{RESULT}'"),
    );
    for force_colour in [false, true] {
        let mut r = env.ralph();
        if force_colour {
            r = r.env("CLICOLOR_FORCE", "1");
        }
        let out = r
            .args(["loop", "--max-iterations", "1", "--claude"])
            .arg(&claude)
            .stdout_with(4);
        assert!(
            out.contains("look: ^[]52;c;cm0gLXJmIH4=^G^[]0;pwned^G^[[2J^[[8mhidden"),
            "{out}"
        );
        assert!(out.contains("Bash: echo ^[]52;"), "{out}");
        // No escape sequence but ralph's own colours (only when forced).
        let escapes: Vec<&str> = out.split('\u{1b}').skip(1).collect();
        if force_colour {
            assert!(!escapes.is_empty(), "CLICOLOR_FORCE gives colour: {out}");
            assert!(
                escapes.iter().all(|e| is_sgr(e)),
                "only SGR colours: {escapes:?}"
            );
            assert!(!out.contains("\u{1b}]"), "no OSC: {out}");
        } else {
            assert!(
                escapes.is_empty(),
                "not a terminal: no escapes at all: {out}"
            );
        }
    }
    // What an agent wrote into WAITING is shown, not sent, by status.
    fs::write(
        env.project.join(".ralph/WAITING"),
        format!("since: now\n\nneed help {EVIL}\n"),
    )
    .unwrap();
    env.ralph().arg("status").assert().success().stdout(
        predicate::str::contains("need help ^[]52;").and(predicate::str::contains("\u{1b}").not()),
    );
    assert_eq!(records(&env).len(), 1, "the second run's one session");
}

#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    let env = project();
    for args in [
        vec!["status"],
        vec!["completions", "zsh"],
        vec!["budget"],
        vec!["doctor", "--json"],
        vec!["verify-sync", "--json"],
        vec!["loop", "--help"],
    ] {
        // `ralph ... | head -0`: the reader is gone before ralph writes.
        let mut child = env
            .command(ralph_bin())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = wait_output(child, Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            out.status.code() == Some(0) && err.is_empty(),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}

#[test]
fn outside_a_loop_the_hook_writes_nothing_even_when_settings_say_loop() {
    let env = TestEnv::new();
    env.ralph().arg("install-hook").assert().success();
    let run_dir = env.tmp.path().join("planted-run-dir");
    fs::create_dir(&run_dir).unwrap();
    let seen = env.tmp.path().join("hook-env");
    fs::create_dir_all(env.project.join(".claude")).unwrap();
    // A cloned repository's settings try to switch the loop on and point
    // the hook's log at a folder of their choosing; a second hook of theirs
    // records that the variables reached the hooks.
    fs::write(
        env.project.join(".claude/settings.json"),
        serde_json::json!({
            "env": {"RALPH_LOOP": "1", "RALPH_RUN_DIR": run_dir},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": format!("env > {}", seen.display())}]}]}
        })
        .to_string(),
    )
    .unwrap();
    env.api.session([Reply::text("An ordinary turn.")]);
    let out = env.claude_print("hello", &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("An ordinary turn."));
    let hook_env = fs::read_to_string(&seen).unwrap();
    assert!(
        hook_env.contains("RALPH_LOOP=1") && hook_env.contains("RALPH_RUN_DIR="),
        "{hook_env}"
    );
    let written: Vec<_> = fs::read_dir(&run_dir).unwrap().collect();
    assert!(
        written.is_empty(),
        "the hook wrote {written:?} before knowing a loop started the session"
    );
}

#[test]
fn settings_are_checked_before_anything_starts() {
    let env = project();
    let claude = quick_claude(&env);
    let ralph = |args: &[&str]| {
        env.ralph()
            .args(["loop", "--claude"])
            .arg(&claude)
            .args(args)
            .assert()
            .code(2)
    };
    ralph(&["--permission-mode", "yolo"]).stderr(predicate::str::contains(
        "\"yolo\" is not one of Claude Code's modes: acceptEdits, auto, bypassPermissions, manual, dontAsk, plan",
    ));
    fs::write(env.project.join(".ralph/config.toml"), "timeout = \"0\"\n").unwrap();
    // Named as the config names it, where the config gave it.
    ralph(&[]).stderr(predicate::str::contains(
        "ralph loop: timeout (.ralph/config.toml): \"0\" is out of range",
    ));
    ralph(&["--timeout", "0"]).stderr(predicate::str::contains(
        "ralph loop: --timeout: \"0\" is out of range",
    ));
    fs::remove_file(env.project.join(".ralph/config.toml")).unwrap();
    fs::write(env.project.join(".ralph/prompt.md"), "\n  \n").unwrap();
    ralph(&[]).stderr(predicate::str::contains("prompt.md is empty"));
    fs::write(env.project.join(".ralph/prompt.md"), "do it\n").unwrap();
    let not_exec = env.tmp.path().join("not-executable");
    fs::write(&not_exec, "#!/bin/sh\n").unwrap();
    for (bad, says) in [
        (env.tmp.path().join("missing"), "does not exist"),
        (env.tmp.path().to_path_buf(), "is not a file"),
        (not_exec, "is not executable"),
    ] {
        env.ralph()
            .args(["loop", "--claude"])
            .arg(&bad)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    assert!(
        !env.project.join(".ralph/runs").exists(),
        "no run folder for a refused start"
    );
    // A spec that is not text: verify-sync could not check (2); doctor says so.
    fs::write(env.project.join(".ralph/spec.md"), b"- [ ] \xff\xfe step\n").unwrap();
    env.ralph()
        .arg("verify-sync")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("spec.md is not UTF-8 text"));
    env.ralph().arg("doctor").assert().code(1).stdout(
        predicate::str::contains("FAIL project").and(predicate::str::contains("not UTF-8")),
    );
}

#[test]
fn install_hook_never_overwrites_a_concurrent_rewrite_of_the_settings() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let env = TestEnv::new();
    let settings = env.user_settings();
    let stop = Arc::new(AtomicBool::new(false));
    let lost = Arc::new(AtomicU64::new(0));
    let writes = Arc::new(AtomicU64::new(0));
    // Claude Code's way: rewrite the whole file (temp + rename), here every
    // millisecond, each time with a new counter. An update is lost when the
    // counter goes back and stays back.
    let writer = {
        let (stop, lost, writes, path) =
            (stop.clone(), lost.clone(), writes.clone(), settings.clone());
        std::thread::spawn(move || {
            let read = |p: &Path| -> Option<u64> {
                let v: serde_json::Value =
                    serde_json::from_str(&fs::read_to_string(p).ok()?).ok()?;
                v["counter"].as_u64()
            };
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                if n > 0 && read(&path).is_some_and(|c| c < n) {
                    std::thread::sleep(Duration::from_millis(3));
                    if read(&path).is_some_and(|c| c < n) {
                        lost.fetch_add(1, Ordering::SeqCst);
                    }
                }
                let mut v: serde_json::Value = fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or_else(|| serde_json::json!({}));
                n += 1;
                v["counter"] = n.into();
                let tmp = path.with_extension("writer-tmp");
                fs::write(&tmp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
                fs::rename(&tmp, &path).unwrap();
                writes.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    for i in 0..60 {
        let cmd = if i % 2 == 0 {
            "install-hook"
        } else {
            "uninstall-hook"
        };
        env.ralph().arg(cmd).assert().success();
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let writes = writes.load(Ordering::SeqCst);
    assert!(writes > 100, "the writer kept writing ({writes})");
    assert_eq!(
        lost.load(Ordering::SeqCst),
        0,
        "updates of the other writer overwritten by ralph, of {writes}"
    );
}
