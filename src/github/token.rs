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

/// Every variable a GitHub token may be in: ralph reads them itself and
/// withholds them from each process it starts on a session's behalf (the
/// agent, the reviewer, the gate, the hooks, a parallel run's workers), so
/// the model never holds a token that could push or open pull requests.
/// ralph takes them out of its own environment as it starts
/// (`crate::secrets`): this keeps them from a process even where one was set
/// again.
pub const ENV_VARS: [&str; 4] = crate::secrets::TOKEN_VARS;

/// `cmd` without any of [`ENV_VARS`] in its environment.
pub fn withhold(cmd: &mut Command) -> &mut Command {
    for name in ENV_VARS {
        cmd.env_remove(name);
    }
    cmd
}

/// Where a token was found, said to the user (never the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One of [`ENV_VARS`].
    Var(&'static str),
    GhCli,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Var(name) => name,
            Source::GhCli => "`gh auth token`",
        }
    }
}

/// Is `host` github.com's (its API's host included)?
pub fn is_dotcom(host: &str) -> bool {
    host.eq_ignore_ascii_case("github.com") || host.eq_ignore_ascii_case("api.github.com")
}

/// The variables whose token may go to the API at `host`, first first, as
/// `gh` reads them: `GH_TOKEN`/`GITHUB_TOKEN` are github.com's, any other
/// host needs `GH_ENTERPRISE_TOKEN`/`GITHUB_ENTERPRISE_TOKEN`, unless the
/// user named that host in `GITHUB_API_URL` (`explicit`). A host that only
/// a remote's URL names (which a session can rewrite in `.git/config`)
/// never gets github.com's token. Pure.
pub fn vars_for(host: &str, explicit: bool) -> &'static [&'static str] {
    if is_dotcom(host) {
        &ENV_VARS[..2]
    } else if explicit {
        &ENV_VARS[..]
    } else {
        &ENV_VARS[2..]
    }
}

