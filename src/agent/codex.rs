//! Codex CLI 0.169: `codex exec --json`, the prompt on stdin; confined in
//! its own sandbox (approvals never), by a permissions profile of the
//! session's own (`profile`): Codex's `:workspace` (writes in the project
//! and TMPDIR, no network), less `/tmp`, plus what its commits write of
//! git's folder, less the user's credential stores, which its commands
//! cannot read. (Its older `--sandbox workspace-write` settings cannot
//! hide a path from reads.)
//!
//! A command its sandbox refuses (one that fails as a refusal would) shows
//! nowhere in its stream, only in its transcript: a session whose every
//! command was refused is a failure (`judge_refusals`).

use std::path::{Path, PathBuf};

use crate::confinement::{Confinement, GitDirs, SHARED_WRITTEN, Secret};
use serde_json::Value;

use crate::agent::stream::{Session, Shown, Usage, error_line, first_line};

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

/// The `-c` setting that has Codex treat the folders `keys` names as
/// untrusted projects: it then loads none of their `.codex` files,
/// whatever `[projects]` in the user's config says, as a command-line
/// setting wins over the user's config there. One inline table
/// (`projects={"<key>"={trust_level="untrusted"},...}`: a dotted `-c
/// projects."<key>"...` would split a path at its dots); a JSON string is
/// a TOML basic string, escapes and all.
pub fn untrusted_projects(keys: &[String]) -> String {
    let each: Vec<String> = keys
        .iter()
        .map(|k| format!("{}={{trust_level=\"untrusted\"}}", quoted(k)))
        .collect();
    format!("projects={{{}}}", each.join(","))
}

