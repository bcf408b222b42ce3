//! The gate against its baseline: what failed before the run's first
//! session (each test where its output says, else each command) does not
//! block COMPLETE; what fails anew does. Pure: two verdicts in, a judgement out.

use serde::{Deserialize, Serialize};

use crate::work::checks::{self, Results};
use crate::work::gate::{Ran, Verdict};

/// What the gate came to, against the baseline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judged {
    /// Nothing fails that did not fail before the run.
    pub passed: bool,
    /// What blocks COMPLETE, each said on one line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocking: Vec<String>,
    /// What failed before the run and still does (tests, else commands).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub still_failing: Vec<String>,
    /// What failed before the run and passes now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<String>,
    /// Commands judged by their exit status though their baseline was read
    /// per test (their output no longer says which tests ran).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_command: Vec<String>,
}

/// The baseline's failures, as the start of a run says them: tests where
/// the output says, else commands; `None` when everything passed.
pub fn failing(baseline: &Verdict) -> Vec<String> {
    let mut out = Vec::new();
    for r in &baseline.ran {
        if timed_out(r) {
            // Not a failure it may keep: it must pass (`judge`).
            continue;
        }
        match &r.tests {
            Some(t) => out.extend(
                t.tests
                    .iter()
                    .filter(|(_, s)| **s == checks::Status::Failed)
                    .map(|(k, _)| k.clone()),
            ),
            None if !r.passed => out.push(format!("`{}`", r.command)),
            None => {}
        }
        // A command that fails with every test it names passing fails for
        // something else: the command itself is what failed.
        if !r.passed
            && r.tests
                .as_ref()
                .is_some_and(|t| !t.tests.values().any(|s| *s == checks::Status::Failed))
        {
            out.push(format!("`{}`", r.command));
        }
    }
    out
}

/// `now` (each command run) against `baseline` (each command run before
/// the first session).
pub fn judge(baseline: &Verdict, now: &Verdict) -> Judged {
    let mut j = Judged::default();
    for ran in &now.ran {
        // A command that timed out before the run said nothing of how its
        // checks run (a cold build, a slow machine): it must pass, as a
        // command new to the gate must, or a test the run breaks in it
        // would pass as failing before.
        let before = baseline
            .ran
            .iter()
            .find(|b| b.command == ran.command && !timed_out(b));
        one(&mut j, before, ran);
    }
    // A command of the baseline that did not run now (the gate changed, or
    // it was stopped) has not passed.
    for b in &baseline.ran {
        if !now.ran.iter().any(|r| r.command == b.command) {
            j.blocking.push(format!("`{}` did not run", b.command));
        }
    }
    j.passed = j.blocking.is_empty();
    j
}

/// Stopped at the gate's timeout (`Ran::why` as `gate::run` says it).
fn timed_out(r: &Ran) -> bool {
    r.why
        .as_deref()
        .is_some_and(|w| w.starts_with("timed out after "))
}

fn one(j: &mut Judged, before: Option<&Ran>, now: &Ran) {
    let cmd = &now.command;
    let said = |r: &Ran| r.why.clone().unwrap_or_else(|| "failed".into());
    let Some(before) = before else {
        // New to the gate since the baseline: it must pass.
        if !now.passed {
            j.blocking.push(format!("`{cmd}` failed ({})", said(now)));
        }
        return;
    };
    match (&before.tests, &now.tests) {
        (Some(b), Some(n)) => by_test(j, (before, b), (now, n)),
        (Some(_), None) => {
            j.per_command.push(cmd.clone());
            if !now.passed {
                let why = if now.too_long {
                    "its output is too long to read per test"
                } else {
                    "its output no longer says which tests failed"
                };
                j.blocking
                    .push(format!("`{cmd}` failed ({}) and {why}", said(now)));
            }
        }
        (None, _) => match (before.passed, now.passed) {
            (true, false) => j.blocking.push(format!("`{cmd}` failed ({})", said(now))),
            (false, false) => j.still_failing.push(format!("`{cmd}`")),
            (false, true) => j.fixed.push(format!("`{cmd}`")),
            (true, true) => {}
        },
    }
}

/// A command read per test, before and now.
fn by_test(j: &mut Judged, (before, b): (&Ran, &Results), (now, n): (&Ran, &Results)) {
    let cmd = &now.command;
    let c = checks::compare(b, n);
    j.blocking.extend(
        c.new_failures
            .iter()
            .map(|t| format!("{t} fails (`{cmd}`)")),
    );
    j.blocking.extend(
        c.missing
            .iter()
            .map(|t| format!("{t} no longer runs (`{cmd}`)")),
    );
    j.blocking.extend(
        c.newly_skipped
            .iter()
            .map(|t| format!("{t} is skipped now (`{cmd}`)")),
    );
    j.still_failing.extend(c.still_failing);
    j.fixed.extend(c.fixed);
    // Failing with no test failing that failed before: the command
    // itself fails now (it did not build, a step after the tests).
    let failed_tests = |r: &Results| r.tests.values().any(|s| *s == checks::Status::Failed);
    if !now.passed && !failed_tests(n) && (before.passed || failed_tests(b)) {
        j.blocking.push(format!(
            "`{cmd}` failed ({}) with no test failing",
            now.why.clone().unwrap_or_default()
        ));
    }
}

