//! The run's end for `--push` and `--pr`, decided by the loop: the ship
//! carries the push and the pull request out, the loop turns a push that
//! needs a human into WAITING.

/// The run's end for `--push` and `--pr`: its branch pushed, its pull
/// request opened or updated, and the summary told of it. A push that
/// needs a human turns the run's end into WAITING, with why.
pub fn finish(
    ship: &crate::ship::Ship,
    (project, tell): (
        &crate::work::project::Project,
        &dyn Fn(crate::history::events::Event),
    ),
    saved: &crate::history::records::Saved,
    summary: &mut crate::history::records::Summary,
) -> anyhow::Result<()> {
    use crate::run::engine::Outcome;
    use crate::ship::{End, body};
    let spec = crate::fsutil::read_optional(&project.spec())
        .ok()
        .flatten()
        .unwrap_or_default();
    // From the loop's own state, never the journal: the run folder is where
    // a session can write, and the body is what reviewers read on GitHub.
    let gate = saved.last_gate.as_ref().map(|g| {
        let verdict = match (&g.failed, &g.why) {
            _ if g.passed => format!("passed ({})", g.time),
            (Some(c), Some(w)) => format!("`{}` failed ({w})", crate::output::visible_line(c)),
            _ => "failed".into(),
        };
        match saved.judged.as_ref().filter(|_| saved.baseline.is_some()) {
            Some(j) => format!("{verdict}{}", crate::work::baseline::said(j)),
            None => verdict,
        }
    });
    let facts = body::Facts {
        spec: &spec,
        branch: &ship.target.branch,
        run_id: &summary.run_id,
        outcome: summary.outcome.text(),
        reason: &summary.reason,
        complete: summary.outcome == Outcome::Complete,
        gate,
        review: saved.last_review.as_ref().map(|r| r.line()),
        sessions: summary.sessions,
        agents: saved.agents.iter().map(|a| a.to_string()).collect(),
        cost: crate::output::spent(summary.cost_usd, summary.cost_unknown),
        closable: saved.pr_issues_at_start.clone().unwrap_or_default(),
        spec_url: None,
    };
    match ship.at_end(&project.root, tell, &End { facts }) {
        Ok(pr) => {
            if let Some(p) = &pr {
                let _ = crate::history::invocation::keep_pull_request(
                    &project.root,
                    &summary.run_id,
                    p,
                );
            }
            summary.pull_request = pr;
        }
        Err(why) => {
            let reason = format!("--push: {why}");
            crate::work::sentinel::Waiting::new(reason.clone()).write(&project.waiting())?;
            summary.outcome = Outcome::Waiting;
            summary.exit_code = Outcome::Waiting.code();
            summary.reason = reason;
        }
    }
    Ok(())
}
