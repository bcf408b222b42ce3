//! A command as a person writes it where a loop reads (a comment on GitHub,
//! a reply on the ntfy topic): `/ralph <verb> ...` beginning the first
//! line, read here, pure, whoever wrote it (who may is judged elsewhere).

use super::command::{Command, Limit, StopWhen};
use crate::work::question::Answer;

/// What every command begins with.
pub const PREFIX: &str = "/ralph";

/// The commands a person can write, and how each is said wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Answer,
    Stop,
    Raise,
    Add,
}

/// Each verb as written, and its usage (said when it is written wrong).
const VERBS: &[(Verb, &str, &str)] = &[
    (
        Verb::Answer,
        "answer",
        "`/ralph answer <your answer>` or `/ralph answer --option N`",
    ),
    (
        Verb::Stop,
        "stop",
        "`/ralph stop` (now) or `/ralph stop --after-session`",
    ),
    (
        Verb::Raise,
        "raise",
        "`/ralph raise --iterations N`, `--cost USD`, `--time DURATION` or `--tokens N`",
    ),
    (Verb::Add, "add", "`/ralph add <what the step is>`"),
];

impl Verb {
    pub fn word(self) -> &'static str {
        VERBS.iter().find(|v| v.0 == self).map_or("", |v| v.1)
    }

    /// What a command of this verb is, in "not taken as ...".
    pub fn noun(self) -> &'static str {
        match self {
            Verb::Answer => "an answer",
            _ => "a command",
        }
    }
}

/// What a text says to ralph.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// Nothing: words among people.
    Nothing,
    /// `/ralph <verb>` somewhere, but not beginning the first line (quoted,
    /// in a code block, further down): not a command, and said so.
    Misplaced(Verb),
    /// A command, or why it cannot be one. An answer by an option's number
    /// has no text yet: it is read against the question asked.
    Said(Verb, Result<Command, String>),
    /// `/ralph` and a word that is no verb: what is wrong.
    Unknown(String),
}

/// Read `body`: pure. The first line, indented by at most three spaces
/// (more is a code block), begins `/ralph <verb>`; an answer in words goes
/// on over the lines after.
pub fn read(body: &str) -> Written {
    let (first, rest) = body.split_once('\n').unwrap_or((body, ""));
    let first = first.strip_suffix('\r').unwrap_or(first);
    let indent = first.len() - first.trim_start_matches(' ').len();
    let after = (indent <= 3)
        .then(|| first[indent..].strip_prefix(PREFIX))
        .flatten()
        .and_then(|a| a.strip_prefix([' ', '\t']));
    let Some(after) = after else {
        return match mentioned(body) {
            Some(v) => Written::Misplaced(v),
            None => Written::Nothing,
        };
    };
    let after = after.trim_start();
    let (word, args) = after
        .split_once([' ', '\t'])
        .map_or((after, ""), |(w, a)| (w, a.trim()));
    let Some(&(verb, _, usage)) = VERBS.iter().find(|v| v.1 == word) else {
        return Written::Unknown(unknown(first));
    };
    let said = match verb {
        Verb::Answer => answer(args, rest),
        Verb::Stop => match args {
            "" => Ok(Command::Stop {
                when: StopWhen::Now,
            }),
            "--after-session" => Ok(Command::Stop {
                when: StopWhen::AfterSession,
            }),
            _ => Err(format!("write {usage}")),
        },
        Verb::Raise => raise(args).map_err(|e| format!("{e}: write {usage}")),
        Verb::Add => {
            let text = crate::work::question::one_line(args, 500);
            if text.is_empty() {
                Err(format!("write {usage}"))
            } else {
                Ok(Command::AddStep { text })
            }
        }
    };
    // A pick is checked once it is read against its question.
    let checked = said.and_then(|c| match picked(&c) {
        Some(_) => Ok(c),
        None => c.check().map(|_| c),
    });
    Written::Said(verb, checked)
}

