//! An attacker's probe of ralph's secrets leaving its environment (issue
//! 43, item 1) and of the pull request's closing lines and bound (item 7).
//! Each test here but the confined one failed when it was written.

use std::fs;

use crate::support::*;
use crate::watch::asks_first;

/// A parallel run told to send notices (a URL in `RALPH_NOTIFY_NTFY`, and
/// one in a variable `--notify ntfy=env:VAR` names) starts its workers and
/// completes: the workers get the run's command line, `--notify` with it,
/// and no longer the variables it names.
#[test]
fn a_parallel_run_with_notices_still_starts_its_workers() {
    for notify in ["ntfy", "ntfy=env:MY_NTFY_URL"] {
        let env = crate::parallel::with_spec("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
        let body = format!(
            r#"echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
git add -A && git commit -qm "step $RALPH_STEP"
echo '{RESULT}'"#
        );
        let claude = stand_in(&env, "claude-steps", &body);
        let out = env
            .ralph()
            .env("PATH", env.path_with_br())
            .env("RALPH_NOTIFY_NTFY", "http://127.0.0.1:9/s3cr3tTOPIC")
            .env("MY_NTFY_URL", "http://127.0.0.1:9/s3cr3tTOPIC")
            .args(["loop", "--claude"])
            .arg(&claude)
            .args([
                "--parallel",
                "2",
                "--max-iterations",
                "4",
                "--notify",
                notify,
            ])
            .assert()
            .get_output()
            .clone();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.contains("complete: all 2 steps done"),
            "--notify {notify}: {said}"
        );
        // The run itself still told: its notice went to the URL's server.
        assert!(
            said.contains("a notice to ntfy http://127.0.0.1:9/"),
            "--notify {notify}: {said}"
        );
    }
}

/// `ralph watch` resumes a waiting run as it was started: a run told to
/// send notices by `RALPH_NOTIFY_NTFY` (in watch's environment as it was
/// in the loop's) goes on to its end, its notices sent.
#[test]
fn a_run_resumed_from_watch_keeps_its_notice_url() {
    let env = project();
    let claude = asks_first(&env);
    let url = "http://127.0.0.1:9/s3cr3tTOPIC";
    let out = env
        .ralph()
        .env("RALPH_NOTIFY_NTFY", url)
        .args(["loop", "--claude"])
        .arg(&claude)
        .args(["--max-iterations", "7", "--notify", "ntfy"])
        .assert()
        .get_output()
        .clone();
    assert_eq!(out.status.code(), Some(3), "waiting for a human: {out:?}");
    let tmux = crate::support::tmux::Tmux::start(
        &env,
        &env.project,
        &format!("RALPH_NOTIFY_NTFY={url} ralph watch"),
        130,
        30,
    );
    tmux.wait_for("the waiting loop", |s| s.contains("WAITING"));
    tmux.keys(&["r"]);
    tmux.wait_for("the resume", |s| s.contains("--resume`; its"));
    let loops = env.home.join(".local/state/ralph/loops");
    let log = || {
        fs::read_dir(&loops)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".resumed.log"))
            .and_then(|p| fs::read_to_string(p).ok())
            .unwrap_or_default()
    };
    assert!(
        eventually(std::time::Duration::from_secs(60), || {
            let l = log();
            // Its end line (not an iteration's), or its refusal to start.
            l.lines()
                .any(|l| l.contains("── ralph: ") && !l.contains("── ralph: iteration"))
                || l.contains("ralph loop: ")
        }),
        "the resumed run never ended: {}",
        log()
    );
    let log = log();
    assert!(
        log.contains("complete: all 3 steps done"),
        "the resumed run: {log}"
    );
    assert!(!log.contains("no URL"), "{log}");
    tmux.keys(&["q"]);
}

/// Where the kernel writes a process's core dump, when that is a file in
/// its folder (`core`, `core.%p`): `None` when it goes elsewhere (a
/// program such as systemd-coredump or apport, which keeps it for the
/// same user to read, out of this test's sight).
fn core_file_pattern() -> Option<String> {
    let p = fs::read_to_string("/proc/sys/kernel/core_pattern").ok()?;
    let p = p.trim();
    (!p.starts_with('|') && !p.contains('/') && !p.is_empty()).then(|| p.to_string())
}

