//! The server: requests through the guard, the page from the binary, the
//! loops looked at while someone looks (stat first, read only what
//! changed), news by server-sent events, actions as watch's keys do them.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use serde_json::{Value, json};
use tiny_http::{Header, Request, Response};

use super::guard::{Asked, Guard, Refused, Shown};
use super::model::{self, LoopView, Overview, ProjectView};
use super::registry::Registry;
use crate::control::{Command, Limit, StopWhen};
use crate::run::tell::Reply;
use crate::watch::act;
use crate::watch::model::Row;

/// Who sends what the page sends, as the journal and the loop's lines say.
pub const BY: &str = "web";

/// How often the loops' files are looked at while someone looks.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// A project whose files did not change is read again this often anyway
/// (a paused loop's time runs out, a loop dies).
const READ_AGAIN: Duration = Duration::from_secs(30);
/// How long the loops are looked at after the last request that wanted
/// them, with no page open.
const LOOK_AFTER: Duration = Duration::from_secs(30);
/// A comment on the event stream this often: a proxy or a phone that
/// dropped the connection is found out.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Pages open at once, each holding a connection.
const STREAMS_MAX: usize = 32;
/// The most of a request's body read (an answer, a step's title).
const BODY_MAX: u64 = 64 << 10;
/// Threads answering requests.
const HANDLERS: usize = 4;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// What every response says: nothing from elsewhere, no framing, no
/// sniffing, nothing kept.
const SECURITY_HEADERS: [(&str, &str); 5] = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
    ("X-Frame-Options", "DENY"),
];

/// What the looker shares with the requests.
#[derive(Default)]
struct Shared {
    version: u64,
    overview: Arc<String>,
    loops: HashMap<String, Row>,
    last_activity: HashMap<String, Option<String>>,
    asked: Option<Instant>,
}

#[derive(Default)]
struct Hub {
    shared: Mutex<Shared>,
    changed: Condvar,
    streams: AtomicUsize,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Someone wants the loops: look (again) now, and wait for a first look.
    fn want(&self) -> std::sync::MutexGuard<'_, Shared> {
        let mut s = self.lock();
        s.asked = Some(Instant::now());
        self.changed.notify_all();
        let t0 = Instant::now();
        while s.version == 0 && t0.elapsed() < Duration::from_secs(10) {
            s = self
                .changed
                .wait_timeout(s, Duration::from_millis(200))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        s
    }

    fn looking(&self) -> bool {
        self.streams.load(Ordering::Relaxed) > 0
            || self.lock().asked.is_some_and(|t| t.elapsed() < LOOK_AFTER)
    }
}

/// A project as last read: its rows, and the stamp of its files then.
struct Seen {
    rows: Vec<Row>,
    stamp: u64,
    at: Instant,
}

/// Serve until interrupted.
pub fn serve(bound: Bound, guard: Guard, here: Option<PathBuf>) -> Result<()> {
    let Bound {
        listener,
        server,
        back,
        ..
    } = bound;
    {
        let back = back.clone();
        std::thread::spawn(move || super::front::run(listener, back));
    }
    let server = Arc::new(server);
    let hub = Arc::new(Hub::default());
    let guard = Arc::new(guard);
    {
        let hub = hub.clone();
        let dir = crate::trust::store::lock_file(std::path::Path::new("/"))
            .parent()
            .map(std::path::Path::to_path_buf)
            .context("ralph's state folder")?;
        std::thread::spawn(move || looker(&hub, Registry::new(dir, here)));
    }
    let mut handlers = Vec::new();
    for _ in 0..HANDLERS {
        let (server, hub, guard) = (server.clone(), hub.clone(), guard.clone());
        handlers.push(std::thread::spawn(move || {
            while let Ok(req) = server.recv() {
                handle(req, &hub, &guard);
            }
        }));
    }
    while crate::procs::signals::signals_received() == 0 {
        std::thread::sleep(Duration::from_millis(200));
    }
    server.unblock();
    let _ = std::fs::remove_file(&back);
    Ok(())
}

