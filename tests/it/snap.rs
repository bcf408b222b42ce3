//! What a user reads, checked whole against reviewed snapshots
//! (`tests/it/snapshots/`): every command's `--help`, the end of a loop
//! (complete, waiting, at its limit), `status` and `watch --once` after a
//! real run, refusals, the pull request's body and the GitHub Actions
//! workflow. What varies between runs is hidden by the one set of rules in
//! `support::snap`.

use std::fs;

use crate::support::snap::{check, check_ralph, check_ralph_when, shown};
use crate::support::*;

/// The command line of every command ralph has, as a user types it
/// (`ralph`, `ralph loop`, `ralph worktree merge`, ...), read from clap so
/// a new command gets its snapshot without a line here.
fn command_lines() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(path.clone());
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            walk(sub, p, out);
        }
    }
    let mut out = Vec::new();
    let mut cmd = ralph::cli::command();
    // clap adds its own `help` subcommands as it builds the command: built
    // here as `ralph` is, they are seen (and left out) the same way.
    cmd.build();
    walk(&cmd, Vec::new(), &mut out);
    out
}

#[test]
fn snap_help_of_every_command() {
    let env = TestEnv::new();
    let lines = command_lines();
    assert!(lines.len() > 20, "{lines:?}");
    for path in lines {
        let out = env.ralph().args(&path).arg("--help").assert();
        let typed = ["ralph"]
            .into_iter()
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        check(
            &env,
            &format!("help-{}", typed.replace(' ', "-")),
            &format!("{typed} --help"),
            &shown(out.get_output()),
        );
    }
}

/// `ralph loop` with the real client on `env`'s scripted sessions: its
/// whole output.
fn run_loop(env: &TestEnv, extra: &[&str]) -> String {
    shown(ralph_loop(env).args(extra).assert().get_output())
}

#[test]
fn snap_a_complete_run_and_what_status_and_watch_say_after_it() {
    let env = project();
    for i in 1..=3 {
        env.api.session(step_session(i == 3));
    }
    let said = run_loop(&env, &[]);
    check(
        &env,
        "loop-complete",
        "ralph loop (three steps, three sessions)",
        &said,
    );
    check_ralph(&env, "status-after-complete", &["status"]);
    check_ralph(&env, "status-json-after-complete", &["status", "--json"]);
    check_ralph(&env, "watch-once-after-complete", &["watch", "--once"]);
}

#[test]
fn snap_a_run_that_stops_waiting_for_a_human() {
    let env = project();
    env.api.session([
        Reply::bash(format!(
            "{DO_STEP} && ralph waiting -r 'which database: postgres or sqlite?'"
        )),
        Reply::text("Asked."),
    ]);
    let said = run_loop(&env, &[]);
    check(
        &env,
        "loop-waiting",
        "ralph loop (the session says WAITING)",
        &said,
    );
    check_ralph(&env, "status-waiting", &["status"]);
    let again = run_loop(&env, &[]);
    check(
        &env,
        "loop-while-waiting",
        "ralph loop (WAITING still there)",
        &again,
    );
}

/// A question with options, as `ralph watch --once` prints it after the
/// table (and `--json` in its row), once the run ended waiting for it.
#[test]
fn snap_a_question_with_options_as_watch_shows_it() {
    let env = project();
    env.api.session([
        Reply::bash(format!(
            "{DO_STEP} && ralph waiting --question 'Which database should the app use?' \
             --option Postgres --option 'SQLite, for now' --blocker decision"
        )),
        Reply::text("Asked."),
    ]);
    ralph_loop(&env).assert().code(3);
    check_ralph(&env, "watch-once-waiting", &["watch", "--once"]);
    let v = env.ralph().args(["watch", "--json"]).json_with(0);
    assert_eq!(v[0]["state"], serde_json::json!({"kind": "waiting"}));
    assert_eq!(
        v[0]["question"],
        serde_json::json!({
            "text": "Which database should the app use?",
            "blocker": "decision",
            "options": ["Postgres", "SQLite, for now"]
        })
    );
    assert_eq!(v[0]["step"], "2 Second step", "the step is still the step");
}

