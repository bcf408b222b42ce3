//! Secrets ralph reads from its own environment (GitHub tokens, notice
//! URLs): taken out of it as ralph starts, so no process ralph starts
//! inherits them and no session can read them from ralph's process.
//!
//! A variable removed with `remove_var` leaves its bytes in the block the
//! process was started with, which `/proc/<pid>/environ` (and `ps e`) show
//! to every process of the same user: an unconfined session or gate that
//! walks up to ralph would read the token there. So on Linux those bytes
//! are overwritten too; elsewhere the variable is only removed. On Linux
//! ralph is also not dumpable: no core of it, and no other process of the
//! user but root reads its memory (`/proc/<pid>/mem`) or environment.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// Every variable a GitHub token may be in (see `github::token`).
pub const TOKEN_VARS: [&str; 4] = [
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
];

/// Variables whose names say they hold a notice channel's URL.
const NOTIFY_PREFIX: &str = "RALPH_NOTIFY_";

/// Is a variable of this name one of ralph's secrets, whatever the run?
pub fn is_secret_name(name: &str) -> bool {
    TOKEN_VARS.contains(&name) || name.starts_with(NOTIFY_PREFIX)
}

/// What was taken, by name (an empty value is kept as absent).
fn taken() -> &'static Mutex<BTreeMap<String, Option<String>>> {
    static TAKEN: OnceLock<Mutex<BTreeMap<String, Option<String>>>> = OnceLock::new();
    TAKEN.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// Set (to `1`) for a ralph that ralph starts and hands secrets to (a
/// parallel run's worker, a run `ralph watch` resumes): they come on its
/// stdin, never in an environment, where a session could read them.
const ON_STDIN: &str = "RALPH_SECRETS_ON_STDIN";

/// The most bytes of secrets read from stdin.
const HANDED_MOST: u64 = 64 * 1024;

/// Take every secret ralph knows by name out of the environment, and those
/// the ralph that started this one handed it. Called first thing in
/// `main`, while the process has one thread.
pub fn init() {
    original::record();
    // Not dumpable: the kernel writes no core of ralph (a session can make
    // it dump one, its secrets in it, where the session reads it), and no
    // process of the user but root opens its memory or environment
    // through /proc. (Its children are dumpable again once they exec.)
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_dumpable(false);
    let handed = std::env::var_os(ON_STDIN).is_some_and(|v| v == "1");
    if std::env::var_os(ON_STDIN).is_some() {
        // SAFETY: one thread yet (see above).
        unsafe { std::env::remove_var(ON_STDIN) };
    }
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| is_secret_name(k))
        .collect();
    for name in names {
        take(&name);
    }
    // A variable left set in a shell is no hand-over: never wait on a
    // terminal for one.
    if handed && !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        let mut bytes = Vec::new();
        let _ = std::io::stdin().take(HANDED_MOST).read_to_end(&mut bytes);
        if let Ok(mut t) = taken().lock() {
            for (name, value) in parse_handed(&bytes) {
                t.insert(name, Some(value));
            }
        }
    }
}

/// `NAME\0value\0` pairs, as [`hand_to`] writes them (a name that cannot
/// be a variable's, or an empty value, left out). Pure.
fn parse_handed(bytes: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // What follows the last NUL was cut short: no pair of it.
    let Some(end) = bytes.iter().rposition(|b| *b == 0) else {
        return out;
    };
    let mut it = bytes[..end].split(|b| *b == 0);
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        let (Ok(k), Ok(v)) = (std::str::from_utf8(k), std::str::from_utf8(v)) else {
            continue;
        };
        if !k.is_empty() && !k.contains('=') && !v.trim().is_empty() {
            out.push((k.to_string(), v.to_string()));
        }
    }
    out
}

/// The secrets ralph took whose names `which` picks, to hand to the ralph
/// `cmd` starts (see [`give`]): `cmd` is told to read them on its stdin.
/// `None` when there are none (`cmd` is left as it was).
pub fn hand_to(cmd: &mut Command, which: impl Fn(&str) -> bool) -> Option<Vec<u8>> {
    let t = taken().lock().ok()?;
    let mut out = Vec::new();
    for (name, value) in t.iter() {
        if let Some(v) = value.as_ref().filter(|_| which(name)) {
            out.extend_from_slice(name.as_bytes());
            out.push(0);
            out.extend_from_slice(v.as_bytes());
            out.push(0);
        }
    }
    if out.is_empty() {
        return None;
    }
    cmd.env(ON_STDIN, "1").stdin(Stdio::piped());
    Some(out)
}

/// Write what [`hand_to`] gave on the stdin of the ralph just started, and
/// close it.
pub fn give(child: &mut Child, handed: Option<Vec<u8>>) -> std::io::Result<()> {
    match (handed, child.stdin.take()) {
        (Some(bytes), Some(mut stdin)) => stdin.write_all(&bytes),
        _ => Ok(()),
    }
}

