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
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,

    /// Print the estimate as JSON.
    #[arg(long)]
    json: bool,
}

impl Run for Estimate {
    fn run(&self) -> Result<ExitStatus> {
        let project = Project::find()?;
        let config = crate::config::load(&project.config())?;
        let agent = self.agent.or(config.agent).unwrap_or_default();
        let model = self.model.clone().or(config.model);
        let cap = self.max_cost.or(config.max_cost);
        if let Some(c) = cap.filter(|c| !(c.is_finite() && *c > 0.0)) {
            return Err(crate::exit::Stop::with(
                ExitStatus::Usage,
                format!("--max-cost {c}: a cap is a positive amount of US dollars"),
            ));
        }
        let spec = crate::fsutil::read_optional(&project.spec())?.unwrap_or_default();
        let parsed = crate::work::spec::parse(&spec);
        let open = u32::try_from(parsed.total() - parsed.done()).unwrap_or(u32::MAX);
        let drawn = costs::estimate_for(&project.root, open, &agent.to_string(), model.as_deref());
        let covers = drawn
            .as_ref()
            .zip(cap)
            .and_then(|((e, steps), cap)| e.cost_known.then(|| estimate::covered(e, cap, steps)));
        let e = drawn.map(|d| d.0);
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
        if open == 0 {
            outln!(
                "No open steps in {}: nothing to estimate.",
                project.spec().display()
            );
            return Ok(ExitStatus::Success);
        }
        let price = model.as_deref().filter(|_| e.is_none()).and_then(|m| {
            crate::agent::prices::price(m, &config.prices.clone().unwrap_or_default())
                .map(|p| (m.to_string(), p))
        });
        let line = said::estimated(open, e.as_ref(), price.as_ref());
        outln!(
            "{} ({agent}{}).",
            crate::output::visible_line(line.strip_prefix("estimate: ").unwrap_or(&line)),
            model
                .as_deref()
                .map(|m| format!(", model {}", crate::output::visible_line(m)))
                .unwrap_or_default()
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
