//! The one way ralph writes to the terminal, for every command:
//!
//! - Colour only when the stream is a terminal, never with `NO_COLOR`, else
//!   always with `CLICOLOR_FORCE` (anstream decides, as
//!   <https://no-color.org> and <https://bixense.com/clicolors> say).
//! - Text that ralph did not write itself (a model's words, tool names and
//!   inputs, results, errors, a repository's spec or sentinel text) goes
//!   through `visible`: control characters are shown, never interpreted, so
//!   nothing a session prints can set the clipboard, retitle the window,
//!   clear the screen or hide text.
//! - A closed pipe (`ralph status | head -1`) ends the command quietly with
//!   exit 0; other write errors are ignored (there is nowhere left to say them).

use std::borrow::Cow;
use std::fmt;
use std::io::Write;

/// `outln!("...")`: a line on stdout.
#[macro_export]
macro_rules! outln {
    () => { $crate::output::out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::output::out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `errln!("...")`: a line on stderr.
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::output::err(format_args!("{}\n", format_args!($($t)*))) };
}

/// Should stdout get colour? anstream's answer: `NO_COLOR`, then
/// `CLICOLOR_FORCE`, `CLICOLOR`, then a terminal that supports it.
pub fn stdout_color() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
}

/// The styles ralph paints its own marks with.
pub mod style {
    use anstyle::{AnsiColor, Style};
    pub const TOOL: Style = AnsiColor::Cyan.on_default();
    pub const ERROR: Style = AnsiColor::Red.on_default();
    pub const NOTE: Style = AnsiColor::Yellow.on_default();
    pub const STATUS: Style = AnsiColor::Magenta.on_default().bold();
}

/// Paint `s` in `style` when `on`.
pub fn paint(on: bool, style: anstyle::Style, s: &str) -> String {
    if on {
        format!("{style}{s}{style:#}")
    } else {
        s.to_string()
    }
}

/// Dollars as spent: cents, or what a small amount really was (`$0.0016`,
/// never `$0.00` for something spent).
pub fn usd(amount: f64) -> String {
    if amount > 0.0 && amount < 0.00005 {
        "<$0.0001".into()
    } else if amount > 0.0 && amount < 0.005 {
        format!("${amount:.4}")
    } else {
        format!("${amount:.2}")
    }
}

/// What was spent, where some sessions' cost is not known (an agent that
/// reports tokens only, for a model without a price): never a plain `$0`.
pub fn spent(known: f64, unknown: bool) -> String {
    match (unknown, known > 0.0) {
        (false, _) => usd(known),
        (true, false) => "cost unknown".into(),
        (true, true) => format!("{} + unknown", usd(known)),
    }
}

/// Write to stdout; a closed pipe ends the command with exit 0.
pub fn out(args: fmt::Arguments) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|_| o.flush()) {
        closed(e);
    }
}

pub fn err(args: fmt::Arguments) {
    let mut o = std::io::stderr().lock();
    if let Err(e) = o.write_fmt(args) {
        closed(e);
    }
}

/// Write to stdout for the loop, which must go on whatever became of its
/// reader (its sessions are running): errors are ignored.
pub fn out_lossy(args: fmt::Arguments) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_fmt(args).and_then(|_| o.flush());
}

/// stderr for the loop: errors ignored, as `out_lossy`.
pub fn err_lossy(args: fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

fn closed(e: std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
}

/// Control characters made visible: C0 and DEL in caret notation (`^[`),
/// C1 and the Unicode direction overrides as `<U+XXXX>`. Newlines and tabs
/// stay, and so does every printable character.
pub fn visible(s: &str) -> Cow<'_, str> {
    let bad = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if !bad(c) => out.push(c),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            '\u{7f}' => out.push_str("^?"),
            c => out.push_str(&format!("<U+{:04X}>", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// The first `n` of `items`, each visible on one line, and how many more:
/// `a, b, and 3 more`.
pub fn first_of(items: &[String], n: usize) -> String {
    let shown: Vec<String> = items.iter().take(n).map(|i| visible_line(i)).collect();
    match items.len().saturating_sub(n) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}

/// `visible` for one line: newlines too are shown (as `^J`), for text that
/// must stay on its line (a tool call, a reason).
pub fn visible_line(s: &str) -> String {
    visible(s).replace('\n', "^J").replace('\r', "^M")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_amounts_are_shown_as_spent() {
        assert_eq!(
            [0.0, 0.0016, 0.00004, 0.0049, 0.005, 0.25, 12.345].map(usd),
            [
                "$0.00", "$0.0016", "<$0.0001", "$0.0049", "$0.01", "$0.25", "$12.35"
            ]
        );
    }

    #[test]
    fn unknown_costs_are_said() {
        assert_eq!(
            [(0.25, false), (0.0, true), (0.25, true)].map(|(k, u)| spent(k, u)),
            ["$0.25", "cost unknown", "$0.25 + unknown"]
        );
    }

    #[test]
    fn escapes_and_controls_are_shown_not_sent() {
        let evil =
            "a\x1b]52;c;SGVsbG8=\x07b\x1b]0;title\x07c\x1b[2Jd\x1b[8me\u{9b}31mf\u{202E}g\r\n";
        let v = visible(evil);
        assert!(!v.chars().any(|c| c.is_control() && c != '\n'), "{v:?}");
        assert_eq!(
            v,
            "a^[]52;c;SGVsbG8=^Gb^[]0;title^Gc^[[2Jd^[[8me<U+009B>31mf<U+202E>g^M\n"
        );
        assert!(matches!(
            visible("plain text, ünïcode, 中文\n\ttab"),
            Cow::Borrowed(_)
        ));
        assert_eq!(visible_line("one\ntwo"), "one^Jtwo");
    }
}

#[cfg(test)]
#[test]
fn counts_say_one_and_many_as_english_does() {
    assert_eq!(counted(1u32, "step", "steps"), "1 step");
    assert_eq!(counted(0u32, "step", "steps"), "0 steps");
    assert_eq!(counted(3u64, "process", "processes"), "3 processes");
}

/// How a process ended, in words: `status 7`, `signal 9` (not Rust's
/// `exit status: 7`).
pub fn ended(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("status {c}"),
        (None, Some(s)) => format!("signal {s}"),
        (None, None) => status.to_string(),
    }
}

/// `1 step`, `3 steps`: a count with its noun as English says it (not
/// `1 step(s)`).
pub fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    match n.into() {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}
