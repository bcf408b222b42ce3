//! The tools `ralph mcp` offers, each what a command of ralph does, through
//! the same code: the loops as `ralph watch --json` gathers them, a loop's
//! `ralph status --json`, its journal's last lines, `ralph loop --worktree`
//! started in the background, `ralph stop`, `ralph answer`, `ralph add`,
//! `ralph raise`. A loop is named as `list_loops` names it (`main`: the
//! repository's checkout; else its worktree's name).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::control::{Command, Limit, StopWhen};
use crate::history::events;
use crate::history::records::RunDir;
use crate::run::tell::Reply;
use crate::work::project::Project;

/// Who sends what a tool sends, as the journal and the loop's lines say.
pub const BY: &str = "mcp";

/// The most journal lines one call reads.
pub const EVENTS_MAX: usize = 100;

/// A tool as the client lists it.
#[derive(Debug, Clone)]
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub schema: Value,
    /// Reads only: the client need not ask.
    pub read_only: bool,
    /// Ends or takes away something (a running session).
    pub destructive: bool,
}

fn loop_arg() -> Value {
    json!({
        "type": "string",
        "description": "The loop, as list_loops names it: `main` (the repository's checkout, the default) or a worktree's name",
        "maxLength": 64
    })
}

fn schema(props: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false
    })
}

/// Every tool, in the order a user meets them.
pub fn all() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_loops",
            title: "List ralph loops",
            description: "The ralph loops of this repository (its checkout and each worktree), as `ralph watch --json` shows them: state (running, waiting for an answer, ended and how), iteration, spec progress, next step, cost, the question waited on.",
            schema: schema(json!({}), &[]),
            read_only: true,
            destructive: false,
        },
        Tool {
            name: "loop_status",
            title: "A ralph loop's status",
            description: "Where one loop's work stands, as `ralph status --json` says it: spec progress and next step, COMPLETE and WAITING (with the question and its options), the running loop, the last run, the gate's and reviewer's verdicts.",
            schema: schema(json!({"loop": loop_arg()}), &[]),
            read_only: true,
            destructive: false,
        },
        Tool {
            name: "loop_events",
            title: "A ralph loop's recent events",
            description: "The last lines of the journal (events.jsonl) of a loop's running run, else of its latest: sessions started and ended, gate, review, asked, answered, commanded, the end.",
            schema: schema(
                json!({
                    "loop": loop_arg(),
                    "count": {"type": "integer", "minimum": 1, "maximum": EVENTS_MAX, "description": "How many of the newest lines (default 20)"}
                }),
                &[],
            ),
            read_only: true,
            destructive: false,
        },
        Tool {
            name: "start_loop",
            title: "Start a ralph loop in a worktree",
            description: "Start `ralph loop --worktree NAME` in the background: a loop on branch ralph/NAME in its own worktree, with this project's approved settings (`ralph trust`) and nothing else, confined where its agent can be. Refused if the project's config is not approved.",
            schema: schema(
                json!({
                    "worktree": {"type": "string", "description": "The worktree's name (letters, digits, ., _ and -)", "maxLength": 64},
                    "max_iterations": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Stop after this many sessions (default: the project's setting)"}
                }),
                &["worktree"],
            ),
            read_only: false,
            destructive: false,
        },
        Tool {
            name: "stop_loop",
            title: "Stop a ralph loop",
            description: "Stop a running loop, as `ralph stop` does: now (its session ended as Ctrl+C ends it), or with after_session once its running session has ended. The run stays resumable.",
            schema: schema(
                json!({
                    "loop": loop_arg(),
                    "after_session": {"type": "boolean", "description": "Let the running session finish; start no new one"}
                }),
                &[],
            ),
            read_only: false,
            destructive: true,
        },
        Tool {
            name: "answer",
            title: "Answer a ralph loop's question",
            description: "Answer the question a loop asks (its WAITING), as `ralph answer` does: in words (text), or by the number of one of its options (option, 1 first, as loop_status lists them). A loop waiting for an answer goes on with it.",
            schema: schema(
                json!({
                    "loop": loop_arg(),
                    "text": {"type": "string", "description": "The answer, in words"},
                    "option": {"type": "integer", "minimum": 1, "description": "Pick option N of the question"}
                }),
                &[],
            ),
            read_only: false,
            destructive: false,
        },
        Tool {
            name: "add_step",
            title: "Add a step to a ralph loop's spec",
            description: "Add a step to a loop's spec (and its task to the tracker), as `ralph add TITLE` does; a running loop's next session sees it.",
            schema: schema(
                json!({
                    "loop": loop_arg(),
                    "title": {"type": "string", "description": "What the step is (one line)", "maxLength": 500}
                }),
                &["title"],
            ),
            read_only: false,
            destructive: false,
        },
        Tool {
            name: "raise_limit",
            title: "Raise a ralph loop's limit",
            description: "Raise a limit of a running loop by an amount, as `ralph raise` does: iterations (sessions more), cost_usd (dollars more), time (more time, e.g. `1h`) or tokens (tokens more). One at a time.",
            schema: schema(
                json!({
                    "loop": loop_arg(),
                    "iterations": {"type": "integer", "minimum": 1, "maximum": 10000},
                    "cost_usd": {"type": "number", "exclusiveMinimum": 0},
                    "time": {"type": "string", "description": "e.g. 30m, 2h", "maxLength": 32},
                    "tokens": {"type": "integer", "minimum": 1}
                }),
                &[],
            ),
            read_only: false,
            destructive: false,
        },
    ]
}

