//! The trackers that keep a project's tasks, behind one seam: what the
//! loop and the commands ask of a tracker is asked here, never by its name.
//! One module each: `markdown` (none: the spec alone, each step's box the
//! word), `beads` (`br`, or the original `bd`), `github` (GitHub's issues).
//! Adding one is a module that implements `Backend`, its variant in
//! `config::Kind`, and its row in `backend`.

pub mod beads;
pub mod github;
pub mod markdown;

use crate::config::Kind;
use std::fmt;
use std::path::Path;

pub use beads::{Beads, INSTALL_HINT};

/// A task as the tracker has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub id: String,
    pub status: Status,
    pub title: String,
    pub parent: Option<String>,
}

impl Issue {
    pub fn is_closed(&self) -> bool {
        self.status == Status::Closed
    }
}

/// A task's status, read once from the tracker's word where it comes in
/// (br's and bd's `status`, GitHub's `state`), in any case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Open,
    InProgress,
    /// Done: the only status that counts as done.
    Closed,
    /// Any other word, as the tracker wrote it: br's `blocked`, `deferred`,
    /// `draft`, `pinned`, `tombstone` and its custom statuses, bd's
    /// `hooked`.
    Other(String),
}

impl Status {
    pub fn parse(word: &str) -> Status {
        match word.to_ascii_lowercase().as_str() {
            "open" => Status::Open,
            "in_progress" => Status::InProgress,
            "closed" => Status::Closed,
            _ => Status::Other(word.to_string()),
        }
    }

    /// The tracker's word for it (what `br update --status` takes).
    pub fn word(&self) -> &str {
        match self {
            Status::Open => "open",
            Status::InProgress => "in_progress",
            Status::Closed => "closed",
            Status::Other(w) => w,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
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

/// What a tracker is, in one row: what ralph asks of a tracker without
/// running anything is asked here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// A done step's task is ralph's to close, not its session's (GitHub's
    /// issues): the loop closes those of checked steps once a session is
    /// over (a parallel run: once the step is merged), unless the run's
    /// pull request closes them on merge (`--pr`). Until then, and in a
    /// loop's own session, a step's box is the word. beads' sessions close
    /// their own tasks.
    pub ralph_closes: bool,
    /// Its tasks are GitHub issues (`[#12]`): with any other tracker such a
    /// step is checked by its box alone.
    pub issue_tasks: bool,
    /// How to undo one task's wait on another, for a refusal.
    pub unblock: &'static str,
}

/// What `ralph doctor` says of the tracker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Pass(String),
    /// What is wrong, and the fix.
    Fail(String, String),
}

/// The tasks each task waits for, and which tasks are closed.
pub type Waits = (
    std::collections::BTreeMap<String, Vec<String>>,
    std::collections::BTreeSet<String>,
);

/// A tracker opened for reading: the tasks, and what they wait for.
pub trait Reader {
    /// What it is called in what ralph says (`br`, `GitHub issues`).
    fn name(&self) -> &'static str;
    /// The tracker's issues (GitHub's: the labelled ones and those `tasks`
    /// name), and the epic's children.
    fn snapshot(&self, epic: Option<&str>, tasks: &[String]) -> Result<Snapshot, TrackerError>;
    /// The tasks each of `ids` waits for, and which tasks are closed.
    fn order(&self, ids: &[String]) -> Result<Waits, TrackerError>;
}

/// An opened tracker.
pub type Tracker = Box<dyn Reader>;

/// What ralph asks of one tracker, one implementation per module. The
/// defaults are a tracker's that has nothing of the kind to do.
trait Backend: Sync {
    fn caps(&self) -> &'static Caps;

    /// Opened for reading.
    fn open(&self, root: &Path) -> Result<Tracker, TrackerError>;

    /// The tracker that makes tasks (`ralph add`, `plan`, `import`).
    fn maker(&self, root: &Path) -> Result<Beads, TrackerError>;

    /// What doctor says of it in the project.
    fn health(&self, project: &crate::work::project::Project) -> Health;

