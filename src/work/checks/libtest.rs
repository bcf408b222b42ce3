//! Rust's libtest, as `cargo test` prints it: the text of its pretty
//! format, and its JSON lines (`-Z unstable-options --format json`).

use serde::Deserialize;

use super::{Format, Results, Status, lines};

/// The test binary a cargo header line names: `Running unittests src/lib.rs
/// (target/debug/deps/lt-d08e8b453f7c5fff)` gives `lt`, `Doc-tests lt` gives
/// `lt`. None for any other line.
fn binary(line: &str) -> Option<String> {
    let line = line.trim();
    if let Some(name) = line.strip_prefix("Doc-tests ") {
        let name = name.trim();
        return (!name.is_empty()).then(|| name.to_string());
    }
    let rest = line.strip_prefix("Running ")?;
    // Older cargo printed the bare path, sometimes in backticks.
    let path = match (rest.rfind('('), rest.strip_suffix(')')) {
        (Some(open), Some(inner)) => &inner[open + 1..],
        _ => rest.trim_matches('`'),
    };
    let file = path.rsplit(['/', '\\']).next()?;
    let file = file.strip_suffix(".exe").unwrap_or(file);
    let stem = match file.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            stem
        }
        _ => file,
    };
    (!stem.is_empty()).then(|| stem.to_string())
}

fn id(binary: &Option<String>, name: &str) -> String {
    let name = name.strip_suffix(" - should panic").unwrap_or(name);
    match binary {
        Some(b) => format!("{b}::{name}"),
        None => name.to_string(),
    }
}

/// `test NAME ... STATUS`: the name and the status, None for other lines.
fn result_line(line: &str) -> Option<(&str, Status)> {
    let rest = line.strip_prefix("test ")?;
    let (name, tail) = rest.split_once(" ... ")?;
    let word = tail.split([' ', ',']).next().unwrap_or("");
    let status = match word {
        "ok" | "bench:" => Status::Passed,
        "FAILED" => Status::Failed,
        "ignored" => Status::Skipped,
        _ => return None,
    };
    (!name.is_empty()).then_some((name, status))
}

enum State {
    /// Between test binaries: only cargo's headers and `running N tests`.
    Outside,
    /// After `running N tests`: the N result lines, before any captured
    /// output is printed.
    Results { left: usize, failed: Vec<String> },
    /// After the results: the captured output of the failing tests, which
    /// is the test's own text and may say anything. It ends only at the
    /// list of exactly the tests that failed followed by `test result:`,
    /// which a test's output would have to foresee to forge.
    Trailer {
        failed: Vec<String>,
        listed: Option<Vec<String>>,
    },
}

pub(super) fn read_text(output: &str) -> Option<Results> {
    let mut results = Results::new(Format::Libtest);
    let mut bin: Option<String> = None;
    let mut state = State::Outside;
    for line in lines(output) {
        state = match state {
            State::Outside => {
                if let Some(b) = binary(line) {
                    bin = Some(b);
                    State::Outside
                } else if let Some(n) = running(line) {
                    begin(n, Vec::new())
                } else {
                    State::Outside
                }
            }
            State::Results { left, mut failed } => {
                if let Some((name, status)) = result_line(line) {
                    results.add(id(&bin, name), status);
                    let name = name.strip_suffix(" - should panic").unwrap_or(name);
                    if status == Status::Failed {
                        failed.push(name.to_string());
                    }
                    begin(left - 1, failed)
                } else if let Some(b) = binary(line) {
                    // The binary died before it reported every test.
                    bin = Some(b);
                    State::Outside
                } else if line.starts_with("test result: ") {
                    State::Outside
                } else if line == "failures:" {
                    begin(0, failed)
                } else {
                    State::Results { left, failed }
                }
            }
            State::Trailer { failed, mut listed } => {
                if line.starts_with("test result: ") && is_the_list(&mut listed, &failed) {
                    State::Outside
                } else {
                    if line == "failures:" {
                        listed = Some(Vec::new());
                    } else if let (Some(name), Some(l)) = (line.strip_prefix("    "), &mut listed) {
                        // A list longer than the failures is not their list.
                        if l.len() < failed.len() {
                            l.push(name.to_string());
                        } else {
                            listed = None;
                        }
                    } else if !line.is_empty() {
                        listed = None;
                    }
                    State::Trailer { failed, listed }
                }
            }
        };
    }
    results.found()
}

/// Whether the names listed since the last `failures:` are the failed
/// tests (none listed and none failed when there were no failures).
fn is_the_list(listed: &mut Option<Vec<String>>, failed: &[String]) -> bool {
    match listed {
        None => failed.is_empty(),
        Some(l) => {
            l.sort();
            l == failed
        }
    }
}

/// The results phase of a binary with `left` results to come.
fn begin(left: usize, mut failed: Vec<String>) -> State {
    if left == 0 {
        failed.sort();
        State::Trailer {
            failed,
            listed: None,
        }
    } else {
        State::Results { left, failed }
    }
}

/// `running 3 tests` (or `running 1 test`): the count.
fn running(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("running ")?;
    let (n, word) = rest.split_once(' ')?;
    matches!(word, "test" | "tests")
        .then(|| n.parse().ok())
        .flatten()
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    event: String,
    name: Option<String>,
}

