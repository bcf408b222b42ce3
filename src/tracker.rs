//! The task tracker (beads: `br`, or the original `bd`) behind one small
//! interface, read in as few calls as possible: statuses of every issue in
//! one `list`, and the epic's children in one more call run at the same time.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use clap::ValueEnum;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub id: String,
    pub status: String,
    pub title: String,
    pub parent: Option<String>,
}

impl Issue {
    pub fn is_closed(&self) -> bool {
        self.status.eq_ignore_ascii_case("closed")
    }
}

/// What the comparison needs from the tracker.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub issues: Vec<Issue>,
    /// Children of the epic the spec names; `None` when it names none.
    pub epic_children: Option<Vec<String>>,
    /// The epic is not known to the tracker.
    pub epic_missing: bool,
}

/// Why the tracker could not be read: verify-sync exits 2 on these.
#[derive(Debug)]
pub enum TrackerError {
    Missing(String),
    Failed(String),
}

impl fmt::Display for TrackerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrackerError::Missing(m) | TrackerError::Failed(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for TrackerError {}

pub trait Tracker {
    fn name(&self) -> &'static str;
    fn snapshot(&self, epic: Option<&str>) -> Result<Snapshot, TrackerError>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// beads_rust
    Br,
    /// the original beads (Go)
    Bd,
}

pub const INSTALL_HINT: &str = "Install beads_rust with: RUSTC_BOOTSTRAP=1 cargo install beads_rust --version 0.7.6 \
--no-default-features --locked --ignore-rust-version (it needs a nightly feature on stable Rust; see README)";

/// The tracker to use: the one asked for, else `br`, else `bd`, on PATH.
pub fn detect(kind: Option<Kind>, project: &Path) -> Result<Box<dyn Tracker>, TrackerError> {
    let find = |name: &str| which::which(name).ok();
    let (kind, bin) = match kind {
        Some(k) => {
            let name = if k == Kind::Br { "br" } else { "bd" };
            let bin = find(name).ok_or_else(|| {
                TrackerError::Missing(format!("`{name}` is not on PATH. {INSTALL_HINT}"))
            })?;
            (k, bin)
        }
        None => match (find("br"), find("bd")) {
            (Some(b), _) => (Kind::Br, b),
            (None, Some(b)) => (Kind::Bd, b),
            (None, None) => {
                return Err(TrackerError::Missing(format!(
                    "no task tracker found: neither `br` nor `bd` is on PATH. {INSTALL_HINT}"
                )));
            }
        },
    };
    let project = project.to_path_buf();
    Ok(match kind {
        Kind::Br => Box::new(Br { bin, project }),
        Kind::Bd => Box::new(Bd { bin, project }),
    })
}

struct Br {
    bin: PathBuf,
    project: PathBuf,
}

struct Bd {
    bin: PathBuf,
    project: PathBuf,
}

fn spawn(bin: &Path, dir: &Path, args: &[&str]) -> Result<std::process::Child, TrackerError> {
    Command::new(bin)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| TrackerError::Failed(format!("cannot run {}: {e}", bin.display())))
}

