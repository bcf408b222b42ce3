//! `ralph`: parse the command line, run it, map the outcome to an exit status.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use ralph::cli::Cli;
use ralph::exit::Exit;

fn main() -> ExitCode {
    // The Stop hook runs after every turn of every session on the machine:
    // it skips the argument parser entirely.
    if ralph::hook::stop::run_if_invoked() {
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse();
    match ralph::cmd::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => match err.downcast_ref::<Exit>() {
            // A typed exit has already said what it had to say, if anything.
            Some(exit) => {
                if let Some(msg) = &exit.message {
                    let _ = writeln!(std::io::stderr(), "{msg}");
                }
                ExitCode::from(exit.code)
            }
            None => {
                let _ = writeln!(std::io::stderr(), "ralph: error: {err:#}");
                ExitCode::FAILURE
            }
        },
    }
}
