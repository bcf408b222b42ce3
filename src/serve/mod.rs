//! `ralph serve`: every loop on this machine in a browser, live, drawn from
//! the runs' journals and acted on as `ralph watch`'s keys act.
//! The guard (who may ask), the registry (which projects), the model (what
//! the page shows, pure), the server (I/O), the page (served from the binary).

pub mod front;
pub mod guard;
pub mod model;
pub mod registry;
pub mod server;