fn finish(name: &str, args: &[&str], child: std::process::Child) -> Result<Value, TrackerError> {
    let out: Output = child
        .wait_with_output()
        .map_err(|e| TrackerError::Failed(format!("{name}: {e}")))?;
    let json: Option<Value> = serde_json::from_slice(&out.stdout).ok();
    // beads prints its errors as JSON on stdout when asked for JSON.
    if let Some(err) = json.as_ref().and_then(|j| j.get("error")) {
        let msg = err["message"]
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| err.to_string());
        let hint = err["hint"]
            .as_str()
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        return Err(TrackerError::Failed(format!(
            "`{name} {}` failed: {msg}{hint}",
            args.join(" ")
        )));
    }
    match json {
        Some(j) if out.status.success() => Ok(j),
        _ => Err(TrackerError::Failed(format!(
            "`{name} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// Issues from `list --json` in any of the shapes beads has printed:
/// `{"issues": [...]}`, a bare array, or bd's `{"schema_version", "data"}`.
pub fn parse_list(v: &Value) -> Vec<Issue> {
    let items = v.get("issues").or_else(|| v.get("data")).unwrap_or(v);
    let items = items.get("issues").unwrap_or(items);
    items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            Some(Issue {
                id: i["id"].as_str()?.to_string(),
                status: i["status"].as_str().unwrap_or("").to_string(),
                title: i["title"].as_str().unwrap_or("").to_string(),
                parent: i["parent"].as_str().map(String::from),
            })
        })
        .collect()
}

/// Children from `br dep list EPIC --direction up --json`.
pub fn parse_children(v: &Value, epic: &str) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|d| {
            d["type"] == "parent-child"
                && d["depends_on_id"]
                    .as_str()
                    .is_some_and(|p| p.eq_ignore_ascii_case(epic))
        })
        .filter_map(|d| d["issue_id"].as_str().map(String::from))
        .collect()
}

impl Tracker for Br {
    fn name(&self) -> &'static str {
        "br"
    }

    fn snapshot(&self, epic: Option<&str>) -> Result<Snapshot, TrackerError> {
        let list_args = ["list", "--all", "--json", "--limit", "0"];
        let list = spawn(&self.bin, &self.project, &list_args)?;
        let deps = match epic {
            Some(e) => {
                let args = ["dep", "list", e, "--direction", "up", "--json"];
                Some((args, spawn(&self.bin, &self.project, &args)?))
            }
            None => None,
        };
        let issues = parse_list(&finish("br", &list_args, list)?);
        let mut snap = Snapshot {
            issues,
            ..Snapshot::default()
        };
        if let (Some(e), Some((args, child))) = (epic, deps) {
            snap.epic_missing = !snap.issues.iter().any(|i| i.id.eq_ignore_ascii_case(e));
            snap.epic_children = Some(match finish("br", &args, child) {
                Ok(v) => parse_children(&v, e),
                Err(_) if snap.epic_missing => Vec::new(),
                Err(err) => return Err(err),
            });
        }
        Ok(snap)
    }
}

impl Tracker for Bd {
    fn name(&self) -> &'static str {
        "bd"
    }

    fn snapshot(&self, epic: Option<&str>) -> Result<Snapshot, TrackerError> {
        let args = ["list", "--all", "--json", "--limit", "0"];
        let v = finish("bd", &args, spawn(&self.bin, &self.project, &args)?)?;
        let issues = parse_list(&v);
        let epic_children = epic.map(|e| {
            issues
                .iter()
                .filter(|i| {
                    i.parent
                        .as_deref()
                        .is_some_and(|p| p.eq_ignore_ascii_case(e))
                })
                .map(|i| i.id.clone())
                .collect()
        });
        let epic_missing =
            epic.is_some_and(|e| !issues.iter().any(|i| i.id.eq_ignore_ascii_case(e)));
        Ok(Snapshot {
            issues,
            epic_children,
            epic_missing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_list_shape() {
        let item = json!({"id": "a-1", "status": "closed", "title": "T", "parent": "a-0"});
        for v in [
            json!({"issues": [item], "total": 1}),
            json!([item]),
            json!({"schema_version": 1, "data": [item]}),
        ] {
            let l = parse_list(&v);
            assert_eq!(l.len(), 1, "{v}");
            assert!(l[0].is_closed());
            assert_eq!(l[0].parent.as_deref(), Some("a-0"));
        }
    }

    #[test]
    fn children_are_parent_child_links_to_the_epic() {
        let v = json!([
            {"issue_id": "e-1.1", "depends_on_id": "e-1", "type": "parent-child"},
            {"issue_id": "e-1.2", "depends_on_id": "E-1", "type": "parent-child"},
            {"issue_id": "x-9", "depends_on_id": "e-1", "type": "blocks"}
        ]);
        assert_eq!(parse_children(&v, "e-1"), vec!["e-1.1", "e-1.2"]);
    }
}
