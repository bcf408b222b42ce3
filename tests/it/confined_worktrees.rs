//! `--confined` with an agent ralph runs in its own bubblewrap (pi) in a
//! linked worktree (`--worktree`, every `--parallel` worker), where `.git`
//! is a file and the repository's git folder is shared with the main
//! checkout and the other worktrees: the session commits, and cannot write
//! the shared setup, another checkout's state, or the main checkout.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::*;

/// `ralph loop --agent pi` with the pinned client and the scripted model.
fn pi_loop(env: &TestEnv) -> Ralph {
    env.ralph()
        .args(["loop", "--agent", "pi", "--pi"])
        .arg(pi_bin())
        .args(["--model", SCRIPTED_MODEL, "--confined"])
}

/// The user's own other worktree, beside the project.
fn users_worktree(env: &TestEnv) -> PathBuf {
    let other = env.tmp.path().join("other-wt");
    env.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "other",
        other.to_str().unwrap(),
    ]);
    other
}

/// Shell that tries to append to each of `paths` and to rename each of
/// `folders`, saying W''ROTE or M''OVED (so that the command's own text,
/// in the stream, is no match) where it could.
fn attempts(paths: &[String], folders: &[String]) -> String {
    let mut s: String = paths
        .iter()
        .map(|p| format!("(echo escaped >> {p}) 2>/dev/null && echo W''ROTE {p}; "))
        .collect();
    s.extend(
        folders
            .iter()
            .map(|d| format!("mv {d} {d}.x 2>/dev/null && echo M''OVED {d}; ")),
    );
    s
}

fn bytes(paths: &[PathBuf]) -> Vec<Option<Vec<u8>>> {
    paths.iter().map(|p| fs::read(p).ok()).collect()
}

fn stream_of(record: &serde_json::Value) -> String {
    fs::read_to_string(record["stream_file"].as_str().unwrap()).unwrap_or_default()
}

#[test]
fn a_confined_pi_loop_in_a_worktree_commits_and_writes_no_other_checkout_nor_the_git_setup() {
    sandbox_tools();
    let env = one_step_project();
    let other = users_worktree(&env);
    let common = env.project.join(".git");
    fs::write(common.join("info/attributes"), "*.bin binary\n").unwrap();
    // The git setup, every other checkout's state, and pointers that
    // would lead the main checkout's git elsewhere.
    let paths: Vec<String> = [
        "config",
        "hooks/pre-commit",
        "info/attributes",
        "info/new",
        "HEAD",
        "index",
        "MERGE_HEAD",
        "commondir",
        "config.worktree",
        "worktrees/other-wt/commondir",
        "worktrees/other-wt/config.worktree",
        "worktrees/other-wt/gitdir",
        "worktrees/other-wt/HEAD",
        "worktrees/other-wt/index",
    ]
    .iter()
    .map(|f| format!("$c/{f}"))
    .chain(["$me/commondir", "$me/gitdir", ".git"].map(String::from))
    .collect();
    let folders: Vec<String> = [
        "$c/info",
        "$c/hooks",
        "$c/worktrees",
        "$c/objects/info",
        "$c/worktrees/other-wt",
        "$me",
        ".git",
    ]
    .map(String::from)
    .to_vec();
    // Beside the worktree (under the test's /tmp, which the sandbox
    // empties: what it writes there is its own; the host's is checked).
    let beside = [
        env.project.join("README.md"),
        env.project.join("new.txt"),
        other.join(".ralph/spec.md"),
    ];
    let watched: Vec<PathBuf> = [
        "HEAD",
        "index",
        "worktrees/other-wt/HEAD",
        "worktrees/other-wt/index",
    ]
    .iter()
    .map(|f| common.join(f))
    .chain(beside.iter().cloned())
    .collect();
    let beside: String = beside
        .iter()
        .map(|p| format!("echo escaped >> {} 2>/dev/null; ", p.display()))
        .collect();
    // Its own folder's worktree config, which does not exist: a sandbox
    // binds only what exists, so the session makes it, and ralph removes
    // it after the session, and says so.
    let planted = "echo '[core]' > $me/config.worktree; ";
    let before = bytes(&watched);
    env.api.session([
        Reply::bash(format!(
            "c=$(git rev-parse --path-format=absolute --git-common-dir); me=$(git rev-parse --absolute-git-dir); \
             {}{beside}{planted}echo in > inside.txt && git add inside.txt && git branch kept && {CHECK_THE_BOX} && ralph complete -m done",
            attempts(&paths, &folders)
        )),
        Reply::text("Step done."),
    ]);
    let out = pi_loop(&env)
        .args(["--worktree", "x", "--max-iterations", "2"])
        .stdout_with(0);
    assert!(out.contains("complete: "), "{out}");
    let wt = wt_dir(&env.project, "x");
    let recs = records_in(&wt);
    let session = stream_of(&recs[0]);
    assert!(session.contains("escaped"), "the attempts ran: {session}");
    assert!(
        !session.contains("WROTE") && !session.contains("MOVED"),
        "{session}"
    );
    let said = out
        .lines()
        .find(|l| l.contains("changed the repository's git setup"))
        .unwrap_or_default();
    let planted = common.join("worktrees/x/config.worktree");
    assert!(
        said.ends_with(&format!(": removed {}", planted.display())) && !planted.exists(),
        "the sandbox kept the rest: {out}"
    );
    assert_eq!(bytes(&watched), before, "{watched:?}");
    assert!(recs[0]["command"].to_string().starts_with("[\"bwrap\""));
    assert_ne!(recs[0]["head_before"], recs[0]["head_after"], "no commit");
    let files = env.git_in(&wt, &["ls-tree", "--name-only", "HEAD"]);
    assert!(files.lines().any(|f| f == "inside.txt"), "{files}");
    // The user's other worktree and main checkout work as before.
    for dir in [&other, &env.project] {
        let st = env.git_in(dir, &["status", "--porcelain"]);
        assert_eq!(st.trim(), "", "{}: {st}", dir.display());
    }
}

