//! `ralph worker STEP`: one step of a parallel run, on a machine of its
//! own: its branch made (or fetched, to go on with), a worker loop on it
//! until the step is done, then the branch pushed.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use super::steps::On;
use crate::config::Options;
use crate::exit::{ExitStatus, Stop};
use crate::history::records::RunDir;
use crate::parallel::remote::{self, StepInfo};
use crate::parallel::{texts, workers};
use crate::run::engine::Outcome;
use crate::run::ui::Ui;
use crate::work::project::Project;
use crate::work::spec;

/// Work one step of a parallel run on this machine, and push its branch.
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
/// Exit status: 0 when the step is done (or was already), else the
/// loop's (see `ralph loop --help`).
#[derive(Debug, Args)]
pub struct Worker {
    /// The step: its slug (as `ralph steps` lists it) or its key (its task,
    /// label or text)
    #[arg(value_name = "STEP")]
    step: String,

    /// The worker's name in its records and lines [default: the step's slug]
    #[arg(long, value_name = "NAME")]
    name: Option<String>,

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
        let root = project.root.clone();
        remote::refuse_changes(&root, "ralph worker")?;
        let (target, base) = self.on.reach(&root)?;
        let text = remote::show(&root, &base.commit, ".ralph/spec.md");
        let parsed = spec::parse(&text);
        let Some(step) = remote::find(&parsed.steps, &self.step) else {
            return Err(usage(format!(
                "the spec of {} has no step {:?}; `ralph steps` lists them",
                base.branch,
                crate::output::visible_line(&self.step)
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
        let status = if done_here(&project, &info.key) {
            ui.note("its step is done on its branch already: `ralph merge` merges it");
            ExitStatus::Success
        } else {
            self.work(&project, &info, &name)?
        };
        let pushed = push(&root, &target, &base.commit, &info, &ui);
        Ok(match pushed {
            Err(()) => ExitStatus::Failure,
            Ok(()) => status,
        })
    }
}

impl Worker {
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
