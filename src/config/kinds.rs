//! The values a setting chooses among, defined with the settings so that
//! every layer above reads them without reaching into another's module.

use clap::ValueEnum;

/// Which tracker keeps the steps' tasks (`--tracker`, `tracker = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// beads_rust
    Br,
    /// the original beads (Go)
    Bd,
    /// GitHub's issues (`origin`'s repository), steps' tasks as `#N`
    Github,
}

impl Kind {
    /// It acts on a server with the user's token (GitHub's issues: read,
    /// and closed): a project's config may choose it only once approved
    /// (`ralph trust`), and a parallel run hands its workers the token.
    pub fn uses_token(self) -> bool {
        matches!(self, Kind::Github)
    }

    /// As `--tracker` and the config write it.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Br => "br",
            Kind::Bd => "bd",
            Kind::Github => "github",
        }
    }
}

/// What to do when a finished step's merge conflicts with what is merged.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum OnConflict {
    /// A resolution session (the run's agent) merges both steps' changes.
    #[default]
    Resolve,
    /// Stop for a human: WAITING names the conflicting files.
    Wait,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trackers_word_is_how_the_command_line_and_the_config_write_it() {
        for k in Kind::value_variants() {
            let named = k.to_possible_value().map(|v| v.get_name().to_string());
            assert_eq!(named.as_deref(), Some(k.word()));
            assert_eq!(serde_json::to_value(k).unwrap(), k.word());
        }
    }
}
