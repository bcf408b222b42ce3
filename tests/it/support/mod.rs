//! Test support: the real Claude Code CLI against a scripted API, isolated
//! homes, and a fluent helper over the built `ralph` binary.
//!
//! # Writing a test that scripts a session
//!
//! ```ignore
//! let env = TestEnv::new();                      // temp HOME + project, scripted API
//! env.api.session([Reply::bash("touch made"), Reply::text("Made it.")]);
//! let out = env.claude_print("make a file", &[]); // real `claude -p`, prompt on stdin
//! assert!(out.status.success());
//! assert!(env.project.join("made").exists());
//! assert!(env.api.turns()[0].user_text().contains("make a file"));
//! ```
//!
//! - [`claude_bin`] installs the pinned client (`CLAUDE_VERSION`) from the npm
//!   registry once per machine into `target/test-tools/` under a file lock, so
//!   parallel test processes share one install. No npm means a failing test
//!   that says what to install, never a skip.
//! - [`TestEnv`] gives each test its own `HOME` with the first-run answers
//!   written in (onboarding done, API key approved, project trusted, bypass
//!   prompt accepted), a project folder, and an [`Api`] on 127.0.0.1. Every
//!   process it starts gets a cleared environment plus exactly what it needs,
//!   so nothing leaks in from the developer's own Claude Code session.
//! - Each `claude` session takes the next script queued with `api.session`;
//!   see [`api`] for the reply kinds, and `api.requests()` / `api.turns()` to
//!   assert what arrived (prompt, system prompt, slash-command text).
//! - [`TestEnv::claude_interactive`] runs the TUI under a pseudo-terminal and
//!   keeps a parsed screen ([`Pty::wait_for`], [`Pty::screen`]).
//! - [`TestEnv::ralph`] runs the built `ralph` with the same environment.
//! - pi and opencode ([`pi_bin`], [`opencode_bin`]) reach the same API over
//!   Chat Completions (`chat`), provider `scripted`, model [`SCRIPTED_MODEL`]
//!   (pi `--model`, opencode `-m`), from configs in each home;
//!   [`TestEnv::pi_json`] and [`TestEnv::opencode_json`] run them headless.
//!   A `Reply::usage_limit(..).retry_after("3600")` plays their trap.

#![allow(dead_code)]

pub mod agents;
pub mod api;
pub mod browser;
mod chat;
pub mod github;
pub mod loops;
pub mod mcp;
pub mod snap;
pub mod tmux;
mod wire;

pub use agents::*;
pub use loops::*;

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use api::{Api, Reply};
use serde_json::json;

pub const CLAUDE_VERSION: &str = "2.1.330";
const API_KEY: &str = "sk-ant-test-0123456789abcdefghijklmnop";

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn ralph_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ralph"))
}

pub(crate) fn tools_dir() -> PathBuf {
    std::env::var_os("RALPH_TEST_TOOLS").map_or_else(
        || repo_root().join("target").join("test-tools"),
        PathBuf::from,
    )
}

/// Hold an exclusive lock on `path` while `f` runs (across processes).
pub fn with_file_lock<T>(path: &Path, f: impl FnOnce() -> T) -> T {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file =
        File::create(path).unwrap_or_else(|e| panic!("cannot create lock {}: {e}", path.display()));
    let _lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .unwrap_or_else(|(_, e)| panic!("cannot lock {}: {e}", path.display()));
    f()
}

/// The pinned real Claude Code CLI, installed from the npm registry once.
pub fn claude_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let prefix = tools_dir().join(format!("claude-{CLAUDE_VERSION}"));
        let bin = prefix.join("node_modules/.bin/claude");
        with_file_lock(&tools_dir().join("claude.lock"), || {
            if version_of(&bin).is_some_and(|v| v.starts_with(CLAUDE_VERSION)) {
                return;
            }
            let npm = which::which("npm").unwrap_or_else(|_| {
                panic!(
                    "npm is not installed, and the tests need the real Claude Code CLI from the npm registry.\n\
                     Install Node.js 20+ with npm (Debian/Ubuntu: `apt-get install -y nodejs npm`), then run the tests again."
                )
            });
            let t0 = Instant::now();
            let out = Command::new(npm)
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&prefix)
                .arg(format!("@anthropic-ai/claude-code@{CLAUDE_VERSION}"))
                .output()
                .expect("run npm");
            assert!(
                out.status.success(),
                "`npm install @anthropic-ai/claude-code@{CLAUDE_VERSION}` failed ({}):\n{}\n{}\nCheck that the npm registry is reachable.",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!("provisioned Claude Code {CLAUDE_VERSION} in {:.1}s", t0.elapsed().as_secs_f64());
        });
        let v = version_of(&bin).unwrap_or_else(|| panic!("{} does not run after npm install", bin.display()));
        assert!(v.starts_with(CLAUDE_VERSION), "expected Claude Code {CLAUDE_VERSION}, got {v}");
        bin
    })
    .clone()
}

