//! A run's history on disk: its journal of typed events (`events`) and the
//! line each says on the terminal (`said`), its records and state
//! (`records`), and the command line it was started with (`invocation`);
//! what past steps cost, kept per project and machine (`costs`), and the
//! estimate of the open steps drawn from them (`estimate`); what every
//! session on the machine cost, for the user's budget (`ledger`).

pub mod baseline;
pub mod costs;
pub mod estimate;
pub mod events;
pub mod invocation;
pub mod ledger;
pub mod records;
pub mod said;
