//! ralph: run Claude Code in a Ralph loop. See README.md for the user's view.

pub mod cli;
pub mod cmd;
pub mod exit;
pub mod fsutil;
pub mod hook_target;
pub mod jsonspan;
pub mod proc_tree;
pub mod settings;
pub mod stop_hook;
