//! What tokens cost, for the agents whose streams report tokens but not
//! dollars (Codex, Gemini). USD per million tokens, from the vendors'
//! public price lists as read in November 2026 (Gemini at its rate for
//! prompts up to 200k tokens; cached input at a tenth of input, as both
//! list it); `[prices]` in `.ralph/config.toml` overrides or adds a model.
//! A model without a price has an unknown cost: never $0.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::agent::stream::Usage;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// USD per million uncached input tokens.
    pub input: f64,
    /// USD per million cached input tokens.
    pub cached_input: f64,
    /// USD per million output tokens (reasoning included).
    pub output: f64,
}

/// (model, input, cached input, output)
const TABLE: [(&str, f64, f64, f64); 13] = [
    ("gpt-5.5", 5.00, 0.50, 30.00),
    ("gpt-5.4", 2.50, 0.25, 15.00),
    ("gpt-5.4-mini", 0.75, 0.075, 4.52),
    ("gpt-5.3-codex", 1.75, 0.175, 14.00),
    ("gpt-5.2-codex", 1.75, 0.175, 14.00),
    ("gpt-5.2", 1.75, 0.175, 14.00),
    ("gpt-5.1-codex-max", 1.25, 0.125, 10.00),
    ("gpt-5-codex", 1.25, 0.125, 10.00),
    ("gemini-3.1-pro", 2.00, 0.20, 12.00),
    ("gemini-3-flash", 0.50, 0.05, 3.00),
    ("gemini-2.5-pro", 1.25, 0.125, 10.00),
    ("gemini-2.5-flash", 0.30, 0.03, 2.50),
    ("gemini-2.5-flash-lite", 0.10, 0.01, 0.40),
];

/// The price of `model`: the config's, else the table's.
pub fn price(model: &str, overrides: &BTreeMap<String, Price>) -> Option<Price> {
    overrides.get(model).copied().or_else(|| {
        TABLE
            .iter()
            .find(|(m, ..)| *m == model)
            .map(|&(_, input, cached_input, output)| Price {
                input,
                cached_input,
                output,
            })
    })
}

/// What `usage` cost at `p`.
pub fn cost(usage: &Usage, p: Price) -> f64 {
    let m = |n: u64, usd: f64| n as f64 * usd / 1e6;
    m(usage.input_tokens, p.input)
        + m(usage.cache_read_input_tokens, p.cached_input)
        + m(usage.output_tokens, p.output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_priced_by_the_table_or_the_config() {
        let usage = Usage {
            input_tokens: 1_600,
            cache_read_input_tokens: 400,
            output_tokens: 100,
            ..Usage::default()
        };
        let none = BTreeMap::new();
        let p = price("gpt-5.4", &none).unwrap();
        assert!(
            (cost(&usage, p) - (1_600.0 * 2.5 + 400.0 * 0.25 + 100.0 * 15.0) / 1e6).abs() < 1e-12
        );
        assert_eq!(price("my-own-model", &none), None);
        let mine = BTreeMap::from([(
            "my-own-model".to_string(),
            Price {
                input: 1.0,
                cached_input: 0.0,
                output: 2.0,
            },
        )]);
        assert!((cost(&usage, price("my-own-model", &mine).unwrap()) - 0.0018).abs() < 1e-12);
        for (m, i, c, o) in TABLE {
            assert!(i > 0.0 && c > 0.0 && c < i && o > i, "{m}");
        }
    }
}
