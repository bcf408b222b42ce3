//! A scripted GitHub on 127.0.0.1: the REST API's pull requests and issues
//! kept in memory (created, listed by head, state and labels a page at a
//! time with a `Link` header, patched), GraphQL's draft flips by `node_id`,
//! and answers scripted as refusals (401, 403, 404, 422, rate limits).
//! Threads have comments (listed `since` a time, a page at a time, with an
//! `ETag` that a matching `If-None-Match` turns into a 304), collaborators
//! have permissions, and the token has a user (`GET /user`).
//! Every request is recorded with its `Authorization` header, so a test can
//! say which token reached it.
//!
//! [`Origin`] is the git side: a local bare repository that
//! `https://github.com/OWNER/REPO.git` reaches through the test home's
//! `url.<bare>.insteadOf`, so a remote still reads as GitHub's.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

use super::TestEnv;

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct GhRequest {
    pub method: String,
    /// Path and query, as sent.
    pub url: String,
    pub authorization: Option<String>,
    pub if_none_match: Option<String>,
    pub body: Value,
    /// What it was answered.
    pub status: u16,
}

impl GhRequest {
    pub fn path(&self) -> &str {
        self.url.split('?').next().unwrap_or(&self.url)
    }
}

/// A scripted refusal: the next `times` requests whose method is `method`
/// (any, if `None`) and whose path starts with `path` get it.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub method: Option<String>,
    pub path: String,
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(String, String)>,
    pub times: usize,
}

impl Refusal {
    pub fn new(method: Option<&str>, path: &str, status: u16, message: &str) -> Refusal {
        Refusal {
            method: method.map(String::from),
            path: path.into(),
            status,
            body: json!({"message": message, "documentation_url": "https://docs.github.com/rest"}),
            headers: Vec::new(),
            times: 1,
        }
    }
    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }
    pub fn times(mut self, n: usize) -> Self {
        self.times = n;
        self
    }
    /// A primary rate limit: 403, no calls left.
    pub fn rate_limited(method: Option<&str>, path: &str) -> Refusal {
        Refusal::new(method, path, 403, "API rate limit exceeded")
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", "1893456000")
    }
}

#[derive(Default)]
struct State {
    owner: String,
    name: String,
    default_branch: String,
    /// Pull requests and issues share GitHub's numbers.
    next_number: u64,
    pulls: Vec<Value>,
    issues: Vec<Value>,
    requests: Vec<GhRequest>,
    refusals: VecDeque<Refusal>,
    /// The most items a page holds, whatever `per_page` asks.
    max_per_page: usize,
    /// Every thread's comments, each with its thread's `number`.
    comments: Vec<Value>,
    next_comment: u64,
    /// The token's user (`GET /user`), who posts what the API posts.
    me: String,
    /// Collaborators' permissions (`admin`, `write`, `read`); others: 404.
    permissions: Vec<(String, String)>,
}

pub struct GitHub {
    /// The REST base (`GITHUB_API_URL`); GraphQL is at `{url}/graphql`.
    pub url: String,
    state: Arc<Mutex<State>>,
    server: Arc<tiny_http::Server>,
}

impl Drop for GitHub {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

impl GitHub {
    /// GitHub with one repository, `owner/name`, whose default branch is
    /// `main`; any other repository is not found.
    pub fn start(owner: &str, name: &str) -> GitHub {
        let server = Arc::new(
            tiny_http::Server::http("127.0.0.1:0").expect("bind the scripted GitHub on loopback"),
        );
        let port = server.server_addr().to_ip().expect("an IP listener").port();
        let url = format!("http://127.0.0.1:{port}");
        let state = Arc::new(Mutex::new(State {
            owner: owner.into(),
            name: name.into(),
            default_branch: "main".into(),
            next_number: 1,
            max_per_page: 100,
            next_comment: 1000,
            me: "ralph-bot".into(),
            ..State::default()
        }));
        let (srv, st, base) = (server.clone(), state.clone(), url.clone());
        thread::spawn(move || {
            for req in srv.incoming_requests() {
                let (st, base) = (st.clone(), base.clone());
                thread::spawn(move || handle(req, &st, &base));
            }
        });
        GitHub { url, state, server }
    }

