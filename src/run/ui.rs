//! What the loop prints: its status lines and the session's stream, made
//! readable. Colour only on a terminal, and not with NO_COLOR.

use std::io::{IsTerminal, Write};

use crate::run::stream::Shown;

#[derive(Clone, Copy)]
pub struct Ui {
    pub color: bool,
}

impl Ui {
    pub fn for_stdout() -> Ui {
        Ui {
            color: std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    pub fn show(&self, s: Shown) {
        let line = match s {
            Shown::Text(t) => t,
            Shown::Tool(t) => format!("  {} {t}", self.paint("36", "→")),
            Shown::ToolError(t) => format!("  {} {t}", self.paint("31", "✗")),
            Shown::Note(t) => format!("  {} {t}", self.paint("33", "!")),
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
    }

    pub fn status(&self, s: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", self.paint("1;35", &format!("── ralph: {s} ──")));
    }

    pub fn note(&self, s: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{} {s}", self.paint("33", "ralph:"));
    }

    pub fn line(&self, s: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{s}");
    }
}
