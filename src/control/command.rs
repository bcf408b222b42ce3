//! The commands a loop takes from outside, and the question a session asks:
//! typed, bounded and made safe to show once, here, whoever sent them (a
//! terminal, `ralph watch`, `ralph mcp`, a comment on GitHub).

use serde::{Deserialize, Serialize};

/// Longest question or answer kept, in characters: a phone's screen or
/// two; the rest is cut, and said to be.
pub const TEXT_MAX: usize = 4000;
/// Longest option, in characters.
pub const OPTION_MAX: usize = 200;
/// Most options a question offers.
pub const OPTIONS_MAX: usize = 9;

/// What kind of blocker a question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum Blocker {
    /// A decision only a human can make (a design choice, a trade-off).
    Decision,
    /// Access or a credential the session does not have.
    Access,
    /// The spec is unclear or contradicts itself.
    UnclearSpec,
    /// A check fails that the session cannot fix.
    FailingCheck,
}

impl Blocker {
    pub fn word(self) -> &'static str {
        match self {
            Blocker::Decision => "decision",
            Blocker::Access => "access",
            Blocker::UnclearSpec => "unclear-spec",
            Blocker::FailingCheck => "failing-check",
        }
    }

    pub fn parse(word: &str) -> Option<Blocker> {
        [
            Blocker::Decision,
            Blocker::Access,
            Blocker::UnclearSpec,
            Blocker::FailingCheck,
        ]
        .into_iter()
        .find(|b| b.word() == word)
    }

    /// As a person reads it.
    pub fn text(self) -> &'static str {
        match self {
            Blocker::Decision => "a decision",
            Blocker::Access => "access or a credential",
            Blocker::UnclearSpec => "the spec is unclear",
            Blocker::FailingCheck => "a check fails that it cannot fix",
        }
    }
}

/// A session's question to a human (its WAITING): the text, what kind of
/// blocker, and the answers it offers (none: free text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker: Option<Blocker>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// An answer: free text, or the number of one of the question's options
/// (1 first) with that option's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<u32>,
}

/// When a stop takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopWhen {
    /// The running session is ended now (as Ctrl+C ends it).
    Now,
    /// No new session starts; the running one ends as it will.
    AfterSession,
}

/// A limit a command raises, and by how much.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "limit", content = "by")]
pub enum Limit {
    Iterations(u32),
    /// US dollars.
    Cost(f64),
    /// Seconds.
    Time(u64),
}

/// What a loop is told to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Command {
    Answer(Answer),
    Stop { when: StopWhen },
    AddStep { text: String },
    Raise(Limit),
}

/// A command as sent: who sent it (`terminal`, `watch`, `mcp`,
/// `github:<login>`), when (ms since the epoch), to which run (`None`: the
/// project's loop, whichever runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sent {
    pub v: u32,
    pub at: u64,
    pub by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub command: Command,
}

/// Text from outside made safe to keep and to show: control characters
/// (escape sequences, NULs) dropped but for newlines and tabs, at most
/// `max` characters (a cut said as `…`), trimmed.
pub fn bounded(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect();
    let clean = clean.trim();
    match clean.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", clean[..i].trim_end()),
        None => clean.to_string(),
    }
}

/// One line of text from outside (an option, a step), made safe.
pub fn one_line(text: &str, max: usize) -> String {
    bounded(&text.replace(['\n', '\r', '\t'], " "), max)
}

impl Question {
    /// A question as a session asks it, bounded; why it cannot be asked.
    pub fn new(
        text: &str,
        blocker: Option<Blocker>,
        options: &[String],
    ) -> Result<Question, String> {
        let text = bounded(text, TEXT_MAX);
        if text.is_empty() {
            return Err("the question is empty: say what a human has to decide or do".into());
        }
        if options.len() > OPTIONS_MAX {
            return Err(format!(
                "{} options: at most {OPTIONS_MAX} (a person picks one by its number)",
                options.len()
            ));
        }
        let options: Vec<String> = options.iter().map(|o| one_line(o, OPTION_MAX)).collect();
        if let Some(n) = options.iter().position(String::is_empty) {
            return Err(format!("option {} is empty", n + 1));
        }
        Ok(Question {
            text,
            blocker,
            options,
        })
    }

    /// The answer that picks option `n` (1 first); why not.
    pub fn pick(&self, n: u32) -> Result<Answer, String> {
        match self.options.get((n as usize).wrapping_sub(1)) {
            Some(o) => Ok(Answer {
                text: o.clone(),
                option: Some(n),
            }),
            None if self.options.is_empty() => {
                Err("the question offers no options: answer it in words".into())
            }
            None => Err(format!(
                "option {n} is not one of the question's (1 to {})",
                self.options.len()
            )),
        }
    }

    /// Its lines as a person reads them: the question, the blocker, and
    /// each option numbered.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![self.text.clone()];
        if let Some(b) = self.blocker {
            out.push(format!("(blocker: {})", b.text()));
        }
        out.extend(
            self.options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("  {}. {o}", i + 1)),
        );
        out
    }
}

impl Answer {
    /// Free text as an answer, bounded; why it cannot be one.
    pub fn text(text: &str) -> Result<Answer, String> {
        let text = bounded(text, TEXT_MAX);
        if text.is_empty() {
            return Err("the answer is empty".into());
        }
        Ok(Answer { text, option: None })
    }

    /// As the next session is handed it.
    pub fn said(&self) -> String {
        match self.option {
            Some(n) => format!("option {n}: {}", self.text),
            None => self.text.clone(),
        }
    }
}

