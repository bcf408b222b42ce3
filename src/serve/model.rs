//! What the page shows, as JSON the page renders as text: the loops of
//! every project (watch's rows), and a run's timeline, cost over time,
//! board and session transcripts, each drawn from the run's journal of
//! typed events. The drawing from events is pure; reading is at the end.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::history::events::{Event, Line};
use crate::history::records::RunDir;
use crate::history::said;
use crate::output::{spent, usd};
use crate::timefmt::human_duration;
use crate::watch::model::Row;
use crate::work::question::one_line;

/// The most characters of one line of text the page is sent (a reason, a
/// question, a line of a transcript): a 10 MB line is not a page.
pub const LINE_MAX: usize = 2000;
/// The newest lines of a transcript sent.
pub const TRANSCRIPT_LINES: usize = 3000;
/// The most of a session's stream read for its transcript (its end): lines
/// too long for the stream's reader are skipped, not held.
pub const TRANSCRIPT_READ: u64 = crate::fsutil::RUN_FILE_CAP;
/// The newest entries of a timeline sent.
pub const TIMELINE_MAX: usize = 2000;

/// Every loop the page lists, by project.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overview {
    pub projects: Vec<ProjectView>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectView {
    /// The main checkout.
    pub path: PathBuf,
    pub loops: Vec<LoopView>,
}

/// A loop as listed: watch's row, its page's id, when it last did anything.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoopView {
    /// Names its page and its actions: derived from its folder, never
    /// from anything the loop wrote.
    pub id: String,
    #[serde(flatten)]
    pub row: Row,
    /// The newest change to its run's files (RFC 3339).
    pub last_activity: Option<String>,
}

/// What a timeline entry is about, for its mark on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Run,
    Session,
    Gate,
    Review,
    Merge,
    Push,
    Question,
    Answer,
    Command,
    Pause,
    Estimate,
    End,
}

/// One line of a run's timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// ms since the epoch.
    pub at: u64,
    pub kind: Kind,
    /// The worker of a parallel run that did it.
    pub worker: Option<String>,
    pub text: String,
    /// For an entry that failed or was refused: drawn as such.
    pub bad: bool,
}

/// The run's spending after each session: the chart's points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    pub at: u64,
    pub usd: f64,
    pub tokens: u64,
}

/// A session of the run, as its list shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionView {
    pub n: u32,
    pub review: bool,
    /// How it ended (`None`: it runs).
    pub outcome: Option<String>,
    pub cost_usd: Option<f64>,
}

/// A step on a parallel run's board.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Place {
    pub step: String,
    pub place: crate::run::engine::board::Place,
    pub worker: Option<String>,
    pub note: Option<String>,
}

/// A run's page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunView {
    #[serde(rename = "loop")]
    pub row: LoopView,
    pub timeline: Vec<Entry>,
    pub costs: Vec<Point>,
    pub sessions: Vec<SessionView>,
    pub board: Option<Vec<Place>>,
}

/// A session's transcript, as `ralph logs` renders its stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transcript {
    pub n: u32,
    pub lines: Vec<String>,
    /// Lines before these were left out.
    pub cut: bool,
    /// Where in its stream the lines end (after the last whole line): the
    /// page follows it from there.
    pub end: u64,
}

/// `text` as the page gets it: one bounded line.
fn line(text: &str) -> String {
    one_line(text, LINE_MAX)
}

/// The timeline and the cost points of a run's journal (oldest first).
pub fn timeline(lines: &[Line]) -> (Vec<Entry>, Vec<Point>) {
    let mut entries = Vec::new();
    let mut points = Vec::new();
    let (mut usd_so_far, mut tokens) = (0.0, 0u64);
    for l in lines {
        if let Event::SessionEnded {
            cost_usd,
            tokens: t,
            ..
        } = &l.event
        {
            usd_so_far += cost_usd.unwrap_or(0.0);
            tokens += t.total();
            points.push(Point {
                at: l.at.0,
                usd: usd_so_far,
                tokens,
            });
        }
        if let Some((kind, text, bad)) = said_of(&l.event, l.step.as_deref()) {
            entries.push(Entry {
                at: l.at.0,
                kind,
                worker: l.worker.clone(),
                text: line(&text),
                bad,
            });
        }
    }
    let skip = entries.len().saturating_sub(TIMELINE_MAX);
    (entries.split_off(skip), points)
}

