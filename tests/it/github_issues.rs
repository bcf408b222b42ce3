//! GitHub issues as the tracker, against the scripted GitHub on 127.0.0.1
//! (the project's `origin` reads as github.com's): `ralph import github`
//! over pages, verify-sync comparing boxes with issues, the loop closing
//! the issues of done steps, a parallel run waiting on "Blocked by #N",
//! refusals said plainly, and a clone's `tracker = "github"` held until
//! `ralph trust`. The token is in no output and no process's arguments.

use std::fs;

use crate::support::github::{GitHub, Origin, Refusal};
use crate::support::*;

const TOKEN: &str = "ghp_issuesSECRET0123456789abcdef";

/// A committed project whose `origin` is `octo/hello` on (the scripted)
/// GitHub.
fn linked(env: &TestEnv) -> GitHub {
    let gh = GitHub::start("octo", "hello");
    let origin = Origin::new(env, "octo", "hello");
    origin.link(env, &env.project);
    gh
}

/// ralph, pointed at the scripted GitHub with the token in its environment.
fn ralph_gh(env: &TestEnv, gh: &GitHub) -> Ralph {
    env.ralph()
        .env("GITHUB_API_URL", &gh.url)
        .env("GH_TOKEN", TOKEN)
}

/// Every request carried the token, in its header only.
fn token_only_in_headers(gh: &GitHub) {
    for q in gh.requests() {
        assert_eq!(
            q.authorization.as_deref(),
            Some(&*format!("Bearer {TOKEN}")),
            "{q:?}"
        );
        assert!(!q.url.contains(TOKEN) && !q.body.to_string().contains(TOKEN));
    }
}

fn spec_of(env: &TestEnv) -> String {
    fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap()
}

fn state_of(gh: &GitHub, n: u64) -> String {
    gh.issues()
        .iter()
        .find(|i| i["number"] == n)
        .map(|i| i["state"].as_str().unwrap().to_string())
        .unwrap()
}

fn tracker_github(env: &TestEnv) {
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    fs::write(
        env.project.join(".ralph/config.toml"),
        "tracker = \"github\"\n",
    )
    .unwrap();
}

#[test]
fn import_brings_in_open_labelled_issues_over_pages_without_pull_requests() {
    let env = TestEnv::new();
    env.git_init();
    fs::write(env.project.join("README.md"), "hello\n").unwrap();
    env.commit_all("start");
    let gh = linked(&env);
    let mut mine = Vec::new();
    for i in 1..=121 {
        let labels: &[&str] = if i % 7 == 0 {
            &["ralph", "bug"]
        } else {
            &["ralph"]
        };
        mine.push(gh.add_issue(&format!("Issue {i}"), "", labels));
    }
    let unlabelled = gh.add_issue("Not for ralph", "", &["bug"]);
    let closed = mine.remove(3);
    gh.set_state(closed, "closed");
    // A pull request with the label comes in GitHub's issues listing too.
    let pr = gh.add_pull("feature", "main", "A labelled pull request");
    gh.label(pr, &["ralph"]);
    let out = ralph_gh(&env, &gh)
        .args(["import", "github", "--yes"])
        .assert()
        .success()
        .get_output()
        .clone();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stdout.contains("GitHub: 120 issues (#1 … #121)"),
        "{stdout}"
    );
    assert!(stdout.contains("imported 120 issues as steps"), "{stdout}");
    assert!(
        stdout.contains("set `tracker = \"github\"` in .ralph/config.toml"),
        "{stdout}"
    );
    let spec = spec_of(&env);
    let parsed = ralph::work::spec::parse(&spec);
    let tasks: Vec<String> = parsed
        .steps
        .iter()
        .map(|s| s.task.clone().unwrap())
        .collect();
    let want: Vec<String> = mine.iter().map(|n| format!("#{n}")).collect();
    assert_eq!(tasks, want, "every open labelled issue, oldest first");
    assert!(spec.contains("- [ ] **1** Issue 1 [#1]\n"), "{spec}");
    for absent in [closed, unlabelled, pr] {
        assert!(!spec.contains(&format!("[#{absent}]")), "#{absent}: {spec}");
    }
    // Two pages of 100, asked with the label; the token in headers only.
    let lists: Vec<String> = gh
        .requests()
        .iter()
        .filter(|q| q.path() == "/repos/octo/hello/issues")
        .map(|q| q.url.clone())
        .collect();
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert!(
        lists
            .iter()
            .all(|u| u.contains("labels=ralph") && u.contains("state=open")),
        "{lists:?}"
    );
    assert!(lists[1].contains("page=2"), "{lists:?}");
    token_only_in_headers(&gh);
    assert!(!stdout.contains(TOKEN) && !stderr.contains(TOKEN));
    // Imported again over the spec (now the user's own): refused without
    // --force, nothing lost.
    let again = ralph_gh(&env, &gh)
        .args(["import", "github", "--yes"])
        .stderr_with(1);
    assert!(again.contains("--force replaces it"), "{again}");
    assert_eq!(spec_of(&env), spec);
}

