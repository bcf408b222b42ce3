use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};

use super::Run;
use crate::fsutil;
use crate::run::lock as runlock;
use crate::work::project::Project;
use crate::work::{sentinel, spec};

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
}

/// The newest run folder's summary, if any run finished.
pub fn last_run(project: &Project) -> Option<Value> {
    let mut runs: Vec<_> = std::fs::read_dir(project.runs())
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    runs.sort();
    runs.iter().rev().find_map(|d| {
        let text = std::fs::read_to_string(d.join("summary.json")).ok()?;
        serde_json::from_str(&text).ok()
    })
}

impl Run for Status {
    fn run(&self) -> Result<()> {
        let project = Project::find()?;
        let spec = fsutil::read_optional(&project.spec())?.map(|t| spec::parse(&t));
        let complete = sentinel::read(&project.complete())?;
        let waiting = sentinel::read(&project.waiting())?;
        let running = runlock::running(&project.lock());
        let last = last_run(&project);

        if self.json {
            let v = json!({
                "project": project.root,
                "spec": spec.as_ref().map(|s| json!({
                    "done": s.done(), "total": s.total(),
                    "next": s.next_open(),
                    "problems": s.problems,
                })),
                "complete": complete.as_ref().map(|s| json!({"time": s.field("completed"), "forced": s.field("forced") == Some("yes"), "message": s.text})),
                "waiting": waiting.as_ref().map(|s| json!({"since": s.field("since"), "reason": s.text})),
                "loop": running,
                "last_run": last,
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
            return Ok(());
        }

        println!("project: {}", project.root.display());
        match &spec {
            None => println!(
                "spec:    none at {} (run /ralph-setup or `ralph init`)",
                project.spec().display()
            ),
            Some(s) => {
                println!("spec:    {}", s.progress());
                if let Some(next) = s.next_open() {
                    println!("next:    {}", next.describe());
                }
                for p in &s.problems {
                    println!("warning: line {}: {}", p.line, p.message);
                }
            }
        }
        match &complete {
            Some(s) => {
                let forced = if s.field("forced") == Some("yes") {
                    " (forced)"
                } else {
                    ""
                };
                let msg = if s.text.is_empty() {
                    String::new()
                } else {
                    format!(": {}", s.text)
                };
                println!(
                    "COMPLETE since {}{forced}{msg}",
                    s.field("completed").unwrap_or("?")
                );
            }
            None => println!("COMPLETE: no"),
        }
        match &waiting {
            Some(s) => println!(
                "WAITING since {}: {}",
                s.field("since").unwrap_or("?"),
                s.text
            ),
            None => println!("WAITING: no"),
        }
        match &running {
            Some(l) => println!(
                "loop:    running, pid {}, started {}, iteration {}/{} (run {})",
                l.pid, l.started_at, l.iteration, l.max_iterations, l.run_id
            ),
            None => println!("loop:    not running"),
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
            println!(
                "last run: {} — {} ({}), {} iteration(s), {}, ${:.2}",
                get("run_id"),
                get("outcome"),
                get("reason"),
                get("iterations"),
                get("duration"),
                r["cost_usd"].as_f64().unwrap_or(0.0)
            );
        }
        Ok(())
    }
}
