//! The plugin, `/ralph-setup`, `ralph init`, `budget`, `doctor`,
//! completions and `install.sh`, with the real Claude Code CLI.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use predicates::prelude::*;
use serde_json::Value;

use crate::support::loops::{DO_STEP, ralph_loop};
use crate::support::{
    Reply, TestEnv, check_named, claude_bin, eventually, ralph_bin, repo_root, tree,
    with_file_lock, write_exec,
};

#[test]
fn the_plugin_validates() {
    let env = TestEnv::new();
    for extra in [&[][..], &["--profile", "directory"][..]] {
        let out = env
            .claude()
            .args(["plugin", "validate"])
            .arg(repo_root())
            .args(extra)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "claude plugin validate {extra:?} failed:\n{text}"
        );
        assert!(text.contains("Validation passed"), "{text}");
    }
}

#[test]
fn plugin_slash_command_expands_into_the_prompt() {
    let env = TestEnv::new();
    env.api.session([Reply::text("Let us plan it.")]);
    let out = env.claude_print(
        "/ralph:ralph-setup a CLI that converts CSV to JSON",
        &["--plugin-dir", repo_root().to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    let text = env.api.turns()[0].user_text();
    assert!(
        text.contains("# Set up a Ralph loop"),
        "the command's body arrived:\n{text}"
    );
    assert!(
        text.contains("The user wants this built: a CLI that converts CSV to JSON"),
        "$ARGUMENTS expanded:\n{text}"
    );
}

#[test]
fn init_writes_files_that_pass_budget_and_the_parser_and_never_overwrites() {
    let env = TestEnv::new();
    env.ralph()
        .arg("init")
        .assert()
        .success()
        .stdout(predicate::str::contains("wrote").and(predicate::str::contains("spec.md")));
    let dir = env.project.join(".ralph");
    for f in ["spec.md", "readme.md", "prompt.md"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    let gitignore = fs::read_to_string(dir.join(".gitignore")).unwrap();
    assert_eq!(
        gitignore,
        "runs/\nCOMPLETE\nWAITING\nanswer.md\ngate-failed.md\nreview-failed.md\nreview-verdict.json\nloop.lock\nplan-draft/\n"
    );
    env.ralph()
        .arg("budget")
        .assert()
        .success()
        .stdout(predicate::str::contains("estimated per script"));
    let spec = ralph::work::spec::parse(&fs::read_to_string(dir.join("spec.md")).unwrap());
    assert!(spec.problems.is_empty() && spec.total() == 3, "{spec:?}");
    env.ralph()
        .arg("verify-sync")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("0/3 steps done"));

    fs::write(dir.join("spec.md"), "- [ ] my own step\n").unwrap();
    env.ralph()
        .arg("init")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "kept the existing spec.md, readme.md, prompt.md",
        ));
    assert_eq!(
        fs::read_to_string(dir.join("spec.md")).unwrap(),
        "- [ ] my own step\n"
    );
    fs::write(dir.join("learnings.md"), "- the sessions' own lesson\n").unwrap();
    env.ralph()
        .args(["init", "--force"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("overwrote").and(predicate::str::contains(
                "/.ralph/learnings.md (the sessions' own: --force does not replace it)",
            )),
        );
    assert_ne!(
        fs::read_to_string(dir.join("spec.md")).unwrap(),
        "- [ ] my own step\n"
    );
    // What sessions learned is theirs: --force does not replace it.
    assert_eq!(
        fs::read_to_string(dir.join("learnings.md")).unwrap(),
        "- the sessions' own lesson\n"
    );
    assert_eq!(
        fs::read_to_string(dir.join(".gitignore")).unwrap(),
        gitignore,
        "no duplicate lines"
    );
}

#[test]
fn budget_fails_when_over() {
    let env = TestEnv::new();
    env.ralph().arg("init").assert().success();
    fs::write(env.project.join(".ralph/prompt.md"), "x".repeat(4 * 601)).unwrap();
    env.ralph()
        .arg("budget")
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with(
            ".ralph/prompt.md               ~601 /   600 tokens  OVER BUDGET\n\
             .ralph/readme.md               ~119 /   550 tokens\n\
             .ralph/spec.md                 ~119 /  4000 tokens\n\
             .ralph/learnings.md             ~51 /   800 tokens\n\
             .ralph/progress.md (tail)  none yet /  1500 tokens\n\
             total                          ~890 /  7450 tokens\n",
        ));
    let v: Value = serde_json::from_slice(
        &env.ralph()
            .args(["budget", "--json"])
            .assert()
            .code(1)
            .get_output()
            .stdout,
    )
    .unwrap();
    assert_eq!(v["over"], true);
    assert_eq!(v["files"][0]["tokens"], 601);
}