#[test]
fn snap_a_run_at_its_iteration_limit() {
    let env = project();
    env.api.session(step_session(false));
    let said = run_loop(&env, &["--max-iterations", "1"]);
    check(
        &env,
        "loop-iteration-limit",
        "ralph loop --max-iterations 1",
        &said,
    );
    check_ralph(&env, "watch-once-at-limit", &["watch", "--once"]);
    // Status says how to go on, as the loop's end did.
    check_ralph(&env, "status-at-limit", &["status"]);
}

#[test]
fn snap_refusals() {
    let env = project();
    let many = ["loop", "--max-iterations", "many"];
    check_ralph(&env, "refusal-bad-flag-value", &many);
    check_ralph(&env, "refusal-bad-duration", &["loop", "--timeout", "soon"]);

    // A clone's config that runs something, not yet approved.
    fs::write(
        env.project.join(".ralph/config.toml"),
        "[gate]\ncommands = [\"make test\"]\n",
    )
    .unwrap();
    check_ralph_when(
        &env,
        "refusal-untrusted-config",
        &["loop"],
        "config not approved",
    );

    // A git repository never set up for ralph, and a folder that is not
    // even that.
    let bare = TestEnv::new();
    bare.git_init();
    check_ralph_when(&bare, "refusal-no-ralph-folder", &["loop"], "no .ralph");
    let plain = TestEnv::new();
    check_ralph_when(
        &plain,
        "refusal-no-git-no-ralph",
        &["loop"],
        "no git, no .ralph",
    );
    check_ralph_when(
        &bare,
        "refusal-complete-without-spec",
        &["complete"],
        "no spec",
    );
}

#[test]
fn snap_the_pull_request_body_as_draft_and_as_ready() {
    let (env, _origin, gh) = crate::ship::shipping();
    let spec = "# Fix the parser\n\n- [ ] **1** First step\n- [ ] **#4** Second step\n";
    fs::write(env.project.join(".ralph/spec.md"), spec).unwrap();
    env.commit_all("spec");
    env.api.session([
        Reply::bash(format!("{DO_STEP} && ralph waiting -r 'which format?'")),
        Reply::text("Asked."),
    ]);
    let said = shown(
        crate::ship::shipping_loop(&env, &gh)
            .args(["--pr"])
            .assert()
            .get_output(),
    );
    check(
        &env,
        "loop-pr-waiting",
        "ralph loop --pr (the session says WAITING)",
        &said,
    );
    let draft = gh.pulls()[0]["body"].as_str().unwrap().to_string();
    check(
        &env,
        "pr-body-draft",
        "the pull request's body, as a draft",
        &draft,
    );

    env.ralph().args(["resume"]).assert().success();
    env.api.session(step_session(true));
    let said = shown(
        crate::ship::shipping_loop(&env, &gh)
            .args(["--pr"])
            .assert()
            .get_output(),
    );
    check(
        &env,
        "loop-pr-complete",
        "ralph loop --pr (complete)",
        &said,
    );
    let ready = gh.pulls()[0]["body"].as_str().unwrap().to_string();
    check(
        &env,
        "pr-body-ready",
        "the pull request's body, ready for review",
        &ready,
    );
}

#[test]
fn snap_the_github_actions_workflow() {
    let env = TestEnv::new();
    env.git_init();
    // What init says depends on whether br is installed: none here, on any
    // machine.
    let path = format!("{}:/usr/bin:/bin", ralph_bin().parent().unwrap().display());
    let out = env
        .ralph()
        .env("PATH", path)
        .args(["init", "--github-actions"])
        .args(["--ralph-from", "https://github.com/ralph-forks/ralph.git"])
        .args(["--ralph-tag", "v0.9.1"])
        .assert();
    check(
        &env,
        "init-github-actions",
        "ralph init --github-actions",
        &shown(out.get_output()),
    );
    let file = fs::read_to_string(env.project.join(".github/workflows/ralph.yml")).unwrap();
    check(
        &env,
        "workflow-ralph-yml",
        ".github/workflows/ralph.yml",
        &file,
    );
}
