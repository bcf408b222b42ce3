//! Claude Code 2.1.330: `claude -p --output-format stream-json --verbose`,
//! the prompt on stdin (interactive: its TUI, the prompt as its argument);
//! confined in its own sandbox (`--settings` with the sandbox, only your
//! settings and no MCP servers), else without its permission prompts.

use super::Ask;

/// `claude` arguments before the prompt: print mode's stream, the
/// permissions (confined, bypassed, or the mode given), the model, then the
/// user's own.
pub fn arguments(a: &Ask) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    if !a.interactive {
        args.extend(["-p", "--output-format", "stream-json", "--verbose"].map(String::from));
    }
    match &a.sandbox {
        Some(settings) => {
            args.extend(["--permission-mode".to_string(), "acceptEdits".to_string()]);
            // Only the user's own settings and no MCP servers: the project's
            // .claude/ and .mcp.json (a clone's, or written by a session)
            // would run hooks and servers outside the sandbox, and merge
            // their own allow lists into it.
            args.extend(["--setting-sources", "user", "--strict-mcp-config"].map(String::from));
            args.extend(["--settings".to_string(), settings.clone()]);
        }
        None if a.permission_mode == "bypassPermissions" => {
            args.push("--dangerously-skip-permissions".into());
        }
        None => args.extend([
            "--permission-mode".to_string(),
            a.permission_mode.to_string(),
        ]),
    }
    if let Some(m) = a.model {
        args.extend(["--model".to_string(), m.to_string()]);
    }
    args.extend(a.extra.iter().cloned());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask<'a>(sandbox: Option<String>, mode: &'a str, extra: &'a [String]) -> Ask<'a> {
        Ask {
            interactive: false,
            confined: None,
            sandbox,
            permission_mode: mode,
            model: Some("opus"),
            extra,
            root: std::path::Path::new("/p"),
        }
    }

    #[test]
    fn confined_bypassed_or_the_mode_given() {
        let extra = ["--effort".to_string(), "high".to_string()];
        let a = arguments(&ask(None, "bypassPermissions", &extra));
        assert_eq!(
            a,
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--dangerously-skip-permissions",
                "--model",
                "opus",
                "--effort",
                "high"
            ]
        );
        let a = arguments(&ask(Some("{}".into()), "bypassPermissions", &[]));
        assert!(
            a.windows(2)
                .any(|w| w == ["--permission-mode", "acceptEdits"])
                && a.windows(2).any(|w| w == ["--settings", "{}"])
                && !a.iter().any(|x| x.contains("dangerously")),
            "{a:?}"
        );
        let a = arguments(&ask(None, "plan", &[]));
        assert!(
            a.windows(2).any(|w| w == ["--permission-mode", "plan"]),
            "{a:?}"
        );
    }
}
