//! What the loop prints: its status lines and the session's stream, made
//! readable. Through `output`: colour only where it belongs, and what the
//! session says shown with its control characters made visible. Write errors
//! are ignored: the loop goes on whatever became of its terminal.

use crate::output::{self, out_lossy, style, visible, visible_line};
use crate::session::stream::Shown;

/// The one reporter of a loop: every line the shell says goes through it.
#[derive(Clone, Copy)]
pub struct Ui {
    pub color: bool,
    /// Where its lines go: stdout, or a buffer (a shell tested in-process).
    to: Option<&'static std::sync::Mutex<String>>,
}

/// How the gate's progress is printed: each command, and on a terminal one
/// line that shows its latest output (cut to 100 characters), cleared at its
/// end. Its output is the project's: control characters are shown.
pub fn gate_show() -> crate::work::gate::Show {
    use crate::work::gate::Shown;
    use std::io::IsTerminal;
    let tty = std::io::stdout().is_terminal();
    std::sync::Arc::new(move |s: Shown<'_>| match s {
        Shown::Command(cmd) => out_lossy(format_args!("  gate: {}\n", visible_line(cmd))),
        Shown::Latest(line) if tty => {
            let shown: String = visible_line(line).chars().take(100).collect();
            out_lossy(format_args!("\r\x1b[2K  │ {shown}"));
        }
        Shown::Cleared if tty => out_lossy(format_args!("\r\x1b[2K")),
        _ => {}
    })
}

impl Ui {
    pub fn for_stdout() -> Ui {
        Ui {
            color: output::stdout_color(),
            to: None,
        }
    }

    /// A reporter whose lines are kept, not printed, with no colour.
    #[cfg(test)]
    pub fn captured() -> (Ui, &'static std::sync::Mutex<String>) {
        let kept: &'static std::sync::Mutex<String> = Box::leak(Box::default());
        (
            Ui {
                color: false,
                to: Some(kept),
            },
            kept,
        )
    }

    fn emit(&self, line: std::fmt::Arguments<'_>) {
        match self.to {
            Some(kept) => kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_str(&line.to_string()),
            None => out_lossy(line),
        }
    }

    fn paint(&self, style: anstyle::Style, s: &str) -> String {
        output::paint(self.color, style, s)
    }

    /// One event of the session's stream: its text is the model's (or a
    /// tool's), so every control character is shown, not sent.
    pub fn show(&self, s: Shown) {
        let line = match s {
            Shown::Text(t) => visible(&t).into_owned(),
            Shown::Tool(t) => format!("  {} {}", self.paint(style::TOOL, "→"), visible_line(&t)),
            Shown::ToolError(t) => {
                format!("  {} {}", self.paint(style::ERROR, "✗"), visible_line(&t))
            }
            Shown::Note(t) => format!("  {} {}", self.paint(style::NOTE, "!"), visible_line(&t)),
        };
        self.emit(format_args!("{line}\n"));
    }

    pub fn status(&self, s: &str) {
        let line = self.paint(style::STATUS, &format!("── ralph: {} ──", visible_line(s)));
        self.emit(format_args!("{line}\n"));
    }

    pub fn note(&self, s: &str) {
        self.emit(format_args!(
            "{} {}\n",
            self.paint(style::NOTE, "ralph:"),
            visible(s)
        ));
    }

    pub fn line(&self, s: &str) {
        self.emit(format_args!("{}\n", visible(s)));
    }
}
