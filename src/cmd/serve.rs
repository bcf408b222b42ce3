use std::net::IpAddr;

use anyhow::Result;
use clap::Args;

use super::Run;
use crate::control::inbox;
use crate::exit::{ExitStatus, Stop};
use crate::procs::signals::install_signal_handlers;
use crate::serve::guard::Guard;

/// Every loop on this machine in a browser: a local web page, live.
///
/// It lists each loop ralph knows of here (every project a loop ran in,
/// its worktrees, a parallel run's workers): state, step, spec progress,
/// cost and tokens, last activity, the question it asks. A loop's page
/// shows its timeline (sessions, gate, review, merges, pushes), its cost
/// over time, a parallel run's board and each session's transcript. Its
/// buttons stop a loop (now, or after its session), answer its question,
/// add a step, raise a limit and resume it, as `ralph watch`'s keys do.
///
/// It listens on 127.0.0.1 (this machine only), on the port it prints, and
/// answers only requests that carry the token in the address it prints
/// (a cookie then), name its own host and come from its own page. From a
/// phone: an SSH tunnel (`ssh -L 8765:127.0.0.1:8765 this-machine`, then
/// `ralph serve --port 8765` here), or `--listen` (see there). It runs
/// until Ctrl+C. Refused inside a loop's session.
#[derive(Debug, Args)]
pub struct Serve {
    /// The port [default: any free one, printed]
    #[arg(long, value_name = "N")]
    port: Option<u16>,

    /// Listen on this address instead of 127.0.0.1: 0.0.0.0 (or ::) for
    /// every network this machine is on. Anyone who can reach it and has the
    /// printed address (its token) sees every loop's questions, transcripts
    /// and folders, and can stop, answer and resume them; the traffic is
    /// plain HTTP, readable on the way
    #[arg(long, value_name = "ADDR")]
    listen: Option<IpAddr>,
}

impl Run for Serve {
    fn run(&self) -> Result<ExitStatus> {
        if let Some(why) = inbox::refused_in_session() {
            return Err(Stop::with(ExitStatus::Usage, why));
        }
        let listen = self.listen.unwrap_or(IpAddr::from([127, 0, 0, 1]));
        let server = crate::serve::server::bind(listen, self.port.unwrap_or(0))
            .map_err(|e| Stop::with(ExitStatus::Failure, format!("{e:#}")))?;
        let port = server.port;
        let token = crate::trust::store::random_token();
        let names: Vec<String> = sysinfo::System::host_name()
            .ok()
            .filter(|h| !h.is_empty())
            .map(|h| vec![format!("{h}.local"), h])
            .unwrap_or_default();
        let shown = if listen.is_unspecified() {
            names.last().cloned().unwrap_or_else(|| "127.0.0.1".into())
        } else if listen.is_ipv6() {
            format!("[{listen}]")
        } else {
            listen.to_string()
        };
        install_signal_handlers()?;
        crate::outln!("ralph serve: every loop on this machine at");
        crate::outln!("  http://{shown}:{port}/?token={token}");
        if listen.is_loopback() {
            crate::outln!(
                "Only this machine can reach it. From another (a phone, a laptop): `ssh -L {port}:127.0.0.1:{port} <this machine>`, then open the address there. Ctrl+C stops it."
            );
        } else {
            crate::errln!(
                "ralph serve: listening on {listen} port {port}: anyone on a network this reaches who has the address above (its token) sees every loop's questions, transcripts and folders, and can stop, answer and resume them; the traffic is plain HTTP, readable by anyone on the way: use it on a network you trust, or an SSH tunnel instead"
            );
        }
        let here = std::env::current_dir()
            .ok()
            .and_then(|d| crate::run::worktree::main_root(&d).ok());
        crate::serve::server::serve(server, Guard::new(token, listen, port, &names), here)?;
        Ok(ExitStatus::from(130))
    }
}
