//! `ralph watch` in a real terminal (tmux): three loops at once (the
//! checkout and two worktrees), rows that follow their sessions, a loop
//! stopped and one resumed from the dashboard, and the terminal given back
//! whole however it ends. The sessions are stand-ins that wait for the test
//! to release each step, so what the screen shows is known.

use std::fs;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::support::tmux::Tmux;
use crate::support::*;

/// A stand-in session: says where it works, waits until the test releases
/// it (`release-<folder>`, used up), then does the first open step (and
/// `ralph complete` after the last one).
fn held_stand_in(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.tmp.path().display().to_string();
    stand_in(
        env,
        "held-claude",
        &format!(
            r#"echo '{{"type":"system","subtype":"init","session_id":"s","model":"m"}}'
name=$(basename "$PWD")
echo '{{"type":"assistant","message":{{"content":[{{"type":"text","text":"working in '"$name"'"}}]}}}}'
while ! rm "{dir}/release-$name" 2>/dev/null; do sleep 0.1; done
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md && git commit -qam step
grep -q -e '- \[ \]' .ralph/spec.md || ralph complete -m done >/dev/null 2>&1
echo '{RESULT}'"#
        ),
    )
}

fn release(env: &TestEnv, name: &str) {
    fs::write(env.tmp.path().join(format!("release-{name}")), "").unwrap();
}

fn start_loop(env: &TestEnv, claude: &Path, worktree: Option<&str>, extra: &[&str]) -> Child {
    let mut r = env
        .ralph()
        .arg("loop")
        .arg("--claude")
        .arg(claude)
        .args(extra);
    if let Some(w) = worktree {
        r = r.args(["--worktree", w]);
    }
    r.spawn()
}

/// Release a loop's steps one by one until it ends; its exit code.
fn finish(env: &TestEnv, child: &mut Child, name: &str) -> i32 {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code().unwrap_or(-1);
        }
        if !env.tmp.path().join(format!("release-{name}")).exists() {
            release(env, name);
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{name} did not end");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Processes working in `dir` (their current folder inside it).
fn working_in(dir: &Path) -> Vec<String> {
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| fs::read_link(e.path().join("cwd")).is_ok_and(|c| c.starts_with(dir)))
        .map(|e| {
            fs::read_to_string(e.path().join("cmdline"))
                .unwrap_or_default()
                .replace('\0', " ")
        })
        .collect()
}

/// The screen line of loop `name`.
fn row<'a>(screen: &'a str, name: &str) -> &'a str {
    screen
        .lines()
        .find(|l| {
            let l = l.trim_start_matches(['│', '▶', ' ']);
            l.starts_with(&format!("{name} ")) || l.starts_with(&format!("{name}\u{a0}"))
        })
        .unwrap_or("")
}

/// The dashboard's last line when it has no news.
const KEYS_LINE: &str =
    "q quit · ↑↓ select · s stop · w why · a answer · r resume · o/n sessions · f follow · ? keys";

