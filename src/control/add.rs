//! A step added from outside a loop (`ralph mcp`, a `/ralph add` comment):
//! by `ralph add` itself, ralph's own program in the loop's folder, so the
//! step, its task and its commit are what the command makes, and what it
//! says is kept as text (the caller's stdout may be a protocol's).

use std::path::Path;

/// The most characters of what `ralph add` said that are kept.
const SAID_MAX: usize = 8000;

/// `ralph add -- TITLE` in `root`: what it said, or why it failed.
pub fn step(root: &Path, title: &str) -> Result<String, String> {
    let title = crate::work::question::one_line(title, 500);
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find ralph's own program: {e}"))?;
    let out = std::process::Command::new(exe)
        .arg("-C")
        .arg(root)
        .args(["add", "--"])
        .arg(&title)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ralph add: {e}"))?;
    let text = |b: &[u8]| crate::work::question::bounded(&String::from_utf8_lossy(b), SAID_MAX);
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        let said: Vec<String> = [text(&out.stdout), text(&out.stderr)]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect();
        Err(format!(
            "ralph add failed ({}): {}",
            crate::output::ended(out.status),
            said.join("\n")
        ))
    }
}
