//! What the loop and its Stop hook tell each other: the environment the loop
//! gives each session (Claude Code passes it on to hooks) and the hook's log
//! lines in the run folder, which the loop reads back. One place, one type.

use serde::{Deserialize, Serialize};

/// Environment variables set by the loop for sessions, hooks and lifecycle
/// commands.
pub mod env {
    /// `1`: this session belongs to a ralph loop.
    pub const LOOP: &str = "RALPH_LOOP";
    /// The run folder, where the hook logs.
    pub const RUN_DIR: &str = "RALPH_RUN_DIR";
    pub const ITERATION: &str = "RALPH_ITERATION";
    /// A worker of a parallel run: the one step its sessions work.
    pub const STEP: &str = "RALPH_STEP";
    /// `<run id>-<session>`: marks every process a session starts, so what a
    /// session (or a killed loop) left behind can be found exactly.
    pub const SESSION_TOKEN: &str = "RALPH_SESSION_TOKEN";
    /// The loop's completion gate, as JSON (`work::gate::Gate::handed`), so
    /// that a session's `ralph complete` runs the same checks as the loop,
    /// wherever they were set (`--gate` or `[gate]`).
    pub const GATE: &str = "RALPH_GATE";
    /// The run's protected files and where it began, as JSON
    /// (`{"base": "<commit>", "globs": [...]}`), so that a session's `ralph
    /// complete` can say up front what it changed of them.
    pub const PROTECT: &str = "RALPH_PROTECT";
    /// The print-mode watcher's grace period, in milliseconds.
    pub const GRACE_MS: &str = "RALPH_HOOK_GRACE_MS";
    // For lifecycle hooks.
    pub const EVENT: &str = "RALPH_EVENT";
    pub const PROJECT: &str = "RALPH_PROJECT";
    pub const MAX_ITERATIONS: &str = "RALPH_MAX_ITERATIONS";
    pub const REASON: &str = "RALPH_REASON";
    pub const OUTCOME: &str = "RALPH_OUTCOME";
    pub const SESSION_OUTCOME: &str = "RALPH_SESSION_OUTCOME";
}

/// The session token for session `n` of the run whose secret is `secret`
/// (random, kept in the lock in ralph's state folder), and the prefix every
/// token of that run starts with. The gate's commands get `<secret>-gate`.
pub fn session_token(secret: &str, n: u32) -> String {
    format!("{secret}-{n}")
}

pub fn gate_token(secret: &str) -> String {
    format!("{secret}-gate")
}

pub fn run_token_prefix(secret: &str) -> String {
    format!("{}={secret}-", env::SESSION_TOKEN)
}

/// What the hook did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HookAction {
    #[serde(rename = "none")]
    None,
    /// Interactive: SIGINT sent at once.
    #[serde(rename = "SIGINT")]
    Sigint,
    #[serde(rename = "SIGTERM")]
    Sigterm,
    #[serde(rename = "SIGKILL")]
    Sigkill,
    /// Print mode: a detached watcher will end the session if it lingers.
    #[serde(rename = "watcher")]
    Watcher,
}

/// One line of `<run>/hook.log`: one per hook run (and one per watcher).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookLogLine {
    pub time: f64,
    pub hook_pid: u32,
    /// `watch` for the print-mode watcher's line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identified_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorised_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<HookAction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    #[serde(default)]
    pub elapsed_ms: f64,
}

/// Did the hook end the interactive session `pid`? (Its log says SIGINT.)
pub fn hook_ended(log: &str, pid: u32) -> bool {
    log.lines()
        .filter_map(|l| serde_json::from_str::<HookLogLine>(l).ok())
        .any(|l| l.session_pid == Some(pid) && l.action == Some(HookAction::Sigint))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_round_trip_and_keep_their_wire_names() {
        let line = HookLogLine {
            time: 1.5,
            hook_pid: 7,
            session_pid: Some(42),
            action: Some(HookAction::Sigint),
            mode: Some("interactive".into()),
            ..Default::default()
        };
        let text = serde_json::to_string(&line).unwrap();
        assert!(text.contains(r#""action":"SIGINT""#), "{text}");
        assert!(!text.contains("why"), "absent fields are left out: {text}");
        assert_eq!(serde_json::from_str::<HookLogLine>(&text).unwrap(), line);
        let log = format!("garbage\n{text}\n");
        assert!(hook_ended(&log, 42));
        assert!(!hook_ended(&log, 43));
        let watcher = text.replace("SIGINT", "watcher");
        assert!(!hook_ended(&watcher, 42));
    }
}
