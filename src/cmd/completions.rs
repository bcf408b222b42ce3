use anyhow::Result;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Run;

/// Print a shell completion script for ralph.
///
/// bash: ralph completions bash > ~/.local/share/bash-completion/completions/ralph
/// zsh:  ralph completions zsh > ~/.zfunc/_ralph   (with fpath+=~/.zfunc in ~/.zshrc)
/// fish: ralph completions fish > ~/.config/fish/completions/ralph.fish
#[derive(Debug, Args)]
pub struct Completions {
    #[arg(value_enum)]
    shell: Shell,
}

impl Run for Completions {
    fn run(&self) -> Result<()> {
        let mut cmd = crate::cli::Cli::command();
        clap_complete::generate(self.shell, &mut cmd, "ralph", &mut std::io::stdout());
        Ok(())
    }
}
