//! Many machines, one spec: `ralph worker --next` on separate clones (each
//! with its own home and state), claiming steps with leases on one remote
//! (a local bare repository reached as GitHub's through `insteadOf`), and
//! `ralph merge --follow` merging them as they arrive.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::github::Origin;
use crate::support::*;

/// A machine: a clone of the repository, a home of its own (git's config
/// copied: the `insteadOf` that reaches the bare repository as GitHub's).
struct Machine {
    dir: PathBuf,
    home: PathBuf,
}

fn machine(env: &TestEnv, name: &str) -> Machine {
    let root = env.tmp.path().join(format!("machine-{name}"));
    let home = root.join("home");
    fs::create_dir_all(&home).unwrap();
    fs::copy(env.home.join(".gitconfig"), home.join(".gitconfig")).unwrap();
    env.git_in(
        &root,
        &["clone", "-q", "https://github.com/octo/hello.git", "work"],
    );
    let dir = root.join("work");
    env.git_in(&dir, &["config", "user.name", name]);
    env.git_in(&dir, &["config", "user.email", "m@example.com"]);
    Machine { dir, home }
}

impl Machine {
    /// ralph in this clone, with this machine's home and state folders.
    fn ralph(&self, env: &TestEnv) -> Ralph {
        let h = |d: &str| self.home.join(d);
        env.ralph()
            .current_dir(&self.dir)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", h(".config"))
            .env("XDG_DATA_HOME", h(".local/share"))
            .env("XDG_CACHE_HOME", h(".cache"))
            .env("XDG_STATE_HOME", h(".local/state"))
    }
}

/// A project with `spec` on GitHub's octo/hello (its `main`).
fn shared(spec: &str) -> (TestEnv, Origin) {
    let env = project();
    fs::write(env.project.join(".ralph/spec.md"), spec).unwrap();
    env.commit_all("the spec");
    let origin = Origin::new(&env, "octo", "hello");
    origin.link(&env, &env.project);
    (env, origin)
}

/// A session that logs when it starts (and on which machine), takes
/// `secs`, then does its step (the first open one of its spec) and commits.
fn timed_agent(env: &TestEnv, secs: impl std::fmt::Display) -> (PathBuf, PathBuf) {
    let log = env.tmp.path().join("sessions.log");
    let body = format!(
        r#"echo "$(date +%s.%N) $RALPH_STEP $HOME" >> {log}
sleep {secs}
echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
git add -A && git commit -qm "step $RALPH_STEP"
echo '{RESULT}'"#,
        log = log.display()
    );
    (stand_in(env, "claude-timed", &body), log)
}

/// Each session's start (seconds, as `date +%s.%N` said), step and home.
fn sessions(log: &Path) -> Vec<(f64, String, String)> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut w = l.split(' ');
            let t = w.next().unwrap().parse().unwrap();
            (
                t,
                w.next().unwrap().to_string(),
                w.next().unwrap().to_string(),
            )
        })
        .collect()
}

/// A hook in the bare repository that logs each ref it takes, and when.
fn log_pushes(env: &TestEnv, origin: &Origin) -> PathBuf {
    let log = env.tmp.path().join("pushes.log");
    write_exec(
        &origin.bare.join("hooks/post-receive"),
        &format!(
            "#!/bin/sh\nwhile read old new ref; do echo \"$(date +%s.%N) $ref $new\" >> {}; done\n",
            log.display()
        ),
    );
    log
}

/// When each step's box was first checked on the pushed integration
/// branch (its merge), from the push log.
fn merged_at(env: &TestEnv, origin: &Origin, pushes: &Path) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for l in fs::read_to_string(pushes).unwrap().lines() {
        let w: Vec<&str> = l.split(' ').collect();
        if w[1] != "refs/heads/ralph/spec" || w[2].starts_with("0000000") {
            continue;
        }
        let spec = origin.git(env, &["show", &format!("{}:.ralph/spec.md", w[2])]);
        for line in spec.lines().filter(|l| l.starts_with("- [x] **")) {
            let n = line["- [x] **".len()..].split("**").next().unwrap();
            out.entry(n.to_string())
                .or_insert(w[0].parse::<f64>().unwrap());
        }
    }
    out
}

