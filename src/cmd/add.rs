use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use crate::exit::{ExitStatus, Stop};
use crate::outln;
use crate::output::visible;
use crate::work::add::{self, Place};
use crate::work::project::Project;
use crate::work::{spec, tracker};

/// Add a step to the spec, and its task to the tracker.
///
/// The step gets the next free label where it goes: before the last
/// phase's review step (`N.R`) by default, in phase N with --phase, or
/// right after the step labelled LABEL with --after (a label between it
/// and the next step's, `1.1` after `1` when `2` follows: the spec's
/// labels are never renumbered). Where the spec names
/// tracker tasks, the task is created first (under the spec's epic, with
/// --criteria as its description) and its id ends the step's line; without
/// a tracker the step is added alone, and ralph says so. With --issue N,
/// the step is open GitHub issue N of `origin`'s repository: its title,
/// `[#N]` its task (see `ralph import github`). A COMPLETE that no longer
/// holds (there is an open step again) is removed. Works while a loop runs:
/// its next session sees the step.
#[derive(Debug, Args)]
pub struct Add {
    /// What the step is (one line; brackets become parentheses)
    #[arg(required_unless_present = "issue")]
    title: Option<String>,

    /// The step is this open GitHub issue (of `origin`'s repository; the
    /// token from GH_TOKEN, GITHUB_TOKEN or `gh auth token`)
    #[arg(long, value_name = "N", conflicts_with_all = ["title", "criteria"])]
    issue: Option<u64>,

    /// Put it right after the step with this label
    #[arg(long, value_name = "LABEL", conflicts_with = "phase")]
    after: Option<String>,

    /// Put it in phase N (before its review step)
    #[arg(long, value_name = "N")]
    phase: Option<String>,

    /// The acceptance criteria: the task's description
    #[arg(long, value_name = "TEXT")]
    criteria: Option<String>,

    /// Which tracker to use [default: the config's `tracker`, else br if
    /// installed, else bd]
    #[arg(long, value_enum)]
    tracker: Option<crate::config::Kind>,

    /// Leave the spec (and the tracker's file) uncommitted [default: commit
    /// them, when they had no changes of yours before]
    #[arg(long)]
    no_commit: bool,
}

/// The files `ralph add` changes: the spec, and the tracker's.
const ADDED_TO: [&str; 2] = [".ralph/spec.md", ".beads/issues.jsonl"];

/// A GitHub issue as a step: its title and task (`#N`), if it is open and
/// no step names it yet.
fn issue_step(project: &Project, spec_text: &str, n: u64) -> Result<(String, String)> {
    let failed = |e: String| Stop::with(ExitStatus::Failure, e);
    let task = crate::work::tracker::github::task_id(n);
    if let Some(s) = spec::parse(spec_text)
        .steps
        .iter()
        .find(|s| s.task.as_deref() == Some(task.as_str()))
    {
        return Err(failed(format!(
            "issue {task} is the task of line {} already; nothing added",
            s.line
        )));
    }
    let issues = crate::work::tracker::github::Issues::open(&project.root)
        .map_err(|e| failed(e.to_string()))?;
    let issue = issues.issue(n).map_err(|e| failed(e.to_string()))?;
    let status = crate::work::tracker::Issue::from(&issue).status;
    if status != crate::work::tracker::Status::Open {
        return Err(failed(format!(
            "issue {task} of {} is {}: nothing to do; nothing added",
            issues.repo(),
            crate::output::visible_line(status.word())
        )));
    }
    Ok((add::clean_title(&issue.title), task))
}

impl Add {
    /// The step's task, where the spec names tasks: made in the tracker
    /// (under the spec's epic), with its id and the tracker's name.
    fn make_task(
        &self,
        project: &Project,
        spec_text: &str,
        title: &str,
    ) -> Result<Option<(&'static str, String)>> {
        let parsed = spec::parse(spec_text);
        if !parsed.references_tasks() {
            return Ok(None);
        }
        let failed = |e: tracker::TrackerError| Stop::with(ExitStatus::Failure, format!("{e}"));
        let kind = tracker::configured(self.tracker, project).map_err(failed)?;
        let beads = tracker::detect(kind, &project.root).map_err(failed)?;
        let epic = parsed.epic.as_ref().map(|(_, e)| e.as_str());
        let id = beads
            .create(title, epic, self.criteria.as_deref())
            .map_err(failed)?;
        Ok(Some((beads.name(), id)))
    }
}

