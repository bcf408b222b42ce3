use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use crate::agent::Agent;
use crate::exit::ExitStatus;
use crate::{fsutil, outln};

/// Install the /ralph-setup slash command for Claude Code (or Codex, Gemini,
/// pi, opencode).
///
/// Writes ~/.claude/commands/ralph-setup.md (under $CLAUDE_CONFIG_DIR when
/// set): in Claude Code, `/ralph-setup <what you want built>` then interviews
/// you and writes .ralph/spec.md, readme.md and prompt.md. With --agent
/// codex: a custom prompt, $CODEX_HOME/prompts/ralph-setup.md (default
/// ~/.codex), run as `/prompts:ralph-setup ...`; with --agent gemini: a
/// custom command, ~/.gemini/commands/ralph-setup.toml (under
/// $GEMINI_CLI_HOME when set), run as `/ralph-setup ...`; with --agent pi:
/// a prompt template, ~/.pi/agent/prompts/ralph-setup.md (under
/// $PI_CODING_AGENT_DIR when set); with --agent opencode: a custom command,
/// ~/.config/opencode/commands/ralph-setup.md (under $XDG_CONFIG_HOME when
/// set); both run as `/ralph-setup ...`. The command is
/// built into this binary, so this works from any folder. A file there with
/// other content (your own edits) is kept unless --force.
#[derive(Debug, Args)]
pub struct InstallCommand {
    /// The agent to install it for
    #[arg(long, value_enum, default_value_t = Agent::default())]
    agent: Agent,

    /// Replace (or with --remove, delete) a file with other content.
    #[arg(long)]
    force: bool,

    /// Remove the slash command instead.
    #[arg(long)]
    remove: bool,
}

impl Run for InstallCommand {
    fn run(&self) -> Result<ExitStatus> {
        let (path, text, how) = self.agent.setup_command()?;
        let dir = path.parent().context("the command's folder")?.to_path_buf();
        let shown = path.display();
        let current = fsutil::read_optional(&path)?;
        let ours = current.as_deref() == Some(text.as_str());
        if self.remove {
            return Ok(match current {
                None => {
                    outln!("ralph-setup is not installed ({shown}); nothing to do.");
                    ExitStatus::Success
                }
                Some(_) if ours || self.force => {
                    std::fs::remove_file(&path)
                        .with_context(|| format!("cannot remove {shown}"))?;
                    outln!("Removed ralph-setup ({shown}).");
                    ExitStatus::Success
                }
                Some(_) => {
                    return Err(crate::exit::Stop::with(
                        ExitStatus::Failure,
                        format!(
                            "{shown} is not ralph's (it was edited, or is another version); kept. --force removes it."
                        ),
                    ));
                }
            });
        }
        if ours {
            outln!("ralph-setup is already installed ({shown}).");
            return Ok(ExitStatus::Success);
        }
        if current.is_some() && !self.force {
            return Err(crate::exit::Stop::with(
                ExitStatus::Failure,
                format!(
                    "{shown} already exists with other content (your edits, or another version of ralph's); kept. --force replaces it."
                ),
            ));
        }
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        fsutil::atomic_write(&path, text.as_bytes(), 0o644)?;
        let verb = if current.is_some() {
            "Replaced"
        } else {
            "Installed"
        };
        outln!("{verb} /ralph-setup in {shown}.");
        outln!("{how}");
        Ok(ExitStatus::Success)
    }
}
