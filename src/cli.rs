//! The command line, as clap types. One variant per subcommand; each
//! subcommand's arguments live in its own `cmd/<name>.rs`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::cmd;

#[derive(Debug, Parser)]
#[command(
    name = "ralph",
    version,
    about = "Run Claude Code in a Ralph loop: a fresh session per step of work, state in files and git",
    long_about = "Run Claude Code in a Ralph loop: a fresh session per step of work, state in files \
and git, until the work is done or a human is needed.\n\n\
Start with `ralph install-hook` (once per machine): it adds `ralph hook stop` to Claude Code's \
settings as a Stop hook. The hook does nothing unless a ralph loop started the session."
)]
pub struct Cli {
    /// Run as if ralph was started in DIR instead of the current folder.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    InstallHook(cmd::install_hook::InstallHook),
    UninstallHook(cmd::uninstall_hook::UninstallHook),
    Hook(cmd::hook::Hook),
    #[command(name = "loop")]
    Loop(cmd::run_loop::Loop),
    Status(cmd::status::Status),
    VerifySync(cmd::verify_sync::VerifySync),
    Complete(cmd::complete::Complete),
    Waiting(cmd::waiting::Waiting),
    Resume(cmd::resume::Resume),
    Reset(cmd::reset::Reset),
    Init(cmd::init::Init),
    Budget(cmd::budget::Budget),
    Doctor(cmd::doctor::Doctor),
    Completions(cmd::completions::Completions),
}
