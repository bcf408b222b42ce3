//! One file per subcommand, each implementing `Run`.

pub mod hook;
pub mod install_hook;
pub mod uninstall_hook;

use anyhow::{Context, Result};

use crate::cli::{Cli, Cmd};

pub trait Run {
    fn run(&self) -> Result<()>;
}

pub fn run(cli: Cli) -> Result<()> {
    if let Some(dir) = &cli.dir {
        std::env::set_current_dir(dir)
            .with_context(|| format!("cannot change to the folder {}", dir.display()))?;
    }
    match &cli.cmd {
        Cmd::InstallHook(c) => c.run(),
        Cmd::UninstallHook(c) => c.run(),
        Cmd::Hook(c) => c.run(),
    }
}
