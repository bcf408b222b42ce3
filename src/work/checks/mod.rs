//! Per-test results read from the gate's check commands (their output, or a
//! report file they wrote), and what a run did to them since a baseline.
//!
//! Pure: text in, results out. Test ids, one per format:
//! - libtest (text or JSON): `binary::module::test`, where `binary` is the
//!   test binary's name as cargo's `Running ... (target/.../NAME-HASH)` or
//!   `Doc-tests NAME` line gives it (no prefix when the binary ran alone);
//!   ` - should panic` is left out so that adding the attribute keeps the id.
//! - `go test -json`: `pkg/path.TestName`, subtests `pkg/path.TestX/sub`; the
//!   package itself as `pkg/path` (a build failure fails only that).
//! - pytest: its node ids, `tests/test_a.py::test_b[param]`.
//! - TAP: the description (the number when there is none), a subtest's
//!   preceded by its parents', joined with ` > `.
//! - JUnit XML: `classname::name` (the suite's name when there is no class).
//! - Jest / Vitest JSON: `file::describe > test`, the file as the report
//!   names it (an absolute path, stable while the project does not move).

mod gojson;
mod jest;
mod junit;
mod libtest;
mod pytest;
mod tap;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Ordered so that the worst wins where a test is seen twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Passed,
    Skipped,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Libtest,
    LibtestJson,
    GoJson,
    Pytest,
    Tap,
    Junit,
    JestJson,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Results {
    pub format: Option<Format>,
    pub tests: BTreeMap<String, Status>,
}

impl Results {
    fn new(format: Format) -> Results {
        Results {
            format: Some(format),
            tests: BTreeMap::new(),
        }
    }

    /// Records a result; a test seen twice (a retry, a setup and a teardown
    /// error) keeps its worst.
    fn add(&mut self, id: String, status: Status) {
        self.tests
            .entry(id)
            .and_modify(|s| *s = (*s).max(status))
            .or_insert(status);
    }

    fn found(self) -> Option<Results> {
        (!self.tests.is_empty()).then_some(self)
    }
}

/// Per-test results read from a command's output (stdout and stderr
/// together, as the gate log has them); None when no known format is found
/// in it.
///
/// Output that reads as more than one format (a script running cargo test
/// and then pytest, or a test printing another tool's output) is None too:
/// reading only one of them would let a new failure in the other pass
/// unseen. Such a gate is better split into one command per tool.
pub fn read(output: &str) -> Option<Results> {
    let found: Vec<Results> = [
        gojson::read(output),
        libtest::read_json(output),
        libtest::read_text(output),
        pytest::read(output),
        tap::read(output),
        jest::read_output(output),
    ]
    .into_iter()
    .flatten()
    .collect();
    match <[Results; 1]>::try_from(found) {
        Ok([one]) => Some(one),
        Err(_) => None,
    }
}

/// From a report file's text (JUnit XML from cargo-nextest / pytest
/// --junitxml / jest-junit / vitest; Jest or Vitest `--json` output).
pub fn read_report(text: &str) -> Option<Results> {
    let start = text.trim_start();
    if start.starts_with('<') {
        junit::read(text)
    } else if start.starts_with('{') {
        jest::read(text)
    } else {
        None
    }
}

/// What the run did to the checks, from the baseline's results to now's.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Compared {
    /// Failing now, and not failing at the baseline (or not there at all).
    pub new_failures: Vec<String>,
    pub still_failing: Vec<String>,
    pub fixed: Vec<String>,
    /// Passed or failed at the baseline, not run now: a deleted test must
    /// not read as a fixed one.
    pub missing: Vec<String>,
    /// Passed at the baseline, skipped now.
    pub newly_skipped: Vec<String>,
}

impl Compared {
    /// Whether the run made the checks worse.
    pub fn blocks(&self) -> bool {
        !(self.new_failures.is_empty() && self.missing.is_empty() && self.newly_skipped.is_empty())
    }
}

pub fn compare(before: &Results, after: &Results) -> Compared {
    use Status::*;
    let mut c = Compared::default();
    // Both maps are ordered, so every list comes out sorted.
    for (id, now) in &after.tests {
        let list = match (before.tests.get(id), now) {
            (Some(Failed), Failed) => &mut c.still_failing,
            (_, Failed) => &mut c.new_failures,
            (Some(Failed), Passed) => &mut c.fixed,
            (Some(Passed), Skipped) => &mut c.newly_skipped,
            _ => continue,
        };
        list.push(id.clone());
    }
    for (id, was) in &before.tests {
        if *was != Skipped && !after.tests.contains_key(id) {
            c.missing.push(id.clone());
        }
    }
    c
}

