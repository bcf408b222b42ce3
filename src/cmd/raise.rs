use anyhow::Result;
use clap::Args;

use super::Run;
use crate::control::{Command, Limit};
use crate::exit::ExitStatus;

/// Raise a limit of the project's running loop by an amount, from any
/// terminal: it goes on past where it would have stopped.
///
/// Taken between sessions, and kept if the run is resumed; a run without
/// that limit keeps none (the loop says so). Refused inside a loop's
/// session.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("limit").required(true).args(["iterations", "cost", "time", "tokens"]))]
pub struct Raise {
    /// Sessions more (--max-iterations)
    #[arg(long, value_name = "N")]
    iterations: Option<u32>,

    /// US dollars more (--max-cost)
    // A negative amount is a value to refuse by name, not an unknown flag.
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    cost: Option<f64>,

    /// Time more (--max-time), e.g. `1h`
    #[arg(long, value_name = "DURATION")]
    time: Option<crate::config::Span>,

    /// Tokens more (--max-tokens)
    #[arg(long, value_name = "N")]
    tokens: Option<u64>,
}

impl Run for Raise {
    fn run(&self) -> Result<ExitStatus> {
        let limit = match (self.iterations, self.cost, &self.time, self.tokens) {
            (Some(n), ..) => Limit::Iterations(n),
            (None, Some(c), ..) => Limit::Cost(c),
            (None, None, Some(t), _) => Limit::Time(t.value().as_secs()),
            (None, None, None, Some(n)) => Limit::Tokens(n),
            _ => unreachable!("clap requires one"),
        };
        super::stop::send(Command::Raise(limit))
    }
}
