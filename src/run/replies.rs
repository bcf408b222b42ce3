//! Answers replied on the run's ntfy topic, while a run waits for one
//! (`run::asking`): read only where the user gave the topic's access token
//! (an open topic is anyone's to write), each message once, ralph's own
//! notices left out; the first line must begin `/ralph answer`, as on
//! GitHub.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::control::{Answer, Question};
use crate::github::comments::{Said, said_in};
use crate::notify::Channel;
use crate::notify::ntfy::{self, Message};
use crate::run::asking::Given;
use crate::run::ui::Ui;

/// How often the topic is read.
const EVERY: Duration = Duration::from_secs(5);

/// The topic a waiting run reads replies on.
pub struct Replies {
    url: String,
    token: String,
    /// Seconds since the epoch: the question's time; earlier messages are
    /// no answers.
    since: u64,
    seen: HashSet<String>,
    last: Option<Instant>,
    said_error: bool,
}

impl Replies {
    /// The run's ntfy topic, if it has one and the user gave its token
    /// (said, where there is a topic and no token).
    pub fn of(channels: &[Channel], since: u64, ui: &Ui) -> Option<Replies> {
        let url = channels.iter().find_map(|c| match c {
            Channel::Ntfy(u) => Some(u.clone()),
            _ => None,
        })?;
        let Some(token) = ntfy::token() else {
            ui.note(&format!(
                "replies on the ntfy topic are not read: it takes the topic's access token in {} (an open topic is anyone's to write)",
                ntfy::TOKEN_VAR
            ));
            return None;
        };
        ui.note("a reply on the ntfy topic beginning `/ralph answer` answers it too");
        Some(Replies {
            url,
            token,
            since,
            seen: HashSet::new(),
            last: None,
            said_error: false,
        })
    }

    pub fn due(&self) -> bool {
        self.last.is_none_or(|l| l.elapsed() >= EVERY)
    }

    /// The first new reply that answers `q`; what is not taken of the
    /// replies meant as answers, said once each.
    pub fn look(&mut self, ui: &Ui, q: &Question) -> Option<Given> {
        self.last = Some(Instant::now());
        let got = match ntfy::poll(&self.url, &self.token, self.since) {
            Ok(m) => m,
            Err(e) => {
                if !std::mem::replace(&mut self.said_error, true) {
                    ui.note(&format!(
                        "ntfy: {e}; still waiting (`ralph answer` answers too; the topic is read again)"
                    ));
                }
                return None;
            }
        };
        for m in got {
            if !self.seen.insert(m.id.clone()) {
                continue;
            }
            match judge(&m, self.since, q) {
                Some(Ok(answer)) => {
                    return Some(Given {
                        question: q.clone(),
                        answer,
                        by: "ntfy".into(),
                    });
                }
                Some(Err(why)) => ui.note(&format!(
                    "a reply on the ntfy topic is not taken as an answer: {why}"
                )),
                None => {}
            }
        }
        None
    }
}

/// What a message on the topic is to the question asked at `since`: not
/// meant as an answer (`None`: ralph's own notice, an earlier message, a
/// message among people), an answer, or why it is not one.
pub fn judge(m: &Message, since: u64, q: &Question) -> Option<Result<Answer, String>> {
    if m.is_ralphs() || m.time < since {
        return None;
    }
    match said_in(&m.message) {
        Said::Nothing => None,
        Said::Misplaced => Some(Err("`/ralph answer` must begin its first line".into())),
        Said::Words(t) => Some(Answer::text(&t)),
        Said::Pick(n) => Some(q.pick(n)),
        Said::BadPick(w) => Some(Err(format!(
            "--option takes a number, not {}",
            crate::output::visible_line(&w)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: &str, time: u64, text: &str, tags: &[&str]) -> Message {
        Message {
            id: id.into(),
            time,
            message: text.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn the_topic_is_read_at_once_then_every_few_seconds() {
        let mut r = Replies {
            url: "http://127.0.0.1:9/t".into(),
            token: "t".into(),
            since: 0,
            seen: HashSet::new(),
            last: None,
            said_error: false,
        };
        assert!(r.due(), "the first look is at once");
        r.last = Some(Instant::now());
        assert!(!r.due(), "then not before {EVERY:?}");
        r.last = Instant::now().checked_sub(EVERY);
        assert!(r.due(), "and again once {EVERY:?} has passed");
    }

    #[test]
    fn a_reply_answers_once_it_begins_with_the_command_after_the_question() {
        let q = Question::new("Which db?", None, &["Postgres".into(), "SQLite".into()]).unwrap();
        let rows: Vec<(Message, Option<Result<Answer, String>>)> = vec![
            (
                m("a", 100, "/ralph answer --option 2", &[]),
                Some(q.pick(2)),
            ),
            (
                m("b", 100, "/ralph answer Postgres, please", &[]),
                Some(Answer::text("Postgres, please")),
            ),
            (m("c", 99, "/ralph answer --option 1", &[]), None),
            (m("d", 100, "/ralph answer --option 1", &["ralph"]), None),
            (m("e", 100, "thanks!", &[]), None),
            (
                m("f", 100, "> /ralph answer --option 1", &[]),
                Some(Err("`/ralph answer` must begin its first line".into())),
            ),
            (
                m("g", 100, "/ralph answer --option 7", &[]),
                Some(Err("option 7 is not one of the question's (1 to 2)".into())),
            ),
        ];
        for (msg, want) in rows {
            assert_eq!(judge(&msg, 100, &q), want, "{msg:?}");
        }
    }
}