/// The verb of a `/ralph <verb>` anywhere in `body`.
fn mentioned(body: &str) -> Option<Verb> {
    body.match_indices(PREFIX).find_map(|(i, _)| {
        let after = body[i + PREFIX.len()..].strip_prefix([' ', '\t'])?;
        let word: String = after
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
            .collect();
        VERBS.iter().find(|v| v.1 == word).map(|v| v.0)
    })
}

fn unknown(first: &str) -> String {
    let words: Vec<&str> = VERBS.iter().map(|v| v.1).collect();
    format!(
        "{:?} is not a command ralph takes ({PREFIX} then {})",
        crate::work::question::one_line(first, 60),
        words.join(", ")
    )
}

fn answer(args: &str, rest: &str) -> Result<Command, String> {
    if let Some(n) = args.strip_prefix("--option") {
        let n = n.trim_start_matches(['=', ' ', '\t']).trim();
        return match n.parse::<u32>() {
            Ok(n) => Ok(Command::Answer(Answer {
                text: String::new(),
                option: Some(n),
            })),
            Err(_) => Err(format!(
                "--option takes an option's number, not {:?}",
                crate::work::question::one_line(n, 20)
            )),
        };
    }
    let rest = rest.replace("\r\n", "\n");
    Answer::text(format!("{args}\n{rest}").trim()).map(Command::Answer)
}

/// `--iterations N`, `--cost USD`, `--time DURATION` or `--tokens N`
/// (`--x=v` too).
fn raise(args: &str) -> Result<Command, String> {
    let (flag, value) = args
        .split_once(['=', ' ', '\t'])
        .map_or((args, ""), |(f, v)| (f, v.trim()));
    if value.is_empty() || value.contains(char::is_whitespace) {
        return Err("one limit, by one amount".into());
    }
    let limit = match flag {
        "--iterations" => value
            .parse()
            .map(Limit::Iterations)
            .map_err(|_| format!("--iterations takes a whole number, not {value:?}"))?,
        "--cost" => value
            .trim_start_matches('$')
            .parse()
            .map(Limit::Cost)
            .map_err(|_| format!("--cost takes dollars, not {value:?}"))?,
        "--time" => crate::config::parse_duration(value)
            .map(|d| Limit::Time(d.as_secs()))
            .map_err(|e| format!("--time: {e}"))?,
        "--tokens" => value
            .parse()
            .map(Limit::Tokens)
            .map_err(|_| format!("--tokens takes a whole number, not {value:?}"))?,
        _ => return Err(format!("{flag:?} is no limit")),
    };
    Ok(Command::Raise(limit))
}

