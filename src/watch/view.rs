//! Drawing the dashboard: the loops' table, the selected loop's session
//! log, a line of keys or news, and what is over them (help, a question, a
//! WAITING reason). Everything shown that ralph did not write is sanitised
//! first; colour only when wanted (NO_COLOR, not a terminal).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Text};
use ratatui::widgets::{
    Block, Borders, Cell, Clear, Paragraph, Row as TRow, Table, TableState, Wrap,
};

use super::app::{App, KEYS, Mode};
use super::model::{COLUMNS, Row, State, cells, open_since_complete};
use crate::control::StopWhen;
use crate::output::visible_line;

/// The log pane's content: its title and its lines (already sanitised).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Log {
    pub title: String,
    pub lines: Vec<String>,
}

/// Where the table is too narrow for every cell whole, the columns that
/// give way, in turn, and how far: a long agent/model first (its agent
/// still shown), the step (the selected loop's session shows what it works
/// on), the agent, the step again down to nothing, then the loop, and the
/// verdicts last: a verdict cut short reads as a different one.
const GIVE_WAY: [(usize, u16); 6] = [(1, 12), (8, 6), (1, 5), (8, 0), (0, 4), (7, 8)];

fn text_width(s: &str) -> u16 {
    u16::try_from(ratatui::text::Span::raw(s).width()).unwrap_or(u16::MAX)
}

/// A step this wide beside two spaces between columns, else one space.
const ROOMY_STEP: u16 = 16;

/// The space between columns and each column's width: as wide as its
/// widest cell, the step column the rest of `width` (the table's whole
/// width, borders included); where that does not fit, `GIVE_WAY`.
pub fn widths(cells: &[[String; 9]], width: u16) -> (u16, [u16; 9]) {
    let mut w = natural(cells);
    let sum = |w: &[u16]| w.iter().sum::<u16>();
    // Borders, the selection mark, the spaces between columns.
    let room = |gap: u16| width.saturating_sub(2 + 2 + 8 * gap);
    let gap = if sum(&w[..8]) + w[8].min(ROOMY_STEP) <= room(2) {
        2
    } else {
        1
    };
    let room = room(gap);
    for (i, floor) in GIVE_WAY {
        while sum(&w) > room && w[i] > floor {
            w[i] -= 1;
        }
    }
    w[8] = room.saturating_sub(sum(&w[..8]));
    (gap, w)
}

/// Each column's widest cell, its header included.
fn natural(cells: &[[String; 9]]) -> [u16; 9] {
    let mut w = COLUMNS.map(text_width);
    for c in cells {
        for (w, t) in w.iter_mut().zip(c) {
            *w = (*w).max(text_width(t));
        }
    }
    w
}

/// The rows' cells as shown: control characters made visible.
fn shown_cells(rows: &[Row], now: u64) -> Vec<[String; 9]> {
    rows.iter()
        .map(|r| cells(r, now).map(|t| visible_line(&t)))
        .collect()
}

