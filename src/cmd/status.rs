use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};

use super::Run;
use crate::exit::ExitStatus;
use crate::fsutil;
use crate::outln;
use crate::run::engine::Outcome;
use crate::run::lock as runlock;
use crate::run::records::RunDir;
use crate::work::project::Project;
use crate::work::{sentinel, spec};

/// A line of the report: spec steps, sentinel texts and reasons come from
/// the repository or a session, so their control characters are shown.
macro_rules! show {
    ($($t:tt)*) => { outln!("{}", crate::output::visible(&format!($($t)*))) };
}

/// Show where the work stands.
///
/// Spec progress and the next open step, the sentinels (COMPLETE, WAITING)
/// with their reason and time, whether a loop is running, and the last run's
/// summary.
#[derive(Debug, Args)]
pub struct Status {
    /// Print the status as JSON.
    #[arg(long)]
    json: bool,

    /// Every loop of this repository: the main checkout and each worktree
    #[arg(long)]
    all: bool,
}

/// One loop's line for `status --all`.
fn loop_view(name: &str, root: &std::path::Path, branch: Option<&str>) -> Value {
    let project = Project::at(root);
    let running = runlock::running(&project.lock());
    let spec = fsutil::read_optional(&project.spec())
        .ok()
        .flatten()
        .map(|t| spec::parse(&t));
    let waiting = sentinel::Waiting::read(&project.waiting()).ok().flatten();
    let runs = project.runs();
    let run = match &running {
        Some(l) => Some(RunDir::open(&runs, &l.run_id)),
        None => RunDir::latest(&runs),
    };
    let saved = run.as_ref().and_then(RunDir::state);
    let summary = run.as_ref().and_then(RunDir::summary);
    json!({
        "name": name,
        "path": root,
        "branch": branch,
        "running": running.as_ref().map(|l| json!({"pid": l.pid, "iteration": l.iteration, "max_iterations": l.max_iterations, "run_id": l.run_id})),
        "spec": spec.as_ref().map(|s| json!({"done": s.done(), "total": s.total()})),
        "cost_usd": saved.as_ref().map(|s| s.state.cost_usd),
        "iteration": saved.as_ref().map(|s| s.state.iteration),
        "last_outcome": summary.as_ref().map(|s| json!({"outcome": s.outcome, "reason": s.reason})),
        "waiting": waiting.map(|w| w.reason),
    })
}

fn all_loops(json_out: bool) -> Result<ExitStatus> {
    let here = std::env::current_dir()?;
    let main = crate::run::worktree::main_root(&here)?;
    let views: Vec<Value> = crate::run::worktree::list(&main)?
        .into_iter()
        .filter(|w| w.path.join(".ralph").is_dir())
        .map(|w| {
            let branch = w
                .branch
                .as_deref()
                .map(|b| b.trim_start_matches("refs/heads/").to_string());
            loop_view(&w.name(), &w.path, branch.as_deref())
        })
        .collect();
    if json_out {
        outln!("{}", serde_json::to_string_pretty(&views)?);
        return Ok(ExitStatus::Success);
    }
    for v in &views {
        let running = match v["running"].as_object() {
            Some(r) => format!(
                "running (pid {}, iteration {}/{})",
                r["pid"], r["iteration"], r["max_iterations"]
            ),
            None => "not running".into(),
        };
        let spec = v["spec"].as_object().map_or("no spec".to_string(), |s| {
            format!("spec {}/{}", s["done"], s["total"])
        });
        let cost = v["cost_usd"]
            .as_f64()
            .map_or(String::new(), |c| format!(", ${c:.2}"));
        let last = v["last_outcome"]["outcome"]
            .as_str()
            .map_or(String::new(), |o| format!(", last: {o}"));
        show!(
            "{:<12} {:<20} {running}, {spec}{cost}{last}",
            v["name"].as_str().unwrap_or("?"),
            v["branch"].as_str().unwrap_or("(detached)")
        );
        if let Some(w) = v["waiting"].as_str() {
            show!("{:<12} WAITING: {w}", "");
        }
    }
    Ok(ExitStatus::Success)
}

/// The newest run that is not running now: its summary, or for a run whose
/// loop was killed before writing one, what its records and saved state say.
pub fn last_run(project: &Project) -> Option<Value> {
    let running = runlock::running(&project.lock()).map(|l| l.run_id);
    RunDir::all(&project.runs()).into_iter().rev().find_map(|run| {
        if running.as_deref() == Some(run.id.as_str()) {
            return None;
        }
        if let Some(s) = run.summary() {
            return serde_json::to_value(s).ok();
        }
        let saved = run.state()?;
        Some(json!({
            "run_id": run.id,
            "outcome": Outcome::EndedAbnormally,
            "reason": "the loop was killed; its sessions were not all cleaned up yet (the next `ralph loop` does that; `ralph loop --resume` goes on with the run)",
            "iterations": saved.state.iteration,
            "sessions": saved.state.sessions,
            "duration": crate::timefmt::human_duration(std::time::Duration::from_secs_f64(saved.elapsed_s)),
            "cost_usd": saved.state.cost_usd,
        }))
    })
}