/// The lines under the log pane (news, else the keys), joined as one.
fn footer(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let below = lines
        .iter()
        .rposition(|l| l.starts_with('└'))
        .map_or(0, |i| i + 1);
    lines[below..]
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn three_loops_at_a_glance_rows_follow_them_and_one_is_stopped_from_the_dashboard() {
    let env = project();
    let claude = held_stand_in(&env);
    let mut main = start_loop(&env, &claude, None, &[]);
    let a = start_loop(&env, &claude, Some("a"), &[]);
    let mut b = start_loop(&env, &claude, Some("b"), &[]);
    let tmux = Tmux::start(&env, &env.project, "ralph watch", 130, 30);
    let s = tmux.wait_for("three running loops", |s| {
        ["main", "a", "b"]
            .iter()
            .all(|n| row(s, n).contains("running"))
    });
    assert!(s.contains("ralph watch · 3 loops"), "{s}");
    assert!(
        row(&s, "main").contains("0/3") && row(&s, "main").contains("1 First step"),
        "{s}"
    );
    // The selected loop's session, live.
    tmux.wait_for("main's session", |s| s.contains("working in project"));
    // States in colour; with NO_COLOR, none (reverse video for the selected
    // row is no colour).
    let coloured = |s: &str| {
        ["\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m", "38;"]
            .iter()
            .any(|c| s.contains(c))
    };
    assert!(
        coloured(&tmux.screen_escapes()),
        "{:?}",
        tmux.screen_escapes()
    );
    let plain = Tmux::start(&env, &env.project, "NO_COLOR=1 ralph watch", 130, 30);
    plain.wait_for("the rows", |s| row(s, "b").contains("running"));
    let e = plain.screen_escapes();
    assert!(!coloured(&e) && e.contains("\x1b[7m"), "{e:?}");
    drop(plain);
    // A step of `a` done: its row follows.
    release(&env, "a");
    let s = tmux.wait_for("a at 1/3", |s| {
        row(s, "a").contains("1/3") && row(s, "a").contains("2 Second step")
    });
    assert!(row(&s, "main").contains("0/3"), "{s}");
    // Select `a`, follow it, stop it: asked first, then the clean stop.
    tmux.keys(&["Down"]);
    tmux.wait_for("a's session", |s| s.contains("a · session 2 (following)"));
    tmux.keys(&["s"]);
    tmux.wait_for("the question", |s| s.contains("Stop the loop a (pid"));
    tmux.keys(&["y"]);
    let a = wait_output(a, Duration::from_secs(60));
    assert_eq!(a.status.code(), Some(130), "stopped as Ctrl+C would");
    let s = tmux.wait_for("a stopped", |s| row(s, "a").contains("stopped"));
    assert!(s.contains("asked a (pid"), "{s}");
    assert_eq!(
        working_in(&wt_dir(&env.project, "a")),
        Vec::<String>::new(),
        "left running"
    );
    assert!(
        row(&s, "main").contains("running") && row(&s, "b").contains("running"),
        "{s}"
    );
    // `b` stopped once its running session ends (asked first): it goes
    // on until then.
    tmux.keys(&["Down", "S"]);
    tmux.wait_for("the question", |s| {
        s.contains("Stop the loop b (pid") && s.contains("after its running session?")
    });
    tmux.keys(&["y"]);
    let s = tmux.wait_for("the news", |s| {
        footer(s).contains("to stop after its running session")
    });
    assert!(footer(&s).starts_with("asked b (pid"), "{s}");
    assert!(b.try_wait().unwrap().is_none(), "its session runs on");
    // An older session of the checkout's loop, then quit; the loops go on.
    tmux.keys(&["Up", "Up", "o"]);
    tmux.keys(&["q"]);
    tmux.wait_for("watch to end", |s| s.contains("EXITED 0"));
    assert!(!tmux.alternate_on());
    assert!(main.try_wait().unwrap().is_none() && b.try_wait().unwrap().is_none());
    assert_eq!(finish(&env, &mut main, "project"), 0);
    // `b` did its step and started no other.
    assert_eq!(finish(&env, &mut b, "b"), 130);
    let spec = fs::read_to_string(wt_dir(&env.project, "b").join(".ralph/spec.md")).unwrap();
    assert_eq!(spec.matches("- [x]").count(), 1, "{spec}");
    // Each stop is in its run's journal, sent by watch.
    for name in ["a", "b"] {
        let runs = wt_dir(&env.project, name).join(".ralph/runs");
        let run = fs::read_dir(&runs).unwrap().next().unwrap().unwrap().path();
        let journal = fs::read_to_string(run.join("events.jsonl")).unwrap();
        assert!(
            journal
                .lines()
                .any(|l| l.contains(r#""kind":"commanded""#) && l.contains(r#""by":"watch""#)),
            "{name}: {journal}"
        );
    }
}

/// A stand-in claude whose first session asks for a human (WAITING, "need
/// the staging key") and whose next ones check a step each, then complete.
pub(crate) fn asks_first(env: &TestEnv) -> std::path::PathBuf {
    stand_in(
        env,
        "asks-first",
        &format!(
            r#"if [ ! -e "{0}/asked" ]; then touch "{0}/asked"; ralph waiting --reason "need the staging key" >/dev/null; echo '{RESULT}'; exit 0; fi
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md && git commit -qam step
grep -q -e '- \[ \]' .ralph/spec.md || ralph complete -m done >/dev/null 2>&1
echo '{RESULT}'"#,
            env.tmp.path().display()
        ),
    )
}

#[test]
fn a_waiting_loop_shows_why_and_resumes_from_the_dashboard_as_it_was_started() {
    let env = project();
    // The first session asks for a human; the next ones work.
    let claude = asks_first(&env);
    let b = start_loop(&env, &claude, Some("b"), &["--max-iterations", "7"]);
    let b = wait_output(b, Duration::from_secs(60));
    assert_eq!(b.status.code(), Some(3), "waiting for a human");
    let tmux = Tmux::start(&env, &env.project, "ralph watch", 130, 30);
    let s = tmux.wait_for("b waiting", |s| row(s, "b").contains("WAITING"));
    assert!(row(&s, "b").contains("1/7"), "{s}");
    assert!(row(&s, "b").contains("asks: need the staging key"), "{s}");
    tmux.keys(&["Down", "w"]);
    tmux.wait_for("the question", |s| {
        s.contains("b asks:") && s.contains("  need the staging key")
    });
    // Answered here while no loop runs: `ralph loop --resume` takes it.
    tmux.keys(&["a", "use the vault key", "Enter"]);
    let s = tmux.wait_for("the answer sent", |s| footer(s).starts_with("answered b"));
    assert_eq!(
        footer(&s),
        "answered b: use the vault key (sent by watch); no loop runs there: r resumes it with this answer"
    );
    tmux.keys(&["r"]);
    let s = tmux.wait_for("b resumed", |s| footer(s).starts_with("resumed b (pid"));
    // Its limits come back with its state (a raise kept): not given again.
    assert!(
        s.contains("--worktree b --resume`") && !s.contains("--max-iterations"),
        "{s}"
    );
    // Where its output goes, whole, from the home folder.
    let loops = env.home.join(".local/state/ralph/loops");
    let log = fs::read_dir(&loops)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".resumed.log"))
        .expect("the resumed loop's output");
    assert!(
        footer(&s).ends_with(&format!("; its output: ~/.local/state/ralph/loops/{log}")),
        "{s}"
    );
    // It goes on, with the limits it had, to the end.
    tmux.wait_for("b complete", |s| {
        row(s, "b").contains("complete") && row(s, "b").contains("3/3")
    });
    assert!(!wt_dir(&env.project, "b").join(".ralph/WAITING").exists());
    let runs = wt_dir(&env.project, "b").join(".ralph/runs");
    let run = fs::read_dir(&runs).unwrap().next().unwrap().unwrap().path();
    let journal = fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert!(
        journal.lines().any(|l| l.contains(r#""kind":"answered""#)
            && l.contains(r#""by":"watch""#)
            && l.contains("use the vault key")),
        "the resumed run took the answer: {journal}"
    );
    let s = tmux.screen();
    assert!(row(&s, "b").contains("/7"), "{s}");
    // News of a loop goes when its worktree does.
    tmux.keys(&["s"]);
    tmux.wait_for("the news", |s| footer(s) == "b is not running");
    env.ralph()
        .args(["worktree", "remove", "b", "--force"])
        .assert()
        .success();
    let s = tmux.wait_for("b gone", |s| s.contains("ralph watch · 1 loop"));
    assert_eq!(footer(&s), KEYS_LINE, "{s}");
    tmux.keys(&["q"]);
    tmux.wait_for("watch to end", |s| s.contains("EXITED 0"));
}

#[test]
fn the_terminal_is_given_back_after_q_ctrl_c_and_sigterm_and_a_tiny_one_is_drawn() {
    let env = project();
    // Outside a repository, and without a terminal: said, exit 2.
    let outside = env.tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    env.ralph()
        .args(["watch", "--once"])
        .current_dir(&outside)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "is not in a git repository: ralph watch shows the loops of one",
        ));
    env.ralph()
        .arg("watch")
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "it needs a terminal; `ralph watch --once` prints the table once, `ralph watch --json` the same as JSON",
        ));
    // No loop yet: the table says so.
    let out = env.ralph().args(["watch", "--once"]).stdout_with(0);
    assert_eq!(
        out,
        "loop  agent  state       iter  spec  elapsed  cost   verdicts  step\n\
         main  -      no run yet  -     0/3   0s       $0.00  -         1 First step\n"
    );
    let pidfile = env.tmp.path().join("watch.pid");
    let dir = env.tmp.path().display().to_string();
    // The inner shell becomes ralph watch (its pid, for SIGTERM); the
    // terminal's modes are kept before and after.
    let cmd = format!(
        "stty -a > {dir}/before; sh -c 'echo $$ > {}; exec ralph watch'; code=$?; stty -a > {dir}/after; exit $code",
        pidfile.display()
    );
    for how in ["q", "C-c", "SIGTERM"] {
        let _ = fs::remove_file(&pidfile);
        let tmux = Tmux::start(&env, &env.project, &cmd, 100, 24);
        tmux.wait_for("the dashboard", |s| s.contains("ralph watch · 1 loop"));
        assert!(tmux.alternate_on(), "{how}");
        if how == "q" {
            // At 40×10 it still draws, and answers keys.
            tmux.resize(40, 10);
            tmux.wait_for("a small frame", |s| {
                s.lines().count() <= 10 && s.contains("ralph")
            });
            tmux.keys(&["?"]);
            tmux.wait_for("the keys", |s| s.contains("keys"));
            tmux.keys(&["x"]);
            tmux.resize(100, 24);
        }
        match how {
            "SIGTERM" => {
                let pid: i32 = fs::read_to_string(&pidfile)
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                )
                .unwrap();
            }
            key => tmux.keys(&[key]),
        }
        let s = tmux.wait_for(&format!("watch to end after {how}"), |s| {
            s.contains("EXITED")
        });
        let code = if how == "q" || how == "C-c" {
            "EXITED 0"
        } else {
            "EXITED 130"
        };
        assert!(s.contains(code), "{how}: {s}");
        assert!(
            !tmux.alternate_on(),
            "{how}: the alternate screen is still on"
        );
        let t0 = Instant::now();
        while !env.tmp.path().join("after").exists() && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let before = fs::read_to_string(env.tmp.path().join("before")).unwrap();
        let after = fs::read_to_string(env.tmp.path().join("after")).unwrap();
        assert_eq!(before, after, "{how}: the terminal's modes differ after");
        fs::remove_file(env.tmp.path().join("after")).unwrap();
    }
    // Its window closed under it: it ends (it once spun a core on the
    // closed terminal's end of input, unkillable but by SIGKILL).
    let _ = fs::remove_file(&pidfile);
    let tmux = Tmux::start(&env, &env.project, &cmd, 100, 24);
    tmux.wait_for("the dashboard", |s| s.contains("ralph watch · 1 loop"));
    let pid: u32 = fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    drop(tmux);
    let t0 = Instant::now();
    while ralph::procs::tree::ProcReader::new().is_running(pid) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "ralph watch (pid {pid}) still runs after its terminal closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `s` with each elapsed time's digits written `N` (`3s` → `Ns`), the