/// An unconfined session raises ralph's core size limit (`prlimit`, allowed
/// on a process of the same user) and makes it dump core: the dump, in
/// ralph's folder (the project) or with the user's crash collector, holds
/// what ralph keeps in memory, its GitHub token first. ralph declares
/// itself not dumpable, so the kernel writes no core of it (and no process
/// of the user but root reads its memory through /proc).
#[test]
fn a_session_cannot_make_ralph_dump_its_token_to_a_core_file() {
    let pattern = core_file_pattern().expect(
        "core dumps go to a program on this machine (kernel.core_pattern starts with |): this test needs them in a file; run it where `sysctl kernel.core_pattern` is a file name",
    );
    let env = project();
    let token = "ghp_coreDUMPtoken0123456789abcdef";
    let body = format!(
        r#"r=$PPID
prlimit --pid "$r" --core=unlimited
kill -SEGV "$r"; sleep 0.5; kill -SEGV "$r"; kill -ABRT "$r"
sleep 2
echo '{RESULT}'"#
    );
    let claude = stand_in(&env, "claude-dumps", &body);
    let out = env
        .ralph()
        .env("GH_TOKEN", token)
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .assert()
        .get_output()
        .clone();
    use std::os::unix::process::ExitStatusExt;
    // Rust's own SIGSEGV handler takes the first one; the second (or the
    // SIGABRT after it, when both arrive at once on a loaded machine) ends
    // ralph, each a signal that dumps core.
    assert!(
        matches!(out.status.signal(), Some(6 | 11)),
        "the session did not get to kill ralph: {out:?}"
    );
    let mut dumped = Vec::new();
    for e in walkdir::WalkDir::new(&env.project) {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().is_file() && name.starts_with(pattern.split('%').next().unwrap_or("core"))
        {
            let bytes = fs::read(e.path()).unwrap();
            let has = bytes.windows(token.len()).any(|w| w == token.as_bytes());
            dumped.push(format!(
                "{} ({} bytes, token: {has})",
                e.path().display(),
                bytes.len()
            ));
            assert!(
                !has,
                "ralph's token in its core dump {}: {out:?}",
                e.path().display()
            );
        }
    }
    assert!(dumped.is_empty(), "ralph dumped core: {dumped:?}");
}

/// A project on branch `work` whose `origin` is GitHub's octo/hello, and
/// the scripted GitHub.
fn shipping() -> (
    TestEnv,
    crate::support::github::GitHub,
    crate::support::github::Origin,
) {
    let env = project();
    let origin = crate::support::github::Origin::new(&env, "octo", "hello");
    origin.link(&env, &env.project);
    env.git(&["switch", "-q", "-c", "work"]);
    (
        env,
        crate::support::github::GitHub::start("octo", "hello"),
        origin,
    )
}

const TOKEN: &str = "ghp_probeTESTtoken0123456789abcdef";

/// An unconfined session adds a checked step naming issue #42, writes #42
/// into the run's `state.json` (in the run folder, where a session
/// writes) among the issues the steps named when the run began, and kills
/// ralph before it saves its state again. You resume the run: the pull
/// request must still close only #7, the one issue of the spec you began
/// with.
#[test]
fn a_resumed_run_closes_no_issue_a_session_wrote_into_its_saved_state() {
    let (env, gh, _origin) = shipping();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** Write parse.txt [#7]\n",
    )
    .unwrap();
    env.commit_all("one step for issue 7");
    let mark = env.tmp.path().join("killed");
    let body = format!(
        r#"if [ ! -e {mark} ]; then
  touch {mark}
  printf -- '- [x] **2** Also done [#42]\n' >> .ralph/spec.md
  git add -A && git commit -qm 'also done'
  sed -i 's/"pr_issues_at_start": \[/"pr_issues_at_start": [42,/' "$RALPH_RUN_DIR/state.json"
  kill -9 $PPID
  exit 0
fi
echo v2 > parse.txt && sed -i 's/- \[ \] \*\*1/- [x] **1/' .ralph/spec.md
git add -A && git commit -qm 'step 1' && ralph complete -m done >/dev/null
echo '{RESULT}'"#,
        mark = mark.display()
    );
    let claude = stand_in(&env, "claude-tampers", &body);
    let ralph = || {
        env.ralph()
            .env("GITHUB_API_URL", &gh.url)
            .env("GH_TOKEN", TOKEN)
    };
    let first = ralph()
        .args(["loop", "--pr", "--max-iterations", "3", "--claude"])
        .arg(&claude)
        .assert()
        .get_output()
        .clone();
    assert!(mark.exists(), "the first session never ran: {first:?}");
    let state = fs::read_to_string(run_dir(&env).join("state.json")).unwrap();
    assert!(
        state.contains("[42,"),
        "the session's edit is in place: {state}"
    );
    let out = ralph().args(["loop", "--resume"]).stdout_with(0);
    assert!(out.contains("opened pull request #1"), "{out}");
    let body = gh.pulls()[0]["body"].as_str().unwrap().to_string();
    assert!(body.contains("\nCloses #7\n"), "{body}");
    assert!(!body.contains("Closes #42"), "{body}");
}

