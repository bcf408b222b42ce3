use std::io::{BufRead, IsTerminal};

use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::outln;
use crate::output::visible;
use crate::trust::approval::{self, Standing};
use crate::work::project::Project;

/// Approve what the project's files make ralph, and the agents it starts, run.
///
/// The settings of .ralph/config.toml that run programs, widen a session or
/// keep "done" honest (`agent`, `fallback`, `commit = "auto"`, `[prices]`,
/// each agent's program such as `claude` or `pi`, `claude_args`,
/// `allow_write`, `allow_domains`, `[gate] commands` and `protect`,
/// `[hooks]`, `[review]`, `[notify]`), and what the project's Claude Code files would
/// have a `claude -p` run without asking (hooks other than ralph's own, env,
/// helpers, plugins, MCP servers in .claude/settings.json,
/// .claude/settings.local.json and .mcp.json), and what Gemini CLI would
/// run or allow in a trusted folder (.gemini/settings.json, its command
/// files, the variables of .gemini/.env and those of .env it reads, shown by
/// name), and what pi, opencode and Codex would (.pi/settings.json;
/// .pi/extensions, opencode.json, opencode.jsonc, .opencode and .codex,
/// which until approved they are started with disabled, even in a folder
/// you trust in Codex) take effect only once you
/// have approved that exact content: a session can write these files, and a
/// cloned repository can ship them. `ralph trust` shows them and asks; the
/// approval is kept in ralph's data folder (not in the project), for this
/// project's real path and this content only. Any change needs a new
/// approval. Settings given on the command line need none.
#[derive(Debug, Args)]
pub struct Trust {
    /// Approve without asking (for scripts)
    #[arg(long, short = 'y', conflicts_with = "revoke")]
    yes: bool,

    /// Withdraw this project's approval
    #[arg(long)]
    revoke: bool,
}

impl Run for Trust {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let path = project.config();
        if self.revoke {
            return revoke(&project);
        }
        let cfg = match crate::config::load(&path) {
            Ok(c) => c,
            Err(e) => {
                return Err(crate::exit::Stop::with(ExitStatus::Usage, format!("{e:#}")));
            }
        };
        let parts = approval::project_parts(&project.root, &cfg);
        let standing = approval::standing_of(&project.root, &parts);
        let switchable = approval::switchable_parts(&project.root);
        let switchable_standing = approval::switchable_standing_of(&project.root, &switchable);
        let standings = [&standing, &switchable_standing];
        if standings.iter().all(|s| **s == Standing::NothingToApprove) {
            outln!(
                "Nothing in {} or the project's Claude Code, Codex, Gemini CLI, pi and opencode files runs programs or allows more; nothing to approve.",
                path.display()
            );
            return Ok(ExitStatus::Success);
        }
        if !parts.is_empty() {
            outln!(
                "{} asks ralph (and the agents it starts) to run or allow:",
                project.root.display()
            );
            for line in approval::describe(&parts) {
                outln!("    {}", visible(&line));
            }
        }
        if !switchable.is_empty() {
            // Said of them as they stand: disabled only until approved.
            match switchable_standing {
                Standing::Approved => outln!("Codex, pi and opencode read these of their files:"),
                _ => outln!("{}:", approval::DISABLED),
            }
            for line in approval::describe(&switchable) {
                outln!("    {}", visible(&line));
            }
        }
        if standings
            .iter()
            .all(|s| !matches!(s, Standing::NotApproved { .. }))
        {
            outln!("Already approved.");
            return Ok(ExitStatus::Success);
        }
        if !self.yes && !ask(&project)? {
            outln!("Not approved.");
            return Ok(ExitStatus::Failure);
        }
        approval::approve(&project.root, &cfg)?;
        outln!("Approved; `ralph loop` will run them until they change.");
        Ok(ExitStatus::Success)
    }
}

fn revoke(project: &Project) -> Result<ExitStatus> {
    let path = project.config();
    if approval::revoke(&project.root)? {
        outln!(
            "Withdrew the approval of {} and the project's files; `ralph loop` will ask again.",
            path.display()
        );
    } else {
        outln!("{} was not approved; nothing to withdraw.", path.display());
    }
    Ok(ExitStatus::Success)
}

/// Ask on the terminal; with no terminal there is nobody to ask.
fn ask(project: &Project) -> Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(crate::exit::Stop::with(
            ExitStatus::Usage,
            "not approved: nobody to ask here (no terminal); read the lines above and run `ralph trust --yes`",
        ));
    }
    crate::output::out(format_args!(
        "Approve, for {}? [y/N] ",
        project.root.display()
    ));
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
