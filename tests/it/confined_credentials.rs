//! A confined session, and a confined gate, read none of the user's
//! credential stores (forge logins, git's credentials, ssh and gpg keys,
//! container and cloud logins, package registries' tokens): every agent's
//! real client, each store planted with a secret of its own, the session
//! reading each and committing what it read.

use std::fs;
use std::path::Path;

use crate::support::*;

/// Where a user's tools keep credentials, under the home: what no confined
/// session nor gate may read (the coding agents' own logins last, in
/// `LOGINS`).
const STORES: [&str; 24] = [
    ".config/gh/hosts.yml",
    ".config/glab-cli/config.yml",
    ".config/hub",
    ".git-credentials",
    ".config/git/credentials",
    ".netrc",
    ".ssh/id_ed25519",
    ".gnupg/private-keys-v1.d/key.key",
    ".docker/config.json",
    ".aws/credentials",
    ".config/gcloud/application_default_credentials.json",
    ".azure/msal_token_cache.json",
    ".kube/config",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".pi/agent/auth.json",
    ".local/share/opencode/auth.json",
];

/// Each agent's own login: an agent ralph's bubblewrap confines reads it
/// inside the sandbox, and so can its session. (Claude Code and Codex read
/// theirs outside their sandbox: hidden from their commands too.)
const LOGINS: [(&str, &str); 3] = [
    ("gemini", ".gemini/oauth_creds.json"),
    ("pi", ".pi/agent/auth.json"),
    ("opencode", ".local/share/opencode/auth.json"),
];

