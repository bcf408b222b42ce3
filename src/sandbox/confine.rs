//! Confined sessions (`ralph loop --confined`): no
//! `--dangerously-skip-permissions`, but `acceptEdits` inside Claude Code's
//! own sandbox (bubblewrap on Linux, Seatbelt on macOS), configured per run
//! with `--settings` (never by editing anyone's settings file):
//!
//! - sandbox on and required (`failIfUnavailable`), no way out of it
//!   (`allowUnsandboxedCommands: false` makes `dangerouslyDisableSandbox`
//!   ineffective), Bash allowed inside it without a prompt;
//! - writes: the project (the session's folder), plus what the user adds;
//! - network from tools: only the domains the user allows.
//!
//! Pure: the settings document and the refusal when confinement cannot be
//! had. The project's preparation (git excludes) is `prepare`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::confinement::{Confinement, GitDirs, SHARED_WRITTEN, Secret, expand_home};

/// The `--settings` document of a confined session. `token` makes it the
/// session's own: Claude Code 2.1.330 keeps inline settings in
/// `/tmp/claude-<uid>/claude-settings-<hash of the text>.json` and binds that
/// file into every sandboxed command; two sessions with the same text share
/// the file, and the first to exit deletes it, after which every Bash call
/// of the other fails ("bwrap: Can't find source path ..."). Observed with
/// two confined loops at once.
///
/// ralph's own control files in the project (`.ralph/config.toml`,
/// `.ralph/runs`), where they exist, are denied to the session's writes: to
/// Bash through the sandbox (`denyWrite`) and to the Write and Edit tools
/// through permission rules. (A missing one is not named: the sandbox would
/// show it as a device placeholder, which `git add -A` cannot add.) The
/// user's credential stores (`secrets`, as `credentials::hidden` keeps
/// them) are denied to its reads the same two ways (`denyRead`, and `Read`
/// rules, which Claude Code's Grep and Glob follow too).
pub fn settings(c: &Confinement, token: &str, root: &Path, secrets: &[Secret]) -> Value {
    let mut sandbox = json!({
        "enabled": true,
        "autoAllowBashIfSandboxed": true,
        "allowUnsandboxedCommands": false,
        "failIfUnavailable": true,
    });
    let denied: Vec<String> = CONTROL
        .iter()
        .map(|p| root.join(p))
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    let mut filesystem = json!({});
    if !c.allow_write.is_empty() {
        filesystem["allowWrite"] = json!(c.allow_write);
    }
    if !denied.is_empty() {
        filesystem["denyWrite"] = json!(denied);
    }
    let writable: Vec<PathBuf> = c
        .allow_write
        .iter()
        .map(|w| expand_home(w).into())
        .collect();
    let unread: Vec<String> = crate::confinement::hidden(secrets, (&writable, &[]), root)
        .into_iter()
        .map(|s| s.path().display().to_string())
        .collect();
    if !unread.is_empty() {
        filesystem["denyRead"] = json!(unread);
    }
    if filesystem != json!({}) {
        sandbox["filesystem"] = filesystem;
    }
    sandbox["network"] = json!({ "allowedDomains": c.allow_domains });
    // `//` starts an absolute path in a permission rule.
    let rules = |tool: &str, p: &String| [format!("{tool}(/{p})"), format!("{tool}(/{p}/**)")];
    let deny: Vec<String> = denied
        .iter()
        .flat_map(|p| rules("Edit", p))
        .chain(unread.iter().flat_map(|p| rules("Read", p)))
        .collect();
    json!({
        "sandbox": sandbox,
        // Without it Claude Code's own command checks refuse ordinary shell
        // (`X=1; echo $X`, loops, `$(...)`) even inside the sandbox.
        "permissions": { "allow": ["Bash"], "deny": deny },
        // The value the session already has in its environment.
        "env": { crate::handoff::env::SESSION_TOKEN: token },
    })
}

/// The claude arguments a confined session may be given: each narrows the
/// session or only steers the model. Anything else (skip-permissions, a
/// permission mode, `--add-dir`, `--allowedTools`, `--settings`,
/// `--mcp-config` and `--plugin-dir`, whose servers and hooks run outside
/// the sandbox) could widen it, and is refused by name.
pub const NARROW_ARGS: [&str; 9] = [
    "--model",
    "--fallback-model",
    "--append-system-prompt",
    "--system-prompt",
    "--max-turns",
    "--effort",
    "--disallowedTools",
    "--disallowed-tools",
    "--verbose",
];

/// How many values each of `NARROW_ARGS` takes: one, none, or a list.
fn values_of(flag: &str) -> Option<Values> {
    match flag {
        "--verbose" => Some(Values::None),
        "--disallowedTools" | "--disallowed-tools" => Some(Values::List),
        f if NARROW_ARGS.contains(&f) => Some(Values::One),
        _ => None,
    }
}

enum Values {
    None,
    One,
    List,
}

/// The first argument that is not known to keep a session confined.
pub fn widening(args: &[String]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let (flag, inline) = match a.split_once('=') {
            Some((f, _)) if f.starts_with("--") => (f, true),
            _ => (a.as_str(), false),
        };
        match values_of(flag) {
            None => return Some(a.clone()),
            Some(Values::None) if inline => return Some(a.clone()),
            Some(Values::None) => i += 1,
            Some(Values::One) if inline => i += 1,
            Some(Values::One) => {
                // A value that looks like an option could be read as one.
                match args.get(i + 1) {
                    Some(v) if !v.starts_with('-') => i += 2,
                    _ => return Some(a.clone()),
                }
            }
            Some(Values::List) => {
                i += 1;
                if !inline {
                    while args.get(i).is_some_and(|v| !v.starts_with('-')) {
                        i += 1;
                    }
                }
            }
        }
    }
    None
}

/// Paths under the project that a confined gate command may read but not
/// write: git's folder (its config and hooks name programs the user's own
/// git runs later, outside any sandbox) and ralph's, whole: a folder bound
/// read-only cannot be renamed away either (a gate that renamed `.git` and
/// made a new one took read-only binds of its parts along with it).
pub const READ_ONLY: [&str; 2] = [".git", ".ralph"];