/// What an event says on the timeline; `None` for those it leaves out
/// (a notice: the timeline is the run's own doing).
fn said_of(event: &Event, step: Option<&str>) -> Option<(Kind, String, bool)> {
    use Kind as K;
    let told = |k: Kind| said::said(event, step).map(|t| (k, t, false));
    Some(match event {
        Event::RunStarted { resumed, agent, .. } => (
            K::Run,
            match resumed {
                0 => format!("run started · {agent}"),
                n => format!("run resumed ({n}) · {agent}"),
            },
            false,
        ),
        Event::SessionStarted { session, .. } => (
            K::Session,
            said::headline(event).map_or_else(
                || format!("session {session} started"),
                |h| format!("session {session}: {h}"),
            ),
            false,
        ),
        Event::SessionEnded {
            session,
            outcome,
            duration,
            tokens,
            cost_usd,
            review,
            ..
        } => (
            K::Session,
            format!(
                "{} {session} ended: {} after {} · {} · {} tokens",
                if *review { "review session" } else { "session" },
                outcome.as_text(),
                human_duration(*duration),
                cost_usd.map_or_else(|| spent(0.0, true), usd),
                tokens.total()
            ),
            !matches!(outcome, crate::run::engine::SessionOutcome::Ok),
        ),
        Event::Gate {
            passed,
            failed,
            why,
            duration,
            ..
        } => (
            K::Gate,
            match (passed, failed) {
                (true, _) => format!("the gate passed ({})", human_duration(*duration)),
                (false, Some(f)) => format!(
                    "the gate failed: {f}{}",
                    why.as_deref()
                        .map(|w| format!(" ({w})"))
                        .unwrap_or_default()
                ),
                (false, None) => format!(
                    "the gate failed{}",
                    why.as_deref().map(|w| format!(": {w}")).unwrap_or_default()
                ),
            },
            !passed,
        ),
        Event::Review {
            of,
            verdict,
            findings,
            ..
        } => (
            K::Review,
            format!(
                "review of {of}: {verdict}{}",
                match findings.len() {
                    0 => String::new(),
                    n => format!(
                        " · {}",
                        crate::output::counted(n as u64, "finding", "findings")
                    ),
                }
            ),
            *verdict == crate::work::review::Judgement::Rejected,
        ),
        Event::Merged { .. } => told(K::Merge)?,
        Event::Conflicted { files } => (
            K::Merge,
            format!(
                "{} conflicted in {}",
                step.unwrap_or("a step"),
                crate::output::first_of(files, 5)
            ),
            true,
        ),
        Event::Pushed { .. } | Event::PullRequest { .. } => told(K::Push)?,
        Event::PushRefused { .. } | Event::PullRequestRefused { .. } => {
            (K::Push, said::said(event, step)?, true)
        }
        Event::Estimated { .. } => told(K::Estimate)?,
        Event::Notice { .. } => return None,
        Event::Paused { why, until } => (
            K::Pause,
            format!("paused until {}: {why}", until.rfc3339()),
            false,
        ),
        Event::Asked { question, .. } => (K::Question, format!("asked: {}", question.text), false),
        Event::Answered { answer, by } => (
            K::Answer,
            format!("answered by {by}: {}", answer.said()),
            false,
        ),
        Event::Commanded { command, by } => (
            K::Command,
            format!("{} (sent by {by})", command.describe()),
            false,
        ),
        Event::Complete { reason, .. }
        | Event::Waiting { reason, .. }
        | Event::Stopped { reason, .. } => (
            K::End,
            said::headline(event).unwrap_or_else(|| reason.clone()),
            !matches!(event, Event::Complete { .. }),
        ),
    })
}

/// A run's sessions, from its journal: each started one, with how it
/// ended once it has.
pub fn sessions(lines: &[Line]) -> Vec<SessionView> {
    let mut out: Vec<SessionView> = Vec::new();
    for l in lines.iter().filter(|l| l.worker.is_none()) {
        match &l.event {
            Event::SessionStarted {
                session, review, ..
            } => out.push(SessionView {
                n: *session,
                review: *review,
                outcome: None,
                cost_usd: None,
            }),
            Event::SessionEnded {
                session,
                outcome,
                cost_usd,
                ..
            } => {
                if let Some(s) = out.iter_mut().rev().find(|s| s.n == *session) {
                    s.outcome = Some(outcome.as_text());
                    s.cost_usd = *cost_usd;
                }
            }
            _ => {}
        }
    }
    out
}

