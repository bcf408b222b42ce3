//! `ralph merge`: the other half of a parallel run on many machines: the
//! steps done on the remote's branches merged through the same queue as
//! `ralph loop --parallel` (the gate after each), and the result pushed.

use std::collections::BTreeSet;

use anyhow::Result;
use clap::Args;

use super::Run;
use super::steps::On;
use crate::config::Options;
use crate::exit::ExitStatus;
use crate::parallel::claims::{self, Claim};
use crate::parallel::remote::{self, StepInfo};
use crate::run::coordinator::RemoteMerge;
use crate::run::ui::Ui;
use crate::work::project::Project;
use crate::work::spec;

/// Merge the steps done on the remote's step branches into the integration
/// branch, and push it.
///
/// In a clean checkout of the repository (a job's fresh clone): the
/// integration branch (see `ralph steps`) is checked out, each step whose
/// branch `ralph/step-<slug>` on `origin` has its box checked is merged,
/// one at a time, as `ralph loop --parallel` merges (ralph's own files
/// merged by ralph, the gate after each merge, a merge that fails it
/// undone; a conflict resolved by a session, or with --on-conflict wait
/// left for a human), and the branch is pushed as each lands. A merged
/// step's branch is deleted on the remote if nothing was pushed to it
/// since. Steps not done yet stay for the next workers. Once every step
/// is merged, the loop judges COMPLETE as `ralph loop` does. With --pr,
/// the branch's pull request is opened or updated (a draft until
/// complete).
///
/// With --follow it goes on as steps arrive: it merges each step as soon
/// as its branch is pushed done (the gate after each merge, as above) and
/// pushes the integration branch, which makes the steps that waited for it
/// ready for workers running `ralph worker --next`, on any machine; it
/// ends once every step is merged, or when no step is ready and none is
/// done to merge (what is left waits for what can never start).
///
/// Exit status: 0 when every step done so far is merged (complete or
/// not), else as `ralph loop --help` says.
#[derive(Debug, Args)]
pub struct Merge {
    /// Go on merging steps as they are pushed done, until every step is
    /// merged or nothing can go on
    #[arg(long)]
    follow: bool,

    /// With --follow: how often the remote is read while waiting for
    /// steps to be done (1s to 10m)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::config::parse_duration, requires = "follow")]
    poll: std::time::Duration,

    /// With --follow: how long the merger's own claim on the run holds
    /// without a renewal (workers on `--next` wait for its merges only
    /// while it holds; 2s to 1h)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::config::parse_duration, requires = "follow")]
    lease: std::time::Duration,

    /// With --follow: this machine's name in its claim [default: the host's name]
    #[arg(long, value_name = "NAME", requires = "follow")]
    machine: Option<String>,

    #[command(flatten)]
    on: On,

    #[command(flatten)]
    options: Options,
}

