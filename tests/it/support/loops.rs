//! Helpers shared by the loop's tests: a project to loop in, stand-ins for
//! claude, and readers of what a run left behind.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Child;

use serde_json::Value;

use super::{Reply, TestEnv};

pub const SPEC: &str =
    "# Spec\n\n- [ ] **1** First step\n- [ ] **2** Second step\n- [ ] **3** Review\n";

/// A git project with a three-step spec, a prompt, and the hook installed.
pub fn project() -> TestEnv {
    let env = TestEnv::new();
    env.ralph().args(["install-hook"]).assert().success();
    env.git_init();
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    fs::write(env.project.join(".ralph/spec.md"), SPEC).unwrap();
    fs::write(
        env.project.join(".ralph/prompt.md"),
        "Read .ralph/spec.md and do the first open step.\n",
    )
    .unwrap();
    env.commit_all("start");
    env
}

/// A git project as `project()`, with a spec of one step.
pub fn one_step_project() -> TestEnv {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** The one step\n",
    )
    .unwrap();
    env.commit_all("one step");
    env
}

/// A spec of `n` steps, `**1** Step 1` and on.
pub fn spec_of(n: usize) -> String {
    let mut s = String::from("# Spec\n\n");
    for i in 1..=n {
        s.push_str(&format!("- [ ] **{i}** Step {i}\n"));
    }
    s
}

/// A project as `project()` whose spec has `n` steps, committed.
pub fn steps_project(n: usize) -> TestEnv {
    let env = project();
    fs::write(env.project.join(".ralph/spec.md"), spec_of(n)).unwrap();
    env.commit_all("the steps");
    env
}

/// A Bash command that waits until the test makes `go`, then does `then`:
/// a session held open for as long as the test needs.
pub fn once_made(go: &Path, then: &str) -> String {
    format!(
        "while [ ! -e {} ]; do sleep 0.2; done; {then}",
        go.display()
    )
}

/// The Bash command a scripted session runs to do one step: check the first
/// open box and commit.
pub const DO_STEP: &str = "sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && git commit -qam step";

/// A stand-in claude that does one step and reports success.
pub fn stepping_stand_in(env: &TestEnv, name: &str) -> PathBuf {
    stand_in(
        env,
        name,
        &format!("{DO_STEP} >/dev/null 2>&1\necho '{RESULT}'"),
    )
}

pub fn step_session(last: bool) -> Vec<Reply> {
    let cmd = if last {
        format!("{DO_STEP} && ralph complete -m 'all three steps'")
    } else {
        DO_STEP.to_string()
    };
    vec![Reply::bash(cmd), Reply::text("Step done.")]
}

/// The newest run's id (its folder's name).
pub fn run_id(env: &TestEnv) -> String {
    run_dir(env)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

pub fn run_dir(env: &TestEnv) -> std::path::PathBuf {
    run_dir_in(&env.project)
}

/// The newest run folder of the loop in `root` (a checkout or a worktree).
pub fn run_dir_in(root: &Path) -> std::path::PathBuf {
    let runs = root.join(".ralph/runs");
    let mut dirs: Vec<_> = fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs.pop().expect("a run folder")
}

pub fn records(env: &TestEnv) -> Vec<Value> {
    records_in(&env.project)
}

pub fn records_in(root: &Path) -> Vec<Value> {
    fs::read_to_string(run_dir_in(root).join("records.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The first request of the `n`th session (1 first): what it was told.
pub fn told(env: &TestEnv, n: usize) -> String {
    let mut firsts = Vec::new();
    for r in env.api.turns() {
        if !firsts.iter().any(|(id, _)| *id == r.session_id) {
            firsts.push((r.session_id.clone(), r.user_text()));
        }
    }
    firsts
        .get(n - 1)
        .map(|(_, t)| t.clone())
        .unwrap_or_default()
}

/// The journal of the newest run, each line as JSON.
pub fn events(env: &TestEnv) -> Vec<Value> {
    fs::read_to_string(run_dir(env).join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn summary(env: &TestEnv) -> Value {
    serde_json::from_str(&fs::read_to_string(run_dir(env).join("summary.json")).unwrap()).unwrap()
}

pub fn ralph_loop(env: &TestEnv) -> crate::support::Ralph {
    env.ralph()
        .args(["loop", "--claude"])
        .arg(crate::support::claude_bin())
}

pub fn spawn_loop(env: &TestEnv, extra: &[&str]) -> Child {
    ralph_loop(env).args(extra).spawn()
}

/// Live processes whose command line contains `arg` (like `pgrep -f`).
pub fn processes_with(arg: &str) -> Vec<u32> {
    let mut sys = sysinfo::System::new().unwrap();
    let kind = sysinfo::ProcessRefreshKind::nothing().with_cmd(sysinfo::UpdateKind::Always);
    sys.refresh_processes_specifics(sysinfo::ProcessesToUpdate::All, true, kind);
    sys.processes()
        .values()
        .filter(|p| {
            p.thread_kind().is_none() && !matches!(p.status(), sysinfo::ProcessStatus::Zombie)
        })
        .filter(|p| {
            p.cmd()
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
                .contains(arg)
        })
        .map(|p| p.pid().as_u32())
        .collect()
}

/// A stand-in for claude: a script that reads the prompt and prints a
/// stream-json result line (for what the real client cannot be made to do
/// on demand, like cost or a crash).
pub fn stand_in(env: &TestEnv, name: &str, body: &str) -> std::path::PathBuf {
    let path = env.tmp.path().join(name);
    fs::write(&path, format!("#!/bin/sh\ncat > /dev/null\n{body}\n")).unwrap();
    let mut p = fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    fs::set_permissions(&path, p).unwrap();
    path
}

pub const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"ok","total_cost_usd":0.75,"usage":{"input_tokens":10,"output_tokens":5}}"#;

/// A br workspace in the project with an epic and three tasks; returns
/// (epic, [task ids]).
pub fn workspace(env: &TestEnv) -> (String, Vec<String>) {
    env.br(&["init"]);
    let id = |json: String| -> String {
        let v: Value = serde_json::from_str(&json).unwrap();
        v["id"]
            .as_str()
            .or(v[0]["id"].as_str())
            .unwrap()
            .to_string()
    };
    let epic = id(env.br(&["create", "The epic", "--type", "epic", "--json"]));
    let tasks = (1..=3)
        .map(|n| {
            id(env.br(&[
                "create",
                &format!("Task {n}"),
                "--type",
                "task",
                "--parent",
                &epic,
                "--json",
            ]))
        })
        .collect();
    (epic, tasks)
}

/// A project with one open step and a gate that passes once `fixed.txt`
/// exists.
pub fn one_step_with_gate(gate: &str) -> TestEnv {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** The one step\n",
    )
    .unwrap();
    fs::write(
        env.project.join(".ralph/config.toml"),
        // The strict gate: what it checks is the work's to make pass.
        format!("[gate]\ncommands = [{gate:?}]\nbaseline = \"off\"\n"),
    )
    .unwrap();
    env.approve_config();
    env.commit_all("one step, gated");
    env
}

pub const CHECK_THE_BOX: &str =
    "sed -i 's/- \\[ \\]/- [x]/' .ralph/spec.md && git commit -qam step";

pub fn wt_dir(root: &Path, name: &str) -> PathBuf {
    root.parent()
        .unwrap()
        .join("project.ralph-worktrees")
        .join(name)
}
