//! Which settings file `install-hook` / `uninstall-hook` edit, the
//! locked read-modify-write cycle around the pure edits of `settings`, and
//! the record of what an install created (kept in ralph's own state folder,
//! never in the user's file).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};

use crate::fsutil;
use crate::settings::{Created, Invalid};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// $CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json
    User,
    /// .claude/settings.json in the current project (shared through git)
    Project,
    /// .claude/settings.local.json in the current project (not in git)
    Local,
}

impl Scope {
    /// As `--scope` writes it, and ralph names the settings file.
    pub fn word(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct Target {
    /// Which Claude Code settings file to edit.
    #[arg(long, value_enum, default_value_t = Scope::User)]
    pub scope: Scope,

    /// Edit this settings file instead of one chosen by --scope.
    #[arg(long, value_name = "PATH", conflicts_with = "scope")]
    pub settings: Option<PathBuf>,

    /// Show the change as a diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

impl Target {
    /// The settings path as the user would name it (not symlink-resolved).
    pub fn path(&self) -> Result<PathBuf> {
        if let Some(p) = &self.settings {
            return absolute(p);
        }
        Ok(match self.scope {
            Scope::User => user_settings_path()?,
            Scope::Project => absolute(Path::new(".claude/settings.json"))?,
            Scope::Local => absolute(Path::new(".claude/settings.local.json"))?,
        })
    }
}

/// Claude Code's user settings file, honouring `CLAUDE_CONFIG_DIR`.
pub fn user_settings_path() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return absolute(&PathBuf::from(dir).join("settings.json"));
    }
    let home =
        directories::BaseDirs::new().context("cannot find your home folder (is HOME set?)")?;
    Ok(home.home_dir().join(".claude").join("settings.json"))
}

/// The settings files Claude Code reads for a project, with their role.
pub fn settings_files(project_root: &Path) -> Vec<(Scope, PathBuf)> {
    let mut v = Vec::new();
    if let Ok(p) = user_settings_path() {
        v.push((Scope::User, p));
    }
    v.push((Scope::Project, project_root.join(".claude/settings.json")));
    v.push((
        Scope::Local,
        project_root.join(".claude/settings.local.json"),
    ));
    v
}

/// ralph's Stop handlers in those files (role, file, command), and whether
/// the ralph plugin (which brings its own) is enabled in any of them.
pub fn installed_hooks(project_root: &Path) -> (Vec<(Scope, PathBuf, String)>, bool) {
    let mut hooks = Vec::new();
    let mut via_plugin = false;
    for (role, path) in settings_files(project_root) {
        let Ok(Some(text)) = fsutil::read_optional(&path) else {
            continue;
        };
        via_plugin |= serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("enabledPlugins").and_then(|p| p.as_object().cloned()))
            .is_some_and(|m| m.iter().any(|(k, v)| k.starts_with("ralph@") && v == true));
        if let Ok(cmds) = crate::settings::ralph_handlers(&text) {
            hooks.extend(cmds.into_iter().map(|c| (role, path.clone(), c)));
        }
    }
    (hooks, via_plugin)
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot make {} absolute", p.display()))
}

/// What one edit did, for the message.
pub struct Edited<T> {
    pub changed: bool,
    pub info: T,
}

/// Lock the settings folder, read, apply `edit`, write atomically if the text
/// changed. Claude Code does not take our lock, so the file is read again
/// after the new one is written, just before the rename, and the cycle
/// restarts if it changed in between.
pub fn edit<T>(
    path: &Path,
    dry_run: bool,
    edit: impl Fn(&str) -> Result<(String, T), Invalid>,
) -> Result<Edited<T>> {
    let real = fsutil::resolve_symlinks(path)?;
    let dir = real
        .parent()
        .context("a settings file lives in a folder")?
        .to_path_buf();
    if !dir.exists() && !dry_run {
        fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    }
    let _lock = if dir.exists() {
        Some(fsutil::lock_dir(&dir)?)
    } else {
        None
    };
    for _ in 0..100 {
        let before = fsutil::read_optional(&real)?;
        let old = before.as_deref().unwrap_or("");
        let (new, info) = edit(old).map_err(|e| invalid(path, &e))?;
        let changed = new != old || (before.is_none() && !new.is_empty());
        if !changed {
            return Ok(Edited {
                changed: false,
                info,
            });
        }
        if dry_run {
            print_diff(path, old, &new)?;
            return Ok(Edited {
                changed: true,
                info,
            });
        }
        // Claude Code rewrites this file itself and takes no lock: replace
        // only the version read above (checked after the new file is written
        // and synced, at the rename), else read it again.
        let before_bytes = before.as_deref().map(str::as_bytes);
        if !fsutil::atomic_write_if_unchanged(&real, new.as_bytes(), 0o600, before_bytes)? {
            continue;
        }
        return Ok(Edited {
            changed: true,
            info,
        });
    }
    bail!(
        "{} kept changing while ralph tried to edit it; try again",
        path.display()
    )
}

fn invalid(path: &Path, e: &Invalid) -> anyhow::Error {
    anyhow::anyhow!(
        "{}:{}:{}: {}\nThe file was not changed. Fix it (or move it aside) and run this again.",
        path.display(),
        e.line,
        e.column,
        e.message
    )
}

fn print_diff(path: &Path, old: &str, new: &str) -> Result<()> {
    let name = path.display().to_string();
    let diff = similar::TextDiff::from_lines(old, new);
    let mut text = diff
        .unified_diff()
        .context_radius(3)
        .header(&name, &name)
        .to_string();
    if !new.ends_with('\n') {
        text.push('\n');
    }
    crate::output::out(format_args!("{}", crate::output::visible(&text)));
    Ok(())
}

/// Where ralph remembers what an install created in one settings file.
fn record_path(settings_real: &Path) -> Result<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "ralph")
        .context("cannot find your home folder (is HOME set?)")?;
    let h = fsutil::fnv1a(settings_real.as_os_str().as_encoded_bytes());
    Ok(dirs
        .data_dir()
        .join("installs")
        .join(format!("{h:016x}.json")))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Record {
    settings: PathBuf,
    created: Created,
}

pub fn remember_created(settings: &Path, created: Created) -> Result<()> {
    let real = fsutil::resolve_symlinks(settings)?;
    let path = record_path(&real)?;
    let dir = path.parent().expect("record path has a folder");
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json = serde_json::to_string_pretty(&Record {
        settings: real,
        created,
    })?;
    fsutil::atomic_write(&path, json.as_bytes(), 0o644)
}

/// What the last fresh install into this file created; nothing when unknown,
/// so uninstall then keeps every container.
pub fn recall_created(settings: &Path) -> Result<Created> {
    let real = fsutil::resolve_symlinks(settings)?;
    let path = record_path(&real)?;
    Ok(fsutil::read_optional(&path)?
        .and_then(|t| serde_json::from_str::<Record>(&t).ok())
        .filter(|r| r.settings == real)
        .map(|r| r.created)
        .unwrap_or_default())
}

pub fn forget_created(settings: &Path) -> Result<()> {
    let real = fsutil::resolve_symlinks(settings)?;
    fsutil::remove_optional(&record_path(&real)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scopes_word_is_how_the_command_line_writes_it() {
        for s in Scope::value_variants() {
            let named = s.to_possible_value().map(|v| v.get_name().to_string());
            assert_eq!(named.as_deref(), Some(s.word()));
        }
    }
}
