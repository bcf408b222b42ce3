//! A run's history on disk: its journal of typed events (`events`), its
//! records and state (`records`), and the
//! command line it was started with (`invocation`), read from the end.

pub mod events;
pub mod invocation;
pub mod records;
