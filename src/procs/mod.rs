//! Processes: reading the process tree (`/proc` on Linux, sysinfo elsewhere),
//! the one signal ladder (INT → TERM → KILL), stop requests and leftovers.

pub mod ladder;
pub mod leftovers;
pub mod signals;
pub mod tree;
