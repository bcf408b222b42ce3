//! The hook's view of the processes above it: read one process at a time
//! (never the whole process table, which costs milliseconds on a busy
//! machine), identified by pid *and* start time so that a recycled pid is
//! never mistaken for the process we meant.

use std::ffi::OsString;
use std::path::PathBuf;

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u32,
    pub parent: Option<u32>,
    /// Seconds since the epoch, as sysinfo reports it.
    pub start_time: u64,
    pub name: String,
    pub exe: Option<PathBuf>,
    pub cmd: Vec<String>,
}

pub struct ProcReader {
    sys: Option<System>,
    /// An environment read together with a process, for `environ` to hand
    /// out without reading the process again.
    prefetched: Option<(u32, u64, Vec<OsString>)>,
}

impl Default for ProcReader {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcReader {
    pub fn new() -> Self {
        ProcReader {
            sys: System::new().ok(),
            prefetched: None,
        }
    }

    /// Refresh one process with `kind` (sysinfo always reads pid, parent,
    /// start time, name and status) and look it up.
    fn refresh(&mut self, pid: u32, kind: ProcessRefreshKind) -> Option<&sysinfo::Process> {
        let sys = self.sys.as_mut()?;
        let spid = Pid::from_u32(pid);
        // Without tasks: listing a process's threads is five more syscalls
        // per process, for nothing the hook needs.
        sys.refresh_processes_specifics(
            ProcessesToUpdate::Some(&[spid]),
            true,
            kind.without_tasks(),
        );
        sys.process(spid)
    }

    fn info(pid: u32, p: &sysinfo::Process) -> ProcInfo {
        ProcInfo {
            pid,
            parent: p.parent().map(|p| p.as_u32()),
            start_time: p.start_time(),
            name: p.name().to_string_lossy().into_owned(),
            exe: p.exe().map(PathBuf::from),
            cmd: p
                .cmd()
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        }
    }

    /// Read one process, with its executable and command line.
    pub fn get(&mut self, pid: u32) -> Option<ProcInfo> {
        let kind = ProcessRefreshKind::nothing()
            .with_exe(UpdateKind::Always)
            .with_cmd(UpdateKind::Always);
        self.refresh(pid, kind).map(|p| Self::info(pid, p))
    }

    /// Read one process without its executable and command line (pid,
    /// parent, start time and name only): cheaper, for processes whose
    /// identity is settled otherwise.
    pub fn get_basic(&mut self, pid: u32) -> Option<ProcInfo> {
        self.refresh(pid, ProcessRefreshKind::nothing())
            .map(|p| Self::info(pid, p))
    }

    /// `get_basic`, reading the start environment in the same pass (for the
    /// process that will be asked for it next).
    pub fn get_basic_with_environ(&mut self, pid: u32) -> Option<ProcInfo> {
        let kind = ProcessRefreshKind::nothing().with_environ(UpdateKind::Always);
        let (info, env) = self
            .refresh(pid, kind)
            .map(|p| (Self::info(pid, p), p.environ().to_vec()))?;
        self.prefetched = Some((pid, info.start_time, env));
        Some(info)
    }

    /// The environment a process was started with (not what it set later),
    /// with its start time, read together so the caller can check it is
    /// still the process it meant.
    pub fn environ(&mut self, pid: u32) -> Option<(u64, Vec<OsString>)> {
        if let Some((p, start, env)) = self.prefetched.take()
            && p == pid
        {
            return Some((start, env));
        }
        let kind = ProcessRefreshKind::nothing().with_environ(UpdateKind::Always);
        self.refresh(pid, kind)
            .map(|p| (p.start_time(), p.environ().to_vec()))
    }

    /// Is this exact process (pid and start time) still running? A zombie
    /// (exited, not yet reaped by its parent) is not.
    pub fn is_alive(&mut self, pid: u32, start_time: u64) -> bool {
        self.refresh(pid, ProcessRefreshKind::nothing())
            .is_some_and(|p| {
                p.start_time() == start_time
                    && !matches!(
                        p.status(),
                        sysinfo::ProcessStatus::Zombie | sysinfo::ProcessStatus::Dead
                    )
            })
    }

