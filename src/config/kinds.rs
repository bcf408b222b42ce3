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
