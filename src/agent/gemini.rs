//! Gemini CLI 0.61: `gemini -p "" --output-format stream-json`, the prompt
//! on stdin, tools approved (`--approval-mode yolo`: without it the shell and
//! edit tools are not offered at all). Its own sandbox needs a container
//! daemon, so ralph does not confine it (refused with the fix).

/// `gemini` arguments before the user's own.
pub fn arguments(model: Option<&str>) -> Vec<String> {
    let mut a: Vec<String> = [
        "-p",
        "",
        "--output-format",
        "stream-json",
        "--approval-mode",
        "yolo",
    ]
    .map(String::from)
    .into();
    if let Some(m) = model {
        a.extend(["-m".into(), m.into()]);
    }
    a
}

/// A session's arguments: `arguments`, then the user's own (the prompt
/// comes on stdin).
pub fn session_arguments(a: &super::Ask) -> Vec<String> {
    let mut args = arguments(a.model);
    args.extend(a.extra.iter().cloned());
    args
}

/// What the session's environment adds: no relaunch of itself as a child
/// node process (one process to supervise and signal).
pub const ENV: [(&str, &str); 1] = [("GEMINI_CLI_NO_RELAUNCH", "true")];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_mode_with_its_tools_and_the_model_given() {
        assert_eq!(
            arguments(Some("gemini-2.5-pro")),
            [
                "-p",
                "",
                "--output-format",
                "stream-json",
                "--approval-mode",
                "yolo",
                "-m",
                "gemini-2.5-pro"
            ]
        );
        assert_eq!(arguments(None).len(), 6);
        assert_eq!(ENV, [("GEMINI_CLI_NO_RELAUNCH", "true")]);
    }
}
