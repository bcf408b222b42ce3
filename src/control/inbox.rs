//! The inbox of a project's loop: one JSON file a command, in ralph's state
//! folder beside the loop's lock (never in the project, where a session or
//! a clone writes; a confined session cannot reach it). Written whole
//! (a temporary file renamed), read bounded, removed once taken.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::command::{Command, Sent};

/// The most a command's file is read of.
const FILE_CAP: u64 = 64 << 10;
/// The most commands taken at one look: a flood waits its turn.
const LOOK_MAX: usize = 64;
/// The most files read at one look (those of the other kind included).
const SCAN_MAX: usize = 1024;

/// The inbox of the loop of the project at `root`.
pub fn dir(root: &Path) -> PathBuf {
    crate::trust::store::lock_file(root).with_extension("inbox")
}

/// A command from a process of a session is refused: the channel is the
/// user's, not the model's (`RALPH_LOOP` is set in every session).
pub fn refused_in_session() -> Option<String> {
    std::env::var_os(crate::handoff::env::LOOP).map(|_| {
        format!(
            "refused inside a loop's session ({} is set): a loop is answered and controlled by its user, not by a session",
            crate::handoff::env::LOOP
        )
    })
}

/// Where a command goes: to which run (`None`: whichever runs), and for an
/// answer, the `since` of the WAITING it answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct To<'a> {
    pub run: Option<&'a str>,
    pub asked: Option<&'a str>,
    /// The address it was written at (a GitHub comment's).
    pub via: Option<&'a str>,
}

/// Send `command` to the loop of the project at `root`, as `by`; the file
/// it is in.
pub fn send(root: &Path, by: &str, to: To, command: Command) -> Result<PathBuf> {
    send_to(&dir(root), by, to, command)
}

fn send_to(dir: &Path, by: &str, to: To, command: Command) -> Result<PathBuf> {
    command.check().map_err(anyhow::Error::msg)?;
    crate::trust::store::private_dir(dir)?;
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let sent = Sent {
        v: 1,
        at,
        by: by.to_string(),
        run: to.run.map(String::from),
        asked: to.asked.map(String::from),
        via: to.via.map(String::from),
        command,
    };
    // Oldest first by name: the time, then this process's count (two sent
    // in one millisecond keep their order), then a random part.
    static SENT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = SENT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let name = format!(
        "{at:013}-{n:06}-{}.json",
        &crate::trust::store::random_token()[..8]
    );
    let path = dir.join(name);
    let text = serde_json::to_vec(&sent)?;
    crate::fsutil::atomic_write(&path, &text, 0o600)
        .with_context(|| format!("cannot send to the loop's inbox {}", dir.display()))?;
    Ok(path)
}

/// A command waiting in the inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    pub path: PathBuf,
    pub sent: Sent,
}

/// What a look at the inbox is for: a waiting run takes answers, a loop
/// between sessions (and its watcher) the other commands. Each waits for
/// its own taker, so the one kind must not fill a look meant for the
/// other (70 answers left over must not hide a `ralph stop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum For {
    Answers,
    Commands,
}

impl For {
    fn wants(self, c: &Command) -> bool {
        matches!(c, Command::Answer(_)) == (self == For::Answers)
    }
}

/// What the inbox holds for `look`, oldest first (at most `LOOK_MAX`, of
/// at most `SCAN_MAX` files); a file that is no command (cut, foreign, too
/// big, a link) is removed, and said.
pub fn pending(root: &Path, look: For) -> (Vec<Taken>, Vec<String>) {
    pending_in(&dir(root), look)
}

fn pending_in(dir: &Path, look: For) -> (Vec<Taken>, Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (Vec::new(), Vec::new());
    };
    let mut names: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let (mut taken, mut bad) = (Vec::new(), Vec::new());
    for path in names.into_iter().take(SCAN_MAX) {
        if taken.len() >= LOOK_MAX {
            break;
        }
        let read = crate::fsutil::read_regular_capped(&path, FILE_CAP + 1);
        let sent = match &read {
            Ok(Some(t)) if t.len() as u64 <= FILE_CAP => serde_json::from_str::<Sent>(t)
                .ok()
                .filter(|s| s.v == 1 && s.command.check().is_ok()),
            _ => None,
        };
        match sent {
            Some(sent) if look.wants(&sent.command) => taken.push(Taken { path, sent }),
            Some(_) => {}
            None => {
                let _ = std::fs::remove_file(&path);
                bad.push(format!(
                    "{} was no command a loop takes: removed",
                    path.display()
                ));
            }
        }
    }
    (taken, bad)
}

