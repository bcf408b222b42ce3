//! `ralph worker STEP`: one step of a parallel run, on a machine of its
//! own: its branch made (or fetched, to go on with), a worker loop on it
//! until the step is done, then the branch pushed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use super::steps::On;
use crate::config::Options;
use crate::exit::{ExitStatus, Stop};
use crate::history::records::RunDir;
use crate::parallel::claims::{self, Claim};
use crate::parallel::remote::{self, StepInfo};
use crate::parallel::{texts, workers};
use crate::run::engine::Outcome;
use crate::run::ui::Ui;
use crate::work::project::Project;
use crate::work::spec;

/// Work one step of a parallel run on this machine, and push its branch;
/// with --next, claim and work the run's steps one after another.
///
/// In a clean checkout of the repository (a job's fresh clone): the step's
/// branch `ralph/step-<slug>` is made from the integration branch (see
/// `ralph steps`), with the step first in its spec; when the remote has it
/// already (a job run again), it goes on from there. A worker loop (the
/// options of `ralph loop`) works the step until its box is checked (and
/// its task closed), then the branch is pushed to `origin`, never forced;
/// it is pushed also when the loop stopped before (a limit, --max-time),
/// so that the next worker goes on from it. `ralph merge` merges it.
///
/// With --next, any number of machines share the run through the remote
/// alone: each claims the next ready step by creating its claim ref
/// `refs/ralph/claims/<slug>` on `origin` (of machines that race, one
/// wins), renews it while the step is worked, and deletes it once the
/// step's branch is pushed; a claim not renewed within its lease (a machine
/// that died) is taken over, going on from the step's pushed branch. It
/// goes on while a step is ready or claimed (waiting for steps that
/// `ralph merge --follow` makes ready), and ends when none is.
///
/// Exit status: 0 when the step is done (or was already; with --next: when
/// no step is left to claim), else the loop's (see `ralph loop --help`).
#[derive(Debug, Args)]
pub struct Worker {
    /// The step: its slug (as `ralph steps` lists it) or its key (its task,
    /// label or text)
    #[arg(
        value_name = "STEP",
        required_unless_present = "next",
        conflicts_with = "next"
    )]
    step: Option<String>,

    /// The worker's name in its records and lines [default: the step's slug]
    #[arg(long, value_name = "NAME")]
    name: Option<String>,

    /// Claim the next ready step on the remote, work it, push it, release
    /// the claim, and go on until no step is ready or claimed
    #[arg(long)]
    next: bool,

    /// With --next: how long this machine's claim holds without a renewal
    /// (it is renewed a third of the way through), and the longest that
    /// another machine's claim is honoured here, whatever it says (2s to 1h)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::config::parse_duration, requires = "next")]
    lease: Duration,

    /// With --next: this machine's name in its claims [default: the host's name]
    #[arg(long, value_name = "NAME", requires = "next")]
    machine: Option<String>,

    /// With --next: how often the remote is read while every ready step is
    /// claimed by another machine, or none is ready yet (1s to 10m)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::config::parse_duration, requires = "next")]
    poll: Duration,

    #[command(flatten)]
    on: On,

    #[command(flatten)]
    options: Options,
}

fn usage(msg: impl std::fmt::Display) -> anyhow::Error {
    Stop::with(ExitStatus::Usage, msg.to_string())
}

impl Run for Worker {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        remote::refuse_changes(&project.root, "ralph worker")?;
        match &self.step {
            Some(step) if !self.next => self.one(&project, step),
            _ => self.next(&project),
        }
    }
}