    /// The program a session runs to keep its tasks, where the project
    /// keeps them here.
    fn session_program(&self, _project: &Path) -> Option<&'static str> {
        None
    }

    /// `task` taken by a parallel run's `worker` (`None`: given up).
    fn claim(&self, _root: &Path, _task: &str, _worker: Option<&str>) -> Result<(), TrackerError> {
        Ok(())
    }

    /// `task` given up by its worker: open again, nobody's, unless done.
    fn release(&self, _root: &Path, _task: &str) {}

    /// `task` open again: its step's merge was undone.
    fn reopen(&self, _root: &Path, _task: &str) -> Result<(), TrackerError> {
        Ok(())
    }

    /// Whether `task` is closed; `None` where the tracker does not say (the
    /// step's box is the word).
    fn is_closed(&self, _root: &Path, _task: &str) -> Option<bool> {
        None
    }

    /// Close the spec's epic, every task of it closed: what to say (`None`:
    /// this tracker has no epic of its own to close).
    fn close_epic(&self, _root: &Path, _epic: &str) -> Option<Result<String, TrackerError>> {
        None
    }

    /// Close what is ralph's to close of the done steps' tasks; what to say.
    fn close_done(
        &self,
        _root: &Path,
        _closes_on_merge: bool,
        _done: &[String],
        _at_start: Option<&[String]>,
    ) -> Vec<String> {
        Vec::new()
    }
}

/// The trackers, one row each: the module that answers for a kind (none
/// named: beads, whichever of br and bd is on PATH).
fn backend(kind: Option<Kind>) -> &'static dyn Backend {
    match kind {
        None => &beads::ANY,
        Some(Kind::Br) => &beads::BR,
        Some(Kind::Bd) => &beads::BD,
        Some(Kind::Github) => &github::GITHUB,
    }
}

/// What the tracker is (no program run, nothing asked).
pub fn caps(kind: Option<Kind>) -> &'static Caps {
    backend(kind).caps()
}

/// The tracker opened for reading.
pub fn open(kind: Option<Kind>, project: &Path) -> Result<Tracker, TrackerError> {
    backend(kind).open(project)
}

/// The tracker that makes tasks: beads, the one asked for, else `br`, else
/// `bd`, on PATH; one that makes none of its own says how to add its tasks.
pub fn detect(kind: Option<Kind>, project: &Path) -> Result<Beads, TrackerError> {
    backend(kind).maker(project)
}

/// What a session runs besides its agent's own tools: `ralph`, and the
/// tracker's program when the project keeps its tasks in one (`.beads/`).
pub fn session_programs(kind: Option<Kind>, project: &Path) -> Vec<&'static str> {
    let mut programs = vec!["ralph"];
    programs.extend(backend(kind).session_program(project));
    programs
}

/// What `ralph doctor` says of the tracker the config names.
pub fn health(kind: Option<Kind>, project: &crate::work::project::Project) -> Health {
    backend(kind).health(project)
}

/// A parallel run's step taken by `worker` (`None`: given up, open again):
/// where the tracker keeps such a thing and is there.
pub fn claim(
    kind: Option<Kind>,
    root: &Path,
    task: &str,
    worker: Option<&str>,
) -> Result<(), TrackerError> {
    backend(kind).claim(root, task, worker)
}

/// A task its worker gave up: open again, nobody's (unless it is closed).
pub fn release(kind: Option<Kind>, root: &Path, task: &str) {
    backend(kind).release(root, task);
}

/// A task open again: its step's merge was undone.
pub fn reopen(kind: Option<Kind>, root: &Path, task: &str) -> Result<(), TrackerError> {
    backend(kind).reopen(root, task)
}

/// Whether the tracker has `task` closed; `None` when it cannot tell, or
/// leaves it to the step's box.
pub fn is_closed(kind: Option<Kind>, root: &Path, task: &str) -> Option<bool> {
    backend(kind).is_closed(root, task)
}

/// The spec's epic closed as a run completes, every task of it closed
/// (`completion::Judgement::epic_open`): what to say, if anything.
pub fn close_epic(
    kind: Option<Kind>,
    root: &Path,
    epic: &str,
) -> Option<Result<String, TrackerError>> {
    backend(kind).close_epic(root, epic)
}

