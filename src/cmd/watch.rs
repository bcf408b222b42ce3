use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use super::Run;
use crate::exit::{ExitStatus, Stop};
use crate::history::records::RunDir;
use crate::outln;
use crate::procs::signals::{install_signal_handlers, signals_received};
use crate::timefmt::now_epoch;
use crate::watch::act;
use crate::watch::app::{App, Effect, Key};
use crate::watch::model::{Row, gather};
use crate::watch::tail::Tail;
use crate::watch::view::{self, Log};
use crate::work::project::Project;

/// Every loop of this repository, live: a dashboard in the terminal.
///
/// One row per loop (the checkout and each worktree): its agent, state
/// (running, paused for a usage limit with the time left, WAITING, with the
/// time left to answer if it waits for an answer, complete, or `complete, 1
/// open` once steps were added since, failed, killed), iteration, spec
/// progress, elapsed time, cost, the gate's and the reviewer's last
/// verdicts, and its next step, or the question it asks; below, the
/// selected loop's running session as `ralph logs -f` shows it. Keys stop
/// a loop (as `ralph stop` does), show the question of one that waits,
/// answer it (as `ralph answer` does) or resume it, open a finished
/// session's log; `?` lists them. It reads only what the loops write, and
/// sends them what `ralph stop` and `ralph answer` would.
///
/// For scripts: `--once` prints the table once as plain text, each waiting
/// loop's question after it; `--json` the same rows once as JSON (a list,
/// one object a loop).
#[derive(Debug, Args)]
pub struct Watch {
    /// Print the loops' table once, as plain text (aligned columns, no box,
    /// no colour), and exit
    #[arg(long)]
    once: bool,

    /// Print the loops once as JSON (one object a loop: the same rows), and
    /// exit; implies --once
    #[arg(long)]
    json: bool,
}

/// Who sends what its keys send, as the journal and the loop's lines say.
const BY: &str = "watch";

/// How often the loops' files are read again.
const LOOK_EVERY: Duration = Duration::from_millis(1000);
/// How long a wait for a key lasts: the longest a change takes to show.
const KEY_WAIT: Duration = Duration::from_millis(250);

impl Run for Watch {
    fn run(&self) -> Result<ExitStatus> {
        let here = std::env::current_dir().context("cannot read the current folder")?;
        let main = crate::run::worktree::main_root(&here)
            .map_err(|_| {
                Stop::with(
                    ExitStatus::Usage,
                    format!(
                        "{} is not in a git repository: ralph watch shows the loops of one (its checkout and worktrees)",
                        here.display()
                    ),
                )
            })?;
        if self.once || self.json {
            return once(&main, self.json);
        }
        if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
            return Err(Stop::with(
                ExitStatus::Usage,
                "it needs a terminal; `ralph watch --once` prints the table once, `ralph watch --json` the same as JSON",
            ));
        }
        install_signal_handlers()?;
        let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        // Raw mode and the alternate screen; its panic hook puts the
        // terminal back before the panic is printed.
        let mut terminal = ratatui::init();
        exit_when_the_terminal_hangs_up();
        let result = live(&mut terminal, &main, color);
        ratatui::restore();
        result
    }
}

/// The loops once, for scripts: the table as plain text, or the rows as
/// JSON.
fn once(main: &Path, json: bool) -> Result<ExitStatus> {
    let rows = gather(main);
    if json {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        let now = now_epoch();
        crate::output::out(format_args!(
            "{}{}",
            view::plain_table(&rows, now),
            view::plain_questions(&rows, now)
        ));
    }
    Ok(ExitStatus::Success)
}

fn key_of(k: event::KeyEvent) -> Option<Key> {
    Some(match k.code {
        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Key::CtrlC,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        _ => return None,
    })
}

/// The session the log pane shows: the one picked, else the newest.
fn shown_session(row: &Row, picked: Option<u32>) -> Option<(u32, std::path::PathBuf)> {
    match (picked, &row.run_id) {
        (Some(n), Some(id)) => {
            let dir = Project::at(&row.root).runs().join(id);
            Some((n, dir.join(RunDir::stream_name(n))))
        }
        _ => row.stream.clone(),
    }
}

/// The log pane's lines: the session's, or that it printed nothing.
fn log_lines(tail: &Tail, row: Option<&Row>, n: Option<u32>) -> Vec<String> {
    let lines = tail.lines();
    match (row, n) {
        (
            Some(Row {
                run_id: Some(id),
                root,
                ..
            }),
            Some(n),
        ) if lines.is_empty() => {
            let run = RunDir::open(&Project::at(root).runs(), id);
            let record = run.records_newest_first().find(|r| r.session == n);
            vec![crate::watch::tail::printed_nothing(n, record.as_ref())]
        }
        _ => lines,
    }
}

/// The agent whose stream the log pane shows (`tail::agent_of`).
fn agent_shown(row: Option<&Row>, n: Option<u32>) -> crate::agent::Agent {
    match (row, n) {
        (
            Some(Row {
                run_id: Some(id),
                root,
                ..
            }),
            Some(n),
        ) => crate::watch::tail::agent_of(&RunDir::open(&Project::at(root).runs(), id), n),
        _ => crate::agent::Agent::default(),
    }
}

