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
    write_replacing(path, contents, new_mode, true, Commit::Rename).map(drop)
}

/// As `atomic_write`, but only over the version of the file the caller read
/// (`before`, `None` for "no file"): a file another program rewrites too
/// (Claude Code rewrites its settings) must not lose that program's update.
/// Returns `Ok(false)`, having changed nothing, when the file changed since;
/// read it again and retry.
///
/// On Linux the new file is swapped into place with `RENAME_EXCHANGE`, so
/// what it replaced is known exactly and compared with `before` (a
/// concurrent update that slipped in is swapped back). Elsewhere the file is
/// compared just before a plain rename, which leaves a window of microseconds.
pub fn atomic_write_if_unchanged(
    path: &Path,
    contents: &[u8],
    new_mode: u32,
    before: Option<&[u8]>,
) -> Result<bool> {
    write_replacing(path, contents, new_mode, true, Commit::IfUnchanged(before))
}

enum Commit<'a> {
    Rename,
    IfUnchanged(Option<&'a [u8]>),
}

fn current(path: &Path) -> Result<Option<Vec<u8>>> {
    read_bytes_capped(path, READ_CAP)
}

/// Put `tmp` at `path` if `path` still holds `before`; false if it did not.
fn commit_if_unchanged(
    tmp: &Path,
    path: &Path,
    before: Option<&[u8]>,
    our_ino: u64,
) -> Result<bool> {
    if current(path)?.as_deref() != before {
        return Ok(false);
    }
    #[cfg(target_os = "linux")]
    {
        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
        if before.is_none() {
            // Nothing to replace: fail if someone created the file meanwhile.
            return match renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RenameFlags::RENAME_NOREPLACE) {
                Ok(()) => Ok(true),
                Err(nix::errno::Errno::EEXIST) => Ok(false),
                Err(e) => Err(e.into()),
            };
        }
        match renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RenameFlags::RENAME_EXCHANGE) {
            Ok(()) => {
                // `tmp` now names what was replaced.
                let replaced = current(tmp)?;
                if replaced.as_deref() == before {
                    let _ = fs::remove_file(tmp);
                    return Ok(true);
                }
                // Another update landed between our look and the swap: put it
                // back, unless our file has itself been replaced since.
                use std::os::unix::fs::MetadataExt;
                let still_ours = fs::symlink_metadata(path).is_ok_and(|m| m.ino() == our_ino);
                if still_ours {
                    let _ = renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RenameFlags::RENAME_EXCHANGE);
                }
                return Ok(false);
            }
            // A filesystem without the flag: the plain way below.
            Err(nix::errno::Errno::EINVAL) | Err(nix::errno::Errno::ENOSYS) => {}
            Err(nix::errno::Errno::ENOENT) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
    fs::rename(tmp, path)?;
    Ok(true)
}

/// As `atomic_write`, without the fsyncs: for ralph's own bookkeeping written
/// after every session, where a power cut may lose the last version but a
/// reader still never sees a half-written one.
pub fn replace_unsynced(path: &Path, contents: &[u8]) -> Result<()> {
    write_replacing(path, contents, 0o644, false, Commit::Rename).map(drop)
}