/// What of the host a confined command must not reach, read off the
/// machine just before it starts: the Unix sockets listening there (its
/// network namespace stops TCP and abstract sockets, not a socket file it
/// can see), and the variables that lead to a server of the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Host {
    pub sockets: Vec<PathBuf>,
    pub unset: Vec<String>,
    /// The user's credential stores that exist (`credentials::STORES`):
    /// empty in the sandbox. (An ssh master's socket, `ControlPath`, is
    /// bound elsewhere and renamed there, so no list of listening sockets
    /// names it: it is hidden with `~/.ssh`.)
    pub secrets: Vec<Secret>,
    /// The home, when it lies under a folder made empty (`FRESH`): bound
    /// again, read-only, so that reads stay unconfined there too.
    pub home_in_fresh: Option<PathBuf>,
    /// Where `/etc/resolv.conf` leads, when that is under a folder made
    /// empty (systemd-resolved's `/run/systemd/resolve/stub-resolv.conf`):
    /// an agent with the network must still resolve its API's name.
    pub resolver: Option<PathBuf>,
}

/// Variables that name a server of your desktop or session: ssh and gpg
/// agents, the session bus, the display, terminal multiplexers and editors
/// that take commands over a socket, the container engine.
pub const HOST_VARS: [&str; 27] = [
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "XDG_RUNTIME_DIR",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VSCODE_IPC_HOOK_CLI",
    "GNOME_KEYRING_CONTROL",
    "SWAYSOCK",
    "I3SOCK",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "PULSE_SERVER",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "KRB5CCNAME",
];

/// The paths of listening Unix sockets in `/proc/net/unix` (abstract ones,
/// `@...`, aside: a network namespace of its own has none of them).
pub fn listening_sockets(proc_net_unix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = proc_net_unix
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // Num RefCount Protocol Flags Type St Inode Path
            (f.len() >= 8 && f[7].starts_with('/')).then(|| PathBuf::from(f[7..].join(" ")))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The variables to drop: `HOST_VARS`, and any whose value names a socket
/// file (`unix:path=/run/...`, `/tmp/tmux-0/default,12,0`).
pub fn host_vars<'a>(
    vars: impl IntoIterator<Item = (&'a str, &'a str)>,
    is_socket: impl Fn(&Path) -> bool,
) -> Vec<String> {
    let names_socket = |v: &str| {
        v.match_indices('/').any(|(i, _)| {
            let end = v[i..]
                .find([',', ';', ' ', ':', '='])
                .map_or(v.len(), |e| i + e);
            (i == 0 || !v[..i].ends_with('/')) && is_socket(Path::new(&v[i..end]))
        })
    };
    let mut out: Vec<String> = vars
        .into_iter()
        .filter(|(k, v)| HOST_VARS.contains(k) || names_socket(v))
        .map(|(k, _)| k.to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

impl Host {
    /// This machine, now.
    pub fn read() -> Host {
        use std::os::unix::fs::FileTypeExt;
        let is_socket =
            |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket());
        let listing = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        let vars: Vec<(String, String)> = std::env::vars().collect();
        let in_fresh = |p: &Path| FRESH.iter().any(|d| p.starts_with(d));
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        Host {
            secrets: super::credentials::here(),
            home_in_fresh: home
                .as_ref()
                .and_then(|h| h.canonicalize().ok())
                .filter(|h| in_fresh(h) && h.is_dir()),
            resolver: std::fs::canonicalize("/etc/resolv.conf")
                .ok()
                .filter(|r| in_fresh(r)),
            sockets: listening_sockets(&listing)
                .into_iter()
                .filter(|p| is_socket(p))
                .collect(),
            unset: host_vars(
                vars.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                is_socket,
            ),
        }
    }
}

/// Where the host keeps its sockets: empty in the sandbox (a gate's
/// TMPDIR, and the project when it lies under one, are bound again after).
const FRESH: [&str; 3] = ["/tmp", "/run", "/var/tmp"];

/// The command line that runs a gate command under `--confined` with
/// bubblewrap: the same bounds as the sessions' sandbox (writes only in the
/// project and `allow_write`), no network at all (Claude Code's sandbox
/// filters the sessions' network through its own proxy, which ralph does
/// not have: the gate gets none, which keeps inside "only allowed domains"),
/// no socket of the host (`/tmp`, `/run` empty, every other listening
/// socket file covered, the variables that name one dropped), its own pid
/// namespace (when the command ends, everything it started ends with it), a
/// new session (it cannot type into the terminal), and it dies with the
/// loop. Other reads are not confined, as in the sessions' sandbox; `tmp`
/// is its writable `TMPDIR`.
pub fn gate_argv(c: &Confinement, root: &Path, tmp: &Path, cmd: &str, host: &Host) -> Vec<String> {
    let bounds = Bounds {
        network: false,
        writable: c.allow_write.iter().map(|w| expand_home(w)).collect(),
        over: READ_ONLY.map(|p| Over::ReadOnly(root.join(p))).to_vec(),
        own: Vec::new(),
        program: Vec::new(),
    };
    let mut a = bwrap(&bounds, root, tmp, host);
    a.extend(["/bin/sh".into(), "-c".into(), cmd.into()]);
    a
}

/// Where an agent that ralph confines itself (`Confine::Bwrap`) may write
/// besides its project: its state folders, and a linked worktree's shared
/// git folder; and, in order over those and the project, what is bound
/// again (`agent_over`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Room {
    pub writable: Vec<PathBuf>,
    pub over: Vec<Over>,
}

/// One bind over what a session may write, applied in order, where the
/// path exists (`--bind-try`, `--ro-bind-try`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Over {
    /// Writable, onto itself: a mount point, which cannot be renamed away
    /// with what is bound inside it and replaced by a folder of the
    /// session's making.
    Pin(PathBuf),
    ReadOnly(PathBuf),
}

/// The command line that runs an agent with no sandbox of its own under
/// `--confined`: bubblewrap with the gate's bounds (`gate_argv`), except
/// that it keeps the network (the model's API is reached over TCP; the
/// host's Unix sockets stay hidden, but not its abstract ones, which live
/// in the network namespace) and writes `.git` and `.ralph` (its commits,
/// the spec's boxes) and its state folders (`room.writable`), less what
/// `room.over` binds read-only. `.git` and `.ralph` are bound onto
/// themselves: a mount point cannot be renamed away, with the read-only
/// binds inside it, and replaced by a folder of the session's making.
pub fn agent_argv(
    c: &Confinement,
    room: &Room,
    (root, tmp): (&Path, &Path),
    host: &Host,
    (program, args): (&Path, &[String]),
) -> Vec<String> {
    let mut writable: Vec<String> = c.allow_write.iter().map(|w| expand_home(w)).collect();
    writable.extend(room.writable.iter().map(|p| p.display().to_string()));
    let bounds = Bounds {
        network: true,
        writable,
        over: room.over.clone(),
        own: room.writable.clone(),
        program: program_roots(program, std::fs::canonicalize(program).ok().as_deref()),
    };
    let mut a = bwrap(&bounds, root, tmp, host);
    a.push(program.display().to_string());
    a.extend(args.iter().cloned());
    a
}

