use anyhow::Result;
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::history::{costs, estimate, said};
use crate::outln;
use crate::work::project::Project;

/// Say what the open steps will likely cost and take, before anything is
/// spent.
///
/// Drawn from the steps this project's runs did with the same agent and
/// model (ralph keeps what each step cost, in its state folder, as each
/// run ends), else from other projects' on this machine: the median and
/// the 90th percentile of cost, sessions and time. `ralph loop` says the
/// same as it starts, and at its end how it compared.
#[derive(Debug, Args)]
pub struct Estimate {
    /// The agent [default: the config's `agent`, else claude]
    #[arg(long, value_enum)]
    agent: Option<crate::agent::Agent>,

    /// The model [default: the config's `model`, else the agent's own]
    #[arg(long)]
    model: Option<String>,

    /// Say how many of the open steps this cap likely covers [default:
    /// the config's `max_cost`]
    // A negative amount is a value to refuse by name, not an unknown flag.
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    max_cost: Option<f64>,

    /// Print the estimate as JSON.
    #[arg(long)]
    json: bool,
}

/// The cap to estimate against: `--max-cost`, else the config's
/// `max_cost` (at `config`); a bad one refused, naming where it was
/// written. Pure.
fn cap_of(
    flag: Option<f64>,
    config_cap: Option<f64>,
    config: &std::path::Path,
) -> Result<Option<f64>, String> {
    let (cap, said) = match (flag, config_cap) {
        (Some(c), _) => (c, format!("--max-cost {c}")),
        (None, Some(c)) => (c, format!("max_cost = {c} in {}", config.display())),
        (None, None) => return Ok(None),
    };
    // As `ralph loop` takes it: a cap it would refuse estimates nothing.
    if !(cap.is_finite() && cap > 0.0 && cap <= crate::run::options::MOST_COST) {
        return Err(format!(
            "{said}: a cap is a positive amount of US dollars, at most 1000000"
        ));
    }
    Ok(Some(cap))
}

impl Run for Estimate {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let config = crate::config::load(&project.config())?;
        let agent = self.agent.or(config.agent).unwrap_or_default();
        let model = self.model.clone().or(config.model);
        let cap = cap_of(self.max_cost, config.max_cost, &project.config())
            .map_err(|why| crate::exit::Stop::with(ExitStatus::Usage, why))?;
        let spec = crate::fsutil::read_optional(&project.spec())?;
        let no_spec = spec.is_none();
        let spec = spec.unwrap_or_default();
        let parsed = crate::work::spec::parse(&spec);
        let open = u32::try_from(parsed.total() - parsed.done()).unwrap_or(u32::MAX);
        let (event, past) = costs::estimated(
            &project.root,
            open,
            (&agent.to_string(), model.as_deref()),
            &config.prices.clone().unwrap_or_default(),
        );
        let (e, price) = match event {
            crate::history::events::Event::Estimated {
                estimate, price, ..
            } => (estimate, price),
            _ => (None, None),
        };
        let covers = e
            .as_ref()
            .zip(cap)
            .and_then(|(e, cap)| e.cost_known.then(|| estimate::covered(e, cap, &past)));
        if self.json {
            let v = serde_json::json!({
                "open_steps": open,
                "agent": agent.to_string(),
                "model": model,
                "estimate": e,
                "max_cost": cap,
                "max_cost_covers": covers,
            });
            outln!("{}", serde_json::to_string_pretty(&v)?);
            return Ok(ExitStatus::Success);
        }
        if no_spec && !self.json {
            outln!(
                "There is no spec at {}: nothing to estimate (`ralph init` writes one).",
                project.spec().display()
            );
            return Ok(ExitStatus::Success);
        }
        if open == 0 {
            outln!(
                "No open steps in {}: nothing to estimate.",
                project.spec().display()
            );
            return Ok(ExitStatus::Success);
        }
        let line = said::estimated(open, e.as_ref(), price.as_ref());
        outln!(
            "{agent}{}: {}.",
            model
                .as_deref()
                .map(|m| format!(" ({})", crate::output::visible_line(m)))
                .unwrap_or_default(),
            crate::output::visible_line(line.strip_prefix("estimate: ").unwrap_or(&line))
        );
        if let Some(e) = &e {
            if e.cost_known {
                outln!(
                    "A session: {} (1 in 10: over {}). A step: {:.1} sessions (1 in 10: over {:.1}).",
                    crate::output::usd(e.usd_per_session.median),
                    crate::output::usd(e.usd_per_session.p90),
                    e.sessions_per_step.median,
                    e.sessions_per_step.p90
                );
            }
            if let (Some(cap), Some(k)) = (cap, covers) {
                outln!(
                    "--max-cost {} likely covers {k} of the {open} open steps.",
                    crate::output::usd(cap)
                );
            }
        }
        Ok(ExitStatus::Success)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_cap_is_refused_naming_where_it_was_written() {
        let config = std::path::Path::new("/p/.ralph/config.toml");
        assert_eq!(cap_of(None, None, config), Ok(None));
        assert_eq!(cap_of(Some(2.0), Some(-1.0), config), Ok(Some(2.0)));
        assert_eq!(cap_of(None, Some(3.0), config), Ok(Some(3.0)));
        assert_eq!(
            cap_of(None, Some(-3.0), config),
            Err("max_cost = -3 in /p/.ralph/config.toml: a cap is a positive amount of US dollars, at most 1000000".into())
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 2e6] {
            let e = cap_of(Some(bad), Some(1.0), config).unwrap_err();
            assert!(e.starts_with(&format!("--max-cost {bad}: ")), "{e}");
        }
    }
}
