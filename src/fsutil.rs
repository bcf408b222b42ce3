//! File writes that can be killed at any moment without losing the user's
//! file, and locks that serialise read-modify-write cycles.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use nix::fcntl::{Flock, FlockArg};

/// The file a path really names: symlinks followed (also dangling ones, so a
/// dotfiles link to a file not created yet gets its target created).
pub fn resolve_symlinks(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = fs::read_link(&p)
                    .with_context(|| format!("cannot read the symlink {}", p.display()))?;
                p = if target.is_absolute() {
                    target
                } else {
                    p.parent().unwrap_or(Path::new("/")).join(target)
                };
            }
            _ => return Ok(p),
        }
    }
    bail!("too many levels of symbolic links at {}", path.display())
}

/// Replace `path`'s contents atomically: a temp file in the same folder,
/// fsync, rename, fsync of the folder. A reader (or a crash) sees the old
/// file or the new one, never a mix. The old file's mode and owner carry over;
/// a new file gets `new_mode`. `path` must already be symlink-resolved.
pub fn atomic_write(path: &Path, contents: &[u8], new_mode: u32) -> Result<()> {
    write_replacing(path, contents, new_mode, true)
}

/// As `atomic_write`, without the fsyncs: for ralph's own bookkeeping written
/// after every session, where a power cut may lose the last version but a
/// reader still never sees a half-written one.
pub fn replace_unsynced(path: &Path, contents: &[u8]) -> Result<()> {
    write_replacing(path, contents, 0o644, false)
}

fn write_replacing(path: &Path, contents: &[u8], new_mode: u32, sync: bool) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .context("a file path has a name")?
        .to_string_lossy();
    let old = fs::metadata(path).ok();
    let mode = old
        .as_ref()
        .map_or(new_mode, |m| m.permissions().mode() & 0o7777);

    let mut tmp_path = None;
    let mut file = None;
    for n in 0..100u32 {
        let candidate = dir.join(format!(".{name}.ralph-{}-{n}.tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&candidate)
        {
            Ok(f) => {
                tmp_path = Some(candidate);
                file = Some(f);
                break;
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot create a temporary file in {}", dir.display())
                });
            }
        }
    }
    let (tmp_path, mut file) = tmp_path.zip(file).context("no free temporary file name")?;
    let result = (|| -> Result<()> {
        file.write_all(contents)?;
        if let Some(m) = &old {
            // Keep the owner when root edits a user's file; harmless to fail otherwise.
            let _ = std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()));
        }
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        if sync {
            file.sync_all()?;
        }
        fs::rename(&tmp_path, path)?;
        if sync && let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp_path);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// An exclusive lock on a folder, held until dropped. Locking the folder
/// rather than a side file leaves nothing behind in the user's folder.
pub struct DirLock(#[allow(dead_code)] Flock<File>);

pub fn lock_dir(dir: &Path) -> Result<DirLock> {
    let f = File::open(dir).with_context(|| format!("cannot open {} to lock it", dir.display()))?;
    let lock = Flock::lock(f, FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .with_context(|| format!("cannot lock {}", dir.display()))?;
    Ok(DirLock(lock))
}

/// FNV-1a: a short stable hash for file names (std's hasher may change
/// between Rust releases, and names must stay the same).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Create a new file for writing; never follows or replaces what is already
/// there (a symlink planted at `path` makes this fail instead of writing
/// through it).
pub fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)
}

/// Read a file that may not exist yet.
pub fn read_optional(path: &Path) -> Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes)
                .with_context(|| format!("{} is not UTF-8 text", path.display()))?;
            Ok(Some(text))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_keeps_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        fs::write(&p, "old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        atomic_write(&p, b"new", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn resolves_relative_and_dangling_links() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("real/target.json", dir.path().join("link")).unwrap();
        assert_eq!(
            resolve_symlinks(&dir.path().join("link")).unwrap(),
            dir.path().join("real/target.json")
        );
    }
}
