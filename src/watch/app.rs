//! The dashboard's state and what each key does to it: pure, so that every
//! key is a row in a test. Acting on a loop (stopping, resuming, answering
//! it) is an `Effect` the terminal side carries out.

use super::model::{Row, State};
use crate::control::written::{self, Verb, Written};
use crate::control::{Command, StopWhen};
use crate::run::tell::Reply;
use crate::work::question::TEXT_MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Enter,
    Esc,
    Backspace,
    CtrlC,
    Char(char),
}

/// What is over the table, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Help,
    /// Asks before stopping the loop of this row, now or after its
    /// running session.
    ConfirmStop(usize, StopWhen),
    /// Shows why this row's loop is waiting (its question); `a` answers
    /// it, `r` resumes it.
    Reason(usize),
    /// The answer to this row's question, as typed so far.
    Answer {
        row: usize,
        text: String,
    },
    /// A command to this row's running loop (`raise --iterations 5`, `add
    /// TEXT`, `stop --after-session`), as typed so far.
    Command {
        row: usize,
        text: String,
    },
}

/// What the terminal side does after a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    None,
    Quit,
    /// Stop the loop of this row (as `ralph stop` does, by watch).
    Stop(usize, StopWhen),
    /// Remove its WAITING and start its run again (`ralph loop --resume`).
    Resume(usize),
    /// Answer the question of this row's loop (as `ralph answer` does, by
    /// watch).
    Answer(usize, Reply),
    /// Send this row's running loop a command (as `ralph raise`, `ralph
    /// stop` do, by watch; a step added between its sessions).
    Command(usize, Command),
}

/// The most characters of a typed command.
const COMMAND_MAX: usize = 500;

/// What the command line takes, said when it cannot read what was typed.
pub const COMMANDS: &str =
    "raise --iterations N | --cost USD | --time D | --tokens N · add TEXT · stop [--after-session]";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    pub selected: usize,
    pub mode: Mode,
    /// Lines scrolled up from the end of the log pane (0: following).
    pub scroll: usize,
    /// The session shown in the log pane, when not the newest one.
    pub session: Option<u32>,
    /// A line of news at the bottom (what the last key did).
    pub message: Option<String>,
    /// The loop (its folder) the news is about: news of a loop that is
    /// gone is gone with it.
    pub about: Option<std::path::PathBuf>,
}

impl Default for App {
    fn default() -> Self {
        App {
            selected: 0,
            mode: Mode::Normal,
            scroll: 0,
            session: None,
            message: None,
            about: None,
        }
    }
}

/// Lines a page key scrolls.
const PAGE: usize = 10;

impl App {
    /// News of `row`'s loop, or of none.
    pub fn say(&mut self, text: String, row: Option<&Row>) {
        self.message = Some(text);
        self.about = row.map(|r| r.root.clone());
    }

    /// The rows as they are now: news of a loop no longer there (its
    /// worktree removed) would speak of what does not exist.
    pub fn follow(&mut self, rows: &[Row]) {
        if let Some(p) = &self.about
            && !rows.iter().any(|r| &r.root == p)
        {
            self.message = None;
            self.about = None;
        }
    }

    /// One key; `rows` as shown now. The news of the key before is old.
    pub fn key(&mut self, k: Key, rows: &[Row]) -> Effect {
        self.message = None;
        self.about = None;
        if k == Key::CtrlC {
            return Effect::Quit;
        }
        match self.mode.clone() {
            Mode::Help => {
                self.mode = Mode::Normal;
                Effect::None
            }
            Mode::ConfirmStop(i, when) => {
                self.mode = Mode::Normal;
                match k {
                    Key::Char('y') | Key::Enter => Effect::Stop(i, when),
                    _ => {
                        self.message = Some("not stopped".into());
                        Effect::None
                    }
                }
            }
            Mode::Reason(i) => {
                self.mode = Mode::Normal;
                match k {
                    Key::Char('r') => self.resume(i, rows),
                    Key::Char('a') => self.ask(i, rows),
                    _ => Effect::None,
                }
            }
            Mode::Answer { row, text } => self.typing(k, row, text, rows),
            Mode::Command { row, text } => self.commanding(k, row, text, rows),
            Mode::Normal => self.normal(k, rows),
        }
    }