/// What the run did to the checks that failed before it, as the end, the
/// pull request and `status` say it after the gate's verdict: `; failing
/// before the run, and still: a, b; fixed by the run: c` (nothing: none).
pub fn said(j: &Judged) -> String {
    let list = |items: &[String]| crate::output::first_of(items, 10);
    let mut out = String::new();
    if !j.still_failing.is_empty() {
        out.push_str(&format!(
            "; failing before the run, and still: {}",
            list(&j.still_failing)
        ));
    }
    if !j.fixed.is_empty() {
        out.push_str(&format!("; fixed by the run: {}", list(&j.fixed)));
    }
    out
}

/// `said` in counts only, for a notice (whose words are ralph's own, never
/// a test's name): `; 2 checks that failed before the run still fail; 1 fixed`.
pub fn counted(j: &Judged) -> String {
    let mut out = String::new();
    if !j.still_failing.is_empty() {
        out.push_str(&format!(
            "; {} that failed before the run still {}",
            crate::output::counted(j.still_failing.len() as u64, "check", "checks"),
            if j.still_failing.len() == 1 {
                "fails"
            } else {
                "fail"
            }
        ));
    }
    if !j.fixed.is_empty() {
        out.push_str(&format!("; {} fixed", j.fixed.len()));
    }
    out
}