    /// Answer the next matching request(s) with this refusal.
    pub fn refuse(&self, r: Refusal) -> &Self {
        self.state.lock().unwrap().refusals.push_back(r);
        self
    }

    /// Pages hold at most `n` items, so a few make many pages.
    pub fn max_per_page(&self, n: usize) -> &Self {
        self.state.lock().unwrap().max_per_page = n;
        self
    }

    /// An issue (open, with these labels); its number.
    pub fn add_issue(&self, title: &str, body: &str, labels: &[&str]) -> u64 {
        let mut s = self.state.lock().unwrap();
        let n = s.next_number;
        s.next_number += 1;
        let html = format!("https://github.com/{}/{}/issues/{n}", s.owner, s.name);
        s.issues.push(json!({
            "number": n, "node_id": format!("I_{n}"), "title": title, "body": body,
            "state": "open", "html_url": html,
            "labels": labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>(),
        }));
        n
    }

    /// A pull request opened by someone else (not through the API).
    pub fn add_pull(&self, head: &str, base: &str, title: &str) -> u64 {
        let mut s = self.state.lock().unwrap();
        let body = json!({"title": title, "head": head, "base": base, "body": "", "draft": false});
        s.new_pull(&body)["number"].as_u64().unwrap()
    }

    /// Set issue (or pull request) `n`'s state, as someone on GitHub would.
    pub fn set_state(&self, n: u64, state: &str) {
        let mut s = self.state.lock().unwrap();
        let State { issues, pulls, .. } = &mut *s;
        for i in issues.iter_mut().chain(pulls.iter_mut()) {
            if i["number"] == n {
                i["state"] = json!(state);
            }
        }
    }

    /// Label issue (or pull request) `n`, as someone on GitHub would.
    pub fn label(&self, n: u64, labels: &[&str]) {
        let mut s = self.state.lock().unwrap();
        let State { issues, pulls, .. } = &mut *s;
        for i in issues.iter_mut().chain(pulls.iter_mut()) {
            if i["number"] == n {
                i["labels"] = json!(
                    labels
                        .iter()
                        .map(|l| json!({"name": l}))
                        .collect::<Vec<_>>()
                );
            }
        }
    }

    /// The token's user is `login` (default `ralph-bot`).
    pub fn token_user(&self, login: &str) -> &Self {
        self.state.lock().unwrap().me = login.into();
        self
    }

    /// `login`'s permission on the repository (`admin`, `write`, `read`).
    pub fn grant(&self, login: &str, permission: &str) -> &Self {
        self.state
            .lock()
            .unwrap()
            .permissions
            .push((login.into(), permission.into()));
        self
    }

    /// A comment on thread `n` by `login`, posted now (as on GitHub's
    /// site); its id.
    pub fn add_comment(&self, n: u64, login: &str, body: &str) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.new_comment(n, login, body)["id"].as_u64().unwrap()
    }

    /// Edit comment `id` as its author would: later than it was posted.
    pub fn edit_comment(&self, id: u64, body: &str) {
        let mut s = self.state.lock().unwrap();
        if let Some(c) = s.comments.iter_mut().find(|c| c["id"] == id) {
            let created = humantime::parse_rfc3339(c["created_at"].as_str().unwrap()).unwrap();
            c["body"] = json!(body);
            c["updated_at"] = json!(stamp(created + std::time::Duration::from_secs(1)));
        }
    }

    /// Thread `n`'s comments, oldest first.
    pub fn comments(&self, n: u64) -> Vec<Value> {
        let s = self.state.lock().unwrap();
        s.comments
            .iter()
            .filter(|c| c["number"] == n)
            .cloned()
            .collect()
    }

