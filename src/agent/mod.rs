//! The coding agents a loop can drive (Claude Code, Codex CLI, Gemini CLI):
//! each one's command line for a session and its token prices. Their
//! streams are read in `run::stream`; everything else is shared.

pub mod codex;
pub mod gemini;
pub mod prices;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Claude Code (`claude -p`)
    #[default]
    Claude,
    /// OpenAI's Codex CLI (`codex exec`)
    Codex,
    /// Google's Gemini CLI (`gemini -p`)
    Gemini,
}

impl Agent {
    pub const ALL: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Gemini];

    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    /// How to install it (the npm registry's package).
    pub fn install(self) -> &'static str {
        match self {
            Agent::Claude => "npm install -g @anthropic-ai/claude-code",
            Agent::Codex => "npm install -g @openai/codex",
            Agent::Gemini => "npm install -g @google/gemini-cli",
        }
    }

    /// Does its stream say what a session cost? (Else ralph prices its
    /// tokens.)
    pub fn reports_cost(self) -> bool {
        self == Agent::Claude
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
