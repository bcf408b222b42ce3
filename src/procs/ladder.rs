//! The one way ralph ends a process it is responsible for: SIGINT ("end
//! cleanly"), then SIGTERM, then SIGKILL, `GAP` apart, stopping as soon as
//! the target is gone. Used for a session at its timeout or on a stop
//! request, by the hook's print-mode watcher, and for leftover processes.
//!
//! The rule for signals reaching the loop is in `session/mod.rs`.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

pub const STEPS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGKILL];
/// Time given after each signal before the next.
pub const GAP: Duration = Duration::from_secs(3);

/// A process, or a whole process group (print-mode sessions run in their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Pid(u32),
    Group(u32),
}

impl Target {
    pub fn send(self, sig: Signal) -> nix::Result<()> {
        let raw = match self {
            Target::Pid(p) => p as i32,
            Target::Group(p) => -(p as i32),
        };
        // pid 0 or 1 (or their groups) would signal far more than meant.
        if raw.unsigned_abs() <= 1 {
            return Err(nix::errno::Errno::EINVAL);
        }
        kill(Pid::from_raw(raw), sig)
    }
}

/// A ladder in progress, for callers that poll (a session being waited on).
#[derive(Debug)]
pub struct Ladder {
    target: Target,
    next: usize,
    due: Instant,
}

impl Ladder {
    /// Start climbing: the first step (SIGINT) goes out now.
    pub fn start(target: Target) -> Ladder {
        let mut l = Ladder {
            target,
            next: 0,
            due: Instant::now(),
        };
        l.tick();
        l
    }

    /// Send the next step if its time has come.
    pub fn tick(&mut self) {
        let now = Instant::now();
        if self.next < STEPS.len() && now >= self.due {
            let _ = self.target.send(STEPS[self.next]);
            self.next += 1;
            self.due = now + GAP;
        }
    }

    /// Skip to the end: SIGKILL now.
    pub fn kill_now(&mut self) {
        let _ = self.target.send(Signal::SIGKILL);
        self.next = STEPS.len();
    }
}

/// Climb the ladder for each of `targets` together, until `alive` says each
/// is gone; `between` runs at every poll (reaping, say). Before each signal
/// `alive` is asked again, so a pid that was reused is never signalled.
/// Returns the last signal sent to any target.
pub fn end_all(
    targets: &[Target],
    mut alive: impl FnMut(&Target) -> bool,
    mut between: impl FnMut(),
) -> Option<Signal> {
    let mut left: Vec<Target> = targets.to_vec();
    let mut last = None;
    for sig in STEPS {
        left.retain(|t| alive(t));
        if left.is_empty() {
            break;
        }
        for t in &left {
            let _ = t.send(sig);
        }
        last = Some(sig);
        let until = Instant::now() + GAP;
        loop {
            between();
            left.retain(|t| alive(t));
            if left.is_empty() || Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    last
}

/// How a supervised process ended: a session, a gate or hook command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// By itself (a session also when the Stop hook ended it).
    Exited,
    /// Its deadline passed; the ladder ended it.
    TimedOut,
    /// A stop request came; the ladder ended it (a second one: SIGKILL).
    Stopped,
}

/// Wait for `child`, ending `target` (the child, or its group) through the
/// ladder when `deadline` passes or the first stop request arrives, and at
/// once on the second. `stops` counts the stop requests so far.
pub fn supervise(
    child: &mut std::process::Child,
    target: Target,
    deadline: Option<Instant>,
    stops: &dyn Fn() -> u32,
) -> std::io::Result<(std::process::ExitStatus, Ending)> {
    supervise_until(child, target, &|| deadline, stops)
}

/// As `supervise`, the deadline asked again at each look (a session cut
/// short by what its agent said).
pub fn supervise_until(
    child: &mut std::process::Child,
    target: Target,
    deadline: &dyn Fn() -> Option<Instant>,
    stops: &dyn Fn() -> u32,
) -> std::io::Result<(std::process::ExitStatus, Ending)> {
    let mut ended = Ending::Exited;
    let mut ladder: Option<Ladder> = None;
    let exit = ExitWatch::new(child.id());
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status, ended));
        }
        let n = stops();
        match ladder.as_mut() {
            Some(l) if n >= 2 => l.kill_now(),
            Some(l) => l.tick(),
            None if n >= 2 => {
                ended = Ending::Stopped;
                Ladder::start(target).kill_now();
                return Ok((child.wait()?, ended));
            }
            None if n >= 1 => {
                ended = Ending::Stopped;
                ladder = Some(Ladder::start(target));
            }
            None if deadline().is_some_and(|d| Instant::now() >= d) => {
                ended = Ending::TimedOut;
                ladder = Some(Ladder::start(target));
            }
            None => {}
        }
        exit.wait(Duration::from_millis(10));
    }
}

/// Waiting for a child's exit without polling for it: a pidfd (Linux 5.3
/// and later) is readable the moment the child exits, and a signal cuts the
/// wait short (poll is never restarted), so the caller looks again at once.
/// Elsewhere, or where there is no pidfd, a plain sleep of the same bound.
pub struct ExitWatch {
    #[cfg(target_os = "linux")]
    fd: Option<std::os::fd::OwnedFd>,
}

impl ExitWatch {
    pub fn new(pid: u32) -> ExitWatch {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::FromRawFd;
            // SAFETY: pidfd_open takes a pid and flags and returns a new fd
            // (or -1), which we own from here on.
            let raw = unsafe {
                nix::libc::syscall(nix::libc::SYS_pidfd_open, pid as nix::libc::pid_t, 0)
            };
            let fd = (raw >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(raw as i32) });
            ExitWatch { fd }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = pid;
            ExitWatch {}
        }
    }

    /// Until the child exits, a signal arrives, or `most` has passed.
    fn wait(&self, most: Duration) {
        ExitWatch::wait_any(&[self], most);
    }

    /// Until one of these children exits, a signal arrives, or `most` has
    /// passed. A plain sleep when one of them has no pidfd (it would not
    /// wake the wait), or there are none.
    pub fn wait_any(watches: &[&ExitWatch], most: Duration) {
        #[cfg(target_os = "linux")]
        {
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            use std::os::fd::AsFd;
            let fds: Option<Vec<PollFd>> = watches
                .iter()
                .map(|w| Some(PollFd::new(w.fd.as_ref()?.as_fd(), PollFlags::POLLIN)))
                .collect();
            if let Some(mut fds) = fds.filter(|f| !f.is_empty()) {
                let t = PollTimeout::try_from(most).unwrap_or(PollTimeout::ZERO);
                if let Ok(_) | Err(nix::errno::Errno::EINTR) = poll(&mut fds, t) {
                    return;
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = watches;
        std::thread::sleep(most);
    }
}
