use std::path::{Path, PathBuf};

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
///
/// With --mcp: adds `ralph mcp` (an MCP server for your agent, see `ralph
/// mcp --help`) to the agent's user config, as its own `mcp add` would:
/// Claude Code's ~/.claude.json, Codex's config.toml [mcp_servers],
/// Gemini CLI's ~/.gemini/settings.json mcpServers, opencode's config
/// `mcp` (pi has no MCP). Your other servers and settings are kept;
/// --remove takes out ralph's alone.
#[derive(Debug, Args)]
pub struct InstallCommand {
    /// The agent to install it for
    #[arg(long, value_enum, default_value_t = Agent::default())]
    agent: Agent,

    /// Replace (or with --remove, delete) a file with other content.
    #[arg(long)]
    force: bool,

    /// Remove the slash command instead (and the folder the install made
    /// for it, if nothing else is in it).
    #[arg(long)]
    remove: bool,

    /// Add (or with --remove, remove) the `ralph mcp` server in the agent's
    /// user config instead of the slash command
    #[arg(long)]
    mcp: bool,
}

impl Run for InstallCommand {
    fn run(&self) -> Result<ExitStatus> {
        if self.mcp {
            return self.mcp_server();
        }
        let (path, text, how) = self.agent.setup_command()?;
        let dir = path.parent().context("the command's folder")?.to_path_buf();
        let shown = path.display();
        let current = fsutil::read_optional(&path)?;
        let ours = current.as_deref() == Some(text.as_str());
        if self.remove {
            return Ok(match current {
                None => {
                    outln!("ralph-setup is not installed ({shown}); nothing to do.");
                    remove_made_dirs(&path)?;
                    ExitStatus::Success
                }
                Some(_) if ours || self.force => {
                    std::fs::remove_file(&path)
                        .with_context(|| format!("cannot remove {shown}"))?;
                    outln!("Removed ralph-setup ({shown}).");
                    remove_made_dirs(&path)?;
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
        let made = missing_dirs(&dir, |d| d.exists());
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        if !made.is_empty() {
            remember_made_dirs(&path, &made)?;
        }
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

impl InstallCommand {
    /// `ralph mcp` added to (or removed from) the agent's user config.
    fn mcp_server(&self) -> Result<ExitStatus> {
        use crate::agent::McpFormat;
        use crate::mcp::install::{self, Edit};
        let program = std::env::current_exe().context("cannot find ralph's own program")?;
        let server = self
            .agent
            .mcp_server(&program)
            .map_err(|e| crate::exit::Stop::with(ExitStatus::Failure, format!("{e:#}")))?;
        let path = fsutil::resolve_symlinks(&server.file)?;
        let shown = path.display();
        // The agent rewrites its own config at times (Claude Code does):
        // written only over the version read, else read again.
        for _ in 0..5 {
            let before = fsutil::read_optional(&path)?;
            let (text, entry) = (before.as_deref(), &server.entry);
            let edit = match (server.format, self.remove) {
                (McpFormat::Json { key }, false) => install::json_add(text, key, entry, self.force),
                (McpFormat::Json { key }, true) => {
                    install::json_remove(text, key, entry, self.force)
                }
                (McpFormat::Toml { table }, false) => {
                    install::toml_add(text, table, entry, self.force)
                }
                (McpFormat::Toml { table }, true) => {
                    install::toml_remove(text, table, entry, self.force)
                }
            }
            .map_err(|e| crate::exit::Stop::with(ExitStatus::Failure, format!("{shown}: {e}")))?;
            let new = match edit {
                Edit::Nothing(why) => {
                    outln!("The MCP server ralph in {shown}: {why}; nothing to do.");
                    return Ok(ExitStatus::Success);
                }
                Edit::Write(new) => new,
            };
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            // A new file: it may come to hold the agent's credentials.
            if fsutil::atomic_write_if_unchanged(
                &path,
                new.as_bytes(),
                0o600,
                before.as_deref().map(str::as_bytes),
            )? {
                if self.remove {
                    outln!("Removed the MCP server ralph from {shown}.");
                } else {
                    outln!(
                        "Added the MCP server ralph (`{} mcp`) to {shown}.",
                        program.display()
                    );
                    outln!("{}", server.how);
                }
                return Ok(ExitStatus::Success);
            }
        }
        Err(crate::exit::Stop::with(
            ExitStatus::Failure,
            format!("{shown} kept changing while ralph wrote it; try again"),
        ))
    }
}

/// The folders `create_dir_all(dir)` will make: `dir` and its ancestors up
/// to the first that exists, deepest first.
fn missing_dirs(dir: &Path, exists: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    dir.ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !exists(d))
        .map(Path::to_path_buf)
        .collect()
}

/// Where ralph remembers the folders it made to install the command at
/// `file`: its own data folder, beside install-hook's records (never in the
/// agent's folder, which is the user's).
fn record_path(file: &Path) -> Result<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "ralph")
        .context("cannot find your home folder (is HOME set?)")?;
    let h = fsutil::fnv1a(file.as_os_str().as_encoded_bytes());
    Ok(dirs
        .data_dir()
        .join("installs")
        .join(format!("command-{h:016x}.json")))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Made {
    file: PathBuf,
    /// Deepest first.
    dirs: Vec<PathBuf>,
}

fn remember_made_dirs(file: &Path, dirs: &[PathBuf]) -> Result<()> {
    let path = record_path(file)?;
    let holder = path.parent().context("the record's folder")?;
    std::fs::create_dir_all(holder)
        .with_context(|| format!("cannot create {}", holder.display()))?;
    let json = serde_json::to_string_pretty(&Made {
        file: file.to_path_buf(),
        dirs: dirs.to_vec(),
    })?;
    fsutil::atomic_write(&path, json.as_bytes(), 0o644)
}

/// After the command at `file` is removed: the folders its install made
/// (`~/.codex/prompts/` where Codex had none), deepest first, each only if
/// it is empty now. The rule a user expects is "remove gives back what
/// install found": a folder that was there before, or that holds anything
/// else now, stays; one ralph made and left empty goes. A command installed
/// without a record (by an older ralph) leaves its folder, as before.
fn remove_made_dirs(file: &Path) -> Result<()> {
    let record = record_path(file)?;
    let Some(text) = fsutil::read_optional(&record)? else {
        return Ok(());
    };
    let made: Made = match serde_json::from_str(&text) {
        Ok(m) => m,
        Err(_) => return fsutil::remove_optional(&record),
    };
    if made.file == file {
        for d in made.dirs.iter().filter(|d| file.starts_with(d)) {
            // remove_dir removes an empty folder only (and not a link's target).
            if std::fs::remove_dir(d).is_err() {
                break;
            }
            outln!(
                "Removed {}, which ralph made for it and is now empty.",
                d.display()
            );
        }
    }
    fsutil::remove_optional(&record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folders_to_make_are_those_missing_deepest_first() {
        let there = |d: &Path| d == Path::new("/h") || d == Path::new("/");
        assert_eq!(
            missing_dirs(Path::new("/h/.codex/prompts"), there),
            [
                PathBuf::from("/h/.codex/prompts"),
                PathBuf::from("/h/.codex")
            ]
        );
        assert!(missing_dirs(Path::new("/h"), there).is_empty());
    }
}