    pub fn requests(&self) -> Vec<GhRequest> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Every pull request, as the API would answer it.
    pub fn pulls(&self) -> Vec<Value> {
        self.state.lock().unwrap().pulls.clone()
    }

    pub fn issues(&self) -> Vec<Value> {
        self.state.lock().unwrap().issues.clone()
    }

    /// Merge pull request `n` as GitHub would: it closes, and each issue
    /// its body says `Closes #N` of closes too.
    pub fn close_pull(&self, n: u64) {
        let mut s = self.state.lock().unwrap();
        let Some(p) = s.pulls.iter_mut().find(|p| p["number"] == n) else {
            return;
        };
        p["state"] = json!("closed");
        let body = p["body"].as_str().unwrap_or_default().to_string();
        for line in body.lines() {
            let Some(n) = line.trim().strip_prefix("Closes #") else {
                continue;
            };
            if let Some(i) = s.issues.iter_mut().find(|i| num_is(i, n.trim())) {
                i["state"] = json!("closed");
            }
        }
    }
}

/// A time as GitHub writes it (`2025-01-01T10:00:00Z`).
fn stamp(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

impl State {
    fn new_comment(&mut self, n: u64, login: &str, body: &str) -> Value {
        let id = self.next_comment;
        self.next_comment += 1;
        let now = stamp(std::time::SystemTime::now());
        let kind = if self.pulls.iter().any(|p| p["number"] == n) {
            "pull"
        } else {
            "issues"
        };
        let c = json!({
            "id": id, "number": n, "body": body,
            "user": {"login": login, "type": "User"},
            "created_at": now, "updated_at": now,
            "html_url": format!("https://github.com/{}/{}/{kind}/{n}#issuecomment-{id}", self.owner, self.name),
        });
        self.comments.push(c.clone());
        c
    }

    fn repo_path(&self) -> String {
        format!("/repos/{}/{}", self.owner, self.name)
    }

    fn new_pull(&mut self, b: &Value) -> Value {
        let n = self.next_number;
        self.next_number += 1;
        let head = b["head"].as_str().unwrap_or_default();
        let head = head.split_once(':').map_or(head, |(_, br)| br);
        let p = json!({
            "number": n,
            "node_id": format!("PR_node{n}"),
            "html_url": format!("https://github.com/{}/{}/pull/{n}", self.owner, self.name),
            "state": "open",
            "draft": b["draft"].as_bool().unwrap_or(false),
            "title": b["title"],
            "body": b["body"],
            "head": {"ref": head, "label": format!("{}:{head}", self.owner)},
            "base": {"ref": b["base"]},
        });
        self.pulls.push(p.clone());
        p
    }

    fn refusal_for(&mut self, method: &str, path: &str) -> Option<Refusal> {
        let i = self.refusals.iter().position(|r| {
            r.method.as_deref().is_none_or(|m| m == method) && path.starts_with(&r.path)
        })?;
        let r = self.refusals[i].clone();
        self.refusals[i].times -= 1;
        if self.refusals[i].times == 0 {
            self.refusals.remove(i);
        }
        Some(r)
    }
}

fn query_of(url: &str) -> Vec<(String, String)> {
    let Some((_, q)) = url.split_once('?') else {
        return Vec::new();
    };
    q.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), unescape(v)))
        .collect()
}

fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(x) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(x);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

type Answer = (u16, Value, Vec<(String, String)>);