/// Look at the loops while someone looks; publish what changed.
fn looker(hub: &Hub, mut registry: Registry) {
    let mut read: HashMap<PathBuf, Seen> = HashMap::new();
    loop {
        if !hub.looking() {
            let s = hub.lock();
            let _ = hub.changed.wait_timeout(s, LOOK_EVERY);
            continue;
        }
        registry.refresh();
        let mut projects = Vec::new();
        let mut activity = HashMap::new();
        for main in registry.projects() {
            let old = read.get(&main);
            let (stamp, _) = stamp_of(&main, old.map_or(&[][..], |r| &r.rows));
            let fresh = old.is_some_and(|r| r.stamp == stamp && r.at.elapsed() < READ_AGAIN);
            if !fresh {
                let rows = crate::watch::model::gather(&main);
                // Stamped again: reading a new run's rows names files the
                // old stamp did not look at.
                let (stamp, _) = stamp_of(&main, &rows);
                read.insert(
                    main.clone(),
                    Seen {
                        rows,
                        stamp,
                        at: Instant::now(),
                    },
                );
            }
            let r = &read[&main];
            if r.rows.is_empty() {
                continue;
            }
            let loops = r
                .rows
                .iter()
                .map(|row| {
                    let id = crate::trust::store::loop_id(&row.root);
                    let last = last_activity(row);
                    activity.insert(id.clone(), last.clone());
                    LoopView {
                        id,
                        row: row.clone(),
                        last_activity: last,
                    }
                })
                .collect();
            projects.push(ProjectView { path: main, loops });
        }
        read.retain(|k, _| projects.iter().any(|p| &p.path == k));
        let loops: HashMap<String, Row> = projects
            .iter()
            .flat_map(|p| p.loops.iter().map(|l| (l.id.clone(), l.row.clone())))
            .collect();
        let text = serde_json::to_string(&Overview { projects }).unwrap_or_default();
        {
            let mut s = hub.lock();
            if s.version == 0 || *s.overview != text {
                s.version += 1;
                s.overview = Arc::new(text);
                s.loops = loops;
                s.last_activity = activity;
                hub.changed.notify_all();
            }
        }
        std::thread::sleep(LOOK_EVERY);
    }
}

/// The length and time of what a project's loops write, hashed: changed
/// only when something the page shows may have.
fn stamp_of(main: &std::path::Path, rows: &[Row]) -> (u64, Option<SystemTime>) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut newest = None;
    let mut look = |p: PathBuf| {
        let m = std::fs::symlink_metadata(&p).ok();
        let t = m.as_ref().and_then(|m| m.modified().ok());
        (m.map(|m| m.len()), t).hash(&mut h);
        newest = newest.max(t);
    };
    look(main.join(".git/worktrees"));
    for row in rows {
        let dot = row.root.join(".ralph");
        look(crate::trust::store::lock_file(&row.root));
        for f in ["", "spec.md", "WAITING", "COMPLETE", "runs"] {
            look(dot.join(f));
        }
        if let Some(run) = model::run_of(row) {
            for f in [
                "",
                "events.jsonl",
                "state.json",
                "summary.json",
                "parallel.json",
            ] {
                look(run.path.join(f));
            }
        }
    }
    (h.finish(), newest)
}

/// When a loop last did anything: its journal, its state, its newest
/// session's stream.
fn last_activity(row: &Row) -> Option<String> {
    let run = model::run_of(row)?;
    let t = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let newest = [run.path.join("events.jsonl"), run.path.join("state.json")]
        .iter()
        .map(|p| t(p))
        .chain([row.stream.as_ref().and_then(|(_, p)| t(p))])
        .max()
        .flatten()?;
    // To the second: a stream written every instant is not news each time.
    let secs = newest.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    Some(crate::timefmt::rfc3339(
        std::time::UNIX_EPOCH + Duration::from_secs(secs),
    ))
}

fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

/// The path and query of a URL.
fn split_url(url: &str) -> (&str, HashMap<&str, &str>) {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let q = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    (path, q)
}

fn h(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a header ralph wrote")
}

fn respond(req: Request, status: u16, kind: &str, body: impl Into<Vec<u8>>, more: &[Header]) {
    let mut r = Response::from_data(body.into())
        .with_status_code(status)
        .with_header(h("Content-Type", kind));
    for (k, v) in SECURITY_HEADERS {
        r.add_header(h(k, v));
    }
    for x in more {
        r.add_header(x.clone());
    }
    // The client may have gone: nothing to tell it.
    let _ = req.respond(r);
}

fn json_response(req: Request, status: u16, v: &Value) {
    respond(req, status, "application/json", v.to_string(), &[]);
}

fn refuse(req: Request, why: &Refused) {
    respond(
        req,
        why.status(),
        "text/plain; charset=utf-8",
        format!("{why}\n"),
        &[],
    );
}

