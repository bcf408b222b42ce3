//! A run's pull request as text: its title (the spec's), and its body (the
//! steps, checked or not; the gate's and the reviewer's verdicts; the
//! run's sessions, agents and cost; `Closes #N` for each checked step that
//! is a GitHub issue). Pure.
//!
//! Whatever a session could have written (the spec's title and steps, a
//! WAITING reason, the reviewer's verdict) goes in as inert text: in code
//! spans, where GitHub makes no mention, link, image or HTML of it, with
//! GitHub's closing keywords broken so no issue closes on its say-so.

use crate::work::spec::{self, Step};

/// What a pull request tells of a run.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    /// The spec's text.
    pub spec: &'a str,
    pub branch: &'a str,
    pub run_id: &'a str,
    /// `complete`, `waiting for a human`, ... and why.
    pub outcome: &'a str,
    pub reason: &'a str,
    pub complete: bool,
    /// `passed`, or the command that failed and why; `None`: no gate.
    pub gate: Option<String>,
    /// The reviewer's last verdict; `None`: no review.
    pub review: Option<String>,
    pub sessions: u32,
    pub agents: Vec<String>,
    /// `$1.25`, `cost unknown`.
    pub cost: String,
    /// The issues the spec's steps named when the run began: the only ones
    /// the body may close (a session can add a checked step naming any).
    pub closable: Vec<u64>,
    /// Where the spec can be read whole (on the branch, on GitHub): the
    /// body's step list ends with it when cut to fit.
    pub spec_url: Option<String>,
}

/// The most characters a body ralph writes may have: GitHub refuses a pull
/// request whose body is over 65,536, and opens none.
const BODY_MOST: usize = 60_000;

/// The most `Closes #N` lines a body writes (each issue once).
const CLOSES_MOST: usize = 1_000;

/// The URL of `path` on `branch` of `owner/name` at `host`'s web pages,
/// the branch's characters outside a plain name percent-encoded.
pub fn blob_url(host: &str, owner: &str, name: &str, branch: &str, path: &str) -> String {
    let mut b = String::new();
    for c in branch.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-') {
            b.push(c);
        } else {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                b.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    format!("https://{host}/{owner}/{name}/blob/{b}/{path}")
}

/// The words after which GitHub closes the issue a pull request names.
const CLOSING: [&str; 9] = [
    "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
];

/// Put inside a closing keyword (or after `@`, `#` in a title): unseen,
/// and no longer the word GitHub looks for.
const BREAK: char = '\u{200B}';

/// The longest pull request title ralph writes.
const TITLE_MOST: usize = 120;

/// The issue a step is, when its id is exactly `#N` (its label `**#N**`,
/// its task `[#N]` at the end of its line) with N a number.
pub fn issue_of(step: &Step) -> Option<u64> {
    let num = |s: &str| {
        let n = s.strip_prefix('#')?;
        let digits = !n.is_empty() && n.len() <= 12 && n.bytes().all(|b| b.is_ascii_digit());
        (digits && !n.starts_with('0')).then(|| n.parse::<u64>().ok())?
    };
    let trailing = step
        .title
        .strip_suffix(']')
        .and_then(|t| t.rsplit_once('['))
        .map(|(_, id)| id);
    [step.label.as_deref(), step.task.as_deref(), trailing]
        .into_iter()
        .flatten()
        .find_map(num)
}

/// The spec's first `# ` heading as plain text, else one made of the
/// branch: one line, bounded, no mention, reference or closing keyword.
pub fn title(spec: &str, branch: &str) -> String {
    let heading = spec
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(plain)
        .filter(|t| !t.is_empty());
    heading.unwrap_or_else(|| plain(&format!("ralph: {branch}")))
}

