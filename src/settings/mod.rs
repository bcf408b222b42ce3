//! Claude Code's settings files: where ralph's hook goes (`target`), the
//! edits that add and remove it losing nothing (`edit`, over `jsonspan`).

pub mod edit;
pub(crate) mod jsonspan;
pub mod target;

pub use edit::*;
