//! What the loop prints: its status lines and the session's stream, made
//! readable. Through `output`: colour only where it belongs, and what the
//! session says shown with its control characters made visible. Write errors
//! are ignored: the loop goes on whatever became of its terminal.

use crate::agent::stream::Shown;
use crate::output::{self, out_lossy, style, visible, visible_line};

/// The one reporter of a loop: every line the shell says goes through it.
#[derive(Clone, Copy)]
pub struct Ui {
    pub color: bool,
    /// Where its lines go: stdout, or a buffer (a shell tested in-process).
    to: Option<&'static std::sync::Mutex<String>>,
    /// `[name] `, before each line, when the output may be read beside
    /// other loops' (one per loop process, so kept for its life).
    tag: Option<&'static str>,
}

impl Ui {
    pub fn for_stdout() -> Ui {
        Ui {
            color: output::stdout_color(),
            to: None,
            tag: None,
        }
    }

    /// The reporter of the loop named `name`: when its output may be read
    /// beside other loops' (a worktree loop, or output that is not a
    /// terminal: a log file, a pipe, `&` in a shell), each line says whose
    /// it is.
    pub fn for_loop(name: &str, worktree: bool) -> Ui {
        use std::io::IsTerminal;
        let mut ui = Ui::for_stdout();
        if worktree || !std::io::stdout().is_terminal() {
            let tag = format!("[{}] ", visible_line(name));
            ui.tag = Some(Box::leak(tag.into_boxed_str()));
        }
        ui
    }

    /// How the gate's progress is printed: each command, and on a terminal
    /// one line that shows its latest output (cut to 100 characters),
    /// cleared at its end. Its output is the project's: control characters
    /// are shown.
    pub fn gate_show(self) -> crate::work::gate::Show {
        use crate::work::gate::Shown;
        use std::io::IsTerminal;
        let tty = self.to.is_none() && std::io::stdout().is_terminal();
        let tag = self.tag.unwrap_or("");
        std::sync::Arc::new(move |s: Shown<'_>| match s {
            Shown::Command(cmd) => self.emit(format_args!("  gate: {}\n", visible_line(cmd))),
            Shown::Latest(line) if tty => {
                let shown: String = visible_line(line).chars().take(100).collect();
                out_lossy(format_args!("\r\x1b[2K{tag}  │ {shown}"));
            }
            Shown::Cleared if tty => out_lossy(format_args!("\r\x1b[2K")),
            _ => {}
        })
    }

    /// A reporter whose lines are kept, not printed, with no colour.
    #[cfg(test)]
    pub fn captured() -> (Ui, &'static std::sync::Mutex<String>) {
        let kept: &'static std::sync::Mutex<String> = Box::leak(Box::default());
        (
            Ui {
                color: false,
                to: Some(kept),
                tag: None,
            },
            kept,
        )
    }

    /// The same, each line tagged as `for_loop` would (for tests).
    #[cfg(test)]
    pub fn tagged(self, name: &str) -> Ui {
        Ui {
            tag: Some(Box::leak(format!("[{name}] ").into_boxed_str())),
            ..self
        }
    }

    fn emit(&self, text: std::fmt::Arguments<'_>) {
        let tagged;
        let text = match self.tag {
            None => text,
            Some(tag) => {
                tagged = tag_lines(tag, &text.to_string());
                format_args!("{tagged}")
            }
        };
        match self.to {
            Some(kept) => kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_str(&text.to_string()),
            None => out_lossy(text),
        }
    }

    /// A line for stderr (an agent's own, passed on), tagged as the rest.
    fn emit_err(&self, line: &str) {
        let line = format!("{}{line}\n", self.tag.unwrap_or(""));
        match self.to {
            Some(kept) => kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_str(&line),
            None => {
                use std::io::Write;
                let _ = std::io::stderr().lock().write_all(line.as_bytes());
            }
        }
    }

    fn paint(&self, style: anstyle::Style, s: &str) -> String {
        output::paint(self.color, style, s)
    }

    /// One event of the session's stream: its text is the model's (or a
    /// tool's), so every control character is shown, not sent.
    pub fn show(&self, s: Shown) {
        let line = match s {
            Shown::Stderr(t) => return self.emit_err(&visible_line(&t)),
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

/// Each line of `text` (a session's words may hold several) after `tag`.
fn tag_lines(tag: &str, text: &str) -> String {
    text.split_inclusive('\n')
        .map(|l| format!("{tag}{l}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_reporter_says_whose_each_line_is() {
        let (ui, said) = Ui::captured();
        let ui = ui.tagged("auth");
        ui.note("session 1 left changes uncommitted");
        ui.show(Shown::Text("two\nlines".into()));
        ui.show(Shown::Tool("Bash: ls".into()));
        ui.show(Shown::Stderr("warn: \u{1b}[2Jslow".into()));
        (ui.gate_show())(crate::work::gate::Shown::Command("cargo test"));
        assert_eq!(
            *said.lock().unwrap(),
            "[auth] ralph: session 1 left changes uncommitted\n[auth] two\n[auth] lines\n[auth]   → Bash: ls\n[auth] warn: ^[[2Jslow\n[auth]   gate: cargo test\n"
        );
        assert_eq!(tag_lines("[a] ", ""), "");
    }
}