fn doctor(env: &TestEnv, path: &str) -> Value {
    let out = env
        .ralph()
        .env("PATH", path)
        .args(["doctor", "--json"])
        .assert()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

fn failing(v: &Value) -> Vec<String> {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn install_command_installs_replaces_only_when_told_and_removes() {
    let env = TestEnv::new();
    let path = env.home.join(".claude/commands/ralph-setup.md");
    env.ralph().arg("install-command").assert().success();
    env.ralph()
        .arg("install-command")
        .assert()
        .success()
        .stdout(predicate::str::contains("already installed"));
    fs::write(&path, "my own /ralph-setup\n").unwrap();
    env.ralph()
        .arg("install-command")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("other content").and(predicate::str::contains("--force")));
    assert_eq!(fs::read_to_string(&path).unwrap(), "my own /ralph-setup\n");
    env.ralph()
        .args(["install-command", "--remove"])
        .assert()
        .code(1);
    env.ralph()
        .args(["install-command", "--force"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Replaced /ralph-setup"));
    env.ralph()
        .args(["install-command", "--remove"])
        .assert()
        .success();
    assert!(!path.exists());
    // CLAUDE_CONFIG_DIR is where Claude Code looks instead.
    let config = env.tmp.path().join("claude-config");
    env.ralph()
        .env("CLAUDE_CONFIG_DIR", &config)
        .arg("install-command")
        .assert()
        .success();
    assert!(config.join("commands/ralph-setup.md").is_file());
}

/// `install-command --remove` gives back what the install found: a folder
/// the install made goes once it is empty; a folder that was there before,
/// or that holds a file of the user's, stays.
#[test]
fn install_command_remove_takes_away_the_empty_folder_it_made() {
    let env = TestEnv::new();
    // Codex had no prompts folder: the install made it.
    let prompts = env.home.join(".codex/prompts");
    assert!(!prompts.exists());
    env.ralph()
        .args(["install-command", "--agent", "codex"])
        .assert()
        .success();
    env.ralph()
        .args(["install-command", "--agent", "codex", "--remove"])
        .prints(
            0,
            &format!(
                "Removed ralph-setup ({}).\nRemoved {}, which ralph made for it and is now empty.\n",
                prompts.join("ralph-setup.md").display(),
                prompts.display()
            ),
            "",
        );
    assert!(!prompts.exists());
    assert!(env.home.join(".codex/config.toml").is_file());

    // Made by the install, but the user put a prompt of theirs there since.
    env.ralph()
        .args(["install-command", "--agent", "codex"])
        .assert()
        .success();
    fs::write(prompts.join("mine.md"), "my prompt\n").unwrap();
    env.ralph()
        .args(["install-command", "--agent", "codex", "--remove"])
        .prints(
            0,
            &format!(
                "Removed ralph-setup ({}).\n",
                prompts.join("ralph-setup.md").display()
            ),
            "",
        );
    assert_eq!(
        fs::read_to_string(prompts.join("mine.md")).unwrap(),
        "my prompt\n"
    );

    // Gemini's commands folder was there, empty, before: it stays.
    let commands = env.home.join(".gemini/commands");
    fs::create_dir(&commands).unwrap();
    env.ralph()
        .args(["install-command", "--agent", "gemini"])
        .assert()
        .success();
    env.ralph()
        .args(["install-command", "--agent", "gemini", "--remove"])
        .assert()
        .success();
    assert_eq!(fs::read_dir(&commands).unwrap().count(), 0);
}

#[test]
fn doctor_names_each_failing_check_and_its_fix() {
    let env = TestEnv::new();
    // Nothing set up, and no claude or tracker on PATH.
    let bare = "/usr/bin:/bin";
    let v = doctor(&env, bare);
    assert_eq!(
        failing(&v),
        [
            "claude",
            "hook",
            "slash-command",
            "tracker",
            "git",
            "project",
            "finish"
        ]
    );
    let fix = |name: &str| {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()["fix"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(fix("claude").contains("npm install -g @anthropic-ai/claude-code"));
    assert_eq!(fix("hook"), "ralph install-hook");
    assert!(fix("project").contains("ralph init"));
    assert_eq!(fix("git"), "git init && git add -A && git commit -m start");
    env.ralph()
        .env("PATH", bare)
        .arg("doctor")
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("FAIL hook")
                .and(predicate::str::contains("fix: ralph install-hook")),
        );

    // Fix them one by one.
    let claude_dir = claude_bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}:{bare}", claude_dir.display(), env.path_with_br());
    env.ralph().arg("install-hook").assert().success();
    env.ralph().arg("init").assert().success();
    // (The template's placeholders replaced by a step of one's own.)
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** Add the parser\n",
    )
    .unwrap();
    let git = env.command("git").args(["init", "-q"]).output().unwrap();
    assert!(git.status.success(), "{git:?}");
    // A repository, but no identity to commit with: said, with its fix.
    let no_identity = doctor(&env, &path);
    let git_check = check_named(&no_identity, "git");
    assert!(
        git_check["fix"]
            .as_str()
            .unwrap()
            .starts_with("git config --global user.name"),
        "{git_check}"
    );
    for (k, v) in [("user.name", "T"), ("user.email", "t@example.com")] {
        let set = env.command("git").args(["config", k, v]).output().unwrap();
        assert!(set.status.success(), "{set:?}");
    }
    // The fix doctor gives works from the project folder.
    assert_eq!(fix("slash-command"), "ralph install-command");
    env.ralph()
        .arg("install-command")
        .assert()
        .success()
        .stdout(predicate::str::contains("Installed /ralph-setup in"));
    assert_eq!(
        fs::read_to_string(env.home.join(".claude/commands/ralph-setup.md")).unwrap(),
        fs::read_to_string(repo_root().join("commands/ralph-setup.md")).unwrap()
    );
    let v = doctor(&env, &path);
    assert_eq!(failing(&v), Vec::<String>::new(), "{v}");
    assert!(
        v["checks"][0]["detail"]
            .as_str()
            .unwrap()
            .contains(crate::support::CLAUDE_VERSION)
    );

    // RALPH_LOOP exported in the shell.
    let out = env
        .ralph()
        .env("PATH", &path)
        .env("RALPH_LOOP", "1")
        .args(["doctor", "--json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    assert_eq!(
        failing(&serde_json::from_slice(&out).unwrap()),
        ["environment"]
    );

    // A hook that points at a binary that is gone.
    let settings = env.user_settings();
    let text = fs::read_to_string(&settings)
        .unwrap()
        .replace(crate::support::ralph_bin().to_str().unwrap(), "/gone/ralph");
    fs::write(&settings, text).unwrap();
    let v = doctor(&env, &path);
    assert_eq!(failing(&v), ["hook"]);
    assert!(
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "hook")
            .unwrap()["detail"]
            .as_str()
            .unwrap()
            .contains("/gone/ralph, which does not exist")
    );

    // Over budget, and broken checkboxes.
    env.ralph().arg("install-hook").assert().success();
    fs::write(env.project.join(".ralph/readme.md"), "y".repeat(4 * 600)).unwrap();
    assert_eq!(failing(&doctor(&env, &path)), ["project"]);
}

#[test]
fn completions_for_each_shell() {
    let env = TestEnv::new();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef ralph"),
        ("fish", "complete -c ralph"),
    ] {
        env.ralph()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains(marker).and(predicate::str::contains("install-hook")));
    }
    env.ralph().args(["completions", "tcsh"]).assert().code(2);
    // One line per shell in --help, as written.
    env.ralph()
        .args(["completions", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "\nbash: ralph completions bash > ~/.local/share/bash-completion/completions/ralph\nzsh:  ralph completions zsh",
        ));
}

