//! The scripted API's OpenAI Chat Completions wire (`POST
//! /v1/chat/completions`, streamed as SSE), which pi and opencode speak.
//!
//! opencode names its session in an `x-session-affinity` header: a session
//! new to the API takes the next queued script, and each main-loop request
//! (one that offers the `bash` tool) that script's next reply, retries of
//! an error included. pi names none, so there a session is its system
//! prompt and first user message (the system prompt holds the working
//! directory, which keeps parallel worktrees apart), and, as on the other
//! wires, a first main-loop request (no tool result yet) takes the next
//! script; pi's retries are off in the test home, so none is taken twice.
//! A request without tools (opencode's title generator) gets a short title
//! and never takes a script.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::thread;

use serde_json::{Value, json};

use super::api::{Reply, State, respond_json_with, send_sse};
use super::wire::next_replies;

/// The shell tool both clients offer.
const SHELL: &str = "bash";

pub(super) fn handle(req: tiny_http::Request, path: String, body: Value, st: &Mutex<State>) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    let main_loop = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == SHELL));
    let named = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("x-session-affinity"))
        .map(|h| h.value.to_string());
    let key = named.clone().unwrap_or_else(|| session_key(&messages));
    // A named session is new only when first seen (`State::take`).
    let new_session = named.is_none() && results == 0;
    let replies = next_replies(st, &path, &body, &key, new_session, main_loop);
    let mut reply = Reply::Text(
        if main_loop {
            "Done."
        } else {
            "Scripted session"
        }
        .into(),
    );
    for r in replies {
        match r {
            Reply::Stall(d) => thread::sleep(d),
            r => reply = r,
        }
    }
    let model = body["model"].as_str().unwrap_or("scripted-model");
    let call_id = format!("call_{key}_{results}");
    let (reply, headers) = reply.split_headers();
    let deltas = match reply {
        Reply::Error {
            status,
            kind,
            message,
        } => {
            return respond_json_with(
                req,
                status,
                &json!({"error": {"message": message, "type": kind, "code": kind}}),
                &headers,
            );
        }
        Reply::Bash(cmd) => tool_deltas(&call_id, SHELL, &json!({"command": cmd})),
        Reply::Tool { name, input } => tool_deltas(&call_id, &name, &input),
        Reply::Text(text) => vec![
            (json!({"role": "assistant", "content": ""}), None),
            (json!({"content": text}), None),
            (json!({}), Some("stop")),
        ],
        Reply::Stall(_) | Reply::ErrorWithHeaders { .. } => {
            unreachable!("stalls are consumed and headers split above")
        }
    };
    send_sse(req, &chunks(model, deltas))
}

/// The session a request belongs to: its system prompt and first user
/// message, which stay the same for every request of a session.
fn session_key(messages: &[Value]) -> String {
    let mut h = DefaultHasher::new();
    for m in messages.iter().take(2) {
        m.to_string().hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

fn tool_deltas(id: &str, name: &str, input: &Value) -> Vec<(Value, Option<&'static str>)> {
    vec![
        (
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        ),
        (
            json!({"tool_calls": [{"index": 0, "function": {"arguments": input.to_string()}}]}),
            None,
        ),
        (json!({}), Some("tool_calls")),
    ]
}

/// The SSE body: one chunk per delta, then the usage chunk (1,000 prompt
/// tokens of which 200 cached, 50 completion tokens of which 10 reasoning,
/// as on the other wires) and `[DONE]`.
fn chunks(model: &str, deltas: Vec<(Value, Option<&str>)>) -> String {
    let chunk = |choices: Value| {
        json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": super::now_epoch(),
            "model": model, "choices": choices})
    };
    let mut out = String::new();
    for (delta, finish) in deltas {
        let c = chunk(json!([{"index": 0, "delta": delta, "finish_reason": finish}]));
        out.push_str(&format!("data: {c}\n\n"));
    }
    let mut usage = chunk(json!([]));
    usage["usage"] = json!({"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
        "prompt_tokens_details": {"cached_tokens": 200},
        "completion_tokens_details": {"reasoning_tokens": 10}});
    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    out
}