/// columns kept where they were.
fn elapsed_hidden(s: &str) -> String {
    s.split_inclusive(' ')
        .map(|w| {
            let t = w.trim_end();
            let secs = t.strip_suffix('s').filter(|d| !d.is_empty());
            if secs.is_some_and(|d| d.chars().all(|c| c.is_ascii_digit())) {
                w.replace(|c: char| c.is_ascii_digit(), "N")
            } else {
                w.to_string()
            }
        })
        .collect()
}

/// A project whose loop has a gate that passes and a reviewer, and a
/// stand-in that does every step in one session and approves in review.
fn gated_and_reviewed(env: &TestEnv) -> std::path::PathBuf {
    env.approved_config("[gate]\ncommands = [\"true\"]\n\n[review]\n");
    env.commit_all("gate and reviewer");
    let approve = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Fine.\nVERDICT: approve","total_cost_usd":0.25,"usage":{"input_tokens":10,"output_tokens":5}}"#;
    let path = env.tmp.path().join("all-at-once");
    fs::write(
        &path,
        format!(
            r#"#!/bin/sh
p=$(cat)
case "$p" in *"You review"*) printf '%s\n' '{approve}'; exit 0;; esac
sed -i 's/- \[ \]/- [x]/g' .ralph/spec.md && git commit -qam steps
ralph complete -m done >/dev/null 2>&1
printf '%s\n' '{RESULT}'
"#
        ),
    )
    .unwrap();
    let mut p = fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o755);
    fs::set_permissions(&path, p).unwrap();
    path
}

