//! Taking over the lock of a loop that was killed: end exactly what its run
//! left running and record the run as ended abnormally.

use crate::history::records::{RunDir, Summary};
use crate::run::engine::Outcome;
use crate::run::lock::LockInfo;
use crate::run::ui::Ui;

/// A lock left by a loop that is gone: end what its run left running, and
/// record that run as ended abnormally if it never wrote its summary.
pub fn take_over(ui: &Ui, runs: &std::path::Path, stale: &LockInfo) {
    let ended = crate::procs::leftovers::end_run_leftovers(&stale.token, stale.session);
    let dead = RunDir::open(runs, &stale.run_id);
    let marked = dead.path.is_dir()
        && dead.summary().is_none()
        && {
            let saved = dead.state();
            let records = dead.records();
            let state = saved.as_ref().map(|s| s.state.clone()).unwrap_or_default();
            let summary = Summary {
                run_id: dead.id.clone(),
                outcome: Outcome::EndedAbnormally,
                exit_code: Outcome::EndedAbnormally.code(),
                reason: format!(
                    "the loop (pid {}) was killed during iteration {}; `ralph loop --resume` goes on from it",
                    stale.pid, stale.iteration
                ),
                iterations: state.iteration.max(stale.iteration),
                sessions: state.sessions,
                max_iterations: stale.max_iterations,
                duration: "?".into(),
                duration_s: saved.as_ref().map_or(0.0, |s| s.elapsed_s),
                cost_usd: state.cost_usd,
                tokens: saved.as_ref().map(|s| s.tokens.clone()).unwrap_or_default(),
                commits: None,
                spec: records
                    .last()
                    .map_or_else(|| "?".into(), |r| r.spec_after.clone()),
                started: stale.started_at.clone(),
                ended: "?".into(),
                resumed: 0,
                gate: None,
                confined: false,
                agent: Default::default(),
                cost_unknown: saved.as_ref().is_some_and(|s| s.cost_unknown),
                pull_request: None,
                estimate: None,
                baseline: None,
                reviews: state.reviews,
                review: saved.as_ref().and_then(|s| s.last_review.clone()),
            };
            dead.write_summary(&summary).is_ok()
        };
    let mut what = format!(
        "took over a stale lock of pid {} (started {}, no longer running)",
        stale.pid, stale.started_at
    );
    if marked {
        what.push_str(&format!("; its run {} ended abnormally", stale.run_id));
    }
    if ended > 0 {
        what.push_str(&format!("; ended {ended} process(es) it left running"));
    }
    ui.note(&what);
}