/// Codex's warning, on its stderr, that a folder's `.codex` files are off
/// (0.169: "Untrusted project-local configuration is disabled. Run `codex
/// exec --trust` ..."): its advice does nothing while ralph marks the
/// folder untrusted, which wins over `--trust`; what ralph says instead.
pub fn stderr_note(line: &str) -> Option<&'static str> {
    line.contains("Untrusted project-local configuration is disabled")
        .then_some(
            "the project's .codex files are off: `ralph trust` shows them and \
         turns them on (Codex then loads them in a folder you trust in Codex)",
        )
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
            .map(|w| PathBuf::from(crate::confinement::expand_home(w)))
            .collect();
    entries.extend(writable.iter().map(|w| (w.display().to_string(), "write")));
    entries.extend(
        crate::confinement::hidden(k.secrets, (&writable, &[]), k.root)
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

/// A session's arguments: `arguments`, the project's `.codex` off until
/// approved, the user's own, and `-` (the prompt from stdin).
pub fn session_arguments(a: &super::Ask) -> Vec<String> {
    let confined = a.confined.map(|c| Confined {
        c,
        root: a.root,
        git: a.git,
        secrets: a.secrets,
        profile: a.own_name,
    });
    let mut args = arguments(a.model, confined.as_ref());
    // Until approved, the project's `.codex` files stay off, even in a
    // folder the user trusts in Codex (`trust::codex_files`).
    if !a.project_files {
        args.extend(["-c".into(), untrusted_projects(a.project_folders)]);
    }
    args.extend(a.extra.iter().cloned());
    args.push("-".into());
    args
}

/// `/ralph-setup` for Codex: a custom prompt in `$CODEX_HOME/prompts`
/// (default `~/.codex`), with its own front matter.
pub fn setup_command() -> anyhow::Result<super::SetupCommand> {
    use crate::ralph_setup::{DESCRIPTION, body};
    let codex = crate::fsutil::dir_var("CODEX_HOME")
        .map_or_else(|| super::home().map(|h| h.join(".codex")), Ok)?;
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

/// `ralph mcp` for Codex: `[mcp_servers.ralph]` in `$CODEX_HOME/config.toml`
/// (default `~/.codex`), as `codex mcp add ralph -- PROGRAM mcp` writes it
/// (0.169.0).
pub fn mcp_server(program: String) -> anyhow::Result<super::McpServer> {
    let codex = crate::fsutil::dir_var("CODEX_HOME")
        .map_or_else(|| super::home().map(|h| h.join(".codex")), Ok)?;
    Ok(super::McpServer {
        file: codex.join("config.toml"),
        format: super::McpFormat::Toml {
            table: "mcp_servers",
        },
        entry: serde_json::json!({"command": program, "args": ["mcp"]}),
        how: "In Codex: /mcp lists it (`codex mcp list` too)",
    })
}

/// A confined session whose every command its sandbox refused did
/// nothing it was asked to, whatever its last words: a failure. Codex
/// mostly shows such a command nowhere in its stream (no command item),
/// at times as any failed one: its transcript has the model's every call
/// and what it was answered, so the answers are read there.
pub fn judge_refusals(s: &mut Session) {
    let Some(thread) = s.session_id.clone() else {
        return;
    };
    let home = crate::fsutil::dir_var("CODEX_HOME")
        .or_else(|| super::home().ok().map(|h| h.join(".codex")));
    let Some(text) = home.and_then(|h| transcript(&h.join("sessions"), &thread)) else {
        return;
    };
    if let Some(why) = all_refused(&command_calls(&text)) {
        s.any_error = true;
        s.last_error = Some(why);
    }
}

/// Why a session whose command calls were answered so failed: when there
/// were some, and each was a refusal.
fn all_refused(answers: &[String]) -> Option<String> {
    let first = answers.first()?;
    answers.iter().all(|a| refused(a)).then(|| {
        let said = output_of(first)
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        format!(
            "codex's sandbox refused every command of the session ({}), so none ran: {}",
            answers.len(),
            first_line(said, 200)
        )
    })
}

/// What the command printed, in Codex's answer (its own lines, then
/// `Output:` and the command's).
fn output_of(answer: &str) -> &str {
    answer
        .split_once("Output:\n")
        .map_or(answer, |(_, out)| out)
}

/// Is this answer one Codex takes for its sandbox's refusal: the command
/// failed (not as a shell's usage error or a command not found), saying
/// what a refused call says? The same words Codex looks for.
fn refused(answer: &str) -> bool {
    const SAID: [&str; 7] = [
        "operation not permitted",
        "permission denied",
        "read-only file system",
        "seccomp",
        "sandbox",
        "landlock",
        "failed to write file",
    ];
    let code = answer
        .lines()
        .find_map(|l| l.strip_prefix("Process exited with code "))
        .and_then(|c| c.trim().parse::<i64>().ok());
    let out = output_of(answer).to_ascii_lowercase();
    matches!(code, Some(c) if ![0, 2, 126, 127].contains(&c))
        && SAID.iter().any(|w| out.contains(w))
}

/// The answers to the command calls (`exec_command`, and the older
/// `shell` tools) in a Codex transcript, in order.
fn command_calls(transcript: &str) -> Vec<String> {
    const TOOLS: [&str; 4] = ["exec_command", "shell", "shell_command", "local_shell"];
    let mut calls: Vec<String> = Vec::new();
    let mut answers: Vec<String> = Vec::new();
    for line in transcript.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let p = &v["payload"];
        let id = p["call_id"].as_str().unwrap_or("").to_string();
        match (v["type"].as_str(), p["type"].as_str()) {
            (Some("response_item"), Some("function_call"))
                if TOOLS.contains(&p["name"].as_str().unwrap_or("")) =>
            {
                calls.push(id);
            }
            (Some("response_item"), Some("function_call_output")) if calls.contains(&id) => {
                answers.push(p["output"].as_str().unwrap_or("").to_string());
            }
            _ => {}
        }
    }
    answers
}

/// The transcript of thread `thread`: `<sessions>/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`,
/// in one of the last few days' folders (a session may start before
/// midnight); bounded.
fn transcript(sessions: &Path, thread: &str) -> Option<String> {
    if thread.is_empty()
        || !thread
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return None;
    }
    let newest = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        v.reverse();
        v.truncate(2);
        v
    };
    let mut days: Vec<PathBuf> = newest(sessions)
        .iter()
        .flat_map(|y| newest(y))
        .flat_map(|m| newest(&m))
        .collect();
    days.sort();
    let suffix = format!("-{thread}.jsonl");
    days.iter().rev().take(3).find_map(|d| {
        let f = std::fs::read_dir(d)
            .ok()?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(&suffix))?;
        crate::fsutil::read_optional_capped(&f.path(), crate::fsutil::RUN_FILE_CAP)
            .ok()
            .flatten()
    })
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