#[test]
fn add_issue_makes_a_step_of_one_open_issue() {
    let env = project();
    let gh = linked(&env);
    let n = gh.add_issue("Fix the [login] page", "", &[]);
    let shut = gh.add_issue("Old", "", &[]);
    gh.set_state(shut, "closed");
    let out = ralph_gh(&env, &gh)
        .args(["add", "--issue", &n.to_string()])
        .stdout_with(0);
    assert!(out.contains("Fix the (login) page [#1]"), "{out}");
    assert!(spec_of(&env).contains("Fix the (login) page [#1]\n"));
    let twice = ralph_gh(&env, &gh)
        .args(["add", "--issue", &n.to_string()])
        .stderr_with(1);
    assert!(twice.contains("#1 is the task of line"), "{twice}");
    let closed = ralph_gh(&env, &gh)
        .args(["add", "--issue", &shut.to_string()])
        .stderr_with(1);
    assert!(closed.contains("is closed: nothing to do"), "{closed}");
    let missing = ralph_gh(&env, &gh)
        .args(["add", "--issue", "99"])
        .stderr_with(1);
    assert!(missing.contains("(404)"), "{missing}");
}

#[test]
fn verify_sync_compares_each_box_with_its_issue_once_the_config_is_approved() {
    let env = project();
    let gh = linked(&env);
    for (title, labels) in [
        ("A", &["ralph"][..]),
        ("B", &["ralph"]),
        ("C", &[]),
        ("D", &["ralph"]),
    ] {
        gh.add_issue(title, "", labels);
    }
    gh.set_state(2, "closed");
    gh.set_state(3, "closed");
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [x] A [#1]\n- [ ] B [#2]\n- [x] C [#3]\n- [ ] D [#4]\n- [ ] E [#50]\n",
    )
    .unwrap();
    tracker_github(&env);
    // A clone's config: nothing asked of GitHub before `ralph trust`.
    let held = ralph_gh(&env, &gh).args(["verify-sync"]).stderr_with(2);
    assert!(
        held.contains("tracker = \"github\" in .ralph/config.toml is not approved")
            && held.contains("ralph trust"),
        "{held}"
    );
    let looped = ralph_gh(&env, &gh)
        .args(["loop", "--max-iterations", "1"])
        .stderr_with(2);
    assert!(looped.contains("tracker = \"github\""), "{looped}");
    assert!(gh.requests().is_empty(), "{:?}", gh.requests());
    env.approve_config();
    let out = ralph_gh(&env, &gh).args(["verify-sync"]).stdout_with(1);
    assert!(
        out.contains(".ralph/spec.md is out of sync with GitHub issues (3 problems):"),
        "{out}"
    );
    assert!(
        out.contains("line 3: A [#1]: checked, but task #1 is open"),
        "{out}"
    );
    assert!(
        out.contains("line 4: B [#2]: not checked, but task #2 is closed"),
        "{out}"
    );
    assert!(
        out.contains("E [#50]: task #50 is not known to the tracker"),
        "{out}"
    );
    assert!(!out.contains("C [#3]") && !out.contains("D [#4]"), "{out}");
    // C is not labelled: asked for alone.
    assert!(
        gh.requests()
            .iter()
            .any(|q| q.method == "GET" && q.path() == "/repos/octo/hello/issues/3"),
        "{:?}",
        gh.requests()
    );
    let json = ralph_gh(&env, &gh)
        .args(["verify-sync", "--json"])
        .json_with(1);
    let kinds: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["checked-but-open", "unchecked-but-closed", "unknown-task"]
    );
    // Set right on GitHub, the spec is in sync.
    gh.set_state(1, "closed");
    gh.set_state(2, "open");
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [x] A [#1]\n- [ ] B [#2]\n- [x] C [#3]\n- [ ] D [#4]\n",
    )
    .unwrap();
    let ok = ralph_gh(&env, &gh).args(["verify-sync"]).stdout_with(0);
    assert!(
        ok.contains("in sync with GitHub issues: 4 steps, 2/4 steps done"),
        "{ok}"
    );
    token_only_in_headers(&gh);
}

