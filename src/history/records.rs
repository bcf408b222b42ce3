//! A run's folder, `.ralph/runs/<run-id>/`: the raw stream of each session
//! (`session-NNN.jsonl`, one per started session), one JSON record per session
//! (`records.jsonl`), the hook's log (`hook.log`), the engine's saved state
//! (`state.json`, for `--resume`) and the run's `summary.json`, so that what
//! happened overnight can be read in the morning.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::agent::stream::{Limit, Usage};
use crate::run::engine::{Limits, Outcome, SessionOutcome, State};
use crate::work::gate::Verdict;
use crate::work::review::Judgement;

pub struct RunDir {
    pub id: String,
    /// Where it is, for people and for the hook.
    pub path: PathBuf,
    /// Where it is with every link resolved when ralph made or opened it:
    /// what the hook is told, which it opens without following any link.
    pub real_path: PathBuf,
    /// The folder held open, reached beneath the project without following
    /// a link: every write of the run goes through it, so a session that
    /// swaps `.ralph`, `.ralph/runs` or the run folder for a link (or renames
    /// them) redirects nothing. `None` when it could not be opened so.
    handle: Option<std::sync::Arc<fs::File>>,
}

/// `runs/id` (`runs` being `<root>/.ralph/runs`) as the project root and the
/// three names below it, where ralph follows no link.
fn below_root<'a>(runs: &'a Path, id: &'a str) -> Option<(&'a Path, [&'a std::ffi::OsStr; 3])> {
    let ralph = runs.parent()?;
    let root = ralph.parent()?;
    Some((root, [ralph.file_name()?, runs.file_name()?, id.as_ref()]))
}

/// `runs/id` with the project root's links resolved (and no others).
fn real_path(runs: &Path, id: &str) -> PathBuf {
    below_root(runs, id)
        .and_then(|(root, names)| {
            let real = fs::canonicalize(root).ok()?;
            Some(names.iter().fold(real, |p, n| p.join(n)))
        })
        .unwrap_or_else(|| runs.join(id))
}

/// Open `runs/id` with no link followed below the project root (the root
/// is the user's, followed as given).
fn hold(runs: &Path, id: &str) -> Option<std::sync::Arc<fs::File>> {
    let (root, names) = below_root(runs, id)?;
    crate::fsutil::open_dir_beneath(root, &names)
        .ok()
        .map(std::sync::Arc::new)
}

impl RunDir {
    pub fn create(runs: &Path) -> Result<RunDir> {
        // Sortable, readable, unique per loop: `2026-11-22T21-30-05Z-12345`;
        // a second loop of the same process in the same second (`ralph
        // worker --next`, `ralph merge --follow`) adds `-2`, `-3`...
        let first = format!(
            "{}-{}",
            crate::timefmt::now().replace(':', "-"),
            std::process::id()
        );
        crate::fsutil::real_dir(runs)?;
        let mut n = 1;
        let (id, path) = loop {
            let id = if n == 1 {
                first.clone()
            } else {
                format!("{first}-{n}")
            };
            let path = runs.join(&id);
            match fs::create_dir(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 9 => n += 1,
                r => {
                    r.with_context(|| format!("cannot create the run folder {}", path.display()))?;
                    break (id, path);
                }
            }
        };
        let handle = hold(runs, &id);
        anyhow::ensure!(
            handle.is_some(),
            "cannot open the run folder {} (is .ralph or .ralph/runs a link?)",
            path.display()
        );
        Ok(RunDir {
            real_path: real_path(runs, &id),
            id,
            path,
            handle,
        })
    }

    /// A run id as ralph makes them: letters, digits, `-`, `_`, `.`, not
    /// starting with a dot, at most 100 characters. Anything else (`../x`, an
    /// escape sequence) names no run folder.
    pub fn valid_id(id: &str) -> bool {
        !id.is_empty()
            && id.len() <= 100
            && !id.starts_with('.')
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    }

    pub fn open(runs: &Path, id: &str) -> RunDir {
        RunDir {
            id: id.to_string(),
            path: runs.join(id),
            real_path: real_path(runs, id),
            handle: Self::valid_id(id).then(|| hold(runs, id)).flatten(),
        }
    }

