//! ralph's own folders: approvals in the data folder, loop locks in the
//! state folder, each file named by a digest of the project's real path. A
//! session confined to its project cannot write them, and a repository as
//! cloned brings none of them along.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

fn dirs() -> Result<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "ralph")
        .context("cannot find your home folder (is HOME set?)")
}

/// The project's real path (links resolved), which keys everything kept for it.
pub fn real_root(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A loop's id where one is shown or sent (`ralph serve`'s pages): its
/// folder's key, which says nothing of the folder.
pub fn loop_id(root: &Path) -> String {
    key(root)
}

fn key(root: &Path) -> String {
    sha256_hex(real_root(root).as_os_str().as_encoded_bytes())[..32].to_string()
}

/// A folder of ralph's own: created private (0700), and refused unless it
/// is a real folder owned by us (not a link someone else planted).
pub fn private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let m =
        std::fs::symlink_metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if !m.is_dir() {
        bail!("{} is not a folder", dir.display());
    }
    if m.uid() != nix::unistd::getuid().as_raw() {
        bail!("{} belongs to another user", dir.display());
    }
    if m.permissions().mode() & 0o022 != 0 {
        bail!("{} can be written by others: chmod 700 it", dir.display());
    }
    Ok(())
}

/// Where the approval of `root`'s config is kept.
pub fn approval_file(root: &Path) -> Result<PathBuf> {
    Ok(dirs()?
        .data_dir()
        .join("trust")
        .join(format!("{}.json", key(root))))
}

/// The loop lock of `root` (one loop per project at a time).
/// Where sessions that need a temp folder outside the system's get one
/// (Codex will not make its sandbox helper under the temp folder that holds
/// its home): ralph's state folder.
pub fn scratch_dir() -> PathBuf {
    lock_file(Path::new("/"))
        .parent()
        .and_then(Path::parent)
        .map_or_else(std::env::temp_dir, |d| d.join("tmp"))
}

/// ralph's own state folder (`~/.local/state/ralph`), never in a project.
pub fn state_dir() -> PathBuf {
    let base = dirs().map(|d| {
        d.state_dir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| d.data_local_dir().to_path_buf())
    });
    match base {
        Ok(b) => b,
        // No home at all: a folder nobody else can find is still one per
        // user; the loop refuses earlier anyway (no claude settings).
        Err(_) => std::env::temp_dir().join(format!("ralph-{}", nix::unistd::getuid())),
    }
}

pub fn lock_file(root: &Path) -> PathBuf {
    let dir = state_dir();
    // Beside a home's other state, the loops have a folder of their own.
    let dir = if dirs().is_ok() {
        dir.join("loops")
    } else {
        dir
    };
    dir.join(format!("{}.lock", key(root)))
}

/// 128 random bits, hex: a run's secret, which marks its processes.
pub fn random_token() -> String {
    let mut buf = [0u8; 16];
    if getrandom::fill(&mut buf).is_err() {
        // No random source at all: time and pid, hashed. Not secret, but unique.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let h = sha256_hex(format!("{t:?}-{}", std::process::id()).as_bytes());
        return h[..32].to_string();
    }
    hex(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_and_differ() {
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn keys_follow_the_real_path() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("p");
        std::fs::create_dir(&real).unwrap();
        let link = d.path().join("l");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(key(&real), key(&link));
        assert_ne!(key(&real), key(d.path()));
    }
}
