//! Waiting out a usage limit: a countdown on the terminal, cut short by a
//! stop request.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use crate::output::out_lossy;
use crate::procs::signals::signals_received;
use crate::run::ui::Ui;
use crate::timefmt;

/// Wait, showing the time left; false if a stop request cut it short.
pub fn wait(ui: &Ui, what: &str, wait: Duration) -> bool {
    let start = Instant::now();
    let tty = std::io::stdout().is_terminal();
    ui.note(&format!(
        "{what}; waiting {} before the next session (not counted as an iteration)",
        timefmt::human_duration(wait)
    ));
    let mut last_shown = u64::MAX;
    while start.elapsed() < wait {
        if signals_received() > 0 {
            if tty {
                out_lossy(format_args!("\n"));
            }
            return false;
        }
        let left = wait.saturating_sub(start.elapsed()).as_secs();
        if tty && left != last_shown {
            out_lossy(format_args!(
                "\r  {} left   ",
                timefmt::human_duration(Duration::from_secs(left))
            ));
            last_shown = left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if tty {
        out_lossy(format_args!("\n"));
    }
    true
}
