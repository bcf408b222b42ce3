//! `ralph status --remote`: a run shared by many machines as the remote
//! alone tells it: each step's claim, pushed branch and merged state.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Result;
use serde::Serialize;

use super::steps::On;
use crate::exit::ExitStatus;
use crate::outln;
use crate::parallel::claims::{self, Judged};
use crate::parallel::remote::{self, StepBranch, StepInfo, Steps};
use crate::work::project::Project;
use crate::work::spec;

/// The run on the remote, step by step.
#[derive(Debug, Serialize)]
pub struct RemoteStatus {
    pub branch: String,
    pub remote: String,
    pub on_remote: bool,
    pub merged: usize,
    pub total: usize,
    pub steps: Vec<StepState>,
    /// The claim of the `ralph merge --follow` that follows the run, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merger: Option<ClaimShown>,
}

#[derive(Debug, Serialize)]
pub struct StepState {
    #[serde(flatten)]
    pub step: StepInfo,
    /// merged, to-merge (done on its branch), ready, waiting.
    pub state: &'static str,
    /// Its branch on the remote, when pushed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pushed: Option<Pushed>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim: Option<ClaimShown>,
}

#[derive(Debug, Serialize)]
pub struct Pushed {
    pub commit: String,
    /// Its step's box is checked there.
    pub done: bool,
}

#[derive(Debug, Serialize)]
pub struct ClaimShown {
    pub commit: String,
    /// What the claim says (absent: it does not read as one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Seconds left of its lease, judged here (0: it ran out and may be
    /// taken over).
    pub lease_left_secs: u64,
    pub live: bool,
}

/// The steps' rows from what the remote has. Pure.
pub fn rows(
    text: &str,
    board: &Steps,
    pushed: &BTreeMap<String, StepBranch>,
    claims: &BTreeMap<String, Judged>,
    now: u64,
) -> Vec<StepState> {
    let state_of = |slug: &str| {
        let is = |v: &[StepInfo]| v.iter().any(|s| s.slug == slug);
        if is(&board.finished) {
            "to-merge"
        } else if is(&board.ready) {
            "ready"
        } else {
            "waiting"
        }
    };
    spec::parse(text)
        .steps
        .iter()
        .map(|s| {
            let step = StepInfo::of(s);
            let state = if s.checked {
                "merged"
            } else {
                state_of(&step.slug)
            };
            let pushed = pushed.get(&step.slug).map(|p| Pushed {
                commit: p.sha.clone(),
                done: p.done,
            });
            let claim = claims.get(&step.slug).map(|j| ClaimShown {
                commit: j.sha.clone(),
                machine: j.claim.as_ref().map(|c| c.machine.clone()),
                run: j.claim.as_ref().map(|c| c.run.clone()),
                since: j.claim.as_ref().map(|c| {
                    crate::timefmt::rfc3339(UNIX_EPOCH + Duration::from_secs(c.since.min(now)))
                }),
                lease_left_secs: j.expires.saturating_sub(now),
                live: j.live(now),
            });
            StepState {
                step,
                state,
                pushed,
                claim,
            }
        })
        .collect()
}

/// A claim as status shows it: its stated start never later than now.
/// Pure.
pub fn shown(j: &Judged, now: u64) -> ClaimShown {
    ClaimShown {
        commit: j.sha.clone(),
        machine: j.claim.as_ref().map(|c| c.machine.clone()),
        run: j.claim.as_ref().map(|c| c.run.clone()),
        since: j
            .claim
            .as_ref()
            .map(|c| crate::timefmt::rfc3339(UNIX_EPOCH + Duration::from_secs(c.since.min(now)))),
        lease_left_secs: j.expires.saturating_sub(now),
        live: j.live(now),
    }
}

/// How a claim reads in a line: who, since when, how much lease is left. Pure.
fn claim_text(c: &ClaimShown) -> String {
    let who = c
        .machine
        .as_deref()
        .unwrap_or("(a claim that does not read as one)");
    if c.live {
        format!(
            "claimed by {}{}, lease {} left",
            crate::output::visible_line(who),
            c.since
                .as_ref()
                .map(|t| format!(" since {t}"))
                .unwrap_or_default(),
            crate::timefmt::human_duration(Duration::from_secs(c.lease_left_secs))
        )
    } else {
        format!(
            "claimed by {}: its lease ran out (another machine may take it over)",
            crate::output::visible_line(who)
        )
    }
}

/// One step's line. Pure.
pub fn line(s: &StepState) -> String {
    let mut out = format!(
        "  {:<9} {:<28} {}",
        s.state,
        s.step.slug,
        crate::output::visible_line(&s.step.title)
    );
    if let Some(c) = &s.claim {
        out.push_str(&format!("\n            {}", claim_text(c)));
    }
    if let Some(p) = &s.pushed {
        out.push_str(&format!(
            "\n            branch {} pushed at {}{}",
            s.step.branch,
            &p.commit[..12.min(p.commit.len())],
            if p.done { ", done" } else { ", not done yet" }
        ));
    }
    out
}

