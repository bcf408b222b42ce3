//! `ralph`: parse the command line, run it, map its exit status once.

use std::process::ExitCode;

use clap::FromArgMatches;
use ralph::cli::Cli;
use ralph::errln;
use ralph::exit::Stop;

fn main() -> ExitCode {
    // The Stop hook runs after every turn of every session on the machine:
    // it skips the argument parser entirely.
    if ralph::hook::stop::run_if_invoked() {
        return ExitCode::SUCCESS;
    }
    // Before anything else runs or is started: ralph's secrets leave its
    // environment (see `secrets`).
    ralph::secrets::init();
    let parsed = ralph::cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(both) => both,
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
        // An early end the command chose: said once, here.
        Err(err) if err.is::<Stop>() => {
            let stop = err.downcast::<Stop>().expect("checked just above");
            errln!(
                "ralph {}: {}",
                command_path(&matches),
                ralph::output::visible(&stop.message)
            );
            stop.status.into()
        }
        Err(err) => {
            errln!(
                "ralph: error: {}",
                ralph::output::visible(&format!("{err:#}"))
            );
            ExitCode::FAILURE
        }
    }
}

/// `loop`, `worktree remove`: the subcommands the user typed.
fn command_path(m: &clap::ArgMatches) -> String {
    let mut names = Vec::new();
    let mut cur = m;
    while let Some((name, sub)) = cur.subcommand() {
        names.push(name.to_string());
        cur = sub;
    }
    names.join(" ")
}
