//! `ralph plan "WHAT TO BUILD"`: one headless planning session of the
//! real client (Claude Code, Codex), its model scripted to make the tasks
//! with the real `br` and write the draft with real tool calls; ralph
//! keeps the plan only once it passes the check.

use std::fs;

use serde_json::Value;

use crate::support::*;

/// A git project with one file and nothing of ralph's.
pub(crate) fn bare_project() -> TestEnv {
    let env = TestEnv::new();
    env.git_init();
    fs::write(env.project.join("README.md"), "# greet\n\nSays hello.\n").unwrap();
    env.commit_all("start");
    env
}

/// The Bash command the scripted planner runs: an epic and two tasks (the
/// review depending on the first), then the draft naming them.
const PLAN: &str = r#"E=$(br create "Greeting CLI" --type epic --silent) && T1=$(br create "Print hello" --type task --parent "$E" --description "greet prints hello; cargo test passes" --silent) && T2=$(br create "Review phase 1" --type task --parent "$E" --silent) && br dep add "$T2" "$T1" >/dev/null && printf '# Greeting CLI\n\nEpic: [%s]\n\n## Phase 1\n\n- [ ] **1.1** Print hello [%s]\n- [ ] **1.R** Review phase 1 [%s]\n' "$E" "$T1" "$T2" > .ralph/plan-draft/spec.md && printf '| topic | where | read it when |\n|---|---|---|\n| usage | README.md | before the first step |\n' > .ralph/plan-draft/readme.md"#;