#[test]
fn install_sh_twice_then_uninstall_leaves_the_home_as_it_was() {
    let env = TestEnv::new();
    let before_tree = tree(&env.home);
    let before_settings: Value =
        serde_json::from_str(&fs::read_to_string(env.user_settings()).unwrap()).unwrap();
    let root = env.tmp.path().join("cargo-root");
    let real_home = PathBuf::from(std::env::var("HOME").unwrap());
    let run = |args: &[&str]| {
        // The user's own Rust toolchain; ralph's build cached between runs.
        let mut c = env.command(repo_root().join("install.sh"));
        c.args(args)
            .env(
                "CARGO_HOME",
                std::env::var("CARGO_HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|_| real_home.join(".cargo")),
            )
            .env(
                "RUSTUP_HOME",
                std::env::var("RUSTUP_HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|_| real_home.join(".rustup")),
            )
            .env("CARGO_INSTALL_ROOT", &root)
            .env("CARGO_TARGET_DIR", repo_root().join("target/install-sh"))
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    root.join("bin").display(),
                    std::env::var("PATH").unwrap()
                ),
            );
        let out = with_file_lock(&repo_root().join("target/install-sh.lock"), || {
            c.output().unwrap()
        });
        assert!(out.status.success(), "install.sh {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = run(&[]);
    assert!(
        first.contains("installed:") && first.contains("ralph-setup.md"),
        "{first}"
    );
    // The build is said before its silent minutes (cargo's progress is not
    // hidden any more either).
    assert!(
        first.starts_with("install.sh: building and installing the ralph binary")
            && first.contains(
                "the first build takes a few minutes (about 5 on a small 2-core machine)"
            ),
        "{first}"
    );
    let command = env.home.join(".claude/commands/ralph-setup.md");
    assert_eq!(
        fs::read(&command).unwrap(),
        fs::read(repo_root().join("commands/ralph-setup.md")).unwrap()
    );
    assert!(root.join("bin/ralph").is_file());
    // The hook starts after every turn: on Linux with glibc's static library
    // there (libc6-dev, which Rust itself needs here), it is linked statically.
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        assert!(
            first.contains(", static)"),
            "install.sh did not choose a static build:\n{first}"
        );
        assert!(
            !has_interpreter(&root.join("bin/ralph")),
            "installed ralph is dynamically linked"
        );
        assert!(
            has_interpreter(Path::new(env!("CARGO_BIN_EXE_ralph"))),
            "the check tells the test build, which is dynamic"
        );
    }
    let installed = tree(&env.home);
    let settings_once = fs::read_to_string(env.user_settings()).unwrap();
    assert!(
        settings_once.contains(&format!("{} hook stop", root.join("bin/ralph").display())),
        "{settings_once}"
    );

    let second = run(&[]);
    assert!(
        second.contains("already installed") && second.contains("up to date"),
        "{second}"
    );
    assert_eq!(tree(&env.home), installed, "a second run changes nothing");
    assert_eq!(
        fs::read_to_string(env.user_settings()).unwrap(),
        settings_once
    );

    // /ralph-setup as typed works from the user-level command.
    env.api.session([Reply::text("Let us plan it.")]);
    let out = env.claude_print("/ralph-setup a todo app", &[]);
    assert!(out.status.success(), "{out:?}");
    let text = env.api.turns()[0].user_text();
    assert!(
        text.contains("# Set up a Ralph loop")
            && text.contains("The user wants this built: a todo app"),
        "{text}"
    );

    // The installed binary as the Stop hook of a loop's print session: it
    // finds the session and leaves the exit to claude, whole answer printed.
    let run_dir = env.tmp.path().join("run");
    fs::create_dir(&run_dir).unwrap();
    env.api.session([Reply::text("Step done.")]);
    let mut c = env.claude();
    c.args(["-p", "--dangerously-skip-permissions"])
        .env("RALPH_LOOP", "1")
        .env("RALPH_RUN_DIR", &run_dir);
    let out = crate::support::run_with_stdin(c, "do the step", Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Step done.");
    let log = || -> Vec<Value> {
        fs::read_to_string(run_dir.join("hook.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    eventually(Duration::from_secs(15), || log().len() >= 2);
    let log = log();
    assert_eq!(log[0]["action"], "watcher", "{log:?}");
    assert_eq!(log[0]["identified_by"], "CLAUDE_PID", "{log:?}");
    assert_eq!(log[1]["why"], "session exited by itself", "{log:?}");

    // A loop run with an approved config: ralph writes its own state (the
    // approval, the loop's lock and record) in the home, which uninstall
    // takes away with the rest.
    env.git_init();
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** The one step\n",
    )
    .unwrap();
    fs::write(env.project.join(".ralph/prompt.md"), "Do the open step.\n").unwrap();
    env.approved_config("[gate]\ncommands = [\"true\"]\n");
    env.commit_all("start");
    env.api
        .session([Reply::bash(DO_STEP), Reply::text("Step done.")]);
    ralph_loop(&env).assert().success();
    let state = env.home.join(".local/state/ralph");
    assert!(state.join("loops").is_dir(), "{:?}", tree(&env.home));
    assert!(env.home.join(".local/share/ralph/trust").is_dir());

    // What Claude Code itself wrote into the home during those sessions is
    // not ours to remove; ralph's own folders (and the folders on the way
    // to them, which were not there before) are.
    let ralphs = |p: &String| {
        p == ".local/state"
            || p.starts_with(".local/state/ralph")
            || p.starts_with(".local/share/ralph")
    };
    let claudes: Vec<String> = tree(&env.home)
        .into_iter()
        .filter(|p| !installed.contains(p) && !ralphs(p))
        .collect();

    let gone = run(&["--uninstall"]);
    assert!(gone.contains("uninstalled."), "{gone}");
    assert!(
        gone.contains(&format!("removed: {}/loops/\n", state.display()))
            && gone.contains(&format!("removed: {}/\n", state.display())),
        "{gone}"
    );
    let left: Vec<String> = tree(&env.home)
        .into_iter()
        .filter(|p| !claudes.contains(p))
        .collect();
    assert_eq!(left, before_tree, "{gone}");
    let after: Value =
        serde_json::from_str(&fs::read_to_string(env.user_settings()).unwrap()).unwrap();
    assert_eq!(after, before_settings);
    assert!(!root.join("bin/ralph").exists(), "binary removed");
}

#[test]
fn plugin_hook_and_installed_hook_together_end_the_session_once() {
    let env = TestEnv::new();
    env.ralph().arg("install-hook").assert().success();
    let run_dir = env.tmp.path().join("run");
    fs::create_dir(&run_dir).unwrap();
    // The plugin's hook finds `ralph` on PATH: a wrapper first there says
    // that it ran (the installed hook names the binary itself).
    let shim = env.tmp.path().join("shim");
    fs::create_dir(&shim).unwrap();
    let ran = env.tmp.path().join("plugin-hook-ran");
    write_exec(
        &shim.join("ralph"),
        &format!(
            "#!/bin/sh\necho $$ >> '{}'\nexec '{}' \"$@\"\n",
            ran.display(),
            ralph_bin().display()
        ),
    );
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        shim.display(),
        ralph_bin().parent().unwrap().display()
    );
    env.api
        .session([Reply::text("One turn with two ralph hooks.")]);
    let mut pty = env.claude_interactive(
        &["--plugin-dir", repo_root().to_str().unwrap(), "go"],
        &[
            ("RALPH_LOOP", "1"),
            ("RALPH_RUN_DIR", run_dir.to_str().unwrap()),
            ("PATH", &path),
        ],
    );
    // The answer may be drawn and cleared in one burst as the session ends,
    // so wait for the exit and read what happened from the hook's log.
    let status = pty.wait_exit(Duration::from_secs(60));
    assert!(status.is_some_and(|s| s.success()), "{}", pty.screen());
    assert_eq!(env.api.turns().len(), 1, "the turn ran");
    assert!(
        eventually(Duration::from_secs(5), || ran.exists()),
        "the plugin's hook never ran"
    );
    // The session exits at the first SIGINT, and the other hook may then
    // find it gone (or be ended with it) before it logs: one line, or two
    // when it was quick enough to see the claim. The count of signals sent
    // whatever the timing is the stand-in test's in stop_hook.rs.
    let log_path = run_dir.join("hook.log");
    assert!(eventually(Duration::from_secs(5), || log_path.exists()));
    // Every hook of this session has ended (each carries its run folder in
    // its environment): what the log says now is all it will say.
    let hook_of_this_run = format!("RALPH_RUN_DIR={}", run_dir.display());
    assert!(
        eventually(Duration::from_secs(30), || hooks_with(&hook_of_this_run)
            == 0),
        "a hook of this session never ended"
    );
    let log = fs::read_to_string(&log_path).unwrap();
    let acted = log
        .lines()
        .filter(|l| l.contains("\"action\":\"SIGINT\""))
        .count();
    let deferred = log
        .lines()
        .filter(|l| l.contains("another ralph hook already handled"))
        .count();
    assert_eq!(acted, 1, "{log}");
    assert_eq!(acted + deferred, log.lines().count(), "{log}");
}

/// Live `ralph hook` processes with `var` (`NAME=value`) in their
/// environment.
fn hooks_with(var: &str) -> usize {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, UpdateKind};
    let mut sys = sysinfo::System::new().unwrap();
    let kind = ProcessRefreshKind::nothing()
        .with_cmd(UpdateKind::Always)
        .with_environ(UpdateKind::Always);
    sys.refresh_processes_specifics(ProcessesToUpdate::All, true, kind);
    sys.processes()
        .values()
        .filter(|p| {
            p.thread_kind().is_none() && !matches!(p.status(), sysinfo::ProcessStatus::Zombie)
        })
        .filter(|p| p.cmd().iter().any(|a| a == "hook"))
        .filter(|p| p.environ().iter().any(|e| e == var))
        .count()
}

/// Does this ELF executable name a dynamic loader (a PT_INTERP header)?
fn has_interpreter(path: &Path) -> bool {
    let b = fs::read(path).unwrap();
    assert_eq!(&b[..4], b"\x7fELF", "{} is not an ELF file", path.display());
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().unwrap()) as usize;
    let (size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).any(|i| {
        let o = phoff + i * size;
        u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) == 3
    })
}

