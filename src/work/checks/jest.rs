//! Jest's `--json` result (Vitest's json reporter writes the same shape):
//! `testResults[]` per file, `assertionResults[]` per test.

use serde::Deserialize;

use super::{Format, Results, Status, lines};

#[derive(Deserialize)]
struct Report {
    #[serde(rename = "testResults")]
    test_results: Vec<File>,
}

#[derive(Deserialize)]
struct File {
    name: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(rename = "assertionResults", default)]
    assertion_results: Vec<Assertion>,
}

#[derive(Deserialize)]
struct Assertion {
    #[serde(rename = "ancestorTitles", default)]
    ancestor_titles: Vec<String>,
    title: Option<String>,
    #[serde(rename = "fullName")]
    full_name: Option<String>,
    status: String,
}

fn status(s: &str) -> Status {
    match s {
        "passed" => Status::Passed,
        "failed" => Status::Failed,
        // pending, skipped, todo, disabled
        _ => Status::Skipped,
    }
}

pub(super) fn read(text: &str) -> Option<Results> {
    let report: Report = serde_json::from_str(text).ok()?;
    let mut results = Results::new(Format::JestJson);
    for file in report.test_results {
        // The file itself too: one that does not load has no tests to fail.
        if let Some(s) = &file.status {
            results.add(file.name.clone(), status(s));
        }
        for a in file.assertion_results {
            let name = match a.title {
                Some(title) => {
                    let mut path = a.ancestor_titles;
                    path.push(title);
                    path.join(" > ")
                }
                None => a.full_name.unwrap_or_default(),
            };
            results.add(format!("{}::{name}", file.name), status(&a.status));
        }
    }
    results.found()
}

/// `jest --json` writes its report as one line of standard output.
pub(super) fn read_output(output: &str) -> Option<Results> {
    lines(output)
        .filter(|l| l.starts_with('{') && l.contains("\"testResults\""))
        .find_map(read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Status::*;

    const FILE: &str = "/tmp/h-checks-fx/js/__tests__/calc.test.js";

    fn want() -> Vec<(String, Status)> {
        [
            ("", Failed),
            ("::calc > adds", Passed),
            ("::calc > broken", Failed),
            ("::calc > later", Skipped),
            ("::calc > nested > deep & \"quoted\"", Passed),
            ("::calc > skipped", Skipped),
            ("::top level", Passed),
        ]
        .into_iter()
        .map(|(id, s)| (format!("{FILE}{id}"), s))
        .collect()
    }

    #[test]
    fn jest_json_report() {
        let text = include_str!("../../../tests/fixtures/checks/jest.json");
        let r = super::super::read_report(text).expect("read");
        assert_eq!(r.format, Some(Format::JestJson));
        let got: Vec<(String, Status)> = r.tests.into_iter().collect();
        assert_eq!(got, want());
    }

    #[test]
    fn jest_json_on_standard_output_among_other_lines() {
        let out = format!(
            "  console.log\n    ✓ forged\n{}\nTest Suites: 1 failed, 1 total\n",
            include_str!("../../../tests/fixtures/checks/jest.json").trim()
        );
        let r = super::super::read(&out).expect("read");
        let got: Vec<(String, Status)> = r.tests.into_iter().collect();
        assert_eq!(got, want());
    }
}
