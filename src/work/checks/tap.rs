//! TAP 13/14, as `node --test` writes it when not at a terminal: subtests
//! indented four spaces a level, each closed by its parent's own line.

use super::{Format, Results, Status, lines};

/// Deeper subtests are left out: none is written by hand, and the cap keeps
/// the joining of names linear.
const MAX_DEPTH: usize = 64;

struct Line<'a> {
    status: Status,
    number: Option<&'a str>,
    description: String,
}

/// `ok 3 - name # SKIP reason`, `not ok 4`, None for other lines.
fn result_line(content: &str) -> Option<Line<'_>> {
    let (failed, rest) = if let Some(r) = content.strip_prefix("not ok") {
        (true, r)
    } else {
        (false, content.strip_prefix("ok")?)
    };
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let rest = rest.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let number = (digits > 0).then(|| &rest[..digits]);
    let rest = rest[digits..].trim_start();
    let rest = rest
        .strip_prefix("- ")
        .or(rest.strip_prefix('-'))
        .unwrap_or(rest);
    // The description ends at the first `#` not escaped as `\#`.
    let mut description = String::new();
    let mut directive = "";
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, e @ ('#' | '\\'))) => description.push(e),
                Some((_, e)) => {
                    description.push('\\');
                    description.push(e);
                }
                None => description.push('\\'),
            },
            '#' => {
                directive = rest[i + 1..].trim_start();
                break;
            }
            c => description.push(c),
        }
    }
    let directive = directive.get(..4).unwrap_or("").to_ascii_lowercase();
    let status = if directive == "skip" || directive == "todo" {
        Status::Skipped
    } else if failed {
        Status::Failed
    } else {
        Status::Passed
    };
    Some(Line {
        status,
        number,
        description: description.trim().to_string(),
    })
}

pub(super) fn read(output: &str) -> Option<Results> {
    let mut results = Results::new(Format::Tap);
    let mut is_tap = false;
    // Finished subtests at each depth, waiting for their parent's line.
    let mut pending: Vec<Vec<(String, Status)>> = vec![Vec::new(); MAX_DEPTH + 1];
    let mut counts = [0usize; MAX_DEPTH + 1];
    let mut yaml: Option<usize> = None;
    for line in lines(output) {
        let content = line.trim_start_matches(' ');
        let indent = line.len() - content.len();
        if let Some(at) = yaml {
            // A diagnostic block holds a test's messages, any text at all.
            if content == "..." && indent <= at {
                yaml = None;
            }
            continue;
        }
        if content == "---" {
            yaml = Some(indent);
            continue;
        }
        let depth = indent / 4;
        if depth > MAX_DEPTH {
            continue;
        }
        if depth == 0 && (content.starts_with("TAP version ") || plan(content)) {
            is_tap = true;
            continue;
        }
        let Some(l) = result_line(content) else {
            continue;
        };
        counts[depth] += 1;
        let name = if !l.description.is_empty() {
            l.description
        } else {
            l.number
                .map_or_else(|| counts[depth].to_string(), str::to_string)
        };
        let mut here = Vec::new();
        for deeper in depth + 1..=MAX_DEPTH {
            counts[deeper] = 0;
            for (id, status) in pending[deeper].drain(..) {
                here.push((format!("{name} > {id}"), status));
            }
        }
        here.push((name, l.status));
        if depth == 0 {
            for (id, status) in here {
                results.add(id, status);
            }
        } else {
            pending[depth].extend(here);
        }
    }
    // Subtests whose parent never reported (a run cut short) keep the path
    // they have.
    for (id, status) in pending.into_iter().flatten() {
        results.add(id, status);
    }
    if !is_tap {
        return None;
    }
    results.found()
}

fn plan(content: &str) -> bool {
    content
        .strip_prefix("1..")
        .and_then(|n| n.split_whitespace().next())
        .is_some_and(|n| n.parse::<u64>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::super::listed as tests;
    use super::*;
    use Status::*;

    #[test]
    fn node_test_runner_tap_with_skip_todo_and_nested_suites() {
        let out = include_str!("../../../tests/fixtures/checks/node-tap.txt");
        let r = super::super::read(out).expect("read");
        assert_eq!(r.format, Some(Format::Tap));
        assert_eq!(
            tests(&r),
            [
                ("adds", Passed),
                ("broken", Failed),
                ("group", Failed),
                ("group > deeper", Failed),
                ("group > deeper > fails # with hash", Failed),
                ("group > inner passes", Passed),
                ("group > inner skipped", Skipped),
                ("later", Skipped),
                ("skipped", Skipped),
            ]
        );
    }

    #[test]
    fn a_tests_console_output_forges_nothing() {
        // `broken` logs `ok 1 - forged` and `not ok 2 - adds`: node prints
        // them as `#` comments.
        let out = include_str!("../../../tests/fixtures/checks/node-tap.txt");
        let r = read(out).unwrap();
        assert_eq!(r.tests.get("forged"), None);
        assert_eq!(r.tests["adds"], Passed);
    }

    #[test]
    fn generic_tap_without_descriptions_or_subtest_headers() {
        let out = "\
TAP version 14
1..4
ok 1
not ok 2 # TODO not written
    ok 1 - child
    not ok 2 - other child
      ---
      message: |
        ok 9 - from a message
        not ok 10 - nor this
      ...
    1..2
not ok 3 - parent
ok 4 - slow # skip
Bail out! done
";
        let r = read(out).unwrap();
        assert_eq!(
            tests(&r),
            [
                ("1", Passed),
                ("2", Skipped),
                ("parent", Failed),
                ("parent > child", Passed),
                ("parent > other child", Failed),
                ("slow", Skipped),
            ]
        );
    }

    #[test]
    fn ok_lines_without_a_version_or_plan_are_not_tap() {
        assert_eq!(read("ok 1 - something\nnot ok 2 - else\n"), None);
    }
}