#[test]
fn a_403_and_a_rate_limit_are_said_with_what_to_fix_and_never_the_token() {
    let env = project();
    let gh = linked(&env);
    gh.add_issue("A", "", &["ralph"]);
    let list = "/repos/octo/hello/issues";
    gh.refuse(Refusal::new(
        Some("GET"),
        list,
        403,
        "Resource not accessible by personal access token",
    ));
    let forbidden = ralph_gh(&env, &gh)
        .args(["import", "github", "--yes", "--force"])
        .stderr_with(1);
    assert!(
        forbidden.contains("GitHub forbade GET /repos/octo/hello/issues (403: Resource not accessible by personal access token)")
            && forbidden.contains("\"Issues\" read and write")
            && forbidden.contains("nothing imported"),
        "{forbidden}"
    );
    gh.refuse(Refusal::rate_limited(Some("GET"), list));
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] A [#1]\n",
    )
    .unwrap();
    let limited = ralph_gh(&env, &gh)
        .args(["verify-sync", "--tracker", "github"])
        .stderr_with(2);
    assert!(
        limited.contains("cannot read the tracker: GitHub's rate limit stopped GET /repos/octo/hello/issues: no calls left until 2030-01-01T00:00:00Z"),
        "{limited}"
    );
    gh.refuse(Refusal::new(None, list, 429, "slow down").header("retry-after", "30"));
    let later = ralph_gh(&env, &gh)
        .args(["verify-sync", "--tracker", "github"])
        .stderr_with(2);
    assert!(later.contains("retry after 30s"), "{later}");
    // No token at all: said, and nothing sent.
    let asked = gh.requests().len();
    let none = env
        .ralph()
        .env("GITHUB_API_URL", &gh.url)
        .args(["verify-sync", "--tracker", "github"])
        .stderr_with(2);
    assert!(none.contains("no GitHub token: set GH_TOKEN"), "{none}");
    assert_eq!(gh.requests().len(), asked);
    for said in [&forbidden, &limited, &later, &none] {
        assert!(!said.contains(TOKEN), "{said}");
    }
    token_only_in_headers(&gh);
}

/// A stand-in session: checks the first open box and commits; once none
/// is open, `ralph complete`. It notes every process's arguments.
fn closing_stand_in(env: &TestEnv) -> (std::path::PathBuf, std::path::PathBuf) {
    let argv = env.tmp.path().join("argv.txt");
    let body = format!(
        r#"ps -eo args >> {argv}
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
echo "- a step" >> .ralph/progress.md
git add -A && git commit -qm step
grep -q -e '- \[ \]' .ralph/spec.md || ralph complete -m done >> {argv} 2>&1
echo '{RESULT}'"#,
        argv = argv.display()
    );
    (stand_in(env, "claude-closing", &body), argv)
}