/// What `ralph doctor` says of the "finish" check, and what `ralph loop`
/// says when it refuses before any session (the stand-in claude never runs).
fn doctor_and_loop(env: &TestEnv, path: &str) -> (Value, String) {
    let v = doctor(env, path);
    let finish = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "finish")
        .cloned()
        .unwrap();
    let claude = crate::support::stand_in(env, "never-claude", "touch claude-ran");
    let out = env
        .ralph()
        .env("PATH", path)
        .args(["loop", "--claude"])
        .arg(&claude)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(!env.project.join("claude-ran").exists(), "a session ran");
    assert!(!env.project.join(".ralph/runs").exists(), "a run began");
    (finish, String::from_utf8_lossy(&out).into_owned())
}

#[test]
fn doctor_and_loop_refuse_a_project_that_could_never_finish() {
    let env = TestEnv::new();
    env.git_init();
    env.ralph().arg("init").assert().success();
    env.commit_all("start");
    let with_br = env.path_with_br();

    // ralph init's template, as written: placeholders, not steps.
    let (finish, said) = doctor_and_loop(&env, &with_br);
    assert_eq!(finish["ok"], false, "{finish}");
    assert!(
        finish["detail"]
            .as_str()
            .unwrap()
            .contains("ralph init's template"),
        "{finish}"
    );
    assert_eq!(
        said,
        "ralph loop: this run could never finish, so no session was started:\n  \
         the spec is still ralph init's template (its steps are placeholders)\n    \
         fix: write your own steps in .ralph/spec.md (or run /ralph-setup in Claude Code)\n\
         `ralph doctor` checks all of this.\n"
    );

    // Steps that name tasks, and br not initialised here.
    let spec = env.project.join(".ralph/spec.md");
    fs::write(
        &spec,
        "- [ ] **1** parse [calc-a1]\n- [ ] **2** print [calc-a2]\n",
    )
    .unwrap();
    let (finish, said) = doctor_and_loop(&env, &with_br);
    assert_eq!(finish["ok"], false, "{finish}");
    assert!(
        said.contains("the tracker cannot answer")
            && said.contains("fix: `br init` in the project"),
        "{said}"
    );

    // br set up, but it knows neither id; a gate whose program is missing.
    env.br(&["init"]);
    env.approved_config("[gate]\ncommands = [\"pytest -q\"]\n");
    let (finish, said) = doctor_and_loop(&env, &with_br);
    assert_eq!(
        finish["detail"],
        "a loop here could never finish: the tracker does not know the tasks named in the spec: calc-a1, calc-a2; the gate runs programs not found here: pytest"
    );
    assert!(
        said.contains("the tracker does not know the tasks named in the spec: calc-a1, calc-a2\n    fix: create them")
            && said.contains("the gate runs programs not found here: pytest\n"),
        "{said}"
    );

    // Real tasks, a gate that exists: doctor passes it, and the loop starts.
    let a = env.br(&["create", "parse", "--type", "task", "--silent"]);
    fs::write(&spec, format!("- [ ] **1** parse [{}]\n", a.trim())).unwrap();
    env.approved_config("[gate]\ncommands = [\"true\"]\n");
    let v = doctor(&env, &with_br);
    let finish = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "finish")
        .unwrap();
    assert_eq!(
        (finish["ok"].as_bool(), finish["detail"].as_str()),
        (
            Some(true),
            Some("a loop here can finish: 1 step, nothing in the way")
        )
    );
}