/// The open steps' slugs, by label (`1`, `2`...), as `ralph steps` lists them.
fn slugs(env: &TestEnv, m: &Machine) -> BTreeMap<String, String> {
    let v = m.ralph(env).args(["steps", "--json"]).json_with(0);
    let mut out = BTreeMap::new();
    for list in ["ready", "finished", "waiting"] {
        for s in v[list].as_array().unwrap() {
            let label = s["key"].as_str().unwrap().split("**").nth(1).unwrap();
            out.insert(label.to_string(), s["slug"].as_str().unwrap().to_string());
        }
    }
    out
}

const TWELVE: &str = "# Spec\n\n## First\n\n- [ ] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n\n## Second\n\n- [ ] **4** Four\n- [ ] **5** Five\n- [ ] **6** Six\n\n## Third\n\n- [ ] **7** Seven\n- [ ] **8** Eight\n- [ ] **9** Nine\n\n## Fourth\n\n- [ ] **10** Ten\n- [ ] **11** Eleven\n\n## Last\n\n- [ ] **12** Twelve\n";

/// Which section each step of TWELVE is in (a step waits for the ones before).
fn phase(step: &str) -> usize {
    match step.parse::<u32>().unwrap() {
        1..=3 => 1,
        4..=6 => 2,
        7..=9 => 3,
        10..=11 => 4,
        _ => 5,
    }
}

#[test]
fn three_machines_and_a_merger_work_a_twelve_step_spec_each_step_once_dependents_after_their_blockers()
 {
    let (env, origin) = shared(TWELVE);
    let pushes = log_pushes(&env, &origin);
    const SESSION_SECS: u32 = 2;
    let (agent, log) = timed_agent(&env, SESSION_SECS);
    let merger = machine(&env, "merger");
    let workers: Vec<Machine> = ["m1", "m2", "m3"].map(|n| machine(&env, n)).into();
    let t0 = Instant::now();
    let merge = Live::start(
        merger
            .ralph(&env)
            .args(["merge", "--follow", "--poll", "1s", "--claude"])
            .arg(&agent),
    );
    let live: Vec<Live> = workers
        .iter()
        .enumerate()
        .map(|(i, m)| {
            Live::start(
                m.ralph(&env)
                    .args(["worker", "--next", "--lease", "30s", "--poll", "1s"])
                    .args(["--machine", &format!("m{}", i + 1), "--claude"])
                    .arg(&agent),
            )
        })
        .collect();
    let mut outs = Vec::new();
    for w in live {
        let (code, out, err) = w.finish(Duration::from_secs(300));
        assert_eq!(code, Some(0), "{out}\n{err}");
        assert!(
            out.contains("no step is ready or claimed: done here"),
            "{out}"
        );
        outs.push(out);
    }
    let (code, out, err) = merge.finish(Duration::from_secs(120));
    let total = t0.elapsed();
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("every step is merged (12 of 12)"), "{out}");

    // Every step worked exactly once, by one session.
    let sessions = sessions(&log);
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for (_, step, _) in &sessions {
        *count.entry(step.clone()).or_default() += 1;
    }
    assert_eq!(count.len(), 12, "{sessions:?}");
    assert!(count.values().all(|n| *n == 1), "{count:?}");
    // Each of the three machines took part.
    for m in &workers {
        let home = m.home.display().to_string();
        assert!(
            sessions.iter().any(|(_, _, h)| *h == home),
            "{home} worked nothing: {sessions:?}"
        );
    }
    // Each dependent started only after every step of the sections before
    // it was merged and pushed.
    let merged = merged_at(&env, &origin, &pushes);
    assert_eq!(merged.len(), 12, "{merged:?}");
    for (start, step, _) in &sessions {
        for (blocker, at) in &merged {
            if phase(blocker) < phase(step) {
                assert!(
                    start > at,
                    "step {step} started at {start} before its blocker {blocker} was merged at {at}"
                );
            }
        }
    }
    let spec = origin.git(&env, &["show", "ralph/spec:.ralph/spec.md"]);
    assert_eq!(spec.matches("- [x]").count(), 12, "{spec}");
    // The claims are gone: each released once its branch was pushed.
    let claims = origin.git(&env, &["for-each-ref", "refs/ralph/claims"]);
    assert_eq!(claims, "", "claims left on the remote");
    // Measured, not asserted: the whole run against its critical path
    // (five sections one after another, one session each).
    let first = sessions.iter().map(|s| s.0).fold(f64::MAX, f64::min);
    let last_merge = merged.values().cloned().fold(0.0, f64::max);
    eprintln!(
        "many machines: 12 steps, 3 workers, {SESSION_SECS}s sessions: total {:.1}s (first session to last merge {:.1}s); critical path of sessions {}s",
        total.as_secs_f64(),
        last_merge - first,
        5 * SESSION_SECS
    );
}

