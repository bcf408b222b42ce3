//! The REST client: one agent, the token in a header and nowhere else,
//! GitHub's answers as typed errors that say what to fix, pages followed
//! through the `Link` header.

use std::fmt;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::token::Token;

/// One call's longest time.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// The most of an answer read (a page of 100 issues fits many times).
const MAX_BODY: u64 = 8 << 20;
/// The most pages followed for one listing.
const MAX_PAGES: usize = 50;

/// What went wrong talking to GitHub; each says what to fix. None holds
/// the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No token for the API's host (`explicit`: the host of
    /// `GITHUB_API_URL`, else the remote's).
    NoToken { host: String, explicit: bool },
    /// `GITHUB_API_URL` names no API ralph would send a token to.
    BadApiUrl { url: String },
    /// 401: the token is wrong, expired or revoked.
    Unauthorized { call: String },
    /// 403 (not a rate limit): the token may not do this.
    Forbidden { call: String, message: String },
    /// 404: no such repository or pull request, or no access to a private one.
    NotFound { call: String },
    /// 422: GitHub would not take what was sent (a PR with no new commits,
    /// one already open).
    Unprocessable { call: String, message: String },
    /// 403/429 with no calls left, or told to wait.
    RateLimited {
        call: String,
        /// Epoch seconds when the limit resets (`x-ratelimit-reset`).
        reset: Option<u64>,
        /// Seconds to wait (`retry-after`).
        retry_after: Option<u64>,
    },
    /// Any other answer.
    Status {
        call: String,
        status: u16,
        message: String,
    },
    /// No answer at all (network, TLS, timeout).
    Transport { call: String, message: String },
    /// An answer that is not what GitHub answers.
    BadAnswer { call: String, message: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoToken { host, explicit } => {
                f.write_str(&super::token::no_token(host, *explicit))
            }
            Error::BadApiUrl { url } => write!(
                f,
                "GITHUB_API_URL {url:?} is not an http or https URL without a user part (GitHub Enterprise Server: https://HOST/api/v3)"
            ),
            Error::Unauthorized { call } => write!(
                f,
                "GitHub refused the token (401) for {call}: it is wrong, expired or revoked; set GH_TOKEN (or GITHUB_TOKEN) to a valid one, or `gh auth login`"
            ),
            Error::Forbidden { call, message } => write!(
                f,
                "GitHub forbade {call} (403: {message}): the token needs write access to the repository's contents and pull requests (a fine-grained token: \"Contents\" and \"Pull requests\" read and write; a classic one: the `repo` scope), and an organisation may have to approve it"
            ),
            Error::NotFound { call } => write!(
                f,
                "GitHub found nothing at {call} (404): check the remote's URL names the repository, and that the token can see it (a private repository answers 404 to a token without access)"
            ),
            Error::Unprocessable { call, message } => {
                write!(f, "GitHub would not take {call} (422: {message})")
            }
            Error::RateLimited {
                call,
                reset,
                retry_after,
            } => {
                write!(f, "GitHub's rate limit stopped {call}: ")?;
                match (retry_after, reset) {
                    (Some(s), _) => write!(f, "retry after {s}s"),
                    (None, Some(t)) => write!(
                        f,
                        "no calls left until {}",
                        crate::timefmt::rfc3339(std::time::UNIX_EPOCH + Duration::from_secs(*t))
                    ),
                    (None, None) => f.write_str("wait a while and retry"),
                }
            }
            Error::Status {
                call,
                status,
                message,
            } => write!(f, "GitHub answered {status} to {call}: {message}"),
            Error::Transport { call, message } => {
                write!(f, "cannot reach GitHub for {call}: {message}")
            }
            Error::BadAnswer { call, message } => {
                write!(f, "GitHub's answer to {call} was not understood: {message}")
            }
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// Would the same call, later, likely work (a limit, a network fault,
    /// GitHub's own 5xx)?
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::RateLimited { .. } | Error::Transport { .. })
            || matches!(self, Error::Status { status, .. } if *status >= 500)
    }
}

/// A raw answer: its status, the headers ralph reads, its body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub link: Option<String>,
    pub remaining: Option<String>,
    pub reset: Option<String>,
    pub retry_after: Option<String>,
    /// The answer's `ETag`: sent back as `If-None-Match`, GitHub answers
    /// 304 when nothing changed (and does not count it against the limit).
    pub etag: Option<String>,
    pub body: String,
}

