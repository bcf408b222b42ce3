use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::settings::target::user_settings_path;
use crate::{fsutil, outln};

/// The `/ralph-setup` slash command, built into the binary so that it can be
/// installed from any folder.
pub const RALPH_SETUP: &str = include_str!("../../commands/ralph-setup.md");

/// Install the /ralph-setup slash command for Claude Code.
///
/// Writes ~/.claude/commands/ralph-setup.md (under $CLAUDE_CONFIG_DIR when
/// set): in Claude Code, `/ralph-setup <what you want built>` then interviews
/// you and writes .ralph/spec.md, readme.md and prompt.md. The command is
/// built into this binary, so this works from any folder. A file there with
/// other content (your own edits) is kept unless --force.
#[derive(Debug, Args)]
pub struct InstallCommand {
    /// Replace (or with --remove, delete) a file with other content.
    #[arg(long)]
    force: bool,

    /// Remove the slash command instead.
    #[arg(long)]
    remove: bool,
}

impl Run for InstallCommand {
    fn run(&self) -> Result<ExitStatus> {
        let settings = user_settings_path()?;
        let dir = settings
            .parent()
            .context("Claude Code's folder")?
            .join("commands");
        let path = dir.join("ralph-setup.md");
        let shown = path.display();
        let current = fsutil::read_optional(&path)?;
        let ours = current.as_deref() == Some(RALPH_SETUP);
        if self.remove {
            return Ok(match current {
                None => {
                    outln!("/ralph-setup is not installed ({shown}); nothing to do.");
                    ExitStatus::Success
                }
                Some(_) if ours || self.force => {
                    std::fs::remove_file(&path)
                        .with_context(|| format!("cannot remove {shown}"))?;
                    outln!("Removed /ralph-setup ({shown}).");
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
            outln!("/ralph-setup is already installed ({shown}).");
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
        fsutil::atomic_write(&path, RALPH_SETUP.as_bytes(), 0o644)?;
        let verb = if current.is_some() {
            "Replaced"
        } else {
            "Installed"
        };
        outln!("{verb} /ralph-setup in {shown}.");
        outln!("In Claude Code, in your project: /ralph-setup <what you want built>");
        Ok(ExitStatus::Success)
    }
}