pub const BR_VERSION: &str = "0.7.6";

/// Seconds since the epoch.
pub fn now_epoch() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Machine-wide cache for tools too slow to build per clone (outside the
/// clone, so a fresh clone on the same machine reuses them).
fn machine_cache() -> PathBuf {
    if let Some(d) = std::env::var_os("RALPH_TEST_CACHE") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache/ralph-test")
}

/// A `br` of the version the tests pin that is already there: the one
/// `RALPH_TEST_BR` names, else the first on PATH (the README has users
/// build it), so the tests do not build it again.
fn br_at_hand() -> Option<PathBuf> {
    let named = std::env::var_os("RALPH_TEST_BR").map(PathBuf::from);
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("br"))
            .find(|b| b.is_file())
    });
    named
        .or(on_path)
        .filter(|b| version_of(b).is_some_and(|v| v.contains(BR_VERSION)))
}

/// The real beads_rust `br`: one of the pinned version at hand
/// (`br_at_hand`), else built once per machine with cargo (15-25 minutes
/// on 2 cores; see the README for why it needs RUSTC_BOOTSTRAP).
pub fn br_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = br_at_hand() {
            return bin;
        }
        let root = machine_cache().join(format!("br-{BR_VERSION}"));
        let bin = root.join("bin/br");
        with_file_lock(&machine_cache().join("br.lock"), || {
            if version_of(&bin).is_some_and(|v| v.contains(BR_VERSION)) {
                return;
            }
            let cargo = std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from);
            eprintln!("building beads_rust {BR_VERSION} into {} (once per machine, 15-25 min)", root.display());
            let t0 = Instant::now();
            // Niced: other tests may be running beside the build.
            let out = Command::new("nice")
                .args(["-n", "10"])
                .arg(cargo)
                .args(["install", "beads_rust", "--version", BR_VERSION, "--no-default-features", "--locked", "--ignore-rust-version", "--root"])
                .arg(&root)
                .env("RUSTC_BOOTSTRAP", "1")
                .env("CARGO_TARGET_DIR", machine_cache().join("br-build"))
                .output()
                .expect("run cargo install");
            assert!(
                out.status.success(),
                "building beads_rust {BR_VERSION} failed ({}):\n{}\nThe tests need the real `br`; check that the crate registry is reachable.",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let _ = fs::remove_dir_all(machine_cache().join("br-build"));
            eprintln!("built br in {:.0}s", t0.elapsed().as_secs_f64());
        });
        let v = version_of(&bin).unwrap_or_else(|| panic!("{} does not run", bin.display()));
        assert!(v.contains(BR_VERSION), "expected br {BR_VERSION}, got {v}");
        bin
    })
    .clone()
}

/// What Claude Code's sandbox needs on Linux (bubblewrap, socat).
pub fn sandbox_tools() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        system_packages(
            "confined sessions",
            &[("bwrap", "bubblewrap"), ("socat", "socat")],
        )
    });
}

/// tmux, for the tests that drive a real terminal (`ralph watch`).
pub fn tmux_tool() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| system_packages("the terminal tests", &[("tmux", "tmux")]));
}

/// Chromium, for the tests that drive `ralph serve`'s page in a real browser.
pub fn chromium_tool() -> PathBuf {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| system_packages("the web page tests", &[("chromium", "chromium")]));
    which::which("chromium").expect("chromium")
}

/// Go, for the gate's baseline read from `go test -json`.
pub fn go_tool() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| system_packages("the gate baseline tests", &[("go", "golang-go")]));
}

/// pytest, pinned, in a venv of its own under `target/test-tools/`: the
/// venv's python (`python -m pytest`).
pub fn pytest_python() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        venv_python(
            "the gate baseline tests need pytest",
            ("pytest", "9.2.0"),
            "pytest",
        )
    })
    .clone()
}