/// The error an answer is, if it is one: pure.
pub fn classify(call: &str, a: &Answer) -> Option<Error> {
    let call = call.to_string();
    let num = |v: &Option<String>| v.as_deref().and_then(|s| s.trim().parse::<u64>().ok());
    let message = message_of(&a.body);
    let limited = num(&a.remaining) == Some(0) || a.retry_after.is_some();
    match a.status {
        200..=299 => None,
        401 => Some(Error::Unauthorized { call }),
        403 | 429 if limited || a.status == 429 => Some(Error::RateLimited {
            call,
            reset: num(&a.reset),
            retry_after: num(&a.retry_after),
        }),
        403 => Some(Error::Forbidden { call, message }),
        404 => Some(Error::NotFound { call }),
        422 => Some(Error::Unprocessable { call, message }),
        status => Some(Error::Status {
            call,
            status,
            message,
        }),
    }
}

/// GitHub's `message`, with each of its `errors[].message` (or `code`),
/// on one line, bounded, control characters made visible.
pub fn message_of(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let mut parts: Vec<String> = Vec::new();
    if let Some(m) = v["message"].as_str() {
        parts.push(m.to_string());
    }
    for e in v["errors"].as_array().into_iter().flatten().take(5) {
        if let Some(m) = e["message"].as_str().or(e["code"].as_str()) {
            parts.push(m.to_string());
        }
    }
    let text = if parts.is_empty() {
        body.trim().to_string()
    } else {
        parts.join("; ")
    };
    let mut shown = crate::output::visible_line(&text);
    if shown.chars().count() > 300 {
        shown = shown.chars().take(300).collect::<String>() + "…";
    }
    shown
}

/// The `rel="next"` URL of a `Link` header: pure.
pub fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"");
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| url.to_string())
    })
}

/// The GraphQL endpoint for REST base `rest`: `GITHUB_GRAPHQL_URL`'s job
/// when it is set; github.com's, an Enterprise Server's `/api/graphql`,
/// else `REST/graphql`. Pure.
pub fn graphql_url_for(rest: &str) -> String {
    let rest = rest.trim_end_matches('/');
    if rest == "https://api.github.com" {
        return "https://api.github.com/graphql".into();
    }
    match rest.strip_suffix("/api/v3") {
        Some(host) => format!("{host}/api/graphql"),
        None => format!("{rest}/graphql"),
    }
}

/// A GitHub REST (and GraphQL) client for one API base.
#[derive(Clone)]
pub struct Client {
    base: String,
    graphql: String,
    token: Token,
    agent: ureq::Agent,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("token", &self.token)
            .finish()
    }
}

