//! The MCP Python SDK's own client (`mcp` from PyPI, pinned), installed once
//! per machine into a venv under `target/test-tools/`, driving `ralph mcp`
//! as an agent would (`mcp_client.py`).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use super::{TestEnv, run_with_stdin};

pub const MCP_PY_VERSION: &str = "2.3.0";

const CLIENT: &str = include_str!("mcp_client.py");

/// The venv's python, with `mcp` installed.
pub fn mcp_python() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        super::venv_python(
            "the tests need the MCP Python SDK",
            ("mcp", MCP_PY_VERSION),
            "mcp.client.stdio",
        )
    })
    .clone()
}

/// A step for `TestEnv::mcp`: the tools listed.
pub fn list_tools() -> Value {
    serde_json::json!({"list": true})
}

/// A step for `TestEnv::mcp`: tool `name` called with `args`.
pub fn call(name: &str, args: Value) -> Value {
    serde_json::json!({"call": name, "args": args})
}

impl TestEnv {
    /// `ralph mcp` started in the project by the Python SDK's client, which
    /// runs `steps` in one session; a result a step.
    pub fn mcp(&self, steps: &[Value]) -> Vec<Value> {
        self.mcp_with(steps, &[])
    }

    /// `mcp` with more variables in the environment.
    pub fn mcp_with(&self, steps: &[Value], env: &[(&str, &str)]) -> Vec<Value> {
        let script = self.tmp.path().join("mcp_client.py");
        std::fs::write(&script, CLIENT).unwrap();
        let mut c = self.command(mcp_python());
        c.arg(&script)
            .arg(super::ralph_bin())
            .arg("mcp")
            .envs(env.iter().copied());
        let input = serde_json::to_string(steps).unwrap();
        let out = run_with_stdin(c, &input, Duration::from_secs(120));
        assert!(
            out.status.success(),
            "the MCP client failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    }
}