/// The done steps' tasks closed where that is ralph's job (`Caps::
/// ralph_closes`), unless the run's pull request closes them on merge
/// (`closes_on_merge`); only those that were steps when the run began
/// (`at_start`, where known). What to say, one line each.
pub fn close_done(
    kind: Option<Kind>,
    closes_on_merge: bool,
    root: &Path,
    done: &[String],
    at_start: Option<&[String]>,
) -> Vec<String> {
    backend(kind).close_done(root, closes_on_merge, done, at_start)
}

/// The tracker a command asks: its `--tracker`, else the project config's
/// (`.ralph/config.toml`, unreadable: none). A config's tracker that uses
/// your token (`github`) counts only once approved (`ralph trust`): a clone's file must not make ralph
/// use your token on its say-so.
pub fn configured(
    flag: Option<Kind>,
    project: &crate::work::project::Project,
) -> Result<Option<Kind>, TrackerError> {
    if flag.is_some() {
        return Ok(flag);
    }
    let Ok(cfg) = crate::config::load(&project.config()) else {
        return Ok(None);
    };
    if let Some(kind) = cfg.tracker
        && kind.uses_token()
        && matches!(
            crate::trust::approval::standing(&project.root, &cfg),
            crate::trust::approval::Standing::NotApproved { .. }
        )
    {
        let word = kind.word();
        return Err(TrackerError::Missing(format!(
            "tracker = \"{word}\" in .ralph/config.toml is not approved: read the file, then `ralph trust` (or pass --tracker {word})"
        )));
    }
    Ok(cfg.tracker)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_read_from_the_trackers_word_in_any_case() {
        for (word, status) in [
            ("open", Status::Open),
            ("OPEN", Status::Open),
            ("in_progress", Status::InProgress),
            ("In_Progress", Status::InProgress),
            ("closed", Status::Closed),
            ("Closed", Status::Closed),
        ] {
            assert_eq!(Status::parse(word), status, "{word}");
        }
        // br's other statuses, bd's `hooked`, custom ones and GitHub's
        // words that are none of these are kept as they were written.
        for word in [
            "blocked",
            "deferred",
            "draft",
            "tombstone",
            "pinned",
            "hooked",
            "Review",
            "in progress",
            "",
        ] {
            let s = Status::parse(word);
            assert_eq!(s, Status::Other(word.to_string()));
            assert_eq!(s.to_string(), word);
        }
    }

    #[test]
    fn only_closed_is_done() {
        let issue = |status| Issue {
            id: "t-1".into(),
            status,
            title: String::new(),
            parent: None,
        };
        assert!(issue(Status::parse("CLOSED")).is_closed());
        for word in ["open", "in_progress", "tombstone", "done", "closed "] {
            assert!(!issue(Status::parse(word)).is_closed(), "{word}");
        }
    }

    #[test]
    fn the_words_written_back_are_the_trackers() {
        for s in [Status::Open, Status::InProgress, Status::Closed] {
            assert_eq!(Status::parse(s.word()), s);
        }
        assert_eq!(Status::InProgress.to_string(), "in_progress");
    }

    #[test]
    fn github_makes_no_tasks_of_its_own_and_says_how_to_add_them() {
        let e = detect(Some(Kind::Github), Path::new("/nonexistent"))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "tracker github makes no tasks of its own: open an issue on GitHub (labelled `ralph`), then `ralph add --issue N` or `ralph import github`"
            )
        );
    }

    #[test]
    fn only_github_issues_are_closed_by_ralph_and_beads_waits_are_undone_with_br() {
        for kind in [None, Some(Kind::Br), Some(Kind::Bd)] {
            let c = caps(kind);
            assert!(!c.ralph_closes && !c.issue_tasks, "{kind:?}");
            assert_eq!(c.unblock, "`br dep remove`");
        }
        let g = caps(Some(Kind::Github));
        assert!(g.ralph_closes && g.issue_tasks);
        assert!(g.unblock.contains("\"Blocked by\""), "{}", g.unblock);
    }
}
