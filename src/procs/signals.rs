//! The loop's stop requests: SIGINT, SIGTERM and SIGHUP counted instead of
//! obeyed, so that the loop decides how a session ends; and the subreaper.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use anyhow::{Context, Result};
use nix::sys::signal::{self, SigHandler, Signal};

static SIGNALS: AtomicU32 = AtomicU32::new(0);
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// A stop asked for otherwise than by a signal (`ralph stop`), and by whom.
static ASKED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

extern "C" fn on_signal(sig: i32) {
    // Only async-signal-safe work here: two atomic stores.
    SIGNALS.fetch_add(1, Ordering::SeqCst);
    LAST_SIGNAL.store(sig, Ordering::SeqCst);
}

/// Count SIGINT, SIGTERM and SIGHUP instead of dying of them.
pub fn install_signal_handlers() -> Result<()> {
    let action = signal::SigAction::new(
        SigHandler::Handler(on_signal),
        signal::SaFlags::SA_RESTART,
        signal::SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only touches atomics.
        unsafe { signal::sigaction(sig, &action) }
            .with_context(|| format!("cannot handle {sig}"))?;
    }
    Ok(())
}

/// How many stop signals have arrived so far.
pub fn signals_received() -> u32 {
    SIGNALS.load(Ordering::SeqCst)
}

/// The stop request so far, by the name of its signal (or who asked).
pub fn stop_requested() -> Option<String> {
    (signals_received() > 0).then(|| {
        ASKED
            .lock()
            .ok()
            .and_then(|a| a.clone())
            .unwrap_or_else(|| last_signal_name().to_string())
    })
}

/// A stop asked for as a signal would (`why`: who asked): from then on the
/// loop ends as on Ctrl+C, its session ended cleanly.
pub fn request_stop(why: String) {
    if let Ok(mut a) = ASKED.lock() {
        a.get_or_insert(why);
    }
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

pub fn last_signal_name() -> &'static str {
    match LAST_SIGNAL.load(Ordering::SeqCst) {
        2 => "SIGINT",
        15 => "SIGTERM",
        1 => "SIGHUP",
        _ => "signal",
    }
}

/// Become the reaper of orphans left by the sessions (Linux only).
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}
