use anyhow::Result;
use clap::Args;
use clap_complete::Shell;

use super::Run;
use crate::exit::ExitStatus;

/// Print a shell completion script for ralph
///
/// bash: ralph completions bash > ~/.local/share/bash-completion/completions/ralph
/// zsh:  ralph completions zsh > ~/.zfunc/_ralph   (with fpath+=~/.zfunc in ~/.zshrc)
/// fish: ralph completions fish > ~/.config/fish/completions/ralph.fish
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct Completions {
    #[arg(value_enum)]
    shell: Shell,
}

impl Run for Completions {
    fn run(&self) -> Result<ExitStatus> {
        let mut cmd = crate::cli::command();
        // Into memory first: clap_complete panics on a failed write, and a
        // closed pipe (`| head`) must end quietly.
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut cmd, "ralph", &mut script);
        crate::output::out(format_args!("{}", String::from_utf8_lossy(&script)));
        Ok(ExitStatus::Success)
    }
}
