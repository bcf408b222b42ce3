//! Snapshot tests of what a user reads, checked whole: one set of rules
//! for what varies between runs, so every snapshot reads the same way.
//!
//! Each rule replaces a thing that differs from run to run (a temp path, a
//! time, a pid, a commit id, a duration, ralph's version) with a name in
//! braces (`{project}`, `{time}`, as `Ralph::prints` writes them), and
//! nothing else: the words a user reads stay in the snapshot.
//! Snapshots live in `tests/it/snapshots/<name>.snap`; a changed output
//! fails the test with a diff and leaves `<name>.snap.new` to review
//! (`cargo insta review`, or read it and rename it); with `CI` set nothing
//! is written.

use std::path::Path;
use std::process::Output;

use super::{TestEnv, claude_bin, ralph_bin};

/// Compare `text` with the snapshot `name`, what varies hidden by
/// [`settings`]; `about` (the command that printed it, say) heads the file.
pub fn check(env: &TestEnv, name: &str, about: &str, text: &str) {
    let mut s = settings(env);
    s.set_description(about);
    s.bind(|| insta::assert_snapshot!(name, text));
}

/// `ralph ARGS` run in the project, its whole output checked as snapshot
/// `name`.
pub fn check_ralph(env: &TestEnv, name: &str, args: &[&str]) {
    check_ralph_when(env, name, args, "");
}

/// As `check_ralph`, the snapshot's description saying `when` it runs.
pub fn check_ralph_when(env: &TestEnv, name: &str, args: &[&str], when: &str) {
    let out = env.ralph().args(args).assert();
    let mut about = format!("ralph {}", args.join(" "));
    if !when.is_empty() {
        about.push_str(&format!(" ({when})"));
    }
    check(env, name, &about, &shown(out.get_output()));
}

/// A command's whole output as a user sees it at a terminal: its exit code,
/// then stdout and stderr each whole.
pub fn shown(out: &Output) -> String {
    format!(
        "exit code: {}\n── stdout ──\n{}── stderr ──\n{}",
        out.status
            .code()
            .map_or_else(|| "none (a signal)".to_string(), |c| c.to_string()),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    )
}

/// The rules, in the order they apply: longer, more particular things
/// first (a run id holds a time; the project sits in the temp folder).
pub fn settings(env: &TestEnv) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(super::repo_root().join("tests/it/snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    let root = env.project.parent().unwrap();
    for (path, name) in [
        (env.project.as_path(), "{project}"),
        (env.home.as_path(), "{home}"),
        (root, "{tmp}"),
        (ralph_bin().as_path(), "{ralph}"),
        (ralph_bin().parent().unwrap(), "{bin}"),
    ] {
        s.add_filter(&regex_escape(&path.display().to_string()), name);
    }
    // The pinned client's path is only known once it is installed; a test
    // that started no claude has none to hide.
    if let Some(claude) = installed_claude() {
        s.add_filter(&regex_escape(&claude.display().to_string()), "{claude}");
    }
    s.add_filter(&regex_escape(&env.api.url), "{api}");
    // A run's id: the time it started and the loop's pid.
    s.add_filter(r"\b\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ-\d+\b", "{run-id}");
    s.add_filter(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "{time}");
    if let Some(commits) = commit_pattern(&env.project) {
        s.add_filter(&commits, "{commit}");
    }
    s.add_filter(r"\bpid \d+", "pid {pid}");
    // How long a run took, as ralph writes it (`human_duration`: "1h 2m
    // 3s", "0s"), where it says so: before "elapsed", before the "·" of an
    // end line, before a cost (status, the watch table's column); and the
    // JSON's fields. Only there: "90s" in a help text stays. A table's
    // padding after it goes to one space: its width follows the time's.
    s.add_filter(r"\b(?:\d+h )?(?:\d+m )?\d+s( elapsed| ·)", "{duration}${1}");
    s.add_filter(r"\b(?:\d+h )?(?:\d+m )?\d+s(,?) +\$", "{duration}${1} $$");
    s.add_filter(r#""duration": "[^"]*""#, r#""duration": "{duration}""#);
    s.add_filter(r#""duration_s": [0-9.e-]+"#, r#""duration_s": "{seconds}""#);
    s.add_filter(
        &format!(r"\bv?{}\b", regex_escape(env!("CARGO_PKG_VERSION"))),
        "{version}",
    );
    s
}

/// The pinned claude if this machine has it already (without installing).
fn installed_claude() -> Option<std::path::PathBuf> {
    let bin = super::tools_dir()
        .join(format!("claude-{}", super::CLAUDE_VERSION))
        .join("node_modules/.bin/claude");
    bin.exists().then(claude_bin)
}

/// One pattern for every commit of the project's repository (and so of its
/// worktrees and of an origin it pushed to), whole or shortened to seven
/// or more digits. Named from the repository rather than matched by shape,
/// so a word that happens to be all hex letters is left as it is.
fn commit_pattern(project: &Path) -> Option<String> {
    if !project.join(".git").exists() {
        return None;
    }
    let out = std::process::Command::new("git")
        .args(["rev-list", "--all", "--reflog"])
        .current_dir(project)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .ok()?;
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|id| format!("{}[0-9a-f]{{0,33}}", &id[..7]))
        .collect();
    (!ids.is_empty()).then(|| format!(r"\b(?:{})\b", ids.join("|")))
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = r"\.+*?()|[]{}^$".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}
