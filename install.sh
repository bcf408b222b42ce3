#!/usr/bin/env bash
# Build and install ralph with cargo, then add its Stop hook to Claude Code's
# user settings. Safe to run again: both steps are idempotent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

command -v cargo >/dev/null 2>&1 || {
  echo "install.sh: cargo not found. Install Rust from https://rustup.rs and run this again." >&2
  exit 1
}
cargo install --path . --locked
bin="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin/ralph"
"$bin" install-hook
echo "ralph is installed at $bin; make sure its folder is on your PATH."
