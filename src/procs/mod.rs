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
    cmd: std::process::Command,
    within: std::time::Duration,
    stderr: bool,
) -> Option<String> {
    let out = output_within(cmd, within)?;
    let said = if stderr { out.stderr } else { out.stdout };
    Some(String::from_utf8_lossy(&said).into_owned())
}

/// What a short-answering program printed (both streams, read as it
/// prints them) and how it ended, if it ends within `within`; else it is
/// killed and reaped. Its stdin is closed.
pub fn output_within(
    mut cmd: std::process::Command,
    within: std::time::Duration,
) -> Option<std::process::Output> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            let _ = tx.send(buf);
        });
        rx
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().ok()? {
            break s;
        }
        if t0.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // A process it left behind may hold its pipes open: read until then,
    // not past `within`.
    let left = || {
        within
            .saturating_sub(t0.elapsed())
            .max(std::time::Duration::from_millis(500))
    };
    let stdout = out.recv_timeout(left()).ok()?;
    let stderr = err.recv_timeout(left()).ok()?;
    Some(std::process::Output {
        status,
        stdout,
        stderr,
    })
}