/// What a tool gives back: JSON (read by a model as data) or lines said.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Json(Value),
    Said(String),
}

/// Call tool `name` with `args`, in the repository of the folder `here`;
/// what it gives, or why not (said to the client as the tool's error).
pub fn call(here: &Path, name: &str, args: &Map<String, Value>) -> Result<Output, String> {
    super::text::check_arguments(args)?;
    let tool = all()
        .into_iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("no tool {:?}", super::text::clean_str(name, 64)))?;
    let known: Vec<&str> = tool.schema["properties"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    if let Some(k) = args.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "{name} takes no argument {:?} (only: {})",
            super::text::clean_str(k, 64),
            known.join(", ")
        ));
    }
    let a = Args(args);
    let main = main_root(here)?;
    match name {
        "list_loops" => json(crate::watch::model::gather(&main)),
        "loop_status" => {
            let p = project(&main, a.str("loop")?)?;
            crate::cmd::status::json(&p)
                .map(Output::Json)
                .map_err(|e| format!("{e:#}"))
        }
        "loop_events" => {
            let p = project(&main, a.str("loop")?)?;
            let count = a.int("count")?.unwrap_or(20).clamp(1, EVENTS_MAX as u64) as usize;
            Ok(Output::Json(recent_events(&p, count)))
        }
        "start_loop" => {
            let name = a
                .str("worktree")?
                .ok_or("start_loop needs a worktree name")?;
            let n = a.int("max_iterations")?;
            let n = n
                .map(|n| u32::try_from(n).ok().filter(|n| (1..=1000).contains(n)))
                .map(|n| n.ok_or("max_iterations is from 1 to 1000"))
                .transpose()?;
            super::start::start(&main, name, n).map(Output::Said)
        }
        "stop_loop" => {
            let p = project(&main, a.str("loop")?)?;
            let when = match a.bool("after_session")? {
                Some(true) => StopWhen::AfterSession,
                _ => StopWhen::Now,
            };
            said(crate::cmd::stop::send_as(&p, BY, Command::Stop { when }))
        }
        "answer" => {
            let p = project(&main, a.str("loop")?)?;
            let reply = match (a.str("text")?, a.int("option")?) {
                (Some(_), Some(_)) => return Err("answer with text or option, not both".into()),
                (Some(t), None) => Reply::Text(t.to_string()),
                (None, Some(n)) => Reply::Option(u32::try_from(n).unwrap_or(u32::MAX)),
                (None, None) => return Err("answer needs text or option".into()),
            };
            said(crate::cmd::answer::send(&p, BY, &reply, None).map(|l| l.join("\n")))
        }
        "add_step" => {
            let p = project(&main, a.str("loop")?)?;
            let title = a.str("title")?.ok_or("add_step needs a title")?;
            crate::control::add::step(&p.root, title)
                .map(|said| Output::Said(super::text::clean_str(&said, 8000)))
        }
        "raise_limit" => {
            let p = project(&main, a.str("loop")?)?;
            let limit = Limit::one_of(
                a.int("iterations")?,
                a.num("cost_usd")?,
                a.str("time")?,
                a.int("tokens")?,
            )?;
            let Some(limit) = limit else {
                return Err("raise_limit takes one of iterations, cost_usd, time or tokens".into());
            };
            said(crate::cmd::stop::send_as(&p, BY, Command::Raise(limit)))
        }
        _ => Err(format!("no tool {name:?}")),
    }
}