#[test]
fn once_is_a_plain_table_or_json_and_a_complete_run_with_a_step_added_since_says_so() {
    let env = project();
    let claude = gated_and_reviewed(&env);
    let out = wait_output(
        start_loop(&env, &claude, None, &[]),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    env.ralph().args(["add", "Fourth step"]).assert().success();
    // For scripts: aligned columns, no box, no escape sequence, nothing cut.
    let once = env.ralph().args(["watch", "--once"]).stdout_with(0);
    assert_eq!(
        elapsed_hidden(&once),
        "loop  agent   state             iter  spec  elapsed  cost   verdicts             step\n\
         main  claude  complete, 1 open  1/50  3/4   Ns       $1.00  gate ok · review ok  4 Fourth step\n"
    );
    // The same rows as JSON; --json alone is --once.
    for args in [&["watch", "--once", "--json"][..], &["watch", "--json"]] {
        let v = env.ralph().args(args).json_with(0);
        let main = &v[0];
        assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
        assert_eq!(main["name"], "main");
        assert_eq!(
            main["state"],
            serde_json::json!({"kind": "ended", "outcome": "complete"})
        );
        assert_eq!(main["spec"], serde_json::json!({"done": 3, "total": 4}));
        assert_eq!(main["step"], "4 Fourth step");
        assert_eq!(
            (&main["gate"], &main["review"]),
            (&true.into(), &"approved".into())
        );
        assert_eq!(main["cost_usd"], 1.0);
    }
    // Live, at 130 columns and at 80: the verdicts whole, the state true.
    let tmux = Tmux::start(&env, &env.project, "ralph watch", 130, 20);
    let s = tmux.wait_for("the row", |s| row(s, "main").contains("complete"));
    assert_eq!(
        elapsed_hidden(row(&s, "main")),
        "│▶ main  claude  complete, 1 open  1/50  3/4   Ns       $1.00  gate ok · review ok  4 Fourth step                                │"
    );
    // At 80 the agent and the step give way, with a mark where cut.
    tmux.resize(80, 20);
    let at_80 = "│▶ main clau… complete, 1 open 1/50 3/4  Ns      $1.00 gate ok · review ok 4 F…│";
    let s = tmux.wait_for("the row at 80 columns", |s| {
        elapsed_hidden(row(s, "main")) == at_80
    });
    // The keys too, in two lines rather than `? keys` cut.
    let last: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        last[last.len() - 2..],
        [
            "q quit · ↑↓ select · s stop · w why · a answer · r resume · o/n sessions",
            "f follow · ? keys"
        ],
        "{s}"
    );
}

