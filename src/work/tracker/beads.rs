//! beads as the tracker: `br` (beads_rust) or the original `bd`, read in
//! one call (`list --all --json`, never one call per step). A session
//! closes its own tasks (`br close`); ralph claims a parallel run's tasks
//! for its workers, and opens again those whose merge it undid.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::{Caps, Health, Issue, Snapshot, Status, TrackerError};

pub const INSTALL_HINT: &str = "Install beads_rust with: RUSTC_BOOTSTRAP=1 cargo install beads_rust --version 0.7.6 \
--no-default-features --locked --ignore-rust-version (it needs a nightly feature on stable Rust; see README)";

/// beads as a row of the trackers: the one asked for (`None`: `br`, else
/// `bd`, whichever is on PATH).
pub(super) struct Choice(Option<Flavour>);

pub(super) static ANY: Choice = Choice(None);
pub(super) static BR: Choice = Choice(Some(Flavour::Br));
pub(super) static BD: Choice = Choice(Some(Flavour::Bd));

static CAPS: Caps = Caps {
    ralph_closes: false,
    issue_tasks: false,
    unblock: "`br dep remove`",
};

impl super::Backend for Choice {
    fn caps(&self) -> &'static Caps {
        &CAPS
    }

    fn open(&self, root: &Path) -> Result<super::Tracker, TrackerError> {
        Ok(Box::new(self.maker(root)?))
    }

    fn maker(&self, root: &Path) -> Result<Beads, TrackerError> {
        detect(self.0, root)
    }

    /// br or bd on PATH; with neither, a project that keeps no tasks (the
    /// spec alone) is fine.
    fn health(&self, project: &crate::work::project::Project) -> Health {
        match ["br", "bd"]
            .into_iter()
            .find_map(|t| which::which(t).ok().map(|p| (t, p)))
        {
            Some((t, p)) => Health::Pass(format!("{t} at {}", p.display())),
            None if super::markdown::in_use(project) => super::markdown::health(),
            None => Health::Fail(
                "neither br nor bd is on PATH (verify-sync cannot check tasks)".into(),
                INSTALL_HINT.into(),
            ),
        }
    }

    fn session_program(&self, project: &Path) -> Option<&'static str> {
        if !project.join(".beads").is_dir() {
            return None;
        }
        detect(self.0, project).ok().map(|b| b.name())
    }

    /// Said by the caller when beads refuses; nothing when it is not there.
    fn claim(&self, root: &Path, task: &str, worker: Option<&str>) -> Result<(), TrackerError> {
        match detect(self.0, root) {
            Ok(b) => b.claim(task, worker),
            Err(_) => Ok(()),
        }
    }

    fn release(&self, root: &Path, task: &str) {
        let Ok(b) = detect(self.0, root) else { return };
        let closed = b
            .snapshot(None)
            .is_ok_and(|s| s.issues.iter().any(|i| i.id == task && i.is_closed()));
        if !closed {
            let _ = b.claim(task, None);
        }
    }

    fn reopen(&self, root: &Path, task: &str) -> Result<(), TrackerError> {
        match detect(self.0, root) {
            Ok(b) => b.reopen(task),
            Err(_) => Ok(()),
        }
    }

    fn close_epic(&self, root: &Path, epic: &str) -> Option<Result<String, TrackerError>> {
        let b = match detect(self.0, root) {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        Some(
            b.close(&[epic.to_string()], "every task of it is done")
                .map(|()| format!("closed epic {epic}: every task of it is done")),
        )
    }

    /// A GitHub issue (`#12`) is no task of beads': its box is the word.
    fn is_closed(&self, root: &Path, task: &str) -> Option<bool> {
        if crate::work::spec::issue_number(task).is_some() {
            return None;
        }
        let snap = detect(self.0, root).ok()?.snapshot(None).ok()?;
        Some(snap.issues.iter().any(|i| i.id == task && i.is_closed()))
    }
}

