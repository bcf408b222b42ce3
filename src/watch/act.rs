//! What a face does to a loop, for `ralph watch`'s keys and `ralph
//! serve`'s buttons alike: answer, stop, command and resume, each said back
//! in a line.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::control::{Command as ControlCommand, StopWhen};
use crate::run::lock as runlock;
use crate::run::tell::{self, NotSent, Reply};
use crate::watch::model::Row;
use crate::work::project::Project;

/// Answer the question of a row's loop as `ralph answer` does, sent by
/// `by`; what came of it.
pub fn answer(row: &Row, by: &str, reply: &Reply, resume_hint: &str) -> String {
    match tell::answer(&row.root, by, reply, None) {
        Ok(sent) => answered_text(&row.name, by, &sent, resume_hint),
        Err(e) => format!("{} was not answered: {}", row.name, not_sent_text(e)),
    }
}

/// What an answer sent comes to, as the footer says it.
fn answered_text(name: &str, by: &str, sent: &tell::Answered, resume_hint: &str) -> String {
    let said = crate::work::question::one_line(&sent.answer.said(), 200);
    match &sent.running {
        Some(l) => format!(
            "answered {name}: {said} (sent by {by}); its loop (pid {}) goes on with it",
            l.pid
        ),
        None => {
            format!("answered {name}: {said} (sent by {by}); no loop runs there: {resume_hint}")
        }
    }
}

fn not_sent_text(e: NotSent) -> String {
    match e {
        NotSent::Nothing(why) | NotSent::Refused(why) => why,
        NotSent::Failed(e) => format!("{e:#}"),
    }
}

/// A command (typed at watch's `:`, sent from the web page) sent to
/// `row`'s running loop, as `ralph raise` sends one; what came of it, in a
/// line.
pub fn command(row: &Row, by: &str, c: ControlCommand) -> String {
    let said = c.describe();
    match tell::command(&row.root, by, c) {
        Ok(l) => format!("sent {} (pid {}): {said}", row.name, l.pid),
        Err(e) => format!("cannot send {} {said}: {}", row.name, not_sent_text(e)),
    }
}

/// Stop a row's loop: as `ralph stop` does (sent by `by`, journaled), or
/// for a parallel run's worker, whose inbox nobody watches while its
/// session runs, now as Ctrl+C in its terminal would (SIGINT).
pub fn stop(row: &Row, by: &str, when: StopWhen) -> String {
    if row.worker.is_none() || when == StopWhen::AfterSession {
        let said = match when {
            StopWhen::Now => "now: it ends its session cleanly",
            StopWhen::AfterSession => "after its running session",
        };
        return match tell::command(&row.root, by, ControlCommand::Stop { when }) {
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
pub fn resume(row: &Row) -> String {
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
pub fn start_detached(args: &[String], cwd: &Path, out: &Path) -> Result<u32> {
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