/// The python of a venv under `target/test-tools/` with `package` at
/// `version` installed (once per machine, under a lock), `import` then
/// importable; else a failing test that says how to set it up (`who`).
pub(crate) fn venv_python(who: &str, (package, version): (&str, &str), import: &str) -> PathBuf {
    let venv = tools_dir().join(format!("{package}-py-{version}"));
    let python = venv.join("bin/python");
    let there = || {
        Command::new(&python)
            .args(["-c", &format!("import {import}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    with_file_lock(&tools_dir().join(format!("{package}-py.lock")), || {
        if there() {
            return;
        }
        let how = format!(
            "{who}: install Python 3.10+ with venv (Debian/Ubuntu: `apt-get install -y python3 python3-venv`), then `python3 -m venv {v} && {v}/bin/pip install {package}=={version}`",
            v = venv.display()
        );
        let t0 = std::time::Instant::now();
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .unwrap_or_else(|e| panic!("cannot run python3 ({e}): {how}"));
        assert!(
            made.status.success(),
            "python3 -m venv failed: {}\n{how}",
            String::from_utf8_lossy(&made.stderr)
        );
        let pip = Command::new(venv.join("bin/pip"))
            .args(["install", "-q", &format!("{package}=={version}")])
            .output()
            .expect("run pip");
        assert!(
            pip.status.success(),
            "pip install {package}=={version} failed: {}\nCheck that the Python package index is reachable; {how}",
            String::from_utf8_lossy(&pip.stderr)
        );
        eprintln!(
            "provisioned {package} {version} in {:.1}s",
            t0.elapsed().as_secs_f64()
        );
    });
    assert!(
        there(),
        "{import} is not importable from {}",
        python.display()
    );
    python
}

/// Programs from the system's packages, installed when missing: once per
/// machine, under a lock. No apt (or no root) means a failing test that
/// says what to install.
fn system_packages(who: &str, need: &[(&str, &str)]) {
    let have = || need.iter().all(|(bin, _)| which::which(bin).is_ok());
    if have() {
        return;
    }
    let packages: Vec<&str> = need.iter().map(|(_, p)| *p).collect();
    let list = packages.join(" ");
    with_file_lock(&machine_cache().join("apt.lock"), || {
        if have() {
            return;
        }
        let apt = which::which("apt-get").unwrap_or_else(|_| {
            panic!(
                "{who} need {list}, which are not installed, and there is no apt-get here: \
                 install them with your system's package manager (Fedora: dnf install {list})"
            )
        });
        let run = |args: &[&str]| {
            let out = Command::new(&apt)
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .output()
                .expect("run apt-get");
            assert!(
                out.status.success(),
                "apt-get {args:?} failed ({}): {}\nInstall {list} (apt-get install {list}) and run the tests again.",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        };
        eprintln!("installing {list} from the system's packages (once per machine)");
        run(&["update", "-qq"]);
        let mut args = vec!["install", "-y", "-qq"];
        args.extend(&packages);
        run(&args);
    });
    assert!(have(), "{list} still missing after apt-get install");
}

pub(crate) fn version_of(bin: &Path) -> Option<String> {
    let out = Command::new(bin)
        .arg("--version")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .ok()?;
    // pi prints its version on stderr.
    let text = if out.stdout.iter().all(u8::is_ascii_whitespace) {
        &out.stderr
    } else {
        &out.stdout
    };
    out.status
        .success()
        .then(|| String::from_utf8_lossy(text).trim().to_string())
}

/// One test's world: a temp home, a project folder in it, a scripted API.
pub struct TestEnv {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub api: Api,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    /// A test world. Provisions nothing: each real tool is installed (once
    /// per machine) when a test first uses it, so a test of install-hook
    /// never waits for the tracker to be built.
    pub fn new() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("ralph-it-")
            .tempdir()
            .unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let project = root.join("project");
        fs::create_dir_all(home.join(".claude")).unwrap();
        fs::create_dir_all(home.join(".codex")).unwrap();
        fs::create_dir_all(home.join(".gemini")).unwrap();
        fs::create_dir_all(&project).unwrap();
        let env = TestEnv {
            tmp,
            home,
            project,
            api: Api::start(),
        };
        env.trust(&env.project.clone());
        fs::write(
            env.home.join(".codex/config.toml"),
            codex_config(&env.api.url),
        )
        .unwrap();
        // Codex runs each command in a login shell, whose /etc/profile sets
        // PATH anew; a user's ~/.profile puts their tools back, as this one
        // does for ralph and br.
        fs::write(
            env.home.join(".profile"),
            format!(
                "PATH=\"{}:{}:$PATH\"\n",
                ralph_bin().parent().unwrap().display(),
                machine_cache()
                    .join(format!("br-{BR_VERSION}/bin"))
                    .display()
            ),
        )
        .unwrap();
        fs::write(env.home.join(".gemini/settings.json"), GEMINI_SETTINGS).unwrap();
        env.pi_home();
        env.opencode_home();
        fs::write(
            env.home.join(".claude/settings.json"),
            serde_json::to_string_pretty(&json!({"skipDangerousModePermissionPrompt": true}))
                .unwrap()
                + "\n",
        )
        .unwrap();
        env
    }

    /// pi's agent folder (its default, `~/.pi/agent`): the scripted API as
    /// its model provider, retries off.
    fn pi_home(&self) {
        let dir = self.home.join(".pi/agent");
        fs::create_dir_all(&dir).unwrap();
        write_json(&dir.join("models.json"), &pi_models(&self.api.url));
        write_json(&dir.join("settings.json"), &pi_settings());
    }

    /// opencode's config folder: the scripted API as its provider, and its
    /// plugin package linked in as if installed (no npm install at start;
    /// the link dangles until `opencode_bin` installs the package).
    fn opencode_home(&self) {
        let dir = self.opencode_config_dir();
        fs::create_dir_all(&dir).unwrap();
        write_json(&dir.join("opencode.json"), &opencode_config(&self.api.url));
        opencode_plugin_in(&dir);
    }

    /// `$XDG_CONFIG_HOME/opencode`, which opencode rewrites (it adds a
    /// `$schema` to opencode.json).
    pub fn opencode_config_dir(&self) -> PathBuf {
        self.home.join(".config/opencode")
    }

    /// Answer the first-run screens for interactive sessions in `dir`
    /// (without the trust dialog accepted, no settings hooks run at all).
    pub fn trust(&self, dir: &Path) {
        let path = self.home.join(".claude.json");
        let mut v: serde_json::Value =
            fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_else(|| {
                json!({
                    "hasCompletedOnboarding": true,
                    "theme": "dark",
                    "customApiKeyResponses": {"approved": [&API_KEY[API_KEY.len() - 20..]], "rejected": []},
                    "projects": {}
                })
            });
        v["projects"][dir.to_str().unwrap()] = json!({"hasTrustDialogAccepted": true});
        fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }

    /// `ralph trust --yes` in the project: the user approves its config.
    /// `.ralph/config.toml` written as `text`, and approved as you would.
    pub fn approved_config(&self, text: impl AsRef<str>) {
        std::fs::write(self.project.join(".ralph/config.toml"), text.as_ref()).unwrap();
        self.approve_config();
    }

    pub fn approve_config(&self) {
        self.approve_config_in(&self.project.clone());
    }

    pub fn approve_config_in(&self, dir: &Path) {
        let out = self
            .ralph()
            .current_dir(dir)
            .args(["trust", "--yes"])
            .assert()
            .get_output()
            .clone();
        assert!(out.status.success(), "ralph trust --yes: {out:?}");
    }

    /// The loop lock of project `dir`, in ralph's state folder under this
    /// test's HOME (a digest of the project's real path names it).
    pub fn lock_of(&self, dir: &Path) -> PathBuf {
        let real = dir.canonicalize().unwrap();
        let key = ralph::trust::store::sha256_hex(real.as_os_str().as_encoded_bytes());
        self.home
            .join(".local/state/ralph/loops")
            .join(format!("{}.lock", &key[..32]))
    }

    /// The project's loop lock.
    pub fn lock(&self) -> PathBuf {
        self.lock_of(&self.project)
    }

    /// Write a lock as a loop that died would have left it.
    pub fn plant_lock(&self, text: &str) {
        let p = self.lock();
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    pub fn user_settings(&self) -> PathBuf {
        self.home.join(".claude/settings.json")
    }

    /// The environment every process of this test runs with, and nothing else.
    pub fn vars(&self) -> Vec<(String, String)> {
        let codex_home = self.home.join(".codex").display().to_string();
        let xdg = [".config", ".local/share", ".cache", ".local/state"]
            .map(|d| self.home.join(d).display().to_string());
        let path = format!(
            "{}:/usr/local/bin:/usr/bin:/bin",
            ralph_bin().parent().unwrap().display()
        );
        [
            ("PATH", path.as_str()),
            ("HOME", self.home.to_str().unwrap()),
            ("TERM", "xterm-256color"),
            ("LANG", "C.UTF-8"),
            ("ANTHROPIC_BASE_URL", self.api.url.as_str()),
            ("ANTHROPIC_API_KEY", API_KEY),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            // Scripted errors are answered at once; don't wait out backoffs.
            ("CLAUDE_CODE_MAX_RETRIES", "1"),
            // Root may not use --dangerously-skip-permissions outside a sandbox.
            ("IS_SANDBOX", "1"),
            // Codex and Gemini against the same scripted API. (A user trusts
            // a folder for Gemini once; here it is said in the environment.)
            ("CODEX_HOME", codex_home.as_str()),
            ("SCRIPTED_API_KEY", "scripted"),
            ("GEMINI_CLI_HOME", self.home.to_str().unwrap()),
            ("GOOGLE_GEMINI_BASE_URL", self.api.url.as_str()),
            ("GEMINI_API_KEY", "scripted"),
            ("GEMINI_CLI_TRUST_WORKSPACE", "true"),
            // pi and opencode: no update checks, telemetry, model-list
            // fetches or downloads; their state in this home (XDG folders
            // at their usual places, said outright for opencode).
            ("PI_OFFLINE", "1"),
            ("XDG_CONFIG_HOME", xdg[0].as_str()),
            ("XDG_DATA_HOME", xdg[1].as_str()),
            ("XDG_CACHE_HOME", xdg[2].as_str()),
            ("XDG_STATE_HOME", xdg[3].as_str()),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
            ("OPENCODE_DISABLE_SHARE", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env_clear().envs(self.vars()).current_dir(&self.project);
        default_signals(&mut c);
        c
    }

    /// `git` in `dir`, which must succeed; its stdout.
    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let out = self
            .command("git")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `git` in the project.
    /// `git add -A` and a commit of everything, in the project.
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-qm", message]);
    }

    pub fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.project, args)
    }

    /// Make the project a git repository (branch `main`) with a committer.
    pub fn git_init(&self) {
        self.git(&["init", "-q", "-b", "main"]);
        self.git(&["config", "user.email", "test@example.com"]);
        self.git(&["config", "user.name", "Test"]);
    }

    /// Which of `ids` the real `br` in the project does not show as closed.
    pub fn not_closed(&self, ids: &[String]) -> Vec<String> {
        let list: serde_json::Value =
            serde_json::from_str(&self.br(&["list", "--all", "--limit", "0", "--json"])).unwrap();
        let closed: Vec<&str> = list["issues"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["status"] == "closed")
            .filter_map(|i| i["id"].as_str())
            .collect();
        ids.iter()
            .filter(|id| !closed.contains(&id.as_str()))
            .cloned()
            .collect()
    }

    /// A Stop hook in the user settings that touches `marker`: proof that the
    /// Stop hooks of a session have run.
    pub fn stop_hook_marker(&self, marker: &Path) {
        fs::write(
            self.user_settings(),
            json!({
                "skipDangerousModePermissionPrompt": true,
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": format!("touch {}", marker.display())}]}]}
            })
            .to_string(),
        )
        .unwrap();
    }

    /// `br` in the project, with the real binary.
    pub fn br(&self, args: &[&str]) -> String {
        let out = self.command(br_bin()).args(args).output().unwrap();
        assert!(out.status.success(), "br {args:?} failed: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// PATH with the real `br` on it, for ralph.
    pub fn path_with_br(&self) -> String {
        format!(
            "{}:{}",
            br_bin().parent().unwrap().display(),
            self.vars().iter().find(|(k, _)| k == "PATH").unwrap().1
        )
    }

    pub fn claude(&self) -> Command {
        self.command(claude_bin())
    }

    /// `claude -p` with the prompt on stdin; extra args after.
    pub fn claude_print(&self, prompt: &str, args: &[&str]) -> Output {
        let mut c = self.claude();
        c.args(["-p", "--dangerously-skip-permissions"]).args(args);
        run_with_stdin(c, prompt, Duration::from_secs(120))
    }

    /// `pi --mode json` on the scripted model, the prompt on stdin (closed
    /// after: pi waits for its end); extra args after.
    pub fn pi_json(&self, prompt: &str, args: &[&str]) -> Output {
        let mut c = self.command(pi_bin());
        c.args(["--mode", "json", "--model", SCRIPTED_MODEL])
            .args(args);
        run_with_stdin(c, prompt, Duration::from_secs(120))
    }

    /// `opencode run --format json` on the scripted model, the prompt on
    /// stdin (as arguments it would reach the model in quotes); extra args
    /// after.
    pub fn opencode_json(&self, prompt: &str, args: &[&str]) -> Output {
        let mut c = self.command(opencode_bin());
        c.args(["run", "--format", "json", "-m", SCRIPTED_MODEL])
            .args(args);
        run_with_stdin(c, prompt, Duration::from_secs(120))
    }

    pub fn claude_interactive(&self, args: &[&str], extra_env: &[(&str, &str)]) -> Pty {
        let mut argv = vec![
            claude_bin().to_str().unwrap().to_string(),
            "--dangerously-skip-permissions".into(),
        ];
        argv.extend(args.iter().map(|s| s.to_string()));
        let mut vars = self.vars();
        vars.extend(
            extra_env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        Pty::spawn(&argv, &vars, &self.project)
    }

    /// The built ralph binary run as user `nobody` (for tests where root's
    /// permission to write anywhere would hide what a user sees).
    pub fn ralph_as_nobody(&self) -> Ralph {
        let setpriv = which::which("setpriv")
            .expect("setpriv (util-linux) is needed to run as nobody: apt-get install util-linux");
        // A copy nobody can reach, wherever the clone (and target/) lives.
        let dir = self.tmp.path().join("bin-for-nobody");
        fs::create_dir_all(&dir).unwrap();
        let bin = dir.join("ralph");
        fs::copy(ralph_bin(), &bin).unwrap();
        for p in [self.tmp.path(), dir.as_path(), bin.as_path()] {
            fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
        let mut cmd = self.command(setpriv);
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        Ralph {
            cmd,
            stdin: None,
            project: self.project.clone(),
        }
    }

    /// The built ralph binary with this test's environment.
    /// `ralph doctor --json`'s check `name`, whatever doctor's exit.
    pub fn doctor_check(&self, name: &str) -> serde_json::Value {
        let out = self
            .ralph()
            .args(["doctor", "--json"])
            .assert()
            .get_output()
            .stdout
            .clone();
        check_named(&serde_json::from_slice(&out).unwrap(), name)
    }

    pub fn ralph(&self) -> Ralph {
        Ralph {
            cmd: self.command(ralph_bin()),
            stdin: None,
            project: self.project.clone(),
        }
    }
}

/// An opencode config folder (its own, or a project's `.opencode`) with
/// opencode's plugin package linked in as if installed: no npm install as
/// it starts (the link dangles until `opencode_bin` installs the package).
pub fn opencode_plugin_in(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    let (manifest, lock) = opencode_plugin_lock();
    write_json(&dir.join("package.json"), &manifest);
    write_json(&dir.join("package-lock.json"), &lock);
    let modules = tools_dir().join(format!("opencode-plugin-{OPENCODE_VERSION}/node_modules"));
    std::os::unix::fs::symlink(modules, dir.join("node_modules")).unwrap();
}

/// `v` pretty-printed to `path`, as a user's config file.
fn write_json(path: &Path, v: &serde_json::Value) {
    fs::write(path, serde_json::to_string_pretty(v).unwrap() + "\n").unwrap();
}

/// Start `c` with the default action for every signal a test sends or a
/// terminal would: a test run started in the background of a script
/// (`cargo test &`, nohup) inherits SIGINT (and SIGQUIT) ignored, and a shell
/// cannot trap a signal that was ignored when it started.
pub fn default_signals(c: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: sigaction is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            for sig in [
                nix::sys::signal::Signal::SIGINT,
                nix::sys::signal::Signal::SIGQUIT,
                nix::sys::signal::Signal::SIGTERM,
                nix::sys::signal::Signal::SIGHUP,
            ] {
                nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl)
                    .map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
}

/// Default actions for the terminal's signals in this test process itself.
pub fn reset_signals_here() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        for sig in [
            nix::sys::signal::Signal::SIGINT,
            nix::sys::signal::Signal::SIGQUIT,
        ] {
            // SAFETY: installs the default action; no handler code runs.
            unsafe {
                let _ = nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl);
            }
        }
    });
}

/// `cmd.output()` for a binary this test has just copied: another thread's
/// fork can still hold the copy open for writing for a moment, and exec then
/// fails with "Text file busy". Retried for up to 5 s.
pub fn output_of_fresh_binary(cmd: &mut Command) -> Output {
    let t0 = Instant::now();
    loop {
        match cmd.output() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && t0.elapsed() < Duration::from_secs(5) =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other.unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}")),
        }
    }
}

