//! ralph: run Claude Code in a Ralph loop. See README.md for the user's view.

pub mod budget;
pub mod cli;
pub mod cmd;
pub mod completion;
pub mod config;
pub mod exit;
pub mod fsutil;
pub mod hook_target;
pub mod jsonspan;
pub mod proc_tree;
pub mod progress;
pub mod project;
pub mod runlock;
pub mod runlog;
pub mod sentinel;
pub mod session;
pub mod settings;
pub mod spec;
pub mod stop_hook;
pub mod stream;
pub mod sync;
pub mod timefmt;
pub mod tracker;
