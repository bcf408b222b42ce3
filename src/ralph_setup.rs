//! The `/ralph-setup` slash command's text, built into the binary so that
//! it can be installed from any folder: each agent installs it its own way
//! (`Agent::setup_command`), and `ralph plan` gives its session the
//! planning rules in it (`work::plan::rules`). Here, below both, so that
//! neither takes text from a command.

/// The command as Claude Code reads it, front matter and all.
pub const RALPH_SETUP: &str = include_str!("../commands/ralph-setup.md");

/// What the command says it does, in the front matter of the agents that
/// have one.
pub const DESCRIPTION: &str = "Set up a Ralph loop for this project - interview, then write .ralph/spec.md, readme.md and prompt.md (and beads tasks)";

/// The command's text without Claude Code's front matter.
pub fn body() -> &'static str {
    RALPH_SETUP
        .strip_prefix("---\n")
        .and_then(|r| r.split_once("\n---\n"))
        .map_or(RALPH_SETUP, |(_, body)| body)
}