/// A parallel run's board as its page lists it.
pub fn board(b: &crate::run::engine::board::Board) -> Vec<Place> {
    b.steps
        .iter()
        .map(|(step, slot)| Place {
            step: line(step),
            place: slot.place,
            worker: slot.worker.as_deref().map(line),
            note: slot.note.as_deref().map(line),
        })
        .collect()
}

/// The last `TRANSCRIPT_LINES` of `lines`, each bounded.
pub fn bounded(lines: Vec<String>) -> (Vec<String>, bool) {
    let cut = lines.len() > TRANSCRIPT_LINES;
    let skip = lines.len().saturating_sub(TRANSCRIPT_LINES);
    (
        lines.into_iter().skip(skip).map(|l| cut_line(&l)).collect(),
        cut,
    )
}

/// A line cut at `LINE_MAX` characters (a transcript keeps its spaces).
fn cut_line(l: &str) -> String {
    match l.char_indices().nth(LINE_MAX) {
        Some((i, _)) => format!("{}… ({} more bytes)", &l[..i], l.len() - i),
        None => l.to_string(),
    }
}

// Reading, thin.

/// The run a row shows: its running run, else its newest.
pub fn run_of(row: &Row) -> Option<RunDir> {
    let runs = crate::work::project::Project::at(&row.root).runs();
    row.run_id
        .as_deref()
        .filter(|id| RunDir::valid_id(id))
        .map(|id| RunDir::open(&runs, id))
}

/// The most of a run's journal a page reads: its end, where the timeline's
/// newest entries are (a session can fill the run folder's journal).
pub const JOURNAL_READ: u64 = 8 << 20;

/// A run's journal lines, oldest first, from its last `JOURNAL_READ` bytes
/// (a run from before journals: derived from its records, as every face
/// reads it).
fn journal(run: &RunDir) -> Vec<Line> {
    let path = run.file(crate::history::events::FILE);
    if crate::fsutil::open_regular(&path).is_err() {
        return crate::history::events::read(run);
    }
    let mut lines: Vec<Line> = crate::fsutil::lines_from_end(&path, JOURNAL_READ)
        .filter_map(|l| Line::parse(&l))
        .collect();
    lines.reverse();
    lines
}

/// A loop's page, read from its run's files.
pub fn run_view(row: LoopView) -> RunView {
    let run = run_of(&row.row);
    let lines = run.as_ref().map(journal).unwrap_or_default();
    let (timeline, costs) = timeline(&lines);
    let board = run
        .as_ref()
        .filter(|_| row.row.parallel)
        .and_then(|r| {
            crate::fsutil::read_regular_capped(&r.path.join("parallel.json"), 4 << 20)
                .ok()
                .flatten()
        })
        .map(|t| board(&crate::run::engine::board::Board::from_saved(Some(&t))));
    RunView {
        sessions: sessions(&lines),
        row,
        timeline,
        costs,
        board,
    }
}

/// Session `n`'s transcript of the run a row shows.
pub fn transcript(row: &Row, n: u32) -> Option<Transcript> {
    let run = run_of(row)?;
    let (_, path) = run.sessions().into_iter().find(|(m, _)| *m == n)?;
    let agent = crate::watch::tail::agent_of(&run, n);
    Some(read_transcript(&path, agent, n))
}

