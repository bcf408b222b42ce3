//! `ralph hook stop`: end the Claude Code session that runs this hook, when
//! (and only when) a ralph loop started that session.
//!
//! Rules, in order:
//! 1. Without `RALPH_LOOP=1` in our environment, do nothing and read nothing:
//!    this runs after every turn of every session on the machine.
//! 2. The session is the *nearest* Claude Code ancestor: `CLAUDE_PID` (set by
//!    Claude Code for its hooks), else a process that looks like Claude Code,
//!    else the direct child of a ralph process (a wrapper of another name).
//!    Nearest matters: a claude run by another claude's Bash tool must end
//!    only itself. The loop exports no pid of its own: a session has no use
//!    for a pointer to ralph's process.
//! 3. Act only if whoever *started* that process asked for a loop: its start
//!    environment holds `RALPH_LOOP=1`. A project's settings `env` can put
//!    `RALPH_LOOP=1` into our environment, but not into claude's.
//! 4. Interactive session: SIGINT now (observed: ends the TUI cleanly). Print
//!    mode: claude exits by itself right after this hook, and a SIGINT now
//!    would race that exit and cut its output; so a detached watcher waits a
//!    grace period and ends it only if it is still there and idle.
//! 5. Never signal anything but that one process, re-checked by start time.
//!    Always exit 0: a hook error would be shown to the user.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{IsTerminal, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::procs::tree::{ProcInfo, ProcReader, looks_like_claude};

use crate::handoff::{HookAction, HookLogLine, env};

const DEFAULT_GRACE_MS: u64 = 3000;
const MAX_DEPTH: usize = 64;

/// What the hook knows from its own environment.
#[derive(Debug, Default, Clone)]
pub struct HookEnv {
    pub claude_pid: Option<u32>,
    pub interactive: bool,
    pub run_dir: Option<PathBuf>,
    pub grace: Duration,
}

