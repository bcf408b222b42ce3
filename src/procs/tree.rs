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
    /// When the process started, to tell it from a later one with the same
    /// pid. An opaque stamp: compare it only with stamps from a `ProcReader`
    /// (clock ticks since boot on Linux, seconds since the epoch elsewhere).
    pub start_time: u64,
    pub name: String,
    pub exe: Option<PathBuf>,
    pub cmd: Vec<String>,
}

/// What to read besides pid, parent, start time, name and state.
#[derive(Clone, Copy)]
struct Want {
    exe_and_cmd: bool,
    environ: bool,
}

impl Want {
    const BASIC: Want = Want {
        exe_and_cmd: false,
        environ: false,
    };
    const EXE_AND_CMD: Want = Want {
        exe_and_cmd: true,
        environ: false,
    };
    const ENVIRON: Want = Want {
        exe_and_cmd: false,
        environ: true,
    };
}

/// One read of one process.
struct Read {
    info: ProcInfo,
    /// Exited but not yet reaped, or dead.
    zombie: bool,
    environ: Vec<OsString>,
}

pub struct ProcReader {
    backend: Backend,
    /// An environment read together with a process, for `environ` to hand
    /// out without reading the process again.
    prefetched: Option<(u32, u64, Vec<OsString>)>,
}

enum Backend {
    /// Straight from /proc. sysinfo answers the same questions, but each of
    /// its one-process refreshes also reads /proc/uptime and
    /// /proc/<pid>/status (after /proc/stat when it starts) and detects CPU
    /// features for its parser: most of the hook's own time, which runs
    /// after every turn of a loop. Its start times are also in whole
    /// seconds, where /proc gives clock ticks: a pid reused within the
    /// same second is told apart here.
    #[cfg(target_os = "linux")]
    Procfs,
    Sysinfo(Option<Box<System>>),
}

impl Default for ProcReader {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcReader {
    pub fn new() -> Self {
        #[cfg(target_os = "linux")]
        let backend = Backend::Procfs;
        #[cfg(not(target_os = "linux"))]
        let backend = Backend::Sysinfo(System::new().ok().map(Box::new));
        ProcReader {
            backend,
            prefetched: None,
        }
    }

    /// A reader that asks sysinfo, as on systems without /proc.
    pub fn with_sysinfo() -> Self {
        ProcReader {
            backend: Backend::Sysinfo(System::new().ok().map(Box::new)),
            prefetched: None,
        }
    }

    fn read(&mut self, pid: u32, want: Want) -> Option<Read> {
        match &mut self.backend {
            #[cfg(target_os = "linux")]
            Backend::Procfs => procfs::read(pid, want),
            Backend::Sysinfo(sys) => sysinfo_read(sys.as_mut()?, pid, want),
        }
    }

    /// Read one process, with its executable and command line.
    pub fn get(&mut self, pid: u32) -> Option<ProcInfo> {
        self.read(pid, Want::EXE_AND_CMD).map(|r| r.info)
    }

    /// Read one process without its executable and command line (pid,
    /// parent, start time and name only): cheaper, for processes whose
    /// identity is settled otherwise.
    pub fn get_basic(&mut self, pid: u32) -> Option<ProcInfo> {
        self.read(pid, Want::BASIC).map(|r| r.info)
    }

    /// `get_basic`, reading the start environment in the same pass (for the
    /// process that will be asked for it next).
    pub fn get_basic_with_environ(&mut self, pid: u32) -> Option<ProcInfo> {
        let r = self.read(pid, Want::ENVIRON)?;
        self.prefetched = Some((pid, r.info.start_time, r.environ));
        Some(r.info)
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
        self.read(pid, Want::ENVIRON)
            .map(|r| (r.info.start_time, r.environ))
    }

    /// Is this exact process (pid and start time) still running? A zombie
    /// (exited, not yet reaped by its parent) is not.
    pub fn is_alive(&mut self, pid: u32, start_time: u64) -> bool {
        self.read(pid, Want::BASIC)
            .is_some_and(|r| r.info.start_time == start_time && !r.zombie)
    }

