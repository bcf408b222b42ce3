//! Placeholder until the per-test readers land (the same interface).
//! TEMPORARY: replaced by the real module.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Passed,
    Skipped,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Libtest,
    LibtestJson,
    GoJson,
    Pytest,
    Tap,
    Junit,
    JestJson,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Results {
    pub format: Option<Format>,
    pub tests: BTreeMap<String, Status>,
}

pub fn read(_output: &str) -> Option<Results> {
    None
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Compared {
    pub new_failures: Vec<String>,
    pub still_failing: Vec<String>,
    pub fixed: Vec<String>,
    pub missing: Vec<String>,
    pub newly_skipped: Vec<String>,
}

impl Compared {
    pub fn blocks(&self) -> bool {
        !(self.new_failures.is_empty() && self.missing.is_empty() && self.newly_skipped.is_empty())
    }
}

pub fn compare(_before: &Results, _after: &Results) -> Compared {
    Compared::default()
}