#[test]
fn the_loop_closes_each_issue_once_its_step_is_done() {
    let env = project();
    let gh = linked(&env);
    gh.add_issue("One", "", &["ralph"]);
    gh.add_issue("Two", "", &["ralph"]);
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] One [#1]\n- [ ] Two [#2]\n",
    )
    .unwrap();
    tracker_github(&env);
    env.approve_config();
    env.commit_all("issues as steps");
    let (claude, argv) = closing_stand_in(&env);
    let out = ralph_gh(&env, &gh)
        .args(["loop", "--max-iterations", "4", "--claude"])
        .arg(&claude)
        .stdout_with(0);
    assert!(out.contains("closed on GitHub: #1"), "{out}");
    assert!(out.contains("closed on GitHub: #2"), "{out}");
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    assert_eq!(
        (state_of(&gh, 1), state_of(&gh, 2)),
        ("closed".into(), "closed".into())
    );
    let closes: Vec<String> = gh
        .requests()
        .iter()
        .filter(|q| q.method == "PATCH")
        .map(|q| format!("{} {}", q.path(), q.body["state"]))
        .collect();
    assert_eq!(
        closes,
        [
            "/repos/octo/hello/issues/1 \"closed\"",
            "/repos/octo/hello/issues/2 \"closed\""
        ],
        "each closed once"
    );
    let seen = fs::read_to_string(&argv).unwrap();
    assert!(
        seen.contains("Wrote"),
        "the session's `ralph complete`: {seen}"
    );
    assert!(seen.contains("ralph loop"), "{seen}");
    assert!(
        !seen.contains(TOKEN),
        "no process had the token in its arguments"
    );
    assert!(!out.contains(TOKEN));
    token_only_in_headers(&gh);
}

#[test]
fn a_parallel_run_waits_for_an_issues_blocker_and_closes_each_on_merge() {
    let env = project();
    let gh = linked(&env);
    gh.add_issue("First", "", &["ralph"]);
    gh.add_issue("Second", "Nothing to wait for.", &["ralph"]);
    gh.add_issue("Third", "Needs the first.\n\n**Blocked by** #1", &["ralph"]);
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] Third [#3]\n- [ ] First [#1]\n- [ ] Second [#2]\n",
    )
    .unwrap();
    tracker_github(&env);
    env.approve_config();
    env.commit_all("issues as steps");
    let log = env.tmp.path().join("sessions.log");
    let body = format!(
        r#"echo "$RALPH_STEP start $(date +%s.%N)" >> {log}
sleep 1
echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
git add -A && git commit -qm "step $RALPH_STEP"
echo "$RALPH_STEP end $(date +%s.%N)" >> {log}
echo '{RESULT}'"#,
        log = log.display()
    );
    let claude = stand_in(&env, "claude-timed", &body);
    let out = ralph_gh(&env, &gh)
        .args(["loop", "--parallel", "2", "--claude"])
        .arg(&claude)
        .stdout_with(0);
    assert!(out.contains("complete: all 3 steps done"), "{out}");
    let mut spans = std::collections::BTreeMap::new();
    for l in fs::read_to_string(&log).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let e = spans.entry(f[0].to_string()).or_insert((f64::MAX, 0.0_f64));
        let t: f64 = f[2].parse().unwrap();
        if f[1] == "start" {
            e.0 = e.0.min(t);
        } else {
            e.1 = e.1.max(t);
        }
    }
    let (first, second, third) = (spans["#1"], spans["#2"], spans["#3"]);
    assert!(
        first.0 < second.1 && second.0 < first.1,
        "side by side: {spans:?}"
    );
    assert!(third.0 > first.1, "#3 waited for #1: {spans:?}");
    for n in 1..=3 {
        assert_eq!(state_of(&gh, n), "closed", "#{n}");
        assert!(out.contains(&format!("closed on GitHub: #{n}")), "{out}");
    }
    token_only_in_headers(&gh);
}

#[test]
fn with_pr_the_pull_request_closes_the_issues_not_ralph() {
    let env = project();
    let gh = linked(&env);
    env.git(&["switch", "-q", "-c", "work"]);
    gh.add_issue("One", "", &["ralph"]);
    gh.add_issue("Two", "", &["ralph"]);
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Issues\n\n- [ ] One [#1]\n- [ ] Two [#2]\n",
    )
    .unwrap();
    tracker_github(&env);
    env.approve_config();
    env.commit_all("issues as steps");
    let (claude, _) = closing_stand_in(&env);
    let out = ralph_gh(&env, &gh)
        .args(["loop", "--pr", "--max-iterations", "4", "--claude"])
        .arg(&claude)
        .stdout_with(0);
    assert!(out.contains("complete: all 2 steps done"), "{out}");
    assert!(!out.contains("closed on GitHub"), "{out}");
    assert!(
        gh.requests()
            .iter()
            .all(|q| !(q.method == "PATCH" && q.path().contains("/issues/"))),
        "ralph closed no issue: {:?}",
        gh.requests()
    );
    let pull = &gh.pulls()[0];
    let body = pull["body"].as_str().unwrap();
    assert!(body.ends_with("\nCloses #1\nCloses #2\n"), "{body}");
    // Until it is merged the boxes and the issues disagree; merged, they
    // agree.
    let before = ralph_gh(&env, &gh).args(["verify-sync"]).stdout_with(1);
    assert!(before.contains("checked, but task #1 is open"), "{before}");
    gh.close_pull(pull["number"].as_u64().unwrap());
    ralph_gh(&env, &gh).args(["verify-sync"]).stdout_with(0);
    token_only_in_headers(&gh);
}