/// A claim commit pushed to the remote by hand, as any clone could.
fn push_claim(env: &TestEnv, m: &Machine, slug: &str, message: &str) {
    let tree = env.git_in(&m.dir, &["hash-object", "-t", "tree", "-w", "/dev/null"]);
    let sha = env.git_in(&m.dir, &["commit-tree", tree.trim(), "-m", message]);
    env.git_in(
        &m.dir,
        &[
            "push",
            "-q",
            "origin",
            &format!("{}:refs/ralph/claims/{slug}", sha.trim()),
        ],
    );
}

#[test]
fn a_forged_claim_with_a_far_future_lease_holds_no_longer_than_the_runs_lease_and_status_shows_claims()
 {
    let (env, origin) = shared("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let (agent, log) = timed_agent(&env, 0);
    let forger = machine(&env, "forger");
    let s = slugs(&env, &forger);
    let far = now_epoch() + 10 * 365 * 86400;
    push_claim(
        &env,
        &forger,
        &s["1"],
        &format!(
            "ralph claim\n\nstep: {}\nmachine: forger\nrun: a session\nsince: {far}\nrenewed: {far}\nlease: {far}\n",
            s["1"]
        ),
    );
    // Status, from the remote alone: the claim as it reads, its lease as
    // judged here (never more than an hour, whatever it says).
    let v = forger
        .ralph(&env)
        .args(["status", "--remote", "--json"])
        .json_with(0);
    assert_eq!(v["branch"], "ralph/spec");
    assert_eq!(
        (v["merged"].as_u64(), v["total"].as_u64()),
        (Some(0), Some(2))
    );
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps[0]["slug"], s["1"].as_str());
    assert_eq!(steps[0]["state"], "ready");
    assert_eq!(steps[0]["claim"]["machine"], "forger");
    assert_eq!(steps[0]["claim"]["live"], true);
    let left = steps[0]["claim"]["lease_left_secs"].as_u64().unwrap();
    assert!(left <= 3600 && left > 3500, "{left}");
    assert!(steps[1]["claim"].is_null() && steps[1]["pushed"].is_null());
    let text = forger
        .ralph(&env)
        .args(["status", "--remote"])
        .stdout_with(0);
    assert!(
        text.contains("ralph/spec (not pushed yet): 0 of 2 steps merged"),
        "{text}"
    );
    assert!(text.contains("claimed by forger since"), "{text}");
    assert!(text.contains("lease 1h left"), "{text}");
    assert!(text.contains("merger: none follows the run"), "{text}");

    // A worker whose run sets a 5s lease: the other step first, then the
    // forged claim taken over once 5s have passed since it saw it.
    let m = machine(&env, "m1");
    let out = m
        .ralph(&env)
        .args([
            "worker",
            "--next",
            "--lease",
            "5s",
            "--poll",
            "1s",
            "--machine",
            "m1",
        ])
        .arg("--claude")
        .arg(&agent)
        .stdout_with(0);
    let took_2 = out.find(&format!("claimed {} as m1\n", s["2"]));
    let took_1 = out.find(&format!(
        "claimed {} as m1 (taking over forger's claim, which ran out)",
        s["1"]
    ));
    assert!(took_2.is_some() && took_1.is_some(), "{out}");
    assert!(took_2 < took_1, "{out}");
    assert!(
        out.contains("waiting: 1 claimed by other machines"),
        "{out}"
    );
    let worked: Vec<String> = sessions(&log).into_iter().map(|s| s.1).collect();
    assert_eq!(worked, ["2", "1"]);
    // Both pushed done, no claim left; status says so (in a clone that
    // starts the integration branch from main, as the remote has no
    // integration branch yet).
    let v = forger
        .ralph(&env)
        .args(["status", "--remote", "--json"])
        .json_with(0);
    for st in v["steps"].as_array().unwrap() {
        assert_eq!(st["state"], "to-merge", "{st}");
        assert_eq!(st["pushed"]["done"], true, "{st}");
        assert!(st["claim"].is_null(), "{st}");
    }
    let text = forger
        .ralph(&env)
        .args(["status", "--remote"])
        .stdout_with(0);
    assert!(text.contains(", done"), "{text}");
    // Each step's branch made from the integration branch, not from the
    // step this machine worked before it.
    let files = origin.git(
        &env,
        &["ls-tree", "--name-only", &format!("ralph/step-{}", s["1"])],
    );
    assert!(
        files.contains("step-1.txt") && !files.contains("step-2.txt"),
        "{files}"
    );
    assert_eq!(origin.git(&env, &["for-each-ref", "refs/ralph/claims"]), "");
}

