//! Probes of `ralph import` against a hostile repository (its files, its
//! `.beads`, its links). Each test asserts that the attack FAILED: a
//! failing test here is a finding.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::Value;

use crate::support::{TestEnv, br_bin};

const SECRET: &str = "SECRET-6f1e9 the user's private text";

fn env_with(br: bool) -> TestEnv {
    let env = TestEnv::new();
    env.git_init();
    if br {
        env.br(&["init"]);
    }
    fs::create_dir_all(env.project.join("plan")).unwrap();
    env
}

fn write(env: &TestEnv, rel: &str, text: &str) {
    let p = env.project.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// A file of the user's outside the project, holding `SECRET`.
fn secret_file(env: &TestEnv, name: &str) -> std::path::PathBuf {
    let p = env.home.join(name);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, format!("{SECRET}\n")).unwrap();
    p
}

/// None of these files of `.ralph/` holds the secret.
fn no_secret_in(env: &TestEnv, files: &[&str]) {
    for f in files {
        let text = fs::read_to_string(env.project.join(".ralph").join(f)).unwrap_or_default();
        assert!(
            !text.contains(SECRET),
            ".ralph/{f} holds the secret:\n{text}"
        );
    }
}

fn import(env: &TestEnv, args: &[&str]) -> std::process::Output {
    env.ralph()
        .env("PATH", env.path_with_br())
        .arg("import")
        .args(args)
        .assert()
        .get_output()
        .clone()
}