fn handle(mut req: tiny_http::Request, st: &Mutex<State>, base: &str) {
    let method = req.method().to_string();
    let url = req.url().to_string();
    let authorization = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .map(|h| h.value.to_string());
    let if_none_match = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("If-None-Match"))
        .map(|h| h.value.to_string());
    let mut raw = String::new();
    let _ = req.as_reader().read_to_string(&mut raw);
    let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    let (status, v, headers) = {
        let mut s = st.lock().unwrap();
        s.requests.push(GhRequest {
            method: method.clone(),
            url: url.clone(),
            authorization: authorization.clone(),
            if_none_match: if_none_match.clone(),
            body: body.clone(),
            status: 0,
        });
        let path = url.split('?').next().unwrap_or(&url).to_string();
        let (status, v, mut headers) = if authorization.is_none() {
            (401, json!({"message": "Requires authentication"}), vec![])
        } else if let Some(r) = s.refusal_for(&method, &path) {
            (r.status, r.body, r.headers)
        } else {
            route(&mut s, &method, &url, &path, &body, base)
        };
        // A listing's ETag is its content's; sent back unchanged, a 304.
        let (mut status, mut v) = (status, v);
        if method == "GET" && status == 200 {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            v.to_string().hash(&mut h);
            let tag = format!("\"{:x}\"", h.finish());
            if if_none_match.as_deref() == Some(tag.as_str()) {
                (status, v) = (304, Value::Null);
            }
            headers.push(("ETag".to_string(), tag));
        }
        s.requests.last_mut().unwrap().status = status;
        (status, v, headers)
    };
    let text = if status == 304 {
        String::new()
    } else {
        v.to_string()
    };
    let mut resp = tiny_http::Response::from_string(text)
        .with_status_code(status)
        .with_header(tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap());
    for (k, val) in headers {
        resp.add_header(tiny_http::Header::from_bytes(k.as_bytes(), val.as_bytes()).unwrap());
    }
    let _ = req.respond(resp);
}

fn not_found() -> Answer {
    (404, json!({"message": "Not Found"}), vec![])
}

