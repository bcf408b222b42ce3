//! Codex CLI 0.169: `codex exec --json`, the prompt on stdin; confined in
//! its own sandbox (`workspace-write`, approvals never).

use crate::run::confine::Confinement;

/// `codex exec` arguments before the user's own: the JSON stream, the
/// prompt from stdin (`-`, last), and either its sandbox (confined: writes
/// in the project, `allow_write` and the temp folder; no network) or none.
pub fn arguments(model: Option<&str>, confined: Option<&Confinement>) -> Vec<String> {
    let mut a: Vec<String> = ["exec", "--json", "--skip-git-repo-check"]
        .map(String::from)
        .into();
    match confined {
        Some(c) => {
            a.extend(["--sandbox", "workspace-write"].map(String::from));
            a.extend([
                "-c".into(),
                "approval_policy=\"never\"".into(),
                "-c".into(),
                "sandbox_workspace_write.network_access=false".into(),
            ]);
            if !c.allow_write.is_empty() {
                let roots = serde_json::to_string(&c.allow_write).expect("strings serialise");
                a.extend([
                    "-c".into(),
                    format!("sandbox_workspace_write.writable_roots={roots}"),
                ]);
            }
        }
        None => a.push("--dangerously-bypass-approvals-and-sandbox".into()),
    }
    if let Some(m) = model {
        a.extend(["--model".into(), m.into()]);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

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
            allow_write: vec!["/data/x".into()],
            allow_domains: vec![],
        };
        let a = arguments(None, Some(&c));
        assert!(!a.iter().any(|x| x.contains("dangerously")), "{a:?}");
        assert!(a.windows(2).any(|w| w == ["--sandbox", "workspace-write"]));
        assert!(a.contains(&"sandbox_workspace_write.writable_roots=[\"/data/x\"]".to_string()));
        assert!(a.contains(&"sandbox_workspace_write.network_access=false".to_string()));
    }
}
