//! One loop per project: `.ralph/loop.lock`, an flock held for the loop's
//! lifetime, with the holder's pid, start time and progress as JSON inside.
//! The kernel drops an flock when its process dies, so a crashed loop never
//! blocks the next one; its leftover JSON is reported as taken over.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::proc_tree::ProcReader;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LockInfo {
    pub pid: u32,
    pub start_time: u64,
    pub started_at: String,
    pub run_id: String,
    pub iteration: u32,
    pub max_iterations: u32,
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

fn parse(text: &str) -> Option<LockInfo> {
    serde_json::from_str(text).ok()
}

pub fn acquire(path: &Path, mut info: LockInfo) -> Result<Acquired> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(f) => f,
        Err((mut f, nix::errno::Errno::EWOULDBLOCK)) => {
            let mut text = String::new();
            let _ = f.read_to_string(&mut text);
            return Ok(Acquired::Held(parse(&text)));
        }
        Err((_, e)) => return Err(e).with_context(|| format!("cannot lock {}", path.display())),
    };
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let stale = parse(&text);
    info.iteration = 0;
    let mut lock = LoopLock {
        file,
        info,
        path: path.to_path_buf(),
    };
    lock.save()?;
    Ok(Acquired::Lock(lock, stale))
}

impl LoopLock {
    pub fn set_iteration(&mut self, n: u32) -> Result<()> {
        self.info.iteration = n;
        self.save()
    }

    // In place, not by rename: the flock belongs to this inode.
    fn save(&mut self) -> Result<()> {
        let json = serde_json::to_string(&self.info)? + "\n";
        let f: &mut File = &mut self.file;
        f.set_len(0)?;
        f.seek(SeekFrom::Start(0))?;
        f.write_all(json.as_bytes())?;
        Ok(())
    }

    /// Release: empty the file, then drop the flock.
    pub fn release(self) {
        let _ = self.file.set_len(0);
    }
}

/// The running loop, if any: the lock's JSON, checked against the live
/// process (pid and start time) so a crashed loop does not show as running.
pub fn running(path: &Path) -> Option<LockInfo> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    let info = parse(&text)?;
    ProcReader::new()
        .is_alive(info.pid, info.start_time)
        .then_some(info)
}