/// Codex's login: the key of the model provider its config names (one of
/// the user's own, `model_provider`), else `CODEX_API_KEY`, else what
/// `codex login status` says (no session, nothing sent). Its config is the
/// user's (`$CODEX_HOME/config.toml`), as a session reads it.
pub fn login(program: &Path, var: impl Fn(&str) -> Option<String>) -> super::Login {
    use super::Login;
    let config = crate::fsutil::dir_var("CODEX_HOME")
        .or_else(|| crate::fsutil::dir_var("HOME").map(|h| h.join(".codex")))
        .and_then(|d| std::fs::read_to_string(d.join("config.toml")).ok());
    if let Some((name, key)) = config.as_deref().and_then(own_provider) {
        return match key {
            Some(k) if var(&k).is_some() => Login::Key(k),
            Some(k) => Login::Out {
                why: format!("its model provider {name} reads its key from {k}, which is not set"),
                fix: format!("export {k}=<your key> (its provider's key) before `ralph loop`"),
            },
            None => Login::In(format!("model provider {name}, which names no key")),
        };
    }
    // `codex exec` reads this one variable itself (0.169: OPENAI_API_KEY
    // it does not).
    if var("CODEX_API_KEY").is_some() {
        return Login::Key("CODEX_API_KEY".into());
    }
    match super::ask(program, &["login", "status"], &[]) {
        // Its answer names the key, masked: not passed on.
        Some(o) => status_said(
            o.status.success(),
            &String::from_utf8_lossy(&o.stderr),
            var("OPENAI_API_KEY").is_some(),
        ),
        None => Login::Unknown("`codex login status` did not answer".into()),
    }
}

/// The model provider Codex's config names, where it is not OpenAI's
/// (whose login `codex login` keeps), and the variable its key is read
/// from (`env_key`), if any.
fn own_provider(config: &str) -> Option<(String, Option<String>)> {
    let t: toml::Table = config.parse().ok()?;
    let name = t.get("model_provider")?.as_str()?;
    if name == "openai" {
        return None;
    }
    let key = t
        .get("model_providers")
        .and_then(|p| p.get(name))
        .and_then(|p| p.get("env_key"))
        .and_then(|k| k.as_str())
        .map(String::from);
    Some((name.to_string(), key))
}