    /// Is some process with this pid running (not a zombie), whenever it
    /// started?
    pub fn is_running(&mut self, pid: u32) -> bool {
        self.read(pid, Want::BASIC).is_some_and(|r| !r.zombie)
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

/// One process through sysinfo: one refresh of just that pid.
fn sysinfo_read(sys: &mut System, pid: u32, want: Want) -> Option<Read> {
    let spid = Pid::from_u32(pid);
    let mut kind = ProcessRefreshKind::nothing();
    if want.exe_and_cmd {
        kind = kind
            .with_exe(UpdateKind::Always)
            .with_cmd(UpdateKind::Always);
    }
    if want.environ {
        kind = kind.with_environ(UpdateKind::Always);
    }
    // Without tasks: listing a process's threads costs five more syscalls,
    // for nothing wanted here.
    sys.refresh_processes_specifics(ProcessesToUpdate::Some(&[spid]), true, kind.without_tasks());
    let p = sys.process(spid)?;
    Some(Read {
        info: ProcInfo {
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
        },
        zombie: matches!(
            p.status(),
            sysinfo::ProcessStatus::Zombie | sysinfo::ProcessStatus::Dead
        ),
        environ: p.environ().to_vec(),
    })
}

/// What `/proc/<pid>/stat` says: `pid (comm) state ppid ...`, start time
/// the 22nd field. The name may hold spaces and parentheses: it ends at the
/// last `)`.
#[derive(Debug, PartialEq, Eq)]
pub struct Stat {
    pub name: String,
    pub state: u8,
    pub parent: Option<u32>,
    pub start_ticks: u64,
}

pub fn parse_stat(b: &[u8]) -> Option<Stat> {
    let open = b.iter().position(|&c| c == b'(')?;
    let close = b.iter().rposition(|&c| c == b')')?;
    let name = String::from_utf8_lossy(b.get(open + 1..close)?).into_owned();
    let mut fields = std::str::from_utf8(b.get(close + 1..)?)
        .ok()?
        .split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let ppid: u32 = fields.next()?.parse().ok()?;
    // Fields 5 to 21 come before the start time.
    let start_ticks = fields.nth(17)?.parse().ok()?;
    Some(Stat {
        name,
        state,
        parent: (ppid != 0).then_some(ppid),
        start_ticks,
    })
}

/// `\0`-separated strings, as in /proc/<pid>/cmdline and environ.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn split_nul(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    b.split(|&c| c == 0).filter(|s| !s.is_empty())
}

#[cfg(target_os = "linux")]
mod procfs {
    use std::ffi::OsString;
    use std::fs::File;
    use std::io::Read as _;
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStringExt;
    use std::path::PathBuf;

    use nix::fcntl::{OFlag, open, openat, readlinkat};
    use nix::sys::stat::Mode;

    use super::{ProcInfo, Read, Want, parse_stat, split_nul};

    fn read_at(dir: &OwnedFd, name: &str) -> Option<Vec<u8>> {
        let fd = openat(dir, name, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()).ok()?;
        let mut buf = Vec::with_capacity(1024);
        File::from(fd).read_to_end(&mut buf).ok()?;
        Some(buf)
    }