/// The files of a git folder whose text names programs git runs (config,
/// hooks) or where the repository lies (`commondir`, `alternates`), or
/// which git reads as config (`info/attributes` picks a config's filters).
const GIT_SETUP: [&str; 6] = [
    "config",
    "config.worktree",
    "hooks",
    "commondir",
    "info/attributes",
    "objects/info/alternates",
];

/// What ralph's own confined agent may not write within what it may, in
/// order: `.git` and `.ralph` pinned (`READ_ONLY`), ralph's control files,
/// a linked worktree's `.git` file; then the repository's git folders
/// (`git`, as `linked_over` and `checkout_over` say), the submodules'
/// config and hooks read-only.
pub fn agent_over(root: &Path, git: Option<&GitDirs>) -> Vec<Over> {
    let ro = |p: PathBuf| Over::ReadOnly(p);
    let mut out: Vec<Over> = READ_ONLY.map(|p| Over::Pin(root.join(p))).to_vec();
    out.extend(
        CONTROL
            .iter()
            .filter(|p| p.starts_with(".ralph/"))
            .map(|p| ro(root.join(p))),
    );
    let Some(g) = git else {
        // Not a repository (as git sees it): `.git`, if anything, as a
        // main checkout's.
        out.extend(
            CONTROL
                .iter()
                .filter(|p| p.starts_with(".git/"))
                .map(|p| ro(root.join(p))),
        );
        return out;
    };
    if g.dot_git_file {
        // Pinned with `.ralph` (`READ_ONLY`), read-only here.
        out.push(ro(root.join(".git")));
    }
    if g.own == g.common {
        out.extend(checkout_over(g));
    } else {
        out.extend(linked_over(g));
    }
    if !g.modules.is_empty() {
        out.push(Over::Pin(g.common.join("modules")));
    }
    for m in &g.modules {
        out.push(Over::Pin(m.clone()));
        out.extend(setup_over(m, &["config", "hooks"]));
    }
    out
}

/// A linked worktree's: the shared git folder read-only, whole (bound
/// again: it may lie in a folder the sandbox empties), less what its
/// commits write there (`SHARED_WRITTEN`) and its own folder, less that
/// folder's pointers and config. Nothing else can be made there: not a
/// `commondir` or a `config.worktree` of the main checkout's, which its
/// git (and ralph's, merging a worker's step while other workers' sessions
/// run) would follow to a config of the session's making, nor a packed
/// refs file (so a session cannot delete a ref: its lock is made there).
fn linked_over(g: &GitDirs) -> Vec<Over> {
    let (common, own) = (&g.common, &g.own);
    let mut out = vec![Over::ReadOnly(common.clone())];
    out.extend(SHARED_WRITTEN.map(|d| Over::Pin(common.join(d))));
    out.push(Over::Pin(common.join("objects/info")));
    out.push(Over::ReadOnly(common.join("objects/info/alternates")));
    out.push(Over::Pin(own.clone()));
    out.extend(["commondir", "gitdir", "config.worktree"].map(|f| Over::ReadOnly(own.join(f))));
    out
}

/// A main checkout's (its `.git` pinned writable, for its commits): the
/// other worktrees' folders and the git setup (`GIT_SETUP`) read-only.
fn checkout_over(g: &GitDirs) -> Vec<Over> {
    let mut out = vec![Over::ReadOnly(g.common.join("worktrees"))];
    out.extend(setup_over(&g.common, &GIT_SETUP));
    out
}

/// `over` less the folders to pin that lie through a link below the
/// first of `anchors` they lie in (the project, the shared git folder): a
/// session may have made `.git/info` a link to `../../..` before, and
/// bubblewrap follows a relative link, binding where it leads writable.
pub fn unlinked_pins(over: Vec<Over>, anchors: &[&Path]) -> Vec<Over> {
    let through_link = |p: &Path| {
        let Some(a) = anchors.iter().find(|a| p.starts_with(a)) else {
            return true;
        };
        let mut at = a.to_path_buf();
        p.strip_prefix(a).unwrap_or(p).components().any(|c| {
            at.push(c);
            std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink())
        })
    };
    over.into_iter()
        .filter(|o| !matches!(o, Over::Pin(p) if through_link(p)))
        .collect()
}

/// `files` of the git folder `dir` read-only, each folder between pinned
/// first (`info`, `objects/info`: a folder holding a read-only bind could
/// be renamed away, with the bind, and made again).
fn setup_over(dir: &Path, files: &[&str]) -> Vec<Over> {
    let mut out = Vec::new();
    for f in files {
        let rel = Path::new(f);
        let mut between: Vec<PathBuf> = rel
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .map(|a| dir.join(a))
            .collect();
        between.reverse();
        for b in between {
            if !out.contains(&Over::Pin(b.clone())) {
                out.push(Over::Pin(b));
            }
        }
        out.push(Over::ReadOnly(dir.join(rel)));
    }
    out
}