pub(crate) fn issues_in(env: &TestEnv, dir: &Path) -> Vec<Value> {
    let out = env
        .command(br_bin())
        .current_dir(dir)
        .args(["list", "--all", "--limit", "0", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["issues"].as_array().cloned().unwrap_or_default()
}

/// Another project of the user's, with br and one open task of its own.
pub(crate) fn victim(env: &TestEnv, title: &str) -> std::path::PathBuf {
    let v = env.home.join("work/victim");
    fs::create_dir_all(&v).unwrap();
    env.git_in(&v, &["init", "-q", "-b", "main"]);
    let br = |args: &[&str]| {
        let out = env
            .command(br_bin())
            .current_dir(&v)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    br(&["init"]);
    br(&["create", "--silent", "--", title]);
    v
}

const DONE_PRD: &str = r#"{"userStories": [
  {"id": "US-001", "title": "Login", "passes": true},
  {"id": "US-002", "title": "Planted task"}
]}"#;

// ---------------------------------------------------------------- findings?

/// A cloned `.beads` that is a link to another project's tracker: the
/// import must not make tasks there, nor close the user's task there.
#[test]
fn a_beads_link_to_another_project_gets_no_tasks() {
    let env = env_with(false);
    let v = victim(&env, "US-001 Login");
    symlink(v.join(".beads"), env.project.join(".beads")).unwrap();
    write(&env, "plan/prd.json", DONE_PRD);
    import(&env, &["plan/prd.json", "--yes"]);
    let there = issues_in(&env, &v);
    assert_eq!(there.len(), 1, "tasks made in another project: {there:?}");
    assert_eq!(
        there[0]["status"], "open",
        "the user's task closed: {there:?}"
    );
}

/// A cloned `.beads/redirect` naming another project's tracker: the same.
#[test]
fn a_beads_redirect_to_another_project_gets_no_tasks() {
    let env = env_with(false);
    let v = victim(&env, "US-001 Login");
    fs::create_dir_all(env.project.join(".beads")).unwrap();
    fs::write(
        env.project.join(".beads/redirect"),
        format!("{}\n", v.join(".beads").display()),
    )
    .unwrap();
    write(&env, "plan/prd.json", DONE_PRD);
    import(&env, &["plan/prd.json", "--yes"]);
    let there = issues_in(&env, &v);
    assert_eq!(there.len(), 1, "tasks made in another project: {there:?}");
    assert_eq!(
        there[0]["status"], "open",
        "the user's task closed: {there:?}"
    );
}

/// A plan's done story titled like a task of the user's own (open, made
/// by hand, not by an import): the import says "N tasks to make" and must
/// not silently close that task.
#[test]
fn a_done_story_does_not_silently_close_the_users_own_task() {
    let env = env_with(true);
    let mine = env.br(&["create", "--silent", "--", "US-001 Login"]);
    let mine = mine.trim();
    write(&env, "plan/prd.json", DONE_PRD);
    let out = import(&env, &["plan/prd.json", "--yes"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let there = issues_in(&env, &env.project);
    let task = there.iter().find(|i| i["id"] == mine).unwrap();
    let said_before_question = stdout
        .split("wrote ")
        .next()
        .unwrap_or_default()
        .contains(mine);
    assert!(
        task["status"] == "open" || said_before_question,
        "the user's own task {mine} closed, unannounced:\n{stdout}\n{there:?}"
    );
}

/// progress.txt linked to a file outside the project: its text must not
/// be copied into .ralph/ (which the import says to commit).
#[test]
fn a_progress_link_outside_is_not_copied_in() {
    let env = env_with(false);
    let secret = secret_file(&env, ".config/token.txt");
    write(&env, "plan/prd.json", DONE_PRD);
    symlink(&secret, env.project.join("plan/progress.txt")).unwrap();
    import(&env, &["plan/prd.json", "--yes"]);
    no_secret_in(&env, &["progress.md", "learnings.md"]);
}

/// AGENT.md beside a fix plan, linked to a file outside the project.
#[test]
fn an_agent_md_link_outside_is_not_copied_in() {
    let env = env_with(false);
    let secret = secret_file(&env, ".ssh/notes");
    write(&env, "plan/fix_plan.md", "## High\n- [ ] one\n");
    symlink(&secret, env.project.join("plan/AGENT.md")).unwrap();
    symlink(&secret, env.project.join("plan/PROMPT.md")).unwrap();
    import(&env, &["plan/fix_plan.md", "--yes"]);
    no_secret_in(&env, &["rules.md", "readme.md"]);
}

/// A cloned `.ralph/.gitignore` linked to a file outside: the import must
/// neither write through it nor copy its target's text into the project.
#[test]
fn a_gitignore_link_does_not_copy_its_target_in() {
    let env = env_with(false);
    let secret = secret_file(&env, ".aws/credentials");
    write(&env, "plan/prd.json", DONE_PRD);
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    symlink(&secret, env.project.join(".ralph/.gitignore")).unwrap();
    import(&env, &["plan/prd.json", "--yes"]);
    assert_eq!(
        fs::read_to_string(&secret).unwrap(),
        format!("{SECRET}\n"),
        "written through"
    );
    let gi = fs::read_to_string(env.project.join(".ralph/.gitignore")).unwrap_or_default();
    assert!(
        !gi.contains(SECRET),
        ".ralph/.gitignore holds the secret:\n{gi}"
    );
}

/// specs/ holding a link to a folder outside the project: its files'
/// names must not become the readme's reference documents.
#[test]
fn a_specs_link_outside_is_not_listed() {
    let env = env_with(false);
    let outside = env.home.join("private");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("salary-review-2026.md"), "x").unwrap();
    write(&env, "plan/fix_plan.md", "## High\n- [ ] one\n");
    write(&env, "plan/specs/real.md", "a real document");
    symlink(&outside, env.project.join("plan/specs/docs")).unwrap();
    symlink(
        outside.join("salary-review-2026.md"),
        env.project.join("plan/specs/s.md"),
    )
    .unwrap();
    import(&env, &["plan/fix_plan.md", "--yes"]);
    let readme = fs::read_to_string(env.project.join(".ralph/readme.md")).unwrap();
    assert!(readme.contains("real.md"), "{readme}");
    assert!(
        !readme.contains("salary-review") && !readme.contains("| s.md |"),
        "outside files listed:\n{readme}"
    );
}

/// A `specs` folder that is itself a link to a folder outside the clone,
/// or one reached through a linked folder above it: its files must not
/// become the readme's reference documents, and the import says why.
#[test]
fn a_specs_folder_that_leads_outside_is_not_listed() {
    for through_parent in [false, true] {
        let env = env_with(false);
        let outside = env.home.join("private");
        fs::create_dir_all(outside.join("specs")).unwrap();
        fs::write(outside.join("salary-review-2026.md"), "x").unwrap();
        fs::write(outside.join("specs/salary-review-2027.md"), "x").unwrap();
        write(&env, "plan/fix_plan.md", "## High\n- [ ] one\n");
        if through_parent {
            // plan/docs/specs is no link, but plan/docs is: to a folder
            // outside, with a plan of its own.
            fs::write(outside.join("fix_plan.md"), "## High\n- [ ] one\n").unwrap();
            symlink(&outside, env.project.join("plan/docs")).unwrap();
        } else {
            symlink(&outside, env.project.join("plan/specs")).unwrap();
        }
        let plan = if through_parent {
            "plan/docs/fix_plan.md"
        } else {
            "plan/fix_plan.md"
        };
        let out = import(&env, &[plan, "--yes"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let readme = fs::read_to_string(env.project.join(".ralph/readme.md")).unwrap_or_default();
        assert!(
            !readme.contains("salary-review"),
            "outside files listed ({through_parent}):\n{readme}"
        );
        let said = if through_parent {
            "plan/docs/specs lies outside the project"
        } else {
            "plan/specs is a link"
        };
        assert!(
            stdout.contains(said) && stdout.contains("not listed as reference documents"),
            "{stdout}"
        );
    }
}

/// A description br can never be given (a NUL) must be refused before any
/// task is made, not after the first ones.
#[test]
fn a_nul_in_a_description_makes_no_tasks() {
    let env = env_with(true);
    write(
        &env,
        "plan/prd.json",
        r#"{"userStories": [
          {"id": "US-001", "title": "First", "description": "fine"},
          {"id": "US-002", "title": "Second", "description": "bad\u0000byte"}
        ]}"#,
    );
    let out = import(&env, &["plan/prd.json", "--yes"]);
    let there = issues_in(&env, &env.project);
    assert!(
        out.status.success() || there.is_empty(),
        "refused half-way, tasks left: {there:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A description longer than one argument may be (128 KiB): the same.
#[test]
fn a_huge_description_makes_no_tasks_half_way() {
    let env = env_with(true);
    let big = "x".repeat(200 * 1024);
    let prd = serde_json::json!({"userStories": [
        {"id": "US-001", "title": "First"},
        {"id": "US-002", "title": "Second", "description": big}
    ]});
    write(&env, "plan/prd.json", &prd.to_string());
    let out = import(&env, &["plan/prd.json", "--yes"]);
    let there = issues_in(&env, &env.project);
    assert!(
        out.status.success() || there.is_empty(),
        "refused half-way, tasks left: {there:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A cloned `.ralph/.gitignore` that is a folder: refused with nothing
/// written and no task made, or imported whole; never half.
#[test]
fn a_gitignore_folder_leaves_nothing_half_written() {
    let env = env_with(true);
    write(&env, "plan/prd.json", DONE_PRD);
    write(
        &env,
        "plan/progress.txt",
        "## Codebase Patterns\n- p\n\n## Log\n- l\n",
    );
    fs::create_dir_all(env.project.join(".ralph/.gitignore")).unwrap();
    let out = import(&env, &["plan/prd.json", "--yes"]);
    if !out.status.success() {
        let there = issues_in(&env, &env.project);
        let written: Vec<_> = fs::read_dir(env.project.join(".ralph"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".gitignore")
            .collect();
        assert!(
            there.is_empty() && written.is_empty(),
            "half-written: tasks {there:?}, files {written:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A cloned `.ralph` that is a dangling link: refused before any task.
#[test]
fn a_dangling_ralph_link_makes_no_tasks() {
    let env = env_with(true);
    write(&env, "plan/prd.json", DONE_PRD);
    let target = env.home.join("not-yet");
    symlink(&target, env.project.join(".ralph")).unwrap();
    let out = import(&env, &["plan/prd.json", "--yes"]);
    assert!(!target.exists(), "written through the link");
    let there = issues_in(&env, &env.project);
    assert!(
        out.status.success() || there.is_empty(),
        "refused after making tasks: {there:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ------------------------------------------------------------ what held

/// A cloned `.ralph` linked to a folder elsewhere is never written into.
#[test]
fn a_ralph_link_is_not_written_through() {
    let env = env_with(false);
    write(&env, "plan/prd.json", DONE_PRD);
    let elsewhere = env.home.join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    symlink(&elsewhere, env.project.join(".ralph")).unwrap();
    let out = import(&env, &["plan/prd.json", "--yes", "--force"]);
    assert!(!out.status.success());
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// Each of ralph's files linked to a file outside: replaced (with --force),
/// never written through.
#[test]
fn ralph_file_links_are_replaced_not_written_through() {
    let env = env_with(false);
    write(&env, "plan/prd.json", DONE_PRD);
    write(
        &env,
        "plan/progress.txt",
        "## Codebase Patterns\n- p\n\n## Log\n- l\n",
    );
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    let names = [
        "spec.md",
        "progress.md",
        "learnings.md",
        "prompt.md",
        "readme.md",
        "rules.md",
    ];
    for n in names {
        let target = env.home.join(format!("outside-{n}"));
        fs::write(&target, "ORIGINAL\n").unwrap();
        symlink(&target, env.project.join(".ralph").join(n)).unwrap();
    }
    // A dangling link too: a template written where "nothing" is.
    fs::remove_file(env.project.join(".ralph/prompt.md")).unwrap();
    symlink(
        env.home.join("dangling-prompt"),
        env.project.join(".ralph/prompt.md"),
    )
    .unwrap();
    import(&env, &["plan/prd.json", "--yes", "--force"]);
    for n in names {
        let target = env.home.join(format!("outside-{n}"));
        if n != "prompt.md" {
            assert_eq!(fs::read_to_string(&target).unwrap(), "ORIGINAL\n", "{n}");
        }
    }
    assert!(!env.home.join("dangling-prompt").exists());
}

/// FIFOs where the plan's neighbours are: refused or skipped, never a hang
/// (the harness times a run out after 120 s).
#[test]
fn fifos_do_not_hang_the_import() {
    let mode = nix::sys::stat::Mode::from_bits_truncate(0o600);
    let env = env_with(false);
    write(&env, "plan/fix_plan.md", "## High\n- [ ] one\n");
    fs::create_dir_all(env.project.join("plan/specs/sub")).unwrap();
    nix::unistd::mkfifo(&env.project.join("plan/specs/pipe.md"), mode).unwrap();
    nix::unistd::mkfifo(&env.project.join("plan/specs/sub/pipe.md"), mode).unwrap();
    import(&env, &["plan/fix_plan.md", "--yes"]); // must return
    for n in ["AGENT.md", "PROMPT.md"] {
        let env = env_with(false);
        write(&env, "plan/fix_plan.md", "## High\n- [ ] one\n");
        nix::unistd::mkfifo(&env.project.join("plan").join(n), mode).unwrap();
        let out = import(&env, &["plan/fix_plan.md", "--yes"]);
        assert!(!out.status.success(), "{n}");
    }
    let env = env_with(false);
    write(&env, "plan/prd.json", DONE_PRD);
    nix::unistd::mkfifo(&env.project.join("plan/progress.txt"), mode).unwrap();
    let out = import(&env, &["plan/prd.json", "--yes"]);
    assert!(!out.status.success());
    let env = env_with(false);
    nix::unistd::mkfifo(&env.project.join("plan/prd.json"), mode).unwrap();
    let out = import(&env, &["plan/prd.json", "--yes"]);
    assert!(!out.status.success());
    // The folder form skips a FIFO named like a plan.
    let out = import(&env, &["plan", "--yes"]);
    assert!(!out.status.success());
    // A spec that is a FIFO: refused, not waited on.
    let env = env_with(false);
    write(&env, "plan/prd.json", DONE_PRD);
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    nix::unistd::mkfifo(&env.project.join(".ralph/spec.md"), mode).unwrap();
    let out = import(&env, &["plan/prd.json", "--yes", "--force"]);
    assert!(!out.status.success());
}

/// A plan larger than ralph reads, or nested past serde's depth: refused,
/// no crash, nothing written.
#[test]
fn a_huge_or_deep_plan_is_refused() {
    let env = env_with(false);
    let mut big = String::from("{\"userStories\": [{\"title\": \"a\", \"notes\": \"");
    big.push_str(&"x".repeat(2 << 20));
    big.push_str("\"}]}");
    write(&env, "plan/prd.json", &big);
    let out = import(&env, &["plan/prd.json", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let deep = format!(
        "{{\"userStories\": [{{\"title\": \"a\", \"x\": {}{}}}]}}",
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    write(&env, "plan/prd.json", &deep);
    let out = import(&env, &["plan/prd.json", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // A fix plan nested deep (Markdown's own parser).
    let deep_md = format!("- [ ] one\n{}", "> ".repeat(50_000));
    write(&env, "plan/fix_plan.md", &deep_md);
    let out = import(&env, &["plan/fix_plan.md", "--yes"]);
    assert!(out.status.code().is_some(), "killed by a signal: {out:?}");
    assert!(!env.project.join(".ralph/spec.md").exists() || out.status.success());
}

/// Titles and descriptions that look like options reach br as text.
#[test]
fn option_like_text_reaches_br_as_text() {
    let env = env_with(true);
    let prd = serde_json::json!({"userStories": [
        {"title": "--help"},
        {"title": "-p0 --type=epic", "description": "--type=epic"},
        {"title": "x", "description": "--parent"},
        {"title": "y", "acceptanceCriteria": ["--silent"], "description": "-h"}
    ]});
    write(&env, "plan/prd.json", &prd.to_string());
    let out = import(&env, &["plan/prd.json", "--yes"]);
    assert!(out.status.success(), "{out:?}");
    let there = issues_in(&env, &env.project);
    let mut titles: Vec<String> = there
        .iter()
        .map(|i| i["title"].as_str().unwrap().to_string())
        .collect();
    titles.sort();
    assert_eq!(titles, ["--help", "-p0 --type=epic", "x", "y"]);
    assert!(there.iter().all(|i| i["issue_type"] == "task"), "{there:?}");
    assert!(there.iter().any(|i| i["description"] == "--type=epic"));
}

/// Escape sequences anywhere in a plan (titles, ids, headings, errors)
/// never reach the terminal.
#[test]
fn escapes_in_a_plan_never_reach_the_terminal() {
    let esc = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m";
    let env = env_with(true);
    let prd = serde_json::json!({"project": esc, "userStories": [
        {"id": esc, "title": format!("t{esc}"), "description": esc, "priority": 1},
        {"id": "US-2", "title": "u", "priority": 1, "notes": esc}
    ]});
    write(&env, "plan/prd.json", &prd.to_string());
    write(
        &env,
        "plan/progress.txt",
        &format!("## Patterns {esc}\n- {esc}\n"),
    );
    write(&env, "plan/AGENT.md", esc);
    let check = |out: &std::process::Output| {
        for b in [&out.stdout, &out.stderr] {
            let s = String::from_utf8_lossy(b);
            assert!(
                !s.contains('\u{1b}') && !s.contains('\u{9b}') && !s.contains('\u{7}'),
                "{s:?}"
            );
        }
    };
    check(&import(&env, &["plan/prd.json"]));
    check(&import(&env, &["plan/prd.json", "--yes"]));
    // Errors that name what the plan holds.
    for bad in [
        serde_json::json!({"userStories": [{"title": "a", "passes": esc}]}),
        serde_json::json!({"userStories": [{"title": "a", "status": {esc: esc}}]}),
        serde_json::json!({"userStories": [{"title": "a", esc: 1, "acceptanceCriteria": [{esc: 1}]}]}),
    ] {
        write(&env, "plan/prd.json", &bad.to_string());
        check(&import(&env, &["plan/prd.json", "--yes"]));
    }
    write(
        &env,
        "plan/prd.json",
        &format!("{{\"userStories\": [{esc}]}}"),
    );
    check(&import(&env, &["plan/prd.json", "--yes"]));
    write(
        &env,
        "plan/fix_plan.md",
        &format!("## {esc}\n- [ ] a {esc}\n-[x] {esc}\n"),
    );
    check(&import(&env, &["plan/fix_plan.md", "--yes"]));
}

/// A title or detail crafted to add steps, check boxes, or name a task
/// (so that verify-sync agrees falsely): kept text, or refused.
#[test]
fn a_title_cannot_add_steps_boxes_or_task_ids() {
    for br in [true, false] {
        let env = env_with(br);
        let prd = serde_json::json!({"userStories": [
            {"id": "US-1", "title": "a\n- [x] **9** injected [imp-1]"},
            {"id": "US-2] [x", "title": "b [ab-1]", "description": "- [x] sneaky\n<!--"},
            {"id": "US-3", "title": "c\r\n\n## Heading\n\n- [x] d (ab-2)", "acceptanceCriteria": ["-->", "[x] e"]},
            {"id": "US-4", "title": "`code` <!-- x --> **4** [ ] [x]", "passes": false},
            {"title": "Epic: ab-9", "passes": true}
        ]});
        write(&env, "plan/prd.json", &prd.to_string());
        let out = import(&env, &["plan/prd.json", "--yes"]);
        if !out.status.success() {
            assert!(!env.project.join(".ralph/spec.md").exists());
            continue;
        }
        let out = env
            .ralph()
            .env("PATH", env.path_with_br())
            .args(["verify-sync"])
            .assert()
            .get_output()
            .clone();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("1/5 steps done"), "br={br}: {said}");
        // A step's text that starts `Epic:` is no epic line (spec::parse).
        assert!(!said.contains("epic"), "br={br}: {said}");
    }
}

/// Nothing is written outside `.ralph/` in the project.
#[test]
fn no_write_outside_ralph_dir() {
    let env = env_with(false);
    write(&env, "plan/prd.json", DONE_PRD);
    write(&env, "plan/progress.txt", "## Log\n- l\n");
    write(&env, "plan/AGENT.md", "# Rules\n- r\n");
    write(&env, "plan/specs/a.md", "x");
    let before = list_tree(&env.project);
    import(&env, &["plan/prd.json", "--yes"]);
    let after = list_tree(&env.project);
    let new: Vec<_> = after
        .iter()
        .filter(|p| !before.contains(p) && !p.starts_with(".ralph/") && *p != ".ralph")
        .collect();
    assert!(new.is_empty(), "written outside .ralph/: {new:?}");
}

fn list_tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel.starts_with(".git") {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            }
            out.push(rel);
        }
    }
    out
}