/// A real Claude Code session asks a question with options; its loop waits
/// for an answer; the dashboard shows the question, and `a`, `2`, Enter
/// answers it as `ralph answer --option 2` would: the same run goes on,
/// its next session told the answer, and completes.
#[test]
fn a_question_is_answered_from_the_dashboard_and_the_run_goes_on() {
    let (env, live) = crate::answer::a_loop_waiting_for_an_answer();
    let tmux = Tmux::start(&env, &env.project, "ralph watch", 130, 30);
    // Its row: waiting, the time left to answer, and the question.
    let s = tmux.wait_for("the question in its row", |s| {
        row(s, "main").contains("WAITING, 9m")
            && row(s, "main").contains("asks: Which database should the app use? [1-2]")
    });
    assert!(row(&s, "main").contains("1/5"), "{s}");
    // For scripts: the loop runs, and takes an answer until then.
    let v = env.ralph().args(["watch", "--json"]).json_with(0);
    assert_eq!(v[0]["state"]["kind"], "waiting", "{v}");
    assert!(
        v[0]["state"]["until"].is_string() && v[0]["pid"].is_u64(),
        "{v}"
    );
    assert_eq!(v[0]["question"]["options"][1], "SQLite, for now");
    // Why: the question, its blocker, its options, how to answer.
    tmux.keys(&["w"]);
    let s = tmux.wait_for("the question", |s| {
        s.contains("main asks (blocker: a decision):")
    });
    for part in [
        "  Which database should the app use?",
        "  1. Postgres",
        "  2. SQLite, for now",
        "It waits 9m",
        "`ralph answer --option <1-2>`",
        "a: answer it here (1-2 and Enter picks an option) · any other key: close",
    ] {
        assert!(s.contains(part), "{part}: {s}");
    }
    tmux.keys(&["x", "a"]);
    let s = tmux.wait_for("the input line", |s| footer(s).starts_with("answer:"));
    assert!(
        s.contains(" answer main ") && s.contains("  2. SQLite, for now"),
        "{s}"
    );
    tmux.keys(&["2"]);
    tmux.wait_for("2 typed", |s| footer(s).starts_with("answer: 2 "));
    tmux.keys(&["Enter"]);
    let s = tmux.wait_for("the news", |s| footer(s).starts_with("answered main"));
    assert!(
        footer(&s).starts_with(
            "answered main: option 2: SQLite, for now (sent by watch); its loop (pid "
        ) && footer(&s).ends_with(") goes on with it"),
        "{s}"
    );
    let (code, out, err) = live.finish(Duration::from_secs(120));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("answered by watch: option 2: SQLite, for now; the run goes on\n"),
        "{out}"
    );
    // The next session was told the answer, first.
    let second = told(&env, 2);
    assert!(
        second.contains("The answer (option 2):\n\n> SQLite, for now\n"),
        "{second}"
    );
    tmux.wait_for("main complete", |s| row(s, "main").contains("complete"));
    tmux.keys(&["q"]);
    tmux.wait_for("watch to end", |s| s.contains("EXITED 0"));
}