    fn normal(&mut self, k: Key, rows: &[Row]) -> Effect {
        let row = rows.get(self.selected);
        match k {
            Key::Char('q') | Key::Esc => return Effect::Quit,
            Key::Char('?') | Key::Char('h') => self.mode = Mode::Help,
            Key::Up | Key::Char('k') => self.select(self.selected.saturating_sub(1)),
            Key::Down | Key::Char('j') => {
                self.select((self.selected + 1).min(rows.len().saturating_sub(1)))
            }
            Key::PageUp => self.scroll = self.scroll.saturating_add(PAGE),
            Key::PageDown => self.scroll = self.scroll.saturating_sub(PAGE),
            Key::Home => self.scroll = usize::MAX / 2,
            Key::End => self.scroll = 0,
            Key::Char('s') => self.stop(StopWhen::Now, rows),
            Key::Char('S') => self.stop(StopWhen::AfterSession, rows),
            Key::Char('a') => return self.ask(self.selected, rows),
            Key::Char(':') => match row {
                Some(r) if r.pid.is_some() => {
                    self.mode = Mode::Command {
                        row: self.selected,
                        text: String::new(),
                    }
                }
                Some(r) => self.say(
                    format!(
                        "{} is not running: a command goes to a running loop",
                        r.name
                    ),
                    row,
                ),
                None => {}
            },
            Key::Char('w') | Key::Enter => match row {
                Some(r) if r.waiting.is_some() => self.mode = Mode::Reason(self.selected),
                Some(r) => self.say(format!("{} is not waiting for a human", r.name), row),
                None => {}
            },
            Key::Char('r') => return self.resume(self.selected, rows),
            Key::Char('o') => self.open(row, -1),
            Key::Char('n') => self.open(row, 1),
            Key::Char('f') => {
                self.session = None;
                self.scroll = 0;
            }
            _ => {}
        }
        Effect::None
    }

    /// Ask before stopping the selected loop, if it runs.
    fn stop(&mut self, when: StopWhen, rows: &[Row]) {
        match rows.get(self.selected) {
            Some(r) if r.pid.is_some() => self.mode = Mode::ConfirmStop(self.selected, when),
            Some(r) => self.say(format!("{} is not running", r.name), Some(r)),
            None => {}
        }
    }

    /// Start typing an answer to row `i`'s question, if it asks one.
    fn ask(&mut self, i: usize, rows: &[Row]) -> Effect {
        match rows.get(i) {
            Some(r) if r.question.is_some() => {
                self.mode = Mode::Answer {
                    row: i,
                    text: String::new(),
                }
            }
            Some(r) => self.say(
                format!("{} asks nothing: it is not waiting for a human", r.name),
                Some(r),
            ),
            None => {}
        }
        Effect::None
    }

    /// A key while an answer is typed: Enter sends it (a number alone
    /// picks that option of a question that offers some), Esc drops it.
    /// It is bounded as `ralph answer`'s is; what cannot be sent is said,
    /// and the line stays for a fix.
    fn typing(&mut self, k: Key, i: usize, mut text: String, rows: &[Row]) -> Effect {
        let Some(q) = rows.get(i).and_then(|r| r.question.as_ref()) else {
            self.mode = Mode::Normal;
            self.message = Some("it no longer asks: not answered".into());
            return Effect::None;
        };
        match k {
            Key::Esc => {
                self.mode = Mode::Normal;
                self.message = Some("not answered".into());
                return Effect::None;
            }
            Key::Enter => {
                let typed = text.trim();
                let reply = match typed.parse::<u32>() {
                    Ok(n) if !q.options.is_empty() => q.pick(n).map(|_| Reply::Option(n)),
                    _ => crate::work::question::Answer::text(typed)
                        .map(|_| Reply::Text(typed.to_string())),
                };
                match reply {
                    Ok(reply) => {
                        self.mode = Mode::Normal;
                        return Effect::Answer(i, reply);
                    }
                    Err(why) => self.message = Some(why),
                }
            }
            k => {
                if let Some(why) = edit(&mut text, k, (TEXT_MAX, "an answer")) {
                    self.message = Some(why);
                }
            }
        }
        self.mode = Mode::Answer { row: i, text };
        Effect::None
    }

