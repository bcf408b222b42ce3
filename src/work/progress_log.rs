//! `.ralph/progress.md`, what each session leaves the next: append-only, a
//! heading the loop writes before each session (which session, when, which
//! agent, the step the spec showed next), the session's own evidence under
//! it (what it verified, and how), and a line the loop adds after it (how
//! the session ended). Sessions read only its tail. And the learnings'
//! budget, which the heading reminds of when it is passed. Pure.

/// Lines of the log a session reads (`tail -n 60`, as the prompt says): a
/// few entries, never the whole history.
pub const TAIL_LINES: usize = 60;
/// What the tail may cost a session, and what `.ralph/learnings.md` may.
pub const TAIL_BUDGET: usize = 1500;
/// How much of the log's end is read (for a session's entry, or its tail):
/// bounded, whatever the log has grown to.
pub const TAIL_BYTES: u64 = 256 * 1024;
pub const LEARNINGS_BUDGET: usize = 800;

/// The loop's heading for session `n`, with a word on the learnings when
/// they are over their budget (`learnings_tokens`).
pub fn heading(
    n: u32,
    time: &str,
    agent: &str,
    step: Option<&str>,
    learnings_tokens: usize,
) -> String {
    let step = step.unwrap_or("none open");
    let mut h = format!("\n## Session {n} · {time} · {agent} · step {step}\n");
    if learnings_tokens > LEARNINGS_BUDGET {
        h.push_str(&format!(
            "> ralph: .ralph/learnings.md is over its budget (~{learnings_tokens}/{LEARNINGS_BUDGET} tokens): condense it first (merge, shorten, drop what no longer holds), then do the step.\n"
        ));
    }
    h
}

/// The loop's line after the session: how it went.
pub fn footer(outcome: &str, commits: Option<u64>, gate: Option<&str>, cost: &str) -> String {
    let commits = commits.map_or("? commits".into(), |c| {
        crate::output::counted(c, "commit", "commits")
    });
    let gate = gate.map(|g| format!(" · gate {g}")).unwrap_or_default();
    format!("_ralph: session {outcome} · {commits}{gate} · {cost}_\n")
}

/// The last `n` lines.
pub fn tail(text: &str, n: usize) -> &str {
    let cut = text
        .trim_end_matches('\n')
        .rmatch_indices('\n')
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i + 1);
    &text[cut..]
}

/// Did the session write anything under its heading (besides the loop's
/// own lines)? `text` is the log's end, the session's heading in it.
pub fn has_evidence(text: &str, n: u32) -> bool {
    let marker = format!("## Session {n} ·");
    let Some(at) = text.rfind(&marker) else {
        return false;
    };
    text[at..]
        .lines()
        .skip(1)
        .any(|l| !l.trim().is_empty() && !l.starts_with("> ralph:") && !l.starts_with("_ralph:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end read of the log holds a whole tail at its budget (4 bytes
    /// a token at least, for ASCII; more for other scripts) many times
    /// over, and a session's entry with it.
    #[test]
    fn the_end_read_holds_a_tail_at_its_budget() {
        let (read, tail) = std::hint::black_box((TAIL_BYTES, (TAIL_BUDGET * 4) as u64));
        assert!(read >= 16 * tail, "{read} bytes for {tail}");
        assert!(read <= 1 << 20, "bounded");
    }

    #[test]
    fn entries_are_written_told_apart_and_read_from_the_end() {
        let mut log = String::from("# Progress\n");
        for n in 1..=4 {
            log.push_str(&heading(
                n,
                "2026-11-23T10:00:00Z",
                "claude",
                Some("**1.2** Print"),
                10,
            ));
            if n != 3 {
                log.push_str(&format!("- ran `cargo test`: {n} passed\n"));
            }
            log.push_str(&footer("ok", Some(1), Some("passed"), "$0.12"));
        }
        assert!(has_evidence(&log, 4) && has_evidence(&log, 2));
        assert!(!has_evidence(
            &log[..log.rfind("\n## Session 4").unwrap()],
            3
        ));
        assert!(!has_evidence(&log, 9));
        assert_eq!(tail("a\nb\nc\nd\n", 2), "c\nd\n");
        assert_eq!(tail("a\nb", 5), "a\nb");
        assert!(
            tail(&log, 3).starts_with("## Session 4 · "),
            "{}",
            tail(&log, 3)
        );
        assert_eq!(
            footer("failed", None, None, "cost unknown"),
            "_ralph: session failed · ? commits · cost unknown_\n"
        );
        let over = heading(5, "t", "codex", None, 900);
        assert!(
            over.contains("step none open")
                && over.contains("over its budget (~900/800 tokens): condense it first"),
            "{over}"
        );
        assert!(
            !has_evidence(&over, 5),
            "the loop's own lines are no evidence"
        );
        let at = heading(6, "t", "codex", None, LEARNINGS_BUDGET);
        assert!(!at.contains("> ralph:"), "at the budget is within it");
    }
}
