//! All integration tests, in one binary. `support` holds the real-client
//! harness; see its module docs for how to script a session.

mod support;

mod actions;
mod agents;
mod agents_pi_opencode;
mod answer;
mod answer_github;
mod config_file;
mod confined;
mod confined_credentials;
mod confined_worktrees;
mod confinement;
mod doctor_logins;
mod estimate;
mod events;
mod gate;
mod gate_baseline;
mod github_api;
mod github_issues;
mod harness;
mod hostile;
mod hostile_import;
mod hostile_plans;
mod import;
mod install_hook;
mod layers;
mod ledger;
mod logs;
mod loop_edges;
mod mcp;
mod notify;
mod parallel;
mod parallel_cross;
mod parallel_ends;
mod plan;
mod probe_secrets;
mod review;
mod run_loop;
mod sentinels;
mod setup;
mod ship;
mod snap;
mod stop_hook;
mod watch;
mod worktrees;
