//! `start_loop`: `ralph loop --worktree NAME` in the background, with the
//! project's approved settings and nothing a client chose beyond the
//! worktree's name and a bound on its sessions; confined where its agent
//! can be. What a client (a model) sends never becomes an agent's argument,
//! a program or a flag.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::config::Options;
use crate::run::lock as runlock;
use crate::work::project::Project;

/// How long a start is watched for the loop to take its lock (or fail).
const WATCH_FOR: Duration = Duration::from_secs(20);

/// Start a loop in worktree `name` of the repository at `main`; what was
/// done, or why not.
pub fn start(main: &Path, name: &str, max_iterations: Option<u32>) -> Result<String, String> {
    crate::git::check_worktree_name(name).map_err(|e| format!("worktree: {e}"))?;
    if name == "main" {
        return Err("`main` names the repository's checkout: pick another worktree name".into());
    }
    let checkout = Project::at(main);
    let cfg: Options = crate::config::load(&checkout.config())
        .map_err(|e| format!("the project's config: {e:#}"))?;
    let agent = cfg.agent.unwrap_or_default();
    let confined = agent.caps().confinable();
    let cli = Options {
        confined,
        max_iterations,
        ..Options::default()
    };
    // As `ralph loop` checks them, before anything is made: what the
    // project's files would run is approved, the prompt is there, the
    // agent and (confined) its sandbox are on this machine.
    crate::run::options::settings(&cli, &checkout, None)
        .map_err(|e| format!("refused, as `ralph loop` would refuse it: {e}"))?;
    let path = crate::run::worktree::path_for(main, name);
    if let Some(l) = runlock::running(&Project::at(&path).lock()) {
        return Err(format!(
            "a loop runs in worktree {name} already (run {}, pid {})",
            crate::output::visible_line(&l.run_id),
            l.pid
        ));
    }
    let mut args: Vec<String> = ["loop", "--worktree", name].map(String::from).to_vec();
    if confined {
        args.push("--confined".into());
    }
    if let Some(n) = max_iterations {
        args.extend(["--max-iterations".into(), n.to_string()]);
    }
    let out = crate::trust::store::lock_file(main).with_extension(format!("mcp-{name}.log"));
    let pid = crate::watch::act::start_detached(&args, main, &out).map_err(|e| format!("{e:#}"))?;
    let command = format!("ralph {}", args.join(" "));
    let t0 = Instant::now();
    loop {
        if let Some(l) = runlock::running(&Project::at(&path).lock()).filter(|l| l.pid == pid) {
            return Ok(format!(
                "Started `{command}` (pid {pid}, run {}) in {} on branch {}{}. Its output: {}",
                crate::output::visible_line(&l.run_id),
                path.display(),
                crate::run::worktree::branch(name),
                if confined {
                    ", confined".to_string()
                } else {
                    format!(", not confined ({agent} cannot be)")
                },
                out.display()
            ));
        }
        if !alive(pid) {
            return Err(format!(
                "`{command}` ended before it started a run; it said:\n{}",
                tail(&out)
            ));
        }
        if t0.elapsed() > WATCH_FOR {
            return Ok(format!(
                "Started `{command}` (pid {pid}) in {}; it has not taken its lock yet. Its output: {}",
                path.display(),
                out.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether process `pid` is there (our child, reaped by its own thread
/// once it ends).
fn alive(pid: u32) -> bool {
    let pid = nix::unistd::Pid::from_raw(pid as i32);
    nix::sys::signal::kill(pid, None).is_ok()
}

/// The end of a start's output, bounded.
fn tail(out: &Path) -> String {
    let lines: Vec<String> = crate::fsutil::lines_from_end(out, 16 << 10)
        .take(20)
        .collect();
    let text: Vec<&str> = lines.iter().rev().map(String::as_str).collect();
    super::text::clean_str(&text.join("\n"), 4000)
}