impl HookEnv {
    fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var_os(k))
    }

    /// The `RALPH_*` values as the session's starter set them, from its
    /// start environment: a project's settings `env` can put anything into
    /// ours, never into that. `CLAUDE_*` stay ours (Claude Code sets them for
    /// its hooks).
    fn with_start_env(&self, start_env: &[OsString]) -> Self {
        let find = |k: &str| {
            start_env.iter().find_map(|kv| {
                let b = kv.as_encoded_bytes();
                (b.len() > k.len() && b.starts_with(k.as_bytes()) && b[k.len()] == b'=').then(
                    || OsString::from(String::from_utf8_lossy(&b[k.len() + 1..]).into_owned()),
                )
            })
        };
        let theirs = Self::from_lookup(find);
        HookEnv {
            claude_pid: self.claude_pid,
            interactive: self.interactive,
            ..theirs
        }
    }

    fn from_lookup(get: impl Fn(&str) -> Option<OsString>) -> Self {
        let num = |k: &str| {
            get(k)
                .and_then(|v| v.into_string().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        HookEnv {
            claude_pid: num("CLAUDE_PID").and_then(|p| u32::try_from(p).ok()),
            // `cli` is the TUI, `sdk-cli` print mode; ATTENDED is the newer spelling.
            interactive: get("CLAUDE_CODE_ENTRYPOINT").is_some_and(|v| v == "cli")
                || get("CLAUDE_CODE_SESSION_ATTENDED").is_some_and(|v| v == "1"),
            run_dir: get(env::RUN_DIR)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            grace: Duration::from_millis(num(env::GRACE_MS).unwrap_or(DEFAULT_GRACE_MS)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentifiedBy {
    ClaudePid,
    LoopChild,
    Name,
}

impl IdentifiedBy {
    fn as_str(self) -> &'static str {
        match self {
            IdentifiedBy::ClaudePid => "CLAUDE_PID",
            IdentifiedBy::LoopChild => "child of a ralph process",
            IdentifiedBy::Name => "process name",
        }
    }
}

/// The nearest Claude Code process in `chain` (our ancestors, nearest
/// first): named by `CLAUDE_PID`, else one that looks like Claude Code, else
/// a process whose parent (already in `chain`) is ralph.
pub fn find_session(chain: &[ProcInfo], env: &HookEnv) -> Option<(usize, IdentifiedBy)> {
    chain.iter().enumerate().find_map(|(i, p)| {
        if env.claude_pid == Some(p.pid) {
            Some((i, IdentifiedBy::ClaudePid))
        } else if looks_like_claude(p) {
            Some((i, IdentifiedBy::Name))
        } else if chain.get(i + 1).is_some_and(looks_like_ralph) {
            Some((i, IdentifiedBy::LoopChild))
        } else {
            None
        }
    })
}

/// Is `p` a ralph process (by its name or its executable's)?
fn looks_like_ralph(p: &ProcInfo) -> bool {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    p.name == "ralph"
        || p.exe
            .as_ref()
            .is_some_and(|e| base(&e.to_string_lossy()) == "ralph")
}

/// Did whoever started the session ask for a loop? (Its start environment
/// holds `RALPH_LOOP=1`: our own environment may come from a settings file.)
pub fn authorised(start_env: &[OsString]) -> Option<&'static str> {
    start_env
        .iter()
        .any(|kv| kv == "RALPH_LOOP=1")
        .then_some("RALPH_LOOP=1 in the session's start environment")
}

/// `ralph hook stop` exactly as Claude Code runs it: handled before any
/// argument parsing (which would cost more than the whole idle path). Returns
/// false for anything else, which then goes through the normal parser.
pub fn run_if_invoked() -> bool {
    let mut args = std::env::args_os().skip(1);
    let invoked = matches!((args.next(), args.next(), args.next()), (Some(a), Some(b), None) if a == "hook" && b == "stop");
    if invoked {
        run();
    }
    invoked
}

pub fn run() {
    // Cheapest possible exit for every turn of every ordinary session.
    if std::env::var_os(env::LOOP).is_none_or(|v| v != "1") {
        return;
    }
    let t0 = Instant::now();
    let input = read_stdin(Duration::from_secs(2));
    let stop: serde_json::Value = serde_json::from_slice(&input).unwrap_or(serde_json::Value::Null);
    let env = HookEnv::from_env();
    let mut log = Log::new(&env, &stop, t0);
    let outcome = act(&env, &stop, &mut log);
    // The log goes where the session's starter said, not our environment.
    log.path = log.trusted_dir.take();
    if let Err(why) = outcome {
        // Never a panic (a closed stderr): a hook error would reach the user.
        let _ = writeln!(
            std::io::stderr(),
            "ralph hook stop: {why}; not ending the session"
        );
        log.line.action = Some(HookAction::None);
        log.line.why = Some(why);
    }
    // Nothing is written (the run folder comes from our environment, which a
    // settings file can set) unless a ralph loop started this session.
    if log.authorised {
        log.write();
    }
}

fn act(env: &HookEnv, stop: &serde_json::Value, log: &mut Log) -> Result<(), String> {
    let mut procs = ProcReader::new();
    let me = std::process::id();
    let (chain, (i, how)) =
        walk_to_session(&mut procs, nix::unistd::getppid().as_raw() as u32, env)
            .ok_or("no Claude Code process among this hook's ancestors")?;
    let session = &chain[i];
    log.line.session_pid = Some(session.pid);
    log.line.identified_by = Some(how.as_str().into());
    if session.pid <= 1 || session.pid == me {
        return Err(format!("refusing to signal pid {}", session.pid));
    }
    let (start_time, start_env) = procs.environ(session.pid).unwrap_or_default();
    if start_time != session.start_time {
        return Err(format!(
            "pid {} has exited (or is now another process)",
            session.pid
        ));
    }
    let why = authorised(&start_env).ok_or(
        "RALPH_LOOP=1 is set for this hook but not in the environment claude was started with \
         (a settings file's \"env\" may have set it)",
    )?;
    log.line.authorised_by = Some(why.into());
    log.authorised = true;
    // From here on, act only on what the starter of the session set.
    let env = &env.with_start_env(&start_env);
    log.trusted_dir = env.run_dir.clone();
    end_session(env, session, stop, log)
}

/// End the (authorised) session: SIGINT in interactive mode, else a watcher
/// that lets print mode finish its answer first.
fn end_session(
    env: &HookEnv,
    session: &ProcInfo,
    stop: &serde_json::Value,
    log: &mut Log,
) -> Result<(), String> {
    // The plugin's hook and `ralph install-hook` may both be installed: both
    // run for the same Stop. The first to claim the session acts.
    if !claim(env, session, stop) {
        log.line.action = Some(HookAction::None);
        log.line.why = Some("another ralph hook already handled this session".into());
        return Ok(());
    }
    if env.interactive {
        // Start time checked just above, one read ago: signal now.
        kill(Pid::from_raw(session.pid as i32), Signal::SIGINT)
            .map_err(|e| format!("cannot send SIGINT to pid {}: {e}", session.pid))?;
        log.line.action = Some(HookAction::Sigint);
        log.line.mode = Some("interactive".into());
        return Ok(());
    }
    spawn_watcher(session, env, stop).map_err(|e| format!("cannot start the watcher: {e}"))?;
    log.line.action = Some(HookAction::Watcher);
    log.line.mode = Some("print".into());
    log.line.grace_ms = Some(env.grace.as_millis() as u64);
    Ok(())
}

/// Read ancestors one at a time, only as far as needed: up to the session,
/// never to the top. A candidate's parent is read only when telling whether
/// it is the loop's child needs it, and its executable and argv only when
/// neither CLAUDE_PID nor its name (a shell) settles what it is.
fn walk_to_session(
    procs: &mut ProcReader,
    from: u32,
    env: &HookEnv,
) -> Option<(Vec<ProcInfo>, (usize, IdentifiedBy))> {
    let mut chain: Vec<ProcInfo> = Vec::new();
    let mut next = Some(from);
    while let Some(pid) = next.filter(|&p| p > 1 && chain.len() < MAX_DEPTH) {
        let settled = env.claude_pid == Some(pid);
        // The session named by CLAUDE_PID will be asked for its start
        // environment next: read it in the same pass.
        let read = if settled {
            procs.get_basic_with_environ(pid)
        } else {
            procs.get_basic(pid)
        };
        let Some(mut p) = read else {
            break;
        };
        if !settled && !crate::procs::tree::is_shell(&p.name) {
            match procs.get(pid) {
                Some(full) => p = full,
                None => break,
            }
        }
        next = p.parent;
        chain.push(p);
        if let Some(found) = find_session(&chain, env) {
            return Some((chain, found));
        }
    }
    None
}

/// Claim the right to act on this Stop of this session (pid + start time +
/// the Stop input, which both hooks of one Stop receive alike), once.
fn claim(env: &HookEnv, session: &ProcInfo, stop: &serde_json::Value) -> bool {
    let h = crate::fsutil::fnv1a(stop.to_string().as_bytes());
    let dir = env
        .run_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("ralph-{}", nix::unistd::getuid())));
    if env.run_dir.is_none() && crate::trust::store::private_dir(&dir).is_err() {
        return true;
    }
    // The run folder as the loop made it: no link on the way.
    let Ok(handle) = crate::fsutil::open_dir_nofollow(&dir) else {
        return true;
    };
    let marker = crate::fsutil::in_handle(
        &handle,
        &dir,
        &format!(
            "{CLAIM_PREFIX}{}-{}-{h:016x}",
            session.pid, session.start_time
        ),
    );
    let claimed = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&marker)
    {
        Ok(_) => true,
        Err(e) => e.kind() != std::io::ErrorKind::AlreadyExists,
    };
    sweep_claims(&handle, &dir);
    claimed
}