fn live(terminal: &mut ratatui::DefaultTerminal, main: &Path, color: bool) -> Result<ExitStatus> {
    let (mut app, mut tail, mut rows) = (App::default(), Tail::default(), gather(main));
    let (mut looked, mut second) = (Instant::now(), now_epoch());
    let (mut dirty, mut last_size) = (true, None);
    loop {
        if signals_received() > 0 {
            return Ok(ExitStatus::from(130));
        }
        if looked.elapsed() >= LOOK_EVERY {
            looked = Instant::now();
            dirty |= regather(main, &mut rows, &mut app);
        }
        app.selected = app.selected.min(rows.len().saturating_sub(1));
        let row = rows.get(app.selected);
        let shown = row.and_then(|r| shown_session(r, app.session));
        tail.show(shown.as_ref().map(|(_, p)| p.as_path()), || {
            agent_shown(row, shown.as_ref().map(|(n, _)| *n))
        });
        dirty |= tail.poll();
        // A resized window: crossterm says so only among the key events,
        // which are read once the terminal has input.
        let size = ratatui::crossterm::terminal::size().ok();
        dirty |= std::mem::replace(&mut last_size, size) != size;
        // The time columns count on while a loop runs or waits.
        let now = now_epoch();
        if now != second {
            second = now;
            dirty |= rows.iter().any(|r| r.pid.is_some());
        }
        if dirty {
            let log = Log {
                title: log_title(row, shown.as_ref().map(|(n, _)| *n), app.session),
                lines: log_lines(&tail, row, shown.as_ref().map(|(n, _)| *n)),
            };
            terminal.draw(|f| view::draw(f, &rows, &app, &log, now, color))?;
            dirty = false;
        }
        if !event::poll(KEY_WAIT)? {
            continue;
        }
        match event::read()? {
            Event::Key(k) if k.kind == KeyEventKind::Press => {
                let Some(key) = key_of(k) else { continue };
                dirty = true;
                match app.key(key, &rows) {
                    Effect::None => {}
                    Effect::Quit => return Ok(ExitStatus::Success),
                    Effect::Stop(i, when) => app.say(act::stop(&rows[i], BY, when), rows.get(i)),
                    Effect::Command(i, c) => app.say(act::command(&rows[i], BY, c), rows.get(i)),
                    Effect::Answer(i, reply) => {
                        app.say(
                            act::answer(&rows[i], BY, &reply, "r resumes it with this answer"),
                            rows.get(i),
                        );
                        looked = Instant::now() - LOOK_EVERY;
                    }
                    Effect::Resume(i) => {
                        app.say(act::resume(&rows[i]), rows.get(i));
                        looked = Instant::now() - LOOK_EVERY;
                    }
                }
            }
            Event::Resize(..) => dirty = true,
            _ => {}
        }
    }
}

/// Look at the loops again, and keep the news to those there; whether
/// anything shown changed.
fn regather(main: &Path, rows: &mut Vec<Row>, app: &mut App) -> bool {
    let now = gather(main);
    let changed = now != *rows;
    *rows = now;
    let said = app.message.clone();
    app.follow(rows);
    changed || app.message != said
}

/// The log pane's title: whose session it shows, and whether it follows
/// the newest (`chosen`: a session picked by hand).
fn log_title(row: Option<&Row>, shown: Option<u32>, chosen: Option<u32>) -> String {
    match (row, shown) {
        (Some(r), Some(n)) => format!(
            "{} · session {n}{}",
            r.name,
            if chosen.is_none() && r.pid.is_some() {
                " (following)"
            } else {
                ""
            }
        ),
        // A parallel run's sessions are its workers', each in its own row.
        (Some(r), None) if r.parallel => {
            format!("{} · its workers' sessions are in their rows", r.name)
        }
        (Some(r), None) => format!("{} · no session yet", r.name),
        (None, _) => "no loop in this repository yet: `ralph loop` starts one".into(),
    }
}

/// End the process once its terminal hangs up (its window closed). Watched
/// from a thread of its own because crossterm, waiting for a key, reads a
/// hung-up terminal's end of input again and again without returning: a
/// closed window once left `ralph watch` spinning a core, deaf to SIGTERM.
/// There is no terminal left to restore.
fn exit_when_the_terminal_hangs_up() {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    std::thread::spawn(|| {
        let stdin = std::io::stdin();
        loop {
            // Asking for no event still reports a hang-up, and reads nothing.
            let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::empty())];
            match poll(&mut fds, PollTimeout::from(500u16)) {
                Ok(n) if n > 0 => {
                    let r = fds[0].revents().unwrap_or(PollFlags::empty());
                    if r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
                        std::process::exit(129);
                    }
                }
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(_) => std::process::exit(129),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log pane's title: a session's, the newest followed; none yet;
    /// a parallel run's own row, whose sessions are in its workers' rows.
    #[test]
    fn the_log_title_says_whose_session_it_shows() {
        let row = crate::watch::model::tests::sample();
        assert_eq!(
            log_title(Some(&row), Some(3), None),
            "a · session 3 (following)"
        );
        assert_eq!(log_title(Some(&row), None, None), "a · no session yet");
        let run = Row {
            parallel: true,
            ..row
        };
        assert_eq!(
            log_title(Some(&run), None, None),
            "a · its workers' sessions are in their rows"
        );
    }
}
