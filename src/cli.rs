//! The command line, as clap types. One variant per subcommand; each
//! subcommand's arguments live in its own `cmd/<name>.rs`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::cmd;

#[derive(Debug, Parser)]
#[command(
    name = "ralph",
    version,
    about = "Run coding agents (Claude Code, Codex, Gemini CLI, pi, opencode) in a Ralph loop: a fresh session per step of work, state in files and git",
    long_about = "Run coding agents (Claude Code, Codex, Gemini CLI, pi, opencode) in a Ralph loop: a \
fresh session per step of work, state in files and git, until the work is done or a human is \
needed.\n\n\
Set up once per machine with `./install.sh` from a clone of ralph (the binary, its Stop hook, \
`/ralph-setup` and completions), or, with ralph installed otherwise, `ralph install-hook`: it adds \
`ralph hook stop` to Claude Code's settings as a Stop hook. The hook does nothing unless a ralph \
loop started the session. Then, in a project: `ralph init`, `ralph doctor`, `ralph loop`."
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
    // In the order a user meets them: set up a project, give it work, run
    // it, follow it, answer it, finish; then the machine's setup.
    Init(cmd::init::Init),
    Doctor(cmd::doctor::Doctor),
    Add(cmd::add::Add),
    Plan(cmd::plan::Plan),
    Import(cmd::import::Import),
    Steps(cmd::steps::Steps),
    Estimate(cmd::estimate::Estimate),
    #[command(name = "loop")]
    Loop(Box<cmd::run_loop::Loop>),
    Status(cmd::status::Status),
    Watch(cmd::watch::Watch),
    Serve(cmd::serve::Serve),
    Logs(cmd::logs::Logs),
    Waiting(cmd::waiting::Waiting),
    Answer(cmd::answer::Answer),
    Stop(cmd::stop::Stop),
    Raise(cmd::raise::Raise),
    Mcp(cmd::mcp::Mcp),
    Resume(cmd::resume::Resume),
    Complete(cmd::complete::Complete),
    Review(cmd::review::Review),
    VerifySync(cmd::verify_sync::VerifySync),
    Reset(cmd::reset::Reset),
    Budget(cmd::budget::Budget),
    Trust(cmd::trust::Trust),
    Worktree(cmd::worktree::Worktree),
    Merge(Box<cmd::merge::Merge>),
    Worker(Box<cmd::worker::Worker>),
    InstallHook(cmd::install_hook::InstallHook),
    UninstallHook(cmd::uninstall_hook::UninstallHook),
    InstallCommand(cmd::install_command::InstallCommand),
    Completions(cmd::completions::Completions),
    Hook(cmd::hook::Hook),
}

/// The command line as clap reads it, each option that has a default
/// saying it (from `config::DEFAULTS`, the one place defaults live: the
/// options themselves stay unset, so the config and a resumed run can fill
/// them).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    with_defaults(Cli::command())
}

fn with_defaults(cmd: clap::Command) -> clap::Command {
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let cmd = crate::config::DEFAULTS
        .iter()
        .filter(|(id, _)| ids.iter().any(|i| i == id))
        .fold(cmd, |cmd, (id, default)| {
            cmd.mut_arg(*id, |a| {
                let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                a.help(format!("{help} [default: {default}]"))
            })
        });
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    names
        .iter()
        .fold(cmd, |cmd, n| cmd.mut_subcommand(n, with_defaults))
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use proptest::prelude::*;

    use super::Cli;

    fn arg() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("loop".to_string()),
            Just("status".to_string()),
            Just("--timeout".to_string()),
            Just("--max-iterations".to_string()),
            Just("--max-cost".to_string()),
            Just("--resume".to_string()),
            Just("--".to_string()),
            Just("18446744073709551615".to_string()),
            Just("-1".to_string()),
            Just("NaN".to_string()),
            Just("9999999999999999h".to_string()),
            "--[a-z-]{1,18}",
            "[ -~]{0,16}",
            "\\PC{0,8}",
        ]
    }

    proptest! {
        /// Whatever the command line, clap parses it or says why: no panic.
        #[test]
        fn any_command_line_parses_or_is_refused(args in proptest::collection::vec(arg(), 0..8)) {
            let _ = Cli::try_parse_from(std::iter::once("ralph".to_string()).chain(args));
        }
    }
}
