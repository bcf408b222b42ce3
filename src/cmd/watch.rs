use std::io::IsTerminal;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use super::Run;
use crate::control::{Command as ControlCommand, StopWhen};
use crate::exit::{ExitStatus, Stop};
use crate::history::records::RunDir;
use crate::outln;
use crate::procs::signals::{install_signal_handlers, signals_received};
use crate::run::lock as runlock;
use crate::run::tell::{self, NotSent, Reply};
use crate::timefmt::now_epoch;
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
                    Effect::Stop(i, when) => app.say(stop(&rows[i], when), rows.get(i)),
                    Effect::Command(i, c) => app.say(command(&rows[i], c), rows.get(i)),
                    Effect::Answer(i, reply) => {
                        app.say(answer(&rows[i], &reply), rows.get(i));
                        looked = Instant::now() - LOOK_EVERY;
                    }
                    Effect::Resume(i) => {
                        app.say(resume(&rows[i]), rows.get(i));
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

/// Answer the question of a row's loop as `ralph answer` does, sent by
/// watch; what came of it.
fn answer(row: &Row, reply: &Reply) -> String {
    match tell::answer(&row.root, "watch", reply, None) {
        Ok(sent) => answered_text(&row.name, &sent),
        Err(e) => format!("{} was not answered: {}", row.name, not_sent_text(e)),
    }
}

/// What an answer sent comes to, as the footer says it.
fn answered_text(name: &str, sent: &tell::Answered) -> String {
    let said = crate::work::question::one_line(&sent.answer.said(), 200);
    match &sent.running {
        Some(l) => format!(
            "answered {name}: {said} (sent by watch); its loop (pid {}) goes on with it",
            l.pid
        ),
        None => format!(
            "answered {name}: {said} (sent by watch); no loop runs there: r resumes it with this answer"
        ),
    }
}

fn not_sent_text(e: NotSent) -> String {
    match e {
        NotSent::Nothing(why) | NotSent::Refused(why) => why,
        NotSent::Failed(e) => format!("{e:#}"),
    }
}

/// Stop a row's loop: as `ralph stop` does (sent by watch, journaled), or
/// for a parallel run's worker, whose inbox nobody watches while its
/// session runs, now as Ctrl+C in its terminal would (SIGINT).
/// A command typed at `:` sent to `row`'s running loop, as `ralph raise`
/// sends one; what came of it, in a line.
fn command(row: &Row, c: ControlCommand) -> String {
    let said = c.describe();
    match tell::command(&row.root, "watch", c) {
        Ok(l) => format!("sent {} (pid {}): {said}", row.name, l.pid),
        Err(e) => format!("cannot send {} {said}: {}", row.name, not_sent_text(e)),
    }
}

fn stop(row: &Row, when: StopWhen) -> String {
    if row.worker.is_none() || when == StopWhen::AfterSession {
        let said = match when {
            StopWhen::Now => "now: it ends its session cleanly",
            StopWhen::AfterSession => "after its running session",
        };
        return match tell::command(&row.root, "watch", ControlCommand::Stop { when }) {
            Ok(l) => format!("asked {} (pid {}) to stop {said}", row.name, l.pid),
            Err(e) => format!("cannot stop {}: {}", row.name, not_sent_text(e)),
        };
    }
    let running = runlock::running(&Project::at(&row.root).lock());
    match running {
        Some(l) if Some(l.pid) == row.pid => {
            let pid = nix::unistd::Pid::from_raw(l.pid as i32);
            match nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT) {
                Ok(()) => format!(
                    "asked {} (pid {}) to stop: it ends its session cleanly",
                    row.name, l.pid
                ),
                Err(e) => format!("cannot stop {} (pid {}): {e}", row.name, l.pid),
            }
        }
        _ => format!("{} is no longer running", row.name),
    }
}