/// An answer by an option's number, not yet read against the question.
pub fn picked(c: &Command) -> Option<u32> {
    match c {
        Command::Answer(Answer { text, option }) if text.is_empty() => *option,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(verb: Verb, c: Command) -> Written {
        Written::Said(verb, Ok(c))
    }

    fn refused(verb: Verb, why: &str) -> Written {
        Written::Said(verb, Err(why.into()))
    }

    #[test]
    fn each_command_as_written_on_its_first_line() {
        let now = Command::Stop {
            when: StopWhen::Now,
        };
        let rows = [
            (
                "/ralph answer Postgres\r\nwith care",
                said(
                    Verb::Answer,
                    Command::Answer(Answer::text("Postgres\nwith care").unwrap()),
                ),
            ),
            (
                "   /ralph answer --option=2",
                said(
                    Verb::Answer,
                    Command::Answer(Answer {
                        text: String::new(),
                        option: Some(2),
                    }),
                ),
            ),
            ("/ralph stop", said(Verb::Stop, now.clone())),
            ("/ralph  stop   ", said(Verb::Stop, now)),
            (
                "/ralph stop --after-session\nplease",
                said(
                    Verb::Stop,
                    Command::Stop {
                        when: StopWhen::AfterSession,
                    },
                ),
            ),
            (
                "/ralph raise --iterations 5",
                said(Verb::Raise, Command::Raise(Limit::Iterations(5))),
            ),
            (
                "/ralph raise --cost=$2.5",
                said(Verb::Raise, Command::Raise(Limit::Cost(2.5))),
            ),
            (
                "/ralph raise --time 1h30m",
                said(Verb::Raise, Command::Raise(Limit::Time(5400))),
            ),
            (
                "/ralph raise --tokens 500000",
                said(Verb::Raise, Command::Raise(Limit::Tokens(500_000))),
            ),
            (
                "/ralph add Docs for the \x1b[2Japi\nmore",
                said(
                    Verb::Add,
                    Command::AddStep {
                        text: "Docs for the [2Japi".into(),
                    },
                ),
            ),
            ("Thanks, looks good.", Written::Nothing),
            ("/ralphanswer yes", Written::Nothing),
            (
                "/ralph is great",
                Written::Unknown(
                    "\"/ralph is great\" is not a command ralph takes (/ralph then answer, stop, raise, add)"
                        .into(),
                ),
            ),
            ("> /ralph answer --option 1", Written::Misplaced(Verb::Answer)),
            ("```\n/ralph stop\n```", Written::Misplaced(Verb::Stop)),
            ("    /ralph stop", Written::Misplaced(Verb::Stop)),
            ("Should we /ralph raise --cost 5?", Written::Misplaced(Verb::Raise)),
        ];
        for (body, want) in rows {
            assert_eq!(read(body), want, "{body:?}");
        }
    }

    #[test]
    fn a_command_written_wrong_says_how_to_write_it() {
        let rows = [
            ("/ralph answer", Verb::Answer, "the answer is empty"),
            (
                "/ralph answer --option two",
                Verb::Answer,
                "--option takes an option's number, not \"two\"",
            ),
            (
                "/ralph stop later",
                Verb::Stop,
                "write `/ralph stop` (now) or `/ralph stop --after-session`",
            ),
            (
                "/ralph raise --iterations 0",
                Verb::Raise,
                "raise the iterations by at least 1, not 0",
            ),
            (
                "/ralph raise --cost -3",
                Verb::Raise,
                "raise the cost by a positive amount of dollars, not -3",
            ),
            (
                "/ralph raise --budget 5",
                Verb::Raise,
                "\"--budget\" is no limit: write `/ralph raise --iterations N`, `--cost USD`, `--time DURATION` or `--tokens N`",
            ),
            (
                "/ralph raise --iterations 5 --cost 2",
                Verb::Raise,
                "one limit, by one amount: write `/ralph raise --iterations N`, `--cost USD`, `--time DURATION` or `--tokens N`",
            ),
            (
                "/ralph add  ",
                Verb::Add,
                "write `/ralph add <what the step is>`",
            ),
        ];
        for (body, verb, why) in rows {
            assert_eq!(read(body), refused(verb, why), "{body:?}");
        }
    }

    #[test]
    fn only_an_answer_by_number_waits_for_its_question() {
        let Written::Said(_, Ok(c)) = read("/ralph answer --option 3") else {
            panic!()
        };
        assert_eq!(picked(&c), Some(3));
        let Written::Said(_, Ok(c)) = read("/ralph answer three") else {
            panic!()
        };
        assert_eq!(picked(&c), None);
        assert_eq!(Verb::Answer.noun(), "an answer");
        assert_eq!(Verb::Stop.noun(), "a command");
    }

    proptest::proptest! {
        /// The reader beside the loop reads every comment with this: a
        /// panic there would end the reading unseen. Any text is read as
        /// something (multi-byte characters after `/ralph`, NULs, escapes).
        #[test]
        fn any_text_is_read_without_a_panic(
            verb in proptest::sample::select(vec!["answer", "stop", "raise", "add", "é", ""]),
            rest in "\\PC{0,40}",
            lead in "[ \t\u{a0}é]{0,4}",
        ) {
            for body in [
                format!("{lead}/ralph {verb} {rest}"),
                format!("{lead}/ralph{rest}"),
                format!("/ralph raise {rest}"),
                format!("/ralph answer --option{rest}"),
            ] {
                let _ = read(&body);
            }
        }
    }
}
