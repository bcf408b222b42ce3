use anyhow::{Context, Result};
use clap::Args;

use super::Run;
use crate::exit::ExitStatus;
use crate::outln;
use crate::settings;
use crate::settings::target::{self as hook_target, Target};

/// Remove ralph's Stop hook from Claude Code's settings.
///
/// Removes exactly the handler(s) that run `ralph hook stop` and nothing else;
/// `hooks` / `Stop` containers go only if `ralph install-hook` created them,
/// so install followed by uninstall gives back the original document.
#[derive(Debug, Args)]
pub struct UninstallHook {
    #[command(flatten)]
    target: Target,
}

impl Run for UninstallHook {
    fn run(&self) -> Result<ExitStatus> {
        let path = self.target.path()?;
        let created = hook_target::recall_created(&path)?;
        let shown = path.display();
        if !self.target.dry_run && !path.exists() {
            outln!("No ralph Stop hook in {shown} (the file does not exist); nothing to do.");
            return Ok(ExitStatus::Success);
        }
        let edited = hook_target::edit(&path, self.target.dry_run, |text| {
            settings::uninstall(text, &created)
        })?;
        if self.target.dry_run {
            let verdict = if edited.changed {
                "was not changed"
            } else {
                "has no ralph Stop hook; nothing would change"
            };
            outln!("Dry run: {shown} {verdict}.");
            return Ok(ExitStatus::Success);
        }
        if edited.info == 0 {
            outln!("No ralph Stop hook in {shown}; nothing to do.");
        } else {
            hook_target::forget_created(&path)?;
            // install-hook made this file: with nothing else in it, it goes.
            if created.file == Some(settings::EmptyFile::Missing)
                && std::fs::metadata(&path).is_ok_and(|m| m.len() == 0)
            {
                std::fs::remove_file(&path).with_context(|| format!("cannot remove {shown}"))?;
                outln!(
                    "Removed the ralph Stop hook from {shown} (and the file, which install-hook had created)"
                );
                return Ok(ExitStatus::Success);
            }
            outln!("Removed the ralph Stop hook from {shown}");
        }
        Ok(ExitStatus::Success)
    }
}
