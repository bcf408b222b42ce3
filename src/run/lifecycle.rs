//! Lifecycle hooks from `.ralph/config.toml` (`[hooks]`): shell commands run
//! at points of the loop's life with the facts in `RALPH_*` variables. A
//! failing one is reported, never fatal. Each runs in a process group of its
//! own, so a Ctrl+C at the terminal reaches only the loop, which then ends the
//! hook through the ladder and stops: a stop request is never mistaken for a
//! failing hook, and never lets the next session start.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use crate::handoff::env;
use crate::output::err_lossy as err;
use crate::procs::ladder::{Ending, Target, supervise};
use crate::procs::signals::signals_received;

#[derive(Debug)]
pub enum Ran {
    Ok,
    Failed(ExitStatus),
    /// The loop was asked to stop while the hook ran; the hook was ended.
    Interrupted,
    CannotRun(std::io::Error),
}

pub struct Facts<'a> {
    pub event: &'a str,
    pub project: &'a Path,
    pub run_dir: &'a Path,
    pub iteration: u32,
    pub max_iterations: u32,
    pub extra: &'a [(&'a str, &'a str)],
}

/// Run `cmd` (if configured) and report on stderr when it did not succeed.
pub fn run(cmd: &Option<String>, facts: &Facts) -> Ran {
    let Some(cmd) = cmd else { return Ran::Ok };
    let ran = run_one(cmd, facts);
    let event = facts.event;
    match &ran {
        Ran::Ok => {}
        Ran::Failed(st) => err(format_args!(
            "ralph: the {event} hook `{cmd}` failed ({st}); carrying on\n"
        )),
        Ran::Interrupted => err(format_args!(
            "ralph: the {event} hook `{cmd}` was ended: the loop is stopping\n"
        )),
        Ran::CannotRun(e) => err(format_args!(
            "ralph: cannot run the {event} hook `{cmd}`: {e}; carrying on\n"
        )),
    }
    ran
}

fn run_one(cmd: &str, f: &Facts) -> Ran {
    let mut c = Command::new("/bin/sh");
    c.args(["-c", cmd])
        .current_dir(f.project)
        .stdin(Stdio::null())
        .process_group(0);
    c.env(env::EVENT, f.event)
        .env(env::PROJECT, f.project)
        .env(env::RUN_DIR, f.run_dir)
        .env(env::ITERATION, f.iteration.to_string())
        .env(env::MAX_ITERATIONS, f.max_iterations.to_string())
        .env_remove(env::LOOP);
    // A hook runs in the project, often its own script, which sessions
    // edit: it gets no GitHub token, as they get none.
    crate::github::token::withhold(&mut c);
    for (k, v) in f.extra {
        c.env(k, v);
    }
    let mut child = match c.spawn() {
        Ok(c) => c,
        Err(e) => return Ran::CannotRun(e),
    };
    let group = Target::Group(child.id());
    match supervise(&mut child, group, None, &signals_received) {
        Ok((_, Ending::Stopped)) => Ran::Interrupted,
        Ok((st, _)) if st.success() => Ran::Ok,
        Ok((st, _)) => Ran::Failed(st),
        Err(e) => Ran::CannotRun(e),
    }
}
