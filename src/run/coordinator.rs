//! The coordinator of a parallel run: starts a worker loop for each step
//! the scheduler frees (never more than N, never a step twice), takes
//! finished steps through the merge queue one at a time (the gate after
//! each), and, once every step is merged, hands the integration checkout
//! to the ordinary loop, which judges COMPLETE as it always does.
//!
//! Its board (`parallel.json` in the run folder) says where each step is,
//! so `status` can show it and `ralph loop --resume` goes on from it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::git::Merged;
use crate::history::records::Saved;
use crate::parallel::plan::{self, Item, Order};
use crate::parallel::queue;
use crate::parallel::workers::{self, Running};
use crate::parallel::{budget, texts};
use crate::run::engine::Outcome;
use crate::run::engine::board::{
    self, Board, Conflicted, Deadline, End, GateFailed, Place, Slot, Then,
};
use crate::run::lock::LoopLock;
use crate::run::paused::{self, Looked};
use crate::run::shell::Shell;
use crate::run::worktree;
use crate::work::spec;

/// A regular file (never through a link) copied to a new file, up to the
/// run files' cap.
fn copy_capped(from: &Path, to: &Path) -> Result<()> {
    use std::io::Read;
    let src = crate::fsutil::open_regular(from)?;
    let mut dst =
        crate::fsutil::create_new(to).with_context(|| format!("cannot create {}", to.display()))?;
    std::io::copy(&mut src.take(crate::fsutil::RUN_FILE_CAP), &mut dst)?;
    Ok(())
}

/// The first three keys, and how many more.
fn first_few(keys: &[String]) -> String {
    let shown = keys.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    match keys.len().saturating_sub(3) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// The board of a run folder, if it was a parallel run.
pub fn board_of(run: &Path) -> Option<Board> {
    let p = run.join("parallel.json");
    p.exists().then(|| load_board(&p))
}

/// The board saved at `path` (a run folder is in the project, where a
/// session can write: read bounded, never through a link).
fn load_board(path: &Path) -> Board {
    let text = crate::fsutil::read_regular_capped(path, 4 << 20)
        .ok()
        .flatten();
    Board::from_saved(text.as_deref())
}

fn save_board(board: &Board, path: &Path) -> Result<()> {
    crate::fsutil::atomic_write(path, serde_json::to_string_pretty(board)?.as_bytes(), 0o644)
}

/// Workers start from the branch's last commit: a spec changed since is
/// not theirs. Tasks that wait on each other would never start.
pub fn refuse_what_cannot_start(
    project: &crate::work::project::Project,
    tracker: Option<crate::config::Kind>,
) -> Result<()> {
    use crate::exit::{ExitStatus, Stop};
    let g = crate::git::at(&project.root);
    let changed = g.run(&["status", "--porcelain", "--", ".ralph/spec.md"], &[])?;
    if !changed.trim().is_empty() {
        return Err(Stop::with(
            ExitStatus::Usage,
            "--parallel: .ralph/spec.md has changes that are not committed; the workers start from the branch's last commit, so commit the spec first",
        ));
    }
    let parsed = spec::parse(&crate::fsutil::read_optional(&project.spec())?.unwrap_or_default());
    let items: Vec<Item> = parsed
        .steps
        .iter()
        .map(|s| Item {
            key: s.key(),
            task: s.task.clone(),
            merged: s.checked,
            phase: 0,
        })
        .collect();
    if let Order::Tracker { blockers, .. } = order_of(&project.root, tracker, &items)?
        && let Some(c) = plan::cycle(&blockers)
    {
        return Err(Stop::with(
            ExitStatus::Usage,
            format!(
                "--parallel: these tasks wait on each other, so none of them could start: {} (remove one with {})",
                c.join(" → "),
                crate::work::tracker::caps(tracker).unblock
            ),
        ));
    }
    Ok(())
}

/// By the tracker's blockers when the spec's steps name tasks and a
/// tracker answers; else by the spec's sections.
pub fn order_of(
    root: &Path,
    tracker: Option<crate::config::Kind>,
    items: &[Item],
) -> Result<Order> {
    let tasks: Vec<String> = items.iter().filter_map(|i| i.task.clone()).collect();
    if tasks.is_empty() {
        return Ok(Order::Phases);
    }
    let Ok(t) = crate::work::tracker::open(tracker, root) else {
        return Ok(Order::Phases);
    };
    let (blockers, closed) = t.order(&tasks).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Order::Tracker { blockers, closed })
}

/// A parallel run in the integration checkout `shell.project`.
pub struct Coordinator<'a> {
    pub shell: &'a Shell<'a>,
    /// The run's command line (`loop ...`), for its workers'.
    pub args: Vec<String>,
    /// `ralph merge`: the steps other machines did, to merge; no worker
    /// starts but to resolve a conflict.
    pub remote: Option<&'a RemoteMerge>,
}

/// What `ralph merge` merges: each step done on its branch of the remote.
#[derive(Debug)]
pub struct RemoteMerge {
    pub target: crate::ship::push::Target,
    /// Step key, slug, and the remote branch's commit (its lease).
    pub steps: Vec<(String, String, String)>,
    /// The command line (`loop ...`) a resolution's worker is given.
    pub args: Vec<String>,
}

struct Live {
    /// `--max-time`: when the whole run must end (its workers get what is
    /// left of it, not the whole again), and what it was.
    deadline: Option<std::time::Instant>,
    max_time: Option<Duration>,
    board: Board,
    running: Vec<Running>,
    saved: Saved,
    /// The main checkout, once asked of git: each worker's start needs it,
    /// and it is the same for the whole run.
    main: Option<PathBuf>,
    /// The question about a step paused at its budget, while it is out.
    asking: Option<paused::Asking>,
}