/// Every worker of a parallel run is a linked worktree: confined pi
/// workers each do their step, side by side, and none can point another
/// worktree's git at a folder of its making.
#[test]
fn a_parallel_run_of_confined_pi_workers_completes() {
    sandbox_tools();
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n",
    )
    .unwrap();
    env.commit_all("the spec");
    let other = users_worktree(&env);
    let pointer = env.project.join(".git/worktrees/other-wt/commondir");
    let was = fs::read(&pointer).unwrap();
    let work = "sleep 2; c=$(git rev-parse --path-format=absolute --git-common-dir); me=$(git rev-parse --absolute-git-dir); \
                for d in $c/worktrees/*; do [ $d = $me ] || { (echo $PWD/evil.git > $d/commondir) 2>/dev/null && echo W''ROTE $d; }; done; \
                echo \"$RALPH_STEP\" > \"step-$RALPH_STEP.txt\" && sed -i '0,/- \\[ \\]/s//- [x]/' .ralph/spec.md && \
                git add -A && git commit -qm \"step $RALPH_STEP\"";
    for _ in 0..2 {
        env.api
            .session([Reply::bash(work), Reply::text("Step done.")]);
    }
    let out = pi_loop(&env)
        .args(["--parallel", "2", "--max-iterations", "4"])
        .stdout_with(0);
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    let recs = records(&env);
    assert_eq!(recs.len(), 2, "{recs:?}");
    for r in &recs {
        assert!(r["command"].to_string().starts_with("[\"bwrap\""), "{r}");
        let session = stream_of(r);
        assert!(
            session.contains("commondir") && !session.contains("WROTE"),
            "{session}"
        );
    }
    let files = env.git(&["ls-tree", "--name-only", "HEAD"]);
    for f in ["step-1.txt", "step-2.txt"] {
        assert!(files.lines().any(|l| l == f), "{f} merged: {files}");
    }
    assert_eq!(fs::read(&pointer).unwrap(), was);
    let st = env.git_in(&other, &["status", "--porcelain"]);
    assert_eq!(st.trim(), "", "{st}");
    assert!(!Path::new(&format!("{}.x", other.display())).exists());
}

/// `ralph loop --agent codex` with the pinned client, confined.
fn codex_loop(env: &TestEnv) -> Ralph {
    env.ralph()
        .args(["loop", "--agent", "codex", "--codex"])
        .arg(codex_bin())
        .arg("--confined")
}

/// Codex's sandbox in a linked worktree, where `.git` is a file: the
/// session writes its file and commits, and writes neither its `.git`
/// file, nor the shared setup, nor its own folder's pointers.
#[test]
fn a_confined_codex_loop_in_a_worktree_commits_and_writes_no_git_setup() {
    let env = one_step_project();
    let common = env.project.join(".git");
    let watched = [common.join("config"), common.join("HEAD")];
    env.api.session([
        Reply::bash(format!(
            "c=$(git rev-parse --path-format=absolute --git-common-dir); me=$(git rev-parse --absolute-git-dir); \
             {}echo in > inside.txt && git add inside.txt && {CHECK_THE_BOX} && ralph complete -m done",
            attempts(
                &["$c/config", "$c/HEAD", "$me/commondir", ".git"].map(String::from),
                &[]
            )
        )),
        Reply::text("Step done."),
    ]);
    let before = bytes(&watched);
    let out = codex_loop(&env)
        .args(["--worktree", "x", "--max-iterations", "2"])
        .stdout_with(0);
    assert!(out.contains("complete: "), "{out}");
    let wt = wt_dir(&env.project, "x");
    let recs = records_in(&wt);
    let session = stream_of(&recs[0]);
    assert!(
        session.contains("Read-only file system") && !session.contains("WROTE"),
        "the attempts were refused: {session}"
    );
    assert_eq!(bytes(&watched), before, "{watched:?}");
    assert_ne!(
        recs[0]["head_before"], recs[0]["head_after"],
        "no commit: {out}"
    );
    let files = env.git_in(&wt, &["ls-tree", "--name-only", "HEAD"]);
    assert!(files.lines().any(|f| f == "inside.txt"), "{files}");
    // Its pointers, as `git worktree add` wrote them.
    assert_eq!(
        fs::read_to_string(wt.join(".git")).unwrap(),
        format!("gitdir: {}\n", common.join("worktrees/x").display())
    );
    assert_eq!(
        fs::read_to_string(common.join("worktrees/x/commondir")).unwrap(),
        "../..\n"
    );
}

/// A command Codex's sandbox refuses shows nowhere in its stream: a
/// session whose every command was refused did nothing it was asked to,
/// and is a failure, not a session that ended well.
#[test]
fn a_confined_codex_session_whose_every_command_was_refused_failed() {
    let env = one_step_project();
    let outside = env.home.join("outside.txt");
    env.api.session([
        Reply::bash(format!("echo x > {}", outside.display())),
        Reply::text("Step done."),
    ]);
    let out = codex_loop(&env)
        .args(["--worktree", "x", "--max-iterations", "1"])
        .assert()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(!outside.exists(), "{out}");
    assert!(
        out.contains(&format!(
            "session 1 failed (1 in a row): codex's sandbox refused every command of the session (1), so none ran: /bin/bash: line 1: {}: Read-only file system",
            outside.display()
        )),
        "{out}"
    );
    let recs = records_in(&wt_dir(&env.project, "x"));
    assert_eq!(recs[0]["outcome"], "failed", "{}", recs[0]);
}
