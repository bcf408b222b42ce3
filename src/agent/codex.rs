//! Codex CLI 0.169: `codex exec --json`, the prompt on stdin; confined in
//! its own sandbox (approvals never), by a permissions profile of the
//! session's own (`profile`): Codex's `:workspace` (writes in the project
//! and TMPDIR, no network), less `/tmp`, plus what its commits write of
//! git's folder, less the user's credential stores, which its commands
//! cannot read. (Its older `--sandbox workspace-write` settings cannot
//! hide a path from reads.)

use std::path::{Path, PathBuf};

use crate::sandbox::confine::{Confinement, GitDirs, SHARED_WRITTEN};
use crate::sandbox::credentials::Secret;
use serde_json::Value;

use crate::session::stream::{Session, Shown, Usage, error_line, first_line};

/// What a confined session's sandbox is made of, read before it starts.
#[derive(Debug, Clone, Copy)]
pub struct Confined<'a> {
    pub c: &'a Confinement,
    pub root: &'a Path,
    /// Where git keeps the project's repository (`None`: not one).
    pub git: Option<&'a GitDirs>,
    /// The user's credential stores there are.
    pub secrets: &'a [Secret],
    /// The permissions profile's name: the session's own, as no config
    /// layer can name it. (Codex merges a profile's tables across its
    /// layers: a config that named ours could add to what it allows.)
    pub profile: &'a str,
}

/// `codex exec` arguments before the user's own: the JSON stream, the
/// prompt from stdin (`-`, last), and either its sandbox (confined: the
/// session's own permissions profile, `profile`) or none.
pub fn arguments(model: Option<&str>, confined: Option<&Confined>) -> Vec<String> {
    let mut a: Vec<String> = ["exec", "--json", "--skip-git-repo-check"]
        .map(String::from)
        .into();
    match confined {
        Some(k) => {
            for setting in [
                "approval_policy=\"never\"".to_string(),
                format!("default_permissions={}", quoted(k.profile)),
                format!("permissions.{}={}", k.profile, profile(k)),
            ] {
                a.extend(["-c".into(), setting]);
            }
        }
        None => a.push("--dangerously-bypass-approvals-and-sandbox".into()),
    }
    if let Some(m) = model {
        a.extend(["--model".into(), m.into()]);
    }
    a
}

/// A TOML string (JSON's escapes are TOML's).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialise")
}

/// The permissions profile, as a TOML inline table: Codex's `:workspace`
/// (the project and TMPDIR written, its `.git`, `.codex` and `.agents`
/// read-only, no network), `/tmp` read-only, what its commits write of
/// git's folder (`git_entries`), the user's `allow_write`, and the
/// credential stores unreadable.
fn profile(k: &Confined) -> String {
    let mut entries: Vec<(String, &str)> = vec![(":slash_tmp".into(), "read")];
    entries.extend(
        git_entries(k.root, k.git)
            .into_iter()
            .map(|(p, access)| (p.display().to_string(), access)),
    );
    let writable: Vec<PathBuf> =
        k.c.allow_write
            .iter()
            .map(|w| PathBuf::from(crate::sandbox::confine::expand_home(w)))
            .collect();
    entries.extend(writable.iter().map(|w| (w.display().to_string(), "write")));
    entries.extend(
        crate::sandbox::credentials::hidden(k.secrets, &writable, k.root)
            .into_iter()
            .map(|s| (s.path().display().to_string(), "none")),
    );
    let fs: Vec<String> = entries
        .iter()
        .map(|(p, access)| format!("{}={}", quoted(p), quoted(access)))
        .collect();
    format!(
        "{{extends=\":workspace\", filesystem={{{}}}, network={{enabled=false}}}}",
        fs.join(", ")
    )
}