/// A store's text with its secret, in the store's own form where its
/// agent reads it.
fn text_of(rel: &str, secret: &str) -> String {
    match rel {
        ".pi/agent/auth.json" => {
            format!(r#"{{"ralph-test": {{"type": "api_key", "key": "{secret}"}}}}"#)
        }
        ".local/share/opencode/auth.json" => {
            format!(r#"{{"ralph-test": {{"type": "api", "key": "{secret}"}}}}"#)
        }
        r if r.ends_with(".json") => format!(r#"{{"token": "{secret}"}}"#),
        _ => format!("token = {secret}\n"),
    }
}

/// A file of the home that is no credential: read as before (the agent is
/// not broken, and the probe did read the home).
const PLAIN: &str = "notes/plain.txt";

/// Plant a secret of its own in each store, and the plain file; the
/// secrets.
fn plant(home: &Path) -> Vec<String> {
    let secret = |i: usize| format!("secret-{i}-{}-x9", std::process::id());
    let mut secrets = Vec::new();
    for (i, rel) in STORES.iter().enumerate() {
        let p = home.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text_of(rel, &secret(i))).unwrap();
        secrets.push(secret(i));
    }
    fs::create_dir_all(home.join("notes")).unwrap();
    fs::write(home.join(PLAIN), "plain-text-of-the-home\n").unwrap();
    secrets
}

/// Shell that reads each store (by its path, and by a search of the whole
/// home) and the plain file into `out`.
fn probe(home: &Path, out: &str) -> String {
    let paths: Vec<String> = STORES
        .iter()
        .chain([&PLAIN])
        .map(|r| shell_words::quote(&home.join(r).display().to_string()).into_owned())
        .collect();
    format!(
        "for f in {}; do echo \"== $f\"; cat \"$f\"; done > {out} 2>&1; \
         grep -rs -e token -e plain-text {} >> {out}; cat {out}; ",
        paths.join(" "),
        shell_words::quote(&home.display().to_string())
    )
}

/// Everything of the run a secret could have reached: every commit of the
/// repository, the files left in it, the session's stream, what ralph
/// said, and what the model was sent.
fn everything(env: &TestEnv, out: &str) -> String {
    let mut all = env.git(&["log", "--all", "-p", "--format=%H %s"]);
    for e in walkdir::WalkDir::new(&env.project)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
    {
        if !e.path().starts_with(env.project.join(".git/objects")) {
            all.push_str(&String::from_utf8_lossy(
                &fs::read(e.path()).unwrap_or_default(),
            ));
        }
    }
    all.push_str(out);
    for r in env.api.requests() {
        all.push_str(&r.body.to_string());
    }
    all
}

/// What of `secrets` is in `all`.
fn leaked(all: &str, secrets: &[String]) -> Vec<String> {
    secrets
        .iter()
        .filter(|s| all.contains(s.as_str()))
        .cloned()
        .collect()
}

/// Claude Code's own Read tool at each store (it runs outside the
/// sandbox: its permission rules keep it out).
fn claude_reads(home: &Path) -> Vec<Reply> {
    STORES
        .iter()
        .map(|rel| Reply::Tool {
            name: "Read".into(),
            input: serde_json::json!({"file_path": home.join(rel)}),
        })
        .collect()
}

/// A confined session of `agent` (its loop's command line, `loop` given)
/// reads every store and commits what it read: nothing of them is read,
/// the plain file is, the commit is made.
fn reads_no_store(agent: &str, ralph_loop: impl FnOnce(&TestEnv) -> Ralph) {
    sandbox_tools();
    let env = one_step_project();
    let secrets = plant(&env.home);
    let mut replies = if agent == "claude" {
        claude_reads(&env.home)
    } else {
        Vec::new()
    };
    replies.extend([
        Reply::bash(format!(
            "{}git add read.txt && {CHECK_THE_BOX} && ralph complete -m done",
            probe(&env.home, "read.txt")
        )),
        Reply::text("Step done."),
    ]);
    env.api.session(replies);
    let out = ralph_loop(&env)
        .args(["--confined", "--max-iterations", "2"])
        .assert()
        .get_output()
        .clone();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = env.git(&["show", "HEAD:read.txt"]);
    assert!(
        committed.contains("plain-text-of-the-home") && committed.contains(".netrc"),
        "{agent}: the probe did not run, or read nothing of the home: {committed}\n{out}"
    );
    let own: Vec<String> = STORES
        .iter()
        .zip(&secrets)
        .filter(|(rel, _)| LOGINS.contains(&(agent, **rel)))
        .map(|(_, s)| s.clone())
        .collect();
    let others: Vec<String> = secrets.into_iter().filter(|s| !own.contains(s)).collect();
    let all = everything(&env, &out);
    assert_eq!(
        leaked(&all, &others),
        Vec::<String>::new(),
        "{agent}: a confined session read these credential stores: {committed}"
    );
    assert_eq!(records(&env)[0]["confined"], true, "{agent}");
}

#[test]
fn confined_claude_reads_no_credential_store() {
    reads_no_store("claude", |env| {
        env.ralph().args(["loop", "--claude"]).arg(claude_bin())
    });
}

#[test]
fn confined_codex_reads_no_credential_store() {
    reads_no_store("codex", |env| {
        env.ralph()
            .args(["loop", "--agent", "codex", "--codex"])
            .arg(codex_bin())
    });
}

#[test]
fn confined_gemini_reads_no_credential_store() {
    reads_no_store("gemini", |env| {
        env.ralph()
            .args(["loop", "--agent", "gemini", "--gemini"])
            .arg(gemini_bin())
            .args(["--model", "gemini-2.5-pro"])
    });
}

#[test]
fn confined_pi_and_opencode_read_no_credential_store() {
    for agent in ["pi", "opencode"] {
        reads_no_store(agent, |env| {
            crate::agents_pi_opencode::agent_loop(env, agent)
        });
    }
}

/// The confined gate reads each store into the project and its log: none
/// of them is read there either.
#[test]
fn a_confined_gate_reads_no_credential_store() {
    sandbox_tools();
    let env = one_step_with_gate("sh probe.sh");
    let secrets = plant(&env.home);
    fs::write(
        env.project.join("probe.sh"),
        probe(&env.home, "gate-read.txt"),
    )
    .unwrap();
    env.commit_all("the gate's probe");
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Step done."),
    ]);
    let out = ralph_loop(&env)
        .args(["--confined", "--max-iterations", "2"])
        .stdout_with(0);
    let read = fs::read_to_string(env.project.join("gate-read.txt")).unwrap_or_default();
    let log = fs::read_to_string(run_dir(&env).join("gate-001.log")).unwrap_or_default();
    assert!(
        read.contains("plain-text-of-the-home") && log.contains("plain-text-of-the-home"),
        "the gate's probe did not run: {read}\n{log}\n{out}"
    );
    let all = format!("{}{log}", everything(&env, &out));
    assert_eq!(
        leaked(&all, &secrets),
        Vec::<String>::new(),
        "the confined gate read these credential stores: {read}"
    );
}
