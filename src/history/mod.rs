//! A run's history on disk: its records and state (`records`), and the
//! command line it was started with (`invocation`), read from the end.

pub mod invocation;
pub mod records;
