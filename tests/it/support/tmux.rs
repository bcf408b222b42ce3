//! A real terminal for the tests of what is interactive: a private tmux
//! server (its own socket), one window, keys sent and the screen captured.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::TestEnv;

pub struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// `cmd` (a shell command line) in a `width`×`height` window in `cwd`,
    /// with the test's environment; once it ends the window says `EXITED
    /// <status>` and stays.
    pub fn start(env: &TestEnv, cwd: &Path, cmd: &str, width: u16, height: u16) -> Tmux {
        super::tmux_tool();
        // A socket of its own each time: a server just killed may still
        // hold the last one.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = env.tmp.path().join(format!("tmux-{n}"));
        let vars: Vec<String> = env
            .vars()
            .into_iter()
            .map(|(k, v)| format!("{k}={}", shell_words::quote(&v)))
            .collect();
        let line = format!(
            "env -i {} sh -c {}; echo EXITED $?; sleep 600",
            vars.join(" "),
            shell_words::quote(cmd)
        );
        let t = Tmux { socket };
        let out = t
            .tmux()
            .args([
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
                "-c",
            ])
            .arg(cwd)
            .arg(line)
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).env_remove("TMUX");
        c
    }

    /// Keys as tmux names them (`Down`, `C-c`, `q`).
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            let ok = self
                .tmux()
                .args(["send-keys", "-t", "t", k])
                .status()
                .unwrap();
            assert!(ok.success());
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    pub fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen with its colours and attributes, as escape sequences.
    pub fn screen_escapes(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-e", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen once `ok` holds (within 60 s), else a failure that shows it.
    pub fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "never saw {what}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Is the alternate screen on (a full-screen program still has it)?
    pub fn alternate_on(&self) -> bool {
        let out = self
            .tmux()
            .args(["display", "-p", "-t", "t", "#{alternate_on}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    pub fn resize(&self, width: u16, height: u16) {
        let ok = self
            .tmux()
            .args([
                "resize-window",
                "-t",
                "t",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
            ])
            .status()
            .unwrap();
        assert!(ok.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}