/// `:` in the dashboard sends the selected running loop a command, as
/// `ralph raise` or `ralph add` would: a raised limit and a step added are
/// taken between its sessions, said by the loop with who sent them.
#[test]
fn a_command_typed_in_the_dashboard_raises_a_limit_and_adds_a_step() {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n",
    )
    .unwrap();
    env.commit_all("two steps");
    let go = env.tmp.path().join("go");
    env.api.session([
        Reply::bash(once_made(&go, DO_STEP)),
        Reply::text("One done."),
    ]);
    env.api
        .session([Reply::bash(DO_STEP), Reply::text("Two done.")]);
    env.api
        .session([Reply::bash(DO_STEP), Reply::text("The docs done.")]);
    let live = Live::start(ralph_loop(&env).args(["--max-iterations", "1"]));
    live.wait_for("Bash: while", Duration::from_secs(120));
    let tmux = Tmux::start(&env, &env.project, "ralph watch", 130, 30);
    tmux.wait_for("the running loop", |s| row(s, "main").contains("running"));
    tmux.keys(&[":"]);
    tmux.wait_for("the command line", |s| footer(s).starts_with("command:"));
    tmux.keys(&["raise --iterations 2", "Enter"]);
    let s = tmux.wait_for("the news", |s| footer(s).starts_with("sent main"));
    assert!(
        footer(&s).starts_with("sent main (pid ")
            && footer(&s).ends_with("): raise --max-iterations by 2"),
        "{s}"
    );
    tmux.keys(&[":", "add Write the docs", "Enter"]);
    tmux.wait_for("the second news", |s| {
        footer(s).ends_with("): add a step: Write the docs")
    });
    fs::write(&go, "").unwrap();
    let (code, out, err) = live.finish(Duration::from_secs(120));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("raise --max-iterations by 2 (sent by watch)")
            && out.contains("add a step: Write the docs (sent by watch): "),
        "{out}"
    );
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(
        spec.contains("- [x] **1** One") && spec.contains("Write the docs"),
        "{spec}"
    );
    assert_eq!(summary(&env)["iterations"], 3, "{out}");
}