/// What of an agent's program (`given`, and where its links lead,
/// `real`) lies in a folder the sandbox empties (`FRESH`: an agent
/// installed under `/tmp`), to be bound back read-only: its package's
/// outermost `node_modules` (the npm registry's agents need their
/// dependencies beside them), else the program's own folder.
fn program_roots(given: &Path, real: Option<&Path>) -> Vec<PathBuf> {
    let root_of = |p: &Path| -> Option<PathBuf> {
        if !FRESH.iter().any(|d| p.starts_with(d)) {
            return None;
        }
        let modules = p
            .ancestors()
            .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
            .last();
        modules.or(p.parent()).map(Path::to_path_buf)
    };
    let mut out: Vec<PathBuf> = std::iter::once(given)
        .chain(real)
        .filter_map(root_of)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What differs between the gate's bubblewrap and an agent's.
struct Bounds {
    network: bool,
    /// Writable besides the project and TMPDIR (bound when they exist).
    writable: Vec<String>,
    /// Over what is writable, in order, when they exist.
    over: Vec<Over>,
    /// The agent's own folders (`Room::writable`): its login there is
    /// not hidden from it.
    own: Vec<PathBuf>,
    /// Read-only again over the emptied folders (`FRESH`): the agent's
    /// own program and its package, where they were installed there.
    program: Vec<PathBuf>,
}

/// bubblewrap's arguments up to and with `--`, the program to follow.
fn bwrap(b: &Bounds, root: &Path, tmp: &Path, host: &Host) -> Vec<String> {
    let root = root.display().to_string();
    let mut a: Vec<String> = [
        "bwrap",
        "--die-with-parent",
        "--new-session",
        // Run as root, a gate keeps root's capabilities unless dropped, and
        // could unmount what is read-only.
        "--cap-drop",
        "ALL",
        "--unshare-pid",
    ]
    .map(String::from)
    .to_vec();
    if !b.network {
        a.push("--unshare-net".into());
    }
    a.extend(
        [
            "--unshare-ipc",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ]
        .map(String::from),
    );
    a.extend(hidden_from_the_gate(host, b.network));
    for p in &b.program {
        let p = p.display().to_string();
        a.extend(["--ro-bind-try".into(), p.clone(), p]);
    }
    a.extend(["--bind".into(), root.clone(), root.clone()]);
    for w in &b.writable {
        a.extend(["--bind-try".into(), w.clone(), w.clone()]);
    }
    for o in &b.over {
        let (flag, p) = match o {
            Over::Pin(p) => ("--bind-try", p),
            Over::ReadOnly(p) => ("--ro-bind-try", p),
        };
        let p = p.display().to_string();
        a.extend([flag.into(), p.clone(), p]);
    }
    a.extend(covered_again(b, &root, host));
    a.extend(stores_hidden(b, &root, host));
    for v in &host.unset {
        a.extend(["--unsetenv".into(), v.clone()]);
    }
    let tmp = tmp.display().to_string();
    a.extend(["--bind".into(), tmp.clone(), tmp.clone()]);
    a.extend(["--setenv".into(), "TMPDIR".into(), tmp]);
    a.extend(["--chdir".into(), root, "--".into()]);
    a
}

/// A host socket inside the project or a folder bound again (a linked
/// worktree's git folder holds git's fsmonitor daemon's): covered again
/// over those binds.
fn covered_again(b: &Bounds, root: &str, host: &Host) -> Vec<String> {
    let again = |s: &Path| {
        s.starts_with(root)
            || b.writable.iter().any(|w| s.starts_with(w))
            || b.over
                .iter()
                .any(|o| matches!(o, Over::Pin(p) | Over::ReadOnly(p) if s.starts_with(p)))
    };
    host.sockets
        .iter()
        .filter(|s| again(s))
        .flat_map(|s| {
            [
                "--ro-bind-try".into(),
                "/dev/null".into(),
                s.display().to_string(),
            ]
        })
        .collect()
}

/// The user's credential stores, over every bind before (a folder the
/// user lets sessions write, the home bound again, may hold them): each
/// folder empty, each file an empty one. Not a store the user lets
/// sessions write (`credentials::hidden`).
fn stores_hidden(b: &Bounds, root: &str, host: &Host) -> Vec<String> {
    let writable: Vec<PathBuf> = b.writable.iter().map(PathBuf::from).collect();
    crate::confinement::hidden(&host.secrets, (&writable, &b.own), Path::new(root))
        .into_iter()
        .flat_map(|s| {
            let p = s.path().display().to_string();
            match s {
                Secret::Dir(_) => vec!["--tmpfs".into(), p],
                Secret::File(_) => vec!["--ro-bind".into(), "/dev/null".into(), p],
            }
        })
        .collect()
}

/// What of the host the sandbox sees emptied or covered, before the
/// project and its writable folders are bound: `/tmp`, `/run`, `/var/tmp`
/// (the home and, with the network, the resolver's file bound again where
/// they lie there), and every other listening socket.
fn hidden_from_the_gate(host: &Host, network: bool) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    for d in FRESH {
        if Path::new(d).is_dir() {
            a.extend(["--tmpfs".into(), d.into()]);
        }
    }
    let again = |p: &Path| {
        let p = p.display().to_string();
        ["--ro-bind-try".to_string(), p.clone(), p]
    };
    if let Some(r) = host.resolver.as_ref().filter(|_| network) {
        a.extend(again(r));
    }
    if let Some(h) = &host.home_in_fresh {
        a.extend(again(h));
    }
    for s in &host.sockets {
        let home_again = host
            .home_in_fresh
            .as_ref()
            .is_some_and(|h| s.starts_with(h));
        if !FRESH.iter().any(|d| s.starts_with(d)) || home_again {
            let s = s.display().to_string();
            a.extend(["--ro-bind-try".into(), "/dev/null".into(), s]);
        }
    }
    a
}

/// What a confined session may not write in its project: ralph's control
/// files, and git's config and hooks, which name programs that git runs
/// later outside any sandbox (`core.fsmonitor` on every `git status`, a
/// hook on the user's next commit).
pub const CONTROL: [&str; 4] = [
    ".ralph/config.toml",
    ".ralph/runs",
    ".git/config",
    ".git/hooks",
];

/// The programs the sandbox needs here, and why confinement cannot be had
/// when one is missing (with the fix).
pub fn unavailable(find: impl Fn(&str) -> bool) -> Option<String> {
    if cfg!(target_os = "macos") {
        // Seatbelt (sandbox-exec) is part of the system.
        return None;
    }
    if !cfg!(target_os = "linux") {
        return Some(
            "Claude Code's sandbox runs on Linux (bubblewrap) and macOS (Seatbelt) only".into(),
        );
    }
    let missing: Vec<&str> = ["bwrap", "socat"]
        .into_iter()
        .filter(|p| !find(p))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "Claude Code's sandbox needs bwrap and socat on Linux, and {} not found: install them \
             (Debian/Ubuntu: apt-get install bubblewrap socat; Fedora: dnf install bubblewrap socat; \
             Arch: pacman -S bubblewrap socat)",
            missing.join(" and ")
        )
    })
}

/// An agent as confining it goes: its name, and who confines it. The
/// agent's row says (`agent::Caps`); the session, which knows both, tells
/// it (`From<Agent>` in `session::launch`), as the sandbox knows no agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToConfine {
    pub name: &'static str,
    pub by: ConfinedBy,
}

/// Who confines an agent's sessions under `--confined`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfinedBy {
    /// Its own sandbox, which may need bubblewrap and socat (Claude Code's).
    Own { needs_bwrap: bool },
    /// ralph's bubblewrap (`agent_argv`).
    Bwrap,
    /// No one: it cannot be confined.
    No,
}