    /// The folder held open, for a writer that outlives this value (the
    /// journal); `None` when it is not held.
    pub(crate) fn handle(&self) -> Option<std::sync::Arc<fs::File>> {
        self.handle.clone()
    }

    /// Is the folder held (a real folder of ralph's, not a link)?
    pub fn held(&self) -> bool {
        self.handle.is_some()
    }

    /// `name` in the run folder, for reading and writing: through the held
    /// folder, else (reads only) by its path.
    pub fn file(&self, name: &str) -> PathBuf {
        match &self.handle {
            Some(h) => crate::fsutil::in_handle(h, &self.path, name),
            None => self.path.join(name),
        }
    }

    /// As `file`, for a write: refused when the folder is not held.
    fn writable(&self, name: &str) -> Result<PathBuf> {
        anyhow::ensure!(
            self.handle.is_some(),
            "{} is not a folder of ralph's (a link, or gone): not writing {name} there",
            self.path.display()
        );
        Ok(self.file(name))
    }

    /// The ids of the run folders under `runs`, oldest first (ids sort by
    /// time): a listing, no folder opened.
    pub fn ids(runs: &Path) -> Vec<String> {
        let mut ids: Vec<String> = fs::read_dir(runs)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            // Only folders ralph could have made: a name that is no run id
            // (from a clone, say) names no run.
            .filter(|id| RunDir::valid_id(id))
            .collect();
        ids.sort();
        ids
    }

    /// The run folders under `runs`, newest first, each opened only when
    /// reached: the run ralph last started here first (its own record says
    /// which, in its state folder), then, only if asked for, the others by
    /// a listing of the folder.
    pub fn newest_first(runs: &Path) -> impl Iterator<Item = RunDir> + '_ {
        let first = RunDir::recorded_latest(runs);
        let skip = first.as_ref().map(|r| r.id.clone());
        let rest = std::iter::once(()).flat_map(move |()| {
            let skip = skip.clone();
            RunDir::ids(runs)
                .into_iter()
                .rev()
                .filter(move |id| Some(id) != skip.as_ref())
                .map(move |id| RunDir::open(runs, &id))
        });
        first.into_iter().chain(rest)
    }

    /// The newest run folder under `runs`, if any: one folder opened, and
    /// no listing of them while ralph's record names it.
    pub fn latest(runs: &Path) -> Option<RunDir> {
        RunDir::newest_first(runs).next()
    }

    /// The run ralph's record says it last started in the project whose
    /// `runs` these are, if its folder is there.
    fn recorded_latest(runs: &Path) -> Option<RunDir> {
        let root = runs.parent()?.parent()?;
        let id = crate::history::invocation::load(root)?.run_id;
        (RunDir::valid_id(&id) && runs.join(&id).is_dir()).then(|| RunDir::open(runs, &id))
    }

    pub fn stream_name(session: u32) -> String {
        format!("session-{session:03}.jsonl")
    }

    /// The session stream files there are, by number, in order.
    pub fn sessions(&self) -> Vec<(u32, PathBuf)> {
        let mut v: Vec<(u32, PathBuf)> = fs::read_dir(&self.path)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let n = name
                    .strip_prefix("session-")?
                    .strip_suffix(".jsonl")?
                    .parse()
                    .ok()?;
                Some((n, e.path()))
            })
            .collect();
        v.sort();
        v
    }

    /// Session `session`'s stream file, to create.
    pub fn stream_file(&self, session: u32) -> Result<PathBuf> {
        self.writable(&Self::stream_name(session))
    }

    pub fn hook_log(&self) -> PathBuf {
        self.file("hook.log")
    }

    fn summary_path(&self) -> PathBuf {
        self.file("summary.json")
    }

    fn state_path(&self) -> PathBuf {
        self.file("state.json")
    }

    pub fn append_record(&self, record: &Record) -> Result<()> {
        let mut line = serde_json::to_string(record)?;
        line.push('\n');
        crate::fsutil::append(&self.writable("records.jsonl")?, line.as_bytes())
    }

    /// A new file of this run (a gate log, a rejected COMPLETE), to create.
    pub fn new_file(&self, name: &str) -> Result<PathBuf> {
        self.writable(name)
    }

    /// When the sessions of every run under `runs` started, from `since`
    /// on (seconds since the epoch): runs newest first, each one's records
    /// from its end, until a run holds none that recent (runs of a project
    /// follow one another, so no older one can).
    pub fn starts_since(runs: &Path, since: u64) -> Vec<u64> {
        let mut out = Vec::new();
        for run in RunDir::newest_first(runs) {
            let before = out.len();
            let mut records = run.records_newest_first().peekable();
            let any = records.peek().is_some();
            out.extend(
                records
                    .filter_map(|r| r.start_epoch())
                    .take_while(|&t| t >= since),
            );
            if any && out.len() == before {
                break;
            }
        }
        out
    }

    /// The records, newest first, read from the file's end as far as the
    /// caller goes.
    pub fn records_newest_first(&self) -> impl Iterator<Item = Record> + use<> {
        crate::fsutil::lines_from_end(&self.file("records.jsonl"), crate::fsutil::RUN_FILE_CAP)
            .filter_map(|l| serde_json::from_str(&l).ok())
    }

    pub fn records(&self) -> Vec<Record> {
        read_text(&self.file("records.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    pub fn write_summary(&self, summary: &Summary) -> Result<()> {
        let text = serde_json::to_string_pretty(summary)? + "\n";
        crate::fsutil::atomic_write(&self.writable("summary.json")?, text.as_bytes(), 0o644)
    }

    pub fn summary(&self) -> Option<Summary> {
        serde_json::from_str(&read_text(&self.summary_path())?).ok()
    }

    /// A resumed run gets a new summary at its end.
    pub fn clear_summary(&self) -> Result<()> {
        match fs::remove_file(self.writable("summary.json")?) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", self.summary_path().display()))
            }
            _ => Ok(()),
        }
    }

    pub fn save_state(&self, saved: &Saved) -> Result<()> {
        let text = serde_json::to_string_pretty(saved)? + "\n";
        crate::fsutil::replace_unsynced(&self.writable("state.json")?, text.as_bytes())
    }

    /// The saved state, if there is a valid one.
    pub fn state(&self) -> Option<Saved> {
        self.state_checked().ok().flatten()
    }

    /// The saved state; `Err` says what is wrong with it (a run folder is
    /// where a session or a cloned repository can write).
    pub fn state_checked(&self) -> Result<Option<Saved>, String> {
        let Some(text) = read_text(&self.state_path()) else {
            return Ok(None);
        };
        let path = self.path.join("state.json");
        let saved: Saved =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        saved
            .check()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Some(saved))
    }
}

