//! The one way ralph runs git: in a given folder, ralph's own fixed words
//! first, then every value that came from a user, a file or git itself after
//! `--end-of-options`, so that no such value is ever read as an option
//! (`--base=--orphan`, a saved head of `--output=/path`).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// git in `dir`.
#[derive(Debug, Clone, Copy)]
pub struct Git<'a> {
    dir: &'a Path,
}

pub fn at(dir: &Path) -> Git<'_> {
    Git { dir }
}

impl Git<'_> {
    fn command(&self, words: &[&str], values: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.args(words);
        if !values.is_empty() {
            c.arg("--end-of-options").args(values);
        }
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