impl Run for Merge {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        if !self.follow {
            return self.pass(&project);
        }
        if !(1..=600).contains(&self.poll.as_secs()) {
            return Err(crate::exit::Stop::with(
                ExitStatus::Usage,
                format!(
                    "--poll {}s is out of range: give 1s to 10m",
                    self.poll.as_secs()
                ),
            ));
        }
        let lease = self.lease.as_secs();
        if !(2..=claims::MAX_LEASE).contains(&lease) {
            return Err(crate::exit::Stop::with(
                ExitStatus::Usage,
                format!("--lease {lease}s is out of range: give 2s to 1h"),
            ));
        }
        let root = &project.root;
        let branch = self.on.branch(root)?;
        let target = remote::origin(root, &branch)
            .map_err(|e| crate::exit::Stop::with(ExitStatus::Usage, e))?;
        // One merger per run: two would race to push the integration branch.
        let slot = claims::merger_slot(&branch);
        let ui = Ui::for_loop("merge", true);
        let mut seen = claims::Seen::default();
        let mut first: Option<Option<String>> = None;
        let mut said = false;
        let expect = loop {
            if let Some(why) = crate::procs::signals::stop_requested() {
                ui.note(&format!("stopped ({why})"));
                return Ok(ExitStatus::Code(130));
            }
            let now = crate::timefmt::now_epoch();
            let judged = seen.judge(remote::claims(root, &target)?, now, lease);
            let j = judged.get(&slot);
            let first = first.get_or_insert_with(|| j.map(|j| j.sha.clone()));
            match claims::merger_slot_now(j, first.as_deref(), now) {
                claims::Slot::Take { expect } => break expect,
                claims::Slot::Held => {
                    return Err(crate::exit::Stop::with(
                        ExitStatus::Failure,
                        format!(
                            "another `ralph merge --follow` follows {branch} ({}, its lease {}s more): one merger per run",
                            j.and_then(|j| j.claim.as_ref())
                                .map(|c| format!("machine {}", c.machine))
                                .unwrap_or_else(|| "a claim that does not read as one".into()),
                            j.map_or(0, |j| j.expires.saturating_sub(now))
                        ),
                    ));
                }
                claims::Slot::Watch => {
                    if !said {
                        said = true;
                        ui.note(&format!(
                            "the merger's claim on {branch} {}: watched until it is renewed (another merger follows) or runs out (in {}s at the latest)",
                            match j.and_then(|j| j.claim.as_ref()) {
                                Some(c) => format!("by machine {} says it was renewed in the future", c.machine),
                                None => "does not read as a claim".to_string(),
                            },
                            j.map_or(0, |j| j.expires.saturating_sub(now))
                        ));
                    }
                    super::worker::sleep_unless_stopped(self.poll);
                }
            }
        };
        let now = crate::timefmt::now_epoch();
        let claim = Claim {
            step: slot.clone(),
            machine: self
                .machine
                .clone()
                .unwrap_or_else(super::worker::host_name),
            run: super::worker::run_id(),
            since: now,
            renewed: now,
            lease,
        };
        let sha = remote::claim_commit(root, &claim)?;
        if !remote::swap_claim(root, &target, &slot, Some(&sha), expect.as_deref())? {
            return Err(crate::exit::Stop::with(
                ExitStatus::Failure,
                format!(
                    "another `ralph merge --follow` claimed {branch} first: one merger per run"
                ),
            ));
        }
        let holding = super::worker::Holding::start(root, &target, claim, sha, "merge");
        let status = self.follow(&project);
        if let Some(last) = holding.stop() {
            let _ = remote::swap_claim(root, &target, &slot, None, Some(&last));
        }
        status
    }
}