/// The loops' table as plain text, for scripts (`--once`): a header and a
/// line per loop, columns aligned with spaces, nothing cut, no box and no
/// escape sequence.
pub fn plain_table(rows: &[Row], now: u64) -> String {
    let cells = shown_cells(rows, now);
    let w = natural(&cells);
    let mut out = String::new();
    for line in std::iter::once(COLUMNS.map(String::from)).chain(cells) {
        let mut text = String::new();
        for (t, w) in line.iter().zip(w) {
            let pad = usize::from(w.saturating_sub(text_width(t)));
            text.push_str(&format!("{t}{}  ", " ".repeat(pad)));
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// What the waiting loops ask, after the plain table: each one's question,
/// options and how to answer (`waiting_lines`), a blank line before each.
pub fn plain_questions(rows: &[Row], now: u64) -> String {
    let mut out = String::new();
    for r in rows.iter().filter(|r| r.question.is_some()) {
        out.push('\n');
        for l in waiting_lines(r, now) {
            out.push_str(l.trim_end());
            out.push('\n');
        }
    }
    out
}

/// `text` cut to `w` columns, with `…` where it was cut.
fn fit(text: &str, w: u16) -> String {
    if text_width(text) <= w {
        return text.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out = String::new();
    for ch in text.chars() {
        if text_width(&out) + text_width(&ch.to_string()) + 1 > w {
            break;
        }
        out.push(ch);
    }
    out.trim_end().to_string() + "…"
}

fn state_style(s: &State, color: bool) -> Style {
    if !color {
        return Style::default();
    }
    use crate::run::engine::Outcome;
    match s {
        State::Running => Style::default().fg(Color::Green),
        State::Paused { .. } => Style::default().fg(Color::Cyan),
        State::Waiting | State::Asking { .. } => Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::BOLD),
        State::Ended(Outcome::Complete) => Style::default()
            .fg(Color::Green)
            .add_modifier(Modifier::BOLD),
        State::Ended(Outcome::Failed) | State::Killed | State::Ended(Outcome::EndedAbnormally) => {
            Style::default().fg(Color::Red)
        }
        _ => Style::default(),
    }
}

pub fn draw(f: &mut Frame, rows: &[Row], app: &App, log: &Log, now: u64, color: bool) {
    let area = f.area();
    let table_h = (rows.len() as u16 + 3).min((area.height / 2).max(3));
    let news = footer_lines(app, area.width);
    let [top, middle, bottom] = Layout::vertical([
        Constraint::Length(table_h),
        Constraint::Min(0),
        Constraint::Length(news.len() as u16),
    ])
    .areas(area);
    table(f, top, rows, Some(app.selected), now, color);
    log_pane(f, middle, log, app.scroll);
    let news: Vec<Line> = news.into_iter().map(Line::from).collect();
    f.render_widget(Paragraph::new(news), bottom);
    match &app.mode {
        Mode::Normal => {}
        Mode::Help => {
            let lines: Vec<Line> = KEYS
                .iter()
                .map(|(k, what)| Line::from(format!("{k:<16} {what}")))
                .collect();
            popup(f, area, "keys (any key closes)", Text::from(lines));
        }
        Mode::ConfirmStop(i, when) => {
            if let Some(r) = rows.get(*i) {
                let pid = r.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
                let how = match when {
                    StopWhen::Now => "now? It ends its session cleanly, as Ctrl+C would",
                    StopWhen::AfterSession => {
                        "after its running session? It starts no other; the run stays resumable"
                    }
                };
                popup(
                    f,
                    area,
                    "stop?",
                    Text::from(format!(
                        "Stop the loop {}{pid} {how}.\n\ny: stop · any other key: no",
                        visible_line(&r.name)
                    )),
                );
            }
        }
        Mode::Reason(i) => {
            if let Some(r) = rows.get(*i) {
                let mut lines = waiting_lines(r, now);
                lines.push(String::new());
                lines.push(reason_keys(r));
                popup(f, area, "waiting for a human", Text::from(lines.join("\n")));
            }
        }
        Mode::Answer { row, text } => {
            if let Some(r) = rows.get(*row) {
                let title = format!("answer {}", visible_line(&r.name));
                popup(
                    f,
                    area,
                    &title,
                    Text::from(waiting_lines(r, now).join("\n")),
                );
            }
            // The cursor where the next key goes, on the footer's input line.
            let shown = input_shown(text, area.width);
            let x = bottom.x + text_width(ANSWER_PROMPT) + text_width(&shown);
            f.set_cursor_position((x.min(area.width.saturating_sub(1)), bottom.y));
        }
        Mode::Command { text, .. } => {
            let shown = input_shown(text, area.width);
            let x = bottom.x + text_width(COMMAND_PROMPT) + text_width(&shown);
            f.set_cursor_position((x.min(area.width.saturating_sub(1)), bottom.y));
        }
    }
}

/// What a waiting loop asks, as its popup says it: the question and its
/// blocker, its options numbered, how long a running loop waits, and how
/// to answer from any terminal. A WAITING without a question: its reason.
pub fn waiting_lines(r: &Row, now: u64) -> Vec<String> {
    let name = visible_line(&r.name);
    let Some(q) = &r.question else {
        return vec![format!(
            "{name} waits: {}",
            visible_line(r.waiting.as_deref().unwrap_or(""))
        )];
    };
    let mut out = vec![match q.blocker {
        Some(b) => format!("{name} asks (blocker: {}):", b.text()),
        None => format!("{name} asks:"),
    }];
    out.extend(q.text.lines().map(|l| format!("  {}", visible_line(l))));
    out.extend(
        q.options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("  {}. {}", i + 1, visible_line(o))),
    );
    out.push(String::new());
    if let State::Asking { until } = r.state {
        out.push(format!(
            "It waits {} more for an answer, then ends WAITING.",
            crate::timefmt::human_duration(std::time::Duration::from_secs(
                until.saturating_sub(now)
            ))
        ));
    }
    // `ralph answer` answers the loop of the folder it runs in.
    out.push(format!(
        "From a terminal in {}: {}",
        visible_line(&r.root.display().to_string()),
        crate::run::asking::answer_todo(q).trim_start_matches("answer: ")
    ));
    out
}

/// The keys of a waiting loop's popup: an answer for a question, a resume
/// for a loop that does not run.
fn reason_keys(r: &Row) -> String {
    let mut keys = Vec::new();
    if let Some(q) = &r.question {
        keys.push(match q.options.len() {
            0 => "a: answer it here".to_string(),
            n => format!("a: answer it here (1-{n} and Enter picks an option)"),
        });
    }
    if r.pid.is_none() {
        keys.push(
            "r: resume it (removes WAITING, runs `ralph loop --resume` as it was started)".into(),
        );
    }
    keys.push("any other key: close".into());
    keys.join(" · ")
}

/// What starts the footer's input line.
const ANSWER_PROMPT: &str = "answer: ";
const COMMAND_PROMPT: &str = "command: ";

/// The end of `text` that fits the input line of `width` columns: the
/// part being typed stays in sight.
fn input_shown(text: &str, width: u16) -> String {
    let room = width.saturating_sub(text_width(ANSWER_PROMPT) + 1);
    let mut shown: Vec<char> = Vec::new();
    for ch in text.chars().rev() {
        let w = text_width(&ch.to_string());
        if text_width(&shown.iter().collect::<String>()) + w > room {
            break;
        }
        shown.push(ch);
    }
    shown.into_iter().rev().collect()
}

fn table(f: &mut Frame, area: Rect, rows: &[Row], selected: Option<usize>, now: u64, color: bool) {
    let header =
        TRow::new(COLUMNS.map(Cell::from)).style(Style::default().add_modifier(Modifier::BOLD));
    let cells = shown_cells(rows, now);
    let (gap, w) = widths(&cells, area.width);
    let body: Vec<TRow> = rows
        .iter()
        .zip(cells)
        .map(|(r, c)| {
            let state = row_style(r, color);
            TRow::new(c.iter().zip(w).enumerate().map(|(i, (t, w))| {
                let cell = Cell::from(fit(t, w));
                if i == 2 { cell.style(state) } else { cell }
            }))
        })
        .collect();
    let title = format!(
        " ralph watch · {} · ? keys ",
        crate::output::counted(rows.len() as u64, "loop", "loops")
    );
    let t = Table::new(body, w.map(Constraint::Length))
        .column_spacing(gap)
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .highlight_symbol("▶ ")
        .highlight_spacing(ratatui::widgets::HighlightSpacing::Always);
    let mut st = TableState::default().with_selected(selected.filter(|_| !rows.is_empty()));
    f.render_stateful_widget(t, area, &mut st);
}

/// A run that completed before its spec grew is not shown as done.
fn row_style(r: &Row, color: bool) -> Style {
    match open_since_complete(r) {
        Some(_) if color => Style::default().fg(Color::Yellow),
        Some(_) => Style::default(),
        None => state_style(&r.state, color),
    }
}

/// The lines of `log` that fit `height`, `scroll` lines up from its end.
pub fn visible(lines: &[String], height: usize, scroll: usize) -> &[String] {
    let end = lines
        .len()
        .saturating_sub(scroll.min(lines.len().saturating_sub(height)));
    let start = end.saturating_sub(height);
    &lines[start..end]
}

fn log_pane(f: &mut Frame, area: Rect, log: &Log, scroll: usize) {
    let inner_h = area.height.saturating_sub(2) as usize;
    let shown: Vec<Line> = visible(&log.lines, inner_h, scroll)
        .iter()
        .map(|l| Line::from(l.as_str()))
        .collect();
    let more = if scroll > 0 {
        " · scrolled (End: follow)"
    } else {
        ""
    };
    let p = Paragraph::new(shown).block(
        Block::default()
            .borders(Borders::ALL)
            .title(format!(" {}{more} ", visible_line(&log.title))),
    );
    f.render_widget(p, area);
}

/// The keys the footer names, in the order a line of them reads.
const FOOTER_KEYS: [&str; 9] = [
    "q quit",
    "↑↓ select",
    "s stop",
    "w why",
    "a answer",
    "r resume",
    "o/n sessions",
    "f follow",
    "? keys",
];

/// The most lines the news takes from the log pane.
const FOOTER_MAX: usize = 4;

/// The footer's lines: the news whole (a path or a command line cut short
/// is of no use), else the keys (at 80 columns `? keys` would be cut).
fn footer_lines(app: &App, width: u16) -> Vec<String> {
    if let Mode::Answer { text, .. } = &app.mode {
        // The line typed on, then what is wrong with it, else its keys.
        let help = app
            .message
            .as_deref()
            .unwrap_or("Enter sends · Esc cancels · a number alone picks that option");
        let mut lines = vec![format!("{ANSWER_PROMPT}{}", input_shown(text, width))];
        lines.extend(wrap(&visible_line(help), width));
        lines.truncate(FOOTER_MAX);
        return lines;
    }
    if let Mode::Command { text, .. } = &app.mode {
        let help = app
            .message
            .clone()
            .unwrap_or_else(|| format!("Enter sends · Esc cancels · {}", super::app::COMMANDS));
        let mut lines = vec![format!("{COMMAND_PROMPT}{}", input_shown(text, width))];
        lines.extend(wrap(&visible_line(&help), width));
        lines.truncate(FOOTER_MAX);
        return lines;
    }
    let mut lines = match &app.message {
        Some(m) => wrap(&visible_line(m), width),
        None => keys_lines(width),
    };
    lines.truncate(FOOTER_MAX);
    lines
}

/// `FOOTER_KEYS` in as few lines of `width` as they fit, no key split.
fn keys_lines(width: u16) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for k in FOOTER_KEYS {
        match lines.last_mut() {
            Some(l) if text_width(l) + 3 + text_width(k) <= width => {
                l.push_str(" · ");
                l.push_str(k);
            }
            _ => lines.push(k.to_string()),
        }
    }
    lines
}

/// `text` in lines of at most `width` columns, broken at spaces, a word
/// longer than a line broken where it must be.
pub fn wrap(text: &str, width: u16) -> Vec<String> {
    let width = width.max(1);
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let line = lines.last_mut().expect("one line at least");
        let sep = u16::from(!line.is_empty());
        if text_width(line) + sep + text_width(word) <= width {
            if sep == 1 {
                line.push(' ');
            }
            line.push_str(word);
            continue;
        }
        let mut next = String::new();
        for ch in word.chars() {
            if text_width(&next) + text_width(&ch.to_string()) > width {
                lines.push(std::mem::take(&mut next));
            }
            next.push(ch);
        }
        lines.push(next);
    }
    lines.retain(|l| !l.is_empty());
    lines
}