/// A command taken: out of the inbox.
pub fn done(t: &Taken) {
    let _ = std::fs::remove_file(&t.path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::command::{Answer, Limit};

    fn with_state<T>(f: impl FnOnce(&Path) -> T) -> T {
        let home = tempfile::tempdir().unwrap();
        f(&home.path().join("inbox"))
    }

    fn send(d: &Path, by: &str, run: Option<&str>, c: Command) -> Result<PathBuf> {
        send_to(
            d,
            by,
            To {
                run,
                ..To::default()
            },
            c,
        )
    }

    fn pending(d: &Path) -> (Vec<Taken>, Vec<String>) {
        let (mut taken, bad) = pending_in(d, For::Commands);
        taken.extend(pending_in(d, For::Answers).0);
        taken.sort_by(|a, b| a.path.cmp(&b.path));
        (taken, bad)
    }

    #[test]
    fn commands_are_taken_oldest_first_and_removed_once_done() {
        with_state(|root| {
            let a = send(root, "terminal", None, Command::Raise(Limit::Iterations(2))).unwrap();
            let b = send(
                root,
                "mcp",
                Some("r1"),
                Command::Answer(Answer::text("yes").unwrap()),
            )
            .unwrap();
            assert!(a < b, "{a:?} {b:?}");
            let (taken, bad) = pending(root);
            assert!(bad.is_empty(), "{bad:?}");
            let by: Vec<&str> = taken.iter().map(|t| t.sent.by.as_str()).collect();
            assert_eq!(by, ["terminal", "mcp"]);
            assert_eq!(taken[1].sent.run.as_deref(), Some("r1"));
            done(&taken[0]);
            assert_eq!(pending(root).0.len(), 1);
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&b).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        })
    }

    /// Answers wait in the inbox for a question (one to another run's, or
    /// more than one to the same question, stay): however many, a stop
    /// sent after them is seen, and an answer after a flood of commands.
    #[test]
    fn answers_left_waiting_do_not_hide_a_stop() {
        with_state(|root| {
            let yes = || Command::Answer(Answer::text("yes").unwrap());
            for _ in 0..LOOK_MAX + 6 {
                send(root, "github:octocat", Some("r1"), yes()).unwrap();
            }
            let now = Command::Stop {
                when: crate::control::StopWhen::Now,
            };
            send(root, "terminal", Some("r1"), now.clone()).unwrap();
            let (taken, _) = pending_in(root, For::Commands);
            assert!(
                taken.iter().any(|t| t.sent.command == now),
                "the stop is not seen behind {} answers",
                taken.len()
            );
        });
        // And the other way: an answer is seen behind a flood of commands.
        with_state(|root| {
            for _ in 0..LOOK_MAX + 6 {
                send(root, "terminal", None, Command::Raise(Limit::Iterations(1))).unwrap();
            }
            send(
                root,
                "terminal",
                None,
                Command::Answer(Answer::text("no").unwrap()),
            )
            .unwrap();
            let (taken, _) = pending_in(root, For::Answers);
            assert_eq!(taken.len(), 1, "an answer is not seen behind the commands");
        })
    }

    #[test]
    fn what_is_no_command_is_removed_and_said_and_a_bad_one_is_not_sent() {
        with_state(|root| {
            let d = root.to_path_buf();
            crate::trust::store::private_dir(&d).unwrap();
            std::fs::write(d.join("1-cut.json"), "{\"v\":1,").unwrap();
            std::fs::write(d.join("2-big.json"), vec![b' '; (FILE_CAP + 10) as usize]).unwrap();
            std::os::unix::fs::symlink("/etc/passwd", d.join("3-link.json")).unwrap();
            let (taken, bad) = pending(root);
            assert!(taken.is_empty());
            assert_eq!(bad.len(), 3, "{bad:?}");
            assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
            assert!(send(root, "terminal", None, Command::Raise(Limit::Time(0))).is_err());
        })
    }
}