const CLAIM_PREFIX: &str = "stop-claim-";

/// At most this many entries of the claims' folder are looked at per hook
/// run: the hook runs after every turn, and a folder someone filled must
/// not make it slow. What is left is swept by the next runs.
const SWEEP_SCAN: usize = 4096;

/// The session (pid, start time) a claim file's name belongs to:
/// `stop-claim-<pid>-<start>-<16 hex digits>`, nothing else.
fn claim_owner(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix(CLAIM_PREFIX)?.split('-');
    let (pid, start, hash) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let ok = parts.next().is_none()
        && digits(pid)
        && digits(start)
        && hash.len() == 16
        && hash.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then(|| Some((pid.parse().ok()?, start.parse().ok()?)))
        .flatten()
}

/// Remove the claims of sessions that have ended: a claim is only needed
/// while its session's Stop hooks run, and in the shared temp folder they
/// would pile up, one per turn of every loop session. Only regular files
/// named as claims are removed (a link of that name is left, and never
/// followed), through the folder held open by `claim`.
fn sweep_claims(handle: &std::fs::File, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(crate::fsutil::in_handle(handle, dir, "")) else {
        return;
    };
    let mut procs = ProcReader::new();
    for entry in entries.take(SWEEP_SCAN).flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(claim_owner) else {
            continue;
        };
        // The entry's own type (d_type or lstat): a link is not a file.
        if !entry.file_type().is_ok_and(|t| t.is_file()) || procs.is_alive(pid, start) {
            continue;
        }
        let _ = std::fs::remove_file(crate::fsutil::in_handle(
            handle,
            dir,
            &name.to_string_lossy(),
        ));
    }
}

