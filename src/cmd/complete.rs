use anyhow::Result;
use clap::Args;

use super::Run;
use crate::config::Kind;
use crate::errln;
use crate::exit::ExitStatus;
use crate::outln;
use crate::timefmt;
use crate::trust::approval::Standing;
use crate::work::completion;
use crate::work::gate::{self, Gate};
use crate::work::project::Project;
use crate::work::sentinel;

/// Mark the work as done: write `.ralph/COMPLETE`, after checking that it is done.
///
/// Refused (exit 1, listing every open step and every problem) unless every
/// step of the spec is checked and, where the spec names tracker tasks, each
/// agrees with its task (see `ralph verify-sync`), and then the project's own
/// checks (`[gate] commands` in .ralph/config.toml) all pass; a failing check
/// is also written to .ralph/gate-failed.md for the next session. The
/// checks run confined (bubblewrap, as the loop runs them) whenever
/// .ralph/config.toml says `confined = true`, whoever runs this; in a loop's
/// session they run in its sandbox. `ralph loop` stops when COMPLETE
/// appears, and checks it again itself, gate and all, even when it was
/// written with --force or by hand.
#[derive(Debug, Args)]
pub struct Complete {
    /// What was done, recorded in the file.
    #[arg(long, short)]
    message: Option<String>,

    /// Write COMPLETE even though the check fails (recorded as forced).
    #[arg(long)]
    force: bool,

    /// Which tracker to ask [default: the config's `tracker`, else br if
    /// installed, else bd]
    #[arg(long, value_enum)]
    tracker: Option<Kind>,
}

impl Run for Complete {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let kind = crate::work::tracker::configured(self.tracker, &project)
            .map_err(|e| crate::exit::Stop::with(ExitStatus::Failure, format!("refused: {e}")))?;
        // A loop's session leaves the tasks ralph closes (GitHub's issues)
        // to the loop, which closes those of checked steps after it, and
        // checks again.
        let in_loop = std::env::var_os(crate::handoff::env::LOOP).is_some();
        let check = if crate::work::tracker::caps(kind).ralph_closes && in_loop {
            completion::check_boxes(&project.spec())?
        } else {
            completion::check(&project.spec(), &project.root, kind)?
        };
        let (summary, tracker) = describe(&check);
        let (gate, approved) = gate_of(&project)?;
        // The run's protected files, as the loop handed them: said up front,
        // while the session can still revert them (the loop refuses anyway).
        let protected = protected_changes(&project);
        if !protected.is_empty() && !self.force {
            return Err(refused(
                "refused: protected files changed since the run began:",
                &protected,
                "Revert them (`git checkout <the run's first commit> -- <file>`); a human decides about them, not a session.",
            ));
        }
        let rule = completion::rule(&check, gate.is_some());
        let mut blockers = match &rule {
            completion::Rule::Blocked(why) => why.clone(),
            _ => Vec::new(),
        };
        // The project's checks, once the bookkeeping holds (not with --force:
        // the loop runs them anyway).
        if matches!(rule, completion::Rule::RunGate { .. })
            && !self.force
            && let Some(gate) = gate
        {
            blockers.extend(gate_blockers(&project, approved, &gate)?);
        }
        if !blockers.is_empty() && !self.force {
            return Err(refused(
                &format!("refused, the work is not done ({summary}):"),
                &blockers,
                "Finish these (or run `ralph waiting --reason ...` if a human is needed).",
            ));
        }
        self.write(&project, summary, tracker, blockers.len())?;
        // Said to whoever ends the work (a loop's last session, most often),
        // who can close it: ralph does not close a tracker's epic.
        if let Some(note) = check.as_ref().ok().and_then(|c| c.epic_note()) {
            outln!("{}", crate::output::visible_line(&note));
        }
        Ok(ExitStatus::Success)
    }
}

impl Complete {
    /// Write COMPLETE (forced past `blockers` problems, with --force).
    fn write(
        &self,
        project: &Project,
        summary: String,
        tracker: String,
        blockers: usize,
    ) -> Result<()> {
        let forced = blockers > 0;
        sentinel::Complete {
            completed: Some(timefmt::now()),
            forced,
            spec: Some(summary.clone()),
            tracker: Some(tracker),
            message: self.message.clone().unwrap_or_default(),
            file_time: None,
        }
        .write(&project.complete())?;
        if forced {
            outln!(
                "Wrote {} (forced past {}): {summary}.",
                project.complete().display(),
                crate::output::counted(blockers as u64, "problem", "problems")
            );
        } else {
            outln!("Wrote {}: {summary}.", project.complete().display());
        }
        Ok(())
    }
}

/// A refusal: what is wrong, each item on a line of its own, and the fix.
fn refused(head: &str, items: &[String], fix: &str) -> anyhow::Error {
    let mut msg = format!("{head}\n");
    for i in items {
        msg.push_str(&format!("  {i}\n"));
    }
    msg.push_str(fix);
    crate::exit::Stop::with(ExitStatus::Failure, msg)
}

/// The spec's progress and the tracker's agreement, as COMPLETE records them.
fn describe(check: &Result<completion::Judgement, completion::CannotCheck>) -> (String, String) {
    match check {
        Ok(c) => (
            c.spec.progress(),
            c.tracker.map_or("none".to_string(), |t| {
                let agree = if c.in_sync() {
                    "in sync"
                } else {
                    "out of sync"
                };
                format!("{t}, {agree}")
            }),
        ),
        Err(_) => ("unknown".to_string(), "not checked".to_string()),
    }
}