#[test]
fn two_workers_racing_each_work_one_step_and_a_claim_renewed_through_a_long_session_is_left_alone()
{
    let (env, origin) =
        shared("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n\n## Then\n\n- [ ] **3** Three\n");
    // Step 1's session outlasts the 3s lease several times over: only its
    // renewals keep the other machine off it.
    let (agent, log) = timed_agent(&env, "$(( RALPH_STEP == 1 ? 9 : 1 ))");
    let (a, b) = (machine(&env, "a"), machine(&env, "b"));
    let start = |m: &Machine, name: &str| {
        Live::start(
            m.ralph(&env)
                .args(["worker", "--next", "--lease", "3s", "--poll", "1s"])
                .args(["--machine", name, "--claude"])
                .arg(&agent),
        )
    };
    let (la, lb) = (start(&a, "a"), start(&b, "b"));
    let (ca, oa, ea) = la.finish(Duration::from_secs(120));
    let (cb, ob, eb) = lb.finish(Duration::from_secs(120));
    assert_eq!((ca, cb), (Some(0), Some(0)), "{oa}{ea}\n{ob}{eb}");
    // One step each: whoever lost the race for the first took the other,
    // then waited for the first while its claim was renewed.
    let worked = sessions(&log);
    assert_eq!(worked.len(), 2, "{worked:?}\n{oa}\n{ob}");
    assert_ne!(worked[0].1, worked[1].1, "{worked:?}");
    assert_ne!(worked[0].2, worked[1].2, "{worked:?}");
    let (waiter, _) = if oa.contains("claimed 2-") {
        (&oa, &ob)
    } else {
        (&ob, &oa)
    };
    assert!(
        waiter.contains("waiting: 1 claimed by other machines"),
        "{waiter}"
    );
    for out in [&oa, &ob] {
        assert!(!out.contains("taking over"), "{out}");
        // Step 3 waits for a merge nobody runs here: both end, saying so.
        assert!(
            out.contains("no step is ready or claimed: done here (1 worked"),
            "{out}"
        );
    }
    assert_eq!(origin.git(&env, &["for-each-ref", "refs/ralph/claims"]), "");
}