/// Lines without their ending, `\r\n` too (logs written on Windows).
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// A reader's results as (id, status) rows, in order, for its tests.
#[cfg(test)]
fn listed(r: &Results) -> Vec<(&str, Status)> {
    r.tests.iter().map(|(k, v)| (k.as_str(), *v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Status::*;

    fn results(tests: &[(&str, Status)]) -> Results {
        let mut r = Results::new(Format::Libtest);
        for (id, s) in tests {
            r.add(id.to_string(), *s);
        }
        r
    }

    #[test]
    fn compare_row_by_row() {
        // (row, before, after, which list the test lands in, blocks)
        type Row = (
            &'static str,
            Option<Status>,
            Option<Status>,
            &'static str,
            bool,
        );
        let rows: Vec<Row> = vec![
            (
                "passing stays passing",
                Some(Passed),
                Some(Passed),
                "",
                false,
            ),
            (
                "passing now failing",
                Some(Passed),
                Some(Failed),
                "new",
                true,
            ),
            ("new test failing", None, Some(Failed), "new", true),
            ("new test passing", None, Some(Passed), "", false),
            ("new test skipped", None, Some(Skipped), "", false),
            (
                "failing both times",
                Some(Failed),
                Some(Failed),
                "still",
                false,
            ),
            (
                "failing then passing",
                Some(Failed),
                Some(Passed),
                "fixed",
                false,
            ),
            (
                "failing then skipped",
                Some(Failed),
                Some(Skipped),
                "",
                false,
            ),
            ("passed then gone", Some(Passed), None, "missing", true),
            ("failed then gone", Some(Failed), None, "missing", true),
            ("skipped then gone", Some(Skipped), None, "", false),
            (
                "passed then skipped",
                Some(Passed),
                Some(Skipped),
                "skipped",
                true,
            ),
            (
                "skipped both times",
                Some(Skipped),
                Some(Skipped),
                "",
                false,
            ),
            (
                "skipped then passing",
                Some(Skipped),
                Some(Passed),
                "",
                false,
            ),
            (
                "skipped then failing",
                Some(Skipped),
                Some(Failed),
                "new",
                true,
            ),
        ];
        for (row, before, after, list, blocks) in rows {
            let b = results(&before.map(|s| vec![("t", s)]).unwrap_or_default());
            let a = results(&after.map(|s| vec![("t", s)]).unwrap_or_default());
            let c = compare(&b, &a);
            let t = vec!["t".to_string()];
            let none: Vec<String> = vec![];
            let pick = |name: &str| if name == list { &t } else { &none };
            let want = Compared {
                new_failures: pick("new").clone(),
                still_failing: pick("still").clone(),
                fixed: pick("fixed").clone(),
                missing: pick("missing").clone(),
                newly_skipped: pick("skipped").clone(),
            };
            assert_eq!(c, want, "{row}");
            assert_eq!(c.blocks(), blocks, "{row}");
        }
    }

    #[test]
    fn compare_sorts_each_list() {
        let before = results(&[("b", Passed), ("a", Passed), ("z", Failed), ("y", Failed)]);
        let after = results(&[("b", Failed), ("a", Failed), ("c", Failed)]);
        let c = compare(&before, &after);
        assert_eq!(c.new_failures, ["a", "b", "c"]);
        assert_eq!(c.missing, ["y", "z"]);
    }

    #[test]
    fn a_test_seen_twice_keeps_its_worst() {
        let r = results(&[
            ("a", Failed),
            ("a", Passed),
            ("b", Passed),
            ("b", Skipped),
            ("c", Skipped),
            ("c", Passed),
        ]);
        assert_eq!(r.tests["a"], Failed);
        assert_eq!(r.tests["b"], Skipped);
        assert_eq!(r.tests["c"], Skipped);
    }

    #[test]
    fn status_and_format_serialize_kebab_case() {
        let r = results(&[("a", Failed)]);
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, r#"{"format":"libtest","tests":{"a":"failed"}}"#);
        assert_eq!(
            serde_json::to_string(&Format::LibtestJson).unwrap(),
            "\"libtest-json\""
        );
        let back: Results = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn output_with_no_test_results_reads_as_none() {
        assert_eq!(read(""), None);
        assert_eq!(
            read("error: could not compile `x`\nmake: *** [check] Error 1\n"),
            None
        );
        assert_eq!(read_report("not a report"), None);
    }

    #[test]
    fn output_of_two_tools_reads_as_none() {
        let both = format!(
            "{}\n{}",
            include_str!("../../../tests/fixtures/checks/libtest.txt"),
            include_str!("../../../tests/fixtures/checks/node-tap.txt")
        );
        assert!(read(include_str!("../../../tests/fixtures/checks/libtest.txt")).is_some());
        assert_eq!(read(&both), None);
    }

    #[test]
    fn a_few_megabytes_of_awkward_output_read_in_linear_time() {
        let n = 40_000;
        let mut libtest = format!("running {n} tests\n");
        for i in 0..n {
            libtest.push_str(&format!("test t{i} ... FAILED\n"));
        }
        for _ in 0..n / 100 {
            libtest.push_str("failures:\n");
            for i in 0..100 {
                libtest.push_str(&format!("    t{i}\n"));
            }
            libtest.push_str("test result: FAILED.\n");
        }
        let mut tap = String::from("TAP version 14\n");
        for i in 0..n {
            let depth = i % 70;
            tap.push_str(&format!("{}not ok {i} - t{i}\n", " ".repeat(4 * depth)));
        }
        let pytest = format!(
            "=== test session starts ===\n{}",
            format!("t.py::x{} FAILED\n", " PASSED x".repeat(50)).repeat(n / 10)
        );
        let go = "{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"T\"}\n".repeat(n)
            + "{\"Action\":\"fail\",\"Package\":\"p\",\"Test\":\"T\"}";
        for (name, text) in [
            ("libtest", libtest),
            ("tap", tap),
            ("pytest", pytest),
            ("go", go),
        ] {
            let started = std::time::Instant::now();
            let r = read(&text);
            let took = started.elapsed();
            assert!(r.is_some(), "{name}");
            // Quadratic work on these sizes would take minutes, not seconds.
            assert!(
                took.as_secs() < 10,
                "{name}: {} bytes took {took:?}",
                text.len()
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_reads_without_panic(s in "\\PC*") {
            let _ = read(&s);
            let _ = read_report(&s);
        }

        // Fragments of every format, shuffled: reaches the readers' inner
        // states, which random text almost never does.
        #[test]
        fn format_fragments_read_without_panic(
            parts in proptest::collection::vec(proptest::sample::select(FRAGMENTS), 0..40)
        ) {
            let s = parts.concat();
            let _ = read(&s);
            let _ = read_report(&s);
        }
    }

    const FRAGMENTS: &[&str] = &[
        "running 2 tests\n",
        "running x tests\n",
        "test a ... ok\n",
        "test b ... FAILED\n",
        "test  ... \n",
        "failures:\n",
        "    b\n",
        "\n",
        "test result: FAILED.\n",
        "     Running tests/it.rs (target/debug/deps/it-0123456789abcdef)\n",
        "     Running (\n",
        "   Doc-tests \n",
        "{ \"type\": \"test\", \"name\": \"a\", \"event\": \"failed\" }\n",
        "{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"T\"}\n",
        "{\"Action\":\"fail\",\"Package\":\"p\"}\n",
        "{\"numTotalTests\":1,\"testResults\":[{\"name\":\"f\",\"assertionResults\":[{}]}]}\n",
        "===== test session starts =====\n",
        "t.py::a PASSED  [ 50%]\n",
        "t.py::b FAILED\n",
        "== short test summary info ==\n",
        "FAILED t.py::b - x\n",
        "=== 1 failed, 1 passed in 0.1s ===\n",
        "TAP version 13\n",
        "1..2\n",
        "ok 1 - a # SKIP\n",
        "    not ok 1 - b\n",
        "  ---\n",
        "  ...\n",
        "not ok\n",
        "ok 2 - \\# \\\\\n",
        "é",
        "<testsuite name=\"s\"><testcase name=\"a\" classname=\"c\"><failure/></testcase>",
        "</testsuite>",
        "<skipped/>",
        "&amp;&lol;",
    ];
}
