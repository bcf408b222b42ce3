//! A scripted Messages API on 127.0.0.1 that plays the model for the real
//! Claude Code client.
//!
//! Each `claude` session is told apart by the `session_id` Claude Code puts in
//! every request's `metadata.user_id`. The first request of a new session
//! takes the next script queued with [`Api::session`]; each main-loop request
//! (one that offers the `Bash` tool) then takes that script's next [`Reply`].
//! A session whose script has run out answers "Done." and ends its turn.
//! Side requests (titles, summaries: no `Bash` tool) get a short text.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub enum Reply {
    /// Run a command with the Bash tool; the next request carries its result.
    Bash(String),
    /// Say this and end the turn.
    Text(String),
    /// Answer with an HTTP error, e.g. 529 `overloaded_error`; this and every
    /// later request of the session (Claude Code retries some errors).
    Error {
        status: u16,
        kind: String,
        message: String,
    },
    /// Wait this long, then give the next reply of the script.
    Stall(Duration),
    /// Call any tool with this input (e.g. Bash with `run_in_background`).
    Tool { name: String, input: Value },
    /// `Error` with response headers too: a `retry-after` is obeyed by some
    /// clients before they show anything (see [`Reply::retry_after`]).
    ErrorWithHeaders {
        status: u16,
        kind: String,
        message: String,
        headers: Vec<(String, String)>,
    },
}

impl Reply {
    pub fn bash(cmd: impl Into<String>) -> Self {
        Reply::Bash(cmd.into())
    }
    pub fn text(t: impl Into<String>) -> Self {
        Reply::Text(t.into())
    }
    pub fn overloaded() -> Self {
        Reply::Error {
            status: 529,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
        }
    }
    /// What Claude Code shows when the account's usage limit is hit: a 429
    /// `rate_limit_error`.
    pub fn usage_limit(message: impl Into<String>) -> Self {
        Reply::Error {
            status: 429,
            kind: "rate_limit_error".into(),
            message: message.into(),
        }
    }
    /// This error, sent with `retry-after: <value>` (seconds or a date).
    pub fn retry_after(self, value: impl Into<String>) -> Self {
        self.with_header("retry-after", value)
    }
    /// This error, sent with one more response header.
    pub fn with_header(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (status, kind, message, mut headers) = match self {
            Reply::Error {
                status,
                kind,
                message,
            } => (status, kind, message, Vec::new()),
            Reply::ErrorWithHeaders {
                status,
                kind,
                message,
                headers,
            } => (status, kind, message, headers),
            r => panic!("only an error reply has response headers, not {r:?}"),
        };
        headers.push((name.into(), value.into()));
        Reply::ErrorWithHeaders {
            status,
            kind,
            message,
            headers,
        }
    }
    /// An error as `Error` plus its response headers (none for any other
    /// reply), so each wire answers both kinds alike.
    pub(super) fn split_headers(self) -> (Reply, Vec<(String, String)>) {
        match self {
            Reply::ErrorWithHeaders {
                status,
                kind,
                message,
                headers,
            } => (
                Reply::Error {
                    status,
                    kind,
                    message,
                },
                headers,
            ),
            r => (r, Vec::new()),
        }
    }
}

/// One request as Claude Code sent it.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub session_id: Option<String>,
    /// Offered the Bash tool: a turn of the session's main loop.
    pub main_loop: bool,
    pub body: Value,
}

impl Request {
    /// All text of the user messages, in order (prompts, slash-command
    /// expansions, tool results).
    pub fn user_text(&self) -> String {
        let mut out = String::new();
        for m in self.body["messages"].as_array().into_iter().flatten() {
            if m["role"] != "user" {
                continue;
            }
            collect_text(&m["content"], &mut out);
        }
        out
    }

    /// The system prompt: Claude's `system`, or Chat Completions' system
    /// messages.
    pub fn system_text(&self) -> String {
        let mut out = String::new();
        collect_text(&self.body["system"], &mut out);
        for m in self.body["messages"].as_array().into_iter().flatten() {
            if m["role"] == "system" {
                collect_text(&m["content"], &mut out);
            }
        }
        out
    }
}

fn collect_text(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|i| collect_text(i, out)),
        Value::Object(o) => {
            for k in ["text", "content"] {
                if let Some(x) = o.get(k) {
                    collect_text(x, out);
                }
            }
        }
        _ => {}
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) pending: VecDeque<VecDeque<Reply>>,
    pub(super) sessions: HashMap<String, VecDeque<Reply>>,
    pub(super) requests: Vec<Request>,
    pub(super) tool_ids: u64,
}

impl State {
    /// The replies for a main-loop request of session `key`: a session new
    /// to the API (or `new_session`) takes the next queued script. Stalls
    /// are not a turn of their own: what follows them goes too. An error
    /// persists, as a real outage or usage limit does: the client's own
    /// retries get it too.
    pub(super) fn take(&mut self, key: &str, new_session: bool) -> Vec<Reply> {
        if new_session || !self.sessions.contains_key(key) {
            let script = self.pending.pop_front().unwrap_or_default();
            self.sessions.insert(key.to_string(), script);
        }
        let q = self.sessions.get_mut(key).expect("inserted above");
        let mut replies = Vec::new();
        while let Some(r) = q.pop_front() {
            match r {
                Reply::Stall(_) => replies.push(r),
                Reply::Error { .. } | Reply::ErrorWithHeaders { .. } => {
                    q.push_front(r.clone());
                    replies.push(r);
                    break;
                }
                r => {
                    replies.push(r);
                    break;
                }
            }
        }
        replies
    }
}

pub struct Api {
    pub url: String,
    state: Arc<Mutex<State>>,
    server: Arc<tiny_http::Server>,
}