fn handle(mut req: Request, hub: &Arc<Hub>, guard: &Guard) {
    let url = req.url().to_string();
    let (path, query) = split_url(&url);
    let method = req.method().as_str().to_string();
    let asked = Asked {
        method: &method,
        query_token: query.get("token").copied(),
        host: header(&req, "Host"),
        origin: header(&req, "Origin"),
        cookie: header(&req, "Cookie"),
        fetch_site: header(&req, "Sec-Fetch-Site"),
    };
    let shown = match guard.check(&asked) {
        Ok(s) => s,
        Err(why) => return refuse(req, &why),
    };
    let page = path == "/" || (path.starts_with("/loop/") && path.len() <= 6 + 64);
    if shown == Shown::Query && method == "GET" && page {
        // The token becomes a cookie only the page's own requests carry
        // (SameSite), and leaves the address.
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            guard.cookie_name(),
            query["token"]
        );
        return respond(
            req,
            303,
            "text/plain; charset=utf-8",
            "on to the page\n",
            &[h("Set-Cookie", &cookie), h("Location", path)],
        );
    }
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method.as_str(), parts.as_slice()) {
        ("GET", [""] | ["loop", _]) => respond(req, 200, "text/html; charset=utf-8", INDEX, &[]),
        ("GET", ["app.js"]) => respond(req, 200, "text/javascript; charset=utf-8", SCRIPT, &[]),
        ("GET", ["app.css"]) => respond(req, 200, "text/css; charset=utf-8", STYLE, &[]),
        ("GET", ["api", "loops"]) => {
            let text = hub.want().overview.clone();
            respond(req, 200, "application/json", text.as_bytes(), &[]);
        }
        ("GET", ["api", "loop", id]) => match find(hub, id) {
            Some((row, last)) => {
                let v = model::run_view(LoopView {
                    id: (*id).to_string(),
                    row,
                    last_activity: last,
                });
                json_response(req, 200, &json!(v));
            }
            None => no_such_loop(req, id),
        },
        ("GET", ["api", "loop", id, "session", n]) => {
            let Some((row, _)) = find(hub, id) else {
                return no_such_loop(req, id);
            };
            match n.parse().ok().and_then(|n| model::transcript(&row, n)) {
                Some(t) => json_response(req, 200, &json!(t)),
                None => json_response(req, 404, &json!({"error": "no such session"})),
            }
        }
        ("GET", ["events"]) => stream(req, hub, &query),
        ("POST", ["api", "loop", id, action]) => {
            let Some((row, _)) = find(hub, id) else {
                return no_such_loop(req, id);
            };
            let is_json =
                header(&req, "Content-Type").is_some_and(|t| t.starts_with("application/json"));
            let mut body = String::new();
            let mut from = req.as_reader();
            let read = (&mut from).take(BODY_MAX + 1).read_to_string(&mut body);
            if !is_json || read.is_err() || body.len() as u64 > BODY_MAX {
                return json_response(
                    req,
                    400,
                    &json!({"error": "an action is a JSON object of at most 64 KiB"}),
                );
            }
            let args: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let result = act_on(&row, action, &args);
            drop(hub.want());
            match result {
                Ok(said) => json_response(req, 200, &json!({ "said": said })),
                Err(e) => json_response(req, 400, &json!({ "error": e })),
            }
        }
        _ => respond(req, 404, "text/plain; charset=utf-8", "no such page\n", &[]),
    }
}

fn no_such_loop(req: Request, id: &str) {
    let id = crate::work::question::one_line(id, 64);
    json_response(
        req,
        404,
        &json!({ "error": format!("no loop {id:?} on this machine (it may have been removed)") }),
    );
}

fn find(hub: &Hub, id: &str) -> Option<(Row, Option<String>)> {
    let s = hub.want();
    let row = s.loops.get(id)?.clone();
    Some((row, s.last_activity.get(id).cloned().flatten()))
}

/// What an action does, in watch's words; a request it cannot be, why.
fn act_on(row: &Row, action: &str, args: &Value) -> Result<String, String> {
    let a = args
        .as_object()
        .ok_or("an action's body is a JSON object")?;
    let known: &[&str] = match action {
        "stop" => &["after_session"],
        "answer" => &["text", "option"],
        "add" => &["title"],
        "raise" => &["iterations", "cost_usd", "time", "tokens"],
        "resume" => &[],
        _ => {
            return Err(format!(
                "no action {:?}",
                crate::work::question::one_line(action, 32)
            ));
        }
    };
    if let Some(k) = a.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "{action} takes no {:?}",
            crate::work::question::one_line(k, 32)
        ));
    }
    let s = |k: &str| a.get(k).and_then(Value::as_str).map(str::trim);
    let n = |k: &str| a.get(k).and_then(Value::as_u64);
    Ok(match action {
        "stop" => {
            let when = match a.get("after_session").and_then(Value::as_bool) {
                Some(true) => StopWhen::AfterSession,
                _ => StopWhen::Now,
            };
            act::stop(row, BY, when)
        }
        "answer" => {
            let reply = match (s("text").filter(|t| !t.is_empty()), n("option")) {
                (Some(_), Some(_)) => {
                    return Err("answer in words or by an option, not both".into());
                }
                (Some(t), None) => Reply::Text(t.to_string()),
                (None, Some(k)) => Reply::Option(u32::try_from(k).unwrap_or(u32::MAX)),
                (None, None) => return Err("an answer needs words or an option".into()),
            };
            act::answer(row, BY, &reply, "Resume goes on with this answer")
        }
        "add" => {
            let title = s("title")
                .filter(|t| !t.is_empty())
                .ok_or("a step needs a title")?;
            crate::control::add::step(&row.root, title)?
        }
        "raise" => {
            let cost = a
                .get("cost_usd")
                .and_then(Value::as_f64)
                .filter(|c| c.is_finite() && *c > 0.0);
            let limit = Limit::one_of(n("iterations"), cost, s("time"), n("tokens"))?;
            let Some(limit) = limit else {
                return Err(
                    "raise one of iterations, cost_usd (more than 0), time or tokens".into(),
                );
            };
            act::command(row, BY, Command::Raise(limit))
        }
        _ => act::resume(row),
    })
}

