//! Answering a loop from GitHub: a real Claude Code session asks with
//! `ralph waiting --question`; the loop, waiting for an answer, posts the
//! question on the run's pull request (or the issue its step is) with the
//! user's token and reads that thread's comments (conditional requests)
//! for `/ralph answer` from someone with write access. Who may answer is
//! asked of the scripted GitHub, never read from the comment.

use std::fs;
use std::time::Duration;

use serde_json::Value;

use crate::support::github::{GitHub, Origin, Refusal};
use crate::support::*;

const TOKEN: &str = "ghp_answerTESTtoken0123456789abcdef";

const ASK: &str = "ralph waiting --question 'Which database should the app use?' \
    --option Postgres --option 'SQLite, for now' --blocker decision";

const A_WHILE: Duration = Duration::from_secs(120);

/// A session's command that works until it is stopped (a bare `sleep` is
/// refused by Claude Code).
const SLEEP: &str = "python3 -c 'import time; time.sleep(120)'";

fn events(env: &TestEnv) -> Vec<Value> {
    fs::read_to_string(run_dir(env).join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn loop_gh(env: &TestEnv, gh: &GitHub) -> Ralph {
    ralph_loop(env)
        .env("GITHUB_API_URL", &gh.url)
        .env("GH_TOKEN", TOKEN)
}

/// The question as ralph posted it: the thread's first comment, by the
/// token's user.
fn question_posted(gh: &GitHub, n: u64) -> String {
    let first = gh.comments(n).into_iter().next().expect("a comment");
    assert_eq!(first["user"]["login"], "ralph-bot");
    first["body"].as_str().unwrap().to_string()
}

/// The reads of thread `n`'s comments, in order: (sent an ETag, status).
fn reads(gh: &GitHub, n: u64) -> Vec<(bool, u16)> {
    let path = format!("/repos/octo/hello/issues/{n}/comments");
    gh.requests()
        .iter()
        .filter(|q| q.method == "GET" && q.path() == path)
        .map(|q| (q.if_none_match.is_some(), q.status))
        .collect()
}

#[test]
fn a_comment_on_the_pull_request_by_a_writer_answers_and_the_run_goes_on() {
    let env = project();
    let origin = Origin::new(&env, "octo", "hello");
    origin.link(&env, &env.project);
    env.git(&["switch", "-q", "-c", "work"]);
    let gh = GitHub::start("octo", "hello");
    let pr = gh.add_pull("work", "main", "Work");
    gh.grant("octocat", "write");
    // GitHub fails twice: said once, and the wait goes on.
    gh.refuse(
        Refusal::new(
            Some("GET"),
            &format!("/repos/octo/hello/issues/{pr}/comments"),
            502,
            "Server Error",
        )
        .times(2),
    );
    env.api.session([Reply::bash(ASK), Reply::text("Asked.")]);
    env.api.session([
        Reply::bash(CHECK_THE_BOX),
        Reply::text("Done, with Postgres."),
    ]);
    let live = Live::start(loop_gh(&env, &gh).args([
        "--pr",
        "--wait-for-answer",
        "10m",
        "--max-iterations",
        "5",
    ]));
    live.wait_for("asked on GitHub too, on pull request #1", A_WHILE);
    let body = question_posted(&gh, pr);
    assert!(
        body.starts_with("**ralph is waiting for an answer** (run `")
            && body.contains(
                "```text\nWhich database should the app use?\n(blocker: a decision)\n  1. Postgres\n  2. SQLite, for now\n```"
            )
            && body.contains("comment with `/ralph answer --option N` (N from 1 to 2) as its first line, or in words: `/ralph answer <your answer>`")
            && body.contains("someone with write access to this repository"),
        "{body}"
    );
    // Read while nothing changed: conditional, answered 304.
    assert!(
        eventually(A_WHILE, || reads(&gh, pr).contains(&(true, 304))),
        "{:?}",
        reads(&gh, pr)
    );
    assert_eq!(
        reads(&gh, pr)[..3],
        [(false, 502), (false, 502), (false, 200)]
    );
    gh.add_comment(
        pr,
        "octocat",
        "/ralph answer Postgres, with a migration script\x1b[2J",
    );
    let (code, out, err) = live.finish(A_WHILE);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_eq!(
        out.matches("GitHub answered 502 to GET /repos/octo/hello/issues/1/comments")
            .count(),
        1,
        "{out}"
    );
    assert!(
        out.contains(
            "answered by github:octocat: Postgres, with a migration script[2J; the run goes on\n"
        ),
        "{out}"
    );
    let second = told(&env, 2);
    assert!(
        second.contains("The answer:\n\n> Postgres, with a migration script[2J\n")
            && !second.contains('\u{1b}'),
        "{second}"
    );
    let answered = events(&env)
        .into_iter()
        .find(|l| l["kind"] == "answered")
        .unwrap();
    assert_eq!(answered["by"], "github:octocat");
    assert_eq!(
        answered["answer"]["text"],
        "Postgres, with a migration script[2J"
    );
    let last = gh.comments(pr).pop().unwrap();
    assert_eq!(last["user"]["login"], "ralph-bot");
    assert!(
        last["body"].as_str().unwrap().starts_with(
            "ralph took the answer of `octocat` (https://github.com/octo/hello/pull/1#issuecomment-"
        ),
        "{last}"
    );
    // The token went in headers only, and to no session.
    for q in gh.requests() {
        assert_eq!(
            q.authorization.as_deref(),
            Some(&*format!("Bearer {TOKEN}"))
        );
        assert!(!q.body.to_string().contains(TOKEN));
    }
    assert!(!out.contains(TOKEN) && !second.contains(TOKEN));
}

#[test]
fn on_the_steps_issue_only_a_writers_plain_new_comment_answers() {
    let env = project();
    let origin = Origin::new(&env, "octo", "hello");
    origin.link(&env, &env.project);
    let gh = GitHub::start("octo", "hello");
    let issue = gh.add_issue("The one step", "", &["ralph"]);
    fs::write(
        env.project.join(".ralph/spec.md"),
        format!("# Spec\n\n- [ ] The one step [#{issue}]\n"),
    )
    .unwrap();
    fs::write(
        env.project.join(".ralph/config.toml"),
        "tracker = \"github\"\n",
    )
    .unwrap();
    env.approve_config();
    env.commit_all("an issue as the step");
    gh.grant("reader", "read").grant("writer", "write");
    // The question and seven comments: three pages, each read.
    gh.max_per_page(3);
    env.api.session([Reply::bash(ASK), Reply::text("Asked.")]);
    let live =
        Live::start(loop_gh(&env, &gh).args(["--wait-for-answer", "14s", "--max-iterations", "5"]));
    live.wait_for("asked on GitHub too, on issue #1", A_WHILE);
    let body = question_posted(&gh, issue);
    assert!(body.contains("  2. SQLite, for now\n```"), "{body}");
    // None of these answers: a reader; someone GitHub does not know as a
    // collaborator (a fork's author); ralph's own token user; a writer's
    // edited comment; a writer's command quoted or fenced.
    gh.add_comment(issue, "reader", "/ralph answer --option 1");
    gh.add_comment(issue, "forker", "/ralph answer --option 1");
    gh.add_comment(issue, "ralph-bot", "/ralph answer --option 1");
    let edited = gh.add_comment(issue, "writer", "/ralph answer --option 2");
    gh.edit_comment(edited, "/ralph answer --option 1");
    gh.add_comment(
        issue,
        "writer",
        "> /ralph answer --option 1\n\nAs asked above?",
    );
    gh.add_comment(issue, "writer", "```\n/ralph answer --option 1\n```");
    gh.add_comment(issue, "writer", "Thinking about it.");
    let (code, out, err) = live.finish(A_WHILE);
    assert_eq!(code, Some(3), "{out}\n{err}");
    let not = |who: &str, why: &str| {
        format!("a comment by {who} on issue #1 is not taken as an answer: {why}\n")
    };
    for line in [
        not(
            "reader",
            "reader has read access to octo/hello; an answer needs write access or above",
        ),
        not(
            "forker",
            "forker has no access to octo/hello; an answer needs write access or above",
        ),
        not(
            "ralph-bot",
            "ralph-bot is the user of ralph's own token, whose comments are never commands (write from another account, or use `ralph answer` and `ralph stop`)",
        ),
        not("writer", "it was edited after it was posted"),
    ] {
        assert_eq!(out.matches(&line).count(), 1, "{line}\n{out}");
    }
    let misplaced = not(
        "writer",
        "`/ralph answer` does not begin its first line (a quote or a code block is not an answer)",
    );
    assert_eq!(out.matches(&misplaced).count(), 2, "{out}");
    assert!(out.contains("no answer came within 14s\n"), "{out}");
    assert!(!out.contains("answered by"), "{out}");
    let lines = events(&env);
    assert!(lines.iter().all(|l| l["kind"] != "answered"));
    assert_eq!(lines.last().unwrap()["kind"], "waiting");
    assert!(env.project.join(".ralph/WAITING").exists());
    // Nothing was taken: the thread is told the wait ended unanswered.
    let last = gh.comments(issue).pop().unwrap();
    assert_eq!(last["user"]["login"], "ralph-bot");
    assert_eq!(
        last["body"],
        "No answer came within 14s: the run stopped, waiting. Answer with `ralph answer` where it runs, then `ralph loop --resume`."
    );
}

/// While the run works, a writer's comments on its pull request raise its
/// limit, add a step and stop it; a reader's is refused, and what was on
/// the thread before the run is not read. Each command taken is told on
/// the thread and journaled with who sent it.
#[test]
fn a_writers_comments_raise_add_and_stop_a_running_loop() {
    let env = project();
    fs::write(
        env.project.join(".ralph/spec.md"),
        "# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n",
    )
    .unwrap();
    env.commit_all("two steps");
    let origin = Origin::new(&env, "octo", "hello");
    origin.link(&env, &env.project);
    env.git(&["switch", "-q", "-c", "work"]);
    let gh = GitHub::start("octo", "hello");
    let pr = gh.add_pull("work", "main", "Work");
    gh.grant("octocat", "write").grant("reader", "read");
    gh.add_comment(pr, "octocat", "/ralph stop");
    let go = env.tmp.path().join("go");
    env.api.session([
        Reply::bash(once_made(&go, DO_STEP)),
        Reply::text("One done."),
    ]);
    env.api.session([Reply::bash(SLEEP), Reply::text("Slept.")]);
    let live = Live::start(loop_gh(&env, &gh).args(["--pr", "--max-iterations", "1"]));
    live.wait_for("Bash: while", A_WHILE);
    gh.add_comment(pr, "reader", "/ralph stop");
    gh.add_comment(pr, "octocat", "/ralph raise --iterations 1");
    gh.add_comment(pr, "octocat", "/ralph add Write the docs");
    let told = |what: &str| {
        gh.comments(pr)
            .iter()
            .filter_map(|c| c["body"].as_str().map(String::from))
            .filter(|b| b.starts_with("ralph took the command of `octocat` (") && b.ends_with(what))
            .count()
    };
    assert!(
        eventually(A_WHILE, || told("): `raise --max-iterations by 1`.") == 1
            && told("): `add a step: Write the docs`.") == 1),
        "{:?}",
        gh.comments(pr)
    );
    live.wait_for(
        "a comment by reader on pull request #1 is not taken as a command: reader has read access to octo/hello; a command needs write access or above",
        A_WHILE,
    );
    // The first session ends: the limit is raised and the step added
    // between sessions, and a second session runs, until stopped.
    fs::write(&go, "").unwrap();
    live.wait_for("Bash: python3 -c", A_WHILE);
    gh.add_comment(pr, "octocat", "/ralph stop");
    let (code, out, err) = live.finish(A_WHILE);
    assert_eq!(code, Some(130), "{out}\n{err}");
    for said in [
        "raise --max-iterations by 1 (sent by github:octocat)",
        "add a step: Write the docs (sent by github:octocat): ",
        "ralph stop (sent by github:octocat)",
    ] {
        assert_eq!(out.matches(said).count(), 1, "{said}\n{out}");
    }
    assert_eq!(told("): `stop now`."), 1, "{:?}", gh.comments(pr));
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(
        spec.contains("- [x] **1** One") && spec.contains("Write the docs"),
        "{spec}"
    );
    let commanded: Vec<(String, String)> = events(&env)
        .iter()
        .filter(|l| l["kind"] == "commanded")
        .map(|l| {
            (
                l["by"].as_str().unwrap().to_string(),
                l["command"]["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let by = |k: &str| ("github:octocat".to_string(), k.to_string());
    assert_eq!(commanded, [by("raise"), by("add_step"), by("stop")]);
    assert_eq!(summary(&env)["iterations"], 2, "{out}");
}
