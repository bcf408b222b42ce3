//! Probes of the newest ways plans come in (`ralph plan`, `ralph import`,
//! GitHub issues) against what is not trusted: the planning session (its
//! model), a cloned repository, an issue's text. Each test asserts that the
//! attack FAILED.

use std::fs;
use std::path::Path;

use crate::hostile_import::{issues_in, victim};
use crate::plan::bare_project;
use crate::support::*;

/// The scripted planner's whole plan (as in `plan.rs`): an epic and two
/// tasks, then the draft naming them.
const PLAN: &str = r#"E=$(br create "Greeting CLI" --type epic --silent) && T1=$(br create "Print hello" --type task --parent "$E" --silent) && T2=$(br create "Review phase 1" --type task --parent "$E" --silent) && printf '# Greeting CLI\n\nEpic: [%s]\n\n## Phase 1\n\n- [ ] **1.1** Print hello [%s]\n- [ ] **1.R** Review phase 1 [%s]\n' "$E" "$T1" "$T2" > .ralph/plan-draft/spec.md && printf '| topic | where | read it when |\n|---|---|---|\n| usage | README.md | before the first step |\n' > .ralph/plan-draft/readme.md"#;

fn plan(env: &TestEnv, what: &str) -> Ralph {
    env.ralph()
        .env("PATH", env.path_with_br())
        .args(["plan", what, "--claude"])
        .arg(claude_bin())
}