/// `ralph init` outside git writes its files all the same, and says that a
/// loop needs a repository, with the fix, first among the next steps.
#[test]
fn init_outside_git_warns_with_the_fix_and_succeeds() {
    let env = TestEnv::new();
    let run = || {
        let out = env
            .ralph()
            .env("PATH", "/usr/bin:/bin")
            .arg("init")
            .assert()
            .code(0)
            .get_output()
            .clone();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (out, err) = run();
    assert_eq!(
        err,
        format!(
            "ralph init: warning: {} is not in a git repository, and a loop needs one (sessions commit, and ralph measures their progress with git): run `git init` here\n",
            env.project.display()
        )
    );
    assert!(
        out.contains("\nNext:\n  1. `git init` here, then commit what is here (`git add -A && git commit -m start`).\n  2. Write the steps in .ralph/spec.md"),
        "{out}"
    );
    assert!(env.project.join(".ralph/spec.md").is_file());
    // In a repository: nothing to say about it.
    env.git_init();
    let (out, err) = run();
    assert_eq!(err, "");
    assert!(
        out.contains("\nNext:\n  1. Write the steps in .ralph/spec.md"),
        "{out}"
    );
}

#[test]
fn init_says_how_to_set_up_the_tracker_and_runs_br_init_when_asked_at_a_terminal() {
    let env = TestEnv::new();
    env.git_init();
    // No terminal: nothing is asked, the steps are said.
    let out = env
        .ralph()
        .env("PATH", env.path_with_br())
        .arg("init")
        .stdout_with(0);
    assert!(
        out.contains("\nNext:\n  1. Write the steps in .ralph/spec.md")
            && out.contains("  2. Set up the tracker: `br init` here, then `br create \"<step>\" --type task` for each step")
            && out.contains("  3. `ralph doctor` checks that a loop here can finish; then `ralph loop`.\n"),
        "{out}"
    );
    assert!(!env.project.join(".beads").exists());
    // Without br: how to get it.
    let out = env
        .ralph()
        .env("PATH", "/usr/bin:/bin")
        .arg("init")
        .stdout_with(0);
    assert!(
        out.contains("  2. Optional, recommended: a tracker, br. Install beads_rust with: "),
        "{out}"
    );
    // At a terminal, with br installed: asked, and done on a yes.
    let mut vars = env.vars();
    vars.retain(|(k, _)| k != "PATH");
    vars.push(("PATH".into(), env.path_with_br()));
    let argv = [
        crate::support::ralph_bin().display().to_string(),
        "init".to_string(),
    ];
    let mut pty = crate::support::Pty::spawn(&argv, &vars, &env.project);
    pty.wait_for("Run `br init` now? [y/N]", Duration::from_secs(20));
    pty.send(b"y\r");
    pty.wait_for("br is set up here", Duration::from_secs(20));
    assert!(
        pty.wait_exit(Duration::from_secs(20))
            .is_some_and(|s| s.success())
    );
    assert!(env.project.join(".beads").is_dir());
    let out = env
        .ralph()
        .env("PATH", env.path_with_br())
        .arg("init")
        .stdout_with(0);
    assert!(
        out.contains("  2. The tracker (.beads) is set up: "),
        "{out}"
    );
}

#[test]
fn the_plugin_installs_as_the_readme_says() {
    let env = TestEnv::new();
    let readme = fs::read_to_string(repo_root().join("README.md")).unwrap();
    for said in [
        "claude plugin marketplace add \"$PWD\"",
        "/plugin install ralph@ralph",
    ] {
        assert!(readme.contains(said), "README: {said}");
    }
    // The same, with the real client, from a clone of ralph.
    let out = env
        .claude()
        .current_dir(repo_root())
        .args(["plugin", "marketplace", "add"])
        .arg(repo_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The client copies the clone, target/ too: not while install.sh (in
    // another test) builds there.
    let out = with_file_lock(&repo_root().join("target/install-sh.lock"), || {
        env.claude()
            .args(["plugin", "install", "ralph@ralph"])
            .output()
            .unwrap()
    });
    assert!(
        out.status.success()
            && String::from_utf8_lossy(&out.stdout)
                .contains("Successfully installed plugin: ralph@ralph"),
        "{out:?}"
    );
    let out = env.claude().args(["plugin", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(
        list.contains("ralph@ralph") && list.contains("enabled"),
        "{list}"
    );
}

/// README's "Your first loop", command for command, with the real client
/// (its model scripted) and the real br: a three-step project to a finished
/// loop, the gate run by ralph.
#[test]
fn the_readmes_first_loop_finishes() {
    let env = TestEnv::new();
    env.ralph().arg("install-hook").assert().success();
    env.git_init();
    env.git(&["commit", "-q", "--allow-empty", "-m", "start"]);
    let path = env.path_with_br();
    let ralph = || env.ralph().env("PATH", &path);
    ralph().arg("init").assert().success();
    env.br(&["init"]);
    let ids: Vec<String> = [
        "add(a, b) in calc.py, with a unit test",
        "sub(a, b) in calc.py, with a unit test",
        "README.md: how to use calc",
    ]
    .iter()
    .map(|t| {
        env.br(&["create", t, "--type", "task", "--silent"])
            .trim()
            .to_string()
    })
    .collect();
    fs::write(
        env.project.join(".ralph/spec.md"),
        format!(
            "# Spec\n\n- [ ] **1** add(a, b) in calc.py, with a unit test in test_calc.py [{}]\n\
             - [ ] **2** sub(a, b) in calc.py, with a unit test [{}]\n\
             - [ ] **3** README.md: how to use calc [{}]\n",
            ids[0], ids[1], ids[2]
        ),
    )
    .unwrap();
    env.commit_all("ralph files");
    let doctor = ralph()
        .args(["doctor", "--json"])
        .assert()
        .get_output()
        .stdout
        .clone();
    let doctor: Value = serde_json::from_slice(&doctor).unwrap();
    let finish = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "finish")
        .unwrap();
    assert_eq!(finish["ok"], true, "{finish}");

    // Each session does what .ralph/prompt.md asks: the first open step, its
    // box, its task, a commit; the last runs `ralph complete`.
    let step = |code: &str, last: bool| {
        let done = "id=$(grep -m1 -e '- \\[ \\]' .ralph/spec.md | sed 's/.*\\[\\(.*\\)\\]$/\\1/') && \
                    sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && br close \"$id\" && git add -A && git commit -qm \"$id\"";
        let end = if last {
            " && ralph complete -m 'calc works'"
        } else {
            ""
        };
        vec![
            Reply::bash(format!("{code} && {done}{end}")),
            Reply::text("Step done."),
        ]
    };
    env.api.session(step(
        "printf 'def add(a, b):\\n    return a + b\\n' > calc.py && printf 'import unittest\\nfrom calc import add\\nclass T(unittest.TestCase):\\n    def test_add(self):\\n        self.assertEqual(add(2, 3), 5)\\n' > test_calc.py",
        false,
    ));
    env.api.session(step(
        "printf 'def sub(a, b):\\n    return a - b\\n' >> calc.py",
        false,
    ));
    env.api.session(step(
        "printf '# calc\\n\\nadd(a, b), sub(a, b)\\n' > README.md",
        true,
    ));
    let out = ralph()
        .args(["loop", "--gate", "python3 -m unittest", "--claude"])
        .arg(claude_bin())
        .stdout_with(0);
    assert!(
        out.contains("the gate passed")
            && out.contains("── ralph: complete: all 3 steps done · 3 iterations in "),
        "{out}"
    );
    assert_eq!(env.not_closed(&ids), Vec::<String>::new());
    let status = ralph().arg("status").stdout_with(0);
    assert!(
        status.contains("spec:    3/3 steps done") && status.contains("last run: "),
        "{status}"
    );
}

/// Sessions commit, and so does ralph: doctor says when git has no identity
/// to commit with, and how to give it one (the loop found out at its end).
#[test]
fn doctor_says_when_git_has_no_identity_to_commit_with() {
    let env = TestEnv::new();
    let bare = env.tmp.path().join("no-identity");
    fs::create_dir_all(&bare).unwrap();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&bare)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap()
    };
    git(&["init", "-q"]);
    let v: Value = env
        .ralph()
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args(["-C", bare.to_str().unwrap(), "doctor", "--json"])
        .json_with(1);
    let check = check_named(&v, "git");
    assert_eq!(check["ok"], false, "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .ends_with("but git has no identity to commit with (user.name, user.email)"),
        "{check}"
    );
    assert!(
        check["fix"]
            .as_str()
            .unwrap()
            .starts_with("git config --global user.name"),
        "{check}"
    );
}

/// Claude Code with no login and no key: doctor says so, with the fix,
/// without starting a session (every session of a loop would fail); with
/// the key the tests give it, it names the key's variable.
#[test]
fn doctor_says_when_claude_code_is_not_logged_in() {
    let env = TestEnv::new();
    let claude_dir = claude_bin().parent().unwrap().to_path_buf();
    let path = format!("{}:/usr/bin:/bin", claude_dir.display());
    let out = env
        .ralph()
        .env("PATH", &path)
        .env("ANTHROPIC_API_KEY", "")
        .args(["doctor", "--json"])
        .json_with(1);
    let check = check_named(&out, "claude");
    assert_eq!(check["ok"], false, "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .ends_with("not logged in (`claude auth status`)"),
        "{check}"
    );
    assert_eq!(
        check["fix"],
        "`claude auth login`, or set ANTHROPIC_API_KEY: every session would fail"
    );
    assert!(env.api.turns().is_empty(), "no session was started");
    let out = env
        .ralph()
        .env("PATH", &path)
        .args(["doctor", "--json"])
        .json_with(1);
    let check = check_named(&out, "claude");
    assert_eq!(check["ok"], true, "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .ends_with(", key set (ANTHROPIC_API_KEY)"),
        "{check}"
    );
}

/// `ralph init`, then a `[gate]` added to its config: the first loop says
/// the gate has not been approved (it is new), not that it changed since
/// you approved it (you approved nothing: init's config ran nothing).
#[test]
fn a_gate_added_after_init_is_new_to_approve_not_changed() {
    let env = TestEnv::new();
    env.git_init();
    env.ralph().arg("init").assert().success();
    let config = env.project.join(".ralph/config.toml");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str("\n[gate]\ncommands = [\"cargo test\"]\n");
    fs::write(&config, text).unwrap();
    let err = env.ralph().args(["loop"]).stderr_with(2);
    assert!(
        err.contains("asks to run or allow has not been approved:")
            && err.contains("cargo test")
            && !err.contains("changed since you approved"),
        "{err}"
    );
}

/// `ralph init` where a spec with steps is already there (`ralph plan`,
/// an import): the next step is to read it, not to write it.
#[test]
fn init_where_a_spec_has_steps_says_to_read_them() {
    let env = crate::support::project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n",
    )
    .unwrap();
    let out = env.ralph().arg("init").stdout_with(0);
    assert!(
        out.contains("\n  1. Read the 2 steps in .ralph/spec.md: is it the work?\n")
            && !out.contains("Write the steps"),
        "{out}"
    );
}
