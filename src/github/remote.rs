//! Which GitHub repository a git remote's URL names: https, ssh and scp
//! forms, github.com or an Enterprise host. Pure.

use std::fmt;

/// A repository on a GitHub host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// `github.com`, or an Enterprise Server's host (no user, no port).
    pub host: String,
    pub owner: String,
    pub name: String,
}

impl fmt::Display for Repo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

impl Repo {
    /// The REST API's base for this host: github.com's, or an Enterprise
    /// Server's `https://HOST/api/v3`.
    pub fn default_api_base(&self) -> String {
        if self.host.eq_ignore_ascii_case("github.com") {
            "https://api.github.com".into()
        } else {
            format!("https://{}/api/v3", self.host)
        }
    }
}

/// The repository `url` names, or `None` for a URL that names none (a
/// local path, a path of more or fewer than two parts).
///
/// `https://[user[:secret]@]HOST[:port]/OWNER/REPO[.git][/]`,
/// `ssh://[user@]HOST[:port]/OWNER/REPO[.git]`, `[user@]HOST:OWNER/REPO[.git]`.
/// A user or secret in the URL is dropped, never kept.
pub fn parse(url: &str) -> Option<Repo> {
    let url = url.trim();
    let (host_part, path) = if let Some((scheme, rest)) = url.split_once("://") {
        if !matches!(
            scheme.to_ascii_lowercase().as_str(),
            "https" | "http" | "ssh" | "git" | "git+ssh" | "ssh+git"
        ) {
            return None;
        }
        rest.split_once('/')?
    } else {
        // scp form: no slash before the first colon.
        let (h, p) = url.split_once(':')?;
        if h.contains('/') || h.is_empty() {
            return None;
        }
        (h, p)
    };
    let host = host_part.rsplit('@').next()?;
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let mut parts = path.split('/');
    let (owner, name) = (parts.next()?, parts.next()?);
    if parts.next().is_some() || !valid_host(host) || !valid(owner) || !valid(name) {
        return None;
    }
    Some(Repo {
        host: host.to_ascii_lowercase(),
        owner: owner.to_string(),
        name: name.to_string(),
    })
}

fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
}

/// GitHub's names: letters, digits, `-`, `_`, `.`; never `.` or `..`.
fn valid(part: &str) -> bool {
    !part.is_empty()
        && part != "."
        && part != ".."
        && part.len() <= 100
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(host: &str, owner: &str, name: &str) -> Option<Repo> {
        Some(Repo {
            host: host.into(),
            owner: owner.into(),
            name: name.into(),
        })
    }

    #[test]
    fn every_form_of_a_github_url() {
        for url in [
            "https://github.com/octo/hello.git",
            "https://github.com/octo/hello",
            "https://github.com/octo/hello/",
            "http://github.com/octo/hello.git",
            "https://x-access-token:ghp_secret@github.com/octo/hello.git",
            "https://GitHub.com:443/octo/hello.git",
            "git@github.com:octo/hello.git",
            "github.com:octo/hello",
            "ssh://git@github.com/octo/hello",
            "ssh://git@github.com:22/octo/hello.git",
            "git+ssh://git@github.com/octo/hello.git",
        ] {
            assert_eq!(parse(url), r("github.com", "octo", "hello"), "{url}");
        }
        let e = parse("git@ghe.example.com:team/my.repo_1.git");
        assert_eq!(e, r("ghe.example.com", "team", "my.repo_1"));
        assert_eq!(
            e.unwrap().default_api_base(),
            "https://ghe.example.com/api/v3"
        );
        assert_eq!(
            parse("https://github.com/a/b").unwrap().default_api_base(),
            "https://api.github.com"
        );
    }

    #[test]
    fn what_names_no_repository() {
        for url in [
            "/srv/git/hello.git",
            "./hello",
            "file:///srv/hello.git",
            "https://github.com/octo",
            "https://github.com/octo/hello/extra",
            "https://github.com/../hello",
            "git@github.com:octo/he llo.git",
            "",
        ] {
            assert_eq!(parse(url), None, "{url}");
        }
        // The secret in a URL is never in what is kept.
        let p = parse("https://me:ghp_secret@github.com/octo/hello").unwrap();
        assert!(!format!("{p:?}").contains("secret"));
    }
}
