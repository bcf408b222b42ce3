//! JUnit XML, as cargo-nextest, pytest `--junitxml`, jest-junit and vitest
//! write it: `<testcase classname name>` holding `<failure>`, `<error>` or
//! `<skipped>` when it did not pass.
//!
//! No entity but XML's five and character references is expanded (a
//! document type's own entities stay as written), so a crafted report
//! cannot grow in memory.

use std::borrow::Cow;

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};

use super::{Format, Results, Status};

fn attr<'a>(e: &'a BytesStart<'a>, name: &str) -> Option<Cow<'a, str>> {
    let a = e
        .attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)?;
    Some(match a.normalized_value(XmlVersion::Implicit1_0) {
        Ok(v) => Cow::Owned(v.into_owned()),
        // An entity it does not know: the text as written.
        Err(_) => Cow::Owned(a.value.to_string()),
    })
}

fn testcase_id(e: &BytesStart<'_>, suites: &[String]) -> Option<String> {
    let name = attr(e, "name")?;
    let class = attr(e, "classname").filter(|c| !c.is_empty());
    let group = class
        .map(Cow::into_owned)
        .or_else(|| suites.last().cloned());
    Some(match group {
        Some(g) if !g.is_empty() => format!("{g}::{name}"),
        _ => name.into_owned(),
    })
}

pub(super) fn read(text: &str) -> Option<Results> {
    let mut results = Results::new(Format::Junit);
    let mut reader = quick_xml::Reader::from_str(text);
    let mut suites: Vec<String> = Vec::new();
    let mut case: Option<(String, Status)> = None;
    // A report cut short keeps what it had: the tests after the cut read as
    // missing, which is the safe side.
    while let Ok(event) = reader.read_event() {
        let (e, empty) = match &event {
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(e) => {
                match e.local_name().as_ref() {
                    "testcase" => {
                        if let Some((id, status)) = case.take() {
                            results.add(id, status);
                        }
                    }
                    "testsuite" => {
                        suites.pop();
                    }
                    _ => {}
                }
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        match e.local_name().as_ref() {
            "testsuite" if !empty => {
                suites.push(attr(e, "name").map(Cow::into_owned).unwrap_or_default());
            }
            "testcase" => {
                let Some(id) = testcase_id(e, &suites) else {
                    continue;
                };
                if empty {
                    results.add(id, Status::Passed);
                } else {
                    case = Some((id, Status::Passed));
                }
            }
            // nextest's `flakyFailure` and `rerunFailure` are retries of a
            // test that is judged by its last run: not failures here.
            "failure" | "error" => {
                if let Some((_, s)) = &mut case {
                    *s = Status::Failed;
                }
            }
            "skipped" => {
                if let Some((_, s)) = &mut case {
                    *s = (*s).max(Status::Skipped);
                }
            }
            _ => {}
        }
    }
    results.found()
}

#[cfg(test)]
mod tests {
    use super::super::listed as tests;
    use super::*;
    use Status::*;

    #[test]
    fn pytest_junitxml() {
        let xml = include_str!("../../../tests/fixtures/checks/pytest-junit.xml");
        let r = super::super::read_report(xml).expect("read");
        assert_eq!(r.format, Some(Format::Junit));
        assert_eq!(
            tests(&r),
            [
                ("tests.test_calc.TestGroup::test_method", Passed),
                ("tests.test_calc::test_add", Passed),
                ("tests.test_calc::test_broken", Failed),
                ("tests.test_calc::test_error_in_setup", Failed),
                ("tests.test_calc::test_fixed_bug", Passed),
                ("tests.test_calc::test_known_bug", Skipped),
                ("tests.test_calc::test_param[1]", Passed),
                ("tests.test_calc::test_param[2]", Failed),
                ("tests.test_calc::test_param[a b]", Passed),
                ("tests.test_calc::test_skipped", Skipped),
            ]
        );
    }

    #[test]
    fn nextest_style_report_with_a_flaky_test_and_escaped_names() {
        // Hand-made after nextest's documented JUnit output: one testsuite
        // per binary, retries as flakyFailure / rerunFailure.
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="4" failures="1" errors="0" uuid="45c50d5c" timestamp="2024-01-01T00:00:00Z" time="0.1">
    <testsuite name="lt" tests="3" disabled="1" errors="0" failures="1">
        <testcase name="tests::adds" classname="lt" timestamp="2024-01-01T00:00:00Z" time="0.01">
        </testcase>
        <testcase name="tests::flaky" classname="lt" time="0.02">
            <flakyFailure message="test failed" type="test failure">thread panicked</flakyFailure>
        </testcase>
        <testcase name="tests::broken &amp; &lt;odd&gt; &#x41;" classname="lt" time="0.01">
            <failure type="test failure">thread &apos;tests::broken&apos; panicked</failure>
            <rerunFailure type="test failure"/>
            <system-out>test other ... ok</system-out>
        </testcase>
        <testcase name="tests::slow" classname="lt"><skipped/></testcase>
    </testsuite>
    <testsuite name="lt::api" tests="1" disabled="0" errors="0" failures="0">
        <testcase name="public_add" time="0.001"/>
    </testsuite>
</testsuites>
"#;
        let r = read(xml).unwrap();
        assert_eq!(
            tests(&r),
            [
                ("lt::api::public_add", Passed),
                ("lt::tests::adds", Passed),
                ("lt::tests::broken & <odd> A", Failed),
                ("lt::tests::flaky", Passed),
                ("lt::tests::slow", Skipped),
            ]
        );
    }

    #[test]
    fn a_billion_laughs_report_expands_nothing() {
        let mut xml =
            String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n");
        for i in 1..10 {
            let prev = if i == 1 {
                "lol".to_string()
            } else {
                format!("lol{}", i - 1)
            };
            xml.push_str(&format!(
                "<!ENTITY lol{i} \"{}\">\n",
                format!("&{prev};").repeat(10)
            ));
        }
        xml.push_str("]>\n<testsuite name=\"s\"><testcase classname=\"c\" name=\"&lol9;\"><failure>&lol9;</failure></testcase></testsuite>\n");
        let r = read(&xml).unwrap();
        assert_eq!(tests(&r), [("c::&lol9;", Failed)]);
    }

    #[test]
    fn ten_thousand_testcases() {
        let mut xml = String::from("<testsuites><testsuite name=\"big\">");
        for i in 0..10_000 {
            if i % 3 == 0 {
                xml.push_str(&format!(
                    "<testcase classname=\"m\" name=\"t{i}\"><failure/></testcase>"
                ));
            } else {
                xml.push_str(&format!("<testcase classname=\"m\" name=\"t{i}\"/>"));
            }
        }
        xml.push_str("</testsuite></testsuites>");
        let r = super::super::read_report(&xml).unwrap();
        assert_eq!(r.tests.len(), 10_000);
        assert_eq!(r.tests.values().filter(|s| **s == Failed).count(), 3334);
        assert_eq!(r.tests["m::t9999"], Failed);
        assert_eq!(r.tests["m::t9998"], Passed);
    }

    #[test]
    fn a_report_cut_short_keeps_what_it_had() {
        let xml = "<testsuite name=\"s\"><testcase name=\"a\"/><testcase name=\"b\"><failure";
        let r = read(xml).unwrap();
        assert_eq!(tests(&r), [("s::a", Passed)]);
    }
}