impl Worker {
    /// Work `given` (a slug or a key) on its branch and push it.
    fn one(&self, project: &Project, given: &str) -> Result<ExitStatus> {
        let root = project.root.clone();
        let (target, base) = self.on.reach(&root)?;
        let text = remote::show(&root, &base.commit, ".ralph/spec.md");
        let parsed = spec::parse(&text);
        let Some(step) = remote::find(&parsed.steps, given) else {
            return Err(usage(format!(
                "the spec of {} has no step {:?}; `ralph steps` lists them",
                base.branch,
                crate::output::visible_line(given)
            )));
        };
        let info = StepInfo::of(step);
        let name = self.name.clone().unwrap_or_else(|| info.slug.clone());
        let ui = Ui::for_loop(&name, true);
        if step.checked {
            ui.note(&format!(
                "{} is merged into {} already: nothing to do",
                info.key, base.branch
            ));
            return Ok(ExitStatus::Success);
        }
        let continued = self.checkout(&root, &target, &base, &info)?;
        ui.note(&format!(
            "step {} on branch {} ({})",
            crate::output::visible_line(&info.key),
            info.branch,
            if continued {
                format!("going on from {}'s", target.remote)
            } else {
                format!(
                    "new, from {} at {}",
                    base.branch,
                    &base.commit[..12.min(base.commit.len())]
                )
            }
        ));
        let status = if done_here(project, &info.key) {
            ui.note("its step is done on its branch already: `ralph merge` merges it");
            ExitStatus::Success
        } else {
            self.work(project, &info, &name)?
        };
        let pushed = push(&root, &target, &base.commit, &info, &ui);
        Ok(match pushed {
            Err(()) => ExitStatus::Failure,
            Ok(()) => status,
        })
    }