/// A folder where ralph keeps a file (`.ralph/.gitignore`) would stop the
/// import half-way: refused before anything is written.
#[test]
fn import_is_refused_whole_when_a_folder_stands_where_a_file_goes() {
    let env = TestEnv::new();
    env.git_init();
    fs::write(env.project.join("README.md"), "hello\n").unwrap();
    env.commit_all("start");
    let gh = linked(&env);
    gh.add_issue("One issue", "", &["ralph"]);
    fs::create_dir_all(env.project.join(".ralph/.gitignore")).unwrap();
    let before = tree(&env.project);
    let out = ralph_gh(&env, &gh)
        .args(["import", "github", "--yes"])
        .assert()
        .failure()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .contains(".ralph/.gitignore is a folder, where ralph keeps a file; nothing imported"),
        "{stderr}"
    );
    assert_eq!(tree(&env.project), before, "nothing written");
}

/// A session that adds a step naming another open issue and checks it
/// does not get that issue closed with your token: ralph closes only the
/// issues that were steps when the run began, and says which it left.
#[test]
fn a_step_a_session_adds_for_another_issue_does_not_get_it_closed() {
    let env = project();
    let gh = linked(&env);
    gh.add_issue("One", "", &["ralph"]);
    gh.add_issue("Someone else's", "", &["bug"]);
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] One [#1]\n",
    )
    .unwrap();
    tracker_github(&env);
    env.approve_config();
    env.commit_all("one issue as a step");
    let body = format!(
        r#"sed -i 's/- \[ \] One/- [x] One/' .ralph/spec.md
echo '- [x] Fixed, honest [#2]' >> .ralph/spec.md
git add -A && git commit -qm step
echo '{RESULT}'"#
    );
    let claude = stand_in(&env, "claude-widening", &body);
    let stdout = ralph_gh(&env, &gh)
        .args(["loop", "--max-iterations", "1", "--claude"])
        .arg(&claude)
        .stdout_with(4);
    // #2's box is checked and its issue open: not done, at the limit.
    assert!(stdout.contains("closed on GitHub: #1"), "{stdout}");
    assert!(
        stdout.contains("left open on GitHub: #2 (not steps when the run began"),
        "{stdout}"
    );
    assert_eq!(
        (state_of(&gh, 1), state_of(&gh, 2)),
        ("closed".into(), "open".into())
    );
}

/// An issue body that says it waits for more unlabelled issues than ralph
/// asks for one by one is refused naming what it is: the blockers, not the
/// spec's own issues.
#[test]
fn too_many_unlabelled_blockers_are_refused_as_blockers() {
    let env = project();
    let gh = linked(&env);
    let many: Vec<String> = (1000..1201).map(|n| format!("#{n}")).collect();
    gh.add_issue(
        "Waits a lot",
        &format!("Blocked by {}", many.join(", ")),
        &["ralph"],
    );
    gh.add_issue("Free", "", &["ralph"]);
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] Waits a lot [#1]\n- [ ] Free [#2]\n",
    )
    .unwrap();
    tracker_github(&env);
    env.approve_config();
    env.commit_all("issues as steps");
    let claude = stand_in(&env, "claude-unused", "echo '{RESULT}'");
    let out = ralph_gh(&env, &gh)
        .args(["loop", "--parallel", "2", "--claude"])
        .arg(&claude)
        .assert()
        .failure()
        .get_output()
        .clone();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("201 of the issues the steps wait for (`Blocked by #N` in their bodies) are not labelled `ralph`"),
        "{all}"
    );
    assert!(!all.contains("of the spec's issues"), "{all}");
}
