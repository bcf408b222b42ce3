//! The other agents' real clients, pinned and installed from the npm
//! registry on first use (as `claude_bin` does), and what their homes need
//! to talk to the scripted API instead of a vendor's.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use super::{tools_dir, version_of, with_file_lock};

pub const CODEX_VERSION: &str = "0.169.0";
pub const GEMINI_VERSION: &str = "0.61.0";

/// `npm install <package>@<version>` into the test tools, once, under a
/// lock; `bin` is the executable inside the install.
fn npm_tool(name: &str, package: &str, version: &str, bin: &str) -> PathBuf {
    let prefix = tools_dir().join(format!("{name}-{version}"));
    let bin = prefix.join(bin);
    with_file_lock(&tools_dir().join(format!("{name}.lock")), || {
        if version_of(&bin).is_some_and(|v| v.contains(version)) {
            return;
        }
        let npm = which::which("npm").unwrap_or_else(|_| {
            panic!(
                "npm is not installed, and the tests need the real {name} CLI from the npm registry.\n\
                 Install Node.js 20+ with npm (Debian/Ubuntu: `apt-get install -y nodejs npm`), then run the tests again."
            )
        });
        let t0 = Instant::now();
        let out = Command::new(npm)
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(format!("{package}@{version}"))
            .output()
            .expect("run npm");
        assert!(
            out.status.success(),
            "`npm install {package}@{version}` failed ({}):\n{}\n{}\nCheck that the npm registry is reachable.",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "provisioned {name} {version} in {:.1}s",
            t0.elapsed().as_secs_f64()
        );
    });
    let v = version_of(&bin)
        .unwrap_or_else(|| panic!("{} does not run after npm install", bin.display()));
    assert!(v.contains(version), "expected {name} {version}, got {v}");
    bin
}

/// The real Codex CLI: its native binary (the npm launcher is a node
/// process in between).
pub fn codex_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        npm_tool(
            "codex",
            "@openai/codex",
            CODEX_VERSION,
            "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
        )
    })
    .clone()
}

/// The real Gemini CLI.
pub fn gemini_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        npm_tool(
            "gemini",
            "@google/gemini-cli",
            GEMINI_VERSION,
            "node_modules/.bin/gemini",
        )
    })
    .clone()
}

/// Codex's config: the scripted API as its model provider, no retries.
pub fn codex_config(api_url: &str) -> String {
    format!(
        "model = \"gpt-5.4\"\nmodel_provider = \"scripted\"\n\n[model_providers.scripted]\nname = \"scripted\"\n\
         base_url = \"{api_url}/v1\"\nenv_key = \"SCRIPTED_API_KEY\"\nwire_api = \"responses\"\n\
         request_max_retries = 0\nstream_max_retries = 0\n"
    )
}

/// Gemini's settings: an API key (a base URL alone means a gateway, which
/// headless mode refuses).
pub const GEMINI_SETTINGS: &str = r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}}"#;