fn write_replacing(
    path: &Path,
    contents: &[u8],
    new_mode: u32,
    sync: bool,
    commit: Commit,
) -> Result<bool> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .context("a file path has a name")?
        .to_string_lossy();
    // A symlink at `path` is replaced, never followed (callers that mean to
    // follow one resolve it first).
    let old = fs::symlink_metadata(path)
        .ok()
        .filter(|m| !m.file_type().is_symlink());
    let mode = old
        .as_ref()
        .map_or(new_mode, |m| m.permissions().mode() & 0o7777);

    // Beside the target (a rename stays on one filesystem), private until
    // it takes the target's mode. Removed below unless it became the file.
    let (mut file, tmp_path) = tempfile::Builder::new()
        .prefix(&format!(".{name}.ralph-"))
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?
        .into_parts();
    let tmp_path = tmp_path.keep().context("cannot keep the temporary file")?;
    let owner = old.as_ref().map(|m| (m.uid(), m.gid()));
    let result = fill_and_commit(
        &mut file,
        &tmp_path,
        path,
        contents,
        (owner, mode),
        sync,
        commit,
    );
    if !matches!(result, Ok(true)) {
        let _ = fs::remove_file(&tmp_path);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// Write the temporary file (owner and mode as the old file's), then put it
/// in place. `Ok(false)`: the target changed meanwhile and was left alone.
fn fill_and_commit(
    file: &mut File,
    tmp_path: &Path,
    path: &Path,
    contents: &[u8],
    (owner, mode): (Option<(u32, u32)>, u32),
    sync: bool,
    commit: Commit,
) -> Result<bool> {
    file.write_all(contents)?;
    if let Some((uid, gid)) = owner {
        // Keep the owner when root edits a user's file; harmless to fail otherwise.
        let _ = std::os::unix::fs::fchown(&*file, Some(uid), Some(gid));
    }
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    if sync {
        file.sync_all()?;
    }
    match commit {
        Commit::Rename => fs::rename(tmp_path, path)?,
        Commit::IfUnchanged(before) => {
            let ino = std::os::unix::fs::MetadataExt::ino(&file.metadata()?);
            if !commit_if_unchanged(tmp_path, path, before, ino)? {
                return Ok(false);
            }
        }
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if sync && let Ok(d) = File::open(dir.unwrap_or(Path::new("."))) {
        let _ = d.sync_all();
    }
    Ok(true)
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

/// The most ralph reads of any file in a project or a settings folder (spec,
/// prompt, readme, config, sentinels, settings): far above any real one, far
/// below what would hurt. A repository decides what these paths are.
pub const READ_CAP: u64 = 8 << 20;

/// The most ralph reads of its own run files (records, hook log, state),
/// which grow with a run.
pub const RUN_FILE_CAP: u64 = 64 << 20;

/// Read a text file that may not exist yet, bounded: it must be a regular
/// file (or a symlink to one) of at most `READ_CAP` bytes. A FIFO, a device
/// or a folder is refused without blocking on it.
/// Open the folder `base/names[0]/names[1]/...` without following a link at
/// any of `names` (`base` itself is the user's, followed as given). A folder
/// held open this way stays the same folder whatever is renamed or linked
/// in its place afterwards.
pub fn open_dir_beneath(base: &Path, names: &[&std::ffi::OsStr]) -> std::io::Result<File> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let mut fd = openat(nix::fcntl::AT_FDCWD, base, flags, Mode::empty())?;
    for name in names {
        if name.is_empty()
            || *name == "."
            || *name == ".."
            || name.as_encoded_bytes().contains(&b'/')
        {
            return Err(std::io::Error::other(format!(
                "{:?} is not a plain folder name",
                name
            )));
        }
        fd = openat(&fd, *name, flags | OFlag::O_NOFOLLOW, Mode::empty()).map_err(|e| {
            std::io::Error::other(format!(
                "{}: {} (a link, or not a folder)",
                base.join(name).display(),
                e.desc()
            ))
        })?;
    }
    Ok(File::from(fd))
}

/// Open an absolute folder without following a link anywhere in it.
pub fn open_dir_nofollow(abs: &Path) -> std::io::Result<File> {
    let names: Vec<&std::ffi::OsStr> = abs
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(Ok(n)),
            std::path::Component::RootDir => None,
            _ => Some(Err(())),
        })
        .collect::<Result<_, _>>()
        .map_err(|_| {
            std::io::Error::other(format!("{} is not a plain absolute path", abs.display()))
        })?;
    open_dir_beneath(Path::new("/"), &names)
}

/// A path to `name` inside the folder held open as `dir`, that reaches that
/// very folder whatever has been renamed or linked at its old path since
/// (Linux: through `/proc/self/fd`). Elsewhere, `fallback/name`.
pub fn in_handle(dir: &File, fallback: &Path, name: &str) -> PathBuf {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let _ = fallback;
        PathBuf::from(format!("/proc/self/fd/{}/{name}", dir.as_raw_fd()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        fallback.join(name)
    }
}

/// Open a regular file for reading, never through a link and never
/// blocking on a FIFO: a run's files are where a session can reach.
pub fn open_regular(path: &Path) -> Result<File> {
    open_file(path, nix::libc::O_NOFOLLOW)?
        .map(|(f, _)| f)
        .with_context(|| format!("{} does not exist", path.display()))
}

/// Open for reading without waiting on a FIFO (`flags` add to that), and
/// refuse anything but a regular file (returned with what it is). `None`:
/// there is no such file.
fn open_file(path: &Path, flags: i32) -> Result<Option<(File, fs::Metadata)>> {
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY | flags)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let m = f
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !m.is_file() {
        let kind = describe_kind(&m);
        bail!(
            "{} is {kind}, not a regular file; ralph reads only regular files there",
            path.display()
        );
    }
    Ok(Some((f, m)))
}