fn route(s: &mut State, method: &str, url: &str, path: &str, body: &Value, base: &str) -> Answer {
    if path == "/graphql" && method == "POST" {
        return graphql(s, body);
    }
    if path == "/user" && method == "GET" {
        return (200, json!({"login": s.me, "type": "User"}), vec![]);
    }
    let Some(rest) = path.strip_prefix(&s.repo_path()) else {
        return not_found();
    };
    let parts: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    let q = query_of(url);
    let param = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    match (method, parts.as_slice()) {
        ("GET", [""]) => (
            200,
            json!({"full_name": format!("{}/{}", s.owner, s.name), "default_branch": s.default_branch}),
            vec![],
        ),
        ("GET", ["pulls"]) => {
            let state = param("state").unwrap_or("open".into());
            let head = param("head");
            let items: Vec<Value> = s
                .pulls
                .iter()
                .filter(|p| state == "all" || p["state"] == state.as_str())
                .filter(|p| {
                    head.as_ref()
                        .is_none_or(|h| p["head"]["label"] == h.as_str())
                })
                .cloned()
                .collect();
            page(s, items, url, base, &q)
        }
        // GitHub's bound on a pull request's text, on creation and change.
        ("POST" | "PATCH", ["pulls", ..]) if too_long(body) => (
            422,
            json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"}]}),
            vec![],
        ),
        ("POST", ["pulls"]) => create_pull(s, body),
        ("GET", ["pulls", n]) => one(&s.pulls, n).map_or_else(not_found, |p| (200, p, vec![])),
        ("PATCH", ["pulls", n]) => {
            let Some(p) = s.pulls.iter_mut().find(|p| num_is(p, n)) else {
                return not_found();
            };
            for k in ["title", "body", "base", "state"] {
                if let Some(v) = body.get(k) {
                    if k == "base" {
                        p["base"] = json!({"ref": v});
                    } else {
                        p[k] = v.clone();
                    }
                }
            }
            (200, p.clone(), vec![])
        }
        ("GET", ["issues"]) => {
            let state = param("state").unwrap_or("open".into());
            let labels: Vec<String> = param("labels")
                .map(|l| l.split(',').map(String::from).collect())
                .unwrap_or_default();
            // The issues listing has the pull requests too, as GitHub's does.
            let as_issues = s.pulls.iter().map(|p| {
                let mut i = p.clone();
                i["pull_request"] = json!({"url": p["html_url"]});
                i["labels"] = p.get("labels").cloned().unwrap_or(json!([]));
                i
            });
            let items: Vec<Value> = s
                .issues
                .iter()
                .cloned()
                .chain(as_issues)
                .filter(|i| state == "all" || i["state"] == state.as_str())
                .filter(|i| {
                    labels.iter().all(|l| {
                        i["labels"]
                            .as_array()
                            .is_some_and(|ls| ls.iter().any(|x| x["name"] == l.as_str()))
                    })
                })
                .collect();
            page(s, items, url, base, &q)
        }
        ("GET", ["issues", n]) => one(&s.issues, n).map_or_else(not_found, |i| (200, i, vec![])),
        ("PATCH", ["issues", n]) => {
            let Some(i) = s.issues.iter_mut().find(|i| num_is(i, n)) else {
                return not_found();
            };
            for k in ["state", "state_reason", "title", "body"] {
                if let Some(v) = body.get(k) {
                    i[k] = v.clone();
                }
            }
            (200, i.clone(), vec![])
        }
        ("POST", ["issues", n, "comments"]) => {
            let Ok(n) = n.parse::<u64>() else {
                return not_found();
            };
            let known = s
                .issues
                .iter()
                .chain(s.pulls.iter())
                .any(|i| i["number"] == n);
            if !known {
                return not_found();
            }
            if let Some(i) = s.issues.iter_mut().find(|i| i["number"] == n) {
                let mut made = i["comments_made"].as_array().cloned().unwrap_or_default();
                made.push(body["body"].clone());
                i["comments_made"] = json!(made);
            }
            let me = s.me.clone();
            let text = body["body"].as_str().unwrap_or_default().to_string();
            (201, s.new_comment(n, &me, &text), vec![])
        }
        ("GET", ["issues", n, "comments"]) => {
            let since = param("since").unwrap_or_default();
            let items: Vec<Value> = s
                .comments
                .iter()
                .filter(|c| num_is(c, n))
                .filter(|c| c["updated_at"].as_str().unwrap_or_default() >= since.as_str())
                .cloned()
                .collect();
            page(s, items, url, base, &q)
        }
        ("GET", ["collaborators", login, "permission"]) => {
            match s.permissions.iter().find(|(l, _)| l == login) {
                Some((l, p)) => (
                    200,
                    json!({"permission": p, "role_name": p, "user": {"login": l}}),
                    vec![],
                ),
                None => not_found(),
            }
        }
        _ => not_found(),
    }
}

/// Is `item`'s number the one a path says?
fn num_is(item: &Value, n: &str) -> bool {
    n.parse::<u64>().is_ok_and(|n| item["number"] == n)
}

fn too_long(body: &Value) -> bool {
    body["body"]
        .as_str()
        .is_some_and(|b| b.chars().count() > 65_536)
}

fn one(items: &[Value], n: &str) -> Option<Value> {
    items.iter().find(|i| num_is(i, n)).cloned()
}

fn create_pull(s: &mut State, body: &Value) -> Answer {
    let (Some(_), Some(head), Some(_)) = (
        body["title"].as_str(),
        body["head"].as_str(),
        body["base"].as_str(),
    ) else {
        return (
            422,
            json!({"message": "Validation Failed", "errors": [{"code": "missing_field"}]}),
            vec![],
        );
    };
    let branch = head.split_once(':').map_or(head, |(_, b)| b);
    if s.pulls
        .iter()
        .any(|p| p["state"] == "open" && p["head"]["ref"] == branch)
    {
        let m = format!("A pull request already exists for {}:{branch}.", s.owner);
        return (
            422,
            json!({"message": "Validation Failed", "errors": [{"message": m}]}),
            vec![],
        );
    }
    (201, s.new_pull(body), vec![])
}