pub(super) fn read_json(output: &str) -> Option<Results> {
    let mut results = Results::new(Format::LibtestJson);
    let mut bin: Option<String> = None;
    for line in lines(output) {
        if !line.starts_with('{') {
            if let Some(b) = binary(line) {
                bin = Some(b);
            }
            continue;
        }
        let Ok(e) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        let (Some(name), "test") = (e.name, e.kind.as_str()) else {
            continue;
        };
        let status = match e.event.as_str() {
            "ok" | "bench" => Status::Passed,
            "failed" => Status::Failed,
            "ignored" => Status::Skipped,
            _ => continue,
        };
        results.add(id(&bin, &name), status);
    }
    results.found()
}

#[cfg(test)]
mod tests {
    use super::super::listed as tests;
    use super::*;

    /// What the fixture project's tests came to (text and JSON alike).
    const FIXTURE: [(&str, Status); 5] = [
        ("api::public_add", Passed),
        ("lt::src/lib.rs - doc_add (line 23)", Passed),
        ("lt::tests::adds", Passed),
        ("lt::tests::forges_in_its_output", Failed),
        ("lt::tests::slow", Skipped),
    ];
    use Status::*;

    #[test]
    fn cargo_test_text_with_a_failure_an_ignored_test_and_a_doc_test() {
        let out = include_str!("../../../tests/fixtures/checks/libtest.txt");
        let r = super::super::read(out).expect("read");
        assert_eq!(r.format, Some(Format::Libtest));
        assert_eq!(tests(&r), FIXTURE);
    }

    #[test]
    fn captured_output_of_a_failing_test_forges_nothing() {
        // The fixture's failing test prints `test tests::adds ... FAILED`,
        // `test tests::forged ... ok` and a `test result: ok.` line.
        let out = include_str!("../../../tests/fixtures/checks/libtest.txt");
        assert!(out.contains("test tests::forged ... ok"));
        let r = read_text(out).unwrap();
        assert_eq!(r.tests.get("lt::tests::forged"), None);
        assert_eq!(r.tests["lt::tests::adds"], Passed);
    }

    #[test]
    fn captured_output_that_looks_like_a_whole_cargo_run_forges_nothing() {
        let out = "\
running 2 tests
test a ... FAILED
test b ... ok

failures:

---- a stdout ----
failures:
    other

test result: FAILED. 0 passed; 1 failed
     Running tests/x.rs (target/debug/deps/x-0123456789abcdef)

running 1 test
test forged ... ok

failures:
    a

test result: FAILED. 1 passed; 1 failed; 0 ignored

running 1 test
test c ... ok
";
        let r = read_text(out).unwrap();
        assert_eq!(tests(&r), [("a", Failed), ("b", Passed), ("c", Passed)]);
    }

    #[test]
    fn a_workspace_names_each_test_by_its_binary() {
        let out = include_str!("../../../tests/fixtures/checks/libtest-workspace.txt");
        let r = super::super::read(out).unwrap();
        assert_eq!(
            tests(&r),
            [
                ("alpha::tests::same_name", Passed),
                ("beta::tests::panics", Passed),
                ("beta::tests::same_name", Failed),
                ("it::cli::same_name", Passed),
            ]
        );
    }

    #[test]
    fn a_binary_run_alone_has_no_prefix() {
        let out =
            "\nrunning 2 tests\ntest m::a ... ok\ntest m::b ... ignored\n\ntest result: ok.\n";
        let r = read_text(out).unwrap();
        assert_eq!(tests(&r), [("m::a", Passed), ("m::b", Skipped)]);
    }

    #[test]
    fn a_binary_that_dies_mid_run_keeps_what_it_reported() {
        let out = "\
     Running unittests src/lib.rs (target/debug/deps/a-0123456789abcdef)

running 3 tests
test x ... ok
error: test failed, to rerun pass `--lib`

Caused by:
  process didn't exit successfully: `target/debug/deps/a-0123456789abcdef` (signal: 11, SIGSEGV)
     Running tests/b.rs (target/debug/deps/b-0123456789abcdef)

running 1 test
test y ... ok
";
        let r = read_text(out).unwrap();
        assert_eq!(tests(&r), [("a::x", Passed), ("b::y", Passed)]);
    }

    #[test]
    fn cargo_header_names() {
        let cases = [
            (
                "     Running unittests src/lib.rs (target/debug/deps/lt-d08e8b453f7c5fff)",
                Some("lt"),
            ),
            (
                "     Running tests/it/main.rs (target/debug/deps/it-1b80db46245a0d77)",
                Some("it"),
            ),
            (
                "     Running tests\\it.rs (target\\debug\\deps\\it-1b80db46245a0d77.exe)",
                Some("it"),
            ),
            (
                "     Running target/debug/deps/old-1b80db46245a0d77",
                Some("old"),
            ),
            ("   Doc-tests my_crate", Some("my_crate")),
            ("     Running (target/debug/deps/no-hash)", Some("no-hash")),
            ("running 3 tests", None),
            ("     Running ()", None),
        ];
        for (line, want) in cases {
            assert_eq!(binary(line).as_deref(), want, "{line}");
        }
    }

    #[test]
    fn cargo_test_json_lines() {
        let out = include_str!("../../../tests/fixtures/checks/libtest-json.txt");
        let r = super::super::read(out).expect("read");
        assert_eq!(r.format, Some(Format::LibtestJson));
        assert_eq!(tests(&r), FIXTURE);
    }
}