    /// A key while a command is typed: Enter reads it as a `/ralph`
    /// command is read (an answer is `a`'s), Esc drops it; what cannot be
    /// read is said, and the line stays for a fix.
    fn commanding(&mut self, k: Key, i: usize, mut text: String, rows: &[Row]) -> Effect {
        if rows.get(i).is_none_or(|r| r.pid.is_none()) {
            self.mode = Mode::Normal;
            self.message = Some("it no longer runs: no command sent".into());
            return Effect::None;
        }
        match k {
            Key::Esc => {
                self.mode = Mode::Normal;
                self.message = Some("no command sent".into());
                return Effect::None;
            }
            Key::Enter => {
                let line = format!("{} {}", written::PREFIX, text.trim());
                match written::read(&line) {
                    Written::Said(Verb::Answer, _) => {
                        self.message = Some("an answer is `a`'s: Esc, then a".into())
                    }
                    Written::Said(_, Ok(c)) => {
                        self.mode = Mode::Normal;
                        return Effect::Command(i, c);
                    }
                    Written::Said(_, Err(why)) | Written::Unknown(why) => self.message = Some(why),
                    Written::Nothing | Written::Misplaced(_) => {
                        self.message = Some(format!("type a command: {COMMANDS}"))
                    }
                }
            }
            k => {
                if let Some(why) = edit(&mut text, k, (COMMAND_MAX, "a command")) {
                    self.message = Some(why);
                }
            }
        }
        self.mode = Mode::Command { row: i, text };
        Effect::None
    }

    fn select(&mut self, i: usize) {
        if i != self.selected {
            self.selected = i;
            self.session = None;
            self.scroll = 0;
        }
    }

    /// Resume a loop that stopped for a human, or was stopped: not one
    /// that runs, or ended by itself.
    fn resume(&mut self, i: usize, rows: &[Row]) -> Effect {
        let Some(r) = rows.get(i) else {
            return Effect::None;
        };
        if matches!(r.state, State::Asking { .. }) {
            let text = format!("{} runs and waits for your answer: a answers it", r.name);
            self.say(text, Some(r));
            return Effect::None;
        }
        let resumable = match &r.state {
            State::Waiting | State::Killed => true,
            State::Ended(o) => o.resumable(),
            _ => false,
        };
        if r.pid.is_some() || !resumable {
            let text = format!(
                "{} cannot be resumed: it is {}",
                r.name,
                super::model::state_text(&r.state, 0)
            );
            self.say(text, Some(r));
            return Effect::None;
        }
        Effect::Resume(i)
    }

    /// An older (`-1`) or newer (`1`) session of the row's run in the log
    /// pane; past the newest, the newest again, followed.
    fn open(&mut self, row: Option<&Row>, step: i64) {
        let Some((newest, _)) = row.and_then(|r| r.stream.as_ref()) else {
            self.message = Some("no session to show".into());
            return;
        };
        let shown = self.session.unwrap_or(*newest) as i64;
        let next = (shown + step).max(1);
        self.scroll = 0;
        self.session = (next < *newest as i64).then_some(next as u32);
    }
}

/// A key on a line being typed (`what`, at most `max` characters): a
/// character added, the last taken back; why one was not added.
fn edit(text: &mut String, k: Key, (max, what): (usize, &str)) -> Option<String> {
    match k {
        Key::Backspace => {
            text.pop();
        }
        Key::Char(c) if c.is_control() => {}
        Key::Char(c) if text.chars().count() < max => text.push(c),
        Key::Char(_) => return Some(format!("{what} is at most {max} characters")),
        _ => {}
    }
    None
}

