//! The loop's end of its control channel (`control::inbox`): a stop sent
//! now is taken at once, by a watcher beside the loop, and ends the run as
//! Ctrl+C does; the rest (a stop after the running session, a limit
//! raised, a step added) between sessions. Each command taken is journaled with who sent
//! it, and said.

use std::time::Duration;

use crate::control::inbox::{self, Taken};
use crate::control::{Command, Limit, StopWhen};
use crate::history::events::{Event as Journaled, Journal};
use crate::run::engine::Limits;

/// How often the watcher looks at the inbox.
const LOOK_EVERY: Duration = Duration::from_millis(300);

/// Watch the inbox of the loop of `root` (run `run`) for a stop sent now,
/// for the life of the process: taken, journaled, and asked as a signal
/// would be.
pub fn watch(root: std::path::PathBuf, run: String, journal: Journal) {
    // A stop or a raise sent to another run (one that ended before it
    // came) is not this run's to take.
    let (taken, _) = inbox::pending(&root, inbox::For::Commands);
    for t in &taken {
        let stale = matches!(t.sent.command, Command::Stop { .. } | Command::Raise(_));
        if stale && !t.sent.is_for(&run) {
            inbox::done(t);
        }
    }
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(LOOK_EVERY);
            let (taken, _) = inbox::pending(&root, inbox::For::Commands);
            if let Some(t) = taken.into_iter().find(|t| {
                t.sent.is_for(&run)
                    && t.sent.command
                        == Command::Stop {
                            when: StopWhen::Now,
                        }
            }) {
                inbox::done(&t);
                let by = crate::output::visible_line(&t.sent.by);
                journal.add(Journaled::Commanded {
                    command: t.sent.command.clone(),
                    by: t.sent.by.clone(),
                });
                crate::procs::signals::request_stop(format!("ralph stop (sent by {by})"));
            }
        }
    });
}

/// What the commands for run `run` that wait between sessions come to:
/// the limits raised, a stop after the session; each journaled and said
/// (`say`).
pub fn between(
    root: &std::path::Path,
    run: &str,
    limits: &mut Limits,
    journal: &Journal,
    say: &dyn Fn(String),
) -> Option<String> {
    let (taken, bad) = inbox::pending(root, inbox::For::Commands);
    for b in bad {
        say(b);
    }
    let mut stop = None;
    for t in taken.iter().filter(|t| t.sent.is_for(run)) {
        let Taken { sent, .. } = t;
        let by = crate::output::visible_line(&sent.by);
        match &sent.command {
            Command::Raise(l) => say(if raise(limits, *l) {
                format!("{} (sent by {by})", sent.command.describe())
            } else {
                format!(
                    "{} (sent by {by}): the run has no such limit, nothing to raise",
                    sent.command.describe()
                )
            }),
            Command::Stop { .. } => {
                stop.get_or_insert_with(|| format!("ralph stop (sent by {by})"));
                say(format!("{}, sent by {by}", sent.command.describe()));
            }
            // Added by `ralph add` itself, its words said.
            Command::AddStep { text } => match crate::control::add::step(root, text) {
                Ok(said) => say(format!(
                    "{} (sent by {by}): {}",
                    sent.command.describe(),
                    crate::control::command::one_line(&said, 300)
                )),
                Err(why) => say(format!(
                    "{} (sent by {by}) was not added: {}",
                    sent.command.describe(),
                    crate::control::command::one_line(&why, 300)
                )),
            },
            // A look for commands holds no answer (they wait for a question).
            Command::Answer(_) => continue,
        }
        inbox::done(t);
        journal.add(Journaled::Commanded {
            command: sent.command.clone(),
            by: sent.by.clone(),
        });
    }
    stop
}

/// `limits` raised by `l`, up to what the options allow (the run is saved
/// with them, and resumed only within them); false where the run has no
/// such limit (none is no limit to raise).
pub fn raise(limits: &mut Limits, l: Limit) -> bool {
    use crate::run::options::{MOST_COST, MOST_ITERATIONS, MOST_TIME};
    match l {
        Limit::Iterations(n) => {
            limits.max_iterations = limits.max_iterations.saturating_add(n).min(MOST_ITERATIONS);
            true
        }
        Limit::Cost(usd) => limits
            .max_cost
            .as_mut()
            .map(|c| *c = (*c + usd).min(MOST_COST))
            .is_some(),
        Limit::Tokens(n) => limits
            .max_tokens
            .as_mut()
            .map(|t| *t = t.saturating_add(n))
            .is_some(),
        Limit::Time(s) => limits
            .max_time
            .as_mut()
            .map(|t| {
                *t = t
                    .saturating_add(Duration::from_secs(s))
                    .min(Duration::from_secs(MOST_TIME))
            })
            .is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_raised_by_its_amount_and_an_unset_one_stays_unset() {
        let mut l = Limits::sample();
        l.max_time = None;
        assert!(raise(&mut l, Limit::Iterations(3)));
        assert!(raise(&mut l, Limit::Cost(1.5)));
        assert!(!raise(&mut l, Limit::Time(60)));
        assert!(!raise(&mut l, Limit::Tokens(5)), "no token cap to raise");
        l.max_tokens = Some(100);
        assert!(raise(&mut l, Limit::Tokens(50)));
        raise(&mut l, Limit::Tokens(u64::MAX));
        assert_eq!(l.max_tokens, Some(u64::MAX));
        assert_eq!(l.max_iterations, 8);
        assert_eq!(l.max_cost, Some(3.5));
        assert_eq!(l.max_time, None, "no limit is no limit raised");
        l.max_time = Some(Duration::from_secs(60));
        assert!(raise(&mut l, Limit::Time(60)));
        raise(&mut l, Limit::Iterations(u32::MAX));
        assert_eq!(l.max_time, Some(Duration::from_secs(120)));
        assert_eq!(l.max_iterations, 1_000_000);
    }
}