impl Coordinator<'_> {
    fn root(&self) -> &Path {
        &self.shell.project.root
    }

    fn board_path(&self) -> PathBuf {
        self.shell.run.path.join("parallel.json")
    }

    fn budget(&self) -> PathBuf {
        budget::path_for(self.root(), &self.shell.run.id)
    }

    /// The whole run: the workers and the queue, then the ordinary loop.
    pub fn run(&self, lock: &mut LoopLock, saved: Saved) -> Result<u8> {
        let t0 = std::time::Instant::now();
        self.start_budget(&saved)?;
        let board = self.board()?;
        self.say_start();
        let left = |max: Duration| max.saturating_sub(Duration::from_secs_f64(saved.elapsed_s));
        let max_time = self.shell.s.limits.max_time;
        let mut live = Live {
            deadline: max_time.map(|m| t0 + left(m)),
            max_time,
            board,
            running: Vec::new(),
            saved,
            main: None,
            asking: None,
        };
        let elapsed_before = live.saved.elapsed_s;
        self.baseline(&mut live.saved)?;
        let finished = self.work(&mut live, lock)?;
        if live.running.is_empty() {
            self.sweep_placeholders();
        }
        save_board(&live.board, &self.board_path())?;
        self.count_spent(&mut live.saved)?;
        live.saved.elapsed_s = elapsed_before + t0.elapsed().as_secs_f64();
        match finished {
            Some((outcome, reason)) => {
                self.shell.run.save_state(&live.saved)?;
                self.shell.finish(&live.saved, outcome, reason)
            }
            None => self.judge(lock, live.saved),
        }
    }

    /// `[gate] baseline`: the gate run once on the starting tree, before
    /// any worker (a resumed run keeps its own), and kept where each
    /// worker's gate and each merge's are judged against it.
    fn baseline(&self, saved: &mut Saved) -> Result<()> {
        if self.shell.s.limits.baseline && !saved.state.baseline_taken {
            saved.state.baseline_taken = self.shell.take_baseline(saved)?;
            self.shell.run.save_state(saved)?;
        }
        if let Some(v) = &saved.baseline {
            budget::keep_gate_baseline(&self.budget(), v)?;
        }
        Ok(())
    }

    /// The run's one budget, at what it had spent and the project's
    /// sessions of the last hour; for confined workers, the shared git
    /// setup as the run found it.
    fn start_budget(&self, saved: &Saved) -> Result<()> {
        let hour_ago = crate::timefmt::now_epoch().saturating_sub(3600);
        let starts =
            crate::history::records::RunDir::starts_since(&self.shell.project.runs(), hour_ago);
        budget::start(
            &self.budget(),
            (saved.state.iteration, saved.state.cost_usd),
            starts,
        )?;
        if self.shell.s.confined.is_some()
            && let Some(b) = crate::sandbox::gitguard::Baseline::take(self.root())
        {
            b.save(&budget::baseline_path(&self.budget()))?;
        }
        Ok(())
    }

    /// No worker's session runs now: the sandboxes' placeholders their
    /// guards left in the shared git folder go.
    fn sweep_placeholders(&self) {
        if self.shell.s.confined.is_some()
            && let Some(b) =
                crate::sandbox::gitguard::Baseline::load(&budget::baseline_path(&self.budget()))
        {
            b.sweep();
        }
    }

    /// The board as saved (a resumed run's), with only the spec's steps
    /// and `ralph merge`'s steps queued.
    fn board(&self) -> Result<Board> {
        let mut board = load_board(&self.board_path());
        board.parallel = self.shell.s.workers.count;
        let keys: BTreeSet<String> = spec::parse(&self.spec_text()?)
            .steps
            .iter()
            .map(spec::Step::key)
            .collect();
        let remote: Option<Vec<(String, String)>> = self.remote.map(|r| {
            r.steps
                .iter()
                .map(|(key, slug, _)| (key.clone(), slug.clone()))
                .collect()
        });
        let paused = board.paused();
        let dropped = board.resume(&keys, remote.as_deref());
        self.answered_before(&mut board, paused.first())?;
        if !dropped.is_empty() {
            self.shell.ui.note(&format!(
                "the run's board ({}) had {} the spec does not have: dropped ({})",
                self.board_path().display(),
                crate::output::counted(dropped.len() as u64, "step", "steps"),
                crate::output::visible_line(&first_few(&dropped))
            ));
        }
        Ok(board)
    }

    /// A resumed run's answer, sent after the run stopped asking about its
    /// paused step: what it comes to for that step (its next worker told
    /// it; the main checkout's sessions never are).
    /// `paused`: the step the run asked about as it stopped (the resumed
    /// board has it at work again). "Stop the run" is not carried out: this
    /// run is the user's later word.
    fn answered_before(&self, board: &mut Board, paused: Option<&String>) -> Result<()> {
        let Some(given) = self.shell.answered.borrow_mut().take() else {
            return Ok(());
        };
        crate::fsutil::remove_optional(&crate::run::asking::answer_file(self.shell.project))?;
        let choice = crate::run::engine::pause::choice(&given.answer);
        let (Some(key), false) = (paused, choice == crate::run::engine::pause::Choice::Stop) else {
            return Ok(());
        };
        let Some(slot) = board.steps.get_mut(key) else {
            return Ok(());
        };
        slot.place = Place::Paused;
        paused::carry_out(self.shell, board, key, &given);
        self.release_skipped(board, key);
        Ok(())
    }

    /// A step skipped at the user's answer: its task open again, nobody's.
    fn release_skipped(&self, board: &Board, key: &str) {
        if board
            .steps
            .get(key)
            .is_some_and(|s| s.place == Place::Skipped)
        {
            self.release(key);
        }
    }

    fn say_start(&self) {
        let (run, path) = (&self.shell.run.id, self.shell.run.path.display());
        self.shell.ui.note(&match self.remote {
            Some(r) => format!(
                "run {run} in {path}: {} merged into {} one at a time",
                crate::output::counted(
                    r.steps.len() as u32,
                    "step done on its branch",
                    "steps done on their branches"
                ),
                self.integration()
            ),
            None => format!(
                "run {run} in {path}: up to {} steps at once, each in a worktree of its own, merged into {} one at a time",
                self.shell.s.workers.count,
                self.integration()
            ),
        });
    }

    /// The branch steps are merged into.
    fn integration(&self) -> String {
        crate::git::at(self.root())
            .run(&["rev-parse", "--abbrev-ref", "HEAD"], &[])
            .unwrap_or_else(|_| "HEAD".into())
    }

    /// Until every step is merged (`None`) or the run must stop.
    fn work(&self, live: &mut Live, lock: &mut LoopLock) -> Result<Option<(Outcome, String)>> {
        // The scheduler asks the tracker: only when something changed.
        let (mut changed, mut sessions) = (true, None);
        let mut never = Vec::new();
        loop {
            // The run's sessions so far, as `status` and `watch` show a loop's.
            let now = budget::read(&self.budget())?.sessions;
            if sessions != Some(now) {
                lock.set_iteration(now)?;
                sessions = Some(now);
            }
            if let Some(sig) = crate::procs::signals::stop_requested() {
                self.stop_all(live)?;
                return Ok(Some((Outcome::Interrupted, format!("{sig} received"))));
            }
            changed |= self.reap(live)?;
            match self.answer(live)? {
                Looked::Stop => {
                    self.stop_all(live)?;
                    return Ok(live.board.end.take());
                }
                Looked::Changed => changed = true,
                Looked::Nothing => {}
            }
            let merged = self.merge_next(live)?;
            // Checked after the merge too: its gate may take the rest.
            if let Some(end) = self.past_deadline(live)? {
                return Ok(Some(end));
            }
            if changed || merged {
                changed = false;
                never = match &live.board.end {
                    None => self.start_free(live)?,
                    Some(_) => Vec::new(),
                };
                save_board(&live.board, &self.board_path())?;
            }
            // Nothing else to do: the end, unless the answer about a
            // paused step is still waited for.
            let within = self.shell.s.workers.answer_within;
            if live.running.is_empty()
                && live.board.queue.is_empty()
                && !live
                    .asking
                    .as_mut()
                    .is_some_and(|a| a.waits(self.shell, within))
            {
                return self.all_done_or(live, &never);
            }
            if !merged {
                // Woken by a worker's exit; else the turn comes back
                // for signals, the deadline and the budget.
                workers::wait_any(&live.running, Duration::from_millis(100));
            }
        }
    }

    /// The question about the first step paused at its budget asked (when
    /// none is out), and its answer taken if one came.
    fn answer(&self, live: &mut Live) -> Result<Looked> {
        let Some(cap) = self.shell.s.limits.max_cost_per_step else {
            return Ok(Looked::Nothing);
        };
        let within = self.shell.s.workers.answer_within;
        if live.asking.is_none() {
            live.asking = paused::ask(self.shell, &live.board, cap, within)?;
        }
        let Some(asking) = &live.asking else {
            return Ok(Looked::Nothing);
        };
        let key = asking.key.clone();
        let looked = paused::look(self.shell, asking, &mut live.board)?;
        match looked {
            Looked::Nothing => {}
            Looked::Stop => live.asking = None,
            // The next paused step asked about at once: a run with nothing
            // else left this turn would end before it was asked, not wait.
            Looked::Changed => live.asking = paused::ask(self.shell, &live.board, cap, within)?,
        }
        self.release_skipped(&live.board, &key);
        Ok(looked)
    }

    /// One merge at a time, and the next at once (the freed slots are
    /// filled between them); none past the deadline. Whether one was made.
    fn merge_next(&self, live: &mut Live) -> Result<bool> {
        let clock = board::clock(live.deadline, Instant::now());
        let Some(key) = live.board.next_merge(clock) else {
            return Ok(false);
        };
        self.merge(live, &key)?;
        Ok(true)
    }

    /// Past `--max-time`: the run's end from then on (nothing new starts
    /// or merges), its workers stopped once they have had their grace;
    /// `Some` once none runs.
    fn past_deadline(&self, live: &mut Live) -> Result<Option<(Outcome, String)>> {
        let clock = board::clock(live.deadline, Instant::now());
        let max = live.max_time.unwrap_or_default();
        match live.board.deadline(clock, max, live.running.len()) {
            Deadline::Within => Ok(None),
            Deadline::End(outcome, why) => Ok(Some((outcome, why))),
            Deadline::Wait { stop_all } => {
                if stop_all {
                    self.stop_all(live)?;
                    if live.running.is_empty() {
                        return Ok(live.board.end.take());
                    }
                }
                Ok(None)
            }
        }
    }

    /// Nothing runs and nothing waits to merge: every step is merged
    /// (`None`), or why the run stops.
    fn all_done_or(
        &self,
        live: &mut Live,
        never: &[(String, String)],
    ) -> Result<Option<(Outcome, String)>> {
        let open = live.board.end.is_none()
            && spec::parse(&self.spec_text()?)
                .steps
                .iter()
                .any(|s| !s.checked);
        let remote = match self.remote {
            Some(_) if open => Some(self.still_open()?),
            _ => None,
        };
        Ok(live.board.finished(open, remote, never))
    }

    /// `ralph merge` with steps still open: which, for the next workers.
    fn still_open(&self) -> Result<String> {
        let parsed = spec::parse(&self.spec_text()?);
        let open: Vec<String> = parsed
            .steps
            .iter()
            .filter(|s| !s.checked)
            .map(|s| s.key())
            .collect();
        Ok(format!(
            "every step done on its branch is merged; {} still open ({}): the next workers' (`ralph steps --ready`)",
            open.len(),
            crate::output::visible_line(&open.join(", "))
        ))
    }

    fn spec_text(&self) -> Result<String> {
        Ok(crate::fsutil::read_optional(&self.shell.project.spec())?.unwrap_or_default())
    }

    /// Free slots filled: first with steps back at work, then (but for
    /// `ralph merge`, whose steps other machines work) with steps the
    /// scheduler frees; the steps that never can start.
    fn start_free(&self, live: &mut Live) -> Result<Vec<(String, String)>> {
        let text = self.spec_text()?;
        let parsed = spec::parse(&text);
        let mut slots = (self.shell.s.workers.count as usize).saturating_sub(live.running.len());
        let order: Vec<String> = parsed.steps.iter().map(spec::Step::key).collect();
        let working: BTreeSet<String> = live
            .board
            .steps
            .iter()
            .filter(|(_, s)| s.place == Place::Working)
            .map(|(k, _)| k.clone())
            .collect();
        let running: BTreeSet<String> = live.running.iter().map(|w| w.step.clone()).collect();
        let back = board::back_to_work(&order, &working, &running, slots);
        for key in &back {
            self.start_worker(live, key, &parsed)?;
        }
        if self.remote.is_some() {
            return Ok(Vec::new());
        }
        slots -= back.len();
        self.start_new(live, &text, &parsed, slots)
    }

    /// Up to `slots` steps the scheduler frees, each given a worker; the
    /// steps that never can start.
    fn start_new(
        &self,
        live: &mut Live,
        text: &str,
        parsed: &spec::Spec,
        slots: usize,
    ) -> Result<Vec<(String, String)>> {
        let phases = texts::phases(text);
        let items: Vec<Item> = parsed
            .steps
            .iter()
            .zip(phases)
            .map(|(s, phase)| Item {
                key: s.key(),
                task: s.task.clone(),
                merged: s.checked,
                phase,
            })
            .collect();
        let order = self.order(&items)?;
        let busy = live.board.busy();
        let next = plan::next(&items, &order, &busy, slots);
        for key in &next.start {
            self.start_worker(live, key, parsed)?;
        }
        Ok(next.never)
    }

    /// Step `key` back to a worker (when a slot is free), unless its last
    /// workers started no session: then the run waits, naming it.
    fn back_to_work(&self, live: &mut Live, key: &str, why: &str) {
        if let Some(said) = live.board.back_to_work(key, why) {
            self.shell.ui.note(&said);
        }
    }

    fn order(&self, items: &[Item]) -> Result<Order> {
        order_of(self.root(), self.shell.s.tracker, items)
    }

    fn worktree_name(&self, parsed: &spec::Spec, key: &str) -> String {
        let n = parsed
            .steps
            .iter()
            .position(|s| s.key() == key)
            .map_or(0, |i| i + 1);
        let id: String = self
            .shell
            .run
            .id
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let tail = &id[id.len().saturating_sub(12)..];
        format!(
            "par-{tail}-{n}-{:06x}",
            crate::fsutil::fnv1a(key.as_bytes()) & 0xff_ffff
        )
    }

    /// A worker for `key`: its worktree made (from the integration
    /// branch's head) or reused, its task claimed, its loop started.
    fn start_worker(&self, live: &mut Live, key: &str, parsed: &spec::Spec) -> Result<()> {
        let main = match &live.main {
            Some(main) => main.clone(),
            None => live.main.insert(worktree::main_root(self.root())?).clone(),
        };
        let name = match live.board.steps.get(key) {
            Some(slot) => slot.worktree.clone(),
            None => self.worktree_name(parsed, key),
        };
        // From the integration branch's head (a worktree loop's, not the
        // main checkout's), read as a commit at once: the worktree is made
        // from it without asking git again (a worker's start is on the
        // run's critical path: the next wave waits for it).
        let head =
            crate::git::at(self.root()).run(&["rev-parse", "--verify", "HEAD^{commit}"], &[])?;
        let (dir, made) = worktree::ensure_at_commit(&main, &name, &head)
            .with_context(|| format!("cannot make the worktree of step {key}"))?;
        if made {
            self.seed(&main, &dir, key)?;
        }
        // A human has acted on what stopped it: its loop starts afresh.
        // Its COMPLETE is never the run's word (the merged spec is).
        crate::fsutil::remove_optional(&dir.join(".ralph/WAITING"))?;
        crate::fsutil::remove_optional(&dir.join(".ralph/COMPLETE"))?;
        live.board.workers += 1;
        let worker = format!("w{}", live.board.workers);
        let step = texts::find(&parsed.steps, key);
        self.claim(step, &worker);
        let slot = live
            .board
            .steps
            .entry(key.to_string())
            .or_insert_with(|| Slot::new(name.clone(), Place::Working));
        slot.worker = Some(worker.clone());
        slot.place = Place::Working;
        let described = step.map_or_else(|| key.to_string(), spec::Step::describe);
        let prompt = self.worker_prompt(&worker, &described, slot.feedback.as_deref())?;
        let shown = step.map_or_else(|| key.to_string(), spec::Step::name);
        self.shell.ui.note(&format!(
            "{worker} starts step {shown} in {}",
            dir.display()
        ));
        let budget = self.budget();
        let args = self.worker_args(live.deadline);
        let running = workers::start(
            &args,
            &workers::Job {
                name: &worker,
                step: key,
                dir: &dir,
                prompt: &prompt,
                budget: &budget,
                needs_token: self.shell.s.tracker.is_some_and(|k| k.uses_token()),
            },
        )?;
        live.running.push(running);
        Ok(())
    }

    /// The run's command line for a worker, with what is left of the run's
    /// `--max-time`.
    fn worker_args(&self, deadline: Option<std::time::Instant>) -> Vec<String> {
        let mut args = workers::worker_args(&self.args);
        // The run resolved its own programs from this folder; a worker
        // starts in its worktree.
        if let Ok(here) = std::env::current_dir() {
            args = workers::absolute_programs(&args, &here);
        }
        if let Some(end) = deadline {
            let left = end.saturating_duration_since(std::time::Instant::now());
            let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
            args.insert(at, format!("--max-time={}s", left.as_secs().max(1)));
        }
        args
    }

    /// The step's task, taken by `worker` in the tracker (in progress,
    /// assigned): said, not fatal, when the tracker refuses.
    fn claim(&self, step: Option<&spec::Step>, worker: &str) {
        if let Some(task) = step.and_then(|s| s.task.as_deref())
            && let Err(e) =
                crate::work::tracker::claim(self.shell.s.tracker, self.root(), task, Some(worker))
        {
            self.shell
                .ui
                .note(&format!("could not claim {task} for {worker}: {e}"));
        }
    }

    /// A new worktree: ralph's untracked files copied, what you approved
    /// carried over, and its spec with its step first, committed.
    fn seed(&self, main: &Path, dir: &Path, key: &str) -> Result<()> {
        worktree::seed(self.root(), dir, None)?;
        if let Ok(cfg) = crate::config::load(&crate::work::project::Project::at(dir).config()) {
            crate::trust::approval::carry_over(main, dir, &cfg)?;
        }
        let spec_path = dir.join(".ralph/spec.md");
        let text = crate::fsutil::read_optional(&spec_path)?.unwrap_or_default();
        let first = texts::first_open(&text, key);
        if first != text {
            crate::fsutil::atomic_write(&spec_path, first.as_bytes(), 0o644)?;
            let g = crate::git::at(dir);
            let message = format!("ralph: this worktree works {key} (its step first)");
            // The spec is tracked (the run refuses one that is not
            // committed): one git process commits it as `add` and
            // `commit` did, the worker's start waiting for it. Where
            // that fails, the two, as they were, and what they say.
            let words = ["commit", "--quiet", "--no-verify", "-m", &message, "--only"];
            if g.run(&[&words[..], &["--", ".ralph/spec.md"]].concat(), &[])
                .is_err()
            {
                g.run(&["add", "--", ".ralph/spec.md"], &[])?;
                g.run(&["commit", "--quiet", "--no-verify", "-m", &message], &[])?;
            }
        }
        Ok(())
    }

    /// The run's prompt, after what only this worker is told: its step.
    fn worker_prompt(&self, worker: &str, step: &str, feedback: Option<&str>) -> Result<PathBuf> {
        let prompt = crate::fsutil::read_optional(&self.shell.s.session.prompt)?
            .with_context(|| format!("{} is gone", self.shell.s.session.prompt.display()))?;
        let text = workers::prompt(worker, step, feedback, "in other worktrees", &prompt);
        let path = self.shell.run.path.join(format!("{worker}.prompt.md"));
        crate::fsutil::atomic_write(&path, text.as_bytes(), 0o644)?;
        Ok(path)
    }

    /// Workers that ended, each end taken as `worker_ended` says.
    fn reap(&self, live: &mut Live) -> Result<bool> {
        let (mut i, mut any) = (0, false);
        while i < live.running.len() {
            let Some(end) = live.running[i].ended()? else {
                i += 1;
                continue;
            };
            let w = live.running.remove(i);
            any = true;
            self.keep_records(&w, &mut live.saved)?;
            self.count_spent(&mut live.saved)?;
            self.shell.run.save_state(&live.saved)?;
            self.worker_ended(live, &w, &end)?;
        }
        Ok(any)
    }

    /// A worker's end: its step queued when its branch has it done (in a
    /// commit), worked again when it has not, else the run's reason to
    /// stop (after the others finish what they work on).
    fn worker_ended(&self, live: &mut Live, w: &Running, end: &End) -> Result<()> {
        let sessions = budget::sessions_of(&self.budget(), &w.name)?;
        let Some(slot) = live.board.steps.get(&w.step) else {
            return Ok(());
        };
        let branch = worktree::branch(&slot.worktree);
        let ended = board::Ended {
            worker: &w.name,
            step: &w.step,
            end,
            branch: &branch,
            committed: queue::step_checked_on(self.root(), &branch, &w.step),
        };
        match live.board.worker_ended(&ended, sessions) {
            None => Ok(()),
            Some(Then::Queue) => self.queue_done(live, w, end),
            Some(Then::WorkAgain(why)) => {
                self.shell
                    .ui
                    .note(&format!("{why}: not done; its step is worked again"));
                self.back_to_work(live, &w.step, &why);
                Ok(())
            }
            Some(Then::Stop(outcome, why)) => {
                self.worker_stopped(live, w, outcome, why);
                Ok(())
            }
            Some(Then::Pause(why)) => {
                self.shell
                    .ui
                    .note(&format!("{why}; its step is paused, the others go on"));
                live.board.pause(&w.step, why);
                Ok(())
            }
        }
    }

    /// A worker's step done on its branch: to the merge queue, unless its
    /// resolution left conflict markers.
    fn queue_done(&self, live: &mut Live, w: &Running, end: &End) -> Result<()> {
        let left = live
            .board
            .steps
            .get(&w.step)
            .map(|s| queue::with_markers(&w.dir, &s.conflicts))
            .unwrap_or_default();
        if !left.is_empty() {
            return self.unresolved(live, w, &left);
        }
        let reason = match end {
            End::Ran(_, reason) => reason.as_str(),
            End::NotStarted(why) => why.as_str(),
        };
        self.shell
            .ui
            .note(&format!("{}: {reason}; queued for merging", w.name));
        live.board.queue(&w.step);
        Ok(())
    }

    /// A worker that stopped short of its step: the run's reason to stop
    /// (an interrupted one goes on when the run is resumed).
    fn worker_stopped(&self, live: &mut Live, w: &Running, outcome: Outcome, why: String) {
        let said = live.board.stopped(&w.step, outcome, why);
        self.release(&w.step);
        if let Some(said) = said {
            self.shell.ui.note(&said);
        }
    }

    /// A resolution that left conflict markers: its worker goes on, told
    /// where they are.
    fn unresolved(&self, live: &mut Live, w: &Running, files: &[String]) -> Result<()> {
        let listed = files.join(", ");
        self.shell.ui.note(&format!(
            "{}: conflict markers are left in {listed}: the resolution goes on",
            w.name
        ));
        let most = self.shell.s.limits.max_gate_failures;
        let dir = w.dir.display().to_string();
        if !live.board.unresolved(&w.step, &listed, most, &dir) {
            return Ok(());
        }
        let name = live.board.steps[&w.step].worktree.clone();
        // Open again where it works: done means a session resolved them.
        self.reopen_in_worktree(&name, &w.step, "conflict markers left")?;
        self.back_to_work(live, &w.step, "conflict markers left");
        Ok(())
    }

    /// A task its worker gave up: open again, nobody's.
    fn release(&self, key: &str) {
        let Ok(text) = self.spec_text() else { return };
        let parsed = spec::parse(&text);
        if let Some(task) = texts::find(&parsed.steps, key).and_then(|s| s.task.clone()) {
            crate::work::tracker::release(self.shell.s.tracker, self.root(), &task);
        }
    }

    /// A worker's records, kept with the run's, and its files copied beside
    /// them (`w1.session-001.jsonl`...), so that they outlive its worktree.
    /// Its run folder is where its sessions could write: read only as a
    /// folder ralph holds, regular files only, each up to the run files'
    /// cap, written as new files of the run's own folder.
    fn keep_records(&self, w: &Running, saved: &mut Saved) -> Result<()> {
        let Some(from) = w.run_dir() else {
            return Ok(());
        };
        if !from.held() {
            self.shell.ui.note(&format!(
                "{}'s run folder {} is not a folder of ralph's (a link?): its records are not kept",
                w.name,
                from.path.display()
            ));
            return Ok(());
        }
        let mut copied = std::collections::BTreeMap::new();
        for entry in std::fs::read_dir(from.file(""))?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let to = format!("{}.{name}", w.name);
            if copy_capped(&from.file(&name), &self.shell.run.new_file(&to)?).is_ok() {
                copied.insert(name, self.shell.run.path.join(&to));
            }
        }
        for mut r in from.records() {
            r.stream_file = r.stream_file.as_ref().and_then(|f| {
                let name = Path::new(f).file_name()?.to_string_lossy().into_owned();
                copied.get(&name).map(|p| p.display().to_string())
            });
            saved.tokens.plus(&r.tokens);
            saved.cost_unknown |= r.cost_unknown;
            self.shell.run.append_record(&r)?;
        }
        self.shell.journal().adopt(&from, &w.name);
        Ok(())
    }

    /// Every worker asked to stop, and waited for.
    fn stop_all(&self, live: &mut Live) -> Result<()> {
        for w in &live.running {
            w.interrupt();
        }
        while !live.running.is_empty() {
            self.reap(live)?;
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// The queue's next step merged, the gate run on the result; a failing
    /// merge undone and its step reopened; a conflict resolved or waited on.
    fn merge(&self, live: &mut Live, key: &str) -> Result<()> {
        let Some(slot) = live.board.steps.get(key).cloned() else {
            return Ok(());
        };
        let branch = worktree::branch(&slot.worktree);
        // Only a branch whose own spec has the step done (a board says
        // queued where a session could write it).
        if !queue::step_checked_on(self.root(), &branch, key) {
            if self.remote.is_some() {
                self.shell.ui.note(&format!(
                    "{branch} does not have {key} checked: not merged; it stays for its worker"
                ));
                return Ok(());
            }
            let why = format!("{branch} does not have {key} checked in a commit");
            self.shell
                .ui
                .note(&format!("{why}: not merged; its step is worked again"));
            self.back_to_work(live, key, &why);
            return Ok(());
        }
        let message = match &slot.worker {
            Some(worker) => format!("ralph: merge {key} ({worker}, {branch})"),
            None => format!("ralph: merge {key} ({branch})"),
        };
        let t0 = std::time::Instant::now();
        let merged = queue::merge(self.root(), &branch, key, &message)?;
        let took = t0.elapsed();
        match merged {
            Merged::Committed { before, .. } => {
                let passed = self.gate_after_merge(live, key, &before)?;
                if passed {
                    self.merged(live, key, &slot.worktree, took)?;
                }
            }
            Merged::Conflicts(files) => self.conflict(live, key, files)?,
            // (The queue never asks: it commits the step's box even when
            // the branch brings nothing else.) Nothing of the branch to
            // merge or gate: merged as it is.
            Merged::UpToDate => self.merged(live, key, &slot.worktree, took)?,
        }
        Ok(())
    }

    /// The gate on the merged tree; `false` when it failed (the merge then
    /// undone, the step reopened with the gate's output).
    fn gate_after_merge(&self, live: &mut Live, key: &str, before: &str) -> Result<bool> {
        let Some(gate) = &self.shell.s.completion.gate else {
            return Ok(true);
        };
        let v = self.shell.run_gate(gate, &mut live.saved)?;
        if v.passed || v.interrupted {
            return Ok(v.passed);
        }
        queue::undo(self.root(), before)?;
        let Some(worktree) = live.board.steps.get(key).map(|s| s.worktree.clone()) else {
            return Ok(false);
        };
        let most = self.shell.s.limits.max_gate_failures;
        let (summary, feedback) = match &live.saved.judged {
            Some(j) if live.saved.baseline.is_some() => (
                format!("new failures: {}", j.blocking.join(", ")),
                crate::work::baseline::feedback(&v, j),
            ),
            _ => (v.summary(), crate::work::gate::feedback(&v)),
        };
        let branch = worktree::branch(&worktree);
        let failed = live.board.gate_failed(
            key,
            (most, self.remote.is_some()),
            (&summary, &feedback, &branch),
        );
        match failed {
            Some(GateFailed::Rework(said)) => {
                self.shell.ui.note(&said);
                self.reopen_in_worktree(&worktree, key, "the gate failed after its merge")?;
                self.back_to_work(live, key, "the gate failed after its merge");
            }
            Some(GateFailed::LeftForHuman(said)) => self.shell.ui.note(&said),
            Some(GateFailed::GaveUp) | None => {}
        }
        Ok(false)
    }

    /// The step's box unchecked (and its task opened) where its worker
    /// works, so that its next worker takes it up again.
    fn reopen_in_worktree(&self, name: &str, key: &str, why: &str) -> Result<()> {
        let main = worktree::main_root(self.root())?;
        let dir = worktree::path_for(&main, name);
        let spec_path = dir.join(".ralph/spec.md");
        let text = crate::fsutil::read_optional(&spec_path)?.unwrap_or_default();
        let parsed = spec::parse(&text);
        if let Some(step) = texts::find(&parsed.steps, key) {
            // (GitHub's issue is closed only once merged with the gate
            // passing: nothing to reopen.)
            if let Some(task) = &step.task {
                let _ = crate::work::tracker::reopen(self.shell.s.tracker, self.root(), task);
            }
            let text = spec::set_box(&text, step.line, false);
            crate::fsutil::atomic_write(&spec_path, text.as_bytes(), 0o644)?;
            let g = crate::git::at(&dir);
            g.run(&["add", "--", ".ralph/spec.md"], &[])?;
            let message = format!("ralph: {key} reopened ({why})");
            g.run(&["commit", "--quiet", "--no-verify", "-m", &message], &[])?;
        }
        Ok(())
    }

    /// A merged step: said, then what the board has follow a merge
    /// (`board::after_merge`), each carried out and its result told back.
    fn merged(&self, live: &mut Live, key: &str, name: &str, took: Duration) -> Result<()> {
        use crate::run::engine::board::{AfterMerge, MergeDone, MergeShip, after_merge};
        let worker = live.board.steps.get(key).and_then(|s| s.worker.clone());
        let merged = crate::history::events::Event::Merged {
            duration: took,
            into: self.integration(),
        };
        // The step as the spec has it: its name said, its issue closed.
        let parsed = spec::parse(&self.spec_text()?);
        let step = texts::find(&parsed.steps, key);
        let shown = step.map_or_else(|| key.to_string(), spec::Step::name);
        self.shell
            .report_of((key, &shown), worker.as_deref(), merged);
        live.board.merged(key);
        let closes = crate::work::tracker::caps(self.shell.s.tracker).ralph_closes;
        let ship = MergeShip {
            push: self.shell.ship.is_some(),
            from_remote: self.remote.is_some(),
            // When the tracker's issues are ralph's to close.
            issue: step.and_then(|s| s.task.clone()).filter(|_| closes),
        };
        let mut done = MergeDone::default();
        while let Some(action) = after_merge(&ship, &done) {
            match action {
                AfterMerge::Push => done.pushed = Some(self.push_merged(live)),
                AfterMerge::DeleteStepBranch => {
                    if let Some(r) = self.remote {
                        self.delete_step_branch(r, key);
                    }
                    done.branch_deleted = true;
                }
                AfterMerge::CloseIssue(task) => {
                    for said in crate::work::tracker::close_done(
                        self.shell.s.tracker,
                        self.shell.s.shipping.pr,
                        self.root(),
                        &[task],
                        None,
                    ) {
                        self.shell.ui.note(&said);
                    }
                    done.issue_closed = true;
                }
                AfterMerge::RemoveWorktree => {
                    self.remove_worktree(name)?;
                    done.worktree_removed = true;
                }
            }
        }
        Ok(())
    }

    /// `AfterMerge::Push`: whether the remote took it; a refusal stops
    /// the run for a human.
    fn push_merged(&self, live: &mut Live) -> bool {
        let Some(ship) = &self.shell.ship else {
            return false;
        };
        match ship.push(self.root(), &|e| self.shell.report(e)) {
            Ok(()) => true,
            Err(why) => {
                live.board.stop(Outcome::Waiting, format!("--push: {why}"));
                false
            }
        }
    }

    /// `AfterMerge::RemoveWorktree`: a failure is said, not fatal.
    fn remove_worktree(&self, name: &str) -> Result<()> {
        let main = worktree::main_root(self.root())?;
        let dir = worktree::path_for(&main, name);
        if !dir.exists() {
            return Ok(());
        }
        if let Err(e) = worktree::remove(&main, &dir, name) {
            self.shell.ui.note(&format!(
                "could not remove worktree {}: {e:#}",
                dir.display()
            ));
        }
        Ok(())
    }

    /// A step merged and pushed: its branch on the remote deleted, if it is
    /// still where it was fetched (no work pushed to it since).
    fn delete_step_branch(&self, r: &RemoteMerge, key: &str) {
        let Some((_, slug, sha)) = r.steps.iter().find(|(k, _, _)| k == key) else {
            return;
        };
        let branch = crate::parallel::remote::step_branch(slug);
        match r.target.delete_if_at(self.root(), &branch, sha) {
            Ok(true) => self.shell.ui.note(&format!(
                "deleted {branch} on {}: it is merged",
                r.target.remote
            )),
            Ok(false) => self.shell.ui.note(&format!(
                "{branch} on {} has commits pushed since it was fetched: left as it is",
                r.target.remote
            )),
            Err(e) => self.shell.ui.note(&format!(
                "could not delete {branch} on {}: {e}",
                r.target.remote
            )),
        }
    }

    /// A merge in conflict: with `--on-conflict wait`, the run stops for a
    /// human naming the files; else a resolution session merges both.
    fn conflict(&self, live: &mut Live, key: &str, files: Vec<String>) -> Result<()> {
        let Some(name) = live.board.steps.get(key).map(|s| s.worktree.clone()) else {
            return Ok(());
        };
        let worker = live.board.steps.get(key).and_then(|s| s.worker.clone());
        let event = crate::history::events::Event::Conflicted {
            files: files.clone(),
        };
        self.shell.journal().add_of(key, worker.as_deref(), event);
        let branch = worktree::branch(&name);
        let on_conflict = self.shell.s.workers.on_conflict;
        let at = (branch.as_str(), self.integration());
        match live
            .board
            .conflicted(key, &files, on_conflict, (at.0, &at.1))
        {
            Some(Conflicted::Resolve(said)) => {
                self.shell.ui.note(&said);
                self.resolve(live, key, &name, &files)?;
            }
            Some(Conflicted::GaveUp(said)) => self.shell.ui.note(&said),
            Some(Conflicted::Wait) | None => {}
        }
        Ok(())
    }

    /// The resolution: in the step's own worktree, the integration branch
    /// merged in (ralph's files kept as the step has them), and a worker
    /// told both sides and the files; when it has committed the merge with
    /// no marker left, the step is queued again.
    fn resolve(&self, live: &mut Live, key: &str, name: &str, files: &[String]) -> Result<()> {
        let main = worktree::main_root(self.root())?;
        // `ralph merge`: the step's branch gets a worktree now.
        let (dir, made) = worktree::ensure(&main, name, None)
            .with_context(|| format!("cannot make the worktree of step {key}"))?;
        if made {
            worktree::seed(self.root(), &dir, None)?;
            if let Ok(cfg) = crate::config::load(&crate::work::project::Project::at(&dir).config())
            {
                crate::trust::approval::carry_over(&main, &dir, &cfg)?;
            }
        }
        let head = crate::git::at(self.root()).run(&["rev-parse", "HEAD"], &[])?;
        let g = crate::git::at(&dir);
        let (_, _, said) = g.attempt(&["merge", "--no-ff", "--no-commit", "--quiet"], &[&head])?;
        // No merge under way (git refused it): a session would have
        // nothing to resolve, and its step would read as done.
        if !g.ok(&["rev-parse", "--verify", "--quiet", "MERGE_HEAD"], &[]) {
            let into = format!("the worktree of {key} ({})", dir.display());
            let told = live
                .board
                .resolution_refused(key, (&self.integration(), &into), &said);
            self.shell.ui.note(&told);
            return Ok(());
        }
        for own in [".ralph", ".beads"] {
            // The step's own files stay its own: ralph merges them.
            let _ = g.attempt(&["checkout", "HEAD", "--"], &[own]);
        }
        if let Some(said) = live.board.resolving(key, &self.integration(), files) {
            self.shell.ui.note(&said);
        }
        Ok(())
    }

    /// The run's counts, as its workers spent them.
    fn count_spent(&self, saved: &mut Saved) -> Result<()> {
        let spent = budget::read(&self.budget())?;
        saved.state.iteration = saved.state.iteration.max(spent.sessions);
        saved.state.sessions = saved.state.sessions.max(spent.sessions);
        saved.state.cost_usd = saved.state.cost_usd.max(spent.cost_usd);
        Ok(())
    }

    /// Every step merged: COMPLETE written and judged by the ordinary loop
    /// in the integration checkout (spec and tracker, the gate, the
    /// reviewer), which goes on as any loop does if it does not hold.
    fn judge(&self, lock: &mut LoopLock, saved: Saved) -> Result<u8> {
        let project = self.shell.project;
        let checked = crate::work::completion::check_run(
            &project.spec(),
            &project.root,
            self.shell.s.tracker,
            self.shell.s.shipping.pr,
        )?;
        if let Ok(j) = &checked
            && j.is_complete()
        {
            // Handed to the loop, which judges it (the gate, the reviewer).
            *self.shell.handed.borrow_mut() = Some(crate::work::sentinel::Complete {
                completed: Some(crate::timefmt::now()),
                forced: false,
                spec: Some(j.spec.progress()),
                tracker: Some(j.tracker.unwrap_or("none").to_string()),
                message: "every step was merged by the parallel run".into(),
                file_time: None,
            });
        }
        self.shell.run.save_state(&saved)?;
        let before = crate::run::progress::take(&project.root, &project.spec());
        self.shell.run_from(lock, saved, before)
    }
}
