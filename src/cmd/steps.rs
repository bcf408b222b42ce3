//! `ralph steps`: the spec's steps as machines working a parallel run see
//! them (the plan of a job runner: `--ready` is what its workers start).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::{ExitStatus, Stop};
use crate::outln;
use crate::parallel::remote::{self, Base, StepInfo};
use crate::ship::push::Target;
use crate::work::project::Project;

/// Which run the remote commands (`steps`, `worker`, `merge`) are about:
/// its spec and its integration branch.
#[derive(Debug, Clone, Args)]
pub struct On {
    /// The spec file of the run; a new integration branch starts with it
    /// as its .ralph/spec.md [default: .ralph/spec.md]
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,

    /// The integration branch the steps are merged into, on the remote
    /// `origin` [default: ralph/<the spec file's name>]
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
}

fn usage(msg: impl std::fmt::Display) -> anyhow::Error {
    Stop::with(ExitStatus::Usage, msg.to_string())
}

impl On {
    /// The integration branch's name, checked as git checks one.
    pub fn branch(&self, root: &Path) -> Result<String> {
        let name = match &self.branch {
            Some(b) => b.clone(),
            None => remote::integration_branch(
                self.spec.as_deref().unwrap_or(Path::new(".ralph/spec.md")),
            ),
        };
        let ok = !name.starts_with('-')
            && !name.starts_with(remote::STEP_PREFIX)
            // (`refs/heads/...` cannot be read as an option.)
            && crate::git::at(root).ok(&["check-ref-format", &format!("refs/heads/{name}")], &[]);
        if !ok {
            return Err(usage(format!(
                "--branch {:?} is not a branch name ralph merges into",
                crate::output::visible_line(&name)
            )));
        }
        Ok(name)
    }

    /// The remote (`origin`) and the integration branch's commit on it
    /// (or, before it has one, this checkout's HEAD with the spec).
    pub fn reach(&self, root: &Path) -> Result<(Target, Base)> {
        let branch = self.branch(root)?;
        let target = remote::origin(root, &branch).map_err(usage)?;
        let spec = match &self.spec {
            Some(p) => Some(std::path::absolute(p)?),
            None => None,
        };
        let base = remote::base(root, &target, spec.as_deref())?;
        if remote::show(root, &base.commit, ".ralph/spec.md")
            .trim()
            .is_empty()
        {
            return Err(usage(format!(
                "{} has no .ralph/spec.md to work: give the spec with --spec FILE, or commit it",
                if base.on_remote {
                    format!("{} on {}", base.branch, target.remote)
                } else {
                    "HEAD".to_string()
                }
            )));
        }
        Ok((target, base))
    }
}

/// List the steps of a parallel run as machines of a job runner work it:
/// those a `ralph worker` may start now, those done on their branches
/// (for `ralph merge`), those that wait.
///
/// The run's state is on the remote `origin`: its integration branch (the
/// spec, a box checked as each step is merged) and a branch per step
/// (`ralph/step-<slug>`). Steps start by the same rule as `ralph loop
/// --parallel`: after their tracker blockers are merged, or, without a
/// tracker, after the spec's earlier `##` sections. Nothing here changes
/// (the remote's branches are fetched to refs of ralph's own).
#[derive(Debug, Args)]
pub struct Steps {
    /// Only the steps a worker may start now (one a line: its slug, which
    /// `ralph worker` takes, and the step)
    #[arg(long)]
    ready: bool,

    /// Print as JSON, on one line (a job runner's matrix:
    /// `.ready[].slug`)
    #[arg(long)]
    json: bool,

    #[command(flatten)]
    on: On,
}

impl Run for Steps {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let root = &project.root;
        let (target, base) = self.on.reach(root)?;
        let text = remote::show(root, &base.commit, ".ralph/spec.md");
        let parsed = crate::work::spec::parse(&text);
        let pushed = remote::pushed_steps(root, &target, &parsed.steps)?;
        let tracker = crate::config::load(&project.config())
            .ok()
            .and_then(|c| c.tracker);
        let order = crate::run::coordinator::order_of(root, tracker, &remote::items_of(&text))?;
        let board = remote::board(&text, &order, &pushed, &base);
        if self.json {
            outln!("{}", serde_json::to_string(&board)?);
            return Ok(ExitStatus::Success);
        }
        if self.ready {
            for s in &board.ready {
                outln!("{}\t{}", s.slug, s.title);
            }
            return Ok(ExitStatus::Success);
        }
        outln!(
            "{} ({}): {} of {} steps merged",
            board.branch,
            if board.on_remote {
                format!("on {}", target.remote)
            } else {
                "not pushed yet: it starts at HEAD".to_string()
            },
            board.merged,
            board.total
        );
        let shown = |what: &str, v: &[StepInfo]| {
            for s in v {
                outln!("  {what:<9} {:<28} {}", s.slug, s.title);
            }
        };
        shown("ready", &board.ready);
        shown("to merge", &board.finished);
        shown("waiting", &board.waiting);
        for n in &board.never {
            outln!("  never    {}: {}", n.step, n.why);
        }
        Ok(ExitStatus::Success)
    }
}