/// The body of a long spec's pull request stays under GitHub's 65,536
/// characters whatever the branch is called: the line that ends a cut
/// step list holds the spec's address, whose branch part is
/// percent-encoded (twelve characters for each four-byte character), and
/// a branch git and ralph accept may be long.
#[test]
fn a_cut_pull_request_body_stays_under_githubs_bound_with_a_long_branch() {
    use ralph::ship::body::{Facts, blob_url, body};
    let mut spec = String::from("# Big\n\n");
    for i in 1..=399 {
        spec.push_str(&format!("- [x] **{i}** {}\n", "word ".repeat(60)));
    }
    // Ten folders of sixty four-byte characters: 2,400 bytes, each part
    // of it under the 255 a file name may have.
    let branch = format!("ralph/{}", vec!["😀".repeat(60); 10].join("/"));
    let ok = std::process::Command::new("git")
        .args(["check-ref-format", "--branch", &branch])
        .output()
        .unwrap();
    assert!(ok.status.success(), "git takes it as a branch: {ok:?}");
    let url = blob_url("github.com", "octo", "hello", &branch, ".ralph/spec.md");
    let text = body(&Facts {
        spec: &spec,
        branch: &branch,
        run_id: "2026-11-28T20-00-00Z-1",
        outcome: "complete",
        reason: "all 399 steps done",
        complete: true,
        sessions: 1,
        agents: vec!["claude".into()],
        cost: "$1.00".into(),
        closable: (1..=399).collect(),
        spec_url: Some(url),
        ..Default::default()
    });
    let n = text.chars().count();
    assert!(
        n <= 65_536,
        "{n} characters: GitHub refuses the pull request"
    );
}

/// The same from a confined Claude session (Claude Code's own sandbox):
/// its commands must not reach ralph's process at all, to read it or to
/// make it dump core.
#[test]
fn a_confined_claude_session_cannot_reach_ralphs_process() {
    sandbox_tools();
    let env = project();
    let token = "ghp_confinedCOREtoken0123456789ab";
    let find = r#"p=$$; r=; while [ "$p" -gt 1 ]; do [ "$(cat /proc/$p/comm)" = ralph ] && r=$p; p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2); done; echo "ralph=$r" > seen.txt; if [ -n "$r" ]; then tr '\0' '\n' < /proc/$r/environ >> seen.txt; prlimit --pid "$r" --core=unlimited >> seen.txt 2>&1; kill -SEGV "$r"; sleep 0.5; kill -SEGV "$r"; fi; cat seen.txt"#;
    env.api.session([Reply::bash(find), Reply::text("Looked.")]);
    let out = env
        .ralph()
        .env("GH_TOKEN", token)
        .args(["loop", "--confined", "--max-iterations", "1", "--claude"])
        .arg(claude_bin())
        .assert()
        .get_output()
        .clone();
    let seen = fs::read_to_string(env.project.join("seen.txt")).unwrap_or_default();
    assert!(
        seen.starts_with("ralph="),
        "the command did not run: {seen} {out:?}"
    );
    assert_eq!(
        seen.lines().next(),
        Some("ralph="),
        "ralph's process, from the sandbox: {seen}"
    );
    for e in walkdir::WalkDir::new(&env.project) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let bytes = fs::read(e.path()).unwrap();
            assert!(
                !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                "the token in {}",
                e.path().display()
            );
        }
    }
}

/// A parallel run whose tracker is GitHub's: its workers read the issues
/// with the run's token (handed to them on their stdin), and still no
/// session reads it from its own environment or any ancestor's.
#[test]
fn a_parallel_runs_workers_read_issues_yet_no_session_reads_the_token() {
    let (env, gh, _origin) = shipping();
    env.git(&["switch", "-q", "main"]);
    gh.add_issue("First", "", &["ralph"]);
    gh.add_issue("Second", "", &["ralph"]);
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] First [#1]\n- [ ] Second [#2]\n",
    )
    .unwrap();
    env.approved_config("tracker = \"github\"\n");
    env.commit_all("issues as steps");
    let seen = env.tmp.path().join("seen");
    fs::create_dir_all(&seen).unwrap();
    let body = format!(
        r#"{{ env; p=$$; while [ "$p" -gt 1 ]; do echo "== $p"; tr '\0' '\n' < /proc/$p/environ; p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2); done; }} > "{seen}/$RALPH_STEP.env" 2>&1
echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
git add -A && git commit -qm "step $RALPH_STEP"
echo '{RESULT}'"#,
        seen = seen.display()
    );
    let claude = stand_in(&env, "claude-dumps-env", &body);
    let out = env
        .ralph()
        .env("GITHUB_API_URL", &gh.url)
        .env("GH_TOKEN", TOKEN)
        .env("RALPH_TEST_MARK", "seen")
        .args(["loop", "--parallel", "2", "--claude"])
        .arg(&claude)
        .stdout_with(0);
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    for step in ["#1", "#2"] {
        let text = fs::read_to_string(seen.join(format!("{step}.env"))).unwrap();
        assert!(
            text.matches("RALPH_TEST_MARK=seen").count() >= 3,
            "{step}: {text}"
        );
        assert!(!text.contains(TOKEN), "the token reached session {step}");
    }
}