#[test]
fn a_worker_that_loses_the_race_for_a_step_at_the_remote_takes_the_next() {
    let (env, origin) = shared("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let (agent, log) = timed_agent(&env, 0);
    let a = machine(&env, "a");
    let s = slugs(&env, &a);
    // Another machine's claim on step 1 lands between this worker's look
    // and its push (the remote's hook makes it, as a racing push would):
    // the remote's compare-and-swap refuses the worker's.
    let now = now_epoch();
    let tree = origin.git(&env, &["hash-object", "-t", "tree", "-w", "/dev/null"]);
    let winner = origin.git(
        &env,
        &[
            "-c",
            "user.name=winner",
            "-c",
            "user.email=w@example.com",
            "commit-tree",
            tree.trim(),
            "-m",
            &format!(
                "ralph claim\n\nstep: {}\nmachine: winner\nrun: r\nsince: {now}\nrenewed: {now}\nlease: 600\n",
                s["1"]
            ),
        ],
    );
    let once = env.tmp.path().join("raced");
    write_exec(
        &origin.bare.join("hooks/pre-receive"),
        &format!(
            "#!/bin/sh\nwhile read old new ref; do\n  if [ \"$ref\" = refs/ralph/claims/{slug} ] && mkdir {once} 2>/dev/null; then\n    env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES git update-ref refs/ralph/claims/{slug} {winner}\n  fi\ndone\n",
            slug = s["1"],
            once = once.display(),
            winner = winner.trim()
        ),
    );
    let out = a
        .ralph(&env)
        .args([
            "worker",
            "--next",
            "--lease",
            "2s",
            "--poll",
            "1s",
            "--machine",
            "a",
        ])
        .arg("--claude")
        .arg(&agent)
        .stdout_with(0);
    let lost = out.find(&format!(
        "another machine claimed {} first: looking again",
        s["1"]
    ));
    let next = out.find(&format!("claimed {} as a\n", s["2"]));
    assert!(lost.is_some() && next.is_some() && lost < next, "{out}");
    // The winner's claim holds (here, as long as this run's 2s lease),
    // then is taken over.
    assert!(
        out.contains("taking over winner's claim, which ran out"),
        "{out}"
    );
    let worked: Vec<String> = sessions(&log).into_iter().map(|s| s.1).collect();
    assert_eq!(worked, ["2", "1"]);
}

#[test]
fn a_machine_killed_mid_step_loses_its_claim_and_another_finishes_the_step_from_its_pushed_work() {
    let (env, origin) = shared("# Spec\n\n- [ ] **1** Only step\n");
    let hung = env.tmp.path().join("hung");
    let pid = env.tmp.path().join("hung.pid");
    // The first session does half the step (its cost stops the loop, which
    // pushes it); the second hangs until its machine dies; the third
    // finishes the step.
    let agent = stand_in(
        &env,
        "claude-dies",
        &format!(
            r#"if [ ! -e half.txt ]; then
  echo half > half.txt; git add -A && git commit -qm half
elif mkdir {hung} 2>/dev/null; then
  echo $$ > {pid}; exec sleep 300
else
  echo done > done.txt; sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md; git add -A && git commit -qm done
fi
echo '{RESULT}'"#,
            hung = hung.display(),
            pid = pid.display()
        ),
    );
    let (a, b) = (machine(&env, "a"), machine(&env, "b"));
    let next = |m: &Machine, name: &str| {
        m.ralph(&env)
            .args([
                "worker",
                "--next",
                "--lease",
                "5s",
                "--poll",
                "1s",
                "--machine",
                name,
            ])
            .arg("--claude")
            .arg(&agent)
    };
    // Begun by hand (`ralph worker STEP`, no claim): its cost cap stops it
    // after one session, its work pushed all the same.
    let slug = slugs(&env, &a)["1"].clone();
    let out = a
        .ralph(&env)
        .args(["worker", &slug, "--max-cost", "0.5", "--claude"])
        .arg(&agent)
        .stdout_with(4);
    assert!(out.contains("pushed ralph/step-1-"), "{out}");
    let half = step_tip(&origin, &env);
    assert!(!half.is_empty(), "the half-done step pushed");
    // Machine a again: it claims the step, goes on from the pushed branch,
    // and dies mid-session (its whole process group, SIGKILL).
    let dying = Live::start(next(&a, "a"));
    dying.wait_for("going on from origin's", Duration::from_secs(30));
    assert!(eventually(Duration::from_secs(30), || pid.exists()));
    dying.signal_group(nix::sys::signal::Signal::SIGKILL);
    let (code, _, _) = dying.finish(Duration::from_secs(10));
    assert_eq!(code, None, "killed");
    if let Ok(p) = fs::read_to_string(&pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(p.trim().parse().unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_ne!(
        origin.git(&env, &["for-each-ref", "refs/ralph/claims"]),
        "",
        "a's claim is left"
    );
    // Machine b waits out a's lease, takes the step over, and finishes it
    // from what a pushed.
    let out = next(&b, "b").stdout_with(0);
    assert!(
        out.contains("waiting: 1 claimed by other machines"),
        "{out}"
    );
    assert!(
        out.contains("(taking over a's claim, which ran out)"),
        "{out}"
    );
    assert!(out.contains("going on from origin's"), "{out}");
    let done = step_tip(&origin, &env);
    origin.git(&env, &["merge-base", "--is-ancestor", &half, &done]);
    let files = origin.git(&env, &["ls-tree", "--name-only", &done]);
    assert!(
        files.contains("half.txt") && files.contains("done.txt"),
        "{files}"
    );
    assert_eq!(origin.git(&env, &["for-each-ref", "refs/ralph/claims"]), "");
}

#[test]
fn a_merger_claim_pushed_once_with_a_future_renewal_is_watched_then_taken_over_not_obeyed_forever()
{
    let (env, origin) = shared("# Spec\n\n- [ ] **1** One\n");
    let (agent, _log) = timed_agent(&env, 0);
    let (m, merger) = (machine(&env, "m"), machine(&env, "merger"));
    let slug = slugs(&env, &m)["1"].clone();
    m.ralph(&env)
        .args(["worker", &slug, "--claude"])
        .arg(&agent)
        .stdout_with(0);
    // Pushed once (a session, another clone), its renewal stated ten
    // years on: each merger that starts sees it for the first time, so at
    // a look it is as live as a real merger's claim.
    let far = now_epoch() + 10 * 365 * 86400;
    push_claim(
        &env,
        &merger,
        "mergerralph-spec",
        &format!(
            "ralph claim\n\nstep: mergerralph-spec\nmachine: forger\nrun: r\nsince: {far}\nrenewed: {far}\nlease: {far}\n"
        ),
    );
    let out = merger
        .ralph(&env)
        .args(["merge", "--follow", "--lease", "2s", "--poll", "1s"])
        .arg("--claude")
        .arg(&agent)
        .stdout_with(0);
    assert!(
        out.contains(
            "the merger's claim on ralph/spec by machine forger says it was renewed in the future: watched"
        ),
        "{out}"
    );
    assert!(out.contains("every step is merged (1 of 1)"), "{out}");
    assert_eq!(origin.git(&env, &["for-each-ref", "refs/ralph/claims"]), "");
}

/// Where the remote's step branch (the only one) is now.
fn step_tip(origin: &Origin, env: &TestEnv) -> String {
    origin
        .git(
            env,
            &[
                "for-each-ref",
                "--format=%(objectname)",
                "refs/heads/ralph/step-*",
            ],
        )
        .trim()
        .to_string()
}