/// Resume a loop as it was started: remove its WAITING, and run the same
/// `ralph loop` command line with `--resume`, in the same folder, in the
/// background (its output in ralph's state folder).
fn resume(row: &Row) -> String {
    match try_resume(row) {
        Ok(said) => said,
        Err(e) => format!("{e:#}"),
    }
}

fn try_resume(row: &Row) -> Result<String> {
    use crate::history::invocation;
    let project = Project::at(&row.root);
    let manual = format!("run `ralph loop --resume` in {}", row.root.display());
    let inv = invocation::load(&row.root)
        .filter(|i| Some(&i.run_id) == row.run_id.as_ref())
        .with_context(|| format!("no record of how {}'s run was started: {manual}", row.name))?;
    let args = invocation::resume_args(&inv.args).with_context(|| {
        format!(
            "{} runs claude's TUI (--interactive), which needs a terminal of its own: {manual}",
            row.name
        )
    })?;
    // An answer sent to its question is taken by `--resume`, which needs
    // the question it answers: WAITING stays for it.
    let waiting = crate::work::sentinel::Waiting::read(&project.waiting())?;
    if let Some(w) = waiting
        && !tell::answer_pending(&row.root, &w)
    {
        crate::work::sentinel::remove(&project.waiting())?;
    }
    let out = crate::trust::store::lock_file(&row.root).with_extension("resumed.log");
    let child = start_detached(&args, &inv.cwd, &out)?;
    Ok(format!(
        "resumed {} (pid {}): `ralph {}`; its output: {}",
        row.name,
        child,
        args.join(" "),
        home_as_tilde(&out, std::env::var_os("HOME").as_deref())
    ))
}

/// `ralph ARGS` started in `cwd` in the background, in a session of its
/// own (it outlives whoever started it, and no key or hang-up of theirs
/// reaches it), its output appended to `out` (in ralph's state folder);
/// its pid. It is waited for by a thread of ours, so it leaves no zombie.
pub(crate) fn start_detached(args: &[String], cwd: &Path, out: &Path) -> Result<u32> {
    if let Some(dir) = out.parent() {
        crate::trust::store::private_dir(dir)?;
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .with_context(|| format!("cannot open {}", out.display()))?;
    let exe = std::env::current_exe().context("cannot find ralph's own program")?;
    let mut c = Command::new(exe);
    c.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            nix::unistd::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
    // ralph's secrets left this process's environment as it started: the
    // run gets them on its stdin, as its command line needs them.
    let handed = crate::secrets::hand_to(&mut c, |_| true);
    let mut child = c.spawn().context("cannot start ralph loop")?;
    if let Err(e) = crate::secrets::give(&mut child, handed) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e).context("cannot hand the run its secrets");
    }
    let pid = child.id();
    std::thread::spawn(move || child.wait());
    Ok(pid)
}

/// A path under the home folder as `~/...`: the footer has one line or two
/// for it, and the home is the part a user knows.
fn home_as_tilde(p: &Path, home: Option<&std::ffi::OsStr>) -> String {
    let under = home
        .filter(|h| !h.is_empty())
        .and_then(|h| p.strip_prefix(h).ok());
    match under {
        Some(rest) => format!("~/{}", rest.display()),
        None => p.display().to_string(),
    }
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

    #[test]
    fn a_path_at_home_reads_from_the_tilde() {
        let p = Path::new("/home/u/.local/state/ralph/loops/k.resumed.log");
        let home = |h: &str| Some(std::ffi::OsString::from(h));
        assert_eq!(
            home_as_tilde(p, home("/home/u").as_deref()),
            "~/.local/state/ralph/loops/k.resumed.log"
        );
        assert_eq!(
            home_as_tilde(p, home("/home/us").as_deref()),
            p.display().to_string()
        );
        assert_eq!(
            home_as_tilde(p, home("").as_deref()),
            p.display().to_string()
        );
        assert_eq!(home_as_tilde(p, None), p.display().to_string());
    }
}
