//! `ralph watch`: every loop of the repository at a glance, live, from the
//! files ralph already writes; its model, its keys, its drawing, its log.

pub mod act;
pub mod app;
pub mod model;
pub mod tail;
pub mod view;