    /// The chain of ancestors starting at `pid`, nearest first, up to (not
    /// including) PID 1.
    pub fn ancestors(&mut self, pid: u32, max: usize) -> Vec<ProcInfo> {
        let mut chain = Vec::new();
        let mut next = Some(pid);
        while let Some(pid) = next {
            if pid <= 1 || chain.len() >= max {
                break;
            }
            let Some(p) = self.get(pid) else { break };
            next = p.parent;
            chain.push(p);
        }
        chain
    }
}

/// A shell is never Claude Code: no need to read its executable and argv.
pub fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash" | "dash" | "zsh" | "fish" | "ksh" | "mksh"
    )
}

/// Does this process look like Claude Code? Looks at the executable path and
/// the command line, not only the short name: native installs run a binary
/// named after its version, older npm installs run under `node`, and on macOS
/// the name can be a full path.
pub fn looks_like_claude(p: &ProcInfo) -> bool {
    fn base(s: &str) -> &str {
        s.rsplit('/').next().unwrap_or(s)
    }
    let is_claude_name = |s: &str| matches!(base(s), "claude" | "claude.exe");
    let is_versioned = |path: &str| {
        // .../claude/versions/2.1.330
        let mut parts = path.rsplit('/');
        let (Some(ver), Some(versions), Some(claude)) = (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        versions == "versions"
            && claude == "claude"
            && !ver.is_empty()
            && ver
                .split('.')
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let exe = p.exe.as_ref().map(|e| e.to_string_lossy().into_owned());
    if is_claude_name(&p.name)
        || exe
            .as_deref()
            .is_some_and(|e| is_claude_name(e) || is_versioned(e))
    {
        return true;
    }
    let Some(arg0) = p.cmd.first() else {
        return false;
    };
    if is_claude_name(arg0) || is_versioned(arg0) {
        return true;
    }
    // `node .../@anthropic-ai/claude-code/cli.js`
    let runtime = exe.as_deref().map(base).unwrap_or(base(&p.name));
    matches!(runtime, "node" | "bun" | "nodejs")
        && p.cmd
            .iter()
            .skip(1)
            .any(|a| a.contains("@anthropic-ai/claude-code/") || a.ends_with("claude-code/cli.js"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(name: &str, exe: &str, cmd: &[&str]) -> ProcInfo {
        ProcInfo {
            pid: 10,
            parent: Some(1),
            start_time: 0,
            name: name.into(),
            exe: (!exe.is_empty()).then(|| exe.into()),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn recognises_every_install_shape() {
        assert!(looks_like_claude(&proc(
            "claude",
            "/usr/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe",
            &["claude"]
        )));
        assert!(looks_like_claude(&proc(
            "2.1.330",
            "/home/u/.local/share/claude/versions/2.1.330",
            &["claude", "-p"]
        )));
        assert!(looks_like_claude(&proc(
            "node",
            "/usr/bin/node",
            &[
                "node",
                "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"
            ]
        )));
        assert!(looks_like_claude(&proc("/Applications/x/claude", "", &[])));
        // exe unreadable (another user's process): argv still tells.
        assert!(looks_like_claude(&proc(
            "2.1.330",
            "",
            &["/home/u/.local/share/claude/versions/2.1.330"]
        )));
    }

    #[test]
    fn rejects_look_alikes() {
        assert!(!looks_like_claude(&proc(
            "sh",
            "/bin/dash",
            &["sh", "-c", "claude"]
        )));
        assert!(!looks_like_claude(&proc(
            "node",
            "/usr/bin/node",
            &["node", "server.js", "claude"]
        )));
        assert!(!looks_like_claude(&proc(
            "2.1.330",
            "/opt/app/versions/2.1.330",
            &["x"]
        )));
        assert!(!looks_like_claude(&proc(
            "claudette",
            "/bin/claudette",
            &["claudette"]
        )));
        assert!(!looks_like_claude(&proc(
            "bash",
            "/bin/bash",
            &["bash", "/home/u/claude/versions/1.2/run.sh"]
        )));
    }

    #[test]
    fn reads_own_ancestry() {
        let mut r = ProcReader::new();
        let me = std::process::id();
        let chain = r.ancestors(me, 64);
        assert_eq!(chain[0].pid, me);
        assert_eq!(
            chain[0].parent,
            Some(nix::unistd::getppid().as_raw() as u32)
        );
        assert!(r.is_alive(me, chain[0].start_time));
        assert!(!r.is_alive(me, chain[0].start_time + 100));
    }
}
