//! The log pane's source: a session's saved stream, read as it grows and
//! rendered as `ralph logs` renders it (sanitised), its last lines kept.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::agent::Agent;
use crate::agent::stream::{LineFeed, Shown};
use crate::history::records::RunDir;
use crate::output::visible_line;

/// Lines kept for scrolling back.
const KEEP: usize = 5000;
/// At most this much is read per look, so a huge stream cannot stall a frame.
const READ: usize = 1 << 20;

#[derive(Default)]
pub struct Tail {
    path: Option<PathBuf>,
    file: Option<File>,
    /// Read as the agent that wrote it (none: no stream shown).
    feed: Option<LineFeed>,
    lines: VecDeque<String>,
}

/// The agent whose stream session `n` of `run` is, to read it as its: the
/// one its record names; a session not recorded yet (running) is of the
/// agent the run's state says runs its sessions now; with neither, the
/// default agent (the only one before records named theirs). A review
/// running now by a reviewer of another agent than the run's is read as
/// the run's until its record is written.
pub fn agent_of(run: &RunDir, n: u32) -> Agent {
    if let Some(r) = run.records_newest_first().find(|r| r.session == n) {
        return r.agent;
    }
    run.state()
        .and_then(|s| s.agents.get(s.state.agent).copied())
        .unwrap_or_default()
}

/// One event of a stream as the pane shows it: text as lines, a tool call,
/// an error, a note.
pub fn lines_of(s: Shown) -> Vec<String> {
    match s {
        Shown::Text(t) => t.lines().map(visible_line).collect(),
        Shown::Tool(t) => vec![format!("  → {}", visible_line(&t))],
        Shown::ToolError(t) => vec![format!("  ✗ {}", visible_line(&t))],
        Shown::Note(t) | Shown::Stderr(t) => vec![format!("  ! {}", visible_line(&t))],
    }
}

/// What `logs` and `watch` say of a session whose stream shows nothing:
/// how it ended, as its record says (none: it runs, or ended unrecorded).
pub fn printed_nothing(n: u32, record: Option<&crate::history::records::Record>) -> String {
    match record {
        Some(r) => format!(
            "(session {n} printed nothing: it ended {} after {}{})",
            r.outcome.as_text(),
            crate::timefmt::human_duration(std::time::Duration::from_secs_f64(
                r.duration_s.max(0.0)
            )),
            r.exit_code
                .map(|c| format!(", exit code {c}"))
                .unwrap_or_default()
        ),
        None => format!("(session {n} has printed nothing yet)"),
    }
}

impl Tail {
    /// Show `path` (from its start, if it is another file than now), read
    /// as the stream of the agent `agent` says (asked only then).
    pub fn show(&mut self, path: Option<&Path>, agent: impl FnOnce() -> Agent) {
        if self.path.as_deref() == path {
            return;
        }
        *self = Tail {
            path: path.map(Path::to_path_buf),
            file: path.and_then(|p| crate::fsutil::open_regular(p).ok()),
            feed: path.map(|_| LineFeed::new(agent())),
            ..Tail::default()
        };
    }

    /// Read what was added; whether any line was.
    pub fn poll(&mut self) -> bool {
        if self.file.is_none() {
            // Not there yet (a session just starting): try again.
            self.file = self
                .path
                .as_deref()
                .and_then(|p| crate::fsutil::open_regular(p).ok());
        }
        let (Some(f), Some(feed)) = (self.file.as_mut(), self.feed.as_mut()) else {
            return false;
        };
        let mut buf = vec![0u8; READ];
        let n = f.read(&mut buf).unwrap_or(0);
        if n == 0 {
            return false;
        }
        let before = self.lines.len();
        let lines = &mut self.lines;
        feed.feed(&buf[..n], &mut |s| {
            for l in lines_of(s) {
                if lines.len() == KEEP {
                    lines.pop_front();
                }
                lines.push_back(l);
            }
        });
        self.lines.len() != before || n > 0
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_as_sanitised_lines() {
        assert_eq!(
            lines_of(Shown::Text("a\nb\u{1b}[2J".into())),
            vec!["a".to_string(), "b^[[2J".to_string()]
        );
        assert_eq!(
            lines_of(Shown::Tool("Bash: ls".into())),
            vec!["  → Bash: ls"]
        );
        assert_eq!(lines_of(Shown::ToolError("x".into())), vec!["  ✗ x"]);
        assert_eq!(lines_of(Shown::Note("n".into())), vec!["  ! n"]);
    }

    #[test]
    fn a_growing_stream_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("session-001.jsonl");
        let mut t = Tail::default();
        t.show(Some(&p), || Agent::Claude);
        assert!(!t.poll(), "not there yet");
        let text = |s: &str| {
            format!(
                "{}\n",
                serde_json::json!({"type":"assistant","message":{"content":[{"type":"text","text":s}]}})
            )
        };
        std::fs::write(&p, text("first")).unwrap();
        assert!(t.poll());
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(text("second").as_bytes()).unwrap();
        assert!(t.poll());
        assert!(!t.poll());
        assert_eq!(t.lines(), vec!["first", "second"]);
        t.show(Some(&p), || Agent::Claude);
        assert_eq!(t.lines().len(), 2, "the same file is not read again");
        t.show(None, || unreachable!("no stream, no agent"));
        assert!(t.lines().is_empty() && !t.poll());
    }
}
