//! The work a loop does and how it is judged: the project's `.ralph/` files,
//! the spec, the sentinels, the tracker, their sync, the completion check.

pub mod add;
pub mod budget;
pub mod checks;
pub mod completion;
pub mod gate;
pub mod import;
pub mod plan;
pub mod progress_log;
pub mod project;
pub mod question;
pub mod readiness;
pub mod review;
pub mod sentinel;
pub mod spec;
pub mod sync;
pub mod tracker;