/// What the session changed of the run's protected files (`RALPH_PROTECT`,
/// handed over by the loop), one line each.
fn protected_changes(project: &Project) -> Vec<String> {
    let Ok(handed) = std::env::var(crate::handoff::env::PROTECT) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&handed) else {
        return Vec::new();
    };
    let base = v["base"].as_str().unwrap_or_default();
    let globs: Vec<String> = v["globs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g.as_str().map(String::from))
        .collect();
    if !crate::history::records::is_object_id(base) || globs.is_empty() {
        return Vec::new();
    }
    crate::run::progress::protected_changes(&project.root, base, &globs)
        .map(|(files, commits)| {
            let c = commits.into_iter().map(|c| format!("in commit {c}"));
            files.into_iter().chain(c).collect()
        })
        .unwrap_or_default()
}

/// The gate: the one the loop handed to this session (`RALPH_GATE`, set
/// where the loop's gate came from `--gate` or `[gate]`), else the config's.
/// With it, whether it may run: a config not yet approved may not.
fn gate_of(project: &Project) -> Result<(Option<Gate>, Result<Confined, String>)> {
    // Handed by the loop to its session: the session's sandbox holds it.
    if let Ok(handed) = std::env::var(crate::handoff::env::GATE) {
        let gate = Gate::from_handed(&handed).map_err(anyhow::Error::msg)?;
        return Ok((gate, Ok(None)));
    }
    let cfg = crate::config::load(&project.config())?;
    let gate = Gate::from_config(&cfg.gate).map_err(anyhow::Error::msg)?;
    // The gate reads the config alone: the agents' files do not hold it up.
    let parts = crate::trust::approval::project_parts(&project.root, &cfg);
    let standing = crate::trust::approval::standing_for(&project.root, &parts, &[]);
    let approved = match standing {
        Standing::NotApproved { .. } => Err(standing.text().to_string()),
        // By hand in a confined project: confined, as the loop runs it.
        _ => Ok(cfg.confined.then(|| crate::confinement::Confinement {
            allow_write: cfg.allow_write.clone().unwrap_or_default(),
            allow_domains: cfg.allow_domains.clone().unwrap_or_default(),
        })),
    };
    Ok((gate, approved))
}

/// The baseline of the loop this runs in (its run folder's
/// `baseline.json`, as the loop handed the folder), if it took one. Read
/// bounded; only ever more lenient to the session that wrote it, never to
/// the loop, which judges with its own.
fn loop_baseline() -> Option<gate::Verdict> {
    std::env::var_os(crate::handoff::env::LOOP)?;
    let dir = std::env::var_os(crate::handoff::env::RUN_DIR)?;
    let path = std::path::Path::new(&dir).join("baseline.json");
    let text = crate::fsutil::read_head(&path, 64 << 20).ok()??;
    serde_json::from_str(&text).ok()
}

/// The confinement the gate runs in, where the project asks for one.
type Confined = Option<crate::confinement::Confinement>;

/// What the project's own checks say against COMPLETE: nothing when they
/// pass; they run only as the user approved them.
fn gate_blockers(
    project: &Project,
    approved: Result<Confined, String>,
    gate: &Gate,
) -> Result<Vec<String>> {
    let confined = match approved {
        Ok(c) => c,
        Err(standing) => {
            return Ok(vec![format!(
                "the completion gate was not run: {} {standing} (its owner approves it with `ralph trust`)",
                project.config().display(),
            )]);
        }
    };
    if confined.is_some()
        && let Some(why) = crate::sandbox::confine::unavailable(|p| which::which(p).is_ok())
    {
        return Ok(vec![format!(
            "the completion gate was not run: the project is confined (confined = true) and {why}"
        )]);
    }
    errln!("ralph complete: the spec and tracker agree; running the project's checks (the gate)");
    // Run by hand, or by a session (then inside its sandbox already).
    let runner = gate::Runner {
        token: crate::handoff::gate_token(&crate::trust::store::random_token()),
        confined,
        show: crate::run::ui::Ui::for_stdout().gate_show(),
    };
    let baseline = loop_baseline();
    let v = gate::run(
        gate,
        &project.root,
        None,
        &|| 0,
        &runner,
        baseline.is_some(),
    )?;
    // In a loop's session: judged as the loop judges it, against what
    // failed before its first session (the loop judges again itself).
    if let Some(base) = baseline.filter(|_| !v.interrupted) {
        let j = crate::work::baseline::judge(&base, &v);
        let text = (!j.passed).then(|| crate::work::baseline::feedback(&v, &j));
        gate::hand_over_text(project, text.as_deref())?;
        if j.passed {
            if !j.still_failing.is_empty() {
                errln!(
                    "ralph complete: failing before the run, and still (that does not block): {}",
                    crate::output::visible_line(&j.still_failing.join(", "))
                );
            }
            return Ok(Vec::new());
        }
        let mut why = vec![format!(
            "the completion gate: what fails anew ({} has it all):",
            gate::feedback_path(project).display()
        )];
        why.extend(j.blocking.iter().map(|b| format!("  {b}")));
        return Ok(why);
    }
    gate::hand_over(project, &v)?;
    if v.passed {
        return Ok(Vec::new());
    }
    let mut why = vec![format!(
        "the completion gate: {} (its output is in {}); the last lines:",
        v.summary(),
        gate::feedback_path(project).display()
    )];
    why.extend(
        v.tail
            .iter()
            .rev()
            .take(20)
            .rev()
            .map(|l| format!("  | {l}")),
    );
    Ok(why)
}
