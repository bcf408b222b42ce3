//! The token ralph talks to GitHub with: a secret, never printed, recorded
//! or put in a process's arguments.

use std::fmt;
use std::process::{Command, Stdio};

/// A GitHub token. Its `Debug` and `Display` say only that there is one.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token from its text (trimmed); `None` for an empty one.
    pub fn new(text: &str) -> Option<Token> {
        let t = text.trim();
        (!t.is_empty()).then(|| Token(t.to_string()))
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the token hidden (for an error from
    /// a program that might echo it).
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.0, "***")
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Where a token was found, said to the user (never the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    GhToken,
    GithubToken,
    GhCli,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::GhToken => "GH_TOKEN",
            Source::GithubToken => "GITHUB_TOKEN",
            Source::GhCli => "`gh auth token`",
        }
    }
}

/// The token from the first of `GH_TOKEN`, `GITHUB_TOKEN` (`var` reads the
/// environment), else `gh`'s: pure but for `gh`, which `gh_token` runs.
pub fn find_with(
    var: impl Fn(&str) -> Option<String>,
    gh_token: impl FnOnce() -> Option<String>,
) -> Option<(Token, Source)> {
    for (name, src) in [
        ("GH_TOKEN", Source::GhToken),
        ("GITHUB_TOKEN", Source::GithubToken),
    ] {
        if let Some(t) = var(name).as_deref().and_then(Token::new) {
            return Some((t, src));
        }
    }
    gh_token()
        .as_deref()
        .and_then(Token::new)
        .map(|t| (t, Source::GhCli))
}

/// The token for GitHub at `host` (`github.com` or an Enterprise host):
/// from the environment, else from a logged-in GitHub CLI.
pub fn find(host: &str) -> Option<(Token, Source)> {
    find_with(|k| std::env::var(k).ok(), || gh_auth_token(host))
}

/// `gh auth token --hostname HOST`: the token comes on its stdout, never
/// through an argument; nothing of it is shown.
fn gh_auth_token(host: &str) -> Option<String> {
    let gh = which::which("gh").ok()?;
    let out = Command::new(gh)
        .args(["auth", "token", "--hostname", host])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    // A token is one short line; anything else is not one.
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && text.len() < 1024 && text.trim().lines().count() == 1).then_some(text)
}

/// What to do when there is no token, said once for every use.
pub const NO_TOKEN: &str = "no GitHub token: set GH_TOKEN (or GITHUB_TOKEN) to a token that may write the repository's contents and pull requests, or log in with `gh auth login`";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_never_shown() {
        let t = Token::new(" ghp_secret123\n").unwrap();
        assert_eq!(t.expose(), "ghp_secret123");
        assert_eq!(format!("{t} {t:?}"), "*** Token(***)");
        assert_eq!(t.redact("a ghp_secret123 b"), "a *** b");
        assert!(Token::new("  \n").is_none());
    }

    #[test]
    fn gh_token_comes_first_then_github_token_then_gh() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let gh = || Some("from-gh\n".to_string());
        let (t, s) = find_with(env(&[("GITHUB_TOKEN", "b"), ("GH_TOKEN", "a")]), gh).unwrap();
        assert_eq!((t.expose(), s), ("a", Source::GhToken));
        let (t, s) = find_with(env(&[("GH_TOKEN", ""), ("GITHUB_TOKEN", "b")]), gh).unwrap();
        assert_eq!((t.expose(), s), ("b", Source::GithubToken));
        let (t, s) = find_with(env(&[]), gh).unwrap();
        assert_eq!((t.expose(), s), ("from-gh", Source::GhCli));
        assert!(find_with(env(&[]), || None).is_none());
    }
}