/// Read Claude Code's JSON, but never hang on a stdin that is not closed.
fn read_stdin(limit: Duration) -> Vec<u8> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Vec::new();
    }
    let deadline = Instant::now() + limit;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut lock = stdin.lock();
    while buf.len() < 16 << 20 {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::ZERO);
        if !matches!(poll(&mut fds, timeout), Ok(n) if n > 0) {
            break;
        }
        match lock.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    buf
}

fn transcript_stamp(path: Option<&Path>) -> Option<(u64, SystemTime)> {
    let m = std::fs::metadata(path?).ok()?;
    Some((m.len(), m.modified().ok()?))
}

fn spawn_watcher(
    session: &ProcInfo,
    env: &HookEnv,
    stop: &serde_json::Value,
) -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args([
        "hook",
        "stop-watch",
        "--pid",
        &session.pid.to_string(),
        "--start",
        &session.start_time.to_string(),
    ]);
    cmd.args(["--grace-ms", &env.grace.as_millis().to_string()]);
    // Its log goes to the run folder the session's starter named.
    match &env.run_dir {
        Some(d) => cmd.env(env::RUN_DIR, d),
        None => cmd.env_remove(env::RUN_DIR),
    };
    if let Some(t) = stop.get("transcript_path").and_then(|t| t.as_str()) {
        cmd.args(["--transcript", t]);
    }
    // All three on /dev/null: Claude Code waits for a hook's output pipes to
    // close, so an inherited pipe would hold the session open.
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.process_group(0);
    cmd.spawn().map(drop)
}

