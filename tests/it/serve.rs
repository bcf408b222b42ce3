//! `ralph serve`: every loop of the machine on a web page, driven in a
//! real headless Chromium: loops running and waiting, a question answered
//! from the page, a run stopped from it; hostile content shown as text
//! only; requests without the token, or from another site or host, refused.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::Value;

use crate::answer::ASK;
use crate::support::browser::{Page, Served};
use crate::support::*;
use crate::support::{Live, Reply};

const A_WHILE: Duration = Duration::from_secs(120);
const SLEEP: &str = "python3 -c 'import time; time.sleep(120)'";

/// Each listed loop as `name: state`, in the page's order.
fn listed(page: &Page) -> Vec<String> {
    let v = page.eval(
        "JSON.stringify([...document.querySelectorAll('.loop')].map(e => e.dataset.loop + ': ' + e.querySelector('.state').textContent))",
    );
    serde_json::from_str(v.as_str().unwrap()).unwrap()
}

#[test]
fn the_page_lists_the_loops_answers_a_question_and_stops_a_run() {
    let env = one_step_project();
    // Two loops that work (the checkout's and worktree `two`'s), one that
    // asks (worktree `three`), started in turn so that each takes its own
    // scripted session.
    env.api.session([Reply::bash(SLEEP), Reply::text("Slept.")]);
    let main = Live::start(ralph_loop(&env).args(["--max-iterations", "3"]));
    main.wait_for("Bash: python3 -c", A_WHILE);
    env.api.session([Reply::bash(SLEEP), Reply::text("Slept.")]);
    let two = Live::start(ralph_loop(&env).args(["--worktree", "two", "--max-iterations", "3"]));
    two.wait_for("Bash: python3 -c", A_WHILE);
    env.api.session([Reply::bash(ASK), Reply::text("Asked.")]);
    env.api.session([
        Reply::bash(CHECK_THE_BOX),
        Reply::text("Done, with SQLite."),
    ]);
    let three = Live::start(ralph_loop(&env).args([
        "--worktree",
        "three",
        "--wait-for-answer",
        "10m",
        "--max-iterations",
        "5",
    ]));
    three.wait_for("waiting up to 10m for an answer", A_WHILE);

    let served = Served::start(&env);
    let page = Page::open(&served.url);
    page.wait_for_text("Which database should the app use?", A_WHILE);
    // The token left the address for a cookie.
    assert_eq!(page.eval("location.search"), "");
    let loops = listed(&page);
    assert_eq!(loops.len(), 3, "{loops:?}");
    assert!(loops[0] == "main: running", "the checkout first: {loops:?}");
    assert!(loops.contains(&"two: running".to_string()), "{loops:?}");
    assert!(
        loops.iter().any(|l| l.starts_with("three: asking until ")),
        "{loops:?}"
    );
    let text = page.text();
    for part in [
        "1. Postgres",
        "2. SQLite, for now",
        "0/1 steps",
        "last activity",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    page.screenshot("list");

    // The question answered from the page: the run goes on with it.
    page.click(r#".loop[data-loop="three"] button[data-act="2. SQLite, for now"]"#);
    page.wait_for_text(
        "answered three: option 2: SQLite, for now (sent by web)",
        A_WHILE,
    );
    let (code, out, err) = three.finish(A_WHILE);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("answered by web: option 2: SQLite, for now; the run goes on"),
        "{out}"
    );
    assert!(
        told(&env, 4).contains("The answer (option 2):\n\n> SQLite, for now\n"),
        "{}",
        told(&env, 4)
    );
    page.wait_for_text("complete", A_WHILE);

    // The checkout's loop on its own page: timeline, session, transcript.
    page.click(r#".loop[data-loop="main"] .name a"#);
    page.wait_for_text("Timeline", A_WHILE);
    page.wait_for_text("run started · claude", A_WHILE);
    page.wait_for_text("→ Bash: python3 -c 'import time; time.sleep(120)'", A_WHILE);
    assert!(
        page.eval("location.pathname")
            .as_str()
            .unwrap()
            .starts_with("/loop/")
    );
    page.screenshot("run");
    page.click(r#"button[data-act="Stop"]"#);
    let (code, out, err) = main.finish(A_WHILE);
    assert_eq!(code, Some(130), "{out}\n{err}");
    assert!(out.contains("ralph stop (sent by web)"), "{out}");
    page.wait_for_text("stop now (sent by web)", A_WHILE);
    page.wait_for_text("interrupted", A_WHILE);

    // Back on the list, the other worker stops after its session: asked
    // now, it ends once its session does (stopped here by the test).
    page.click("#home");
    page.wait_for_text("two", A_WHILE);
    page.click(r#".loop[data-loop="two"] button[data-act="Stop"]"#);
    let (code, out, err) = two.finish(A_WHILE);
    assert_eq!(code, Some(130), "{out}\n{err}");
    drop(page);
    let (_, out, _) = served.live.finish(Duration::from_secs(1));
    assert!(out.contains("every loop on this machine"), "{out}");
}

/// A raw request to the server, as a client that is not a browser sends
/// it: the status line and the headers, and the body.
fn raw(port: u16, request: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.to_string(), body.to_string())
}

#[test]
fn hostile_content_is_only_text_on_the_page_and_foreign_requests_are_refused() {
    let env = project();
    std::fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** <img src=x onerror=window.pwned=1> the step\n",
    )
    .unwrap();
    env.commit_all("a clone's spec");
    let hostile = "<script>window.pwned=3</script> <img src=x onerror=window.pwned=4> \
                   [click me](javascript:window.pwned=5) <a href=javascript:window.pwned=6>here</a>";
    let long = format!("{hostile} {}", "x".repeat(10 << 20));
    // A command of 100 KB; its last words a 10 MB line, which no reader
    // of ralph's holds (its result too long to read, the session counts
    // as failed); its question stays.
    env.api.session([
        Reply::bash(format!("echo '{hostile}'")),
        Reply::bash(format!("true {}", "y".repeat(100_000))),
        Reply::bash(
            "ralph waiting --question '<script>window.pwned=7</script> which?' --option '<img src=y onerror=window.pwned=8>'",
        ),
        Reply::text(long),
    ]);
    ralph_loop(&env)
        .args(["--max-iterations", "1"])
        .assert()
        .code(3);
    let served = Served::start(&env);
    let page = Page::open(&served.url);
    page.wait_for_text("<script>window.pwned=7</script> which?", A_WHILE);
    page.wait_for_text("<img src=x onerror=window.pwned=1> the step", A_WHILE);
    page.click(".loop .name a");
    page.wait_for_text("Timeline", A_WHILE);
    page.wait_for_text("<script>window.pwned=3</script>", A_WHILE);
    page.wait_for_text("→ Bash: true yyyy", A_WHILE);
    page.screenshot("hostile");
    let checks = page.eval(
        "JSON.stringify({pwned: typeof window.pwned, scripts: document.scripts.length, \
         imgs: document.querySelectorAll('img').length, \
         elsewhere: performance.getEntriesByType('resource').filter(r => !r.name.startsWith(location.origin)).length, \
         js_links: [...document.querySelectorAll('a')].filter(a => !a.getAttribute('href').startsWith('/')).length, \
         longest: Math.max(...document.getElementById('transcript').textContent.split('\\n').map(l => l.length))})",
    );
    let checks: Value = serde_json::from_str(checks.as_str().unwrap()).unwrap();
    assert_eq!(checks["pwned"], "undefined", "{checks}");
    assert_eq!(checks["scripts"], 1, "{checks}");
    assert_eq!(checks["imgs"], 0, "{checks}");
    assert_eq!(
        checks["elsewhere"], 0,
        "nothing loaded from elsewhere: {checks}"
    );
    assert_eq!(checks["js_links"], 0, "{checks}");
    assert!(checks["longest"].as_u64().unwrap() < 4000, "{checks}");

    // Requests a browser page on another site, a rebinding name, or anyone
    // without the token would send.
    let port = served.port;
    let cookie = format!("Cookie: ralph-serve-{port}={}\r\n", served.token);
    let req = |line: &str, host: &str, more: &str| {
        raw(
            port,
            &format!(
                "{line} HTTP/1.1\r\nHost: {host}\r\n{more}Connection: close\r\nContent-Length: 0\r\n\r\n"
            ),
        )
    };
    let here = format!("127.0.0.1:{port}");
    let (head, body) = req("GET /api/loops", &here, "");
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert!(
        body.contains("open the address `ralph serve` printed"),
        "{body}"
    );
    let (head, _) = req("GET /api/loops", &here, "Cookie: ralph-serve-1=nope\r\n");
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    let (head, _) = req(
        &format!("GET /api/loops?token={}", "0".repeat(32)),
        &here,
        "",
    );
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    let (head, _) = req("GET /api/loops", &format!("evil.example:{port}"), &cookie);
    assert!(head.starts_with("HTTP/1.1 421"), "{head}");
    let id = page
        .eval("location.pathname")
        .as_str()
        .unwrap()
        .trim_start_matches("/loop/")
        .to_string();
    let (head, _) = req(
        &format!("POST /api/loop/{id}/answer"),
        &here,
        &format!("{cookie}Origin: http://evil.example\r\nContent-Type: application/json\r\n"),
    );
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let (head, _) = req(
        &format!("POST /api/loop/{id}/stop"),
        &here,
        &format!("{cookie}Content-Type: application/json\r\n"),
    );
    assert!(
        head.starts_with("HTTP/1.1 403"),
        "a change without its origin: {head}"
    );
    // With all of it, the page's own requests pass, and say what they may
    // load: nothing from elsewhere.
    let (head, body) = req("GET /api/loops", &here, &cookie);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains("Content-Security-Policy: default-src 'none'; script-src 'self'"),
        "{head}"
    );
    assert!(body.contains("window.pwned=7"), "as JSON data only: {body}");
    // Nothing refused reached the loop: WAITING is still there, unanswered.
    assert!(env.project.join(".ralph/WAITING").exists());
    assert!(
        !env.ralph()
            .arg("status")
            .stdout_with(0)
            .contains("answered")
    );
    drop(page);
    served.live.finish(Duration::from_secs(1));
}

#[test]
fn from_a_runs_page_a_step_is_added_a_limit_raised_the_run_stopped_after_its_session_and_resumed() {
    let env = one_step_project();
    env.api.session([
        Reply::bash("python3 -c 'import time; time.sleep(30)'"),
        Reply::text("Slept."),
    ]);
    let run = Live::start(ralph_loop(&env).args(["--max-iterations", "1"]));
    run.wait_for("Bash: python3 -c", A_WHILE);
    let served = Served::start(&env);
    let page = Page::open(&served.url);
    page.click(r#".loop[data-loop="main"] .name a"#);
    page.wait_for_text("Raise", A_WHILE);
    page.type_into(r#"input[aria-label="by"]"#, "2");
    page.click(r#"button[data-act="Raise"]"#);
    page.wait_for_text("): raise --max-iterations by 2", A_WHILE);
    page.type_into(r#"input[aria-label="step"]"#, "Write the docs");
    page.click(r#"button[data-act="Add step"]"#);
    page.wait_for_text("Added step 2 Write the docs", A_WHILE);
    page.click(r#"button[data-act="Stop after this session"]"#);
    page.wait_for_text("asked main (pid ", A_WHILE);
    let (code, out, err) = run.finish(A_WHILE);
    assert_eq!(code, Some(130), "{out}\n{err}");
    for part in [
        "raise --max-iterations by 2 (sent by web)",
        "stop after this session, sent by web",
    ] {
        assert!(out.contains(part), "{part}: {out}");
    }
    let spec = std::fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(spec.contains("- [ ] **2** Write the docs"), "{spec}");
    // Resumed from the page: the same run goes on, in the background, and
    // its next session does both steps.
    env.api
        .session([Reply::bash(CHECK_THE_BOX), Reply::text("Both done.")]);
    page.click(r#"button[data-act="Resume"]"#);
    page.wait_for_text("resumed main (pid ", A_WHILE);
    page.wait_for_text("complete: all 2 steps done", A_WHILE);
    let s = summary(&env);
    assert_eq!(s["outcome"], "complete", "{s}");
    assert_eq!(s["resumed"], 1, "one run, resumed once: {s}");
    drop(page);
    served.live.finish(Duration::from_secs(1));
}

#[test]
fn a_parallel_runs_page_shows_its_board_and_its_workers_merges() {
    let env = steps_project(2);
    for _ in 0..2 {
        env.api
            .session([Reply::bash(DO_STEP), Reply::text("Step done.")]);
    }
    ralph_loop(&env)
        .args(["--parallel", "2", "--max-iterations", "4"])
        .stdout_with(0);
    let served = Served::start(&env);
    let page = Page::open(&served.url);
    page.click(r#".loop[data-loop="main"] .name a"#);
    page.wait_for_text("Board", A_WHILE);
    let board = page.eval(
        "JSON.stringify([...document.querySelectorAll('.board tr')].slice(1).map(r => [...r.children].slice(0, 3).map(c => c.textContent).join(' | ')))",
    );
    let mut rows: Vec<String> = serde_json::from_str(board.as_str().unwrap()).unwrap();
    rows.sort();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows[0].starts_with("**1** Step 1 | merged | w")
            && rows[1].starts_with("**2** Step 2 | merged | w"),
        "{rows:?}"
    );
    let text = page.text();
    assert!(text.contains("merged **1** Step 1 into "), "{text}");
    assert!(text.contains("complete: all 2 steps done"), "{text}");
    drop(page);
    served.live.finish(Duration::from_secs(1));
}

#[test]
fn listening_on_every_address_says_what_it_exposes_and_a_session_cannot_serve() {
    let env = project();
    let live = Live::start(env.ralph().args(["serve", "--listen", "0.0.0.0"]));
    live.wait_for("plain HTTP", Duration::from_secs(30));
    let err = live.stderr();
    assert!(
        err.contains("listening on 0.0.0.0 port ")
            && err.contains("sees every loop's questions, transcripts and folders, and can stop, answer and resume them"),
        "{err}"
    );
    let url = live
        .stdout()
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("http://"))
        .unwrap()
        .to_string();
    let port: u16 = url
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let token = url.rsplit_once("token=").unwrap().1;
    let get = |host: &str| {
        raw(
            port,
            &format!(
                "GET /api/loops?token={token} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            ),
        )
        .0
    };
    assert!(get(&format!("127.0.0.1:{port}")).starts_with("HTTP/1.1 200"));
    assert!(
        get(&format!("10.1.2.3:{port}")).starts_with("HTTP/1.1 200"),
        "an address of ours"
    );
    assert!(get(&format!("evil.example:{port}")).starts_with("HTTP/1.1 421"));
    live.finish(Duration::from_secs(1));
    // Inside a loop's session, as its sessions are marked.
    let err = env
        .ralph()
        .arg("serve")
        .env("RALPH_LOOP", "1")
        .stderr_with(2);
    assert!(
        err.contains("refused inside a loop's session (RALPH_LOOP is set)"),
        "{err}"
    );
}

#[test]
fn a_request_whose_headers_never_end_is_cut_off_and_the_server_still_answers() {
    let env = project();
    let served = Served::start(&env);
    let port = served.port;
    // Anyone who reaches the port, token or not: one header line that goes
    // on and on. The server hangs up rather than hold it all in memory.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nX-Long: ").unwrap();
    let mb = vec![b'a'; 1 << 20];
    let hung_up = (0..200).any(|_| s.write_all(&mb).is_err());
    assert!(hung_up, "the server took 200 MB of one header");
    // Headers a little too long are refused in words.
    let (head, _) = raw(
        port,
        &format!(
            "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Long: {}\r\n\r\n",
            "a".repeat(40 << 10)
        ),
    );
    assert!(head.starts_with("HTTP/1.1 431"), "{head}");
    let (head, body) = raw(
        port,
        &format!(
            "GET /api/loops?token={} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n",
            served.token
        ),
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("projects"), "{body}");
    served.live.finish(Duration::from_secs(1));
}

#[test]
fn a_page_closed_frees_its_event_stream_for_the_next() {
    let env = project();
    let served = Served::start(&env);
    let port = served.port;
    let open = || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(
            format!(
                "GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: ralph-serve-{port}={}\r\n\r\n",
                served.token
            )
            .as_bytes(),
        )
        .unwrap();
        let mut first = [0u8; 12];
        s.read_exact(&mut first).unwrap();
        (s, String::from_utf8_lossy(&first).into_owned())
    };
    // As many pages as may be open, then all closed (reloaded, say).
    let pages: Vec<_> = (0..32).map(|_| open()).collect();
    assert!(
        pages.iter().all(|(_, st)| st == "HTTP/1.1 200"),
        "{:?}",
        pages.iter().map(|p| &p.1).collect::<Vec<_>>()
    );
    let (_, full) = open();
    assert_eq!(full, "HTTP/1.1 503", "one page too many");
    drop(pages);
    // A page opened a moment later has a place: the closed ones do not
    // hold theirs until a keep-alive finds them gone.
    let start = std::time::Instant::now();
    let mut got = String::new();
    while start.elapsed() < Duration::from_secs(5) {
        got = open().1;
        if got == "HTTP/1.1 200" {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(
        got,
        "HTTP/1.1 200",
        "still full {:?} after the pages closed",
        start.elapsed()
    );
    served.live.finish(Duration::from_secs(1));
}

#[test]
fn a_cookie_planted_by_a_page_on_another_port_does_not_lock_the_page_out() {
    let env = project();
    let served = Served::start(&env);
    let port = served.port;
    // Another web server on this machine (a clone's dev server, say): its
    // page sets a cookie of the server's name for 127.0.0.1, whatever the
    // port, on longer paths than ours, so the browser sends it first.
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_port = other.local_addr().unwrap().port();
    let plant = format!(
        "<!doctype html><script>for (const p of ['/api', '/events']) \
         document.cookie = 'ralph-serve-{port}=planted; path=' + p;</script>planted"
    );
    std::thread::spawn(move || {
        for mut c in other.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = c.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{plant}",
                    plant.len()
                )
                .as_bytes(),
            );
        }
    });
    let page = Page::open(&format!("http://127.0.0.1:{other_port}/"));
    page.wait_for_text("planted", A_WHILE);
    // The printed address, opened as a user opens it (typed, not linked:
    // a link from that page would be a same-site request, refused).
    page.tab.navigate_to(&served.url).unwrap();
    // Live: the loops came over the event stream, whose requests carry
    // the planted cookie first (refused, the page said `reconnecting…`).
    page.wait_for_text("live · ", Duration::from_secs(30));
    drop(page);
    served.live.finish(Duration::from_secs(1));
}