impl Command {
    /// Whether it makes sense as sent (bounded texts, positive amounts);
    /// what is wrong.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Command::Answer(a) if a.text.trim().is_empty() => Err("the answer is empty".into()),
            Command::AddStep { text } if text.trim().is_empty() => Err("the step is empty".into()),
            Command::Raise(Limit::Iterations(0)) | Command::Raise(Limit::Time(0)) => {
                Err("raise by more than nothing".into())
            }
            Command::Raise(Limit::Cost(c)) if !(c.is_finite() && *c > 0.0 && *c < 1e6) => Err(
                format!("raise the cost by a positive amount of dollars, not {c}"),
            ),
            _ => Ok(()),
        }
    }

    /// As the journal and a person read it.
    pub fn describe(&self) -> String {
        match self {
            Command::Answer(a) => format!("answer: {}", one_line(&a.said(), 120)),
            Command::Stop {
                when: StopWhen::Now,
            } => "stop now".into(),
            Command::Stop {
                when: StopWhen::AfterSession,
            } => "stop after this session".into(),
            Command::AddStep { text } => format!("add a step: {}", one_line(text, 120)),
            Command::Raise(Limit::Iterations(n)) => format!("raise --max-iterations by {n}"),
            Command::Raise(Limit::Cost(c)) => {
                format!("raise --max-cost by {}", crate::output::usd(*c))
            }
            Command::Raise(Limit::Time(s)) => format!(
                "raise --max-time by {}",
                crate::timefmt::human_duration(std::time::Duration::from_secs(*s))
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_outside_is_bounded_and_shows_no_escapes() {
        assert_eq!(bounded("  a\u{1b}[2Jb\0c\n d\t ", 100), "a[2Jbc\n d");
        assert_eq!(bounded("héllo world", 5), "héllo…");
        assert_eq!(
            bounded(&"x".repeat(10 << 20), TEXT_MAX).chars().count(),
            TEXT_MAX + 1
        );
        assert_eq!(one_line("two\nlines\r", 50), "two lines");
    }

    #[test]
    fn a_question_is_refused_empty_or_with_too_many_or_empty_options() {
        assert!(
            Question::new(" \u{1b} ", None, &[])
                .unwrap_err()
                .contains("empty")
        );
        let nine: Vec<String> = (1..=10).map(|n| n.to_string()).collect();
        assert!(
            Question::new("q", None, &nine)
                .unwrap_err()
                .contains("at most 9")
        );
        assert_eq!(
            Question::new("q", None, &["a".into(), "\n".into()]).unwrap_err(),
            "option 2 is empty"
        );
        let q = Question::new(
            "Which db?",
            Some(Blocker::Decision),
            &["Pg\nSQL".into(), "SQLite".into()],
        )
        .unwrap();
        assert_eq!(q.options, ["Pg SQL", "SQLite"]);
        assert_eq!(
            q.lines(),
            [
                "Which db?",
                "(blocker: a decision)",
                "  1. Pg SQL",
                "  2. SQLite"
            ]
        );
    }

    #[test]
    fn an_option_is_picked_by_its_number_from_one() {
        let q = Question::new("q", None, &["a".into(), "b".into()]).unwrap();
        assert_eq!(
            q.pick(2),
            Ok(Answer {
                text: "b".into(),
                option: Some(2)
            })
        );
        assert_eq!(
            q.pick(0).unwrap_err(),
            "option 0 is not one of the question's (1 to 2)"
        );
        assert_eq!(
            q.pick(3).unwrap_err(),
            "option 3 is not one of the question's (1 to 2)"
        );
        let free = Question::new("q", None, &[]).unwrap();
        assert!(free.pick(1).unwrap_err().contains("no options"));
        assert_eq!(q.pick(2).unwrap().said(), "option 2: b");
    }

    #[test]
    fn blockers_read_back_from_their_words() {
        for b in [
            Blocker::Decision,
            Blocker::Access,
            Blocker::UnclearSpec,
            Blocker::FailingCheck,
        ] {
            assert_eq!(Blocker::parse(b.word()), Some(b));
        }
        assert_eq!(Blocker::parse("other"), None);
    }

    #[test]
    fn commands_that_make_no_sense_are_refused_and_the_rest_described() {
        let bad = [
            Command::Answer(Answer {
                text: " ".into(),
                option: None,
            }),
            Command::AddStep { text: "".into() },
            Command::Raise(Limit::Iterations(0)),
            Command::Raise(Limit::Cost(f64::NAN)),
            Command::Raise(Limit::Cost(-1.0)),
            Command::Raise(Limit::Time(0)),
        ];
        for c in bad {
            assert!(c.check().is_err(), "{c:?}");
        }
        let rows = [
            (
                Command::Raise(Limit::Iterations(5)),
                "raise --max-iterations by 5",
            ),
            (
                Command::Raise(Limit::Cost(2.5)),
                "raise --max-cost by $2.50",
            ),
            (
                Command::Raise(Limit::Time(5400)),
                "raise --max-time by 1h 30m",
            ),
            (
                Command::Stop {
                    when: StopWhen::AfterSession,
                },
                "stop after this session",
            ),
            (
                Command::AddStep {
                    text: "Docs\nnow".into(),
                },
                "add a step: Docs now",
            ),
        ];
        for (c, said) in rows {
            assert!(c.check().is_ok(), "{c:?}");
            assert_eq!(c.describe(), said);
        }
    }

    #[test]
    fn a_sent_command_reads_back_from_its_wire_form() {
        let s = Sent {
            v: 1,
            at: 5,
            by: "terminal".into(),
            run: Some("r1".into()),
            command: Command::Raise(Limit::Cost(1.5)),
        };
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(
            text,
            r#"{"v":1,"at":5,"by":"terminal","run":"r1","command":{"kind":"raise","limit":"cost","by":1.5}}"#
        );
        assert_eq!(serde_json::from_str::<Sent>(&text).unwrap(), s);
    }
}
