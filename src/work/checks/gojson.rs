//! `go test -json`: one event per line.

use std::collections::HashSet;

use serde::Deserialize;

use super::{Format, Results, Status, lines};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Package")]
    package: Option<String>,
    #[serde(rename = "Test")]
    test: Option<String>,
}

pub(super) fn read(output: &str) -> Option<Results> {
    let mut results = Results::new(Format::GoJson);
    // Before Go 1.20, test2json took a test's own `--- PASS: X` line for a
    // result, inventing a test that never ran: only a test that had a `run`
    // event counts.
    let mut ran: HashSet<String> = HashSet::new();
    for line in lines(output) {
        if !line.starts_with('{') {
            continue;
        }
        let Ok(e) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        let Some(package) = e.package else {
            continue;
        };
        let id = match &e.test {
            Some(test) => format!("{package}.{test}"),
            None => package,
        };
        let status = match e.action.as_str() {
            "run" => {
                ran.insert(id);
                continue;
            }
            "pass" => Status::Passed,
            "fail" => Status::Failed,
            "skip" => Status::Skipped,
            _ => continue,
        };
        if e.test.is_some() && !ran.contains(&id) {
            continue;
        }
        results.add(id, status);
    }
    results.found()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Status::*;

    #[test]
    fn go_test_json_with_a_skip_a_failure_and_subtests() {
        let out = include_str!("../../../tests/fixtures/checks/go-json.txt");
        let r = super::super::read(out).expect("read");
        assert_eq!(r.format, Some(Format::GoJson));
        let got: Vec<(&str, Status)> = r.tests.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            got,
            [
                ("example.com/gomod/calc", Failed),
                ("example.com/gomod/calc.TestAdd", Passed),
                ("example.com/gomod/calc.TestBroken", Failed),
                ("example.com/gomod/calc.TestSkipped", Skipped),
                ("example.com/gomod/calc.TestTable", Failed),
                ("example.com/gomod/calc.TestTable/big_one", Failed),
                ("example.com/gomod/calc.TestTable/small", Passed),
                ("example.com/gomod/util", Passed),
                ("example.com/gomod/util.TestAdd", Passed),
            ]
        );
    }

    #[test]
    fn a_tests_output_forges_no_result() {
        // TestBroken prints `--- PASS: TestForged`, which this Go's
        // test2json turned into a pass event for a test that never ran.
        let out = include_str!("../../../tests/fixtures/checks/go-json.txt");
        assert!(
            out.contains(
                r#""Action":"pass","Package":"example.com/gomod/calc","Test":"TestForged""#
            )
        );
        let r = read(out).unwrap();
        assert_eq!(r.tests.get("example.com/gomod/calc.TestForged"), None);
    }

    #[test]
    fn a_package_that_does_not_build_fails_as_a_package() {
        let out = "\
# example.com/m/broken
broken/b_test.go:3:1: syntax error: non-declaration statement outside function body
{\"Time\":\"2024-01-01T00:00:00Z\",\"Action\":\"output\",\"Package\":\"example.com/m/broken\",\"Output\":\"FAIL\\texample.com/m/broken [build failed]\\n\"}
{\"Time\":\"2024-01-01T00:00:00Z\",\"Action\":\"fail\",\"Package\":\"example.com/m/broken\",\"Elapsed\":0}
";
        let r = read(out).unwrap();
        assert_eq!(r.tests.len(), 1);
        assert_eq!(r.tests["example.com/m/broken"], Failed);
    }
}
