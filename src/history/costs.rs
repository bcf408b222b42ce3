//! What past steps cost, kept for estimates: each run's steps (read from
//! its records as it ends) in two small files of ralph's state folder, out
//! of the project and of a confined session's reach: the project's,
//! beside its loop's lock, and the machine's. Each is bounded (the newest
//! runs kept), read whole, and written whole under a lock.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::estimate::{FEWEST, Source, Step};

/// The most runs each file keeps, newest last.
const PROJECT_RUNS: usize = 100;
const MACHINE_RUNS: usize = 300;
/// The most steps kept of one run.
const STEPS_PER_RUN: usize = 100;
/// The most bytes read of a file.
const FILE_CAP: u64 = 2 << 20;

/// One run's steps, as kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptRun {
    pub run: String,
    /// The project's key (its lock's name): the machine's file tells this
    /// project's runs from others'.
    pub project: String,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Seconds since the epoch, as it ended.
    pub at: u64,
    /// Every session's cost was known.
    pub cost_known: bool,
    /// Each step: dollars, sessions, seconds.
    pub steps: Vec<[f64; 3]>,
}

impl KeptRun {
    pub fn new(
        (run, project): (&str, &str),
        (agent, model): (&str, Option<&str>),
        at: u64,
        cost_known: bool,
        steps: &[Step],
    ) -> KeptRun {
        KeptRun {
            run: run.into(),
            project: project.into(),
            agent: agent.into(),
            model: model.map(String::from),
            at,
            cost_known,
            steps: steps
                .iter()
                .rev()
                .take(STEPS_PER_RUN)
                .rev()
                .map(|s| [s.usd, s.sessions, s.secs])
                .collect(),
        }
    }
}

/// A file's runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    #[serde(default)]
    pub runs: Vec<KeptRun>,
}

impl Kept {
    /// `run` kept (in place of an earlier keeping of the same run: a
    /// resumed run's steps are all of its records'), at most `most` runs.
    /// Pure.
    pub fn put(&mut self, run: KeptRun, most: usize) {
        self.runs
            .retain(|r| !(r.run == run.run && r.project == run.project));
        self.runs.push(run);
        let over = self.runs.len().saturating_sub(most);
        self.runs.drain(..over);
    }

    /// The steps of runs with `agent` and `model`, of project `project`
    /// (`Some(true)`), of other projects (`Some(false)`); and whether all
    /// their costs were known. Pure.
    pub fn steps(&self, agent: &str, model: Option<&str>, of: (&str, bool)) -> (Vec<Step>, bool) {
        let runs = self.runs.iter().filter(|r| {
            r.agent == agent && r.model.as_deref() == model && (r.project == of.0) == of.1
        });
        let mut known = true;
        let mut steps = Vec::new();
        for r in runs {
            known &= r.cost_known;
            steps.extend(r.steps.iter().filter_map(|&s| step(s)));
        }
        (steps, known)
    }
}

/// A kept step as the estimate takes it: none that no run could have
/// come to (negative, not a number, past any cap ralph allows), since the
/// file is read as found.
fn step([usd, sessions, secs]: [f64; 3]) -> Option<Step> {
    let fits = |v: f64, most: f64| v.is_finite() && (0.0..=most).contains(&v);
    (fits(usd, 1e6) && fits(sessions, 1e6) && fits(secs, 1e8)).then_some(Step {
        usd,
        sessions,
        secs,
    })
}

/// The files of the project at `root`: its own, and the machine's.
fn files(root: &Path) -> (PathBuf, PathBuf, String) {
    let lock = crate::trust::store::lock_file(root);
    let key = lock
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let machine = crate::trust::store::state_dir().join("costs.json");
    (lock.with_extension("costs.json"), machine, key)
}

/// The project's key, as its kept runs name it.
pub fn project_key(root: &Path) -> String {
    files(root).2
}