fn read_transcript(path: &Path, agent: crate::agent::Agent, n: u32) -> Transcript {
    use std::io::{Read, Seek, SeekFrom};
    let mut lines = Vec::new();
    let mut skipped = false;
    let (mut at, mut end) = (0u64, 0u64);
    if let Ok(mut f) = crate::fsutil::open_regular(path) {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len > TRANSCRIPT_READ {
            skipped = f.seek(SeekFrom::Start(len - TRANSCRIPT_READ)).is_ok();
            at = len - TRANSCRIPT_READ;
        }
        let mut feed = crate::agent::stream::LineFeed::new(agent);
        let mut buf = vec![0u8; 1 << 20];
        // A stream read from its middle starts at its next whole line.
        let mut first = skipped;
        let mut f = f.take(TRANSCRIPT_READ);
        while let Ok(k) = f.read(&mut buf) {
            if k == 0 {
                break;
            }
            let mut chunk = &buf[..k];
            if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
                end = at + i as u64 + 1;
            }
            at += k as u64;
            if first {
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        chunk = &chunk[i + 1..];
                        first = false;
                    }
                    None => continue,
                }
            }
            feed.feed(chunk, &mut |s| {
                lines.extend(crate::watch::tail::lines_of(s));
                if lines.len() > 2 * TRANSCRIPT_LINES {
                    lines.drain(..TRANSCRIPT_LINES);
                    skipped = true;
                }
            });
        }
    }
    let (lines, cut) = bounded(lines);
    Transcript {
        n,
        lines,
        cut: cut || skipped,
        end,
    }
}

/// A session's stream followed from a place in it: its new lines as they
/// come, each bounded.
pub struct Follow {
    pub n: u32,
    /// Where its whole lines read so far end.
    pub end: u64,
    file: std::fs::File,
    feed: crate::agent::stream::LineFeed,
    /// Bytes read past `end` (a line not yet whole).
    fed: usize,
}

/// The most of a stream read per look.
const FOLLOW_READ: usize = 1 << 20;

impl Follow {
    pub fn new(row: &Row, n: u32, from: u64) -> Option<Follow> {
        use std::io::{Seek, SeekFrom};
        let run = run_of(row)?;
        let (_, path) = run.sessions().into_iter().find(|(m, _)| *m == n)?;
        let mut file = crate::fsutil::open_regular(&path).ok()?;
        let len = file.metadata().ok()?.len();
        let end = from.min(len);
        file.seek(SeekFrom::Start(end)).ok()?;
        Some(Follow {
            n,
            end,
            file,
            feed: crate::agent::stream::LineFeed::new(crate::watch::tail::agent_of(&run, n)),
            fed: 0,
        })
    }