/// The event stream: the loops whenever they change, and, for a run's
/// page, its session's new transcript lines.
fn stream(req: Request, hub: &Arc<Hub>, query: &HashMap<&str, &str>) {
    if hub.streams.fetch_add(1, Ordering::SeqCst) >= STREAMS_MAX {
        hub.streams.fetch_sub(1, Ordering::SeqCst);
        return respond(
            req,
            503,
            "text/plain; charset=utf-8",
            "too many pages open\n",
            &[],
        );
    }
    let tail = query
        .get("loop")
        .and_then(|id| find(hub, id))
        .zip(query.get("session").and_then(|n| n.parse::<u32>().ok()))
        .zip(query.get("from").and_then(|n| n.parse::<u64>().ok()));
    let hub = hub.clone();
    std::thread::spawn(move || {
        let mut w = req.into_writer();
        let _ = talk(&mut *w, &hub, tail);
        hub.streams.fetch_sub(1, Ordering::SeqCst);
    });
}

type Tailed = Option<(((Row, Option<String>), u32), u64)>;

fn talk(w: &mut dyn Write, hub: &Hub, tail: Tailed) -> std::io::Result<()> {
    let mut head =
        String::from("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n");
    for (k, v) in SECURITY_HEADERS {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    w.flush()?;
    let mut follow = tail.and_then(|(((row, _), n), from)| model::Follow::new(&row, n, from));
    let (mut sent, mut quiet) = (0u64, Instant::now());
    loop {
        let news = {
            let mut s = hub.lock();
            if s.version == sent {
                s = hub
                    .changed
                    .wait_timeout(s, LOOK_EVERY)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            (s.version != sent).then(|| (s.version, s.overview.clone()))
        };
        let mut said = false;
        if let Some((v, text)) = news {
            sent = v;
            w.write_all(format!("event: loops\ndata: {text}\n\n").as_bytes())?;
            said = true;
        }
        if let Some(f) = follow.as_mut() {
            let lines = f.poll();
            if !lines.is_empty() {
                let data = json!({"n": f.n, "end": f.end, "lines": lines});
                w.write_all(format!("event: lines\ndata: {data}\n\n").as_bytes())?;
                said = true;
            }
        }
        if !said && quiet.elapsed() >= KEEP_ALIVE {
            w.write_all(b": still here\n\n")?;
            said = true;
        }
        if said {
            w.flush()?;
            quiet = Instant::now();
        }
    }
}

/// The port listened on, and the server behind it (see `front`).
pub struct Bound {
    listener: std::net::TcpListener,
    pub port: u16,
    server: tiny_http::Server,
    /// The server's socket, in a folder of ralph's state only this user
    /// may enter.
    back: PathBuf,
}

/// The server bound: on `listen`, at `port` (0: any free one).
pub fn bind(listen: IpAddr, port: u16) -> Result<Bound> {
    let listener = std::net::TcpListener::bind((listen, port))
        .with_context(|| format!("cannot listen on {listen} port {port}"))?;
    let port = listener.local_addr()?.port();
    let dir = crate::trust::store::state_dir().join("serve");
    crate::trust::store::private_dir(&dir)?;
    // Named by the port, which is ours now: one left by a server killed
    // on it is stale.
    let back = dir.join(format!("{port}.sock"));
    crate::fsutil::remove_optional(&back)?;
    let server = tiny_http::Server::http_unix(&back)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", back.display()))?;
    Ok(Bound {
        listener,
        port,
        server,
        back,
    })
}
