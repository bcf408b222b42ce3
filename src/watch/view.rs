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
use super::model::{COLUMNS, Row, State, cells};
use crate::output::visible_line;

/// The log pane's content: its title and its lines (already sanitised).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Log {
    pub title: String,
    pub lines: Vec<String>,
}

const WIDTHS: [Constraint; 9] = [
    Constraint::Length(14),
    Constraint::Length(16),
    Constraint::Length(13),
    Constraint::Length(7),
    Constraint::Length(5),
    Constraint::Length(8),
    Constraint::Length(7),
    Constraint::Length(14),
    Constraint::Fill(1),
];

fn state_style(s: &State, color: bool) -> Style {
    if !color {
        return Style::default();
    }
    use crate::run::engine::Outcome;
    match s {
        State::Running => Style::default().fg(Color::Green),
        State::Paused { .. } => Style::default().fg(Color::Cyan),
        State::Waiting => Style::default()
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
    let [top, middle, bottom] = Layout::vertical([
        Constraint::Length(table_h),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    table(f, top, rows, Some(app.selected), now, color);
    log_pane(f, middle, log, app.scroll);
    footer(f, bottom, app);
    match &app.mode {
        Mode::Normal => {}
        Mode::Help => {
            let lines: Vec<Line> = KEYS
                .iter()
                .map(|(k, what)| Line::from(format!("{k:<16} {what}")))
                .collect();
            popup(f, area, "keys (any key closes)", Text::from(lines));
        }
        Mode::ConfirmStop(i) => {
            if let Some(r) = rows.get(*i) {
                let pid = r.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
                popup(
                    f,
                    area,
                    "stop?",
                    Text::from(format!(
                        "Stop the loop {}{pid}? It ends its session cleanly, as Ctrl+C would.\n\ny: stop · any other key: no",
                        visible_line(&r.name)
                    )),
                );
            }
        }
        Mode::Reason(i) => {
            if let Some(r) = rows.get(*i) {
                popup(
                    f,
                    area,
                    "waiting for a human",
                    Text::from(format!(
                        "{} waits: {}\n\nr: resume it (removes WAITING, runs `ralph loop --resume` as it was started) · any other key: close",
                        visible_line(&r.name),
                        visible_line(r.waiting.as_deref().unwrap_or(""))
                    )),
                );
            }
        }
    }
}

fn table(f: &mut Frame, area: Rect, rows: &[Row], selected: Option<usize>, now: u64, color: bool) {
    let header =
        TRow::new(COLUMNS.map(Cell::from)).style(Style::default().add_modifier(Modifier::BOLD));
    let body: Vec<TRow> = rows
        .iter()
        .map(|r| {
            let c = cells(r, now).map(|t| visible_line(&t));
            let state = state_style(&r.state, color);
            TRow::new(c.into_iter().enumerate().map(|(i, t)| {
                let cell = Cell::from(t);
                if i == 2 { cell.style(state) } else { cell }
            }))
        })
        .collect();
    let title = format!(" ralph watch · {} loop(s) · ? keys ", rows.len());
    let t = Table::new(body, WIDTHS)
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .highlight_symbol("▶ ");
    let mut st = TableState::default().with_selected(selected.filter(|_| !rows.is_empty()));
    f.render_stateful_widget(t, area, &mut st);
}

/// The table alone, over the whole frame (`--once`).
pub fn table_only(f: &mut Frame, rows: &[Row], now: u64) {
    table(f, f.area(), rows, None, now, false);
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

fn footer(f: &mut Frame, area: Rect, app: &App) {
    let text = match &app.message {
        Some(m) => visible_line(m),
        None => "q quit · ↑↓ select · s stop · w why · r resume · o/n sessions · f follow · ? keys"
            .into(),
    };
    f.render_widget(Paragraph::new(text), area);
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

/// A frame as plain text lines (for `--once`), trailing blanks cut.
pub fn to_text(buf: &ratatui::buffer::Buffer) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use std::path::PathBuf;
    use std::time::Duration;

    fn row(name: &str) -> Row {
        Row {
            name: name.into(),
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
            gate: Some(true),
            review: None,
            run_id: None,
            pid: None,
            waiting: Some("need the API key".into()),
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
        assert!(text.contains("ralph watch · 2 loop(s)"), "{text}");
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
                Mode::ConfirmStop(1),
                Mode::Reason(0),
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
            mode: Mode::ConfirmStop(1),
            ..App::default()
        };
        assert!(frame(100, 20, &app, &log).contains("Stop the loop b?"));
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
        let mut t = Terminal::new(TestBackend::new(100, 5)).unwrap();
        t.draw(|f| table_only(f, &[row("a"), row("b")], 0)).unwrap();
        let once = to_text(t.backend().buffer());
        assert!(
            once.contains("2 loop(s)") && once.contains("│b ") && !once.contains('▶'),
            "{once}"
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