/// One of the run's own files, bounded like every read from a project.
fn read_text(path: &Path) -> Option<String> {
    crate::fsutil::read_optional_capped(path, crate::fsutil::RUN_FILE_CAP)
        .ok()
        .flatten()
}

/// `state.json`: what `--resume` needs to go on where the run stopped.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Saved {
    pub run_id: String,
    pub started: String,
    pub limits: Limits,
    pub state: State,
    /// git HEAD when the run started, for the summary's commit count.
    pub first_head: Option<String>,
    /// Seconds the run has been running, over all its stretches.
    pub elapsed_s: f64,
    /// Tokens over all sessions.
    pub tokens: Tokens,
    /// How many times the run was resumed.
    #[serde(default)]
    pub resumed: u32,
    /// Runs of the completion gate so far, and the last one's verdict.
    #[serde(default)]
    pub gate_runs: u32,
    #[serde(default)]
    pub last_gate: Option<Verdict>,
    /// `[gate] baseline`: the gate as it ran before the first session, each
    /// command (and test, where its output says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Verdict>,
    /// The last gate run against it: what still fails, what the run fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<crate::work::baseline::Judged>,
    /// Some session's cost was not known.
    #[serde(default)]
    pub cost_unknown: bool,
    /// The run's agents: its own, then its fallbacks (`state.agent` and
    /// `state.limited_until` index them).
    #[serde(default)]
    pub agents: Vec<crate::agent::Agent>,
    /// The last review of the run, if one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_review: Option<ReviewRecord>,
    /// With GitHub's issues as the tracker: the issues that were steps when
    /// the run began, the only ones it closes (none saved: a run from
    /// before this was kept closes every checked step's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issues_at_start: Option<Vec<String>>,
    /// With `--pr`: the issues the spec's steps named when the run began,
    /// the only ones its pull request may say it closes (none saved: a run
    /// from before this was kept closes none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_issues_at_start: Option<Vec<u64>>,
    /// What was uncommitted when the run first began (yours): on
    /// `--resume`, and when a parallel run's merged work is judged, what
    /// its own sessions left since is the run's, not yours (none saved: a
    /// run from before this was kept takes the tree as it finds it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_at_start: Option<Vec<String>>,
    /// What the open steps were estimated to cost as the run began, and
    /// how many were open: the end says how it compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<crate::history::estimate::Estimate>,
}