/// A title's text: visible, spaces collapsed, `@` and `#` kept from
/// naming anyone or anything, a closing keyword broken where what follows
/// could name an issue (`Fix the parser` stays as it is), bounded.
fn plain(s: &str) -> String {
    let s = crate::output::visible_line(s);
    let words: Vec<&str> = s.split_whitespace().collect();
    let mut kept = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        // What follows, past words of markup alone (`**`, a backtick):
        // GitHub reads a keyword across them.
        let next = words[i + 1..]
            .iter()
            .find(|t| {
                t.chars()
                    .any(|c| c.is_alphanumeric() || c == '#' || c == '/')
            })
            .copied()
            .unwrap_or("");
        let names = |t: &str| t.contains(['#', '/']);
        if names(w) || names(next) {
            kept.push(unclosing(w));
        } else {
            kept.push(w.to_string());
        }
    }
    let mut out = String::new();
    for c in kept.join(" ").chars() {
        out.push(c);
        if c == '@' || c == '#' {
            out.push(BREAK);
        }
    }
    bounded(&out, TITLE_MOST)
}

/// `s` cut to `most` characters, marked when cut.
fn bounded(s: &str, most: usize) -> String {
    if s.chars().count() > most {
        s.chars().take(most).collect::<String>() + "…"
    } else {
        s.to_string()
    }
}