/// At most `cap` bytes of a regular file, never through a link at its
/// last component (a file a session writes for the loop to read).
pub fn read_regular_capped(path: &Path, cap: u64) -> Result<Option<String>> {
    use std::io::Read;
    let Some((f, _)) = open_file(path, nix::libc::O_NOFOLLOW)? else {
        return Ok(None);
    };
    let mut text = String::new();
    f.take(cap)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {} as UTF-8 text", path.display()))?;
    Ok(Some(text))
}

/// The first `cap` bytes of a regular file, as text (what is not UTF-8,
/// a character cut at the end included, replaced); `None` if it does not
/// exist. For a small file a session writes: more of it is not read, and
/// no error, so a huge one cannot stop the loop.
pub fn read_head(path: &Path, cap: u64) -> Result<Option<String>> {
    use std::io::Read;
    let Some((f, _)) = open_file(path, 0)? else {
        return Ok(None);
    };
    let mut buf = Vec::new();
    f.take(cap)
        .read_to_end(&mut buf)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// Remove a file if it is there (a missing one is no error).
pub fn remove_optional(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

pub fn read_optional(path: &Path) -> Result<Option<String>> {
    read_optional_capped(path, READ_CAP)
}

pub fn read_optional_capped(path: &Path, cap: u64) -> Result<Option<String>> {
    let Some(bytes) = read_bytes_capped(path, cap)? else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{} is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok(Some(text))
}

/// The bytes of a regular file of at most `cap` bytes; `None` if it does
/// not exist.
pub fn read_bytes_capped(path: &Path, cap: u64) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some((f, m)) = open_file(path, 0)? else {
        return Ok(None);
    };
    let too_big = || {
        anyhow::anyhow!(
            "{} is larger than ralph reads ({} MiB at most)",
            path.display(),
            cap >> 20
        )
    };
    if m.len() > cap {
        return Err(too_big());
    }
    let mut buf = Vec::with_capacity(m.len() as usize);
    f.take(cap + 1)
        .read_to_end(&mut buf)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if buf.len() as u64 > cap {
        return Err(too_big());
    }
    Ok(Some(buf))
}

fn describe_kind(m: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Create `dir` (and its parents) and check that it is a real folder, not a
/// symlink planted to send ralph's writes elsewhere.
pub fn real_dir(dir: &Path) -> Result<()> {
    // Each folder on the way below the project: `.ralph` too.
    if let Some(parent) = dir.parent()
        && parent.file_name().is_some_and(|n| n == ".ralph")
        && fs::symlink_metadata(parent).is_ok_and(|m| m.file_type().is_symlink())
    {
        bail!(
            "{} is a symlink; ralph keeps a project's state only in a real folder there (remove the link)",
            parent.display()
        );
    }
    // A link (a dangling one too) is said as one, before anything is made.
    if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        bail!(
            "{} is a symlink; ralph writes its run files only into a real folder there (remove the link)",
            dir.display()
        );
    }
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let m = fs::symlink_metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if m.file_type().is_symlink() {
        bail!(
            "{} is a symlink; ralph writes its run files only into a real folder there (remove the link)",
            dir.display()
        );
    }
    Ok(())
}

/// Append one write to a file, creating it, never through a symlink.
/// Append to a regular file (made if missing): never through a link, never
/// waiting on a FIFO planted there, never into a device.
pub fn append_regular(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    if !f.metadata()?.is_file() {
        anyhow::bail!("{} is not a regular file", path.display());
    }
    f.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The last `max` bytes of a regular file (lossy text), whatever its size;
/// `None` when it is missing, or not a regular file.
pub fn read_tail(path: &Path, max: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = open_regular(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(max))).ok()?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The lines of a regular file, last first, read from its end a block at a
/// time: what is wanted of a long log is near its end, and a reader that
/// stops early reads no more than that. At most `cap` bytes are read in all;
/// a line longer than what is left of it ends the lines.
pub fn lines_from_end(path: &Path, cap: u64) -> LinesFromEnd {
    let f = open_regular(path).ok();
    let end = f
        .as_ref()
        .and_then(|f| f.metadata().ok())
        .map_or(0, |m| m.len());
    LinesFromEnd {
        f,
        pos: end,
        floor: end.saturating_sub(cap),
        carry: Vec::new(),
        ready: Vec::new(),
    }
}

pub struct LinesFromEnd {
    f: Option<File>,
    /// Where the part not read yet ends.
    pos: u64,
    /// Where reading stops.
    floor: u64,
    /// The start of a line whose beginning is not read yet.
    carry: Vec<u8>,
    /// Whole lines read, first line first (popped from the end).
    ready: Vec<String>,
}

impl Iterator for LinesFromEnd {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        use std::io::{Read, Seek, SeekFrom};
        const BLOCK: u64 = 64 * 1024;
        loop {
            if let Some(l) = self.ready.pop() {
                return Some(l);
            }
            let f = self.f.as_mut()?;
            if self.pos <= self.floor {
                // The first line of the file (or of what may be read).
                self.f = None;
                let rest = std::mem::take(&mut self.carry);
                return (self.floor == 0 && !rest.is_empty())
                    .then(|| String::from_utf8_lossy(&rest).into_owned());
            }
            let start = self.pos.saturating_sub(BLOCK).max(self.floor);
            let mut buf = vec![0u8; (self.pos - start) as usize];
            if f.seek(SeekFrom::Start(start)).is_err() || f.read_exact(&mut buf).is_err() {
                self.f = None;
                return None;
            }
            self.pos = start;
            buf.extend_from_slice(&std::mem::take(&mut self.carry));
            let mut parts = buf.split(|b| *b == b'\n');
            // The first piece may be the end of an earlier line.
            self.carry = parts.next().unwrap_or_default().to_vec();
            self.ready = parts
                .filter(|l| !l.is_empty())
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect();
        }
    }
}

pub fn append(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// A folder named by an environment variable, when set and not empty.
pub fn dir_var(k: &str) -> Option<PathBuf> {
    std::env::var_os(k)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_from_the_end_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        let lines: Vec<String> = (0..20_000)
            .map(|i| format!("line {i} {}", "x".repeat(i % 50)))
            .collect();
        fs::write(&p, lines.join("\n") + "\n").unwrap();
        let back: Vec<String> = lines_from_end(&p, u64::MAX).collect();
        let want: Vec<String> = lines.iter().rev().cloned().collect();
        assert_eq!(back, want);
        // No newline at the end, an empty line, and a reader that stops.
        fs::write(&p, "a\n\nb\nc").unwrap();
        assert_eq!(
            lines_from_end(&p, u64::MAX).collect::<Vec<_>>(),
            ["c", "b", "a"]
        );
        assert_eq!(lines_from_end(&p, u64::MAX).next().as_deref(), Some("c"));
        // A cap reads no further back than it allows (a cut line is dropped).
        assert_eq!(lines_from_end(&p, 4).collect::<Vec<_>>(), ["c", "b"]);
        assert_eq!(lines_from_end(&dir.path().join("none"), 9).count(), 0);
    }

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
    fn replaces_only_the_version_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        fs::write(&p, "v1").unwrap();
        assert!(!atomic_write_if_unchanged(&p, b"mine", 0o600, Some(b"v0")).unwrap());
        assert_eq!(fs::read_to_string(&p).unwrap(), "v1");
        assert!(atomic_write_if_unchanged(&p, b"mine", 0o600, Some(b"v1")).unwrap());
        assert_eq!(fs::read_to_string(&p).unwrap(), "mine");
        let new = dir.path().join("new.json");
        assert!(!atomic_write_if_unchanged(&p, b"x", 0o600, None).unwrap());
        assert!(atomic_write_if_unchanged(&new, b"x", 0o600, None).unwrap());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temp left");
    }

    #[test]
    fn bounded_reads_refuse_fifos_devices_and_big_files() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = format!("{:#}", read_optional(&fifo).unwrap_err());
        assert!(e.contains("a FIFO (named pipe), not a regular file"), "{e}");
        let e = format!("{:#}", read_optional(Path::new("/dev/zero")).unwrap_err());
        assert!(e.contains("a device"), "{e}");
        let big = dir.path().join("big");
        fs::write(&big, vec![b'x'; 2048]).unwrap();
        let e = format!("{:#}", read_optional_capped(&big, 1024).unwrap_err());
        assert!(e.contains("larger than ralph reads"), "{e}");
        assert_eq!(read_optional(&dir.path().join("none")).unwrap(), None);
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