    /// Every file is read through one handle on /proc/<pid>, which stays
    /// bound to that process: if it exits and its pid is reused meanwhile,
    /// the reads fail instead of describing the newcomer.
    pub(super) fn read(pid: u32, want: Want) -> Option<Read> {
        let dir = open(
            format!("/proc/{pid}").as_str(),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let stat = parse_stat(&read_at(&dir, "stat")?)?;
        let (exe, cmd) = if want.exe_and_cmd {
            // A binary replaced while running (claude updates itself) reads
            // as "<path> (deleted)": it is still that program.
            let exe = readlinkat(&dir, "exe").ok().map(|l| {
                let mut b = l.into_vec();
                if b.ends_with(b" (deleted)") {
                    b.truncate(b.len() - b" (deleted)".len());
                }
                PathBuf::from(OsString::from_vec(b))
            });
            let cmd = read_at(&dir, "cmdline")
                .map(|b| {
                    split_nul(&b)
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect()
                })
                .unwrap_or_default();
            (exe, cmd)
        } else {
            (None, Vec::new())
        };
        let environ = if want.environ {
            read_at(&dir, "environ")
                .map(|b| {
                    split_nul(&b)
                        .map(|v| OsString::from_vec(v.to_vec()))
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        Some(Read {
            info: ProcInfo {
                pid,
                parent: stat.parent,
                start_time: stat.start_ticks,
                name: stat.name,
                exe,
                cmd,
            },
            zombie: matches!(stat.state, b'Z' | b'X' | b'x'),
            environ,
        })
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
        for mut r in [ProcReader::new(), ProcReader::with_sysinfo()] {
            let me = std::process::id();
            let chain = r.ancestors(me, 64);
            assert_eq!(chain[0].pid, me);
            assert_eq!(
                chain[0].parent,
                Some(nix::unistd::getppid().as_raw() as u32)
            );
            assert_eq!(
                chain[0].exe.as_deref(),
                Some(std::env::current_exe().unwrap().as_path())
            );
            assert_eq!(
                chain[0].cmd,
                std::env::args().collect::<Vec<_>>(),
                "argv as given"
            );
            assert!(r.is_alive(me, chain[0].start_time));
            assert!(!r.is_alive(me, chain[0].start_time + 1));
            let (start, env) = r.environ(me).unwrap();
            assert_eq!(start, chain[0].start_time);
            assert!(
                env.iter()
                    .any(|kv| kv.to_string_lossy().starts_with("PATH="))
            );
        }
    }

    /// The /proc reader and sysinfo see the same processes alike (start
    /// times aside: ticks against seconds).
    #[test]
    #[cfg(target_os = "linux")]
    fn procfs_agrees_with_sysinfo() {
        let me = std::process::id();
        let strip = |mut v: Vec<ProcInfo>| {
            v.iter_mut().for_each(|p| p.start_time = 0);
            v
        };
        let fast = strip(ProcReader::new().ancestors(me, 64));
        let slow = strip(ProcReader::with_sysinfo().ancestors(me, 64));
        assert!(!fast.is_empty());
        assert_eq!(fast, slow);
    }

    #[test]
    fn an_exited_child_is_not_alive_before_it_is_reaped() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exit 0"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut starts = Vec::new();
        for mut r in [ProcReader::new(), ProcReader::with_sysinfo()] {
            let start = r.get_basic(pid).unwrap().start_time;
            let t0 = std::time::Instant::now();
            while r.is_alive(pid, start) {
                assert!(t0.elapsed().as_secs() < 10, "child never exited");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            // Still there as a zombie: readable, not alive.
            assert_eq!(r.get_basic(pid).map(|p| p.start_time), Some(start));
            assert!(!r.is_running(pid));
            starts.push(start);
        }
        child.wait().unwrap();
        // Reaped: that process is gone (its pid may already be someone else's).
        let now = ProcReader::new().get_basic(pid).map(|p| p.start_time);
        assert_ne!(
            now,
            Some(starts[0]),
            "pid {pid} still readable after it was reaped"
        );
    }

    #[test]
    fn stat_lines_parse_with_any_name() {
        let line = |name: &str, state: char, ppid: u32| {
            format!(
                "4242 ({name}) {state} {ppid} 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n"
            )
        };
        let s = parse_stat(line("claude", 'S', 77).as_bytes()).unwrap();
        assert_eq!(
            s,
            Stat {
                name: "claude".into(),
                state: b'S',
                parent: Some(77),
                start_ticks: 987654
            }
        );
        let s = parse_stat(line("a b) (c", 'Z', 0).as_bytes()).unwrap();
        assert_eq!(
            (s.name.as_str(), s.state, s.parent),
            ("a b) (c", b'Z', None)
        );
        assert_eq!(s.start_ticks, 987654);
        assert_eq!(parse_stat(b""), None);
        assert_eq!(parse_stat(b"12 (x) S 1 2 3"), None, "cut short");
        assert_eq!(parse_stat(b"12 (x) S notanumber"), None);
    }
}