/// `s` with each of GitHub's closing keywords (a whole run of letters,
/// any case) broken after its first letter.
fn unclosing(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if CLOSING.iter().any(|k| word.eq_ignore_ascii_case(k)) {
            let mut cs = word.chars();
            out.extend(cs.next());
            out.push(BREAK);
            out.extend(cs);
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in s.chars() {
        if c.is_ascii_alphabetic() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Text a session could have written, as one inert line of Markdown: a
/// code span (its fence longer than any run of backticks inside), no
/// control characters or line breaks, closing keywords broken, bounded.
/// Empty text is nothing.
fn inert(s: &str, most: usize) -> String {
    let s = unclosing(&bounded(crate::output::visible_line(s).trim(), most));
    if s.is_empty() {
        return String::new();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    // A span that starts or ends with a backtick needs a space inside its
    // fence; a space each side is taken off again when rendered.
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// A step's label: bold when it is a plain id (`1.2`, `bd-7`; a closing
/// keyword broken, as the title's code span follows it), else inert.
fn label(l: &str) -> String {
    let plain_id = !l.is_empty()
        && l.len() <= 40
        && l.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'));
    if plain_id {
        format!("**{}** ", unclosing(l))
    } else {
        format!("{} ", inert(l, 40))
    }
}

/// The body of the run's pull request.
pub fn body(f: &Facts) -> String {
    let spec = spec::parse(f.spec);
    let mut out = String::new();
    // "Complete: complete" said it twice: a complete run's outcome is its
    // state.
    let state = if f.complete {
        "Complete".to_string()
    } else {
        format!("Not complete (draft): {}", f.outcome)
    };
    out.push_str(&format!(
        "{state} — {}. Opened by ralph from branch {}, run `{}`.\n\n",
        inert(f.reason, 300),
        inert(f.branch, 200),
        f.run_id
    ));
    out.push_str(&format!("## Steps ({})\n\n", spec.progress()));
    let mut rest = verdicts_and_run(f);
    rest.push_str(&closes(f, &spec));
    // The steps fill what the header, the rest and the line that says the
    // list was cut (its URL as long as the branch makes it) leave.
    let cut = count(&cut_line(f, spec.steps.len()));
    let room = BODY_MOST.saturating_sub(count(&out) + count(&rest) + cut);
    out.push_str(&steps(f, &spec, room));
    out.push_str(&rest);
    out
}

fn count(s: &str) -> usize {
    s.chars().count()
}

/// The step list, one line a step, as many as fit in `room` characters;
/// then a line that says how many more, and where to read them.
fn steps(f: &Facts, spec: &spec::Spec, room: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for (i, s) in spec.steps.iter().enumerate() {
        let mark = if s.checked { "x" } else { " " };
        let label = s.label.as_deref().map(label).unwrap_or_default();
        // A GitHub issue as the step's task (`[#7]`) is shown as written.
        let issue = s
            .task
            .as_deref()
            .filter(|t| spec::issue_number(t).is_some())
            .map(|t| format!(" [{t}]"))
            .unwrap_or_default();
        let line = format!("- [{mark}] {label}{}{issue}\n", inert(&s.title, 300));
        if used + count(&line) > room {
            out.push_str(&cut_line(f, spec.steps.len() - i));
            break;
        }
        used += count(&line);
        out.push_str(&line);
    }
    out
}

/// The line that ends a cut step list: how many steps are not listed,
/// and where to read them.
fn cut_line(f: &Facts, left: usize) -> String {
    let whole = match &f.spec_url {
        Some(url) => format!("the whole spec: {url}"),
        None => "the whole spec is `.ralph/spec.md` on the branch".into(),
    };
    format!(
        "- … {left} more step{} not listed (a pull request's text is bounded); {whole}\n",
        if left == 1 { "" } else { "s" }
    )
}

fn verdicts_and_run(f: &Facts) -> String {
    let mut out = String::from("\n## Verdicts\n\n");
    let verdict = |v: &Option<String>, none: &str| match v {
        Some(v) => inert(v, 300),
        None => none.to_string(),
    };
    out.push_str(&format!("- Gate: {}\n", verdict(&f.gate, "none set")));
    out.push_str(&format!("- Review: {}\n", verdict(&f.review, "none")));
    out.push_str(&format!(
        "\n## Run\n\n- Sessions: {}\n- Agents: {}\n- Cost: {}\n",
        f.sessions,
        f.agents.join(", "),
        f.cost
    ));
    out
}

/// `Closes #N` for each checked step's issue that a step named when the
/// run began: an open step's does not close, nor one a session added.
fn closes(f: &Facts, spec: &spec::Spec) -> String {
    let mut closes: Vec<u64> = Vec::new();
    for n in spec.steps.iter().filter(|s| s.checked).filter_map(issue_of) {
        if !closes.contains(&n) && f.closable.contains(&n) && closes.len() < CLOSES_MOST {
            closes.push(n);
        }
    }
    let mut out = String::new();
    if !closes.is_empty() {
        out.push('\n');
        for n in closes {
            out.push_str(&format!("Closes #{n}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SPEC: &str = "# Make the parser strict\n\n- [x] **#12** Reject bad input\n- [ ] **2** Document it [#7]\n- [x] **3** Plain step [#4]\n- [x] **4** Again [#4]\n";

    /// Every place in `text` where GitHub would see a closing keyword
    /// before an issue (`#N`, `OWNER/REPO#N`, an issue's URL), as
    /// `keyword ref`. A test oracle, deliberately looser than GitHub.
    fn closing_refs(text: &str) -> Vec<String> {
        // As rendered: ralph's bold markers gone.
        let lower = text.replace('*', "").to_ascii_lowercase();
        let b = lower.as_bytes();
        let mut found = Vec::new();
        for k in CLOSING {
            for (at, _) in lower.match_indices(k) {
                let before = at.checked_sub(1).map(|i| b[i]);
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
                    continue;
                }
                let rest = &lower[at + k.len()..];
                let rest = rest.strip_prefix(':').unwrap_or(rest);
                let after = rest.trim_start();
                if after.len() == rest.len() {
                    continue;
                }
                let word = after.split_whitespace().next().unwrap_or("");
                let word = word.trim_start_matches(['`', '*', '_', '(', '[']);
                let refers = word.starts_with('#')
                    && word[1..].starts_with(|c: char| c.is_ascii_digit())
                    || word.split_once('#').is_some_and(|(repo, n)| {
                        repo.contains('/') && n.starts_with(|c: char| c.is_ascii_digit())
                    })
                    || word.starts_with("http");
                if refers {
                    found.push(format!("{k} {word}"));
                }
            }
        }
        found.sort();
        found
    }

    /// `text` without its code spans (CommonMark's rule: a run of N
    /// backticks up to the next run of exactly N).
    fn outside_code(text: &str) -> String {
        let b = text.as_bytes();
        let run = |i: usize| b[i..].iter().take_while(|c| **c == b'`').count();
        let (mut out, mut i) = (Vec::new(), 0);
        while i < b.len() {
            if b[i] != b'`' {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let n = run(i);
            let mut j = i + n;
            let close = loop {
                match b[j..].iter().position(|c| *c == b'`') {
                    None => break None,
                    Some(k) => {
                        let m = run(j + k);
                        if m == n {
                            break Some(j + k + m);
                        }
                        j += k + m;
                    }
                }
            };
            match close {
                Some(end) => i = end,
                None => {
                    out.extend(&b[i..i + n]);
                    i += n;
                }
            }
        }
        String::from_utf8(out).unwrap()
    }

    fn facts(spec: &str) -> Facts<'_> {
        Facts {
            spec,
            branch: "ralph/strict",
            run_id: "r1",
            outcome: "waiting for a human",
            reason: "step 2 needs a decision",
            complete: false,
            gate: Some("passed".into()),
            review: Some("approved".into()),
            sessions: 4,
            agents: vec!["claude".into(), "codex".into()],
            cost: "$1.25".into(),
            closable: vec![12, 7, 4],
            spec_url: None,
        }
    }

    #[test]
    fn the_body_lists_steps_verdicts_and_the_issues_it_closes() {
        let b = body(&facts(SPEC));
        assert!(
            b.starts_with("Not complete (draft): waiting for a human — `step 2 needs a decision`. Opened by ralph from branch `ralph/strict`, run `r1`."),
            "{b}"
        );
        assert!(b.contains("## Steps (3/4 steps done)\n\n- [x] `#12` `Reject bad input`\n- [ ] **2** `Document it` [#7]\n- [x] **3** `Plain step` [#4]\n"), "{b}");
        assert!(
            b.contains("- Gate: `passed`\n- Review: `approved`\n"),
            "{b}"
        );
        assert!(
            b.contains("- Sessions: 4\n- Agents: claude, codex\n- Cost: $1.25\n"),
            "{b}"
        );
        // Checked steps only, each issue once; #7's step is still open.
        assert!(b.ends_with("\nCloses #12\nCloses #4\n"), "{b}");
        assert_eq!(title(SPEC, "ralph/strict"), "Make the parser strict");
        assert_eq!(title("- [ ] x\n", "ralph/strict"), "ralph: ralph/strict");
        assert_eq!(title("# Fix  the\tparser\n", "b"), "Fix the parser");
        assert_eq!(
            title("# Fix it: fixes https://github.com/o/r/issues/1\n", "b"),
            "Fix it: f\u{200B}ixes https://github.com/o/r/issues/1"
        );
    }

    #[test]
    fn what_a_session_wrote_cannot_break_out_of_its_line() {
        let f = Facts {
            spec: "# T\x1b[31m\n\n- [ ] **1** a\x07b\n",
            reason: "x\nCloses #99",
            ..Default::default()
        };
        let b = body(&f);
        assert!(!b.contains('\x1b') && !b.contains('\x07'), "{b}");
        assert!(!b.contains("\nCloses #99"), "{b}");
        assert_eq!(title("# T\x1b[31m\n", "b"), "T^[[31m");
    }

    /// The probe's spec: a session's markup, mentions and closing keywords.
    const HOSTILE: &str = "# Spec <img src=https://attacker.example/t.png> fixes #5 @acme/everyone\n\n- [x] **fixes** #8 a label that reads as a keyword\n- [x] **1** One, which fixes #7 and resolves other-org/other-repo#3 @acme/everyone\n- [ ] **#99** [Click](https://attacker.example/login)\n- [x] **2** ``tick`` `<b>` Closes: https://github.com/o/r/issues/8 ![x](y) *em* _u_\n- [x] **#5x** not an issue\n- [x] **#+6** nor this\n- [x] **#06** nor this\n";

    #[test]
    fn a_sessions_text_is_inert_and_closes_nothing() {
        let f = Facts {
            reason: "done; fixes #11",
            review: Some("approved, resolves #12".into()),
            gate: Some("`make` failed (closed #13)".into()),
            ..facts(HOSTILE)
        };
        let b = body(&f);
        // Nothing closes but a checked step whose id is `#N`; none is.
        assert_eq!(closing_refs(&b), Vec::<String>::new(), "{b}");
        assert!(!b.contains("Closes #"), "{b}");
        // Each step's text is one code span, markup and all.
        assert!(
            b.contains("- [x] **1** `One, which f\u{200B}ixes #7 and r\u{200B}esolves other-org/other-repo#3 @acme/everyone`\n"),
            "{b}"
        );
        assert!(
            b.contains("- [x] **f\u{200B}ixes** `#8 a label that reads as a keyword`\n"),
            "{b}"
        );
        assert!(
            b.contains("- [ ] `#99` `[Click](https://attacker.example/login)`\n"),
            "{b}"
        );
        assert!(
            b.contains("- [x] **2** ``` ``tick`` `<b>` C\u{200B}loses: https://github.com/o/r/issues/8 ![x](y) *em* _u_ ```\n"),
            "{b}"
        );
        // Outside code spans: only ralph's own words and Markdown.
        let outside = outside_code(&b);
        assert!(
            outside.matches('[').count() == outside.matches("- [").count(),
            "{outside}"
        );
        for c in ['<', '@', '!', '_'] {
            assert!(!outside.contains(c), "{c} outside a code span: {outside}");
        }
        assert_eq!(
            outside.matches('#').count(),
            3 * 2,
            "only ralph's ## headings: {outside}"
        );
        // The title: plain, bounded, naming no one and closing nothing.
        let t = title(HOSTILE, "b");
        assert_eq!(closing_refs(&t), Vec::<String>::new(), "{t}");
        assert!(!t.contains("@a") && !t.contains("#5"), "{t}");
        assert_eq!(
            title(&format!("# {}\n", "x".repeat(500)), "b")
                .chars()
                .count(),
            TITLE_MOST + 1
        );
        // A checked issue step still closes its issue, if a step named it
        // when the run began.
        let spec = "- [x] **#42** Fix it\n- [ ] **#43** Later\n- [x] Other [#44]\n";
        let b = body(&Facts {
            closable: vec![42, 43, 44],
            ..facts(spec)
        });
        assert_eq!(closing_refs(&b), ["closes #42", "closes #44"], "{b}");
        // One a session added (not named when the run began) does not.
        let b = body(&Facts {
            closable: vec![42, 43],
            ..facts(spec)
        });
        assert_eq!(closing_refs(&b), ["closes #42"], "{b}");
    }

    #[test]
    fn the_step_list_fills_its_room_exactly_and_closes_are_bounded() {
        let spec_text: String = (1..=5)
            .map(|i| format!("- [x] **{i}** step {i}\n"))
            .collect();
        let spec = spec::parse(&spec_text);
        let f = facts(&spec_text);
        let whole = steps(&f, &spec, usize::MAX);
        assert_eq!(whole.lines().count(), 5, "{whole}");
        // Room for exactly the five lines: all listed, nothing cut.
        let exact = steps(&f, &spec, count(&whole));
        assert_eq!(exact, whole);
        // One character less: the last is cut, and said.
        let short = steps(&f, &spec, count(&whole) - 1);
        assert_eq!(short.lines().filter(|l| l.starts_with("- [x]")).count(), 4);
        assert!(short.ends_with("- … 1 more step not listed (a pull request's text is bounded); the whole spec is `.ralph/spec.md` on the branch\n"), "{short}");
        // As many lines as fit, not fewer.
        let line = count(whole.lines().next().unwrap()) + 1;
        let some = steps(&f, &spec, 3 * line + 2);
        assert_eq!(
            some.lines().filter(|l| l.starts_with("- [x]")).count(),
            3,
            "{some}"
        );
        // Closes: each issue once, at most CLOSES_MOST.
        let many: String = (1..=CLOSES_MOST as u64 + 5)
            .map(|i| format!("- [x] **{i}** s [#{i}]\n"))
            .collect();
        let f = Facts {
            closable: (1..=CLOSES_MOST as u64 + 5).collect(),
            ..facts(&many)
        };
        let c = closes(&f, &spec::parse(&many));
        assert_eq!(c.matches("Closes #").count(), CLOSES_MOST);
        assert!(c.ends_with(&format!("Closes #{CLOSES_MOST}\n")), "{c}");
    }

    #[test]
    fn a_spec_too_long_for_github_is_cut_with_where_to_read_it_whole() {
        // 399 steps of long titles: 121,473 characters before the bound.
        let mut spec = String::from("# Big\n\n");
        for i in 1..=399 {
            spec.push_str(&format!("- [x] **{i}** {} [#{i}]\n", "word ".repeat(60)));
        }
        let url = blob_url(
            "github.com",
            "octo",
            "hello",
            "ralph/big one",
            ".ralph/spec.md",
        );
        assert_eq!(
            url,
            "https://github.com/octo/hello/blob/ralph/big%20one/.ralph/spec.md"
        );
        let b = body(&Facts {
            closable: (1..=399).collect(),
            spec_url: Some(url.clone()),
            ..facts(&spec)
        });
        assert!(b.chars().count() <= BODY_MOST, "{}", b.chars().count());
        let cut = b
            .lines()
            .find(|l| l.contains("more steps not listed"))
            .unwrap_or_else(|| panic!("no line says the list was cut: {b}"));
        assert!(cut.ends_with(&format!("the whole spec: {url}")), "{cut}");
        let listed = b.lines().filter(|l| l.starts_with("- [x]")).count();
        assert!(
            cut.starts_with(&format!("- … {} more", 399 - listed)),
            "{cut}"
        );
        // Every issue still closes, and the verdicts are still there.
        assert_eq!(b.matches("\nCloses #").count(), 399, "{b}");
        assert!(b.contains("- Gate: `passed`"), "{b}");
        // A short spec is not cut.
        assert!(!body(&facts(SPEC)).contains("not listed"));
    }

    #[test]
    fn a_title_breaks_a_keyword_with_markup_between_it_and_the_issue() {
        // What the property test below once found.
        let spec = "# **fixes** **\thttps://github.com/o/r/issues/1";
        let t = title(spec, "b");
        assert!(closing_refs(&t).is_empty(), "{t}");
        assert!(closing_refs(&title("# fixes `` #7", "b")).is_empty());
        assert_eq!(title("# Fix the parser", "b"), "Fix the parser");
    }

    proptest! {
        #[test]
        fn no_closing_keyword_survives_in_any_spec(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "fixes", "Closes", "RESOLVED:", "close", " ", "  ", "#7", "o/r#3",
                    "https://github.com/o/r/issues/1", "`", "``", "**", "\n", "- [x] ",
                    "- [ ] ", "**#9** ", "**fixes** ", "**Closes** ", "# ", "@x", "[", "]", "x", "\t",
                ]),
                0..40,
            ),
            reason in "[a-zA-Z #:`\n]{0,40}",
        ) {
            let spec = parts.concat();
            let f = Facts { spec: &spec, reason: &reason, review: Some(spec.clone()), ..Default::default() };
            let b = body(&f);
            let ours: Vec<String> = b
                .lines()
                .filter(|l| l.starts_with("Closes #"))
                .map(|l| l.to_ascii_lowercase())
                .collect();
            let mut ours = ours;
            ours.sort();
            prop_assert_eq!(closing_refs(&b), ours);
            prop_assert!(closing_refs(&title(&spec, "b")).is_empty());
        }
    }
}
