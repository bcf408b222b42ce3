//! The Stop hook: find the session that runs it, check that a ralph loop
//! started it, end it (`stop`); and where the hook is installed (`target`).

pub mod stop;
pub mod target;
