use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use crate::errln;
use crate::exit::ExitStatus;
use crate::outln;
use crate::settings::target::{self as hook_target, Target};
use crate::settings::{self, InstallOutcome};

/// Add `ralph hook stop` to Claude Code's settings as a Stop hook.
///
/// Only the hook is added: every other key, hook, the indentation and the
/// final newline stay as they were, a symlinked settings file stays a
/// symlink, and the write is atomic. Running it again changes nothing; after
/// moving the ralph binary it updates the hook's path in place. The hook does
/// nothing unless a ralph loop started the session.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  ralph install-hook\n  ralph install-hook --scope project --dry-run\n  ralph install-hook --settings ~/dotfiles/claude/settings.json"
)]
pub struct InstallHook {
    #[command(flatten)]
    target: Target,
}

impl Run for InstallHook {
    fn run(&self) -> Result<ExitStatus> {
        let path = self.target.path()?;
        let exe = stable_exe()?;
        let exe = exe
            .to_str()
            .context("the path of this ralph binary is not UTF-8")?;
        let command = settings::hook_command(exe);
        let existed = std::fs::symlink_metadata(&path).is_ok();
        let edited = hook_target::edit(&path, self.target.dry_run, |text| {
            settings::install(text, &command).map(|r| (r.text.clone(), r))
        })?;
        let shown = path.display();
        let info = edited.info;
        if self.target.dry_run {
            if edited.changed {
                outln!("Dry run: {shown} was not changed.");
            } else {
                outln!(
                    "Dry run: the ralph Stop hook is already installed in {shown}; nothing would change."
                );
            }
            return Ok(ExitStatus::Success);
        }
        if let InstallOutcome::Installed { created } = &info.outcome {
            let mut created = created.clone();
            if !existed {
                created.file = Some(settings::EmptyFile::Missing);
            }
            hook_target::remember_created(&path, created)?;
        }
        match &info.outcome {
            InstallOutcome::Installed { .. } => {
                outln!("Installed the ralph Stop hook in {shown}\n  {command}")
            }
            InstallOutcome::AlreadyInstalled => {
                outln!("The ralph Stop hook is already installed in {shown}")
            }
            InstallOutcome::Updated { previous } => {
                outln!(
                    "Updated the ralph Stop hook in {shown}\n  was: {previous}\n  now: {command}"
                )
            }
        }
        if info.duplicates_removed > 0 {
            outln!(
                "Removed {} duplicate ralph Stop handler(s).",
                info.duplicates_removed
            );
        }
        let wrote = !matches!(info.outcome, InstallOutcome::AlreadyInstalled);
        if wrote && (exe.contains("/target/debug/") || exe.contains("/target/release/")) {
            errln!(
                "note: the hook points at a build folder ({exe}); `cargo clean` would break it. Install with `cargo install --path .` and run install-hook from there."
            );
        }
        Ok(ExitStatus::Success)
    }
}

/// The path the user ran ralph by, symlinks kept: a package manager's stable
/// link (`/opt/homebrew/bin/ralph`) survives an upgrade, the versioned folder
/// it points into does not. Used only when it names this very binary (same
/// file); else the binary's own path.
fn stable_exe() -> Result<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let exe = std::env::current_exe().context("cannot find the path of this ralph binary")?;
    let Some(arg0) = std::env::args_os().next() else {
        return Ok(exe);
    };
    let arg0 = std::path::PathBuf::from(arg0);
    let invoked = if arg0.components().count() > 1 {
        std::path::absolute(&arg0).ok()
    } else {
        // Run by name: the first match on PATH, as the shell found it.
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .filter(|d| d.is_absolute())
                .map(|d| d.join(&arg0))
                .find(|p| p.is_file())
        })
    };
    let id = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    Ok(match invoked {
        Some(p) if id(&p).is_some() && id(&p) == id(&exe) => p,
        _ => exe,
    })
}