/// What the next session reads first (`.ralph/gate-failed.md`) when what
/// fails anew blocks COMPLETE: that, what may stay failing, and the last
/// lines of each command that failed.
pub fn feedback(v: &Verdict, j: &Judged) -> String {
    let mut s = String::from("# The completion gate failed\n\n");
    s.push_str(&format!(
        "At {}, ralph ran the project's own checks and compared them with how they ran \
         before this run's first session. What fails anew blocks COMPLETE: fix it first, \
         before the next step, run the checks yourself to see it pass, and commit. ralph \
         removes this file once nothing fails anew.\n\n",
        v.time
    ));
    for b in &j.blocking {
        s.push_str(&format!("- {b}\n"));
    }
    if !j.still_failing.is_empty() {
        s.push_str(&format!(
            "\nFailing before the run, and not yours to fix for COMPLETE: {}.\n",
            j.still_failing.join(", ")
        ));
    }
    for r in v.ran.iter().filter(|r| !r.passed).take(3) {
        s.push_str(&format!(
            "\nThe last lines of `{}`:\n\n```text\n",
            r.command
        ));
        for l in r.tail.iter().rev().take(30).rev() {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str("```\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::checks::{Format, Status};

    fn results(tests: &[(&str, Status)]) -> Results {
        Results {
            format: Some(Format::Libtest),
            tests: tests.iter().map(|(k, s)| (k.to_string(), *s)).collect(),
        }
    }

    fn ran(cmd: &str, passed: bool, tests: Option<Results>) -> Ran {
        Ran {
            command: cmd.into(),
            passed,
            why: (!passed).then(|| "exit status 1".into()),
            tests,
            too_long: false,
            tail: Vec::new(),
        }
    }

    fn verdict(ran: Vec<Ran>) -> Verdict {
        Verdict {
            passed: ran.iter().all(|r| r.passed),
            failed: None,
            why: None,
            time: String::new(),
            duration_s: 0.0,
            log: None,
            tail: Vec::new(),
            interrupted: false,
            ran,
        }
    }

    use Status::{Failed as F, Passed as P, Skipped as S};

    /// Row by row: the baseline's command, now's, and what that comes to
    /// (blocking, still failing, fixed).
    #[test]
    fn only_what_fails_anew_blocks_row_by_row() {
        type Row = (
            &'static str,
            Ran,
            Ran,
            bool,
            Vec<&'static str>,
            Vec<&'static str>,
        );
        let t = |v: &[(&str, Status)]| Some(results(v));
        let rows: Vec<Row> = vec![
            (
                "an old failure still failing, the rest passing",
                ran("cargo test", false, t(&[("a", F), ("b", P)])),
                ran("cargo test", false, t(&[("a", F), ("b", P)])),
                true,
                vec!["a"],
                vec![],
            ),
            (
                "fixed",
                ran("cargo test", false, t(&[("a", F), ("b", P)])),
                ran("cargo test", true, t(&[("a", P), ("b", P)])),
                true,
                vec![],
                vec!["a"],
            ),
            (
                "a test that passed fails",
                ran("cargo test", false, t(&[("a", F), ("b", P)])),
                ran("cargo test", false, t(&[("a", F), ("b", F)])),
                false,
                vec!["a"],
                vec![],
            ),
            (
                "a test gone",
                ran("cargo test", false, t(&[("a", F), ("b", P)])),
                ran("cargo test", false, t(&[("a", F)])),
                false,
                vec!["a"],
                vec![],
            ),
            (
                "a test newly skipped",
                ran("cargo test", false, t(&[("a", F), ("b", P)])),
                ran("cargo test", false, t(&[("a", F), ("b", S)])),
                false,
                vec!["a"],
                vec![],
            ),
            (
                "it no longer builds: no test failing, the command fails",
                ran("cargo test", false, t(&[("a", F), ("b", P)])),
                ran("cargo test", false, None),
                false,
                vec![],
                vec![],
            ),
            (
                "every test passes yet the command fails (a step after the tests)",
                ran("cargo test", false, t(&[("a", F), ("b", P)])),
                ran("cargo test", false, t(&[("a", P), ("b", P)])),
                false,
                vec![],
                vec!["a"],
            ),
            (
                "read per command: failing before and still",
                ran("make lint", false, None),
                ran("make lint", false, None),
                true,
                vec!["`make lint`"],
                vec![],
            ),
            (
                "read per command: passing before, failing now",
                ran("make lint", true, None),
                ran("make lint", false, None),
                false,
                vec![],
                vec![],
            ),
            (
                "read per command: fixed",
                ran("make lint", false, None),
                ran("make lint", true, None),
                true,
                vec![],
                vec!["`make lint`"],
            ),
        ];
        for (what, before, now, passed, still, fixed) in rows {
            let j = judge(&verdict(vec![before]), &verdict(vec![now]));
            assert_eq!(j.passed, passed, "{what}: {j:?}");
            assert_eq!(j.passed, j.blocking.is_empty(), "{what}");
            assert_eq!(j.still_failing, still, "{what}");
            assert_eq!(j.fixed, fixed, "{what}");
        }
    }

    /// A command that timed out before the run (a cold build) failed for
    /// no reason of its checks: it must pass, read per test or not.
    #[test]
    fn a_command_that_timed_out_before_the_run_must_pass() {
        let mut slow = ran("cargo test", false, None);
        slow.why = Some("timed out after 20m".into());
        let base = verdict(vec![slow.clone()]);
        assert!(failing(&base).is_empty());
        let broken = ran("cargo test", false, Some(results(&[("a", F), ("b", P)])));
        let j = judge(&base, &verdict(vec![broken]));
        assert_eq!(j.blocking, ["`cargo test` failed (exit status 1)"]);
        assert!(j.still_failing.is_empty(), "{j:?}");
        assert!(!judge(&base, &verdict(vec![slow])).passed);
        assert!(judge(&base, &verdict(vec![ran("cargo test", true, None)])).passed);
    }

    #[test]
    fn what_blocks_is_said_with_its_command() {
        let base = verdict(vec![ran("cargo test", false, Some(results(&[("a", F)])))]);
        let now = verdict(vec![
            ran("cargo test", false, Some(results(&[("a", F), ("c", F)]))),
            ran("cargo clippy", false, None),
        ]);
        let j = judge(&base, &now);
        assert_eq!(
            j.blocking,
            [
                "c fails (`cargo test`)",
                "`cargo clippy` failed (exit status 1)"
            ]
        );
        // A baseline command that did not run now has not passed.
        let j = judge(&base, &verdict(Vec::new()));
        assert_eq!(j.blocking, ["`cargo test` did not run"]);
        // Read per test before, not now: judged by its exit status, said.
        let j = judge(&base, &verdict(vec![ran("cargo test", true, None)]));
        assert!(j.passed && j.per_command == ["cargo test"], "{j:?}");
    }

    #[test]
    fn what_the_run_did_to_old_failures_is_said_in_words_and_in_counts() {
        let j = Judged {
            passed: true,
            still_failing: vec!["a".into(), "b\x1b[2J".into()],
            fixed: vec!["c".into()],
            ..Judged::default()
        };
        assert_eq!(
            said(&j),
            "; failing before the run, and still: a, b^[[2J; fixed by the run: c"
        );
        assert_eq!(
            counted(&j),
            "; 2 checks that failed before the run still fail; 1 fixed"
        );
        assert_eq!(said(&Judged::default()), "");
        let many = Judged {
            still_failing: (0..12).map(|i| format!("t{i}")).collect(),
            ..Judged::default()
        };
        assert!(said(&many).ends_with("t9, and 2 more"), "{}", said(&many));
    }

    #[test]
    fn the_baseline_says_its_failures_by_test_else_by_command() {
        let base = verdict(vec![
            ran("cargo test", false, Some(results(&[("a", F), ("b", P)]))),
            ran("make lint", false, None),
            ran("npm test", false, Some(results(&[("x", P)]))),
            ran("true", true, None),
        ]);
        assert_eq!(failing(&base), ["a", "`make lint`", "`npm test`"]);
    }
}
