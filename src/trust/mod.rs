//! What ralph keeps outside every project, where neither a session nor a
//! cloned repository can write: approvals of a project's config, loop locks.

pub mod agent_files;
pub mod approval;
mod shown;
pub mod store;