impl Saved {
    /// A new run's state: nothing counted yet.
    pub fn new(
        run_id: String,
        started: String,
        limits: Limits,
        first_head: Option<String>,
    ) -> Saved {
        Saved {
            run_id,
            started,
            limits,
            state: State::default(),
            first_head,
            elapsed_s: 0.0,
            tokens: Tokens::default(),
            resumed: 0,
            gate_runs: 0,
            last_gate: None,
            baseline: None,
            judged: None,
            cost_unknown: false,
            agents: Vec::new(),
            last_review: None,
            issues_at_start: None,
            pr_issues_at_start: None,
            users_at_start: None,
            estimate: None,
        }
    }
}

/// A git object id (SHA-1 or SHA-256, hex): what a saved head must be, so
/// that it can never reach git as an option.
pub fn is_object_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Largest amount a saved run may claim to have spent or run for.
const MAX_COST: f64 = 1e9;
const MAX_ELAPSED_S: f64 = 100.0 * 365.0 * 86_400.0;

impl Saved {
    /// Every value in range and of its form.
    pub fn check(&self) -> Result<(), String> {
        let cost = self.state.cost_usd;
        if !(cost.is_finite() && (0.0..=MAX_COST).contains(&cost)) {
            return Err(format!("cost_usd {cost} is not an amount spent"));
        }
        if !(self.elapsed_s.is_finite() && (0.0..=MAX_ELAPSED_S).contains(&self.elapsed_s)) {
            return Err(format!("elapsed_s {} is not a duration", self.elapsed_s));
        }
        if let Some(h) = &self.first_head
            && !is_object_id(h)
        {
            return Err(format!(
                "first_head {:?} is not a git object id",
                crate::output::visible(h)
            ));
        }
        if self.state.iteration > self.limits.max_iterations.max(1_000_000) {
            return Err(format!(
                "iteration {} is out of range",
                self.state.iteration
            ));
        }
        if !RunDir::valid_id(&self.run_id) {
            return Err("run_id is not a run id".into());
        }
        if let Some(g) = &self.last_gate
            && !(g.duration_s.is_finite() && g.duration_s >= 0.0)
        {
            return Err("last_gate.duration_s is not a duration".into());
        }
        let l = &self.limits;
        if l.max_cost
            .is_some_and(|c| !(c.is_finite() && c > 0.0 && c <= 1e6))
        {
            return Err("limits.max_cost is out of range".into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
}

impl Tokens {
    /// Another count's tokens added to this one's.
    pub fn plus(&mut self, t: &Tokens) {
        self.input += t.input;
        self.output += t.output;
        self.cache_read += t.cache_read;
        self.cache_creation += t.cache_creation;
    }

    pub fn add(&mut self, u: &Usage) {
        self.input += u.input_tokens;
        self.output += u.output_tokens;
        self.cache_read += u.cache_read_input_tokens;
        self.cache_creation += u.cache_creation_input_tokens;
    }

    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_creation
    }
}

impl From<&Usage> for Tokens {
    fn from(u: &Usage) -> Self {
        let mut t = Tokens::default();
        t.add(u);
        t
    }
}

/// One line of records.jsonl.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// The counted iteration this session was (a limited session's retry
    /// has the same iteration and the next session number).
    pub iteration: u32,
    /// Every started session has its own number and stream file.
    pub session: u32,
    pub counted: bool,
    pub session_id: Option<String>,
    pub pid: u32,
    pub start: String,
    pub end: String,
    pub duration_s: f64,
    pub exit_code: Option<i32>,
    /// `outcome`: its text, for people and scripts; `ended`: the same,
    /// tagged, which is what ralph reads back (a record written before it
    /// had one is read by its text).
    #[serde(flatten, with = "stored")]
    pub outcome: SessionOutcome,
    pub is_error: bool,
    pub cost_usd: f64,
    pub tokens: Tokens,
    pub num_turns: u64,
    /// `result` events in the stream: two when claude ran another turn after
    /// a background task.
    pub results: u32,
    pub tool_calls: u64,
    pub head_before: Option<String>,
    pub head_after: Option<String>,
    pub spec_before: String,
    pub spec_after: String,
    pub leftovers_ended: usize,
    pub stream_file: Option<String>,
    /// The gate's verdict after this session (`when = "each"`, or COMPLETE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Verdict>,
    /// The session ran confined by Claude Code's sandbox.
    #[serde(default)]
    pub confined: bool,
    /// The agent's command line that ran (in interactive mode without the
    /// prompt), settings and all: what the session was allowed.
    #[serde(default)]
    pub command: Vec<String>,
    /// The agent that ran the session, and its model where known.
    #[serde(default)]
    pub agent: crate::agent::Agent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent reported tokens only, and the model has no price: the
    /// session's cost is not known (`cost_usd` is then 0).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_unknown: bool,
    /// The session left changes uncommitted (ralph's own files aside).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub left_uncommitted: bool,
    /// The commit `--commit auto` made of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_commit: Option<String>,
    /// It checked a box but wrote no evidence in `.ralph/progress.md`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_evidence: bool,
    /// It checked a box but changed nothing besides `.ralph/`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_change: bool,
    /// A review session (not a work session): what it judged and its verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRecord>,
    /// The worker of a parallel run that ran it (`w1`...), and its step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

impl Record {
    /// A session's record as ralph writes one, for tests.
    #[cfg(test)]
    pub fn sample() -> Record {
        serde_json::from_value(serde_json::json!({
            "iteration": 1, "session": 1, "counted": true, "session_id": "s", "pid": 7,
            "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:30Z", "duration_s": 30.0,
            "exit_code": 0, "outcome": "ok", "is_error": false, "cost_usd": 0.25,
            "tokens": {"input": 10, "output": 20, "cache_read": 0, "cache_creation": 0},
            "num_turns": 3, "results": 1, "tool_calls": 2, "head_before": null,
            "head_after": null, "spec_before": "0/2", "spec_after": "1/2",
            "leftovers_ended": 0, "stream_file": null
        }))
        .expect("a record")
    }

    /// When the session started, in seconds since the epoch.
    pub fn start_epoch(&self) -> Option<u64> {
        let t = humantime::parse_rfc3339(&self.start).ok()?;
        t.duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs())
    }
}

/// What a review session judged and came to, as records, the state, the
/// summary and `status` keep it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewRecord {
    /// Its session number in the run.
    pub session: u32,
    /// `the whole run`, or the steps a session checked.
    pub of: String,
    pub verdict: Judgement,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    pub time: String,
    pub cost_usd: f64,
}

