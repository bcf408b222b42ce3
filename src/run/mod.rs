//! The loop: its decisions (`engine`, pure) and everything the shell in
//! `cmd/run_loop.rs` needs to carry them out, one concern per module.

pub mod claude;
pub mod countdown;
pub mod engine;
pub mod lifecycle;
pub mod lock;
pub mod options;
pub mod progress;
pub mod records;
pub mod session;
pub mod stream;
pub mod ui;
