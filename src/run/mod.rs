//! The loop: its decisions (`engine`, pure) and the `shell` that carries them
//! out, with one module per thing it touches (session, stream, lock, records).

pub mod confine;
pub mod countdown;
pub mod engine;
pub mod gitguard;
pub mod invocation;
pub mod launch;
pub mod lifecycle;
pub mod lock;
pub mod merge;
pub mod options;
pub mod progress;
pub mod records;
pub mod review;
pub mod session;
pub mod shell;
pub mod stream;
pub mod takeover;
pub mod ui;
pub mod worktree;
