//! The user's credential stores: what no confined session nor gate may
//! read (the model's commands could commit what they read, and `--pr`
//! pushes it). Each sandbox hides them its own way: Claude Code's with
//! `denyRead`, Codex's with a permissions profile's `none`, ralph's
//! bubblewrap with an empty folder or file over each.
//!
//! Pure: which paths they are, from the home and the environment; the
//! machine is read once, in `here`.

use std::path::{Path, PathBuf};

use crate::confinement::Secret;

/// Where tools keep credentials, under the home (those under `.config`
/// under `$XDG_CONFIG_HOME` too, where that is elsewhere): forges' CLIs,
/// git's credential store, netrc, ssh and gpg keys, container and cloud
/// CLIs' logins, package registries' tokens.
pub const STORES: [&str; 22] = [
    ".config/gh",
    ".config/glab-cli",
    ".config/hub",
    ".config/tea",
    ".git-credentials",
    ".config/git/credentials",
    ".netrc",
    ".ssh",
    ".gnupg",
    ".docker",
    ".config/containers/auth.json",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".oci",
    ".config/doctl",
    ".npmrc",
    ".pypirc",
    ".gem/credentials",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
];

/// Stores in a folder a variable may move: the variable, the folder's
/// place under the home without it, the store in it. The coding agents'
/// own logins are among them: a session of one reads another's (its own,
/// an agent in ralph's bubblewrap reads itself, so its session can too:
/// `hidden`'s `own`).
pub const IN_FOLDERS: [(&str, &str, &str); 7] = [
    ("CARGO_HOME", ".cargo", "credentials"),
    ("CARGO_HOME", ".cargo", "credentials.toml"),
    ("CLAUDE_CONFIG_DIR", ".claude", ".credentials.json"),
    ("CODEX_HOME", ".codex", "auth.json"),
    ("GEMINI_CLI_HOME", "", ".gemini/oauth_creds.json"),
    ("PI_CODING_AGENT_DIR", ".pi/agent", "auth.json"),
    ("XDG_DATA_HOME", ".local/share", "opencode/auth.json"),
];

/// Variables that move a store elsewhere (`KUBECONFIG` may list several,
/// `:` apart).
pub const VARS: [&str; 10] = [
    "GH_CONFIG_DIR",
    "GLAB_CONFIG_DIR",
    "DOCKER_CONFIG",
    "REGISTRY_AUTH_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "CLOUDSDK_CONFIG",
    "AZURE_CONFIG_DIR",
    "KUBECONFIG",
    "GNUPGHOME",
    "NPM_CONFIG_USERCONFIG",
];

/// Where the stores would be: `STORES` under `home` (and under
/// `config_home` for those under `.config`), and what `VARS` name (`var`
/// reads one). Never the root, the home or a folder that holds it: a
/// variable naming one would hide everything.
pub fn paths(
    home: Option<&Path>,
    config_home: Option<&Path>,
    var: impl Fn(&str) -> Option<String>,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for rel in STORES {
        out.extend(home.map(|h| h.join(rel)));
        if let (Some(c), Some(under)) = (config_home, rel.strip_prefix(".config/")) {
            out.push(c.join(under));
        }
    }
    for (v, default, store) in IN_FOLDERS {
        out.extend(home.map(|h| h.join(default).join(store)));
        let moved = var(v).map(PathBuf::from).filter(|d| d.is_absolute());
        out.extend(moved.map(|d| d.join(store)));
    }
    for v in VARS {
        let named = var(v).unwrap_or_default();
        out.extend(
            named
                .split(':')
                .filter(|p| Path::new(p).is_absolute())
                .map(PathBuf::from),
        );
    }
    let too_wide = |p: &Path| p.parent().is_none() || home.is_some_and(|h| h.starts_with(p));
    out.retain(|p| !too_wide(p));
    out.sort();
    out.dedup();
    out
}

/// The stores that exist on this machine now, by their real paths (a
/// store that is a link is hidden where it leads).
pub fn here() -> Vec<Secret> {
    let home = crate::fsutil::dir_var("HOME");
    let config = crate::fsutil::dir_var("XDG_CONFIG_HOME");
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut out: Vec<Secret> = paths(home.as_deref(), config.as_deref(), var)
        .into_iter()
        .filter_map(|p| {
            let real = std::fs::canonicalize(&p).ok()?;
            let m = std::fs::metadata(&real).ok()?;
            Some(if m.is_dir() {
                Secret::Dir(real)
            } else {
                Secret::File(real)
            })
        })
        .collect();
    out.sort_by(|a, b| a.path().cmp(b.path()));
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stores_are_under_the_home_the_config_home_and_where_variables_name() {
        let vars = |k: &str| match k {
            "GH_CONFIG_DIR" => Some("/srv/gh".to_string()),
            "KUBECONFIG" => Some("/k/a:/k/b:relative".to_string()),
            // A variable naming the home, or the root, hides nothing.
            "DOCKER_CONFIG" => Some("/h".to_string()),
            "GNUPGHOME" => Some("/".to_string()),
            "CODEX_HOME" => Some("/c".to_string()),
            _ => None,
        };
        let p = paths(Some(Path::new("/h")), Some(Path::new("/x/cfg")), vars);
        for want in [
            "/h/.config/gh",
            "/h/.git-credentials",
            "/h/.ssh",
            "/h/.aws",
            "/h/.cargo/credentials.toml",
            "/h/.codex/auth.json",
            "/h/.claude/.credentials.json",
            "/h/.gemini/oauth_creds.json",
            "/h/.pi/agent/auth.json",
            "/h/.local/share/opencode/auth.json",
            "/c/auth.json",
            "/x/cfg/gh",
            "/x/cfg/git/credentials",
            "/srv/gh",
            "/k/a",
            "/k/b",
        ] {
            assert!(p.contains(&PathBuf::from(want)), "{want}: {p:?}");
        }
        assert!(
            !p.iter()
                .any(|x| x == Path::new("/h") || x == Path::new("/"))
        );
        assert!(!p.iter().any(|x| x.ends_with("relative")), "{p:?}");
        // Nothing under the config home that is not under `.config`.
        assert!(!p.contains(&PathBuf::from("/x/cfg/.ssh")));
        assert!(paths(None, None, |_| None).is_empty());
    }

    #[test]
    fn a_store_the_session_may_write_its_agents_own_or_that_holds_the_project_stays() {
        let secrets = vec![
            Secret::Dir("/h/.aws".into()),
            Secret::Dir("/h/.kube".into()),
            Secret::File("/h/.netrc".into()),
            Secret::Dir("/h/.docker".into()),
        ];
        let kept = crate::confinement::hidden(
            &secrets,
            (
                &["/h/.kube".into(), "/h/.docker/buildx".into(), "/h".into()],
                &[],
            ),
            Path::new("/h/.aws/project"),
        );
        assert_eq!(kept, [&Secret::File("/h/.netrc".into())]);
        // An agent's own login, in its own folder, stays: it reads it.
        let logins = [
            Secret::File("/h/.pi/agent/auth.json".into()),
            Secret::File("/h/.codex/auth.json".into()),
        ];
        let pi = ["/h/.pi/agent".into()];
        assert_eq!(
            crate::confinement::hidden(&logins, (&pi, &pi), Path::new("/p")),
            [&Secret::File("/h/.codex/auth.json".into())]
        );
    }
}
