//! `ralph merge`: the other half of a parallel run on many machines: the
//! steps done on the remote's branches merged through the same queue as
//! `ralph loop --parallel` (the gate after each), and the result pushed.

use anyhow::Result;
use clap::Args;

use super::Run;
use super::steps::On;
use crate::config::Options;
use crate::exit::ExitStatus;
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
/// Exit status: 0 when every step done so far is merged (complete or
/// not), else as `ralph loop --help` says.
#[derive(Debug, Args)]
pub struct Merge {
    #[command(flatten)]
    on: On,

    #[command(flatten)]
    options: Options,
}

impl Run for Merge {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
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
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolution_worker_is_a_loop_with_the_merges_options() {
        let v = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let args = loop_args(v("-C x merge --pr --branch ralph/a --max-cost 3"));
        assert_eq!(
            crate::parallel::workers::worker_args(&args),
            v("loop --max-cost 3")
        );
    }
}
