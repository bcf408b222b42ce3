//! The scripted API's other two wire formats: OpenAI's Responses API, which
//! Codex speaks, and Google's GenAI `streamGenerateContent`, which Gemini
//! speaks. Scripts are the same `Reply` queues as Claude's: a session's
//! first main-loop request (one that offers the shell tool and carries no
//! tool result yet) takes the next queued script; each later one the
//! script's next reply.

use std::sync::Mutex;
use std::thread;

use serde_json::{Value, json};

use super::api::{Reply, Request, State, respond_json, respond_json_with, send_sse};

pub(super) fn handle(req: tiny_http::Request, path: String, body: Value, st: &Mutex<State>) {
    if path.starts_with("/v1/models") {
        return respond_json(req, 200, &json!({"models": [], "data": []}));
    }
    if path.contains(":countTokens") {
        return respond_json(req, 200, &json!({"totalTokens": 10}));
    }
    let codex = path.starts_with("/v1/responses");
    if !codex && !path.contains(":streamGenerateContent") {
        // Gemini's helper calls (next speaker, routing) want JSON.
        return respond_json(
            req,
            200,
            &gemini_response(&[json!({"text": helper_json(&body)})]),
        );
    }
    let (key, results, shell) = if codex {
        let items = body["input"].as_array().cloned().unwrap_or_default();
        let results = items
            .iter()
            .filter(|i| {
                i["type"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("_call_output"))
            })
            .count();
        let key = body["prompt_cache_key"]
            .as_str()
            .unwrap_or("codex")
            .to_string();
        (key, results, codex_shell_tool(&body))
    } else {
        let contents = body["contents"].as_array().cloned().unwrap_or_default();
        let results = contents
            .iter()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .filter(|p| p.get("functionResponse").is_some())
            .count();
        let offers = body["tools"].to_string().contains("run_shell_command");
        (
            "gemini".to_string(),
            results,
            offers.then(|| "run_shell_command".to_string()),
        )
    };
    let main_loop = shell.is_some();
    let replies = next_replies(st, &path, &body, &key, results == 0, main_loop);
    let mut reply = Reply::Text(if main_loop { "Done." } else { "{}" }.into());
    for r in replies {
        match r {
            Reply::Stall(d) => thread::sleep(d),
            r => reply = r,
        }
    }
    let (reply, headers) = reply.split_headers();
    let shell = shell.unwrap_or_default();
    match (codex, reply) {
        (
            true,
            Reply::Error {
                status,
                kind,
                message,
            },
        ) => {
            let resets = super::now_epoch() + 3600;
            respond_json_with(
                req,
                status,
                &json!({"error": {"type": kind, "message": message, "plan_type": "pro", "resets_at": resets}}),
                &headers,
            )
        }
        (
            false,
            Reply::Error {
                status,
                kind,
                message,
            },
        ) => respond_json_with(
            req,
            status,
            &json!({"error": {"code": status, "status": kind, "message": message,
                "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                             "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel"}]}]}}),
            &headers,
        ),
        (true, Reply::Bash(cmd)) => {
            let args = if shell == "shell" {
                json!({"command": ["bash", "-lc", cmd]})
            } else if shell == "exec_command" {
                json!({"cmd": cmd})
            } else {
                json!({"command": cmd})
            };
            let item = json!({"type": "function_call", "id": "fc_1", "call_id": format!("call_{results}"),
                "name": shell, "arguments": args.to_string(), "status": "completed"});
            send_sse(req, &codex_events(vec![item]))
        }
        (true, r) => {
            let text = match r {
                Reply::Text(t) => t,
                _ => "Done.".into(),
            };
            let item = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]});
            send_sse(req, &codex_events(vec![item]))
        }
        (false, Reply::Bash(cmd)) => {
            let part = json!({"functionCall": {"name": "run_shell_command", "args": {"command": cmd, "description": "scripted command"}}});
            send_sse(req, &format!("data: {}\r\n\r\n", gemini_response(&[part])))
        }
        (false, r) => {
            let text = match r {
                Reply::Text(t) => t,
                _ => "Done.".into(),
            };
            send_sse(
                req,
                &format!(
                    "data: {}\r\n\r\n",
                    gemini_response(&[json!({"text": text})])
                ),
            )
        }
    }
}

/// The replies for this request, recorded (`State::take`): a session's
/// first main-loop request (`new_session`) takes a new script.
pub(super) fn next_replies(
    st: &Mutex<State>,
    path: &str,
    body: &Value,
    key: &str,
    new_session: bool,
    main_loop: bool,
) -> Vec<Reply> {
    let mut s = st.lock().unwrap();
    s.requests.push(Request {
        path: path.to_string(),
        session_id: Some(key.to_string()),
        main_loop,
        body: body.clone(),
    });
    if !main_loop {
        return Vec::new();
    }
    s.take(key, new_session)
}

/// Whichever shell tool this Codex build offers.
fn codex_shell_tool(body: &Value) -> Option<String> {
    let names: Vec<String> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t["name"]
                .as_str()
                .or(t["function"]["name"].as_str())
                .map(String::from)
        })
        .collect();
    ["exec_command", "shell_command", "shell"]
        .into_iter()
        .find(|n| names.iter().any(|m| m == n))
        .map(String::from)
}

fn codex_events(items: Vec<Value>) -> String {
    let usage = json!({"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 200},
        "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 10}, "total_tokens": 1050});
    let mut ev = vec![
        json!({"type": "response.created", "response": {"id": "resp_1", "object": "response", "status": "in_progress"}}),
    ];
    for (i, item) in items.into_iter().enumerate() {
        ev.push(json!({"type": "response.output_item.added", "output_index": i, "item": item}));
        if item["type"] == "message" {
            ev.push(
                json!({"type": "response.output_text.delta", "output_index": i, "content_index": 0,
                "item_id": item["id"], "delta": item["content"][0]["text"]}),
            );
        }
        ev.push(json!({"type": "response.output_item.done", "output_index": i, "item": item}));
    }
    ev.push(json!({"type": "response.completed", "response": {"id": "resp_1", "object": "response", "status": "completed", "usage": usage}}));
    ev.iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn gemini_response(parts: &[Value]) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 50, "totalTokenCount": 1060,
            "cachedContentTokenCount": 200},
        "modelVersion": "gemini-2.5-pro"})
}

/// Gemini's helper questions, answered as its own client expects.
fn helper_json(body: &Value) -> String {
    let schema = body["generationConfig"].to_string();
    if schema.contains("next_speaker") {
        json!({"reasoning": "done", "next_speaker": "user"}).to_string()
    } else if schema.contains("complexity_score") {
        json!({"complexity_reasoning": "simple", "complexity_score": 10}).to_string()
    } else if schema.contains("model_choice") {
        json!({"reasoning": "simple", "model_choice": "flash"}).to_string()
    } else {
        "{}".into()
    }
}