    /// The lines added since the last look.
    pub fn poll(&mut self) -> Vec<String> {
        use std::io::Read;
        let mut buf = vec![0u8; FOLLOW_READ];
        let k = self.file.read(&mut buf).unwrap_or(0);
        let whole = self.fed + k;
        if let Some(i) = buf[..k].iter().rposition(|&b| b == b'\n') {
            self.end += (self.fed + i + 1) as u64;
            self.fed = k - i - 1;
        } else {
            self.fed = whole;
        }
        let mut lines = Vec::new();
        self.feed.feed(&buf[..k], &mut |s| {
            lines.extend(crate::watch::tail::lines_of(s).iter().map(|l| cut_line(l)));
        });
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::events::At;
    use std::time::Duration;

    fn at(ms: u64, event: Event) -> Line {
        Line::new(At(ms), event)
    }

    fn ended(session: u32, cost: Option<f64>, ok: bool) -> Event {
        Event::SessionEnded {
            session,
            iteration: session,
            outcome: if ok {
                crate::run::engine::SessionOutcome::Ok
            } else {
                crate::run::engine::SessionOutcome::Failed
            },
            exit_code: None,
            duration: Duration::from_secs(90),
            tokens: crate::history::records::Tokens {
                input: 100,
                output: 20,
                ..Default::default()
            },
            cost_usd: cost,
            agent: crate::agent::Agent::default(),
            model: None,
            review: false,
            left_uncommitted: false,
            auto_commit: None,
            no_evidence: false,
            no_change: false,
        }
    }

    #[test]
    fn the_cost_chart_adds_up_each_sessions_cost_and_tokens_in_order() {
        let lines = [
            at(1_000, ended(1, Some(0.25), true)),
            at(2_000, ended(2, None, false)),
            at(3_000, ended(3, Some(0.5), true)),
        ];
        let (entries, points) = timeline(&lines);
        let usd: Vec<(u64, f64, u64)> = points.iter().map(|p| (p.at, p.usd, p.tokens)).collect();
        assert_eq!(
            usd,
            [(1_000, 0.25, 120), (2_000, 0.25, 240), (3_000, 0.75, 360)]
        );
        assert_eq!(entries.len(), 3);
        assert_eq!(
            entries[0].text,
            "session 1 ended: ok after 1m 30s · $0.25 · 120 tokens"
        );
        assert!(entries[1].bad && !entries[0].bad);
    }

    #[test]
    fn each_kind_of_event_reads_on_the_timeline_and_notices_are_left_out() {
        let gate = |passed, failed: Option<&str>| Event::Gate {
            passed,
            failed: failed.map(str::to_string),
            why: Some("exit status 1".into()),
            started: At(0),
            duration: Duration::from_secs(2),
            log: None,
        };
        type Said<'a> = Option<(Kind, &'a str, bool)>;
        let rows: Vec<(Event, Said)> = vec![
            (
                gate(true, None),
                Some((Kind::Gate, "the gate passed (2s)", false)),
            ),
            (
                gate(false, Some("cargo test")),
                Some((
                    Kind::Gate,
                    "the gate failed: cargo test (exit status 1)",
                    true,
                )),
            ),
            (
                Event::Merged {
                    duration: Duration::from_millis(5),
                    into: "main".into(),
                },
                Some((Kind::Merge, "merged **1** One into main (5 ms)", false)),
            ),
            (
                Event::Conflicted {
                    files: vec!["a.rs".into()],
                },
                Some((Kind::Merge, "**1** One conflicted in a.rs", true)),
            ),
            (
                Event::Answered {
                    answer: crate::work::question::Answer {
                        text: "SQLite".into(),
                        option: Some(2),
                    },
                    by: "web".into(),
                },
                Some((Kind::Answer, "answered by web: option 2: SQLite", false)),
            ),
            (
                Event::Commanded {
                    command: crate::control::Command::Stop {
                        when: crate::control::StopWhen::AfterSession,
                    },
                    by: "web".into(),
                },
                Some((
                    Kind::Command,
                    "stop after this session (sent by web)",
                    false,
                )),
            ),
            (
                Event::Notice {
                    notice: crate::notify::Event::Complete,
                    channel: "ntfy".into(),
                    ok: true,
                },
                None,
            ),
        ];
        for (event, want) in rows {
            let got = said_of(&event, Some("**1** One"));
            let got = got.as_ref().map(|(k, t, b)| (*k, t.as_str(), *b));
            assert_eq!(got, want, "{event:?}");
        }
    }

    #[test]
    fn a_runs_sessions_are_listed_with_how_each_ended_and_workers_are_theirs() {
        let started = |session, review| Event::SessionStarted {
            session,
            iteration: session,
            agent: crate::agent::Agent::default(),
            review,
            standing: None,
            subject: None,
        };
        let mut worker = at(5, started(9, false));
        worker.worker = Some("w1".into());
        let lines = [
            at(1, started(1, false)),
            at(2, ended(1, Some(0.1), true)),
            at(3, started(2, true)),
            worker,
        ];
        let s = sessions(&lines);
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].n, s[0].outcome.as_deref(), s[0].cost_usd),
            (1, Some("ok"), Some(0.1))
        );
        assert_eq!(
            (s[1].n, s[1].review, s[1].outcome.as_deref()),
            (2, true, None)
        );
    }

    #[test]
    fn a_long_line_and_a_long_transcript_are_cut_and_say_so() {
        let long = "x".repeat(LINE_MAX + 10);
        let lines = vec!["a".to_string(); TRANSCRIPT_LINES + 1]
            .into_iter()
            .chain([long])
            .collect();
        let (kept, cut) = bounded(lines);
        assert!(cut);
        assert_eq!(kept.len(), TRANSCRIPT_LINES);
        assert!(kept.last().unwrap().ends_with("… (10 more bytes)"));
        // A question a session wrote is one bounded line, its breaks gone.
        let (e, _) = timeline(&[at(
            1,
            Event::Asked {
                outcome: crate::run::engine::Outcome::Waiting,
                question: crate::work::question::Question {
                    text: format!("a\nb{}", "y".repeat(3 * LINE_MAX)),
                    blocker: None,
                    options: vec![],
                },
                until: At(2),
            },
        )]);
        assert!(!e[0].text.contains('\n'));
        assert!(
            e[0].text.chars().count() <= LINE_MAX + 1,
            "{}",
            e[0].text.len()
        );
    }
}