/// The beads on PATH: the one asked for, else `br`, else `bd`.
fn detect(asked: Option<Flavour>, project: &Path) -> Result<Beads, TrackerError> {
    let find = |name: &str| which::which(name).ok();
    let (flavour, bin) = match asked {
        Some(f) => {
            let name = f.name();
            let bin = find(name).ok_or_else(|| {
                TrackerError::Missing(format!("`{name}` is not on PATH. {INSTALL_HINT}"))
            })?;
            (f, bin)
        }
        None => match (find("br"), find("bd")) {
            (Some(b), _) => (Flavour::Br, b),
            (None, Some(b)) => (Flavour::Bd, b),
            (None, None) => {
                return Err(TrackerError::Missing(format!(
                    "no task tracker found: neither `br` nor `bd` is on PATH. {INSTALL_HINT}"
                )));
            }
        },
    };
    Ok(Beads {
        flavour,
        bin,
        project: project.to_path_buf(),
    })
}

/// Which beads: the two take the same commands, and print their lists
/// differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavour {
    Br,
    Bd,
}

impl Flavour {
    fn name(self) -> &'static str {
        match self {
            Flavour::Br => "br",
            Flavour::Bd => "bd",
        }
    }
}

/// The tracker: `br` or `bd`, the same `list --all --json` call, the
/// epic's children found from what each prints.
pub struct Beads {
    flavour: Flavour,
    bin: PathBuf,
    project: PathBuf,
}

fn spawn(bin: &Path, dir: &Path, args: &[&str]) -> Result<std::process::Child, TrackerError> {
    let mut cmd = Command::new(bin);
    // Changing folder in the child makes std fork instead of posix_spawn
    // in a static build (no posix_spawn_file_actions_addchdir_np there):
    // only do it when the project is not where we are.
    if std::env::current_dir().is_ok_and(|cwd| cwd != dir) {
        cmd.current_dir(dir);
    }
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| TrackerError::Failed(format!("cannot run {}: {e}", bin.display())))
}