impl Run for Add {
    fn run(&self) -> Result<ExitStatus> {
        let usage = |m: String| Stop::with(ExitStatus::Usage, m);
        let project = Project::find()?;
        let path = project.spec();
        let text = crate::fsutil::read_optional(&path)?.ok_or_else(|| {
            usage(format!(
                "no spec at {} (`ralph init` writes one)",
                path.display()
            ))
        })?;
        let from_issue = match self.issue {
            Some(n) => Some(issue_step(&project, &text, n)?),
            None => None,
        };
        let title = match &from_issue {
            Some((t, _)) => t.clone(),
            None => add::clean_title(self.title.as_deref().unwrap_or_default()),
        };
        if title.is_empty() {
            return Err(usage("the step's title is empty".into()));
        }
        let place = match (&self.after, &self.phase) {
            (Some(l), _) => Place::After(l.clone()),
            (None, Some(p)) => Place::Phase(p.clone()),
            (None, None) => Place::Default,
        };
        // The place is checked before a task is made for it.
        add::insert(&text, &title, None, &place).map_err(usage)?;
        // What was uncommitted before: yours, not ralph's to commit.
        let before = crate::run::progress::uncommitted_among(&project.root, &ADDED_TO);
        let task = match from_issue {
            Some((_, id)) => Some(("GitHub", id)),
            None => self.make_task(&project, &text, &title)?,
        };
        let (new, label) = add::insert(
            &text,
            &title,
            task.as_ref().map(|(_, id)| id.as_str()),
            &place,
        )
        .map_err(usage)?;
        crate::fsutil::atomic_write(&path, new.as_bytes(), 0o644)
            .with_context(|| format!("cannot write {}", path.display()))?;
        said(&label, &title, task.as_ref(), &path);
        reopen(&project)?;
        if !self.no_commit {
            commit_added(&project, before, &label, &title);
        }
        Ok(ExitStatus::Success)
    }
}

/// The step's files committed, so that a loop starts from a clean tree
/// (each session's changes then stand alone): unless they had changes of
/// yours before (`before`), which are yours to commit; said.
fn commit_added(project: &Project, before: Option<Vec<String>>, label: &str, title: &str) {
    let root = &project.root;
    let Some(before) = before else {
        return; // not a git repository
    };
    if !before.is_empty() {
        outln!(
            "Not committed: {} had changes of yours before; commit them before `ralph loop`, so that each session's changes stand alone.",
            before.join(", ")
        );
        return;
    }
    let Some(changed) = crate::run::progress::uncommitted_among(root, &ADDED_TO) else {
        return;
    };
    if changed.is_empty() {
        return;
    }
    let message = format!(
        "ralph: add step {label} {}",
        crate::control::command::one_line(title, 200)
    );
    match crate::run::progress::commit_own(root, &changed, &message) {
        Ok(id) => outln!("Committed {} ({id}).", changed.join(", ")),
        Err(why) => outln!(
            "Not committed ({}): commit {} before `ralph loop`.",
            visible(why.lines().last().unwrap_or("git failed")),
            changed.join(", ")
        ),
    }
}

/// What was added, and where its task came from.
fn said(label: &str, title: &str, task: Option<&(&str, String)>, path: &std::path::Path) {
    match task {
        Some(("GitHub", id)) => outln!(
            "Added step {label} {} [{id}] to {} (GitHub issue {id}).",
            visible(title),
            path.display()
        ),
        Some((name, id)) => outln!(
            "Added step {label} {} [{id}] to {} (task {id} made with {name}).",
            visible(title),
            path.display()
        ),
        None => outln!(
            "Added step {label} {} to {} (the spec names no tracker tasks: no task made).",
            visible(title),
            path.display()
        ),
    }
}

/// A COMPLETE left from before no longer holds with an open step.
fn reopen(project: &Project) -> Result<()> {
    if project.complete().exists() {
        std::fs::remove_file(project.complete())
            .with_context(|| format!("cannot remove {}", project.complete().display()))?;
        outln!(
            "Removed {}: with this open step the work is not done.",
            project.complete().display()
        );
    }
    Ok(())
}
