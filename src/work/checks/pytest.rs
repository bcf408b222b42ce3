//! pytest's terminal output: the `-v` lines (`path::test PASSED [ 10%]`)
//! and the short summary (`-rA`: `FAILED path::test - message`).
//!
//! Read only where pytest itself writes them: `-v` lines between the
//! session's header and its first section, summary lines under the
//! `short test summary info` header, so a test's captured output (printed
//! in the sections between) forges nothing.

use super::{Format, Results, Status, lines};

const WORDS: [(&str, Status); 6] = [
    ("PASSED", Status::Passed),
    ("XPASS", Status::Passed),
    ("FAILED", Status::Failed),
    ("ERROR", Status::Failed),
    ("SKIPPED", Status::Skipped),
    // An expected failure hides one: a passing test marked xfail blocks as
    // a skipped one would.
    ("XFAIL", Status::Skipped),
];

enum State {
    Outside,
    Progress,
    Sections,
    Summary,
}

fn header(line: &str) -> bool {
    line.starts_with('=') && line.ends_with('=')
}

/// `tests/a.py::test_b[x] PASSED [ 10%]`, the `[ 10%]` and a ` (reason)`
/// optional.
fn verbose_line(line: &str) -> Option<(&str, Status)> {
    let line = match line.strip_suffix("%]").and_then(|l| l.rfind('[')) {
        Some(open) => &line[..open],
        None => line,
    }
    .trim_end();
    let mut best: Option<(usize, Status)> = None;
    for (word, status) in WORDS {
        for (at, _) in line.match_indices(word) {
            let before = at.checked_sub(1).map(|i| line.as_bytes()[i]);
            let after = &line[at + word.len()..];
            if before == Some(b' ') && (after.is_empty() || after.starts_with(" (")) {
                if best.is_none_or(|(b, _)| at < b) {
                    best = Some((at, status));
                }
                break;
            }
        }
    }
    let (at, status) = best?;
    let id = line[..at].trim_end();
    id.contains("::").then_some((id, status))
}

/// `FAILED tests/a.py::test_b - AssertionError`. Skips name no test (they
/// give a file and line), so they are left to the `-v` lines.
fn summary_line(line: &str) -> Option<(&str, Status)> {
    let (word, rest) = line.split_once(' ')?;
    let (_, status) = WORDS.iter().find(|(w, _)| *w == word && *w != "SKIPPED")?;
    let id = rest.split_once(" - ").map_or(rest, |(id, _)| id).trim();
    (!id.is_empty()).then_some((id, *status))
}

/// The count of passed tests in the closing line, `== 2 failed, 4 passed
/// in 0.03s ==`.
fn passed_count(line: &str) -> usize {
    line.trim_matches(|c| c == '=' || c == ' ')
        .split(", ")
        .filter_map(|part| {
            let mut words = part.split_whitespace();
            let n = words.next()?.parse::<usize>().ok()?;
            (words.next()? == "passed").then_some(n)
        })
        .sum()
}

pub(super) fn read(output: &str) -> Option<Results> {
    let mut results = Results::new(Format::Pytest);
    let mut state = State::Outside;
    // pytest without `-v` or `-rA` lists failures only: a fixed test would
    // then read as a missing one. Told by the closing line's count.
    let mut passed_listed = std::collections::HashSet::new();
    let mut passed_said = 0;
    for line in lines(output) {
        let is_header = header(line);
        if is_header && line.contains(" test session starts ") {
            state = State::Progress;
            continue;
        }
        if is_header && line.contains(" short test summary info ") {
            state = State::Summary;
            continue;
        }
        let read = match state {
            State::Outside | State::Sections => None,
            State::Progress if is_header => {
                state = State::Sections;
                None
            }
            State::Summary if is_header => {
                state = State::Outside;
                None
            }
            State::Progress => verbose_line(line),
            State::Summary => summary_line(line),
        };
        if is_header && line.contains(" in ") {
            passed_said += passed_count(line);
        }
        if let Some((id, status)) = read {
            // `XPASS` is counted apart (`1 xpassed`).
            let xpass = id.len() < line.len() && line[id.len()..].trim_start().starts_with("XPASS")
                || line.starts_with("XPASS ");
            if status == Status::Passed && !xpass {
                passed_listed.insert(id.to_string());
            }
            results.add(id.to_string(), status);
        }
    }
    if passed_listed.len() < passed_said {
        return None;
    }
    results.found()
}