/// The detached watcher: after the grace period, end the session if it is
/// still the same process and has not gone on working (another tool's Stop
/// hook can block the stop and make the model continue).
pub fn watch(pid: u32, start: u64, grace: Duration, transcript: Option<&Path>) {
    let t0 = Instant::now();
    let env = HookEnv::from_env();
    let mut log = Log::new(&env, &serde_json::Value::Null, t0);
    log.line.event = Some("watch".into());
    log.line.session_pid = Some(pid);
    let stamp = transcript_stamp(transcript);
    let mut procs = ProcReader::new();
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !procs.is_alive(pid, start) {
            log.line.action = Some(HookAction::None);
            log.line.why = Some("session exited by itself".into());
            log.write();
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if transcript.is_some() && transcript_stamp(transcript) != stamp {
        log.line.action = Some(HookAction::None);
        log.line.why = Some("session went on working after the Stop hook".into());
        log.write();
        return;
    }
    // The same ladder as everywhere, each step only while pid and start time
    // still name the session.
    let last = crate::procs::ladder::end_all(
        &[crate::procs::ladder::Target::Pid(pid)],
        |_| procs.is_alive(pid, start),
        || {},
    );
    log.line.action = Some(match last {
        Some(Signal::SIGKILL) => HookAction::Sigkill,
        Some(Signal::SIGTERM) => HookAction::Sigterm,
        Some(_) => HookAction::Sigint,
        None => HookAction::None,
    });
    log.write();
}

/// One JSON line per hook run in the loop's run folder, so that "the hook
/// didn't fire" can be answered from the logs.
struct Log {
    /// The run folder (set once the session's starter is known).
    path: Option<PathBuf>,
    trusted_dir: Option<PathBuf>,
    t0: Instant,
    line: HookLogLine,
    authorised: bool,
}

impl Log {
    fn new(env: &HookEnv, stop: &serde_json::Value, t0: Instant) -> Self {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        Log {
            path: env.run_dir.clone(),
            trusted_dir: None,
            t0,
            line: HookLogLine {
                time: now.as_secs_f64(),
                hook_pid: std::process::id(),
                session_id: stop
                    .get("session_id")
                    .and_then(|v| v.as_str())
                    .map(String::from),
                ..Default::default()
            },
            authorised: false,
        }
    }

    fn write(&mut self) {
        let Some(path) = &self.path else { return };
        self.line.elapsed_ms = self.t0.elapsed().as_secs_f64() * 1000.0;
        let Ok(mut text) = serde_json::to_string(&self.line) else {
            return;
        };
        text.push('\n');
        // Never through a link planted anywhere on the way to the log.
        let Ok(dir) = crate::fsutil::open_dir_nofollow(path) else {
            return;
        };
        // O_APPEND with one write: concurrent hooks don't interleave lines.
        if let Ok(mut f) = OpenOptions::new()
            .append(true)
            .create(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(crate::fsutil::in_handle(&dir, path, "hook.log"))
        {
            let _ = f.write_all(text.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, parent: u32, name: &str) -> ProcInfo {
        ProcInfo {
            pid,
            parent: Some(parent),
            start_time: pid as u64 * 10,
            name: name.into(),
            exe: None,
            cmd: vec![name.into()],
        }
    }

    // hook's parent sh(100) → claude(90) → bash(80) → claude(70) → ralph(60) → shell(50)
    fn nested() -> Vec<ProcInfo> {
        vec![
            p(100, 90, "sh"),
            p(90, 80, "claude"),
            p(80, 70, "bash"),
            p(70, 60, "claude"),
            p(60, 50, "ralph"),
            p(50, 1, "bash"),
        ]
    }

    #[test]
    fn nearest_claude_wins_over_an_outer_one_and_over_claude_pid_of_an_outer_one() {
        let env = HookEnv::default();
        assert_eq!(find_session(&nested(), &env), Some((1, IdentifiedBy::Name)));
        let env = HookEnv {
            claude_pid: Some(90),
            ..Default::default()
        };
        assert_eq!(
            find_session(&nested(), &env),
            Some((1, IdentifiedBy::ClaudePid))
        );
    }

    #[test]
    fn a_wrapper_of_another_name_is_found_as_ralphs_child() {
        let chain = vec![
            p(100, 90, "sh"),
            p(90, 60, "2.1.999-custom"),
            p(60, 50, "ralph"),
        ];
        let env = HookEnv::default();
        assert_eq!(
            find_session(&chain, &env),
            Some((1, IdentifiedBy::LoopChild))
        );
        // Its parent not yet read: nothing yet (the walk reads on).
        assert_eq!(find_session(&chain[..2], &env), None);
        // Under something else than ralph: nothing.
        let chain = vec![p(100, 90, "sh"), p(90, 60, "custom"), p(60, 50, "bash")];
        assert_eq!(find_session(&chain, &env), None);
    }

    #[test]
    fn settings_env_alone_does_not_authorise() {
        assert_eq!(
            authorised(&["PATH=/bin".into(), "RALPH_LOOP=0".into()]),
            None
        );
        assert_eq!(authorised(&[]), None);
        assert!(authorised(&["RALPH_LOOP=1".into()]).is_some());
    }

    #[test]
    fn claim_files_are_known_by_their_whole_name() {
        assert_eq!(
            claim_owner("stop-claim-123-456-0123456789abcdef"),
            Some((123, 456))
        );
        for other in [
            "stop-claim-123-456",
            "stop-claim-123-456-0123456789abcdeg",
            "stop-claim-123-456-0123456789abcdef-x",
            "stop-claim--456-0123456789abcdef",
            "stop-claim-1x-456-0123456789abcdef",
            "stop-claim-99999999999-456-0123456789abcdef",
            "notes.txt",
        ] {
            assert_eq!(claim_owner(other), None, "{other}");
        }
    }

    #[test]
    fn nothing_found_in_a_plain_shell() {
        let chain = vec![p(100, 90, "sh"), p(90, 1, "bash")];
        assert_eq!(find_session(&chain, &HookEnv::default()), None);
    }
}