impl Client {
    /// A client for REST base `base` (no trailing slash needed).
    pub fn new(base: &str, graphql: &str, token: Token) -> Client {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .http_status_as_error(false)
            .user_agent(concat!("ralph/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Client {
            base: base.trim_end_matches('/').to_string(),
            graphql: graphql.to_string(),
            token,
            agent,
        }
    }

    /// A client as the environment says: `GITHUB_API_URL` (else
    /// `default_base`, github.com's or the remote's Enterprise host's),
    /// `GITHUB_GRAPHQL_URL`, and the token for the API's host (see
    /// [`super::token::vars_for`]: the remote's URL alone never earns a
    /// host github.com's token).
    pub fn from_env(default_base: &str, host: &str) -> Result<Client, Error> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let explicit = var("GITHUB_API_URL");
        let base = explicit.clone().unwrap_or_else(|| default_base.to_string());
        let graphql = var("GITHUB_GRAPHQL_URL").unwrap_or_else(|| graphql_url_for(&base));
        let api_host = match &explicit {
            Some(url) => place(url).map(|p| p.host).ok_or_else(|| Error::BadApiUrl {
                url: crate::output::visible_line(url),
            })?,
            None => host.to_string(),
        };
        let (token, _) =
            super::token::find(&api_host, explicit.is_some()).ok_or(Error::NoToken {
                host: api_host,
                explicit: explicit.is_some(),
            })?;
        Ok(Client::new(&base, &graphql, token))
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// One call: `method` on `url` (absolute, or a path under the base),
    /// with a JSON body or none; the answer, or the error it is.
    pub fn call(&self, method: &str, url: &str, body: Option<&Value>) -> Result<Answer, Error> {
        self.request(method, url, body, None)
    }

    /// A conditional GET: `None` when GitHub answers 304 to `etag` (what
    /// was read before has not changed), else the answer, its own `ETag`
    /// in it.
    pub fn get_if_changed(&self, url: &str, etag: Option<&str>) -> Result<Option<Answer>, Error> {
        match self.request("GET", url, None, etag) {
            Err(Error::Status { status: 304, .. }) if etag.is_some() => Ok(None),
            r => r.map(Some),
        }
    }

    /// One request, `If-None-Match: etag` with a GET when given.
    fn request(
        &self,
        method: &str,
        url: &str,
        body: Option<&Value>,
        etag: Option<&str>,
    ) -> Result<Answer, Error> {
        let full = if url.starts_with("http://") || url.starts_with("https://") {
            url.to_string()
        } else {
            format!("{}{url}", self.base)
        };
        let call = format!("{method} {}", shown_path(&full, &self.base));
        // The token goes to the API's own place only (a `Link` from
        // elsewhere is not followed with it).
        if full != self.graphql && !under_base(&full, &self.base) {
            return Err(Error::BadAnswer {
                call,
                message: "a link away from the API's base".into(),
            });
        }
        let resp = self
            .send(method, &full, body, etag)
            .map_err(|e| Error::Transport {
                call: call.clone(),
                message: self.token.redact(&e.to_string()),
            })?;
        let answer = read_answer(resp, &call)?;
        match classify(&call, &answer) {
            Some(e) => Err(e),
            None => Ok(answer),
        }
    }

    /// Send one request with the token and GitHub's headers.
    fn send(
        &self,
        method: &str,
        url: &str,
        body: Option<&Value>,
        etag: Option<&str>,
    ) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
        let auth = format!("Bearer {}", self.token.expose());
        if method == "GET" {
            let mut req = self
                .agent
                .get(url)
                .header("Authorization", &auth)
                .header("Accept", "application/vnd.github+json")
                .header("X-GitHub-Api-Version", "2022-11-28");
            if let Some(tag) = etag {
                req = req.header("If-None-Match", tag);
            }
            return req.call();
        }
        let text = body.map(Value::to_string).unwrap_or_default();
        let req = match method {
            "POST" => self.agent.post(url),
            "PATCH" => self.agent.patch(url),
            "PUT" => self.agent.put(url),
            _ => self.agent.delete(url).force_send_body(),
        };
        req.header("Authorization", &auth)
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28")
            .header("Content-Type", "application/json")
            .send(text.as_str())
    }