/// One page of `items`, with a `Link` to the next and last when there are more.
fn page(s: &State, items: Vec<Value>, url: &str, base: &str, q: &[(String, String)]) -> Answer {
    let num = |k: &str, d: usize| {
        q.iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(d)
    };
    let per = num("per_page", 30).clamp(1, 100).min(s.max_per_page);
    let pg = num("page", 1).max(1);
    let last = items.len().div_ceil(per).max(1);
    let shown: Vec<Value> = items.into_iter().skip((pg - 1) * per).take(per).collect();
    let path = url.split('?').next().unwrap_or(url);
    let others: Vec<String> = q
        .iter()
        .filter(|(k, _)| k != "page")
        .map(|(k, v)| format!("{k}={}", ralph::github::pulls::query_escape(v)))
        .collect();
    let link_to = |p: usize| {
        let mut qs = others.clone();
        qs.push(format!("page={p}"));
        format!("<{base}{path}?{}>", qs.join("&"))
    };
    let mut headers = Vec::new();
    if pg < last {
        headers.push((
            "Link".to_string(),
            format!(
                "{}; rel=\"next\", {}; rel=\"last\"",
                link_to(pg + 1),
                link_to(last)
            ),
        ));
    }
    (200, Value::Array(shown), headers)
}

fn graphql(s: &mut State, body: &Value) -> Answer {
    let query = body["query"].as_str().unwrap_or_default();
    let id = body["variables"]["id"].as_str().unwrap_or_default();
    let draft = if query.contains("markPullRequestReadyForReview") {
        false
    } else if query.contains("convertPullRequestToDraft") {
        true
    } else {
        return (
            200,
            json!({"errors": [{"message": "the scripted GitHub knows no such query"}]}),
            vec![],
        );
    };
    let Some(p) = s.pulls.iter_mut().find(|p| p["node_id"] == id) else {
        return (
            200,
            json!({"errors": [{"type": "NOT_FOUND", "message": format!("Could not resolve to a node with the global id of '{id}'")}]}),
            vec![],
        );
    };
    p["draft"] = json!(draft);
    let field = if draft {
        "convertPullRequestToDraft"
    } else {
        "markPullRequestReadyForReview"
    };
    (
        200,
        json!({"data": {field: {"pullRequest": {"isDraft": draft}}}}),
        vec![],
    )
}

/// The git side of a scripted GitHub repository: a bare repository that
/// `https://github.com/OWNER/REPO.git` reaches through the test home's own
/// git config (`url.<bare>.insteadOf`), so no session-written config is
/// needed for it.
pub struct Origin {
    pub bare: PathBuf,
    /// The URL as a user's remote reads: GitHub's.
    pub url: String,
}

impl Origin {
    /// An empty bare repository (default branch `main`) for `owner/name`.
    pub fn new(env: &TestEnv, owner: &str, name: &str) -> Origin {
        let bare = env.tmp.path().join(format!("origin-{owner}-{name}.git"));
        std::fs::create_dir_all(&bare).unwrap();
        env.git_in(&bare, &["init", "-q", "--bare", "-b", "main"]);
        let url = format!("https://github.com/{owner}/{name}.git");
        let target = format!("url.{}.insteadOf", bare.display());
        env.git_in(&env.home, &["config", "--global", &target, &url]);
        Origin { bare, url }
    }

    /// `dir`'s `origin` is this repository, with `main` pushed to it.
    pub fn link(&self, env: &TestEnv, dir: &Path) {
        env.git_in(dir, &["remote", "add", "origin", &self.url]);
        env.git_in(dir, &["push", "-q", "-u", "origin", "main"]);
    }

    /// `git` in the bare repository.
    pub fn git(&self, env: &TestEnv, args: &[&str]) -> String {
        env.git_in(&self.bare, args)
    }

    /// Has the bare repository `branch`, and at which commit?
    pub fn head_of(&self, env: &TestEnv, branch: &str) -> Option<String> {
        let out = env
            .command("git")
            .current_dir(&self.bare)
            .args(["rev-parse", "--verify", "--quiet"])
            .arg(format!("refs/heads/{branch}"))
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}