impl ReviewRecord {
    pub fn new(
        session: u32,
        of: &str,
        v: &crate::work::review::Verdict,
        cost_usd: f64,
    ) -> ReviewRecord {
        ReviewRecord {
            session,
            of: of.to_string(),
            verdict: v.judgement(),
            findings: v.findings(),
            time: crate::timefmt::now(),
            cost_usd,
        }
    }

    /// `approved`, `rejected: <first finding> (+1 more)`.
    pub fn line(&self) -> String {
        match self.findings.split_first() {
            None => self.verdict.to_string(),
            Some((first, [])) => format!("{}: {first}", self.verdict),
            Some((first, rest)) => format!("{}: {first} (+{} more)", self.verdict, rest.len()),
        }
    }
}

/// A session's outcome as its record keeps it: its text (`outcome`) and
/// the tagged value (`ended`), read back from the latter when it is there.
mod stored {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{Limit, SessionOutcome};

    #[derive(Serialize)]
    struct Out<'a> {
        outcome: String,
        ended: &'a SessionOutcome,
    }

    #[derive(Deserialize)]
    struct In {
        outcome: String,
        #[serde(default)]
        ended: Option<SessionOutcome>,
    }

    pub fn serialize<S: Serializer>(o: &SessionOutcome, s: S) -> Result<S::Ok, S::Error> {
        Out {
            outcome: o.as_text(),
            ended: o,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SessionOutcome, D::Error> {
        let r = In::deserialize(d)?;
        match r.ended {
            Some(o) => Ok(o),
            None => from_text(&r.outcome).map_err(serde::de::Error::custom),
        }
    }

    /// An old record's outcome, by its text (what the text keeps).
    pub(super) fn from_text(t: &str) -> Result<SessionOutcome, String> {
        Ok(match t {
            "ok" => SessionOutcome::Ok,
            "failed" => SessionOutcome::Failed,
            "timeout" => SessionOutcome::TimedOut,
            "interrupted" => SessionOutcome::Interrupted(String::new()),
            _ => match t.strip_prefix("limited: ") {
                Some("usage limit reached") => {
                    SessionOutcome::Limited(Limit::Usage { reset_at: None })
                }
                Some("rate limited") => SessionOutcome::Limited(Limit::RateLimit),
                Some("API overloaded") => SessionOutcome::Limited(Limit::Overloaded),
                _ => return Err(format!("unknown outcome {t:?}")),
            },
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub run_id: String,
    pub outcome: Outcome,
    pub exit_code: u8,
    pub reason: String,
    pub iterations: u32,
    #[serde(default)]
    pub sessions: u32,
    pub max_iterations: u32,
    pub duration: String,
    pub duration_s: f64,
    pub cost_usd: f64,
    pub tokens: Tokens,
    pub commits: Option<u64>,
    pub spec: String,
    pub started: String,
    pub ended: String,
    #[serde(default)]
    pub resumed: u32,
    /// The last verdict of the completion gate in this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Verdict>,
    /// Its sessions ran confined by Claude Code's sandbox.
    #[serde(default)]
    pub confined: bool,
    /// The agent of its sessions.
    #[serde(default)]
    pub agent: crate::agent::Agent,
    /// Some session's cost is not known: `cost_usd` counts the others.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_unknown: bool,
    /// Review sessions run, and the last one's verdict.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reviews: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRecord>,
    /// The pull request `--pr` opened or updated for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<PullShown>,
    /// What the open steps were estimated to cost as the run began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<crate::history::estimate::Estimate>,
    /// `[gate] baseline`: the last gate against it (what still fails as it
    /// failed before the run, what the run fixed, what failed anew).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<crate::work::baseline::Judged>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A run's pull request, as its summary keeps it (`ralph status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullShown {
    pub number: u64,
    pub url: String,
    pub draft: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_names_ralph_makes() {
        for ok in ["2026-11-22T21-30-05Z-12345", "a", "r_1.2"] {
            assert!(RunDir::valid_id(ok), "{ok}");
        }
        let long = "a".repeat(101);
        for bad in [
            "",
            ".hidden",
            "../x",
            "a/b",
            "x\u{1b}]52",
            "run id",
            long.as_str(),
        ] {
            assert!(!RunDir::valid_id(bad), "{bad:?}");
        }
        assert!(RunDir::valid_id(&"a".repeat(100)));
    }

    #[test]
    fn heads_are_object_ids() {
        assert!(is_object_id(&"a1".repeat(20)));
        assert!(is_object_id(&"F0".repeat(32)));
        for bad in ["", "HEAD", "--output=/x", &"g1".repeat(20), &"a".repeat(41)] {
            assert!(!is_object_id(bad), "{bad:?}");
        }
    }

    fn saved() -> Saved {
        let limits = Limits {
            max_iterations: 10,
            max_cost: Some(5.0),
            ..Limits::sample()
        };
        let mut s = Saved::new(
            "2026-01-01T00-00-00Z-1".into(),
            "2026-01-01T00:00:00Z".into(),
            limits,
            Some("a".repeat(40)),
        );
        s.state.iteration = 2;
        s.state.cost_usd = 1.5;
        s.elapsed_s = 30.0;
        s
    }

    #[test]
    fn saved_state_is_checked_value_by_value() {
        assert_eq!(saved().check(), Ok(()));
        let zero = Saved {
            elapsed_s: 0.0,
            state: State::default(),
            first_head: None,
            ..saved()
        };
        assert_eq!(zero.check(), Ok(()));
        let mut most = saved();
        most.state.iteration = 1_000_000;
        assert_eq!(most.check(), Ok(()), "the most iterations a run may have");
        type Spoil = fn(&mut Saved);
        let bad: [(&str, Spoil); 9] = [
            ("cost_usd", |s| s.state.cost_usd = -5.0),
            ("cost_usd", |s| s.state.cost_usd = f64::NAN),
            ("cost_usd", |s| s.state.cost_usd = 2e9),
            ("elapsed_s", |s| s.elapsed_s = -1.0),
            ("elapsed_s", |s| s.elapsed_s = 1e300),
            ("first_head", |s| s.first_head = Some("--output=/x".into())),
            ("iteration", |s| s.state.iteration = 2_000_000),
            ("run_id", |s| s.run_id = "../x".into()),
            ("max_cost", |s| s.limits.max_cost = Some(0.0)),
        ];
        for (names, spoil) in bad {
            let mut s = saved();
            spoil(&mut s);
            let e = s.check().unwrap_err();
            assert!(e.contains(names), "{names}: {e}");
        }
        let mut s = saved();
        s.last_gate = Some(crate::work::gate::Verdict {
            passed: true,
            failed: None,
            why: None,
            time: "t".into(),
            duration_s: -1.0,
            log: None,
            tail: Vec::new(),
            interrupted: false,
            ran: Vec::new(),
        });
        assert!(s.check().unwrap_err().contains("last_gate"));
    }

    #[test]
    fn a_state_file_is_read_back_only_when_valid() {
        let d = tempfile::tempdir().unwrap();
        let runs = d.path().join(".ralph/runs");
        std::fs::create_dir_all(&runs).unwrap();
        let run = RunDir::create(&runs).unwrap();
        assert!(matches!(run.state_checked(), Ok(None)));
        let mut s = saved();
        s.run_id = run.id.clone();
        run.save_state(&s).unwrap();
        assert_eq!(run.state_checked().unwrap().unwrap().elapsed_s, 30.0);
        s.elapsed_s = -1.0;
        run.save_state(&s).unwrap();
        assert!(run.state_checked().unwrap_err().contains("elapsed_s"));
        assert!(run.state().is_none());
    }

    #[test]
    fn every_session_outcome_reads_back_whole_and_old_records_by_their_text() {
        #[derive(Serialize, Deserialize)]
        struct R {
            #[serde(flatten, with = "stored")]
            o: SessionOutcome,
        }
        let all = [
            SessionOutcome::Ok,
            SessionOutcome::Failed,
            SessionOutcome::TimedOut,
            SessionOutcome::Interrupted("SIGTERM".into()),
            SessionOutcome::Limited(Limit::Usage {
                reset_at: Some(1_795_400_000),
            }),
            SessionOutcome::Limited(Limit::RateLimit),
            SessionOutcome::Limited(Limit::Overloaded),
        ];
        for o in all {
            let json = serde_json::to_string(&R { o: o.clone() }).unwrap();
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(v["outcome"], o.as_text(), "the text stays for scripts");
            let back: R = serde_json::from_str(&json).unwrap();
            assert_eq!(back.o, o, "{json}");
        }
        assert_eq!(
            serde_json::to_value(R {
                o: SessionOutcome::Limited(Limit::Usage { reset_at: Some(5) })
            })
            .unwrap()["ended"],
            serde_json::json!({"kind": "limited", "of": {"kind": "usage", "reset_at": 5}})
        );
        // A record from before `ended`: read by its text.
        let old: R = serde_json::from_str(r#"{"outcome":"limited: rate limited"}"#).unwrap();
        assert_eq!(old.o, SessionOutcome::Limited(Limit::RateLimit));
        assert!(serde_json::from_str::<R>(r#"{"outcome":"done"}"#).is_err());
    }
}
