//! `ralph`: parse the command line, run it, map its exit status once.

use std::process::ExitCode;

use clap::Parser;
use ralph::cli::Cli;
use ralph::errln;

fn main() -> ExitCode {
    // The Stop hook runs after every turn of every session on the machine:
    // it skips the argument parser entirely.
    if ralph::hook::stop::run_if_invoked() {
        return ExitCode::SUCCESS;
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // clap's own help, version and usage errors, printed through the
        // printer so a closed pipe is no panic.
        Err(e) => {
            let text = e.render().to_string();
            if e.use_stderr() {
                errln!("{}", text.trim_end());
            } else {
                ralph::outln!("{}", text.trim_end());
            }
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    match ralph::cmd::run(cli) {
        Ok(status) => status.into(),
        Err(err) => {
            errln!(
                "ralph: error: {}",
                ralph::output::visible(&format!("{err:#}"))
            );
            ExitCode::FAILURE
        }
    }
}