/// What a session's commits write of git's folder (Codex keeps the
/// project's `.git` read-only): a main checkout's whole, wherever it lies
/// (`gitguard` puts back what a session changed of its setup); a linked
/// worktree's `.git` is a file (named writable, Codex's sandbox failed
/// every command: it binds paths inside it), and its commits write its own
/// folder, less its pointers and config, and the shared folder's objects,
/// refs and logs (`SHARED_WRITTEN`), less the alternates, and its
/// submodules' folders, less their config and hooks: as ralph's
/// bubblewrap lets an agent (`confine::agent_over`). In Codex's profile
/// the more specific entry wins.
pub fn git_entries(root: &Path, git: Option<&GitDirs>) -> Vec<(PathBuf, &'static str)> {
    let Some(g) = git else {
        return vec![(root.join(".git"), "write")];
    };
    if g.own == g.common {
        return vec![(g.common.clone(), "write")];
    }
    let mut out: Vec<(PathBuf, &'static str)> = SHARED_WRITTEN
        .iter()
        .map(|d| (g.common.join(d), "write"))
        .collect();
    out.push((g.common.join("objects/info/alternates"), "read"));
    out.push((g.own.clone(), "write"));
    out.extend(["commondir", "gitdir", "config.worktree"].map(|f| (g.own.join(f), "read")));
    if !g.modules.is_empty() {
        out.push((g.common.join("modules"), "write"));
    }
    for m in &g.modules {
        out.extend(["config", "hooks"].map(|f| (m.join(f), "read")));
    }
    out
}

/// A session's arguments: `arguments`, the user's own, and `-` (the
/// prompt from stdin).
pub fn session_arguments(a: &super::Ask) -> Vec<String> {
    let confined = a.confined.map(|c| Confined {
        c,
        root: a.root,
        git: a.git,
        secrets: a.secrets,
        profile: a.own_name,
    });
    let mut args = arguments(a.model, confined.as_ref());
    args.extend(a.extra.iter().cloned());
    args.push("-".into());
    args
}

/// `/ralph-setup` for Codex: a custom prompt in `$CODEX_HOME/prompts`
/// (default `~/.codex`), with its own front matter.
pub fn setup_command() -> anyhow::Result<super::SetupCommand> {
    use crate::cmd::install_command::{DESCRIPTION, body};
    let codex =
        super::dir_var("CODEX_HOME").map_or_else(|| super::home().map(|h| h.join(".codex")), Ok)?;
    let text = format!(
        "---\ndescription: {DESCRIPTION}\nargument-hint: \"[what you want built]\"\n---\n{}",
        body()
    );
    Ok((
        codex.join("prompts/ralph-setup.md"),
        text,
        "In Codex, in your project: /prompts:ralph-setup <what you want built>",
    ))
}

/// Codex's `exec --json` events, by their `type`.
pub(crate) fn read(s: &mut Session, v: &Value) -> Vec<Shown> {
    match v["type"].as_str() {
        Some(t) => event(s, t, v),
        None => Vec::new(),
    }
}

/// Codex's `exec --json` events.
fn event(s: &mut Session, t: &str, v: &Value) -> Vec<Shown> {
    match t {
        "thread.started" => s.session_id = v["thread_id"].as_str().map(String::from),
        "item.started" | "item.completed" => return item(s, t, &v["item"]),
        "turn.completed" => {
            let u = &v["usage"];
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            let usage = Usage {
                input_tokens: n("input_tokens").saturating_sub(n("cached_input_tokens")),
                output_tokens: n("output_tokens"),
                cache_read_input_tokens: n("cached_input_tokens"),
                cache_creation_input_tokens: n("cache_write_input_tokens"),
            };
            s.end(false, String::new(), usage);
        }
        "turn.failed" => {
            let text = v["error"]["message"]
                .as_str()
                .map(String::from)
                .or_else(|| s.last_error.clone())
                .unwrap_or_else(|| "the turn failed".into());
            s.end(true, text, Usage::default());
        }
        "error" => {
            let text = v["message"].as_str().unwrap_or("").to_string();
            s.api_error(&text);
            return vec![Shown::Note(first_line(&text, 200))];
        }
        _ => {}
    }
    Vec::new()
}

/// One of Codex's items: a command (started, or failed), the agent's
/// words, a file change. Its own notices ("Model metadata not found")
/// are items too, and pass unshown.
fn item(s: &mut Session, t: &str, item: &Value) -> Vec<Shown> {
    match (t, item["type"].as_str()) {
        ("item.started", Some("command_execution")) => {
            s.tool_calls += 1;
            vec![Shown::Tool(format!("Bash: {}", command(item)))]
        }
        ("item.completed", Some("command_execution")) => match item["exit_code"].as_i64() {
            Some(0) | None => Vec::new(),
            Some(code) => {
                let out = item["aggregated_output"].as_str().unwrap_or("");
                let said = format!("Exit code {code}\n{out}");
                vec![Shown::ToolError(error_line(&said, 160))]
            }
        },
        ("item.completed", Some("agent_message")) => {
            let text = item["text"].as_str().unwrap_or("").to_string();
            s.last_said.clone_from(&text);
            let shown = (!text.trim().is_empty()).then_some(Shown::Text(text));
            shown.into_iter().collect()
        }
        ("item.completed", Some("file_change")) => {
            s.tool_calls += 1;
            let paths: Vec<&str> = item["changes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["path"].as_str())
                .collect();
            vec![Shown::Tool(format!(
                "Edit: {}",
                first_line(&paths.join(", "), 120)
            ))]
        }
        _ => Vec::new(),
    }
}

/// The command of a Codex `command_execution`, without the `/bin/bash -lc
/// ...` it wraps every command in.
pub(crate) fn command(item: &Value) -> String {
    let c = item["command"].as_str().unwrap_or("?");
    let inner = shell_words::split(c).ok().and_then(|w| match w.as_slice() {
        [sh, flag, inner] if sh.ends_with("bash") && flag == "-lc" => Some(inner.clone()),
        _ => None,
    });
    first_line(inner.as_deref().unwrap_or(c), 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of a `-c key=value` argument, read as TOML.
    fn setting(a: &[String], key: &str) -> toml::Value {
        let v = a
            .iter()
            .find_map(|x| x.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key}: {a:?}"));
        let t: toml::Table = toml::from_str(&format!("v = {v}")).unwrap();
        t["v"].clone()
    }

    #[test]
    fn confined_or_not_and_the_model() {
        assert_eq!(
            arguments(Some("gpt-5.4"), None),
            [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                "--model",
                "gpt-5.4"
            ]
        );
        let c = Confinement {
            allow_write: vec!["/data/x".into(), "/h/.kube".into()],
            allow_domains: vec![],
        };
        let secrets = [
            Secret::Dir("/h/.ssh".into()),
            Secret::File("/h/.netrc".into()),
            Secret::Dir("/h/.kube".into()),
        ];
        let k = Confined {
            c: &c,
            root: Path::new("/p"),
            git: None,
            secrets: &secrets,
            profile: "ralph-0a1b",
        };
        let a = arguments(None, Some(&k));
        assert!(
            !a.iter()
                .any(|x| x.contains("dangerously") || x == "--sandbox"),
            "{a:?}"
        );
        assert_eq!(setting(&a, "approval_policy").as_str(), Some("never"));
        assert_eq!(
            setting(&a, "default_permissions").as_str(),
            Some("ralph-0a1b")
        );
        let p = setting(&a, "permissions.ralph-0a1b");
        assert_eq!(p["extends"].as_str(), Some(":workspace"));
        assert_eq!(p["network"]["enabled"].as_bool(), Some(false));
        let fs = p["filesystem"].as_table().unwrap();
        let access = |k: &str| fs.get(k).and_then(|v| v.as_str());
        for (path, want) in [
            (":slash_tmp", "read"),
            ("/p/.git", "write"),
            ("/data/x", "write"),
            ("/h/.ssh", "none"),
            ("/h/.netrc", "none"),
            // The user lets sessions write it: not hidden.
            ("/h/.kube", "write"),
        ] {
            assert_eq!(access(path), Some(want), "{path}: {fs:?}");
        }
    }

    #[test]
    fn a_linked_worktree_writes_the_shared_folders_parts_not_its_dot_git_file() {
        let git = GitDirs {
            common: "/m/.git".into(),
            own: "/m/.git/worktrees/a".into(),
            modules: vec!["/m/.git/modules/lib".into()],
            dot_git_file: true,
        };
        let e = git_entries(Path::new("/w/a"), Some(&git));
        let access = |p: &str| e.iter().find(|(x, _)| x == Path::new(p)).map(|(_, a)| *a);
        for d in [
            "objects", "refs", "logs", "reftable", "lfs", "rr-cache", "modules",
        ] {
            assert_eq!(access(&format!("/m/.git/{d}")), Some("write"), "{d}");
        }
        assert_eq!(access("/m/.git/worktrees/a"), Some("write"));
        for p in [
            "/m/.git/worktrees/a/commondir",
            "/m/.git/worktrees/a/gitdir",
            "/m/.git/worktrees/a/config.worktree",
            "/m/.git/objects/info/alternates",
            "/m/.git/modules/lib/config",
            "/m/.git/modules/lib/hooks",
        ] {
            assert_eq!(access(p), Some("read"), "{p}");
        }
        // Not its `.git` file, nor the shared setup or another worktree.
        for p in [
            "/w/a/.git",
            "/m/.git",
            "/m/.git/config",
            "/m/.git/worktrees",
        ] {
            assert_eq!(access(p), None, "{p}: {e:?}");
        }
        // A main checkout writes its git folder, wherever it is.
        let main = GitDirs {
            common: "/g".into(),
            own: "/g".into(),
            modules: Vec::new(),
            dot_git_file: true,
        };
        assert_eq!(
            git_entries(Path::new("/p"), Some(&main)),
            [(PathBuf::from("/g"), "write")]
        );
    }
}