fn popup(f: &mut Frame, area: Rect, title: &str, text: Text) {
    let w = area.width.saturating_sub(4).min(90).max(area.width.min(20));
    let h = (text.lines.len() as u16 + 4).min(area.height);
    let r = Rect {
        x: area.x + (area.width.saturating_sub(w)) / 2,
        y: area.y + (area.height.saturating_sub(h)) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(text).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" {title} ")),
        ),
        r,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use std::path::PathBuf;
    use std::time::Duration;

    /// A frame as plain text lines, trailing blanks cut.
    fn to_text(buf: &ratatui::buffer::Buffer) -> String {
        let area = buf.area;
        let mut out = String::new();
        for y in area.y..area.y + area.height {
            let mut line = String::new();
            for x in area.x..area.x + area.width {
                line.push_str(buf[(x, y)].symbol());
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    fn row(name: &str) -> Row {
        Row {
            name: name.into(),
            worker: None,
            parallel: false,
            branch: Some(format!("ralph/{name}")),
            root: PathBuf::from("/p"),
            agent: "claude".into(),
            state: State::Waiting,
            iteration: 3,
            max_iterations: 50,
            spec: Some((2, 5)),
            step: Some("3 Parse \u{1b}[31mthe input".into()),
            elapsed: Duration::from_secs(61),
            cost_usd: 1.25,
            tokens: 0,
            gate: Some(true),
            review: None,
            run_id: None,
            pid: None,
            waiting: Some("need the API key".into()),
            question: None,
            stream: None,
        }
    }

    fn frame(w: u16, h: u16, app: &App, log: &Log) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, &[row("a"), row("b")], app, log, 0, false))
            .unwrap();
        to_text(t.backend().buffer())
    }

    #[test]
    fn a_frame_shows_every_loop_and_the_log() {
        let log = Log {
            title: "a · session 4 (following)".into(),
            lines: (1..=30).map(|i| format!("line {i}")).collect(),
        };
        let text = frame(120, 20, &App::default(), &log);
        assert!(text.contains("ralph watch · 2 loops"), "{text}");
        assert!(text.contains("▶ a"), "{text}");
        for part in [
            "WAITING",
            "3/50",
            "2/5",
            "1m 1s",
            "$1.25",
            "gate ok",
            "3 Parse ^[[31mthe input",
            "line 30",
            "q quit",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert!(!text.contains('\u{1b}'));
        assert!(!text.contains("line 1\n"), "only what fits: {text}");
        assert!(!text.contains("scrolled"), "{text}");
        let up = frame(
            120,
            20,
            &App {
                scroll: 3,
                ..App::default()
            },
            &log,
        );
        assert!(
            up.contains("(following) · scrolled (End: follow)")
                && up.contains("line 27")
                && !up.contains("line 30"),
            "{up}"
        );
    }

    #[test]
    fn a_tiny_terminal_and_each_overlay_draw_without_panicking() {
        let log = Log::default();
        for (w, h) in [(40, 10), (20, 5), (1, 1), (0, 0)] {
            for mode in [
                Mode::Normal,
                Mode::Help,
                Mode::ConfirmStop(1, StopWhen::Now),
                Mode::Reason(0),
                Mode::Answer {
                    row: 0,
                    text: "x".repeat(300),
                },
            ] {
                let app = App {
                    mode,
                    ..App::default()
                };
                frame(w, h, &app, &log);
            }
        }
        let app = App {
            mode: Mode::Reason(0),
            ..App::default()
        };
        let text = frame(100, 20, &app, &log);
        assert!(text.contains("a waits: need the API key"), "{text}");
        let app = App {
            mode: Mode::ConfirmStop(1, StopWhen::Now),
            ..App::default()
        };
        assert!(frame(100, 20, &app, &log).contains("Stop the loop b now?"));
        let app = App {
            mode: Mode::ConfirmStop(1, StopWhen::AfterSession),
            ..App::default()
        };
        assert!(frame(100, 20, &app, &log).contains("Stop the loop b after its running session?"));
    }

    /// A loop that runs and waits for an answer to a question with options.
    fn asking() -> Row {
        let q = crate::work::question::Question::new(
            "Which database?\nWe need one now.",
            Some(crate::work::question::Blocker::Decision),
            &["Postgres".into(), "SQLite, for \u{1b}[2Jnow".into()],
        )
        .unwrap();
        Row {
            state: State::Asking { until: 600 },
            pid: Some(7),
            waiting: Some(q.text.clone()),
            question: Some(q),
            root: PathBuf::from("/p/wt"),
            ..row("c")
        }
    }

    #[test]
    fn a_waiting_loop_shows_its_question_options_and_how_to_answer() {
        assert_eq!(
            waiting_lines(&asking(), 0),
            [
                "c asks (blocker: a decision):",
                "  Which database?",
                "  We need one now.",
                "  1. Postgres",
                "  2. SQLite, for [2Jnow",
                "",
                "It waits 10m more for an answer, then ends WAITING.",
                "From a terminal in /p/wt: `ralph answer --option <1-2>`, or in words: `ralph answer \"<your answer>\"`",
            ]
        );
        assert_eq!(
            reason_keys(&asking()),
            "a: answer it here (1-2 and Enter picks an option) · any other key: close",
            "it runs: no resume"
        );
        let ended = Row {
            state: State::Waiting,
            pid: None,
            ..asking()
        };
        assert!(!waiting_lines(&ended, 0).iter().any(|l| l.contains("waits")));
        assert!(reason_keys(&ended).contains(" · r: resume it ("));
        // Its row says so, and its question in place of its step.
        let c = cells(&asking(), 0);
        assert_eq!(
            (c[2].as_str(), c[8].as_str()),
            (
                "WAITING, 10m left",
                "asks: Which database? We need one now. [1-2]"
            )
        );
        let mut t = Terminal::new(TestBackend::new(110, 24)).unwrap();
        let app = App {
            mode: Mode::Reason(0),
            ..App::default()
        };
        t.draw(|f| draw(f, &[asking()], &app, &Log::default(), 0, false))
            .unwrap();
        let text = to_text(t.backend().buffer());
        for part in [
            "waiting for a human",
            "c asks (blocker: a decision):",
            "  2. SQLite, for [2Jnow",
            "a: answer it here (1-2 and Enter picks an option)",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        assert!(!text.contains('\u{1b}'));
        // For scripts: after the table.
        let plain = plain_questions(&[row("a"), asking()], 0);
        assert!(
            plain.starts_with("\nc asks (blocker: a decision):\n")
                && plain.ends_with("`ralph answer \"<your answer>\"`\n"),
            "{plain}"
        );
    }

    #[test]
    fn a_command_is_typed_on_the_footer_with_what_it_takes() {
        let mut app = App {
            mode: Mode::Command {
                row: 0,
                text: "raise --iterations 5".into(),
            },
            ..App::default()
        };
        assert_eq!(
            footer_lines(&app, 130),
            [
                "command: raise --iterations 5",
                "Enter sends · Esc cancels · raise --iterations N | --cost USD | --time D | --tokens N · add TEXT · stop [--after-session]"
            ]
        );
        app.message = Some("\"--budget\" is no limit".into());
        assert_eq!(footer_lines(&app, 130)[1], "\"--budget\" is no limit");
    }

    #[test]
    fn the_answer_is_typed_on_the_footer_its_end_in_sight() {
        let mut app = App {
            mode: Mode::Answer {
                row: 0,
                text: "SQLite".into(),
            },
            ..App::default()
        };
        assert_eq!(
            footer_lines(&app, 80),
            [
                "answer: SQLite",
                "Enter sends · Esc cancels · a number alone picks that option"
            ]
        );
        app.message = Some("option 3 is not one of the question's (1 to 2)".into());
        assert_eq!(
            footer_lines(&app, 80)[1],
            "option 3 is not one of the question's (1 to 2)"
        );
        app.mode = Mode::Answer {
            row: 0,
            text: format!("{}end", "x".repeat(100)),
        };
        let line = &footer_lines(&app, 30)[0];
        assert!(
            line.starts_with("answer: x") && line.ends_with("xend"),
            "{line}"
        );
        assert_eq!(text_width(line), 29);
        let mut t = Terminal::new(TestBackend::new(110, 24)).unwrap();
        t.draw(|f| draw(f, &[asking()], &app, &Log::default(), 0, false))
            .unwrap();
        let text = to_text(t.backend().buffer());
        assert!(
            text.contains(" answer c ") && text.contains("1. Postgres"),
            "{text}"
        );
    }

    #[test]
    fn states_are_coloured_only_when_colour_is_wanted() {
        use crate::run::engine::Outcome;
        let fg = |s: State| state_style(&s, true).fg;
        assert_eq!(fg(State::Running), Some(Color::Green));
        assert_eq!(fg(State::Paused { until: 0 }), Some(Color::Cyan));
        assert_eq!(fg(State::Waiting), Some(Color::Yellow));
        assert_eq!(fg(State::Ended(Outcome::Complete)), Some(Color::Green));
        assert_eq!(fg(State::Killed), Some(Color::Red));
        assert_eq!(fg(State::Ended(Outcome::Failed)), Some(Color::Red));
        assert_eq!(fg(State::Ended(Outcome::EndedAbnormally)), Some(Color::Red));
        assert_eq!(fg(State::Idle), None);
        assert_eq!(state_style(&State::Waiting, false), Style::default());
    }

    #[test]
    fn the_table_takes_at_most_half_a_short_screen_and_once_is_the_table_alone() {
        let log = Log {
            title: "the log".into(),
            lines: Vec::new(),
        };
        let text = frame(100, 8, &App::default(), &log);
        let at = text.lines().position(|l| l.contains("the log")).unwrap();
        assert_eq!(at, 4, "{text}");
        assert_eq!(
            plain_table(&[row("a"), row("b")], 0),
            "loop  agent   state    iter  spec  elapsed  cost   verdicts  step\n\
             a     claude  WAITING  3/50  2/5   1m 1s    $1.25  gate ok   3 Parse ^[[31mthe input\n\
             b     claude  WAITING  3/50  2/5   1m 1s    $1.25  gate ok   3 Parse ^[[31mthe input\n"
        );
    }

    /// The cells of a row as wide as a busy loop's at each column.
    fn busy() -> [String; 9] {
        [
            "payments",
            "claude",
            "running",
            "12/50",
            "3/5",
            "1h 2m",
            "$12.34",
            "gate ok · review ok",
            "4 Checkout API with a long title",
        ]
        .map(String::from)
    }

    #[test]
    fn columns_fit_their_text_and_the_step_gives_way_first() {
        // 130 columns: every cell whole, the step the rest.
        assert_eq!(widths(&[busy()], 130), (2, [8, 6, 7, 5, 4, 7, 6, 19, 48]));
        // 80: the step down to its least, the verdicts still whole.
        assert_eq!(widths(&[busy()], 80), (1, [8, 6, 7, 5, 4, 7, 6, 19, 6]));
        let mut long = busy();
        long[1] = "claude/claude-sonnet-4-5".into();
        assert_eq!(widths(&[long.clone()], 80).1[1], 6, "the agent gives way");
        assert_eq!(widths(&[long], 80).1[7], 19);
        // 40: everything gives way, the step first.
        assert_eq!(widths(&[busy()], 40), (1, [4, 5, 7, 5, 4, 7, 6, 8, 0]));
        assert_eq!(fit("gate ok · review ok", 19), "gate ok · review ok");
        assert_eq!(fit("4 Checkout API", 8), "4 Check…");
        assert_eq!(fit("4 Checkout API", 3), "4…");
        assert_eq!(fit("4 Checkout API", 0), "");
    }

    #[test]
    fn news_wraps_whole_at_spaces() {
        assert_eq!(
            wrap("resumed b: its output", 12),
            ["resumed b:", "its output"]
        );
        assert_eq!(wrap("a ~/.local/x.log", 6), ["a", "~/.loc", "al/x.l", "og"]);
        assert_eq!(wrap("", 10), Vec::<String>::new());
        let app = App {
            message: Some("x ".repeat(200)),
            ..App::default()
        };
        assert_eq!(footer_lines(&app, 20).len(), FOOTER_MAX);
        let keys = "q quit · ↑↓ select · s stop · w why · a answer · r resume · o/n sessions · f follow · ? keys";
        assert_eq!(footer_lines(&App::default(), 92), [keys]);
        assert_eq!(
            footer_lines(&App::default(), 80),
            [
                "q quit · ↑↓ select · s stop · w why · a answer · r resume · o/n sessions",
                "f follow · ? keys"
            ]
        );
    }

    #[test]
    fn the_log_scrolls_within_its_lines() {
        let lines: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        assert_eq!(visible(&lines, 3, 0), &lines[7..]);
        assert_eq!(visible(&lines, 3, 2), &lines[5..8]);
        assert_eq!(visible(&lines, 3, 100), &lines[..3]);
        assert_eq!(visible(&lines, 20, 5), &lines[..]);
        assert_eq!(visible(&[], 3, 5), &[] as &[String]);
    }
}
