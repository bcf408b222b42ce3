//! `ralph mcp`: an MCP server on stdio for the user's own interactive agent
//! (Claude Code, Codex, Gemini CLI, opencode), a face like the terminal's
//! commands: it lists the repository's loops, shows one's status and
//! journal, starts one in a worktree, and stops, answers, adds a step to and
//! raises a limit of one, each through the code of the command that does
//! it. Its stdout is the protocol's: nothing here prints.

pub mod install;
mod server;
mod start;
pub mod text;
pub mod tools;

pub use server::serve;