/// Every issue the real br shows (closed ones too): (id, title).
fn issues(env: &TestEnv) -> Vec<(String, String)> {
    let list: Value =
        serde_json::from_str(&env.br(&["list", "--all", "--limit", "0", "--json"])).unwrap();
    list["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["id"].as_str().unwrap().to_string(),
                i["title"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn plan(env: &TestEnv, what: &str) -> Ralph {
    env.ralph()
        .env("PATH", env.path_with_br())
        .args(["plan", what, "--claude"])
        .arg(claude_bin())
}

/// The kept plan's spec and readme, as they should be: the ids br gave.
fn assert_planned(env: &TestEnv, out: &str) {
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    let made = issues(env);
    let id = |title: &str| {
        made.iter()
            .find(|(_, t)| t == title)
            .unwrap_or_else(|| panic!("no task {title}: {made:?}"))
            .0
            .clone()
    };
    let (epic, t1) = (id("Greeting CLI"), id("Print hello"));
    assert!(
        spec.contains(&format!("Epic: [{epic}]"))
            && spec.contains(&format!("- [ ] **1.1** Print hello [{t1}]")),
        "{spec}"
    );
    assert!(
        out.contains(&format!(
            "wrote {}",
            env.project.join(".ralph/spec.md").display()
        )) && out.contains(&format!(
            "wrote {}",
            env.project.join(".ralph/readme.md").display()
        )) && out.contains(&format!(
            "the plan: 2 steps, under the epic {epic}; 3 tasks made in the tracker"
        )),
        "{out}"
    );
    let readme = fs::read_to_string(env.project.join(".ralph/readme.md")).unwrap();
    assert!(readme.contains("| usage | README.md |"), "{readme}");
    assert!(
        !env.project.join(".ralph/plan-draft").exists(),
        "the draft is gone once kept"
    );
    // The plan passes the check a loop makes: spec and tracker agree.
    let sync = env
        .ralph()
        .env("PATH", env.path_with_br())
        .args(["verify-sync"])
        .assert();
    let sync = String::from_utf8_lossy(&sync.get_output().stdout).into_owned();
    assert!(!sync.contains("names no tracker task"), "{sync}");
}

#[test]
fn claude_plans_from_a_sentence_and_the_plan_is_kept_with_its_tasks_and_cost() {
    let env = bare_project();
    env.api.session([
        Reply::bash("ls && cat README.md"),
        Reply::bash(PLAN),
        Reply::text("Planned: two steps."),
    ]);
    let out = plan(&env, "a CLI that greets").stdout_with(0);
    assert!(
        out.contains("── ralph: planning session: claude ──")
            && out.contains("→ Bash: E=$(br create")
            && out.contains("Planned: two steps.")
            && out.contains("the planning session (claude, ok) cost $"),
        "{out}"
    );
    assert_planned(&env, &out);
    // ralph set the tracker up, wrote init's prompt where there was none,
    // and keeps its draft folder out of git.
    assert!(env.project.join(".beads").is_dir());
    assert!(
        fs::read_to_string(env.project.join(".ralph/prompt.md"))
            .unwrap()
            .contains("ralph complete")
    );
    let ignored = fs::read_to_string(env.project.join(".ralph/.gitignore")).unwrap();
    assert!(ignored.contains("plan-draft/"), "{ignored}");
    // The model was given the user's words, where to draft, and the rules
    // /ralph-setup follows too.
    let asked: String = env.api.turns().iter().map(|t| t.user_text()).collect();
    for part in [
        "The user wants this built: a CLI that greets",
        "`.ralph/plan-draft/spec.md`",
        "The tracker is set up here (br)",
        "### Tracker tasks",
        "br dep add <later-id> <earlier-id>",
    ] {
        assert!(asked.contains(part), "{part}: {asked}");
    }
    // The dependency the planner made is in the tracker.
    let t2 = issues(&env)
        .into_iter()
        .find(|(_, t)| t == "Review phase 1")
        .unwrap()
        .0;
    let shown = env.br(&["show", &t2, "--json"]);
    assert!(shown.contains("\"dependencies\""), "{shown}");
}

#[test]
fn codex_plans_from_a_sentence_too() {
    let env = bare_project();
    env.api
        .session([Reply::bash(PLAN), Reply::text("Planned: two steps.")]);
    let out = plan(&env, "a CLI that greets")
        .args(["--agent", "codex", "--codex"])
        .arg(codex_bin())
        .args(["--model", "gpt-5.4"])
        .stdout_with(0);
    assert!(
        out.contains("── ralph: planning session: codex (gpt-5.4) ──")
            && out.contains("the planning session (codex, ok) cost $"),
        "{out}"
    );
    assert_planned(&env, &out);
}

#[test]
fn a_plan_that_fails_the_check_is_not_kept_and_leaves_nothing_behind() {
    let env = bare_project();
    // The user's tracker, with a task of their own, and init's templates.
    env.br(&["init"]);
    env.br(&["create", "Mine", "--type", "task", "--silent"]);
    env.ralph().arg("init").assert().success();
    env.commit_all("set up");
    let spec_before = fs::read(env.project.join(".ralph/spec.md")).unwrap();
    let prompt_before = fs::read(env.project.join(".ralph/prompt.md")).unwrap();
    // A step with no task, and ralph's prompt overwritten outside the draft.
    env.api.session([
        Reply::bash(
            "br create 'Print hello' --type task --silent && printf '# P\\n\\n- [ ] **1** Print hello\\n' > .ralph/plan-draft/spec.md && printf '| t | w |\\n' > .ralph/plan-draft/readme.md && echo hijacked > .ralph/prompt.md",
        ),
        Reply::text("Done."),
    ]);
    let out = plan(&env, "a CLI that greets").stdout_with(1);
    assert!(
        out.contains("the plan was not kept: your files are as they were")
            && out.contains("  - line 3: 1 Print hello: the step names no tracker task")
            && out.contains("deleted the 1 task it made from the tracker: ")
            && out.contains(&format!(
                "the planning session changed {}, which it may not: put back as it was",
                env.project.join(".ralph/prompt.md").display()
            ))
            && out.contains("what it drafted is in .ralph/plan-draft, to read")
            && out.contains("the planning session (claude, ok) cost $"),
        "{out}"
    );
    assert_eq!(
        fs::read(env.project.join(".ralph/spec.md")).unwrap(),
        spec_before
    );
    assert_eq!(
        fs::read(env.project.join(".ralph/prompt.md")).unwrap(),
        prompt_before
    );
    let titles: Vec<String> = issues(&env).into_iter().map(|(_, t)| t).collect();
    assert_eq!(titles, ["Mine"], "the plan's task is gone, yours is kept");
    assert!(env.project.join(".ralph/plan-draft/spec.md").is_file());
    // --json says the same.
    env.api.session([Reply::text("I wrote nothing.")]);
    let v: Value = plan(&env, "a CLI that greets").arg("--json").json_with(1);
    assert_eq!(
        (&v["kept"], &v["session"], &v["problems"]),
        (
            &Value::Bool(false),
            &Value::from("ok"),
            &serde_json::json!(["no spec was written", "no readme was written"])
        ),
        "{v}"
    );
}

#[test]
fn a_session_past_its_timeout_gives_no_plan_and_the_tracker_ralph_made_goes() {
    let env = bare_project();
    // The whole plan made and drafted, then the session hangs.
    env.api.session([
        Reply::bash(PLAN),
        Reply::Stall(std::time::Duration::from_secs(60)),
        Reply::text("late"),
    ]);
    let out = plan(&env, "a CLI that greets")
        .args(["--timeout", "8s"])
        .stdout_with(1);
    assert!(
        out.contains("  - the planning session did not end well (timeout)")
            && out.contains(&format!(
                "removed {}, which ralph set up for this plan",
                env.project.join(".beads").display()
            ))
            && out.contains("deleted the 3 tasks it made from the tracker: "),
        "{out}"
    );
    assert!(!env.project.join(".beads").exists());
    assert!(!env.project.join(".ralph/spec.md").exists());
    assert!(env.project.join(".ralph/plan-draft/spec.md").is_file());
}

#[test]
fn a_spec_of_your_own_is_not_replaced_without_force_and_no_session_runs() {
    let env = bare_project();
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Mine\n\n- [ ] **1** My step\n",
    )
    .unwrap();
    let err = plan(&env, "a CLI that greets").stderr_with(1);
    assert_eq!(
        err,
        format!(
            "ralph plan: nothing planned: {} is your own, not ralph init's template (--force replaces it)\n",
            env.project.join(".ralph/spec.md").display()
        )
    );
    assert!(env.api.requests().is_empty(), "no session was started");
    assert!(!env.project.join(".beads").exists(), "no tracker made");
    // With --json the refusal is JSON too (and said on stderr once).
    let out = plan(&env, "a CLI that greets")
        .arg("--json")
        .assert()
        .code(1)
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kept"], false, "{v}");
    assert!(
        v["refused"]
            .as_str()
            .unwrap()
            .starts_with("nothing planned: "),
        "{v}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr)
            .matches("nothing planned")
            .count(),
        1
    );
    // With --force the session runs and its plan replaces the spec.
    env.api
        .session([Reply::bash(PLAN), Reply::text("Planned.")]);
    let out = plan(&env, "a CLI that greets")
        .arg("--force")
        .stdout_with(0);
    assert_planned(&env, &out);
}

/// A clone's config runs nothing until approved: no planning session
/// either, as no loop.
#[test]
fn a_clones_config_refuses_the_plan_until_approved() {
    let env = bare_project();
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    fs::write(
        env.project.join(".ralph/config.toml"),
        "[gate]\ncommands = [\"touch pwned\"]\n",
    )
    .unwrap();
    let err = plan(&env, "a CLI that greets").stderr_with(2);
    assert!(
        err.starts_with(&format!(
            "ralph plan: what {} asks to run or allow has not been approved:",
            env.project.display()
        )) && err.contains("`ralph trust`"),
        "{err}"
    );
    assert!(env.api.requests().is_empty(), "no session was started");
    assert!(!env.project.join(".beads").exists(), "no tracker made");
    env.approve_config();
    env.api
        .session([Reply::bash(PLAN), Reply::text("Planned.")]);
    let out = plan(&env, "a CLI that greets").stdout_with(0);
    assert_planned(&env, &out);
    assert!(!env.project.join("pwned").exists());
}

/// Ctrl+C ends the session cleanly and keeps nothing, whatever it drafted
/// and made by then (exit 130).
#[test]
fn an_interrupted_plan_keeps_nothing() {
    let env = bare_project();
    env.api.session([
        Reply::bash(PLAN),
        Reply::Stall(std::time::Duration::from_secs(120)),
        Reply::text("late"),
    ]);
    let live = Live::start(plan(&env, "a CLI that greets"));
    let drafted = env.project.join(".ralph/plan-draft/readme.md");
    assert!(
        eventually(std::time::Duration::from_secs(60), || drafted.is_file()),
        "{}{}",
        live.stdout(),
        live.stderr()
    );
    live.signal(nix::sys::signal::Signal::SIGINT);
    let (code, out, err) = live.finish(std::time::Duration::from_secs(60));
    assert_eq!(code, Some(130), "{out}{err}");
    assert!(
        out.contains("  - the planning session did not end well (interrupted)")
            && out.contains("deleted the 3 tasks it made from the tracker: "),
        "{out}"
    );
    assert!(!env.project.join(".beads").exists());
    assert!(!env.project.join(".ralph/spec.md").exists());
}

/// An agent that cannot even start leaves no tracker behind (the one ralph
/// set up for the plan) and says why.
#[test]
fn a_planner_that_cannot_start_leaves_nothing_behind() {
    let env = bare_project();
    let broken = env.tmp.path().join("claude");
    fs::write(&broken, "#!/nonexistent/interpreter\n").unwrap();
    fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let err = env
        .ralph()
        .env("PATH", env.path_with_br())
        .args(["plan", "a CLI that greets", "--claude"])
        .arg(&broken)
        .stderr_with(1);
    assert!(
        err.contains(&format!(
            "removed {}, which ralph set up for this plan",
            env.project.join(".beads").display()
        )) && err.contains(&format!("cannot start {}", broken.display())),
        "{err}"
    );
    assert!(!env.project.join(".beads").exists());
    assert!(!env.project.join(".ralph/spec.md").exists());
}

#[test]
fn plan_help_says_what_it_writes() {
    let env = TestEnv::new();
    let help = env.ralph().args(["plan", "--help"]).stdout_with(0);
    for part in [
        ".ralph/spec.md",
        ".ralph/readme.md",
        "tracker",
        "--force",
        "--agent",
        "--timeout",
        "[default: 30m]",
        "130  interrupted",
    ] {
        assert!(help.contains(part), "{part}: {help}");
    }
}

/// A project planned by `ralph plan` ("a CLI that greets": an epic and
/// its tasks in br), and the id of a task or the epic by its title.
fn a_greeting_plan() -> (TestEnv, impl Fn(&str) -> String) {
    let env = bare_project();
    env.api
        .session([Reply::bash(PLAN), Reply::text("Planned.")]);
    plan(&env, "a CLI that greets").stdout_with(0);
    let made = issues(&env);
    let id = move |title: &str| made.iter().find(|(_, t)| t == title).unwrap().0.clone();
    (env, id)
}

/// Every step of a plan done and its task closed, the epic `ralph plan`
/// made is still open (no session closes it): the check says so, and how.
#[test]
fn a_done_plans_open_epic_is_named_with_how_to_close_it() {
    let (env, id) = a_greeting_plan();
    let epic = id("Greeting CLI");
    let spec_path = env.project.join(".ralph/spec.md");
    let verify = || {
        env.ralph()
            .env("PATH", env.path_with_br())
            .arg("verify-sync")
            .stdout_with(0)
    };
    // Work under way: nothing said of the epic.
    assert!(!verify().contains("note: epic"));
    env.br(&["close", &id("Print hello"), &id("Review phase 1")]);
    let spec = fs::read_to_string(&spec_path)
        .unwrap()
        .replace("- [ ]", "- [x]");
    fs::write(&spec_path, spec).unwrap();
    let out = verify();
    assert!(
        out.contains(&format!(
            "note: epic {epic} is still open, though every task of it is closed: `br close {epic}` closes it\n"
        )),
        "{out}"
    );
    env.br(&["close", &epic]);
    assert!(!verify().contains("note: epic"));
}

/// A run that completes the plan closes the epic `ralph plan` made, every
/// task of it closed, and commits the tracker so: a fresh clone's
/// `verify-sync` agrees.
#[test]
fn a_run_that_completes_a_plan_closes_its_epic_and_commits_it() {
    let (env, id) = a_greeting_plan();
    let epic = id("Greeting CLI");
    env.br(&["close", &id("Print hello"), &id("Review phase 1")]);
    let spec_path = env.project.join(".ralph/spec.md");
    let spec = fs::read_to_string(&spec_path)
        .unwrap()
        .replace("- [ ]", "- [x]");
    fs::write(&spec_path, spec).unwrap();
    env.commit_all("the work, done");
    let out = ralph_loop(&env)
        .env("PATH", env.path_with_br())
        .args(["--max-iterations", "2"])
        .stdout_with(0);
    assert!(
        out.contains(&format!(
            "ralph: closed epic {epic}: every task of it is done\n"
        )),
        "{out}"
    );
    let closed: Value = serde_json::from_str(&env.br(&["show", &epic, "--json"])).unwrap();
    let status = closed["status"].as_str().or(closed[0]["status"].as_str());
    assert_eq!(status, Some("closed"), "{closed}");
    assert_eq!(env.git(&["status", "--porcelain", ".beads"]), "", "{out}");
}