    /// One call whose answer is JSON of type `T`.
    pub fn json<T: DeserializeOwned>(
        &self,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<T, Error> {
        let a = self.call(method, url, body)?;
        parse(method, url, &a.body)
    }

    /// Every item of a listing, page after page (`Link: rel="next"`), at
    /// most `MAX_PAGES` pages.
    pub fn pages<T: DeserializeOwned>(&self, path: &str) -> Result<Vec<T>, Error> {
        let mut out = Vec::new();
        let mut next = Some(path.to_string());
        let mut pages = 0;
        while let Some(url) = next.take() {
            let a = self.call("GET", &url, None)?;
            out.extend(parse::<Vec<T>>("GET", &url, &a.body)?);
            pages += 1;
            if pages < MAX_PAGES {
                next = a.link.as_deref().and_then(next_link);
            }
        }
        Ok(out)
    }

    /// A GraphQL query or mutation; its `data`, or its first error.
    pub fn graphql(&self, query: &str, variables: Value) -> Result<Value, Error> {
        let body = serde_json::json!({"query": query, "variables": variables});
        let graphql = self.graphql.clone();
        let mut v: Value = self.json("POST", &graphql, Some(&body))?;
        if let Some(e) = v["errors"].as_array().and_then(|e| e.first()) {
            return Err(Error::Unprocessable {
                call: "POST graphql".into(),
                message: message_of(&e.to_string()),
            });
        }
        Ok(v["data"].take())
    }
}

/// Where a URL sends a request: scheme, host and port (the scheme's own
/// when none is written), lower-cased, and its path.
#[derive(Debug, PartialEq, Eq)]
struct Place {
    scheme: String,
    host: String,
    port: u16,
    path: String,
}

/// The place of an `http`/`https` URL with no user in it: pure.
fn place(url: &str) -> Option<Place> {
    let uri: ureq::http::Uri = url.trim().parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    // A user part hides the real host behind one that reads as the API's.
    if authority.as_str().contains('@') {
        return None;
    }
    let port = match (authority.port_u16(), scheme.as_str()) {
        (Some(p), "http" | "https") => p,
        (None, "https") => 443,
        (None, "http") => 80,
        _ => return None,
    };
    Some(Place {
        scheme,
        host: authority.host().to_ascii_lowercase(),
        port,
        path: uri.path().to_string(),
    })
}

/// May the token go to `url`, the API being at `base`? Only to the base's
/// own scheme, host and port, at or under its path at a `/` boundary, by
/// a path with no `.` or `..` step (plain or percent-encoded) nor an
/// encoded or backward slash: pure.
pub fn under_base(url: &str, base: &str) -> bool {
    let (Some(u), Some(b)) = (place(url), place(base)) else {
        return false;
    };
    let lower = u.path.to_ascii_lowercase();
    let sly = ["%2e", "%2f", "%5c", "\\"]
        .iter()
        .any(|s| lower.contains(s))
        || lower.split('/').any(|seg| seg == "." || seg == "..");
    let root = b.path.trim_end_matches('/');
    let beneath = u.path == root
        || u.path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'));
    (u.scheme, u.host, u.port) == (b.scheme, b.host, b.port) && !sly && beneath
}

fn parse<T: DeserializeOwned>(method: &str, url: &str, body: &str) -> Result<T, Error> {
    serde_json::from_str(body).map_err(|e| Error::BadAnswer {
        call: format!("{method} {url}"),
        message: e.to_string(),
    })
}

/// A URL as said in a message: its path under the base (else all of it),
/// no query.
fn shown_path(full: &str, base: &str) -> String {
    let p = match full.strip_prefix(base) {
        Some(p) if under_base(full, base) => p,
        _ => full,
    };
    let p = p.split('?').next().unwrap_or(p);
    crate::output::visible_line(p)
}

/// The status, the headers that matter, and the body (bounded) of an answer.
fn read_answer(mut resp: ureq::http::Response<ureq::Body>, call: &str) -> Result<Answer, Error> {
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    let mut answer = Answer {
        status: resp.status().as_u16(),
        link: header("link"),
        remaining: header("x-ratelimit-remaining"),
        reset: header("x-ratelimit-reset"),
        retry_after: header("retry-after"),
        etag: header("etag"),
        body: String::new(),
    };
    answer.body = resp
        .body_mut()
        .with_config()
        .limit(MAX_BODY)
        .read_to_string()
        .map_err(|e| Error::Transport {
            call: call.to_string(),
            message: e.to_string(),
        })?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)], body: &str) -> Answer {
        let h = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        };
        Answer {
            status,
            link: h("link"),
            remaining: h("x-ratelimit-remaining"),
            reset: h("x-ratelimit-reset"),
            retry_after: h("retry-after"),
            etag: h("etag"),
            body: body.into(),
        }
    }

    #[test]
    fn each_refusal_says_what_to_fix() {
        let c = "POST /repos/o/r/pulls";
        let e = |s, h: &[(&str, &str)], b| classify(c, &answer(s, h, b)).unwrap().to_string();
        assert!(classify(c, &answer(201, &[], "{}")).is_none());
        assert!(e(401, &[], r#"{"message":"Bad credentials"}"#).contains("GH_TOKEN"));
        let f = e(
            403,
            &[],
            r#"{"message":"Resource not accessible by integration"}"#,
        );
        assert!(
            f.contains("Resource not accessible") && f.contains("Pull requests"),
            "{f}"
        );
        assert!(e(404, &[], "{}").contains("private repository"));
        let u = e(
            422,
            &[],
            r#"{"message":"Validation Failed","errors":[{"message":"No commits between main and ralph/x"}]}"#,
        );
        assert!(
            u.ends_with("(422: Validation Failed; No commits between main and ralph/x)"),
            "{u}"
        );
        let r = e(
            403,
            &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "0")],
            "{}",
        );
        assert!(
            r.contains("no calls left until 1970-01-01T00:00:00Z"),
            "{r}"
        );
        assert!(e(429, &[("retry-after", "60")], "{}").contains("retry after 60s"));
        assert!(e(403, &[("retry-after", "5")], "{}").contains("retry after 5s"));
        assert!(e(502, &[], "bad gateway\x1b[31m").contains("502"));
        assert!(!e(502, &[], "x\x1b[31m").contains('\x1b'));
        let limited = classify(c, &answer(429, &[], "{}")).unwrap();
        assert!(limited.is_transient());
        assert!(!classify(c, &answer(401, &[], "{}")).unwrap().is_transient());
    }

    #[test]
    fn the_next_page_is_the_link_marked_next() {
        let l = r#"<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=5>; rel="last""#;
        assert_eq!(
            next_link(l).as_deref(),
            Some("https://api.github.com/repositories/1/issues?page=2")
        );
        let last =
            r#"<https://x/issues?page=1>; rel="first", <https://x/issues?page=4>; rel="prev""#;
        assert_eq!(next_link(last), None);
        assert_eq!(next_link(""), None);
    }

    #[test]
    fn graphql_beside_rest() {
        assert_eq!(
            graphql_url_for("https://api.github.com/"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            graphql_url_for("https://ghe.example.com/api/v3"),
            "https://ghe.example.com/api/graphql"
        );
        assert_eq!(
            graphql_url_for("http://127.0.0.1:9"),
            "http://127.0.0.1:9/graphql"
        );
    }

    #[test]
    fn the_token_goes_only_under_the_apis_base() {
        // The probe's: a base as text, another host in fact.
        let local = "http://127.0.0.1:18766";
        assert!(under_base(
            "http://127.0.0.1:18766/repos/o/r/pulls?page=2",
            local
        ));
        assert!(!under_base(
            "http://127.0.0.1:18766@localhost:18767/steal",
            local
        ));
        assert!(!under_base("http://127.0.0.1:187661/x", local));
        assert!(!under_base("http://127.0.0.1/x", local));
        let gh = "https://api.github.com";
        for ok in [
            "https://api.github.com/repos/o/r/pulls?page=2",
            "https://API.github.com:443/repositories/1/issues",
            "https://api.github.com",
        ] {
            assert!(under_base(ok, gh), "{ok}");
        }
        for bad in [
            "https://api.github.com.evil.com/",
            "https://api.github.com@evil/",
            "https://api.github.com:x@evil.com/",
            "https://user@api.github.com/repos",
            "https://api.github.com:8443/repos",
            "http://api.github.com/repos",
            "https://evil.com/?https://api.github.com",
            "https://api.github.com/repos/../../x",
            "https://api.github.com/repos/%2e%2e/x",
            "https://api.github.com/repos/%2E./x",
            "ftp://api.github.com/",
            "not a url",
        ] {
            assert!(!under_base(bad, gh), "{bad}");
        }
        // A relative `Link` glued to the base.
        assert!(!under_base(&format!("{gh}@evil.com/x"), gh));
        assert!(!under_base(&format!("{gh}.evil.com/x"), gh));
        // GITHUB_API_URL must be one the token could go to.
        assert!(place("https://user@ghe.corp/api/v3").is_none());
        assert_eq!(place("https://GHE.corp/api/v3").unwrap().host, "ghe.corp");
        let e = Error::BadApiUrl {
            url: "ftp://x".into(),
        }
        .to_string();
        assert!(
            e.starts_with("GITHUB_API_URL \"ftp://x\" is not an http or https URL"),
            "{e}"
        );
        // An Enterprise base's path, at a `/` boundary.
        let ghe = "https://ghe.corp/api/v3";
        assert!(under_base("https://ghe.corp/api/v3/repos/o/r", ghe));
        assert!(under_base("https://ghe.corp/api/v3", ghe));
        assert!(!under_base("https://ghe.corp/api/v30/repos", ghe));
        assert!(!under_base("https://ghe.corp/api/v3/../../login", ghe));
        assert!(!under_base("https://ghe.corp/login", ghe));
    }

    #[test]
    fn a_client_shows_no_token() {
        let c = Client::new("http://127.0.0.1:9", "x", Token::new("ghp_s3cret").unwrap());
        assert!(!format!("{c:?}").contains("s3cret"));
    }
}
