//! Keeping a session inside: the confinement it runs in (its agent's own
//! sandbox, the gate's bubblewrap), and the git setup it may not change.

pub mod confine;
pub mod credentials;
pub mod gitguard;