fn json(v: impl serde::Serialize) -> Result<Output, String> {
    serde_json::to_value(v)
        .map(Output::Json)
        .map_err(|e| e.to_string())
}

fn said(r: anyhow::Result<String>) -> Result<Output, String> {
    r.map(Output::Said).map_err(|e| format!("{e:#}"))
}

/// The main checkout of the repository `here` is in.
fn main_root(here: &Path) -> Result<PathBuf, String> {
    crate::run::worktree::main_root(here).map_err(|_| {
        format!(
            "{} is not in a git repository: ralph mcp serves the loops of the repository it was started in",
            here.display()
        )
    })
}

/// The loop named `name` (`main` when none) of the repository at `main`.
fn project(main: &Path, name: Option<&str>) -> Result<Project, String> {
    let name = name.unwrap_or("main");
    let loops = crate::run::worktree::loops(main).map_err(|e| format!("{e:#}"))?;
    if let Some(w) = loops.iter().find(|w| w.name() == name) {
        return Ok(Project::at(&w.path));
    }
    let names: Vec<String> = loops.iter().map(|w| w.name()).collect();
    Err(format!(
        "no loop named {:?} in {} (its loops: {})",
        super::text::clean_str(name, 64),
        main.display(),
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    ))
}

/// The newest `count` lines of the journal of `project`'s running run,
/// else of its latest, oldest first.
fn recent_events(project: &Project, count: usize) -> Value {
    let runs = project.runs();
    let run = match crate::run::lock::running(&project.lock()) {
        Some(l) if RunDir::valid_id(&l.run_id) => Some(RunDir::open(&runs, &l.run_id)),
        _ => RunDir::latest(&runs),
    };
    let Some(run) = run else {
        return json!({"run_id": null, "events": []});
    };
    let mut lines: Vec<Value> = events::newest_first(&run)
        .take(count)
        .filter_map(|l| serde_json::to_value(l).ok())
        .collect();
    lines.reverse();
    json!({"run_id": run.id, "events": lines})
}

/// A call's arguments, read by name and type.
struct Args<'a>(&'a Map<String, Value>);

impl<'a> Args<'a> {
    fn get(&self, k: &str) -> Option<&'a Value> {
        self.0.get(k).filter(|v| !v.is_null())
    }

    fn str(&self, k: &str) -> Result<Option<&'a str>, String> {
        self.get(k)
            .map(|v| v.as_str().ok_or(format!("{k} is a string")))
            .transpose()
    }

    fn int(&self, k: &str) -> Result<Option<u64>, String> {
        self.get(k)
            .map(|v| {
                v.as_u64()
                    .ok_or(format!("{k} is a whole number, 0 or more"))
            })
            .transpose()
    }

    fn num(&self, k: &str) -> Result<Option<f64>, String> {
        self.get(k)
            .map(|v| v.as_f64().ok_or(format!("{k} is a number")))
            .transpose()
    }

    fn bool(&self, k: &str) -> Result<Option<bool>, String> {
        self.get(k)
            .map(|v| v.as_bool().ok_or(format!("{k} is true or false")))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_that_change_a_run_are_not_read_only_and_stopping_is_destructive() {
        let tools = all();
        let read_only: Vec<&str> = tools
            .iter()
            .filter(|t| t.read_only)
            .map(|t| t.name)
            .collect();
        assert_eq!(read_only, ["list_loops", "loop_status", "loop_events"]);
        let destructive: Vec<&str> = tools
            .iter()
            .filter(|t| t.destructive)
            .map(|t| t.name)
            .collect();
        assert_eq!(destructive, ["stop_loop"]);
        for t in &tools {
            assert_eq!(t.schema["type"], "object", "{}", t.name);
        }
    }

    #[test]
    fn unknown_or_mistyped_arguments_are_refused_before_anything_is_read() {
        let here = Path::new("/");
        let args = |v: Value| v.as_object().unwrap().clone();
        let e = call(here, "answer", &args(json!({"txt": "yes"}))).unwrap_err();
        assert!(e.contains("takes no argument \"txt\""), "{e}");
        let e = call(here, "nope", &args(json!({}))).unwrap_err();
        assert!(e.contains("no tool"), "{e}");
        let e = call(here, "answer", &args(json!({"text": "a\0b"}))).unwrap_err();
        assert!(e.contains("NUL"), "{e}");
        let e = call(here, "loop_status", &args(json!({}))).unwrap_err();
        assert!(e.contains("not in a git repository"), "{e}");
    }
}