/// `codex login status`: 0 logged in; 1 with "Not logged in" on stderr,
/// logged out (0.169); anything else is no answer.
fn status_said(ok: bool, stderr: &str, openai_key: bool) -> super::Login {
    use super::Login;
    if ok {
        return Login::In("logged in (`codex login status`)".into());
    }
    if !stderr.contains("Not logged in") {
        // Its last line says why (warnings come first).
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return Login::Unknown(format!(
            "`codex login status`: {}",
            first_line(last.unwrap_or("no answer"), 160)
        ));
    }
    Login::Out {
        why: format!(
            "not logged in (`codex login status`){}",
            if openai_key {
                "; OPENAI_API_KEY is set, but `codex exec` does not read it"
            } else {
                ""
            }
        ),
        fix: "`codex login`, or `printenv OPENAI_API_KEY | codex login --with-api-key`, or set CODEX_API_KEY: every session would fail".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codex 0.169's `codex login status`, and its config's own provider.
    #[test]
    fn codexs_login_is_read_from_its_status_and_its_provider() {
        use crate::agent::Login;
        assert!(matches!(
            status_said(true, "API key configured - sk-***", false),
            Login::In(_)
        ));
        let Login::Out { why, fix } = status_said(false, "WARNING: ...\nNot logged in\n", true)
        else {
            panic!("logged out")
        };
        assert!(
            why.ends_with("OPENAI_API_KEY is set, but `codex exec` does not read it"),
            "{why}"
        );
        assert!(fix.starts_with("`codex login`"), "{fix}");
        assert!(matches!(
            status_said(false, "Error checking login status: x", false),
            Login::Unknown(_)
        ));
        let own = "model_provider = \"scripted\"\n[model_providers.scripted]\nenv_key = \"K\"\n";
        assert_eq!(
            own_provider(own),
            Some(("scripted".into(), Some("K".into())))
        );
        assert_eq!(
            own_provider("model_provider = \"oss\"\n"),
            Some(("oss".into(), None))
        );
        assert_eq!(own_provider("model_provider = \"openai\"\n"), None);
        assert_eq!(own_provider("model = \"gpt-5.4\"\n"), None);
    }

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

    /// A transcript line as Codex 0.169 writes it.
    fn line(kind: &str, payload: serde_json::Value) -> String {
        serde_json::json!({"timestamp": "t", "type": kind, "payload": payload}).to_string()
    }

    fn call(name: &str, id: &str) -> String {
        line(
            "response_item",
            serde_json::json!({"type": "function_call", "name": name, "arguments": "{}", "call_id": id}),
        )
    }

    fn answer(id: &str, out: &str) -> String {
        line(
            "response_item",
            serde_json::json!({"type": "function_call_output", "call_id": id, "output": out}),
        )
    }

    #[test]
    fn a_session_whose_every_command_was_refused_failed() {
        let answered = |code: i64, out: &str| {
            format!(
                "Chunk ID: 7b89b3\nWall time: 0.0000 seconds\nProcess exited with code {code}\nOriginal token count: 101\nOutput:\n{out}"
            )
        };
        let bwrap = answered(
            101,
            "bwrap: Can't mkdir parents for /w/.git/.git: Not a directory\n\nthread 'main' panicked at linux-sandbox/src/linux_run_main.rs:887:21:\n",
        );
        let erofs = answered(1, "/bin/bash: line 1: /h/x: Read-only file system\n");
        let t = [
            line("session_meta", serde_json::json!({"id": "x"})),
            call("exec_command", "c1"),
            answer("c1", &bwrap),
            call("update_plan", "c2"),
            answer("c2", "Plan updated"),
            call("exec_command", "c3"),
            answer("c3", &erofs),
            "not json".into(),
        ]
        .join("\n");
        let answers = command_calls(&t);
        assert_eq!(answers, [bwrap.clone(), erofs.clone()]);
        assert_eq!(
            all_refused(&answers).as_deref(),
            Some(
                "codex's sandbox refused every command of the session (2), so none ran: bwrap: Can't mkdir parents for /w/.git/.git: Not a directory"
            )
        );
        // One ran, or failed as no refusal does: not every command was
        // refused.
        for other in [
            answered(0, "done\n"),
            answered(1, "error: tests failed\n"),
            answered(127, "sh: sandboxctl: command not found\n"),
            "Chunk ID: 1\nWall time: 10.0 seconds\nProcess running with session ID 63084\nOutput:\n".into(),
        ] {
            assert_eq!(all_refused(&[erofs.clone(), other.clone()]), None, "{other}");
        }
        // No command asked for: nothing refused.
        assert_eq!(all_refused(&command_calls(&call("update_plan", "c"))), None);
    }

    #[test]
    fn the_transcript_is_found_by_its_thread_in_the_last_days_folders() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path().join("sessions");
        for (day, id, text) in [
            ("2026/11/27", "01a2-aaaa", "late"),
            ("2026/11/28", "01a2-bbbb", "today"),
            ("2026/10/31", "01a2-dddd", "last month"),
            ("2025/01/01", "01a2-cccc", "long ago"),
        ] {
            std::fs::create_dir_all(s.join(day)).unwrap();
            std::fs::write(
                s.join(day)
                    .join(format!("rollout-2026-11-28T19-42-04-{id}.jsonl")),
                text,
            )
            .unwrap();
        }
        assert_eq!(transcript(&s, "01a2-aaaa").as_deref(), Some("late"));
        assert_eq!(transcript(&s, "01a2-bbbb").as_deref(), Some("today"));
        assert_eq!(transcript(&s, "01a2-cccc"), None, "not among the last days");
        assert_eq!(transcript(&s, "../x"), None);
        assert_eq!(transcript(&d.path().join("none"), "01a2-aaaa"), None);
    }
}
