//! A session's question to a human (its WAITING) and a human's answer:
//! text from outside the loop, bounded and made safe to show once, here.

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
}
