use anyhow::Result;
use clap::Args;

use super::Run;
use crate::control::inbox;
use crate::exit::{ExitStatus, Stop};

/// Serve this repository's loops to your own agent, as an MCP server on
/// stdio (`ralph install-command --mcp` adds it to Claude Code, Codex,
/// Gemini CLI or opencode).
///
/// Its tools: list_loops (as `ralph watch --json`), loop_status (as `ralph
/// status --json`), loop_events (a run's last journal lines), start_loop
/// (`ralph loop --worktree NAME` in the background, with the project's
/// approved settings, confined where the agent can be), stop_loop, answer,
/// add_step and raise_limit (as `ralph stop`, `answer`, `add`, `raise`).
/// Those that start or change a run are marked so, for your agent to ask
/// you first. Refused inside a loop's session.
#[derive(Debug, Args)]
pub struct Mcp {}

impl Run for Mcp {
    fn run(&self) -> Result<ExitStatus> {
        if let Some(why) = inbox::refused_in_session() {
            return Err(Stop::with(ExitStatus::Usage, why));
        }
        crate::mcp::serve()?;
        Ok(ExitStatus::Success)
    }
}
