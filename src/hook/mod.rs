//! The Stop hook: find the session that runs it, check that a ralph loop
//! started it, and end it.

pub mod stop;
