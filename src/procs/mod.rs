//! Processes: reading the process tree (`/proc` on Linux, sysinfo elsewhere)
//! and the one signal ladder (INT → TERM → KILL) every ending goes through.

pub mod ladder;
pub mod leftovers;
pub mod signals;
pub mod tree;