/// A file's runs; nothing where it is missing or unreadable (an estimate
/// is never worth stopping a loop for).
pub fn read(path: &Path) -> Kept {
    crate::fsutil::read_optional_capped(path, FILE_CAP)
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Keep `run` in the project's file and the machine's.
pub fn keep(root: &Path, run: KeptRun) -> Result<()> {
    let (project, machine, _) = files(root);
    update(&project, |k| k.put(run.clone(), PROJECT_RUNS))?;
    update(&machine, |k| k.put(run, MACHINE_RUNS))
}

/// Read, change and write `path` whole, under a lock beside it.
fn update(path: &Path, change: impl FnOnce(&mut Kept)) -> Result<()> {
    if let Some(dir) = path.parent() {
        crate::trust::store::private_dir(dir)?;
    }
    // Its folder is ralph's own: locked whole, nothing left beside it.
    let _held = crate::fsutil::lock_dir(path.parent().unwrap_or(Path::new(".")))?;
    let mut kept = read(path);
    change(&mut kept);
    crate::fsutil::atomic_write(path, &serde_json::to_vec(&kept)?, 0o600)
}

/// The past steps to estimate from for the project at `root` with `agent`
/// and `model`: its own, where it has enough, else other projects' on this
/// machine; whether their costs were all known.
pub fn past(root: &Path, agent: &str, model: Option<&str>) -> Option<(Vec<Step>, Source, bool)> {
    let (project, machine, key) = files(root);
    let (own, known) = read(&project).steps(agent, model, (&key, true));
    if own.len() >= FEWEST {
        return Some((own, Source::Project, known));
    }
    let (others, known) = read(&machine).steps(agent, model, (&key, false));
    (others.len() >= FEWEST).then_some((others, Source::Machine, known))
}

/// What `open` steps of the project at `root` will likely come to with
/// `agent` and `model`: the event a run journals as it begins (the
/// estimate; without one, the model's price where `prices` or ralph's
/// table know it), and the past steps it was drawn from (what a cap likely
/// covers is drawn from them too).
pub fn estimated(
    root: &Path,
    open: u32,
    (agent, model): (&str, Option<&str>),
    prices: &std::collections::BTreeMap<String, crate::agent::prices::Price>,
) -> (super::events::Event, Vec<Step>) {
    let drawn = past(root, agent, model).and_then(|(steps, from, known)| {
        super::estimate::estimate(open, &steps, from, known).map(|e| (e, steps))
    });
    let (estimate, steps) = drawn.map_or((None, Vec::new()), |(e, s)| (Some(e), s));
    let price = model
        .filter(|_| estimate.is_none())
        .and_then(|m| crate::agent::prices::price(m, prices).map(|p| (m.to_string(), p)));
    let event = super::events::Event::Estimated {
        steps: open,
        estimate,
        price,
    };
    (event, steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, project: &str, model: Option<&str>, usd: &[f64]) -> KeptRun {
        let steps: Vec<Step> = usd
            .iter()
            .map(|&usd| Step {
                usd,
                sessions: 1.0,
                secs: 60.0,
            })
            .collect();
        KeptRun::new((id, project), ("claude", model), 1, true, &steps)
    }

    #[test]
    fn a_run_is_kept_once_and_the_oldest_go_first() {
        let mut k = Kept::default();
        k.put(run("r1", "p", None, &[1.0]), 2);
        k.put(run("r1", "p", None, &[1.0, 2.0]), 2);
        assert_eq!(k.runs.len(), 1, "a resumed run replaces its keeping");
        k.put(run("r1", "q", None, &[3.0]), 2);
        k.put(run("r2", "p", None, &[4.0]), 2);
        let ids: Vec<(&str, &str)> = k
            .runs
            .iter()
            .map(|r| (r.run.as_str(), r.project.as_str()))
            .collect();
        assert_eq!(ids, [("r1", "q"), ("r2", "p")]);
    }

    #[test]
    fn steps_are_those_of_the_same_agent_and_model_here_or_elsewhere() {
        let mut k = Kept::default();
        k.put(run("a", "p", Some("opus"), &[1.0, 2.0]), 9);
        k.put(run("b", "q", Some("opus"), &[5.0]), 9);
        k.put(run("c", "p", Some("sonnet"), &[7.0]), 9);
        let usd = |(s, _): (Vec<Step>, bool)| s.iter().map(|s| s.usd).collect::<Vec<_>>();
        assert_eq!(
            usd(k.steps("claude", Some("opus"), ("p", true))),
            [1.0, 2.0]
        );
        assert_eq!(usd(k.steps("claude", Some("opus"), ("p", false))), [5.0]);
        assert_eq!(
            usd(k.steps("codex", Some("opus"), ("p", true))),
            [] as [f64; 0]
        );
        let mut odd = run("e", "p", Some("opus"), &[1.5]);
        odd.steps = vec![
            [f64::NAN, 1.0, 1.0],
            [-1.0, 1.0, 1.0],
            [1e300, 1.0, 1.0],
            [0.5, 1.0, 60.0],
        ];
        k.put(odd, 9);
        assert_eq!(
            usd(k.steps("claude", Some("opus"), ("p", true))),
            [1.0, 2.0, 0.5],
            "a step no run could have come to is not taken"
        );
        let mut unknown = run("d", "p", Some("opus"), &[0.0]);
        unknown.cost_known = false;
        k.put(unknown, 9);
        assert!(!k.steps("claude", Some("opus"), ("p", true)).1);
    }
}