/// The last verdict of the completion gate: of the running loop, else of the
/// last run.
fn gate_result(project: &Project, running: &Option<runlock::LockInfo>) -> Option<Value> {
    let runs = project.runs();
    let run = match running {
        Some(l) => RunDir::open(&runs, &l.run_id),
        None => RunDir::latest(&runs)?,
    };
    let v = run.state()?.last_gate?;
    serde_json::to_value(v).ok()
}

impl Run for Status {
    fn run(&self) -> Result<ExitStatus> {
        if self.all {
            return all_loops(self.json);
        }
        let project = Project::find()?;
        let spec = fsutil::read_optional(&project.spec())?.map(|t| spec::parse(&t));
        let complete = sentinel::Complete::read(&project.complete())?;
        let waiting = sentinel::Waiting::read(&project.waiting())?;
        let running = runlock::running(&project.lock());
        let last = last_run(&project);
        // Whether what the config would run is approved (read, never run).
        let config = match crate::config::load(&project.config()) {
            Ok(c) => crate::trust::approval::standing(&project.root, &c)
                .text()
                .to_string(),
            Err(e) => format!("invalid: {e:#}"),
        };

        if self.json {
            let v = json!({
                "project": project.root,
                "spec": spec.as_ref().map(|s| json!({
                    "done": s.done(), "total": s.total(),
                    "next": s.next_open(),
                    "problems": s.problems,
                })),
                "complete": complete.as_ref().map(|c| json!({"time": c.completed, "file_time": c.file_time, "forced": c.forced, "message": c.message})),
                "waiting": waiting.as_ref().map(|w| json!({"since": w.since, "reason": w.reason})),
                // The run's secret marks its processes: not for printing.
                "loop": running.as_ref().map(|l| {
                    let mut v = serde_json::to_value(l).unwrap_or_default();
                    if let Some(o) = v.as_object_mut() {
                        o.remove("token");
                    }
                    v
                }),
                "last_run": last,
                "gate": gate_result(&project, &running),
                "config": config,
            });
            outln!("{}", serde_json::to_string_pretty(&v)?);
            return Ok(ExitStatus::Success);
        }

        show!("project: {}", project.root.display());
        match &spec {
            None => show!(
                "spec:    none at {} (run /ralph-setup or `ralph init`)",
                project.spec().display()
            ),
            Some(s) => {
                show!("spec:    {}", s.progress());
                if let Some(next) = s.next_open() {
                    show!("next:    {}", next.describe());
                }
                for p in &s.problems {
                    show!("warning: line {}: {}", p.line, p.message);
                }
            }
        }
        match &complete {
            Some(c) => {
                let forced = if c.forced { " (forced)" } else { "" };
                let msg = if c.message.is_empty() {
                    String::new()
                } else {
                    format!(": {}", c.message)
                };
                show!("COMPLETE{}{forced}{msg}", c.since());
            }
            None => show!("COMPLETE: no"),
        }
        match &waiting {
            Some(w) => show!("WAITING{}: {}", w.since(), w.reason),
            None => show!("WAITING: no"),
        }
        match &running {
            Some(l) => show!(
                "loop:    running, pid {}, started {}, iteration {}/{} (run {})",
                l.pid,
                l.started_at,
                l.iteration,
                l.max_iterations,
                l.run_id
            ),
            None => show!("loop:    not running"),
        }
        show!("config:  {config}");
        if let Some(g) = gate_result(&project, &running) {
            match (
                g["passed"].as_bool(),
                g["failed"].as_str(),
                g["why"].as_str(),
            ) {
                (Some(true), _, _) => {
                    show!("gate:    passed at {}", g["time"].as_str().unwrap_or("?"))
                }
                (_, Some(c), Some(w)) => show!(
                    "gate:    `{c}` failed ({w}) at {}; see .ralph/gate-failed.md",
                    g["time"].as_str().unwrap_or("?")
                ),
                _ => {}
            }
        }
        if let Some(r) = &last {
            let get = |k: &str| {
                r.get(k)
                    .map(|v| {
                        v.as_str()
                            .map(String::from)
                            .unwrap_or_else(|| v.to_string())
                    })
                    .unwrap_or_else(|| "?".into())
            };
            let confined = if r["confined"] == true {
                ", confined"
            } else {
                ""
            };
            show!(
                "last run: {} — {} ({}), {} iteration(s), {}, ${:.2}{confined}",
                get("run_id"),
                get("outcome"),
                get("reason"),
                get("iterations"),
                get("duration"),
                r["cost_usd"].as_f64().unwrap_or(0.0)
            );
        }
        Ok(ExitStatus::Success)
    }
}