/// The token from the first of `names` that is set (`var` reads the
/// environment), else `gh`'s: pure but for `gh`, which `gh_token` runs.
pub fn find_with(
    names: &[&'static str],
    var: impl Fn(&str) -> Option<String>,
    gh_token: impl FnOnce() -> Option<String>,
) -> Option<(Token, Source)> {
    for name in names {
        if let Some(t) = var(name).as_deref().and_then(Token::new) {
            return Some((t, Source::Var(name)));
        }
    }
    gh_token()
        .as_deref()
        .and_then(Token::new)
        .map(|t| (t, Source::GhCli))
}

/// The token for the API at `host` (`github.com`, an Enterprise host, or
/// the host of `GITHUB_API_URL` when `explicit`): from the environment as
/// [`vars_for`] allows, else from a GitHub CLI logged in to that host.
pub fn find(host: &str, explicit: bool) -> Option<(Token, Source)> {
    let gh_host = if is_dotcom(host) { "github.com" } else { host };
    find_with(vars_for(host, explicit), crate::secrets::var, || {
        gh_auth_token(gh_host)
    })
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

/// What to do when there is no token for the API at `host` (`explicit`:
/// named by `GITHUB_API_URL`).
pub fn no_token(host: &str, explicit: bool) -> String {
    const NEEDS: &str = "a token that may write the repository's contents and pull requests";
    let host = crate::output::visible_line(host);
    if is_dotcom(&host) {
        format!(
            "no GitHub token: set GH_TOKEN (or GITHUB_TOKEN) to {NEEDS}, or log in with `gh auth login`"
        )
    } else if explicit {
        format!(
            "no GitHub token: set GH_TOKEN (or GITHUB_TOKEN, GH_ENTERPRISE_TOKEN, GITHUB_ENTERPRISE_TOKEN) to {NEEDS} on {host} (GITHUB_API_URL's host), or log in with `gh auth login --hostname {host}`"
        )
    } else {
        format!(
            "no GitHub token for {host}: GH_TOKEN and GITHUB_TOKEN go only to github.com (or to the host of GITHUB_API_URL when you set it), never to a host that only the remote's URL names; set GH_ENTERPRISE_TOKEN (or GITHUB_ENTERPRISE_TOKEN) to {NEEDS} on {host}, log in with `gh auth login --hostname {host}`, or set GITHUB_API_URL=https://{host}/api/v3 if that GitHub Enterprise Server is yours"
        )
    }
}

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

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn gh_token_comes_first_then_github_token_then_gh() {
        let gh = || Some("from-gh\n".to_string());
        let dotcom = vars_for("github.com", false);
        let (t, s) =
            find_with(dotcom, env(&[("GITHUB_TOKEN", "b"), ("GH_TOKEN", "a")]), gh).unwrap();
        assert_eq!((t.expose(), s), ("a", Source::Var("GH_TOKEN")));
        let (t, s) =
            find_with(dotcom, env(&[("GH_TOKEN", ""), ("GITHUB_TOKEN", "b")]), gh).unwrap();
        assert_eq!((t.expose(), s), ("b", Source::Var("GITHUB_TOKEN")));
        let (t, s) = find_with(dotcom, env(&[]), gh).unwrap();
        assert_eq!((t.expose(), s), ("from-gh", Source::GhCli));
        assert!(find_with(dotcom, env(&[]), || None).is_none());
    }

    #[test]
    fn github_coms_token_goes_to_github_com_or_where_the_user_said() {
        let all: &[(&str, &str)] = &[
            ("GH_TOKEN", "dotcom"),
            ("GITHUB_TOKEN", "dotcom2"),
            ("GH_ENTERPRISE_TOKEN", "ghe"),
        ];
        fn chosen(
            host: &str,
            explicit: bool,
            pairs: &[(&str, &str)],
        ) -> Option<(String, &'static str)> {
            find_with(vars_for(host, explicit), env(pairs), || None)
                .map(|(t, s)| (t.expose().to_string(), s.name()))
        }
        // github.com, by the remote or by GITHUB_API_URL: GH_TOKEN.
        for (h, e) in [
            ("github.com", false),
            ("GitHub.com", false),
            ("api.github.com", true),
        ] {
            assert_eq!(
                chosen(h, e, all),
                Some(("dotcom".into(), "GH_TOKEN")),
                "{h}"
            );
        }
        // A host only the remote's URL names: never github.com's token.
        for h in [
            "localhost",
            "evil.example",
            "github.com.evil.example",
            "ghe.corp",
        ] {
            assert_eq!(
                chosen(h, false, all),
                Some(("ghe".into(), "GH_ENTERPRISE_TOKEN")),
                "{h}"
            );
            assert_eq!(
                chosen(h, false, &[("GH_TOKEN", "x"), ("GITHUB_TOKEN", "y")]),
                None,
                "{h}"
            );
        }
        assert_eq!(
            chosen("ghe.corp", false, &[("GITHUB_ENTERPRISE_TOKEN", "e2")]),
            Some(("e2".into(), "GITHUB_ENTERPRISE_TOKEN"))
        );
        // github.com never gets an Enterprise token.
        assert_eq!(
            chosen("github.com", false, &[("GH_ENTERPRISE_TOKEN", "e")]),
            None
        );
        // The host the user named in GITHUB_API_URL: GH_TOKEN first, as in
        // GitHub Actions on an Enterprise Server.
        assert_eq!(
            chosen("127.0.0.1", true, all),
            Some(("dotcom".into(), "GH_TOKEN"))
        );
        assert_eq!(
            chosen("ghe.corp", true, &[("GH_ENTERPRISE_TOKEN", "e")]),
            Some(("e".into(), "GH_ENTERPRISE_TOKEN"))
        );
    }

    #[test]
    fn no_token_says_which_variable_fits_the_host() {
        assert!(
            no_token("github.com", false)
                .starts_with("no GitHub token: set GH_TOKEN (or GITHUB_TOKEN)")
        );
        let e = no_token("ghe.corp", false);
        assert!(
            e.starts_with(
                "no GitHub token for ghe.corp: GH_TOKEN and GITHUB_TOKEN go only to github.com"
            ),
            "{e}"
        );
        assert!(
            e.contains("set GH_ENTERPRISE_TOKEN (or GITHUB_ENTERPRISE_TOKEN)")
                && e.contains("gh auth login --hostname ghe.corp")
                && e.contains("GITHUB_API_URL=https://ghe.corp/api/v3"),
            "{e}"
        );
        assert!(no_token("127.0.0.1", true).contains("gh auth login --hostname 127.0.0.1"));
    }

    #[test]
    fn withheld_variables_are_removed_even_when_inherited() {
        let mut c = Command::new("true");
        c.env("GH_TOKEN", "x");
        withhold(&mut c);
        let removed: Vec<_> = c
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        for name in ENV_VARS {
            assert!(removed.contains(&name.to_string()), "{name}: {removed:?}");
        }
    }
}
