//! One file per subcommand, each implementing `Run`.

pub mod add;
pub mod answer;
pub mod budget;
pub mod complete;
pub mod completions;
pub mod doctor;
pub mod estimate;
pub mod hook;
pub mod import;
pub mod init;
pub mod install_command;
pub mod install_hook;
pub mod logs;
pub mod mcp;
pub mod merge;
pub mod plan;
pub mod raise;
pub mod remote_status;
pub mod reset;
pub mod resume;
pub mod review;
pub mod run_loop;
pub mod serve;
pub mod status;
pub mod steps;
pub mod stop;
pub mod trust;
pub mod uninstall_hook;
pub mod verify_sync;
pub mod waiting;
pub mod watch;
pub mod worker;
pub mod worktree;

use anyhow::{Context, Result};

use crate::cli::{Cli, Cmd};
use crate::exit::ExitStatus;

pub trait Run {
    fn run(&self) -> Result<ExitStatus>;
}

pub fn run(cli: Cli) -> Result<ExitStatus> {
    if let Some(dir) = &cli.dir {
        std::env::set_current_dir(dir)
            .with_context(|| format!("cannot change to the folder {}", dir.display()))?;
    }
    match &cli.cmd {
        Cmd::InstallHook(c) => c.run(),
        Cmd::UninstallHook(c) => c.run(),
        Cmd::InstallCommand(c) => c.run(),
        Cmd::Hook(c) => c.run(),
        Cmd::VerifySync(c) => c.run(),
        Cmd::Complete(c) => c.run(),
        Cmd::Waiting(c) => c.run(),
        Cmd::Answer(c) => c.run(),
        Cmd::Stop(c) => c.run(),
        Cmd::Raise(c) => c.run(),
        Cmd::Mcp(c) => c.run(),
        Cmd::Resume(c) => c.run(),
        Cmd::Reset(c) => c.run(),
        Cmd::Status(c) => c.run(),
        Cmd::Loop(c) => c.run(),
        Cmd::Init(c) => c.run(),
        Cmd::Budget(c) => c.run(),
        Cmd::Estimate(c) => c.run(),
        Cmd::Doctor(c) => c.run(),
        Cmd::Completions(c) => c.run(),
        Cmd::Worktree(c) => c.run(),
        Cmd::Logs(c) => c.run(),
        Cmd::Trust(c) => c.run(),
        Cmd::Add(c) => c.run(),
        Cmd::Review(c) => c.run(),
        Cmd::Watch(c) => c.run(),
        Cmd::Serve(c) => c.run(),
        Cmd::Import(c) => c.run(),
        Cmd::Plan(c) => c.run(),
        Cmd::Steps(c) => c.run(),
        Cmd::Worker(c) => c.run(),
        Cmd::Merge(c) => c.run(),
    }
}