/// Every file under `dir` with its bytes, links as where they point.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = fs::symlink_metadata(&p).unwrap();
            let name = p.strip_prefix(dir).unwrap().display().to_string();
            if m.file_type().is_symlink() {
                let to = fs::read_link(&p).unwrap();
                out.push((name, to.display().to_string().into_bytes()));
            } else if m.is_dir() {
                todo.push(p);
            } else {
                out.push((name, fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

// ------------------------------------------------------------ ralph plan

/// The planning session points the project's tracker at another project's
/// (a link in place of `.beads`, or a `.beads/redirect`) and leaves no
/// draft: ralph's undo of "the tasks it made" must not delete that
/// project's tasks (`br delete --force --hard`), nor keep a plan there.
#[test]
fn a_planner_that_points_beads_elsewhere_gets_no_task_deleted_there() {
    let env = bare_project();
    env.br(&["init"]);
    env.commit_all("tracker");
    let v = victim(&env, "My own task");
    let link = format!(
        "mv .beads .beads-mine && ln -s {} .beads",
        v.join(".beads").display()
    );
    let redirect = format!(
        "printf '%s\\n' {} > .beads/redirect",
        v.join(".beads").display()
    );
    for (how, cmd) in [("a link", link), ("a redirect", redirect)] {
        env.api
            .session([Reply::bash(&cmd), Reply::text("Nothing to plan.")]);
        let out = plan(&env, "a CLI that greets").stdout_with(1);
        let there = issues_in(&env, &v);
        assert_eq!(
            there.len(),
            1,
            "{how}: the other project's task was deleted:\n{out}"
        );
        assert!(
            out.contains("the planning session pointed the tracker (.beads) at another project's"),
            "{how}: {out}"
        );
        assert!(!out.contains("deleted the"), "{how}: {out}");
        // Put the project's own tracker back for the next attempt.
        let _ = fs::remove_file(env.project.join(".beads"));
        let _ = fs::remove_file(env.project.join(".beads/redirect"));
        if env.project.join(".beads-mine").exists() {
            fs::rename(env.project.join(".beads-mine"), env.project.join(".beads")).unwrap();
        }
    }
}

/// The same, with a plan that passes the check against the other
/// project's tracker: it must not be kept (the loop would work, and close,
/// that project's tasks).
#[test]
fn a_plan_checked_against_another_projects_tracker_is_not_kept() {
    let env = bare_project();
    env.br(&["init"]);
    env.commit_all("tracker");
    let v = victim(&env, "My own task");
    let cmd = format!(
        "mv .beads .beads-mine && ln -s {} .beads && {PLAN}",
        v.join(".beads").display()
    );
    env.api
        .session([Reply::bash(&cmd), Reply::text("Planned.")]);
    let out = plan(&env, "a CLI that greets").stdout_with(1);
    assert!(
        !env.project.join(".ralph/spec.md").exists(),
        "a plan of another project's tasks was kept:\n{out}"
    );
    assert_eq!(issues_in(&env, &v).len(), 4, "{out}");
}

/// The planning session replaces `.ralph` with a link to a folder outside
/// the project (holding a copy of its draft, and files of the user's
/// there): ralph must neither put its guarded files back through the link
/// (deleting or overwriting what is there) nor write the plan through it.
#[test]
fn a_planner_that_links_ralph_outside_gets_nothing_written_there() {
    let env = bare_project();
    env.ralph().arg("init").assert().success();
    env.commit_all("init");
    let outside = env.home.join(".config/app");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("config.toml"), "the app's own settings\n").unwrap();
    fs::write(outside.join("learnings.md"), "notes of the user's\n").unwrap();
    fs::write(outside.join("spec.md"), "a spec of another project\n").unwrap();
    let cmd = format!(
        "{PLAN} && cp -r .ralph/plan-draft {o}/ && mv .ralph .ralph-moved && ln -s {o} .ralph",
        o = outside.display()
    );
    let before = {
        // What the session's copy of the draft adds is the session's own.
        let mut t = tree(&outside);
        t.retain(|(n, _)| !n.starts_with("plan-draft"));
        t
    };
    env.api
        .session([Reply::bash(&cmd), Reply::text("Planned.")]);
    let out = plan(&env, "a CLI that greets").stdout_with(1);
    let mut after = tree(&outside);
    after.retain(|(n, _)| !n.starts_with("plan-draft"));
    assert_eq!(
        after.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        before.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        "files made or removed outside the project:\n{out}"
    );
    assert_eq!(after, before, "files changed outside the project:\n{out}");
    assert!(
        out.contains(&format!(
            "{} is a symlink",
            env.project.join(".ralph").display()
        )),
        "{out}"
    );
}

/// The planning session moves its draft folder outside the project and
/// leaves a link in its place: ralph reads no draft through a link (a
/// link to your files would be written into `.ralph/`), the folder's no
/// more than its files'.
#[test]
fn a_draft_folder_linked_outside_is_not_read() {
    let env = bare_project();
    let outside = env.home.join("elsewhere");
    let cmd = format!(
        "{PLAN} && mv .ralph/plan-draft {o} && ln -s {o} .ralph/plan-draft",
        o = outside.display()
    );
    env.api
        .session([Reply::bash(&cmd), Reply::text("Planned.")]);
    let out = plan(&env, "a CLI that greets").stdout_with(1);
    assert!(
        !env.project.join(".ralph/spec.md").exists(),
        "a draft read through a link was kept:\n{out}"
    );
    assert!(out.contains("ralph reads no draft through it"), "{out}");
    assert!(outside.join("spec.md").is_file(), "{out}");
    assert!(
        fs::symlink_metadata(env.project.join(".ralph/plan-draft"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

// ---------------------------------------------------------- GitHub issues

/// Issues anyone can file, with titles that try to drive the terminal
/// (ESC, CSI, OSC 52 to the clipboard, BEL, the C1 CSI), to add or check a
/// step, to name another issue as their task, to pass as an option, to be
/// the epic line, to open an HTML comment. `ralph import github` and `ralph add --issue`
/// print none of it raw, and the spec reads as one open step per issue,
/// each its own issue's.
#[test]
fn hostile_issue_titles_stay_one_open_step_each_and_reach_no_terminal() {
    use crate::support::github::{GitHub, Origin};
    let env = bare_project();
    let gh = GitHub::start("octo", "hello");
    Origin::new(&env, "octo", "hello").link(&env, &env.project);
    let titles = [
        "Red \u{1b}[31mtext\u{1b}[0m and \u{9b}2J",
        "Copy \u{1b}]52;c;ZWNobyBwd25lZA==\u{7}this",
        "One\n- [x] **9** fake [#1]",
        "Names another [#1]",
        "--help",
        "Epic: [bd-1]",
        "<!-- swallow",
    ];
    for t in titles {
        gh.add_issue(t, "", &["ralph"]);
    }
    let extra = gh.add_issue("Later \u{1b}]0;title\u{7}", "", &[]);
    let ralph = || {
        env.ralph()
            .env("GITHUB_API_URL", &gh.url)
            .env("GH_TOKEN", "ghp_probe0123456789")
    };
    let no_escapes = |what: &str, text: &str| {
        assert!(
            !text.contains(['\u{1b}', '\u{9b}', '\u{7}']),
            "{what} printed a control character raw: {text:?}"
        );
    };
    let out = ralph().args(["import", "github", "--yes"]).assert();
    let o = out.get_output();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{stdout}{stderr}");
    no_escapes("import github", &format!("{stdout}{stderr}"));
    let out = ralph()
        .args(["add", "--issue", &extra.to_string()])
        .assert();
    let o = out.get_output();
    assert!(o.status.success(), "{o:?}");
    no_escapes(
        "add --issue",
        &format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    );
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    let steps: Vec<String> = spec
        .lines()
        .filter(|l| l.trim_start().starts_with("- ["))
        .map(String::from)
        .collect();
    assert_eq!(steps.len(), titles.len() + 1, "{spec}");
    for (i, line) in steps.iter().enumerate() {
        assert!(
            line.starts_with("- [ ] ") && line.ends_with(&format!(" [#{}]", i + 1)),
            "step {} is not issue #{}'s open step: {line:?}\n{spec}",
            i + 1,
            i + 1
        );
    }
    assert!(
        !spec.contains(['\u{1b}', '\u{9b}', '\u{7}']),
        "the spec holds control characters: {spec:?}"
    );
    assert!(
        !spec
            .lines()
            .any(|l| l.to_ascii_lowercase().starts_with("epic")),
        "a title became the spec's epic line: {spec}"
    );
}