impl Merge {
    /// --follow: a pass each time a step is pushed done that was not tried
    /// yet (a step whose merge failed its gate is tried again only once
    /// its branch moves), until every step is merged or nothing can go on.
    fn follow(&self, project: &Project) -> Result<ExitStatus> {
        let root = &project.root;
        let ui = Ui::for_loop("merge", true);
        let mut tried: BTreeSet<(String, String)> = BTreeSet::new();
        let mut passes = 0usize;
        let mut said = String::new();
        let mut failed_looks = 0;
        loop {
            if let Some(why) = crate::procs::signals::stop_requested() {
                ui.note(&format!("stopped ({why})"));
                return Ok(ExitStatus::Code(130));
            }
            remote::refuse_changes(root, "ralph merge")?;
            // A network that fails for a moment: looked at again, a few times.
            let (board, pushed) = match self.look(project) {
                Ok(l) => {
                    failed_looks = 0;
                    l
                }
                Err(e) if failed_looks < 3 => {
                    failed_looks += 1;
                    ui.note(&format!("{e:#}: looking again"));
                    super::worker::sleep_unless_stopped(self.poll);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let fresh: Vec<(String, String)> = board
                .finished
                .iter()
                .filter_map(|s| Some((s.slug.clone(), pushed.get(&s.slug)?.sha.clone())))
                .filter(|k| !tried.contains(k))
                .collect();
            if !fresh.is_empty() || (passes == 0 && board.merged == board.total) {
                tried.extend(fresh);
                passes += 1;
                let status = self.pass(project)?;
                if status != ExitStatus::Success {
                    return Ok(status);
                }
                said.clear();
                continue;
            }
            if board.merged == board.total {
                ui.note(&format!(
                    "every step is merged ({} of {})",
                    board.merged, board.total
                ));
                return Ok(ExitStatus::Success);
            }
            if board.ready.is_empty() {
                ui.note(&format!(
                    "nothing can go on: no step is ready or done to merge ({} of {} merged; {} waiting)",
                    board.merged,
                    board.total,
                    board.waiting.len() + board.finished.len()
                ));
                return Ok(ExitStatus::Success);
            }
            let why = format!(
                "waiting for steps to be pushed done: {} ready or being worked, {} waiting for others ({} of {} merged)",
                board.ready.len(),
                board.waiting.len(),
                board.merged,
                board.total
            );
            if why != said {
                ui.note(&why);
                said = why;
            }
            super::worker::sleep_unless_stopped(self.poll);
        }
    }

    /// The run on the remote: its board, and the step branches pushed.
    fn look(
        &self,
        project: &Project,
    ) -> Result<(
        remote::Steps,
        std::collections::BTreeMap<String, remote::StepBranch>,
    )> {
        let root = &project.root;
        let (target, base) = self.on.reach(root)?;
        let text = remote::show(root, &base.commit, ".ralph/spec.md");
        let parsed = spec::parse(&text);
        let pushed = remote::pushed_steps(root, &target, &parsed.steps)?;
        let tracker = crate::config::load(&project.config())
            .ok()
            .and_then(|c| c.tracker);
        let order = crate::run::coordinator::order_of(root, tracker, &remote::items_of(&text))?;
        Ok((remote::board(&text, &order, &pushed, &base), pushed))
    }

    /// One merge of the steps done so far (all of `ralph merge` without --follow).
    fn pass(&self, project: &Project) -> Result<ExitStatus> {
        let root = project.root.clone();
        remote::refuse_changes(&root, "ralph merge")?;
        let (target, base) = self.on.reach(&root)?;
        remote::switch(&root, &base.branch, &base.commit)?;
        let ui = Ui::for_loop("merge", true);
        let text = crate::fsutil::read_optional(&project.spec())?.unwrap_or_default();
        let parsed = spec::parse(&text);
        let pushed = remote::pushed_steps(&root, &target, &parsed.steps)?;
        let g = crate::git::at(&root);
        let mut steps = Vec::new();
        let mut not_done = Vec::new();
        for s in parsed.steps.iter().filter(|s| !s.checked) {
            let info = StepInfo::of(s);
            match pushed.get(&info.slug) {
                Some(p) if p.done => {
                    g.run(
                        &["update-ref", &format!("refs/heads/{}", info.branch), &p.sha],
                        &[],
                    )?;
                    steps.push((info.key, info.slug, p.sha.clone()));
                }
                Some(_) => not_done.push(format!("{} (begun)", info.key)),
                None => not_done.push(info.key),
            }
        }
        ui.note(&format!(
            "{} on {} ({}): {} done on their branches{}",
            base.branch,
            target.remote,
            if base.on_remote {
                "fetched"
            } else {
                "new, from HEAD"
            },
            steps.len(),
            if not_done.is_empty() {
                String::new()
            } else {
                format!(
                    "; not done yet: {}",
                    crate::output::visible_line(&not_done.join(", "))
                )
            }
        ));
        let mut options = self.options.clone();
        options.push = true;
        let args = crate::run::options::LoopArgs {
            options,
            remote: Some(RemoteMerge {
                target,
                steps,
                args: loop_args(std::env::args().skip(1).collect()),
            }),
            ..Default::default()
        };
        super::run_loop::Loop::with(args).run()
    }
}

/// A resolution worker's command line from `ralph merge`'s: `loop` and the
/// same options (the run's own are left out by the worker's).
fn loop_args(mut args: Vec<String>) -> Vec<String> {
    if let Some(at) = args.iter().position(|a| a == "merge") {
        args[at] = "loop".into();
    }
    // --follow and its options are the merge's own, no loop's.
    let mut out = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a);
            out.extend(it.by_ref());
            break;
        }
        let name = a.split('=').next().unwrap_or_default();
        match name {
            "--follow" => {}
            "--poll" | "--lease" | "--machine" => {
                if !a.contains('=') {
                    it.next();
                }
            }
            _ => out.push(a),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolution_worker_is_a_loop_with_the_merges_options() {
        let v = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let args = loop_args(v(
            "-C x merge --follow --poll 2s --pr --lease=5m --machine m --branch ralph/a --max-cost 3",
        ));
        assert_eq!(
            crate::parallel::workers::worker_args(&args),
            v("loop --max-cost 3")
        );
    }
}