/// Run a command with `input` on stdin, killing it after `limit`.
pub fn run_with_stdin(mut c: Command, input: &str, limit: Duration) -> Output {
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {c:?}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    wait_output(child, limit)
}

/// RFC 3339 times (`2026-11-23T15:13:30Z`) written `{time}`.
pub fn times_hidden(s: &str) -> String {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:ddZ";
    let fits = |w: &[u8]| {
        w.iter().zip(SHAPE).all(|(c, m)| {
            if *m == b'd' {
                c.is_ascii_digit()
            } else {
                c == m
            }
        })
    };
    let (b, mut out, mut i) = (s.as_bytes(), String::new(), 0);
    while i < b.len() {
        if b.len() - i >= SHAPE.len() && fits(&b[i..i + SHAPE.len()]) {
            out.push_str("{time}");
            i += SHAPE.len();
        } else {
            let ch = s[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// A small fluent helper over the built binary, in the style of `just`'s tests.
pub struct Ralph {
    pub cmd: Command,
    stdin: Option<String>,
    /// Shown as `{project}` where whole output is compared.
    project: PathBuf,
}

impl Ralph {
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    pub fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.arg(a);
        self
    }

    pub fn env(mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> Self {
        self.cmd.env(k, v);
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    pub fn stdin(mut self, s: &str) -> Self {
        self.stdin = Some(s.to_string());
        self
    }

    pub fn assert(self) -> assert_cmd::assert::Assert {
        let out = run_with_stdin(
            self.cmd,
            self.stdin.as_deref().unwrap_or(""),
            Duration::from_secs(120),
        );
        assert_cmd::assert::Assert::new(out)
    }

    /// Run it, expect exit status `code`, and give back its stdout.
    pub fn stdout_with(self, code: i32) -> String {
        let out = self.assert().code(code).get_output().stdout.clone();
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Run it, expect exit status `code`, and return its stderr.
    pub fn stderr_with(self, code: i32) -> String {
        let out = self.assert().code(code).get_output().stderr.clone();
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Run it, expect exit status `code`, and compare its whole stdout and
    /// stderr with what a user would see: the project's path written
    /// `{project}`, times `{time}`.
    pub fn prints(self, code: i32, stdout: &str, stderr: &str) {
        let project = self.project.display().to_string();
        let out = self.assert().code(code).get_output().clone();
        let shown =
            |b: &[u8]| times_hidden(&String::from_utf8_lossy(b).replace(&project, "{project}"));
        assert_eq!(
            (shown(&out.stdout).as_str(), shown(&out.stderr).as_str()),
            (stdout, stderr)
        );
    }

    /// Run it, expect exit status `code`, and parse its stdout as JSON.
    /// `ralph doctor` as a user reads it (whatever its exit): the lines of
    /// check `name`, its verdict's first (`ok  name ...`, `FAIL name ...`)
    /// and those under it (its fix).
    pub fn doctor_lines(self, name: &str) -> Vec<String> {
        let out = self.arg("doctor").assert().get_output().stdout.clone();
        let out = String::from_utf8_lossy(&out).into_owned();
        let head = |l: &str| {
            let mut w = l.split_whitespace();
            matches!(w.next(), Some("ok" | "FAIL")) && w.next() == Some(name)
        };
        let mut lines = out.lines().skip_while(|l| !head(l));
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("no check {name} in:\n{out}"));
        std::iter::once(first)
            .chain(lines.take_while(|l| l.starts_with("     ")))
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    pub fn json_with(self, code: i32) -> serde_json::Value {
        let out = self.stdout_with(code);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    /// Start it in the background, stdin closed, stdout and stderr piped.
    /// It leads a process group of its own, which `wait_output` ends whole
    /// at its deadline.
    pub fn spawn(mut self) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        self.cmd
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", self.cmd))
    }
}

/// A process on a pseudo-terminal with a parsed screen.
pub struct Pty {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    parser: Arc<Mutex<vt100::Parser>>,
    /// Every distinct screen shown so far: a TUI may clear what a test
    /// waits for (on exit, say) before the test looks.
    history: Arc<Mutex<Vec<String>>>,
    writer: Box<dyn Write + Send>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Pty {
    pub fn spawn(argv: &[String], vars: &[(String, String)], cwd: &Path) -> Pty {
        use portable_pty::{CommandBuilder, PtySize, native_pty_system};
        // The pty crate forks from this process: give its children default
        // signal actions whatever this test process inherited.
        reset_signals_here();
        let (rows, cols) = (40, 140);
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut cmd = CommandBuilder::new(&argv[0]);
        cmd.args(&argv[1..]);
        cmd.env_clear();
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.cwd(cwd);
        let child = pair.slave.spawn_command(cmd).expect("spawn on the pty");
        drop(pair.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let mut reader = pair.master.try_clone_reader().unwrap();
        let p2 = parser.clone();
        let history = Arc::new(Mutex::new(Vec::new()));
        let h2 = history.clone();
        let writer = pair.master.take_writer().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut p = p2.lock().unwrap();
                p.process(&buf[..n]);
                let screen = p.screen().contents();
                let mut h = h2.lock().unwrap();
                if h.last() != Some(&screen) && h.len() < 20_000 {
                    h.push(screen);
                }
            }
        });
        Pty {
            child,
            parser,
            history,
            writer,
            _master: pair.master,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.process_id().unwrap()
    }

    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Has the screen shown `text` at any time so far?
    pub fn has_shown(&self, text: &str) -> bool {
        self.history
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.contains(text))
    }

    /// Wait until the screen shows (or has shown) `text`; panics with the
    /// screen if it doesn't.
    pub fn wait_for(&self, text: &str, limit: Duration) {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if self.has_shown(text) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "screen never showed {text:?} within {limit:?}:\n{}",
            self.screen()
        );
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    /// The exit status if the process ends within `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<portable_pty::ExitStatus> {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    /// The session stays open: once its Stop hooks have run (`marker`), it
    /// may not exit within a deadline long enough for a SIGINT to land.
    /// Once the Stop hooks ran (`marker`), the TUI takes another prompt
    /// and shows its `answer` (queued by the test): proof it stayed open,
    /// with no wait for something not to happen.
    pub fn answers_again(&mut self, marker: &Path, answer: &str) {
        assert!(
            eventually(Duration::from_secs(60), || marker.exists()),
            "the Stop hooks never ran:\n{}",
            self.screen()
        );
        self.send(b"and again\r");
        self.wait_for(answer, Duration::from_secs(60));
        assert!(self.is_running(), "{}", self.screen());
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Wait until `f` holds, polling; false if it never did within `limit`.
/// Every file and folder under `root`, relative, sorted.
pub fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Write an executable file (a script or a wrapper).
pub fn write_exec(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

/// Wait for a spawned child's output, killing it after `limit`.
pub fn wait_output(child: std::process::Child, limit: Duration) -> Output {
    let pid = child.id();
    let done = Arc::new(Mutex::new(false));
    let d2 = done.clone();
    std::thread::spawn(move || {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(100));
            if *d2.lock().unwrap() {
                return;
            }
        }
        // Its process group too (children spawned by `Ralph::spawn` lead
        // one): a grandchild still holding the output pipes would otherwise
        // keep this wait, and the test, from ever ending.
        for target in [pid as i32, -(pid as i32)] {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(target),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    });
    let out = child.wait_with_output().unwrap();
    *done.lock().unwrap() = true;
    out
}

/// A ralph started in the background whose output is read as it comes:
/// for a command that waits or follows, which a test talks to while it
/// runs.
pub struct Live {
    child: std::process::Child,
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Live {
    pub fn start(r: Ralph) -> Live {
        let mut child = r.spawn();
        let (out, err) = (Arc::default(), Arc::default());
        let read = |mut from: Box<dyn Read + Send>, into: &Arc<Mutex<Vec<u8>>>| {
            let into = into.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    into.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            })
        };
        let readers = vec![
            read(Box::new(child.stdout.take().unwrap()), &out),
            read(Box::new(child.stderr.take().unwrap()), &err),
        ];
        Live {
            child,
            out,
            err,
            readers,
        }
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.err.lock().unwrap()).into_owned()
    }

    /// Wait until its stdout or stderr shows `text`; panics with both if not.
    pub fn wait_for(&self, text: &str, limit: Duration) {
        let shown = || self.stdout().contains(text) || self.stderr().contains(text);
        assert!(
            eventually(limit, shown),
            "never showed {text:?} within {limit:?}:\n{}\n{}",
            self.stdout(),
            self.stderr()
        );
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    /// `sig` to its whole process group (`Ralph::spawn` made one): a
    /// machine that dies, with everything it started.
    pub fn signal_group(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(-(self.child.id() as i32)), sig).unwrap();
    }

    /// How often its main thread has slept (its voluntary context
    /// switches): a poller's looks, counted from outside, so a test waits
    /// for several of them instead of for a while.
    pub fn sleeps(&self) -> u64 {
        let status = fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap()
    }

    /// Its exit code (`None`: killed by a signal), stdout and stderr; it is
    /// killed if it has not ended within `limit`.
    pub fn finish(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > limit {
                // Its process group, which `Ralph::spawn` made: nothing
                // left holding the pipes the readers wait on.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(-(self.child.id() as i32)),
                    nix::sys::signal::Signal::SIGKILL,
                );
                break self.child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        (status.code(), self.stdout(), self.stderr())
    }
}

/// The check `name` of `ralph doctor --json`'s report.
pub fn check_named(v: &serde_json::Value, name: &str) -> serde_json::Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no doctor check {name}: {v}"))
        .clone()
}
