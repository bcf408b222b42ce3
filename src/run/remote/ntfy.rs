//! The run's ntfy topic, read for commands (`/ralph stop`, `/ralph answer
//! …`) only where the user gave the topic's access token: an open topic is
//! anyone's to write. Each message once; ralph's own notices and what came
//! before the run left out.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::Ctx;
use crate::control::written::{self, Written};
use crate::notify::Channel;
use crate::notify::ntfy::{self, Message};

/// How often the topic is read while a question waits, and otherwise (a
/// public server limits how often one reader may ask).
const EVERY_WAITING: Duration = Duration::from_secs(5);
const EVERY: Duration = Duration::from_secs(15);

/// The topic a run reads commands on.
pub struct Topic {
    url: String,
    token: String,
    /// Seconds since the epoch: the run's start; earlier messages are not
    /// for it.
    since: u64,
    /// The id of the newest message read: the next poll asks for what came
    /// after it, not again for all since the run began (a poll is read up
    /// to a bound: a topic grown past it would hide every later reply).
    after: Option<String>,
    seen: HashSet<String>,
    last: Option<Instant>,
    said_error: bool,
}

/// The first ntfy topic of `channels`.
fn topic_of(channels: &[Channel]) -> Option<&str> {
    channels.iter().find_map(|c| match c {
        Channel::Ntfy(u) => Some(u.as_str()),
        _ => None,
    })
}

/// What a waiting run says of its topic: read for an answer, or not read
/// for want of its token.
pub fn said_at_wait(channels: &[Channel]) -> Option<String> {
    topic_of(channels)?;
    Some(match ntfy::token() {
        Some(_) => "a reply on the ntfy topic beginning `/ralph answer` answers it too".into(),
        None => format!(
            "replies on the ntfy topic are not read: it takes the topic's access token in {} (an open topic is anyone's to write)",
            ntfy::TOKEN_VAR
        ),
    })
}

impl Topic {
    /// The run's ntfy topic, if it has one and the user gave its token.
    pub fn of(channels: &[Channel]) -> Option<Topic> {
        let url = topic_of(channels)?.to_string();
        let token = ntfy::token()?;
        Some(Topic {
            url,
            token,
            since: crate::timefmt::now_epoch(),
            after: None,
            seen: HashSet::new(),
            last: None,
            said_error: false,
        })
    }

    pub fn due(&self, waiting: bool) -> bool {
        let every = if waiting { EVERY_WAITING } else { EVERY };
        self.last.is_none_or(|l| l.elapsed() >= every)
    }

    /// Read the new messages; each command in them sent to the loop, or
    /// said why not.
    pub(super) fn look(&mut self, ctx: &Ctx) {
        self.last = Some(Instant::now());
        let since = self.after.clone().unwrap_or(self.since.to_string());
        let got = match ntfy::poll(&self.url, &self.token, &since) {
            Ok(m) => m,
            Err(e) => {
                if !std::mem::replace(&mut self.said_error, true) {
                    ctx.ui.note(&format!(
                        "ntfy: {e}; the topic is read again in a while (`ralph answer` and `ralph stop` work meanwhile)"
                    ));
                }
                return;
            }
        };
        self.after = newest_id(&got).or(self.after.take());
        for m in got {
            if !self.seen.insert(m.id.clone()) {
                continue;
            }
            let Some((noun, said)) = judge(&m, self.since) else {
                continue;
            };
            let sent = said
                .and_then(|s| super::forward(Ok(s), ctx.asking.get().as_ref()))
                .and_then(|f| ctx.send("ntfy", None, f));
            if let Err(why) = sent {
                ctx.ui.note(&format!(
                    "a reply on the ntfy topic is not taken as {noun}: {why}"
                ));
            }
        }
    }
}

/// The id of the newest of `got` (the server's order), if it can be sent
/// back in a query as it is (an id is letters and digits). Pure.
fn newest_id(got: &[Message]) -> Option<String> {
    got.last().map(|m| m.id.clone()).filter(|id| {
        !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// A message judged: as what it is meant (`an answer`, `a command`, for
/// what is said of it), and the command or why it is not one.
type Judged = (&'static str, Result<crate::control::Command, String>);

/// What a message on the topic is to a run that began at `since`: nothing
/// (`None`: ralph's own notice, an earlier message, words among people),
/// or a command, or why not one. Pure.
pub fn judge(m: &Message, since: u64) -> Option<Judged> {
    if m.is_ralphs() || m.time < since {
        return None;
    }
    match written::read(&m.message) {
        Written::Nothing => None,
        Written::Misplaced(v) => Some((
            v.noun(),
            Err(format!(
                "`{} {}` must begin its first line",
                written::PREFIX,
                v.word()
            )),
        )),
        Written::Unknown(why) => Some(("a command", Err(why))),
        Written::Said(v, said) => Some((v.noun(), said)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{Answer, Command, Limit, StopWhen};

    fn m(id: &str, time: u64, text: &str, tags: &[&str]) -> Message {
        Message {
            id: id.into(),
            time,
            message: text.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn the_topic_is_read_at_once_then_more_often_while_a_question_waits() {
        let mut t = Topic {
            url: "http://127.0.0.1:9/t".into(),
            token: "t".into(),
            since: 0,
            after: None,
            seen: HashSet::new(),
            last: None,
            said_error: false,
        };
        assert!(t.due(false), "the first look is at once");
        t.last = Some(Instant::now());
        assert!(!t.due(true), "then not before {EVERY_WAITING:?}");
        t.last = Instant::now().checked_sub(EVERY_WAITING);
        assert!(t.due(true), "and again once {EVERY_WAITING:?} has passed");
        assert!(!t.due(false), "but {EVERY:?} while none waits");
        t.last = Instant::now().checked_sub(EVERY);
        assert!(t.due(false));
    }

    #[test]
    fn the_next_poll_asks_for_what_came_after_the_newest_message_read() {
        let got = [m("a1", 100, "x", &[]), m("Zq9", 101, "y", &[])];
        assert_eq!(newest_id(&got), Some("Zq9".into()));
        assert_eq!(newest_id(&[]), None, "nothing new: asked as before");
        for bad in ["", "a&since=all", "a b"] {
            assert_eq!(newest_id(&[m(bad, 100, "x", &[])]), None, "{bad:?}");
        }
    }

    #[test]
    fn a_reply_is_a_command_once_it_begins_with_one_after_the_run_began() {
        let rows: Vec<(Message, Option<Judged>)> = vec![
            (
                m("a", 100, "/ralph answer Postgres, please", &[]),
                Some((
                    "an answer",
                    Ok(Command::Answer(Answer::text("Postgres, please").unwrap())),
                )),
            ),
            (
                m("b", 100, "/ralph stop --after-session", &[]),
                Some((
                    "a command",
                    Ok(Command::Stop {
                        when: StopWhen::AfterSession,
                    }),
                )),
            ),
            (
                m("c", 100, "/ralph raise --iterations 3", &[]),
                Some(("a command", Ok(Command::Raise(Limit::Iterations(3))))),
            ),
            (m("d", 99, "/ralph stop", &[]), None),
            (m("e", 100, "/ralph stop", &["ralph"]), None),
            (m("f", 100, "thanks!", &[]), None),
            (
                m("g", 100, "> /ralph answer --option 1", &[]),
                Some((
                    "an answer",
                    Err("`/ralph answer` must begin its first line".into()),
                )),
            ),
        ];
        for (msg, want) in rows {
            assert_eq!(judge(&msg, 100), want, "{msg:?}");
        }
    }
}