/// `ralph status --remote [--json]`.
pub fn show(on: &On, json: bool) -> Result<ExitStatus> {
    let project = Project::find()?;
    let root = &project.root;
    let branch = on.branch(root)?;
    let target =
        remote::origin(root, &branch).map_err(|e| crate::exit::Stop::with(ExitStatus::Usage, e))?;
    // Read as a worker reads it: claims, then step branches, then the
    // integration branch (each moves only after the one before it).
    let now = crate::timefmt::now_epoch();
    let on_remote = remote::claims(root, &target)?;
    // Seen now for the first time: a claim is honoured no longer than the
    // longest lease any run may set.
    let claims = claims::Seen::default().judge(on_remote, now, claims::MAX_LEASE);
    let heads = remote::step_heads(root, &target)?;
    let (target, base) = on.reach(root)?;
    let text = remote::show(root, &base.commit, ".ralph/spec.md");
    let parsed = spec::parse(&text);
    let pushed = remote::pushed_steps_from(root, &target, &parsed.steps, &heads)?;
    let tracker = crate::config::load(&project.config())
        .ok()
        .and_then(|c| c.tracker);
    let order = crate::run::coordinator::order_of(root, tracker, &remote::items_of(&text))?;
    let board = remote::board(&text, &order, &pushed, &base);
    let status = RemoteStatus {
        branch: board.branch.clone(),
        remote: target.remote.clone(),
        on_remote: board.on_remote,
        merged: board.merged,
        total: board.total,
        steps: rows(&text, &board, &pushed, &claims, now),
        merger: claims
            .get(&claims::merger_slot(&board.branch))
            .map(|j| shown(j, now)),
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&status)?);
        return Ok(ExitStatus::Success);
    }
    outln!(
        "{} ({}): {} of {} steps merged",
        status.branch,
        if status.on_remote {
            format!("on {}", status.remote)
        } else {
            "not pushed yet".to_string()
        },
        status.merged,
        status.total
    );
    for s in &status.steps {
        outln!("{}", line(s));
    }
    match &status.merger {
        Some(m) => outln!("  merger: {}", claim_text(m)),
        None => outln!("  merger: none follows the run (`ralph merge --follow`)"),
    }
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::claims::Claim;

    #[test]
    fn each_step_shows_its_state_branch_and_claim_as_judged_here() {
        let text =
            "# Spec\n\n- [x] **1** One\n- [ ] **2** Two\n- [ ] **3** Three\n- [ ] **4** Four\n";
        let steps = spec::parse(text).steps;
        let info: Vec<StepInfo> = steps.iter().map(StepInfo::of).collect();
        let board = Steps {
            finished: vec![info[1].clone()],
            ready: vec![info[2].clone()],
            waiting: vec![info[3].clone()],
            ..Steps::default()
        };
        let pushed = BTreeMap::from([(
            info[1].slug.clone(),
            StepBranch {
                sha: "a".repeat(40),
                done: true,
            },
        )]);
        let claim = |machine: &str| Claim {
            step: info[2].slug.clone(),
            machine: machine.into(),
            run: "r".into(),
            since: 1000,
            renewed: 1000,
            lease: 600,
        };
        let claims = BTreeMap::from([(
            info[2].slug.clone(),
            Judged {
                sha: "c".into(),
                claim: Some(claim("laptop\u{1b}[2J")),
                expires: 1090,
            },
        )]);
        let rows = rows(text, &board, &pushed, &claims, 1000);
        let states: Vec<&str> = rows.iter().map(|r| r.state).collect();
        assert_eq!(states, ["merged", "to-merge", "ready", "waiting"]);
        let two = line(&rows[1]);
        assert!(
            two.contains("branch ralph/step-2-") && two.contains("pushed at aaaaaaaaaaaa, done"),
            "{two}"
        );
        let three = line(&rows[2]);
        assert!(
            three.contains("claimed by laptop^[[2J since 1970-01-01T00:16:40Z, lease 1m 30s left"),
            "{three}"
        );
        // Run out: said so, for a takeover.
        let late = super::rows(text, &board, &pushed, &claims, 1090);
        assert!(
            line(&late[2]).contains("its lease ran out"),
            "{}",
            line(&late[2])
        );
        assert_eq!(late[2].claim.as_ref().unwrap().lease_left_secs, 0);
        // A stated start in the future is shown as now.
        let future = Judged {
            sha: "d".into(),
            claim: Some(Claim {
                since: u64::MAX,
                ..claim("x")
            }),
            expires: 2000,
        };
        assert_eq!(
            shown(&future, 1000).since.as_deref(),
            Some("1970-01-01T00:16:40Z")
        );
        let unreadable = Judged {
            sha: "e".into(),
            claim: None,
            expires: 2000,
        };
        assert!(claim_text(&shown(&unreadable, 1000)).contains("does not read as one"));
    }
}
