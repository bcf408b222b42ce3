//! A loop's control channel: what a user sends a loop from outside it (an
//! answer to its question, stop, a step to add, a limit raised), as typed
//! commands in an inbox of ralph's own state folder, never the project's.

pub mod add;
pub mod command;
pub mod inbox;
pub mod written;

pub use crate::work::question::{Answer, Blocker, Question};
pub use command::{Command, Limit, Sent, StopWhen};