/// The keys, for `?`.
pub const KEYS: [(&str, &str); 14] = [
    ("↑ ↓  j k", "select a loop"),
    (
        "s",
        "stop the selected loop now (asks first; as `ralph stop`: its session ends as on Ctrl+C)",
    ),
    (
        "S",
        "stop it after its running session (asks first; `ralph stop --after-session`)",
    ),
    (
        "w  Enter",
        "why the selected loop waits for a human: its question",
    ),
    (
        "a",
        "answer its question: type the answer, or an option's number; Enter sends, Esc cancels",
    ),
    (
        "r",
        "resume it: remove WAITING, `ralph loop --resume` as it was started",
    ),
    (
        ":",
        "a command to the selected running loop: raise --iterations N (or --cost USD, --time D, --tokens N), add TEXT (a step, between its sessions), stop --after-session; Enter sends, Esc cancels",
    ),
    ("o", "show its previous session's log"),
    ("n", "show its next session's log"),
    ("f", "follow its running session again"),
    ("PgUp PgDn", "scroll the log"),
    ("Home End", "the log's start, its end"),
    ("?", "these keys"),
    ("q  Esc  Ctrl+C", "quit (the loops go on)"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::engine::Outcome;
    use crate::work::question::{Blocker, Question};
    use std::path::PathBuf;
    use std::time::Duration;

    fn row(name: &str, state: State, pid: Option<u32>, waiting: Option<&str>) -> Row {
        Row {
            name: name.into(),
            worker: None,
            parallel: false,
            branch: None,
            root: PathBuf::from(format!("/p/{name}")),
            agent: "claude".into(),
            state,
            iteration: 1,
            max_iterations: 5,
            spec: None,
            step: None,
            elapsed: Duration::ZERO,
            cost_usd: 0.0,
            tokens: 0,
            gate: None,
            review: None,
            run_id: None,
            pid,
            waiting: waiting.map(String::from),
            question: waiting.map(|w| Question::new(w, None, &[]).unwrap()),
            stream: Some((4, PathBuf::from("/s"))),
        }
    }

    /// A loop that runs and waits for an answer to a question with options.
    fn asking() -> Row {
        let q = Question::new(
            "Which db?",
            Some(Blocker::Decision),
            &["Postgres".into(), "SQLite".into()],
        )
        .unwrap();
        Row {
            question: Some(q),
            ..row(
                "c",
                State::Asking { until: 99 },
                Some(11),
                Some("Which db?"),
            )
        }
    }

    /// Keys typed one by one; the effect of the last.
    fn typed(a: &mut App, keys: &str, r: &[Row]) -> Effect {
        keys.chars().map(|c| a.key(Key::Char(c), r)).last().unwrap()
    }

    fn rows() -> Vec<Row> {
        vec![
            row("main", State::Running, Some(10), None),
            row("a", State::Waiting, None, Some("need a key")),
            row("b", State::Ended(Outcome::Complete), None, None),
        ]
    }

    #[test]
    fn stopping_asks_first_and_only_a_running_loop() {
        let (mut a, r) = (App::default(), rows());
        assert_eq!(a.key(Key::Char('s'), &r), Effect::None);
        assert_eq!(a.mode, Mode::ConfirmStop(0, StopWhen::Now));
        assert_eq!(a.key(Key::Char('y'), &r), Effect::Stop(0, StopWhen::Now));
        a.key(Key::Char('S'), &r);
        assert_eq!(a.mode, Mode::ConfirmStop(0, StopWhen::AfterSession));
        assert_eq!(
            a.key(Key::Enter, &r),
            Effect::Stop(0, StopWhen::AfterSession)
        );
        assert_eq!(a.mode, Mode::Normal);
        a.key(Key::Char('s'), &r);
        assert_eq!(
            a.key(Key::Char('x'), &r),
            Effect::None,
            "anything else cancels"
        );
        assert_eq!(a.message.as_deref(), Some("not stopped"));
        a.key(Key::Down, &r);
        assert_eq!(a.key(Key::Char('s'), &r), Effect::None);
        assert_eq!(a.message.as_deref(), Some("a is not running"));
        assert_eq!(a.mode, Mode::Normal);
    }

    #[test]
    fn a_command_typed_at_colon_goes_to_a_running_loop_as_written() {
        use crate::control::Limit;
        let (mut a, r) = (App::default(), rows());
        a.key(Key::Char(':'), &r);
        assert_eq!(typed(&mut a, "raise --iterations 3", &r), Effect::None);
        assert_eq!(
            a.mode,
            Mode::Command {
                row: 0,
                text: "raise --iterations 3".into()
            }
        );
        assert_eq!(
            a.key(Key::Enter, &r),
            Effect::Command(0, Command::Raise(Limit::Iterations(3)))
        );
        assert_eq!(a.mode, Mode::Normal);
        // What cannot be read is said, and the line stays for a fix.
        a.key(Key::Char(':'), &r);
        typed(&mut a, "raise --cost", &r);
        assert_eq!(a.key(Key::Enter, &r), Effect::None);
        assert!(
            a.message
                .as_deref()
                .unwrap()
                .starts_with("one limit, by one amount"),
            "{:?}",
            a.message
        );
        for _ in 0.."raise --cost".len() {
            a.key(Key::Backspace, &r);
        }
        typed(&mut a, "add Write the docs", &r);
        assert_eq!(
            a.key(Key::Enter, &r),
            Effect::Command(
                0,
                Command::AddStep {
                    text: "Write the docs".into()
                }
            )
        );
        a.key(Key::Char(':'), &r);
        typed(&mut a, "answer yes", &r);
        a.key(Key::Enter, &r);
        assert_eq!(
            a.message.as_deref(),
            Some("an answer is `a`'s: Esc, then a")
        );
        assert_eq!(a.key(Key::Esc, &r), Effect::None);
        assert_eq!(
            (a.mode.clone(), a.message.as_deref()),
            (Mode::Normal, Some("no command sent"))
        );
        a.key(Key::Char(':'), &r);
        typed(&mut a, "rm -rf /", &r);
        a.key(Key::Enter, &r);
        assert!(
            a.message
                .as_deref()
                .unwrap()
                .contains("is not a command ralph takes"),
            "{:?}",
            a.message
        );
        a.key(Key::Esc, &r);
        // A loop that is not running takes no command.
        a.key(Key::Down, &r);
        assert_eq!(a.key(Key::Char(':'), &r), Effect::None);
        assert_eq!(
            (a.mode.clone(), a.message.as_deref()),
            (
                Mode::Normal,
                Some("a is not running: a command goes to a running loop")
            )
        );
    }

    #[test]
    fn a_waiting_loop_shows_why_and_resumes() {
        let (mut a, r) = (App::default(), rows());
        a.key(Key::Enter, &r);
        assert_eq!(
            a.message.as_deref(),
            Some("main is not waiting for a human")
        );
        a.key(Key::Down, &r);
        a.key(Key::Char('w'), &r);
        assert_eq!(a.mode, Mode::Reason(1));
        assert_eq!(a.key(Key::Char('r'), &r), Effect::Resume(1));
        a.key(Key::Down, &r);
        assert_eq!(a.key(Key::Char('r'), &r), Effect::None);
        assert_eq!(
            a.message.as_deref(),
            Some("b cannot be resumed: it is complete")
        );
        a.key(Key::Up, &r);
        a.key(Key::Up, &r);
        assert_eq!(a.key(Key::Char('r'), &r), Effect::None, "running");
        // A run you stopped (or that was killed) goes on too.
        let stopped = vec![
            row("c", State::Ended(Outcome::Interrupted), None, None),
            row("d", State::Killed, None, None),
        ];
        let mut a = App::default();
        assert_eq!(a.key(Key::Char('r'), &stopped), Effect::Resume(0));
        a.key(Key::Down, &stopped);
        assert_eq!(a.key(Key::Char('r'), &stopped), Effect::Resume(1));
    }

    #[test]
    fn an_option_is_picked_by_its_number_and_enter() {
        let r = vec![rows()[0].clone(), asking()];
        let mut a = App::default();
        assert_eq!(a.key(Key::Char('a'), &r), Effect::None);
        assert_eq!(
            a.message.as_deref(),
            Some("main asks nothing: it is not waiting for a human")
        );
        a.key(Key::Down, &r);
        a.key(Key::Char('a'), &r);
        assert_eq!(
            a.mode,
            Mode::Answer {
                row: 1,
                text: String::new()
            }
        );
        // An option it does not offer: said, and the line stays to fix.
        typed(&mut a, "3", &r);
        assert_eq!(a.key(Key::Enter, &r), Effect::None);
        assert_eq!(
            a.message.as_deref(),
            Some("option 3 is not one of the question's (1 to 2)")
        );
        a.key(Key::Backspace, &r);
        typed(&mut a, "2", &r);
        assert_eq!(a.key(Key::Enter, &r), Effect::Answer(1, Reply::Option(2)));
        assert_eq!((a.mode.clone(), a.message.as_deref()), (Mode::Normal, None));
        // From the question's popup too.
        a.key(Key::Char('w'), &r);
        assert_eq!(a.mode, Mode::Reason(1));
        a.key(Key::Char('a'), &r);
        assert!(matches!(a.mode, Mode::Answer { row: 1, .. }));
    }

    #[test]
    fn an_answer_in_words_is_typed_bounded_and_escape_drops_it() {
        let r = vec![asking(), rows()[1].clone()];
        let mut a = App::default();
        a.key(Key::Char('a'), &r);
        // Keys that mean something else outside the line are text in it;
        // a control character is no text.
        typed(&mut a, "SQLite, q? \u{1b}", &r);
        assert_eq!(
            a.key(Key::Enter, &r),
            Effect::Answer(0, Reply::Text("SQLite, q?".into()))
        );
        a.key(Key::Char('a'), &r);
        assert_eq!(a.key(Key::Enter, &r), Effect::None, "nothing typed");
        assert_eq!(a.message.as_deref(), Some("the answer is empty"));
        typed(&mut a, "no", &r);
        assert_eq!(a.key(Key::Esc, &r), Effect::None);
        assert_eq!(
            (a.mode.clone(), a.message.as_deref()),
            (Mode::Normal, Some("not answered"))
        );
        // A number is words to a question that offers no options.
        a.key(Key::Down, &r);
        a.key(Key::Char('a'), &r);
        typed(&mut a, "42", &r);
        assert_eq!(
            a.key(Key::Enter, &r),
            Effect::Answer(1, Reply::Text("42".into()))
        );
        // As long as `ralph answer` keeps, and no longer.
        a.key(Key::Char('a'), &r);
        for _ in 0..TEXT_MAX + 5 {
            a.key(Key::Char('x'), &r);
        }
        let Mode::Answer { text, .. } = &a.mode else {
            panic!("{:?}", a.mode)
        };
        assert_eq!(text.chars().count(), TEXT_MAX);
        assert_eq!(
            a.message.as_deref(),
            Some("an answer is at most 4000 characters")
        );
        // Its loop no longer asks (answered elsewhere): the line goes.
        let mut gone = r.clone();
        gone[1].question = None;
        assert_eq!(a.key(Key::Enter, &gone), Effect::None);
        assert_eq!(a.mode, Mode::Normal);
        assert_eq!(
            a.message.as_deref(),
            Some("it no longer asks: not answered")
        );
        // Ctrl+C still quits.
        a.key(Key::Char('a'), &r);
        assert_eq!(a.key(Key::CtrlC, &r), Effect::Quit);
    }

    #[test]
    fn a_loop_that_waits_for_an_answer_is_answered_not_resumed() {
        let r = vec![asking()];
        let mut a = App::default();
        assert_eq!(a.key(Key::Char('r'), &r), Effect::None);
        assert_eq!(
            a.message.as_deref(),
            Some("c runs and waits for your answer: a answers it")
        );
        a.key(Key::Char('s'), &r);
        assert_eq!(a.mode, Mode::ConfirmStop(0, StopWhen::Now), "it runs");
    }

    #[test]
    fn selection_stays_in_bounds_and_resets_the_log() {
        let (mut a, r) = (App::default(), rows());
        a.key(Key::Up, &r);
        assert_eq!(a.selected, 0);
        for _ in 0..5 {
            a.key(Key::Char('j'), &r);
        }
        assert_eq!(a.selected, 2);
        a.key(Key::Char('o'), &r);
        a.key(Key::PageUp, &r);
        assert_eq!((a.session, a.scroll), (Some(3), 10));
        a.key(Key::Char('k'), &r);
        assert_eq!((a.selected, a.session, a.scroll), (1, None, 0));
        assert_eq!(App::default().key(Key::Down, &[]), Effect::None);
    }

    #[test]
    fn sessions_step_back_and_forth_and_follow_again() {
        let (mut a, r) = (App::default(), rows());
        for _ in 0..6 {
            a.key(Key::Char('o'), &r);
        }
        assert_eq!(a.session, Some(1), "not before the first");
        a.key(Key::Char('n'), &r);
        assert_eq!(a.session, Some(2));
        a.key(Key::Char('n'), &r);
        assert_eq!(a.session, Some(3));
        a.key(Key::Char('n'), &r);
        assert_eq!(a.session, None, "the newest again: followed");
        a.key(Key::Char('o'), &r);
        a.key(Key::PageUp, &r);
        a.key(Key::PageDown, &r);
        a.key(Key::PageDown, &r);
        assert_eq!(a.scroll, 0);
        a.key(Key::Home, &r);
        assert!(a.scroll > 1000);
        a.key(Key::End, &r);
        assert_eq!(a.scroll, 0);
        a.key(Key::Home, &r);
        a.key(Key::Char('f'), &r);
        assert_eq!((a.session, a.scroll), (None, 0));
    }

    #[test]
    fn news_lasts_until_the_next_key_or_its_loop_is_gone() {
        let (mut a, mut r) = (App::default(), rows());
        a.key(Key::Down, &r);
        a.key(Key::Char('s'), &r);
        assert_eq!(a.message.as_deref(), Some("a is not running"));
        a.follow(&r);
        assert_eq!(
            a.message.as_deref(),
            Some("a is not running"),
            "still there"
        );
        r[1].root = PathBuf::from("/elsewhere");
        a.follow(&r);
        assert_eq!((a.message.as_deref(), a.about.as_ref()), (None, None));
        a.key(Key::Char('s'), &r);
        a.key(Key::Char('x'), &r);
        assert_eq!(a.message, None, "an answer to the key before");
        a.say("about nothing".into(), None);
        a.follow(&[]);
        assert_eq!(a.message.as_deref(), Some("about nothing"));
    }

    #[test]
    fn help_and_quitting() {
        let (mut a, r) = (App::default(), rows());
        a.key(Key::Char('?'), &r);
        assert_eq!(a.mode, Mode::Help);
        assert_eq!(a.key(Key::Char('q'), &r), Effect::None, "closes the help");
        assert_eq!(a.key(Key::Char('q'), &r), Effect::Quit);
        assert_eq!(a.key(Key::Esc, &r), Effect::Quit);
        a.key(Key::Char('s'), &r);
        assert_eq!(a.key(Key::CtrlC, &r), Effect::Quit, "Ctrl+C always quits");
    }
}
