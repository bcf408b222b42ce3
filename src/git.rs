//! The one way ralph runs git: in a given folder, ralph's own fixed words
//! first, then every value that came from a user, a file or git itself after
//! `--end-of-options`, so that no such value is ever read as an option
//! (`--base=--orphan`, a saved head of `--output=/path`).
//!
//! A session can write the project's `.git/config` and `.git/hooks`, and
//! git runs programs named there: `core.fsmonitor` on every `git status`
//! (which the loop runs after each session), hooks on checkouts and merges.
//! ralph's own git runs neither: it acts for the user, not for the session.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// What no repository's config may make ralph's own git run.
const HARDENED: [&str; 4] = [
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
];

/// git in `dir`.
#[derive(Debug, Clone, Copy)]
pub struct Git<'a> {
    dir: &'a Path,
    /// Run the repository's hooks (for a commit made for the user, where
    /// skipping them would be a silent `--no-verify`).
    hooks: bool,
}

pub fn at(dir: &Path) -> Git<'_> {
    Git { dir, hooks: false }
}

impl Git<'_> {
    /// The same git, with the repository's hooks run (still no fsmonitor).
    pub fn with_hooks(self) -> Self {
        Git {
            hooks: true,
            ..self
        }
    }

    fn command(&self, words: &[&str], values: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.args(if self.hooks {
            &HARDENED[..2]
        } else {
            &HARDENED[..]
        });
        c.args(words);
        // After a `--`, values are paths already, never options.
        if !values.is_empty() && words.last() != Some(&"--") {
            c.arg("--end-of-options");
        }
        c.args(values);
        c.current_dir(self.dir).stdin(Stdio::null());
        c
    }

    /// Its standard output (the end trimmed); an error with git's own
    /// message when it fails.
    pub fn run(&self, words: &[&str], values: &[&str]) -> Result<String> {
        let out = self
            .command(words, values)
            .output()
            .context("cannot run git")?;
        if !out.status.success() {
            let end: &[&str] = if values.is_empty() {
                &[]
            } else {
                &["--end-of-options"]
            };
            let shown: Vec<&str> = words.iter().chain(end).chain(values).copied().collect();
            bail!(
                "git {} failed: {}",
                shown.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    }

    /// Whether it succeeded, with its standard output and error, for the
    /// commands whose failure is an answer (a merge that stops on conflicts).
    pub fn attempt(&self, words: &[&str], values: &[&str]) -> Result<(bool, String, String)> {
        let out = self
            .command(words, values)
            .output()
            .context("cannot run git")?;
        let [o, e] = [out.stdout, out.stderr].map(|b| String::from_utf8_lossy(&b).into_owned());
        Ok((out.status.success(), o, e.trim_end().to_string()))
    }

    /// Its standard output (the end trimmed), given `input` on stdin.
    pub fn run_with_input(&self, words: &[&str], input: &[u8]) -> Result<String> {
        use std::io::Write;
        let mut child = self
            .command(words, &[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot run git")?;
        let mut stdin = child.stdin.take().context("git's stdin")?;
        let input = input.to_vec();
        let feed = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().context("cannot run git")?;
        let _ = feed.join();
        if !out.status.success() {
            bail!(
                "git {} failed: {}",
                words.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    }

    /// Paths from a `-z` listing (`diff --name-only -z`), empty on failure.
    pub fn paths(&self, words: &[&str]) -> Vec<String> {
        self.bytes(words)
            .unwrap_or_default()
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    /// Its raw standard output when it succeeds (for `-z` formats).
    pub fn bytes(&self, words: &[&str]) -> Option<Vec<u8>> {
        let out = self
            .command(words, &[])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status.success().then_some(out.stdout)
    }

    /// Did it succeed?
    pub fn ok(&self, words: &[&str], values: &[&str]) -> bool {
        self.command(words, values)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_never_options() {
        let d = tempfile::tempdir().unwrap();
        let g = at(d.path());
        g.run(&["init", "-q"], &[]).unwrap();
        let out = d.path().join("written");
        let e = g
            .run(
                &["rev-parse", "--verify", "--quiet"],
                &[&format!("--output={}", out.display())],
            )
            .unwrap_err();
        assert!(format!("{e}").contains("--end-of-options"), "{e}");
        assert!(!out.exists());
        assert!(!g.ok(&["rev-parse", "--verify", "--quiet"], &["--orphan"]));
        // After `--`, a value is a path, even one that looks like an option.
        std::fs::write(d.path().join("--force"), "x").unwrap();
        g.run(&["add", "--"], &["--force"]).unwrap();
        assert_eq!(
            g.paths(&["diff", "--cached", "--name-only", "-z"]),
            ["--force"]
        );
        let (ok, _, said) = g
            .attempt(&["rm", "--cached", "--quiet", "--"], &["--nothing"])
            .unwrap();
        assert!(!ok && said.contains("--nothing"), "{said}");
    }

    #[test]
    fn a_repositorys_config_runs_nothing_through_ralphs_git() {
        let d = tempfile::tempdir().unwrap();
        let g = at(d.path());
        g.run(&["init", "-q"], &[]).unwrap();
        let marker = d.path().join("pwned");
        let evil = format!("touch {}; false", marker.display());
        // (`git config` takes no `--end-of-options`: the value as a word.)
        g.run(&["config", "core.fsmonitor", &evil], &[]).unwrap();
        std::fs::create_dir_all(d.path().join(".git/hooks")).unwrap();
        let hook = d.path().join(".git/hooks/post-checkout");
        std::fs::write(&hook, format!("#!/bin/sh\n{evil}\n")).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        g.run(
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
            &[],
        )
        .unwrap();
        g.bytes(&["status", "--porcelain=v2", "-z"]).unwrap();
        g.run(&["checkout", "-q", "-b", "other"], &[]).unwrap();
        assert!(
            !marker.exists(),
            "ralph's git ran what the repository's config names"
        );
        // (The same config does run it for a plain git: the test tests something.)
        std::process::Command::new("git")
            .arg("status")
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(marker.exists(), "a plain `git status` runs core.fsmonitor");
    }

    #[test]
    fn output_raw_or_trimmed_and_success_as_asked() {
        let d = tempfile::tempdir().unwrap();
        let g = at(d.path());
        assert_eq!(g.bytes(&["rev-parse", "--is-inside-work-tree"]), None);
        assert!(!g.ok(&["rev-parse", "--git-dir"], &[]));
        g.run(&["init", "-q"], &[]).unwrap();
        assert_eq!(
            g.bytes(&["rev-parse", "--is-inside-work-tree"]).as_deref(),
            Some(&b"true\n"[..])
        );
        assert!(g.ok(&["rev-parse", "--git-dir"], &[]));
        // No values, no `--end-of-options`: git prints just what was asked.
        assert_eq!(g.run(&["rev-parse", "--git-dir"], &[]).unwrap(), ".git");
        assert_eq!(
            g.run(&["rev-parse", "--verify", "--quiet"], &["HEAD"]).ok(),
            None,
            "no commit yet"
        );
    }
}
