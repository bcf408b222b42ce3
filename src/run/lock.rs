//! One loop per project: a lock file in ralph's own state folder
//! (`trust::store::lock_file`, never in the project, where a session or a
//! clone could plant, rename or forge one), an flock held for the loop's
//! lifetime, with the holder's pid, start time, progress, running session and
//! the run's secret token as JSON inside. The kernel drops an flock when its
//! process dies, so a killed loop never blocks the next one; the record it
//! left says which run and which processes to clean up after.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::procs::tree::ProcReader;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LockInfo {
    pub pid: u32,
    pub start_time: u64,
    pub started_at: String,
    pub run_id: String,
    pub iteration: u32,
    pub max_iterations: u32,
    /// The session running now (pid and start time), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<(u32, u64)>,
    /// The run's secret: every process of its sessions and gate carries
    /// `RALPH_SESSION_TOKEN=<token>-...`, and only those are ended after it.
    #[serde(default)]
    pub token: String,
    /// Until when (seconds since the epoch) the loop waits before its next
    /// session (a usage limit, the pace), and why: for `ralph watch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_until: Option<(u64, String)>,
}

pub struct LoopLock {
    file: Flock<File>,
    pub info: LockInfo,
    pub path: PathBuf,
}

pub enum Acquired {
    /// Ours; `stale` is what a dead loop left behind, if anything.
    Lock(LoopLock, Option<LockInfo>),
    /// Another loop is running.
    Held(Option<LockInfo>),
}

/// The record is written in place (the flock belongs to this inode) as one
/// write of a fixed minimum size, padded with spaces, and the file is never
/// truncated while held: a reader sees the old record or the new one.
const PAD: usize = 1024;

fn parse(text: &str) -> Option<LockInfo> {
    serde_json::from_str(text.trim_end_matches('\0')).ok()
}

fn read_all(f: &mut File) -> String {
    let mut buf = Vec::new();
    let _ = f.take(64 * 1024).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

pub fn acquire(path: &Path, info: LockInfo) -> Result<Acquired> {
    if let Some(dir) = path.parent() {
        crate::trust::store::private_dir(dir)?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        // A lock file planted as a symlink must not redirect our writes, and
        // a FIFO must not block the open.
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let m = file.metadata()?;
    anyhow::ensure!(
        m.is_file(),
        "{} is not a regular file: remove it",
        path.display()
    );
    let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(f) => f,
        Err((mut f, nix::errno::Errno::EWOULDBLOCK)) => return Ok(Acquired::Held(holder(&mut f))),
        Err((_, e)) => return Err(e).with_context(|| format!("cannot lock {}", path.display())),
    };
    let stale = parse(&read_all(&mut file));
    let mut lock = LoopLock {
        file,
        info,
        path: path.to_path_buf(),
    };
    lock.info.iteration = 0;
    lock.info.session = None;
    lock.save()?;
    Ok(Acquired::Lock(lock, stale))
}

/// Who holds the lock we just lost: the winner may not have written its
/// record yet (the file still holds the dead loop's, or nothing), so read
/// until the record names a live process, for a moment.
fn holder(f: &mut File) -> Option<LockInfo> {
    let until = Instant::now() + Duration::from_secs(2);
    let mut procs = ProcReader::new();
    loop {
        let mut text = String::new();
        let mut buf = vec![0u8; 64 * 1024];
        if let Ok(n) = f.read_at(&mut buf, 0) {
            text = String::from_utf8_lossy(&buf[..n]).into_owned();
        }
        match parse(&text) {
            Some(i) if procs.is_alive(i.pid, i.start_time) => return Some(i),
            last if Instant::now() >= until => return last,
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

impl LoopLock {
    pub fn set_iteration(&mut self, n: u32) -> Result<()> {
        self.info.iteration = n;
        self.save()
    }

    /// Waiting until `until` (seconds since the epoch) for `why`, or not.
    pub fn set_waiting(&mut self, waiting: Option<(u64, String)>) -> Result<()> {
        self.info.waiting_until = waiting.map(|(t, why)| (t, why.chars().take(200).collect()));
        self.save()
    }

    pub fn set_session(&mut self, session: Option<(u32, u64)>) -> Result<()> {
        self.info.session = session;
        self.save()
    }

    fn save(&mut self) -> Result<()> {
        let mut text = serde_json::to_string(&self.info)?;
        while text.len() < PAD - 1 {
            text.push(' ');
        }
        text.push('\n');
        let f: &File = &self.file;
        f.write_all_at(text.as_bytes(), 0)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        // Only a longer record from an older ralph can leave a tail.
        if f.metadata().map(|m| m.len()).unwrap_or(0) > text.len() as u64 {
            f.set_len(text.len() as u64)?;
        }
        Ok(())
    }

    /// Release: empty the file, then drop the flock.
    pub fn release(self) {
        let _ = self.file.set_len(0);
    }
}

/// What the lock file says, whoever wrote it.
pub fn read(path: &Path) -> Option<LockInfo> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    parse(&read_all(&mut f))
}

/// The running loop, if any: the lock's JSON, checked against the live
/// process (pid and start time) so a killed loop does not show as running.
pub fn running(path: &Path) -> Option<LockInfo> {
    let info = read(path)?;
    ProcReader::new()
        .is_alive(info.pid, info.start_time)
        .then_some(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(pid: u32) -> LockInfo {
        LockInfo {
            pid,
            start_time: ProcReader::new().get(pid).map_or(0, |p| p.start_time),
            started_at: "2026-11-23T00:00:00Z".into(),
            run_id: "r".into(),
            iteration: 0,
            max_iterations: 5,
            session: None,
            token: "t".into(),
            waiting_until: None,
        }
    }

    #[test]
    fn records_are_padded_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loop.lock");
        std::fs::write(&path, "x".repeat(3000)).unwrap();
        let Acquired::Lock(mut lock, stale) = acquire(&path, info(std::process::id())).unwrap()
        else {
            panic!("not acquired")
        };
        assert_eq!(stale, None, "garbage is no record");
        lock.set_session(Some((42, 7))).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), PAD as u64);
        let back = read(&path).unwrap();
        assert_eq!((back.session, back.iteration), (Some((42, 7)), 0));
        assert_eq!(running(&path).map(|i| i.pid), Some(std::process::id()));
        lock.release();
        assert_eq!(read(&path), None);
    }

    #[test]
    fn a_fifo_lock_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loop.lock");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = acquire(&path, info(std::process::id())).err().unwrap();
        assert!(format!("{e:#}").contains("not a regular file"), "{e:#}");
        assert_eq!(read(&path), None);
    }

    #[test]
    fn a_symlinked_lock_file_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious.txt");
        std::fs::write(&target, "keep me").unwrap();
        let path = dir.path().join("loop.lock");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(acquire(&path, info(std::process::id())).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    }
}