fn finish(
    name: &str,
    args: &[&str],
    child: std::process::Child,
) -> Result<Vec<Issue>, TrackerError> {
    let out: Output = child
        .wait_with_output()
        .map_err(|e| TrackerError::Failed(format!("{name}: {e}")))?;
    if out.status.success()
        && let Some(issues) = parse_list_bytes(&out.stdout)
    {
        return Ok(issues);
    }
    // beads prints its errors as JSON on stdout when asked for JSON.
    let json: Option<Value> = serde_json::from_slice(&out.stdout).ok();
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
    Err(TrackerError::Failed(format!(
        "`{name} {}` failed ({}): {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

#[derive(serde::Deserialize)]
struct Item {
    id: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    parent: Option<String>,
}

#[derive(serde::Deserialize)]
struct Envelope {
    issues: Option<Vec<Item>>,
    // bd's `{"schema_version": 1, "data": ...}`: rare, so a Value is fine.
    data: Option<Value>,
}

/// `list --json` in any of the shapes beads has printed: `{"issues": [...]}`,
/// a bare array, or bd's `{"schema_version", "data": ...}`. Typed, and not
/// `#[serde(untagged)]` (which buffers everything first): for thousands of
/// issues this parse is most of verify-sync's own time.
fn parse_list_bytes(bytes: &[u8]) -> Option<Vec<Issue>> {
    let items: Vec<Item> = match bytes.iter().find(|b| !b.is_ascii_whitespace())? {
        b'[' => serde_json::from_slice(bytes).ok()?,
        b'{' => {
            let env: Envelope = serde_json::from_slice(bytes).ok()?;
            match (env.issues, env.data) {
                (Some(items), _) => items,
                (None, Some(data)) => return parse_list_bytes(&serde_json::to_vec(&data).ok()?),
                (None, None) => return None,
            }
        }
        _ => return None,
    };
    Some(
        items
            .into_iter()
            .map(|i| Issue {
                id: i.id,
                status: Status::parse(&i.status),
                title: i.title,
                parent: i.parent,
            })
            .collect(),
    )
}

/// The epic's children in br: ids `<epic>.<n>`, the hierarchy br itself
/// shows (`br list --tree`) and gives every task created with `--parent`.
/// Read from the one `list` call: asking `br dep list` as well costs more
/// than the list itself.
pub fn dotted_children(issues: &[Issue], epic: &str) -> Vec<String> {
    let prefix = format!("{}.", epic.to_ascii_lowercase());
    issues
        .iter()
        .filter(|i| {
            i.id.to_ascii_lowercase()
                .strip_prefix(&prefix)
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty())
        })
        .map(|i| i.id.clone())
        .collect()
}

impl super::Reader for Beads {
    fn name(&self) -> &'static str {
        Beads::name(self)
    }

    fn snapshot(&self, epic: Option<&str>, _tasks: &[String]) -> Result<Snapshot, TrackerError> {
        Beads::snapshot(self, epic)
    }

    fn order(&self, ids: &[String]) -> Result<super::Waits, TrackerError> {
        let blockers = self.blockers(ids)?;
        let closed = Beads::snapshot(self, None)?
            .issues
            .into_iter()
            .filter(|i| i.is_closed())
            .map(|i| i.id)
            .collect();
        Ok((blockers, closed))
    }
}

impl Beads {
    pub fn name(&self) -> &'static str {
        self.flavour.name()
    }

    /// A new task (under `parent`, with `description`); its id.
    pub fn create(
        &self,
        title: &str,
        parent: Option<&str>,
        description: Option<&str>,
    ) -> Result<String, TrackerError> {
        let mut args: Vec<&str> = vec!["create", "--type", "task", "--silent"];
        if let Some(p) = parent {
            args.extend(["--parent", p]);
        }
        if let Some(d) = description {
            args.extend(["--description", d]);
        }
        // The title after `--`: never read as an option.
        args.extend(["--", title]);
        let out = spawn(&self.bin, &self.project, &args)?
            .wait_with_output()
            .map_err(|e| TrackerError::Failed(format!("{}: {e}", self.name())))?;
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || id.is_empty() || id.contains(char::is_whitespace) {
            return Err(TrackerError::Failed(format!(
                "`{} create` failed: {}",
                self.name(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(id)
    }

    /// Close these tasks, in one call, saying why.
    pub fn close(&self, ids: &[String], reason: &str) -> Result<(), TrackerError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut args: Vec<&str> = vec!["close", "--reason", reason, "--"];
        args.extend(ids.iter().map(String::as_str));
        self.change(&args)
    }

    /// Run one command whose output is not read; its failure said.
    fn change(&self, args: &[&str]) -> Result<(), TrackerError> {
        let out = spawn(&self.bin, &self.project, args)?
            .wait_with_output()
            .map_err(|e| TrackerError::Failed(format!("{}: {e}", self.name())))?;
        if !out.status.success() {
            return Err(TrackerError::Failed(format!(
                "`{} {}` failed: {}",
                self.name(),
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Set the tracker up in the project (`init`).
    pub fn init(&self) -> Result<(), TrackerError> {
        self.change(&["init"])
    }

    /// A task taken by a worker of a parallel run: in progress, its name
    /// the assignee (given up: open again, nobody's).
    pub fn claim(&self, id: &str, worker: Option<&str>) -> Result<(), TrackerError> {
        // A GitHub issue (`#12`) is no task of beads'.
        if crate::work::spec::issue_number(id).is_some() {
            return Ok(());
        }
        let (status, who) = match worker {
            Some(w) => (Status::InProgress, w),
            None => (Status::Open, ""),
        };
        self.change(&[
            "update",
            "--status",
            status.word(),
            "--assignee",
            who,
            "--",
            id,
        ])
    }

    /// Open a closed task again (its step's merge was undone).
    pub fn reopen(&self, id: &str) -> Result<(), TrackerError> {
        if crate::work::spec::issue_number(id).is_some() {
            return Ok(());
        }
        self.change(&["reopen", "--", id])
    }

    /// The tasks each of `ids` waits for (its `blocks` dependencies), in
    /// one call.
    pub fn blockers(
        &self,
        ids: &[String],
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>, TrackerError> {
        let mut out = std::collections::BTreeMap::new();
        let ids: Vec<&str> = ids
            .iter()
            .map(String::as_str)
            .filter(|i| crate::work::spec::issue_number(i).is_none())
            .collect();
        if ids.is_empty() {
            return Ok(out);
        }
        let mut args: Vec<&str> = vec!["show", "--json", "--"];
        args.extend(ids);
        let run = spawn(&self.bin, &self.project, &args)?
            .wait_with_output()
            .map_err(|e| TrackerError::Failed(format!("{}: {e}", self.name())))?;
        #[derive(serde::Deserialize)]
        struct Dep {
            #[serde(alias = "depends_on_id")]
            id: String,
            #[serde(default, alias = "type")]
            dependency_type: String,
        }
        #[derive(serde::Deserialize)]
        struct Shown {
            id: String,
            #[serde(default)]
            dependencies: Vec<Dep>,
        }
        let shown: Vec<Shown> = serde_json::from_slice(&run.stdout).map_err(|e| {
            TrackerError::Failed(format!(
                "`{} show --json` printed what ralph cannot read ({e}): {}",
                self.name(),
                String::from_utf8_lossy(&run.stderr).trim()
            ))
        })?;
        for s in shown {
            let waits: Vec<String> = s
                .dependencies
                .into_iter()
                .filter(|d| d.dependency_type == "blocks" || d.dependency_type.is_empty())
                .map(|d| d.id)
                .collect();
            if !waits.is_empty() {
                out.insert(s.id, waits);
            }
        }
        Ok(out)
    }

    /// Delete these tasks (br: tombstoned and pruned from its JSONL), in
    /// one call, saying why: what a plan that was not kept had made.
    pub fn delete(&self, ids: &[String], reason: &str) -> Result<(), TrackerError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut args: Vec<&str> = match self.flavour {
            Flavour::Br => vec!["delete", "--force", "--hard", "--reason", reason, "--"],
            Flavour::Bd => vec!["delete", "--force", "--"],
        };
        args.extend(ids.iter().map(String::as_str));
        self.change(&args)
    }

    pub fn snapshot(&self, epic: Option<&str>) -> Result<Snapshot, TrackerError> {
        // br builds and prints every field of every issue unless told which:
        // asking for the three we read makes the call about a fifth cheaper
        // on 2,000 issues. bd has no such option.
        let args: &[&str] = match self.flavour {
            Flavour::Br => &[
                "list",
                "--all",
                "--json",
                "--limit",
                "0",
                "--fields",
                "id,status,title",
            ],
            Flavour::Bd => &["list", "--all", "--json", "--limit", "0"],
        };
        let issues = finish(self.name(), args, spawn(&self.bin, &self.project, args)?)?;
        let epic_children = epic.map(|e| match self.flavour {
            Flavour::Br => dotted_children(&issues, e),
            // bd's list items carry their parent.
            Flavour::Bd => issues
                .iter()
                .filter(|i| {
                    i.parent
                        .as_deref()
                        .is_some_and(|p| p.eq_ignore_ascii_case(e))
                })
                .map(|i| i.id.clone())
                .collect(),
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
            let l = parse_list_bytes(v.to_string().as_bytes()).unwrap();
            assert_eq!(l.len(), 1, "{v}");
            assert!(l[0].is_closed());
            assert_eq!(l[0].parent.as_deref(), Some("a-0"));
        }
    }

    #[test]
    fn each_status_is_read_as_it_comes_in_and_a_missing_one_is_other() {
        let list = json!([
            {"id": "a-1", "status": "open"},
            {"id": "a-2", "status": "in_progress"},
            {"id": "a-3", "status": "closed"},
            {"id": "a-4", "status": "blocked"},
            {"id": "a-5"},
        ]);
        let l = parse_list_bytes(list.to_string().as_bytes()).unwrap();
        let got: Vec<Status> = l.into_iter().map(|i| i.status).collect();
        assert_eq!(
            got,
            [
                Status::Open,
                Status::InProgress,
                Status::Closed,
                Status::Other("blocked".into()),
                Status::Other(String::new()),
            ]
        );
    }

    #[test]
    fn children_are_the_dotted_ids_under_the_epic() {
        let issue = |id: &str| Issue {
            id: id.into(),
            status: Status::Open,
            title: String::new(),
            parent: None,
        };
        let issues = [
            issue("e-1"),
            issue("e-1.1"),
            issue("E-1.2"),
            issue("e-1.1.3"),
            issue("e-10.1"),
            issue("x-9"),
        ];
        assert_eq!(dotted_children(&issues, "e-1"), vec!["e-1.1", "E-1.2"]);
    }
}