/// Why `agent`'s sessions cannot be confined here, with the fix; `None`:
/// they can. `find` says whether a program is on the PATH.
pub fn cannot_confine(agent: impl Into<ToConfine>, find: impl Fn(&str) -> bool) -> Option<String> {
    let a = agent.into();
    match a.by {
        ConfinedBy::No => Some(format!("{} cannot be confined", a.name)),
        ConfinedBy::Bwrap => bwrap_unavailable(a.name, find),
        ConfinedBy::Own { needs_bwrap: true } => unavailable(find),
        ConfinedBy::Own { needs_bwrap: false } => None,
    }
}

/// Why ralph cannot run `agent` inside bubblewrap here (`Confine::Bwrap`),
/// with the fix; `None`: it can.
pub fn bwrap_unavailable(agent: &str, find: impl Fn(&str) -> bool) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some(format!(
            "ralph confines {agent} with bubblewrap, which runs on Linux only; confine your runs with --agent claude or codex, whose own sandboxes run here"
        ));
    }
    (!find("bwrap")).then(|| {
        format!(
            "ralph confines {agent} with bubblewrap, and bwrap is not found: install it \
             (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; \
             Arch: pacman -S bubblewrap)"
        )
    })
}

/// The names Claude Code's sandbox shows in the project as placeholders
/// (`/dev/null` binds) where they do not exist, so nothing can create them;
/// `git add -A` cannot add a device. Observed on 2.1.330 (a confined session
/// listing the character devices in its project).
pub const PLACEHOLDERS: [&str; 24] = [
    ".bash_profile",
    ".bashrc",
    ".gitconfig",
    ".gitmodules",
    ".idea",
    ".mcp.json",
    ".profile",
    ".ripgreprc",
    ".vscode",
    ".zprofile",
    ".zshrc",
    ".claude/agents",
    ".claude/commands",
    ".claude/hooks",
    ".claude/launch.json",
    ".claude/loop.md",
    ".claude/output-styles",
    ".claude/routines",
    ".claude/scheduled_tasks.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/skills",
    ".claude/workflows",
    ".claude/.cc-writes",
];

const MARK: &str = "# ralph loop --confined: Claude Code's sandbox shows these as placeholders";

/// The `info/exclude` text with the placeholders excluded (root-anchored,
/// so a real file of that name deeper down is not hidden). `None`: already so.
pub fn exclude_text(current: &str) -> Option<String> {
    if current.contains(MARK) {
        return None;
    }
    let mut s = current.to_string();
    if !s.is_empty() && !s.ends_with('\n') {
        s.push('\n');
    }
    s.push_str(MARK);
    s.push('\n');
    for p in PLACEHOLDERS {
        s.push('/');
        s.push_str(p);
        s.push('\n');
    }
    Some(s)
}

