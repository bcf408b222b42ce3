//! The other agents' real clients, pinned and installed from the npm
//! registry on first use (as `claude_bin` does), and what their homes need
//! to talk to the scripted API instead of a vendor's.

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use serde_json::{Value, json};

use super::{tools_dir, version_of, with_file_lock};

pub const CODEX_VERSION: &str = "0.169.0";
pub const GEMINI_VERSION: &str = "0.61.0";
pub const PI_VERSION: &str = "0.73.1";
pub const OPENCODE_VERSION: &str = "1.18.33";

/// The model pi and opencode are given (`--model` / `-m`): the scripted
/// API as provider `scripted`, in their homes' configs.
pub const SCRIPTED_MODEL: &str = "scripted/scripted-model";

/// `npm install <package>@<version>` into the test tools, once, under a
/// lock; `bin` is the executable inside the install.
fn npm_tool(name: &str, package: &str, version: &str, bin: &str) -> PathBuf {
    let bin = tools_dir().join(format!("{name}-{version}")).join(bin);
    npm_install(name, package, version, || {
        version_of(&bin).is_some_and(|v| v.contains(version))
    });
    let v = version_of(&bin)
        .unwrap_or_else(|| panic!("{} does not run after npm install", bin.display()));
    assert!(v.contains(version), "expected {name} {version}, got {v}");
    bin
}

/// `npm install <package>@<version>` into `<tools>/<name>-<version>`
/// unless `done` says it is there; its prefix.
fn npm_install(name: &str, package: &str, version: &str, done: impl Fn() -> bool) -> PathBuf {
    let prefix = tools_dir().join(format!("{name}-{version}"));
    with_file_lock(&tools_dir().join(format!("{name}.lock")), || {
        if done() {
            return;
        }
        let npm = which::which("npm").unwrap_or_else(|_| {
            panic!(
                "npm is not installed, and the tests need {package} (the real {name}) from the npm registry.\n\
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
    prefix
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

/// The real pi coding agent.
pub fn pi_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        npm_tool(
            "pi",
            "@mariozechner/pi-coding-agent",
            PI_VERSION,
            "node_modules/.bin/pi",
        )
    })
    .clone()
}

/// The real opencode: its native binary (no node in between). Its plugin
/// package comes too, which each test home's config folder links to
/// ([`opencode_plugin_modules`]).
pub fn opencode_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        opencode_plugin_modules();
        npm_tool(
            "opencode",
            "opencode-ai",
            OPENCODE_VERSION,
            "node_modules/opencode-linux-x64/bin/opencode",
        )
    })
    .clone()
}

/// `node_modules` holding `@opencode-ai/plugin` at opencode's version.
/// opencode installs that package from the npm registry into its config
/// folder at every start unless the folder has `node_modules` and a lock
/// naming it; a link to this one install keeps the tests offline and fast.
pub fn opencode_plugin_modules() -> PathBuf {
    let prefix = tools_dir().join(format!("opencode-plugin-{OPENCODE_VERSION}"));
    let manifest = prefix.join("node_modules/@opencode-ai/plugin/package.json");
    let installed = || {
        fs::read_to_string(&manifest)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|v| v["version"] == OPENCODE_VERSION)
    };
    npm_install(
        "opencode-plugin",
        "@opencode-ai/plugin",
        OPENCODE_VERSION,
        installed,
    );
    assert!(installed(), "no {} after npm install", manifest.display());
    prefix.join("node_modules")
}

/// pi's `models.json`: the scripted API as provider `scripted`, speaking
/// Chat Completions, with prices so each message's cost is reported
/// (dollars per million tokens).
pub fn pi_models(api_url: &str) -> Value {
    json!({"providers": {"scripted": {
        "baseUrl": format!("{api_url}/v1"), "api": "openai-completions", "apiKey": "SCRIPTED_API_KEY",
        "models": [{"id": "scripted-model", "contextWindow": 128000, "maxTokens": 4096,
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}]}}})
}

/// pi's `settings.json`: no retries, so a scripted error shows at once (and
/// a `retry-after` is not slept on), as ralph's own backoff takes over.
pub fn pi_settings() -> Value {
    json!({"retry": {"enabled": false, "provider": {"maxRetries": 0}}})
}

/// opencode's `opencode.json`: the scripted API as provider `scripted`
/// (Chat Completions), for the turns and the title, with prices.
pub fn opencode_config(api_url: &str) -> Value {
    json!({"provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
        "options": {"baseURL": format!("{api_url}/v1"), "apiKey": "{env:SCRIPTED_API_KEY}"},
        "models": {"scripted-model": {"name": "Scripted Model", "tool_call": true,
            "cost": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
            "limit": {"context": 128000, "output": 4096}}}}},
        "model": SCRIPTED_MODEL, "small_model": SCRIPTED_MODEL})
}

/// What opencode's dependency check reads in its config folder: the plugin
/// package already installed.
pub fn opencode_plugin_lock() -> (Value, Value) {
    let deps = json!({"@opencode-ai/plugin": OPENCODE_VERSION});
    (
        json!({"dependencies": deps}),
        json!({"name": "opencode", "lockfileVersion": 3, "requires": true,
            "packages": {"": {"dependencies": deps}}}),
    )
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