/// The value of the secret variable `name` (`None` when unset or empty),
/// taken out of the environment at its first read, so that what ralph
/// starts afterwards never sees it. For a variable the user named
/// (`--notify slack=env:VAR`): read it while ralph is still setting up,
/// before it starts any thread.
pub fn var(name: &str) -> Option<String> {
    if let Some(v) = taken().lock().ok()?.get(name) {
        return v.clone();
    }
    take(name)
}

fn take(name: &str) -> Option<String> {
    if name.is_empty() || name.contains(['=', '\0']) {
        return None;
    }
    let value = std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    if value.is_some() {
        // SAFETY: called while ralph sets up (see `init` and `var`), before
        // it starts a thread that reads the environment.
        unsafe { std::env::remove_var(name) };
        original::wipe(name);
    }
    let value = value.filter(|v| !v.trim().is_empty());
    if let Ok(mut t) = taken().lock() {
        t.insert(name.to_string(), value.clone());
    }
    value
}

#[cfg(target_os = "linux")]
mod original {
    //! The environment block the kernel gave the process: where each
    //! `NAME=value` of it starts and how long it is, read from `environ`
    //! before anything could change it.

    use std::sync::OnceLock;

    unsafe extern "C" {
        static environ: *const *const std::ffi::c_char;
    }

    static ENTRIES: OnceLock<Vec<(usize, usize)>> = OnceLock::new();

    pub fn record() {
        ENTRIES.get_or_init(|| {
            let mut out = Vec::new();
            // SAFETY: `environ` is the C library's NULL-terminated array of
            // NUL-terminated strings; nothing has changed it yet (one
            // thread, before any `set_var` or `remove_var`).
            unsafe {
                let mut p = environ;
                while !p.is_null() && !(*p).is_null() {
                    let s = std::ffi::CStr::from_ptr(*p);
                    out.push((*p as usize, s.to_bytes().len()));
                    p = p.add(1);
                }
            }
            out
        });
    }

    /// Overwrite `NAME=value` in the original block with NULs. The C
    /// library no longer points at it (the variable was just removed), so
    /// nothing reads it but `/proc/<pid>/environ`.
    pub fn wipe(name: &str) {
        let Some(entries) = ENTRIES.get() else {
            return;
        };
        let prefix = format!("{name}=");
        for &(addr, len) in entries {
            // SAFETY: each entry is a string of the original block, which
            // lives (on the initial stack) as long as the process.
            let bytes = unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
            if bytes.starts_with(prefix.as_bytes()) {
                unsafe { std::ptr::write_bytes(addr as *mut u8, 0, len) };
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod original {
    pub fn record() {}
    pub fn wipe(_name: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_known_by_name() {
        for name in [
            "GH_TOKEN",
            "GITHUB_TOKEN",
            "GH_ENTERPRISE_TOKEN",
            "RALPH_NOTIFY_SLACK",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "RALPH_LOOP", "GH_HOST", "NOTIFY_SLACK"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn handed_secrets_are_read_back_as_written() {
        let mut cmd = Command::new("true");
        let name = "RALPH_TEST_HANDED_7f3a";
        // SAFETY: a name no other test reads.
        unsafe { std::env::set_var(name, "h4nded") };
        assert_eq!(var(name).as_deref(), Some("h4nded"));
        assert_eq!(hand_to(&mut cmd, |n| n == "RALPH_TEST_NONE_7f3a"), None);
        let bytes = hand_to(&mut cmd, |n| n == name).unwrap();
        assert_eq!(
            parse_handed(&bytes),
            [(name.to_string(), "h4nded".to_string())]
        );
        assert!(
            cmd.get_envs()
                .any(|(k, v)| k == ON_STDIN && v == Some("1".as_ref()))
        );
        assert_eq!(
            parse_handed(b"A\0a\0=B\0b\0C\0 \0\0d\0E\0e"),
            [("A".to_string(), "a".to_string())]
        );
    }

    #[test]
    fn a_secret_read_once_leaves_the_environment_and_is_kept() {
        let name = "RALPH_TEST_SECRET_7f3a";
        // SAFETY: a name no other test reads.
        unsafe { std::env::set_var(name, "s3cr3t") };
        assert_eq!(var(name).as_deref(), Some("s3cr3t"));
        assert!(std::env::var_os(name).is_none(), "still in the environment");
        assert_eq!(
            var(name).as_deref(),
            Some("s3cr3t"),
            "kept after the first read"
        );
        assert_eq!(var("RALPH_TEST_SECRET_unset_7f3a"), None);
        assert_eq!(var("A=B"), None);
    }
}