impl Drop for Api {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

impl Api {
    pub fn start() -> Api {
        let server = Arc::new(
            tiny_http::Server::http("127.0.0.1:0").expect("bind the scripted API on loopback"),
        );
        let port = server.server_addr().to_ip().expect("an IP listener").port();
        let state = Arc::new(Mutex::new(State::default()));
        let (srv, st) = (server.clone(), state.clone());
        thread::spawn(move || {
            for req in srv.incoming_requests() {
                let st = st.clone();
                // One thread per request: a stalled answer must not hold up
                // another session's requests.
                thread::spawn(move || handle(req, &st));
            }
        });
        Api {
            url: format!("http://127.0.0.1:{port}"),
            state,
            server,
        }
    }

    /// Queue the script of the next new session.
    pub fn session(&self, replies: impl IntoIterator<Item = Reply>) -> &Self {
        self.state
            .lock()
            .unwrap()
            .pending
            .push_back(replies.into_iter().collect());
        self
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The main-loop requests, in order.
    pub fn turns(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.main_loop)
            .collect()
    }
}

fn handle(mut req: tiny_http::Request, st: &Mutex<State>) {
    let path = req.url().to_string();
    let mut raw = String::new();
    let _ = req.as_reader().read_to_string(&mut raw);
    let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    // pi and opencode (OpenAI Chat Completions).
    if path.starts_with("/v1/chat/completions") {
        return super::chat::handle(req, path, body, st);
    }
    // Codex (the Responses API) and Gemini (GenAI REST) sessions.
    if path.starts_with("/v1/responses")
        || path.starts_with("/v1beta/")
        || path.starts_with("/v1/models")
    {
        return super::wire::handle(req, path, body, st);
    }
    if path.contains("count_tokens") {
        return respond_json(req, 200, &json!({"input_tokens": 100}));
    }
    if !path.starts_with("/v1/messages") {
        return respond_json(
            req,
            404,
            &json!({"type": "error", "error": {"type": "not_found_error", "message": path}}),
        );
    }
    let session_id = body["metadata"]["user_id"]
        .as_str()
        .and_then(|u| serde_json::from_str::<Value>(u).ok())
        .and_then(|u| u["session_id"].as_str().map(String::from));
    let main_loop = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
    let model = body["model"].as_str().unwrap_or("claude-test").to_string();

    let mut replies = Vec::new();
    let tool_id = {
        let mut s = st.lock().unwrap();
        s.requests.push(Request {
            path,
            session_id: session_id.clone(),
            main_loop,
            body,
        });
        s.tool_ids += 1;
        if main_loop {
            replies = s.take(&session_id.unwrap_or_default(), false);
        }
        format!("toolu_{:04}", s.tool_ids)
    };
    let mut reply = Reply::Text(if main_loop { "Done." } else { "Test session" }.into());
    for r in replies {
        match r {
            Reply::Stall(d) => thread::sleep(d),
            r => reply = r,
        }
    }
    let (reply, headers) = reply.split_headers();
    match reply {
        Reply::Error {
            status,
            kind,
            message,
        } => respond_json_with(
            req,
            status,
            &json!({"type": "error", "error": {"type": kind, "message": message}}),
            &headers,
        ),
        Reply::Text(text) => respond_sse(req, &model, &text_events(&text), "end_turn"),
        Reply::Bash(command) => {
            respond_sse(req, &model, &bash_events(&tool_id, &command), "tool_use")
        }
        Reply::Tool { name, input } => respond_sse(
            req,
            &model,
            &tool_events(&tool_id, &name, &input),
            "tool_use",
        ),
        Reply::Stall(_) | Reply::ErrorWithHeaders { .. } => {
            unreachable!("stalls are consumed and headers split above")
        }
    }
}

fn text_events(text: &str) -> Vec<Value> {
    vec![
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
    ]
}

fn bash_events(id: &str, command: &str) -> Vec<Value> {
    tool_events(
        id,
        "Bash",
        &json!({"command": command, "description": "scripted command"}),
    )
}

fn tool_events(id: &str, name: &str, input: &Value) -> Vec<Value> {
    let input = input.to_string();
    vec![
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input}}),
        json!({"type": "content_block_stop", "index": 0}),
    ]
}

fn respond_sse(req: tiny_http::Request, model: &str, blocks: &[Value], stop_reason: &str) {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 100, "output_tokens": 1}}})];
    events.extend_from_slice(blocks);
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 20}}));
    events.push(json!({"type": "message_stop"}));
    let mut body = String::new();
    for e in events {
        body.push_str(&format!(
            "event: {}\ndata: {e}\n\n",
            e["type"].as_str().unwrap()
        ));
    }
    send_sse(req, &body);
}

/// An SSE body, as every scripted wire format answers a model call.
pub(super) fn send_sse(req: tiny_http::Request, body: &str) {
    let header = tiny_http::Header::from_bytes("Content-Type", "text/event-stream").unwrap();
    let _ = req.respond(tiny_http::Response::from_string(body).with_header(header));
}

pub(super) fn respond_json(req: tiny_http::Request, status: u16, v: &Value) {
    respond_json_with(req, status, v, &[]);
}

/// A JSON answer with extra response headers (an error's `retry-after`).
pub(super) fn respond_json_with(
    req: tiny_http::Request,
    status: u16,
    v: &Value,
    headers: &[(String, String)],
) {
    let mut resp = tiny_http::Response::from_string(v.to_string())
        .with_status_code(status)
        .with_header(tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap());
    for (k, val) in headers {
        resp.add_header(
            tiny_http::Header::from_bytes(k.as_bytes(), val.as_bytes())
                .unwrap_or_else(|()| panic!("a bad response header {k}: {val}")),
        );
    }
    let _ = req.respond(resp);
}