    /// --next: claim, work, push, release, until no step is ready or claimed.
    fn next(&self, project: &Project) -> Result<ExitStatus> {
        let root = project.root.clone();
        let lease = self.lease.as_secs();
        if !(2..=claims::MAX_LEASE).contains(&lease) {
            return Err(usage(format!(
                "--lease {}s is out of range: give 2s to 1h",
                lease
            )));
        }
        if !(1..=600).contains(&self.poll.as_secs()) {
            return Err(usage(format!(
                "--poll {}s is out of range: give 1s to 10m",
                self.poll.as_secs()
            )));
        }
        let me = Me {
            machine: self.machine.clone().unwrap_or_else(host_name),
            run: run_id(),
        };
        let ui = Ui::for_loop("next", true);
        // Until the remote has the integration branch, every machine starts
        // it from its HEAD (see `ralph steps`): this checkout goes back
        // there after each step, so that the next one is not made from the
        // last one's branch.
        let start = crate::git::at(&root).run(&["rev-parse", "HEAD"], &[])?;
        let mut seen = claims::Seen::default();
        let mut worked = 0usize;
        let mut said_waiting = String::new();
        let mut failed_looks = 0;
        loop {
            if let Some(why) = crate::procs::signals::stop_requested() {
                ui.note(&format!("stopped ({why}) after {worked} step(s)"));
                return Ok(ExitStatus::Code(130));
            }
            // The remote moves while it is read (a step branch listed, then
            // merged and deleted before its fetch), and a network fails for
            // a moment: looked at again, a few times.
            let look = match Look::read(&root, &self.on, &mut seen, lease) {
                Ok(l) => {
                    failed_looks = 0;
                    l
                }
                Err(e) if failed_looks < 3 => {
                    failed_looks += 1;
                    ui.note(&format!("{e:#}: looking again"));
                    sleep_unless_stopped(self.poll);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let now = crate::timefmt::now_epoch();
            let ready: Vec<String> = look.board.ready.iter().map(|s| s.slug.clone()).collect();
            match claims::pick(&ready, &look.claims, now) {
                claims::Pick::Claim { slug, expect } => {
                    let claim = Claim {
                        step: slug.clone(),
                        machine: me.machine.clone(),
                        run: me.run.clone(),
                        since: now,
                        renewed: now,
                        lease,
                    };
                    let sha = remote::claim_commit(&root, &claim)?;
                    if !remote::swap_claim(
                        &root,
                        &look.target,
                        &slug,
                        Some(&sha),
                        expect.as_deref(),
                    )? {
                        ui.note(&format!(
                            "another machine claimed {slug} first: looking again"
                        ));
                        continue;
                    }
                    let taken = expect.as_ref().and_then(|_| look.claims.get(&slug));
                    ui.note(&format!(
                        "claimed {slug} as {}{}",
                        crate::output::visible_line(&me.machine),
                        match taken {
                            Some(j) => format!(
                                " (taking over {}'s claim, which ran out)",
                                j.claim
                                    .as_ref()
                                    .map(|c| c.machine.clone())
                                    .unwrap_or_else(|| "an unreadable".into())
                            ),
                            None => String::new(),
                        }
                    ));
                    said_waiting.clear();
                    let holding = Holding::start(&root, &look.target, claim, sha, "next");
                    let status = self.one(project, &slug);
                    let last = holding.stop();
                    if let Some(last) = last {
                        match remote::swap_claim(&root, &look.target, &slug, None, Some(&last)) {
                            Ok(true) => ui.note(&format!("released the claim on {slug}")),
                            Ok(false) => ui.note(&format!(
                                "the claim on {slug} is another machine's now: left as it is"
                            )),
                            Err(e) => ui.note(&format!("{e:#} (it runs out on its own)")),
                        }
                    }
                    worked += 1;
                    let status = status?;
                    crate::git::at(&root).run(&["switch", "--quiet", "--detach", &start], &[])?;
                    if status != ExitStatus::Success {
                        return Ok(status);
                    }
                }
                claims::Pick::Nothing => {
                    let live: Vec<&String> = look
                        .claims
                        .iter()
                        .filter(|(slug, j)| j.live(now) && look.open.contains(*slug))
                        .map(|(slug, _)| slug)
                        .collect();
                    // Steps that wait can become ready when the steps
                    // being worked are done, or when a merger that is
                    // following the run merges the ones done.
                    let merger = look
                        .claims
                        .get(&claims::merger_slot(&look.board.branch))
                        .is_some_and(|j| j.live(now));
                    let can_come = !look.board.waiting.is_empty()
                        && (!live.is_empty() || (merger && !look.board.finished.is_empty()));
                    if live.is_empty() && !can_come {
                        ui.note(&format!(
                            "no step is ready or claimed: done here ({worked} worked on this machine; {} of {} merged)",
                            look.board.merged, look.board.total
                        ));
                        return Ok(ExitStatus::Success);
                    }
                    let why = format!(
                        "waiting: {} claimed by other machines, {} done and not merged yet{}, {} waiting for others",
                        live.len(),
                        look.board.finished.len(),
                        if merger {
                            " (a merger follows the run)"
                        } else {
                            ""
                        },
                        look.board.waiting.len()
                    );
                    if why != said_waiting {
                        ui.note(&why);
                        said_waiting = why;
                    }
                    sleep_unless_stopped(self.poll);
                }
            }
        }
    }

    /// The step's branch checked out: the remote's (`true`), or made from
    /// the integration branch with the step first in its spec.
    fn checkout(
        &self,
        root: &Path,
        target: &crate::ship::push::Target,
        base: &remote::Base,
        info: &StepInfo,
    ) -> Result<bool> {
        let heads = target
            .heads(root, &info.branch)
            .map_err(|e| anyhow::anyhow!("cannot list the remote's branches: {e}"))?;
        if let Some((_, sha)) = heads.iter().find(|(b, _)| *b == info.branch) {
            target
                .fetch(
                    root,
                    &info.branch,
                    &format!("refs/ralph/steps/{}", info.slug),
                )
                .map_err(|e| anyhow::anyhow!("cannot fetch {}: {e}", info.branch))?;
            remote::switch(root, &info.branch, sha)?;
            return Ok(true);
        }
        remote::switch(root, &info.branch, &base.commit)?;
        let spec_path = root.join(".ralph/spec.md");
        let text = crate::fsutil::read_optional(&spec_path)?.unwrap_or_default();
        let first = texts::first_open(&text, &info.key);
        if first != text {
            crate::fsutil::atomic_write(&spec_path, first.as_bytes(), 0o644)?;
            let g = crate::git::at(root);
            g.run(&["add", "--", ".ralph/spec.md"], &[])?;
            let message = format!("ralph: this branch works {} (its step first)", info.key);
            g.run(&["commit", "--quiet", "--no-verify", "-m", &message], &[])?;
        }
        Ok(false)
    }

    /// The worker loop on the step, in this checkout: its status.
    fn work(&self, project: &Project, info: &StepInfo, name: &str) -> Result<ExitStatus> {
        let settings =
            crate::run::options::settings(&self.options, project, None).map_err(usage)?;
        let run_prompt = crate::fsutil::read_optional(&settings.session.prompt)?
            .with_context(|| format!("{} is gone", settings.session.prompt.display()))?;
        // ralph's private state: out of the sessions' reach.
        let private = crate::trust::store::lock_file(&project.root);
        if let Some(dir) = private.parent() {
            crate::trust::store::private_dir(dir)?;
        }
        let prompt = private.with_extension(format!("worker-{}.prompt.md", info.slug));
        let text = workers::prompt(name, &info.title, None, "on other machines", &run_prompt);
        crate::fsutil::atomic_write(&prompt, text.as_bytes(), 0o600)?;
        let budget = private.with_extension(format!("worker-{}.budget.json", info.slug));
        crate::parallel::budget::start(&budget, (0, 0.0), Vec::new())?;
        let mut options = self.options.clone();
        options.prompt = Some(prompt);
        let args = crate::run::options::LoopArgs {
            options,
            worker_step: Some(info.key.clone()),
            worker_name: Some(name.to_string()),
            worker_budget: Some(budget),
            ..Default::default()
        };
        let status = super::run_loop::Loop::with(args).run()?;
        let outcome = RunDir::latest(&project.runs())
            .and_then(|r| r.summary())
            .map(|s| s.outcome);
        Ok(match outcome {
            Some(Outcome::StepDone | Outcome::Complete) => ExitStatus::Success,
            // The session that reached a limit did the step too: the merge
            // takes it (its box is the word).
            Some(o) if done_here(project, &info.key) => {
                Ui::for_loop(name, true).note(&format!(
                    "its step is done all the same (the loop stopped: {}): `ralph merge` merges it",
                    o.text()
                ));
                ExitStatus::Success
            }
            _ => status,
        })
    }
}

/// Is the step's box checked in this checkout's spec (a review that
/// rejected it unchecks it there) and in its last commit (what is pushed
/// and merged: a box checked and not committed is not done)?
fn done_here(project: &Project, key: &str) -> bool {
    let text = crate::fsutil::read_optional(&project.spec())
        .ok()
        .flatten()
        .unwrap_or_default();
    texts::find(&spec::parse(&text).steps, key).is_some_and(|s| s.checked)
        && crate::parallel::queue::step_checked_on(&project.root, "HEAD", key)
}

/// The step's branch pushed, when it has work beyond the integration
/// branch: never forced (rejected, it is rebased onto the remote's only if
/// that applies cleanly).
fn push(
    root: &Path,
    target: &crate::ship::push::Target,
    base: &str,
    info: &StepInfo,
    ui: &Ui,
) -> Result<(), ()> {
    let ahead = crate::git::at(root)
        .run(&["rev-list", "--count", &format!("{base}..HEAD")], &[])
        .unwrap_or_default();
    if ahead.trim() == "0" {
        ui.note("nothing to push: the branch has no commit of its own");
        return Ok(());
    }
    let to = target.for_branch(&info.branch);
    match to.push(root) {
        Ok(_) => {
            ui.note(&format!("pushed {} to {}", info.branch, to.remote));
            Ok(())
        }
        Err(e) => {
            ui.note(&format!("{} was not pushed: {e}", info.branch));
            Err(())
        }
    }
}

/// Who claims: this machine, and this run of `ralph worker --next`.
struct Me {
    machine: String,
    run: String,
}

/// The run as the remote has it, read in the order that keeps a step from
/// being worked twice: claims first (a claim is released only after its
/// branch is pushed), then the step branches (a merged one is deleted
/// only after the integration branch is pushed), then the integration
/// branch.
struct Look {
    target: crate::ship::push::Target,
    board: remote::Steps,
    claims: std::collections::BTreeMap<String, claims::Judged>,
    /// The open steps' slugs.
    open: std::collections::BTreeSet<String>,
}

impl Look {
    fn read(root: &Path, on: &On, seen: &mut claims::Seen, lease: u64) -> Result<Look> {
        let branch = on.branch(root)?;
        let target = remote::origin(root, &branch).map_err(usage)?;
        let on_remote = remote::claims(root, &target)?;
        let claims = seen.judge(on_remote, crate::timefmt::now_epoch(), lease);
        let heads = remote::step_heads(root, &target)?;
        let (target, base) = on.reach(root)?;
        let text = remote::show(root, &base.commit, ".ralph/spec.md");
        let parsed = spec::parse(&text);
        let pushed = remote::pushed_steps_from(root, &target, &parsed.steps, &heads)?;
        let tracker = crate::config::load(&crate::work::project::Project::at(root).config())
            .ok()
            .and_then(|c| c.tracker);
        let order = crate::run::coordinator::order_of(root, tracker, &remote::items_of(&text))?;
        let board = remote::board(&text, &order, &pushed, &base);
        let open = parsed
            .steps
            .iter()
            .filter(|s| !s.checked)
            .map(remote::slug)
            .collect();
        Ok(Look {
            target,
            board,
            claims,
            open,
        })
    }
}

/// A claim held while its step is worked: renewed a third of the way
/// through its lease by a thread of its own, so that a session that runs
/// long keeps it, and a machine that dies loses it.
pub(crate) struct Holding {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: std::thread::JoinHandle<Option<String>>,
}

impl Holding {
    pub(crate) fn start(
        root: &Path,
        target: &crate::ship::push::Target,
        claim: Claim,
        sha: String,
        label: &'static str,
    ) -> Holding {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let (root, target, flag): (PathBuf, _, _) =
            (root.to_path_buf(), target.clone(), stop.clone());
        let every = Duration::from_millis(claim.lease * 1000 / 3);
        let thread = std::thread::spawn(move || {
            let mut current = sha;
            let (lock, cvar) = &*flag;
            loop {
                let Ok(stopped) = lock.lock() else {
                    return Some(current);
                };
                let Ok((stopped, _)) = cvar.wait_timeout_while(stopped, every, |s| !*s) else {
                    return Some(current);
                };
                if *stopped {
                    return Some(current);
                }
                drop(stopped);
                let renewed = Claim {
                    renewed: crate::timefmt::now_epoch(),
                    ..claim.clone()
                };
                let ui = Ui::for_loop(label, true);
                let Ok(next) = remote::claim_commit(&root, &renewed) else {
                    continue;
                };
                match remote::swap_claim(&root, &target, &claim.step, Some(&next), Some(&current)) {
                    Ok(true) => current = next,
                    Ok(false) => {
                        ui.note(&format!(
                            "the claim on {} was taken over by another machine (this one was too slow to renew it): working on, its push is never forced",
                            claim.step
                        ));
                        return None;
                    }
                    // The remote out of reach for a moment: the next try may do.
                    Err(e) => ui.note(&format!("{e:#}: trying again")),
                }
            }
        });
        Holding { stop, thread }
    }

    /// Stop renewing: the claim's last commit, if it is still this machine's.
    pub(crate) fn stop(self) -> Option<String> {
        if let Ok(mut s) = self.stop.0.lock() {
            *s = true;
        }
        self.stop.1.notify_all();
        self.thread.join().ok().flatten()
    }
}

/// The host's name, for a claim [default of --machine].
pub(crate) fn host_name() -> String {
    sysinfo::System::host_name().unwrap_or_else(|_| "a machine".into())
}

/// This run of `ralph worker --next`: the Actions run and job where there
/// is one, and this process.
pub(crate) fn run_id() -> String {
    let pid = std::process::id();
    match std::env::var("GITHUB_RUN_ID") {
        Ok(id) => format!(
            "actions run {id} attempt {}, pid {pid}",
            std::env::var("GITHUB_RUN_ATTEMPT").unwrap_or_else(|_| "1".into())
        ),
        Err(_) => format!("pid {pid} from {}", crate::timefmt::now()),
    }
}

/// Sleep `d`, or less when a stop is asked for (Ctrl+C once the loop's
/// handlers are in).
pub(crate) fn sleep_unless_stopped(d: Duration) {
    let end = std::time::Instant::now() + d;
    while std::time::Instant::now() < end && crate::procs::signals::stop_requested().is_none() {
        std::thread::sleep(Duration::from_millis(200).min(end - std::time::Instant::now()));
    }
}