#[cfg(test)]
mod tests {
    use super::super::listed as tests;
    use super::*;
    use Status::*;

    const ALL: [(&str, Status); 10] = [
        ("tests/test_calc.py::TestGroup::test_method", Passed),
        ("tests/test_calc.py::test_add", Passed),
        ("tests/test_calc.py::test_broken", Failed),
        ("tests/test_calc.py::test_error_in_setup", Failed),
        ("tests/test_calc.py::test_fixed_bug", Passed),
        ("tests/test_calc.py::test_known_bug", Skipped),
        ("tests/test_calc.py::test_param[1]", Passed),
        ("tests/test_calc.py::test_param[2]", Failed),
        ("tests/test_calc.py::test_param[a b]", Passed),
        ("tests/test_calc.py::test_skipped", Skipped),
    ];

    #[test]
    fn pytest_verbose() {
        let out = include_str!("../../../tests/fixtures/checks/pytest-v.txt");
        let r = super::super::read(out).expect("read");
        assert_eq!(r.format, Some(Format::Pytest));
        assert_eq!(tests(&r), ALL);
    }

    #[test]
    fn pytest_short_summary_of_all() {
        // `-rA` names no skipped test: its skip line gives a file and line.
        let out = include_str!("../../../tests/fixtures/checks/pytest-ra.txt");
        let r = super::super::read(out).expect("read");
        let want: Vec<_> = ALL
            .into_iter()
            .filter(|(id, _)| *id != "tests/test_calc.py::test_skipped")
            .collect();
        assert_eq!(tests(&r), want);
    }

    #[test]
    fn captured_output_forges_nothing() {
        // test_broken prints `tests/test_calc.py::test_add FAILED` and
        // `PASSED tests/test_calc.py::test_forged`.
        for out in [
            include_str!("../../../tests/fixtures/checks/pytest-v.txt"),
            include_str!("../../../tests/fixtures/checks/pytest-ra.txt"),
        ] {
            assert!(out.contains("PASSED tests/test_calc.py::test_forged"));
            let r = read(out).unwrap();
            assert_eq!(r.tests["tests/test_calc.py::test_add"], Passed);
            assert_eq!(r.tests.get("tests/test_calc.py::test_forged"), None);
        }
    }

    #[test]
    fn failures_alone_read_as_none() {
        // Plain `pytest`: passing tests are only counted, so a fixed test
        // could not be told from a removed one.
        let out = "\
============================= test session starts ==============================
collected 3 items

tests/test_a.py .F.                                                      [100%]

=========================== short test summary info ============================
FAILED tests/test_a.py::test_b - assert 1 == 2
========================= 1 failed, 2 passed in 0.02s ==========================
";
        assert_eq!(read(out), None);
    }

    #[test]
    fn all_failing_without_verbose_is_complete() {
        let out = "\
=========================== short test summary info ============================
FAILED tests/test_a.py::test_b - assert 1 == 2
ERROR tests/test_c.py - ImportError: no module named x
============================== 1 failed, 1 error in 0.02s ===============================
";
        let r = read(out).unwrap();
        assert_eq!(
            tests(&r),
            [
                ("tests/test_a.py::test_b", Failed),
                ("tests/test_c.py", Failed)
            ]
        );
    }

    #[test]
    fn verbose_lines() {
        let cases = [
            (
                "t.py::a PASSED                  [ 10%]",
                Some(("t.py::a", Passed)),
            ),
            (
                "t.py::a[x PASSED y] FAILED",
                Some(("t.py::a[x PASSED y]", Failed)),
            ),
            (
                "t.py::s SKIPPED (PASSED soon)    [ 60%]",
                Some(("t.py::s", Skipped)),
            ),
            ("t.py::k XFAIL (known bug)", Some(("t.py::k", Skipped))),
            ("t.py .F.", None),
            ("PASSED", None),
            ("no id PASSED", None),
        ];
        for (line, want) in cases {
            assert_eq!(verbose_line(line), want, "{line}");
        }
    }
}