/// Exclude the placeholders in the repository's `info/exclude` (shared by
/// all its worktrees), so a session's `git add -A` works.
pub fn prepare(root: &Path) -> Result<Option<PathBuf>> {
    let rel = PathBuf::from(
        crate::git::at(root)
            .run(&["rev-parse", "--git-path", "info/exclude"], &[])?
            .trim(),
    );
    let path = if rel.is_absolute() {
        rel
    } else {
        root.join(rel)
    };
    let current = crate::fsutil::read_optional(&path)?.unwrap_or_default();
    let Some(new) = exclude_text(&current) else {
        return Ok(None);
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    crate::fsutil::atomic_write(&path, new.as_bytes(), 0o644)?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {

    /// An agent installed in a folder the sandbox empties is bound back:
    /// its package's outermost node_modules, or its own folder; one
    /// installed elsewhere needs nothing.
    #[test]
    fn an_agent_installed_under_tmp_is_bound_back() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            program_roots(
                &p("/tmp/x/node_modules/.bin/pi"),
                Some(&p("/tmp/x/node_modules/@m/pi/node_modules/x/dist/cli.js"))
            ),
            [p("/tmp/x/node_modules")]
        );
        assert_eq!(
            program_roots(&p("/usr/local/bin/pi"), Some(&p("/var/tmp/pi/bin/pi"))),
            [p("/var/tmp/pi/bin")]
        );
        assert!(program_roots(&p("/usr/bin/pi"), None).is_empty());
        assert!(
            program_roots(
                &p("/home/u/.npm/bin/pi"),
                Some(&p("/home/u/.npm/lib/pi.js"))
            )
            .is_empty()
        );
    }
    use super::*;

    #[test]
    fn the_hosts_sockets_and_the_variables_that_name_them() {
        let listing = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 20 /run/user/0/bus\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 21 @/tmp/.X11-unix/X0\n\
            0000000000000000: 00000003 00000000 00000000 0001 03 22\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 23 /home/u/my sock\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 24 /run/user/0/bus\n";
        assert_eq!(
            listening_sockets(listing),
            [
                PathBuf::from("/home/u/my sock"),
                PathBuf::from("/run/user/0/bus")
            ]
        );
        let is_socket =
            |p: &Path| p == Path::new("/srv/s") || p == Path::new("/var/run/docker.sock");
        let vars = [
            ("TMUX", "/tmp/tmux-0/default,1,0"),
            ("MY_BUS", "unix:path=/srv/s,guid=1"),
            ("ENGINE", "unix:///var/run/docker.sock"),
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/root"),
        ];
        assert_eq!(host_vars(vars, is_socket), ["ENGINE", "MY_BUS", "TMUX"]);
        let host = Host {
            sockets: vec![
                "/home/u/a.sock".into(),
                "/tmp/b.sock".into(),
                "/p/dev.sock".into(),
            ],
            unset: vec!["TMUX".into()],
            ..Host::default()
        };
        let a = gate_argv(
            &Confinement::default(),
            Path::new("/p"),
            Path::new("/tmp/g"),
            "make",
            &host,
        );
        let joined = a.join(" ");
        for part in [
            "--tmpfs /tmp",
            "--ro-bind-try /dev/null /home/u/a.sock",
            "--unsetenv TMUX",
            "--cap-drop ALL",
            "--ro-bind-try /p/.git /p/.git",
            "--ro-bind-try /p/.ralph /p/.ralph",
        ] {
            assert!(joined.contains(part), "{part}: {joined}");
        }
        assert!(
            !joined.contains("/tmp/b.sock"),
            "under a fresh /tmp: {joined}"
        );
        // A host socket in the project is covered after the project's bind.
        let project = joined.find("--bind /p /p").unwrap();
        let covered = joined.rfind("--ro-bind-try /dev/null /p/dev.sock").unwrap();
        assert!(covered > project, "{joined}");
    }

    /// The flag and the values that follow it, wherever it is.
    fn has(a: &[String], part: &[&str]) -> bool {
        a.windows(part.len()).any(|w| w == part)
    }

    fn pos(a: &[String], part: &[&str]) -> usize {
        a.windows(part.len())
            .position(|w| w == part)
            .unwrap_or_else(|| panic!("{part:?} not in {a:?}"))
    }

    #[test]
    fn an_agent_in_ralphs_bubblewrap_keeps_the_network_and_writes_its_state_not_ralphs_files() {
        let host = Host {
            sockets: vec![
                "/home/u/a.sock".into(),
                "/p/dev.sock".into(),
                "/s/g/x.sock".into(),
            ],
            unset: vec!["SSH_AUTH_SOCK".into()],
            secrets: vec![Secret::Dir("/home/u/.ssh".into())],
            home_in_fresh: None,
            resolver: Some("/run/systemd/resolve/stub-resolv.conf".into()),
        };
        let c = Confinement {
            allow_write: vec!["/data".into()],
            allow_domains: Vec::new(),
        };
        let git = GitDirs {
            common: "/p/.git".into(),
            own: "/p/.git".into(),
            modules: Vec::new(),
            dot_git_file: false,
        };
        let room = Room {
            writable: vec!["/s/g".into()],
            over: agent_over(Path::new("/p"), Some(&git)),
        };
        let args = ["-p".to_string(), "".into()];
        let a = agent_argv(
            &c,
            &room,
            (Path::new("/p"), Path::new("/t/x")),
            &host,
            (Path::new("/bin/gemini"), &args),
        );
        assert_eq!(a[0], "bwrap");
        // The model's API is reached over the network.
        assert!(!a.contains(&"--unshare-net".to_string()), "{a:?}");
        for part in [
            &["--die-with-parent"][..],
            &["--new-session"],
            &["--unshare-pid"],
            &["--cap-drop", "ALL"],
            &["--tmpfs", "/tmp"],
            &["--tmpfs", "/home/u/.ssh"],
            &["--ro-bind-try", "/dev/null", "/home/u/a.sock"],
            &["--unsetenv", "SSH_AUTH_SOCK"],
            &["--bind", "/p", "/p"],
            &["--bind-try", "/data", "/data"],
            &["--bind-try", "/s/g", "/s/g"],
            &["--setenv", "TMPDIR", "/t/x"],
            &["--bind", "/t/x", "/t/x"],
            &["--chdir", "/p"],
        ] {
            assert!(has(&a, part), "{part:?}: {a:?}");
        }
        // The resolver's file, emptied with /run, is bound again after.
        let resolver = "/run/systemd/resolve/stub-resolv.conf";
        assert!(pos(&a, &["--ro-bind-try", resolver, resolver]) > pos(&a, &["--tmpfs", "/run"]));
        // `.git` and `.ralph` writable, pinned, then ralph's control files
        // and git's config and hooks read-only over them.
        let pinned = pos(&a, &["--bind-try", "/p/.git", "/p/.git"]);
        assert!(pinned > pos(&a, &["--bind", "/p", "/p"]));
        assert!(has(&a, &["--bind-try", "/p/.ralph", "/p/.ralph"]));
        for p in CONTROL {
            let p = format!("/p/{p}");
            assert!(pos(&a, &["--ro-bind-try", &p, &p]) > pinned, "{p}: {a:?}");
        }
        assert!(!has(&a, &["--ro-bind-try", "/p/.git", "/p/.git"]), "{a:?}");
        // Sockets in what it may write are covered (again) after those binds.
        for s in ["/p/dev.sock", "/s/g/x.sock"] {
            let last = a
                .windows(3)
                .rposition(|w| w == ["--ro-bind-try", "/dev/null", s])
                .unwrap();
            assert!(last > pos(&a, &["--bind-try", "/s/g", "/s/g"]));
        }
        // The agent and its arguments, after `--`.
        assert_eq!(a[a.len() - 4..], ["--", "/bin/gemini", "-p", ""]);
        // The gate keeps no network, and no resolver.
        let g = gate_argv(&c, Path::new("/p"), Path::new("/t/x"), "make", &host);
        assert!(g.contains(&"--unshare-net".to_string()));
        assert!(!g.iter().any(|x| x == resolver), "{g:?}");
    }

    /// Where each path of `over` is bound, and how: `Some(true)` read-only.
    fn bound(over: &[Over], p: &str) -> Option<(usize, bool)> {
        over.iter()
            .rposition(|o| matches!(o, Over::Pin(x) | Over::ReadOnly(x) if x == Path::new(p)))
            .map(|i| (i, matches!(over[i], Over::ReadOnly(_))))
    }

    #[test]
    fn a_linked_worktree_writes_its_own_git_state_and_no_other_worktrees_nor_the_shared_setup() {
        let git = GitDirs {
            common: "/m/.git".into(),
            own: "/m/.git/worktrees/a".into(),
            modules: vec!["/m/.git/modules/lib".into()],
            dot_git_file: true,
        };
        let over = agent_over(Path::new("/w/a"), Some(&git));
        let ro = |p: &str| {
            let (i, ro) = bound(&over, p).unwrap_or_else(|| panic!("{p}: {over:?}"));
            assert!(ro, "{p} writable: {over:?}");
            i
        };
        let pin = |p: &str| {
            let (i, ro) = bound(&over, p).unwrap_or_else(|| panic!("{p}: {over:?}"));
            assert!(!ro, "{p} read-only: {over:?}");
            i
        };
        // `.git` (a file) pinned, then read-only; never `.git/config` under it.
        assert!(ro("/w/a/.git") > pin("/w/a/.ralph"));
        let under = |p: &Path| p.starts_with("/w/a/.git") && p != Path::new("/w/a/.git");
        assert!(
            !over
                .iter()
                .any(|o| matches!(o, Over::Pin(p) | Over::ReadOnly(p) if under(p))),
            "{over:?}"
        );
        // The shared git folder read-only, bound again, then what its
        // commits write there, and its own folder, less its pointers and
        // config, and the alternates (folders on the way pinned first).
        let common = ro("/m/.git");
        for d in ["objects", "refs", "logs", "reftable", "lfs", "rr-cache"] {
            assert!(pin(&format!("/m/.git/{d}")) > common, "{d}");
        }
        let alternates = ro("/m/.git/objects/info/alternates");
        assert!(alternates > pin("/m/.git/objects/info"));
        assert!(pin("/m/.git/objects/info") > pin("/m/.git/objects"));
        let own = pin("/m/.git/worktrees/a");
        assert!(own > common);
        for f in ["commondir", "gitdir", "config.worktree"] {
            assert!(ro(&format!("/m/.git/worktrees/a/{f}")) > own, "{f}");
        }
        // Nothing else of it is bound over: the other worktrees, the main
        // checkout's HEAD and index, the config, hooks, attributes and
        // pointers stay read-only with the folder.
        for p in [
            "/m/.git/worktrees",
            "/m/.git/worktrees/b",
            "/m/.git/HEAD",
            "/m/.git/config",
            "/m/.git/hooks",
            "/m/.git/info",
        ] {
            assert_eq!(bound(&over, p), None, "{p}");
        }
        // A socket of the host there (git's fsmonitor daemon's) is covered
        // again after the folder is bound again.
        let host = Host {
            sockets: vec!["/m/.git/fsmonitor--daemon.ipc".into()],
            ..Host::default()
        };
        let room = Room {
            writable: Vec::new(),
            over: over.clone(),
        };
        let a = agent_argv(
            &Confinement::default(),
            &room,
            (Path::new("/w/a"), Path::new("/t")),
            &host,
            (Path::new("/bin/pi"), &[]),
        );
        let socket = [
            "--ro-bind-try",
            "/dev/null",
            "/m/.git/fsmonitor--daemon.ipc",
        ];
        let covered = a.windows(3).rposition(|w| w == socket).unwrap();
        assert!(covered > pos(&a, &["--ro-bind-try", "/m/.git", "/m/.git"]));
        // A submodule's git folder is written, less its config and hooks.
        assert!(pin("/m/.git/modules") > common);
        assert!(ro("/m/.git/modules/lib/config") > pin("/m/.git/modules/lib"));
        assert!(ro("/m/.git/modules/lib/hooks") > pin("/m/.git/modules/lib"));
        assert!(pin("/m/.git/modules/lib") > pin("/m/.git/modules"));
    }

    #[test]
    fn a_main_checkout_keeps_the_other_worktrees_and_its_git_setup_read_only() {
        let root = Path::new("/p");
        let git = GitDirs {
            common: "/p/.git".into(),
            own: "/p/.git".into(),
            modules: Vec::new(),
            dot_git_file: false,
        };
        let over = agent_over(root, Some(&git));
        assert_eq!(bound(&over, "/p/.git"), Some((0, false)));
        for p in [
            ".ralph/config.toml",
            ".ralph/runs",
            ".git/config",
            ".git/hooks",
            ".git/worktrees",
            ".git/commondir",
            ".git/info/attributes",
            ".git/objects/info/alternates",
        ] {
            assert!(
                bound(&over, &format!("/p/{p}")).is_some_and(|(_, ro)| ro),
                "{p}: {over:?}"
            );
        }
        // Its own HEAD and index are its own.
        assert_eq!(bound(&over, "/p/.git/HEAD"), None);
        // Outside a repository, as a main checkout's.
        let none = agent_over(root, None);
        for p in CONTROL {
            assert!(
                bound(&none, &format!("/p/{p}")).is_some_and(|(_, ro)| ro),
                "{p}"
            );
        }
    }

    #[test]
    fn a_folder_to_pin_that_is_reached_through_a_link_is_not_bound() {
        let d = tempfile::tempdir().unwrap();
        let (root, common) = (d.path().join("w"), d.path().join("m.git"));
        std::fs::create_dir_all(root.join(".ralph")).unwrap();
        std::fs::create_dir_all(common.join("objects")).unwrap();
        std::os::unix::fs::symlink("../..", common.join("info")).unwrap();
        std::os::unix::fs::symlink("../../..", common.join("objects/info")).unwrap();
        std::os::unix::fs::symlink("../../m.git", root.join("elsewhere")).unwrap();
        let over = vec![
            Over::Pin(root.join(".ralph")),
            Over::Pin(common.join("objects")),
            Over::Pin(common.join("info")),
            Over::Pin(common.join("objects/info")),
            Over::Pin(common.join("objects/info/x")),
            Over::Pin(root.join("elsewhere/objects")),
            Over::Pin(d.path().join("outside")),
            Over::ReadOnly(common.join("info/attributes")),
        ];
        assert_eq!(
            unlinked_pins(over, &[&root, &common]),
            [
                Over::Pin(root.join(".ralph")),
                Over::Pin(common.join("objects")),
                Over::ReadOnly(common.join("info/attributes")),
            ]
        );
    }

    #[test]
    fn a_home_under_an_emptied_folder_is_read_again_its_sockets_covered() {
        let host = Host {
            sockets: vec!["/tmp/h/s.sock".into(), "/tmp/other.sock".into()],
            home_in_fresh: Some("/tmp/h".into()),
            secrets: vec![Secret::Dir("/tmp/h/.ssh".into())],
            ..Host::default()
        };
        let a = gate_argv(
            &Confinement::default(),
            Path::new("/p"),
            Path::new("/t"),
            "x",
            &host,
        );
        let home = pos(&a, &["--ro-bind-try", "/tmp/h", "/tmp/h"]);
        assert!(home > pos(&a, &["--tmpfs", "/tmp"]));
        assert!(pos(&a, &["--tmpfs", "/tmp/h/.ssh"]) > home);
        assert!(pos(&a, &["--ro-bind-try", "/dev/null", "/tmp/h/s.sock"]) > home);
        assert!(!a.iter().any(|x| x == "/tmp/other.sock"), "{a:?}");
    }

    #[test]
    fn ralphs_bubblewrap_is_refused_without_bwrap_with_the_fix() {
        if cfg!(target_os = "linux") {
            assert_eq!(bwrap_unavailable("gemini", |_| true), None);
            let why = bwrap_unavailable("gemini", |p| p != "bwrap").unwrap();
            assert!(
                why.starts_with("ralph confines gemini with bubblewrap, and bwrap is not found")
                    && why.contains("apt-get install bubblewrap"),
                "{why}"
            );
            // socat is Claude Code's sandbox's, not ralph's.
            let in_bwrap = ToConfine {
                name: "gemini",
                by: ConfinedBy::Bwrap,
            };
            assert_eq!(cannot_confine(in_bwrap, |p| p != "socat"), None);
            let own = ToConfine {
                name: "claude",
                by: ConfinedBy::Own { needs_bwrap: true },
            };
            assert!(cannot_confine(own, |p| p != "socat").is_some());
            let none = ToConfine {
                name: "x",
                by: ConfinedBy::No,
            };
            assert_eq!(
                cannot_confine(none, |_| true).as_deref(),
                Some("x cannot be confined")
            );
        }
    }

    #[test]
    fn the_settings_close_every_way_out() {
        let s = settings(
            &Confinement {
                allow_write: vec!["~/.cargo/registry".into()],
                allow_domains: vec!["crates.io".into()],
            },
            "run-1",
            Path::new("/nonexistent"),
            &[],
        );
        assert_eq!(s["sandbox"]["enabled"], true);
        assert_eq!(s["sandbox"]["failIfUnavailable"], true);
        assert_eq!(s["sandbox"]["allowUnsandboxedCommands"], false);
        assert_eq!(s["sandbox"]["autoAllowBashIfSandboxed"], true);
        assert_eq!(
            s["sandbox"]["filesystem"]["allowWrite"][0],
            "~/.cargo/registry"
        );
        assert_eq!(s["sandbox"]["network"]["allowedDomains"][0], "crates.io");
        assert_eq!(s["permissions"]["allow"][0], "Bash");
        assert_eq!(s["env"]["RALPH_SESSION_TOKEN"], "run-1");
        assert_ne!(
            settings(
                &Confinement::default(),
                "run-1",
                Path::new("/nonexistent"),
                &[]
            )
            .to_string(),
            settings(
                &Confinement::default(),
                "run-2",
                Path::new("/nonexistent"),
                &[]
            )
            .to_string(),
            "each session's text is its own"
        );
        let none = settings(&Confinement::default(), "x", Path::new("/nonexistent"), &[]);
        assert_eq!(none["sandbox"]["network"]["allowedDomains"], json!([]));
        assert!(none["sandbox"].get("filesystem").is_none());
    }

    #[test]
    fn the_credential_stores_are_denied_to_reads_but_one_the_user_lets_sessions_write() {
        let secrets = [
            Secret::Dir("/h/.ssh".into()),
            Secret::File("/h/.netrc".into()),
            Secret::Dir("/h/.kube".into()),
        ];
        let c = Confinement {
            allow_write: vec!["/h/.kube".into()],
            allow_domains: Vec::new(),
        };
        let s = settings(&c, "t", Path::new("/nonexistent"), &secrets);
        assert_eq!(
            s["sandbox"]["filesystem"]["denyRead"],
            json!(["/h/.ssh", "/h/.netrc"])
        );
        assert_eq!(
            s["permissions"]["deny"],
            json!([
                "Read(//h/.ssh)",
                "Read(//h/.ssh/**)",
                "Read(//h/.netrc)",
                "Read(//h/.netrc/**)"
            ])
        );
        // Over everything bound before them, in ralph's bubblewrap: a
        // folder empty, a file an empty one.
        let host = Host {
            secrets: secrets.to_vec(),
            home_in_fresh: Some("/h".into()),
            ..Host::default()
        };
        let g = gate_argv(&c, Path::new("/p"), Path::new("/t"), "x", &host);
        let last_bind = pos(&g, &["--bind-try", "/h/.kube", "/h/.kube"]);
        assert!(pos(&g, &["--tmpfs", "/h/.ssh"]) > last_bind, "{g:?}");
        assert!(pos(&g, &["--ro-bind", "/dev/null", "/h/.netrc"]) > last_bind);
        assert!(
            pos(&g, &["--ro-bind", "/dev/null", "/h/.netrc"])
                > pos(&g, &["--ro-bind-try", "/h", "/h"])
        );
        assert!(!has(&g, &["--tmpfs", "/h/.kube"]), "{g:?}");
    }

    #[test]
    fn ralphs_control_files_are_denied_where_they_exist() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".ralph/runs")).unwrap();
        let s = settings(&Confinement::default(), "t", d.path(), &[]);
        let runs = d.path().join(".ralph/runs").display().to_string();
        assert_eq!(s["sandbox"]["filesystem"]["denyWrite"], json!([runs]));
        assert_eq!(
            s["permissions"]["deny"],
            json!([format!("Edit(/{runs})"), format!("Edit(/{runs}/**)")])
        );
        std::fs::write(d.path().join(".ralph/config.toml"), "").unwrap();
        let s = settings(&Confinement::default(), "t", d.path(), &[]);
        assert_eq!(
            s["sandbox"]["filesystem"]["denyWrite"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn refuses_without_its_programs_and_says_how_to_get_them() {
        if cfg!(target_os = "linux") {
            assert_eq!(unavailable(|_| true), None);
            let why = unavailable(|p| p != "bwrap").unwrap();
            assert!(
                why.contains("bwrap not found") && why.contains("apt-get install bubblewrap socat"),
                "{why}"
            );
        }
    }

    #[test]
    fn only_arguments_that_narrow_a_session_are_let_through() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for ok in [
            v(&[]),
            v(&["--model", "opus"]),
            v(&["--model=opus", "--verbose"]),
            v(&["--disallowedTools", "Write", "Edit", "--max-turns", "3"]),
            v(&["--append-system-prompt", "be brief"]),
        ] {
            assert_eq!(widening(&ok), None, "{ok:?}");
        }
        for (bad, named) in [
            (
                v(&["--dangerously-skip-permissions"]),
                "--dangerously-skip-permissions",
            ),
            (
                v(&["--permission-mode", "bypassPermissions"]),
                "--permission-mode",
            ),
            (
                v(&["--permission-mode=bypassPermissions"]),
                "--permission-mode=bypassPermissions",
            ),
            (v(&["--add-dir", "/root"]), "--add-dir"),
            (v(&["--allowedTools", "Write"]), "--allowedTools"),
            (v(&["--settings", "{}"]), "--settings"),
            (v(&["--mcp-config", "x.json"]), "--mcp-config"),
            (v(&["--plugin-dir", "p"]), "--plugin-dir"),
            (v(&["--model", "--dangerously-skip-permissions"]), "--model"),
            (v(&["--verbose=1"]), "--verbose=1"),
            (
                v(&["--disallowedTools", "Write", "--add-dir", "/"]),
                "--add-dir",
            ),
            (v(&["stray"]), "stray"),
        ] {
            assert_eq!(widening(&bad).as_deref(), Some(named), "{bad:?}");
        }
    }

    #[test]
    fn excludes_are_added_once() {
        let once = exclude_text("*.log").unwrap();
        assert!(once.starts_with("*.log\n# ralph loop --confined"));
        assert!(once.contains("\n/.bashrc\n") && once.contains("\n/.vscode\n"));
        assert_eq!(exclude_text(&once), None);
    }
}
