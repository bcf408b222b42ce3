//! ralph: run Claude Code in a Ralph loop. See README.md for the user's view.

pub mod agent;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod exit;
pub mod fsutil;
pub mod git;
pub mod github;
pub mod handoff;
pub mod history;
pub mod hook;
pub mod notify;
pub mod output;
pub mod parallel;
pub mod procs;
pub mod ralph_setup;
pub mod run;
pub mod sandbox;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod ship;
pub mod timefmt;
pub mod trust;
pub mod watch;
pub mod work;
