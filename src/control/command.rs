//! The commands a loop takes from outside: typed, checked once, here,
//! whoever sent them (a terminal, `ralph watch`, `ralph mcp`, a comment on
//! GitHub).

use serde::{Deserialize, Serialize};

pub use crate::work::question::{Answer, one_line};

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
    /// Tokens (input, output and cache), for those on a plan.
    Tokens(u64),
}

impl Limit {
    /// The one limit of those given (a face's fields: sessions, dollars, a
    /// span such as `30m`, tokens); `Ok(None)` when none or more than one
    /// is, for the face to say so in its words.
    pub fn one_of(
        iterations: Option<u64>,
        cost: Option<f64>,
        time: Option<&str>,
        tokens: Option<u64>,
    ) -> Result<Option<Limit>, String> {
        let time = time
            .map(|t| {
                t.parse::<crate::config::Span>()
                    .map(|s| Limit::Time(s.value().as_secs()))
                    .map_err(|e| format!("time: {e}"))
            })
            .transpose()?;
        let given = [
            iterations.map(|n| Limit::Iterations(u32::try_from(n).unwrap_or(u32::MAX))),
            cost.map(Limit::Cost),
            time,
            tokens.map(Limit::Tokens),
        ];
        let mut given = given.into_iter().flatten();
        Ok(match (given.next(), given.next()) {
            (Some(limit), None) => Some(limit),
            _ => None,
        })
    }
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
    /// An answer's question: the `since` of the WAITING it answers (an
    /// answer to an earlier question is no answer to the next).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    /// Where it was written, when that has an address (a comment's): told
    /// back there once it is taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    pub command: Command,
}

impl Sent {
    /// Whether it is for run `run` (one sent to no run in particular is
    /// for whichever runs).
    pub fn is_for(&self, run: &str) -> bool {
        self.run.as_deref().is_none_or(|r| r == run)
    }
}

impl Command {
    /// Whether it makes sense as sent (bounded texts, positive amounts);
    /// what is wrong.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Command::Answer(a) if a.text.trim().is_empty() => Err("the answer is empty".into()),
            Command::AddStep { text } if text.trim().is_empty() => Err("the step is empty".into()),
            Command::Raise(Limit::Iterations(0)) => {
                Err("raise the iterations by at least 1, not 0".into())
            }
            Command::Raise(Limit::Time(0)) => {
                Err("raise the time by at least a second, not 0".into())
            }
            Command::Raise(Limit::Tokens(0)) => Err("raise the tokens by at least 1, not 0".into()),
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
            Command::Raise(Limit::Tokens(n)) => format!("raise --max-tokens by {n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Which limit, and what was given, is named.
        assert_eq!(
            Command::Raise(Limit::Time(0)).check(),
            Err("raise the time by at least a second, not 0".into())
        );
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
            asked: None,
            via: None,
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
