//! What ralph keeps outside every project, where neither a session nor a
//! cloned repository can write: approvals of a project's config, loop locks.

pub mod agent_files;
pub mod approval;
pub mod codex_files;
mod shown;
pub mod store;
