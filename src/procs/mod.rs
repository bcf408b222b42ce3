//! Processes: reading the process tree (`/proc` on Linux, sysinfo elsewhere),
//! the one signal ladder (INT → TERM → KILL), stop requests and leftovers.

pub mod ladder;
pub mod leftovers;
pub mod signals;
pub mod tree;

/// What a short-answering program (a version, a few names) prints, if it
/// ends within `within`; else it is killed and reaped. Its stdin is closed
/// and its stderr dropped; its answer must fit a pipe's buffer.
pub fn stdout_within(cmd: std::process::Command, within: std::time::Duration) -> Option<String> {
    answer_within(cmd, within, false)
}

/// As `stdout_within`, the answer read from stderr (pi says its version
/// there), stdout dropped.
pub fn stderr_within(cmd: std::process::Command, within: std::time::Duration) -> Option<String> {
    answer_within(cmd, within, true)
}

fn answer_within(
    mut cmd: std::process::Command,
    within: std::time::Duration,
    stderr: bool,
) -> Option<String> {
    use std::process::Stdio;
    let (out, err) = if stderr {
        (Stdio::null(), Stdio::piped())
    } else {
        (Stdio::piped(), Stdio::null())
    };
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .ok()?;
    let t0 = std::time::Instant::now();
    while child.try_wait().ok()?.is_none() {
        if t0.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().ok()?;
    let said = if stderr { out.stderr } else { out.stdout };
    Some(String::from_utf8_lossy(&said).into_owned())
}
