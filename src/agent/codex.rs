//! Codex CLI 0.169: `codex exec --json`, the prompt on stdin; confined in
//! its own sandbox (`workspace-write`, approvals never). Its sandbox keeps
//! `.git` read-only, which would stop every commit a step makes: the
//! project's `.git` is named writable, as it is for Claude Code's sandbox.
//! `/tmp` is not writable (the session gets a TMPDIR of its own), nor is the
//! network.

use std::path::Path;

use crate::run::confine::Confinement;

/// `codex exec` arguments before the user's own: the JSON stream, the
/// prompt from stdin (`-`, last), and either its sandbox (confined: writes
/// in the project, its `.git`, `allow_write` and the session's TMPDIR; no
/// network) or none.
pub fn arguments(model: Option<&str>, confined: Option<&Confinement>, root: &Path) -> Vec<String> {
    let mut a: Vec<String> = ["exec", "--json", "--skip-git-repo-check"]
        .map(String::from)
        .into();
    match confined {
        Some(c) => {
            let mut roots = vec![root.join(".git").display().to_string()];
            roots.extend(c.allow_write.iter().cloned());
            let roots = serde_json::to_string(&roots).expect("strings serialise");
            a.extend(["--sandbox", "workspace-write"].map(String::from));
            for setting in [
                "approval_policy=\"never\"".to_string(),
                "sandbox_workspace_write.network_access=false".into(),
                "sandbox_workspace_write.exclude_slash_tmp=true".into(),
                format!("sandbox_workspace_write.writable_roots={roots}"),
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

/// A session's arguments: `arguments`, the user's own, and `-` (the
/// prompt from stdin).
pub fn session_arguments(a: &super::Ask) -> Vec<String> {
    let mut args = arguments(a.model, a.confined, a.root);
    args.extend(a.extra.iter().cloned());
    args.push("-".into());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confined_or_not_and_the_model() {
        assert_eq!(
            arguments(Some("gpt-5.4"), None, Path::new("/p")),
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
            allow_write: vec!["/data/x".into()],
            allow_domains: vec![],
        };
        let a = arguments(None, Some(&c), Path::new("/p"));
        assert!(!a.iter().any(|x| x.contains("dangerously")), "{a:?}");
        assert!(a.windows(2).any(|w| w == ["--sandbox", "workspace-write"]));
        assert!(a.contains(
            &"sandbox_workspace_write.writable_roots=[\"/p/.git\",\"/data/x\"]".to_string()
        ));
        assert!(a.contains(&"sandbox_workspace_write.exclude_slash_tmp=true".to_string()));
        assert!(a.contains(&"sandbox_workspace_write.network_access=false".to_string()));
    }
}
