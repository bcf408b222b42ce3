#!/usr/bin/env bash
# Install ralph for this user: the binary (cargo install), its Stop hook in
# Claude Code's user settings, the /ralph-setup slash command, and shell
# completions for the shells that are installed. No sudo. Safe to run again.
#
#   ./install.sh              install, or update what is installed
#   ./install.sh --uninstall  remove everything this script installed
#   ./install.sh --build-only build the binary as an install would, print its path
#
# On Linux with glibc the binary is linked statically when the static C
# library is there (Debian/Ubuntu: libc6-dev; Fedora: glibc-static): the Stop
# hook starts after every turn of every session, and a static binary starts
# in about two thirds of the time. RALPH_STATIC=0 asks for a dynamic one.
#
# What it installed is listed in ralph's data folder
# (${XDG_DATA_HOME:-~/.local/share}/ralph/install-manifest), which is what
# --uninstall removes: files that were changed since are left, with a note.
# --uninstall also removes ralph's own folders (its approvals and install
# records, loop locks and scratch space: see ralph_dirs below), but nothing
# else in them, and the Stop hook's claim files in the temp folder.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
claude_dir=${CLAUDE_CONFIG_DIR:-$HOME/.claude}
data_dir=${XDG_DATA_HOME:-$HOME/.local/share}/ralph
manifest=$data_dir/install-manifest
bin=${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin/ralph

say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

usage() {
  # The comment block at the top of this file.
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
}

# Where each installed shell looks for user completions.
completion_targets() {
  if command -v bash >/dev/null 2>&1; then
    printf 'bash %s\n' "${XDG_DATA_HOME:-$HOME/.local/share}/bash-completion/completions/ralph"
  fi
  if command -v zsh >/dev/null 2>&1; then
    printf 'zsh %s\n' "${ZDOTDIR:-$HOME}/.zfunc/_ralph"
  fi
  if command -v fish >/dev/null 2>&1; then
    printf 'fish %s\n' "${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions/ralph.fish"
  fi
}

# Chooses how cargo_linked links: static on linux-gnu when
# possible, and not position-independent (as Go links by default), which
# spares every start the relocation of the whole binary. The explicit
# --target keeps these flags off build scripts and proc macros, which cannot
# be linked that way.
choose_linking() {
  linking=dynamic
  [ "${RALPH_STATIC:-1}" = 0 ] && return 0
  local host libc
  host=$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')
  case "$host" in *-linux-gnu*) ;; *) return 0 ;; esac
  libc=$(${CC:-cc} -print-file-name=libc.a 2>/dev/null || true)
  if [ "${libc#/}" = "$libc" ] || [ ! -f "$libc" ]; then
    say "note: no static C library (libc.a) found, so the binary is linked dynamically (starts slower as a hook); install libc6-dev or glibc-static to change that" >&2
    return 0
  fi
  static_target=$host
  linking=static
}

# cargo with the linking chosen above: "$@" is a cargo command and its options.
cargo_linked() {
  if [ "$linking" = static ]; then
    RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static -C relocation-model=static" \
      cargo "$@" --target "$static_target"
  else
    cargo "$@"
  fi
}

# cargo_linked, and once more dynamically if a static build fails.
cargo_linked_or_dynamic() {
  cargo_linked "$@" && return 0
  [ "$linking" = static ] || die "cargo $1 failed (above)"
  say "the static build failed (above); building a dynamically linked binary instead" >&2
  linking=dynamic
  cargo_linked "$@" || die "cargo $1 failed (above)"
}

build_only() {
  command -v cargo >/dev/null 2>&1 || die "cargo not found. Install Rust from https://rustup.rs and run this again."
  choose_linking
  cargo_linked_or_dynamic build --quiet --release --locked --manifest-path "$here/Cargo.toml" >&2
  local dir
  dir=$(cargo metadata --format-version 1 --no-deps --manifest-path "$here/Cargo.toml" |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  if [ "$linking" = static ]; then dir=$dir/$static_target; fi
  echo "$dir/release/ralph"
}

# The folders the ralph binary keeps its own state in, as the `directories`
# crate it uses names them (src/trust/store.rs), one a line: the entries
# ralph writes there (all of them), a tab, the folder. An XDG variable that
# is not an absolute path is ignored, as the crate does.
ralph_dirs() {
  if [ "$(uname -s)" = Darwin ]; then
    printf 'installs trust loops tmp costs.json ledger.jsonl\t%s\n' "$HOME/Library/Application Support/ralph"
    return 0
  fi
  local data=${XDG_DATA_HOME:-} state=${XDG_STATE_HOME:-}
  [ "${data#/}" != "$data" ] || data=$HOME/.local/share
  [ "${state#/}" != "$state" ] || state=$HOME/.local/state
  printf 'installs trust\t%s\n' "$data/ralph"
  printf 'loops tmp costs.json ledger.jsonl\t%s\n' "$state/ralph"
}

# Note in the manifest each folder on the way to ralph's own folders that is
# not there yet (the binary makes them when it first runs), without making
# it: uninstall removes those that are empty by then.
note_missing_dirs() {
  local d=$1
  while [ ! -e "$d" ]; do echo "dir $d" >>"$created"; d=$(dirname "$d"); done
}

# Remove ralph's own folders: the entries ralph writes in them (each whole;
# rm does not follow links), then the folder if nothing else is in it. The
# state of a loop that is running (its lock held) is kept, and said.
remove_ralph_dirs() {
  local entries dir entry lock
  while IFS=$'\t' read -r entries dir; do
    [ -d "$dir" ] && [ ! -L "$dir" ] || continue
    if [ -d "$dir/loops" ] && command -v flock >/dev/null 2>&1; then
      for lock in "$dir"/loops/*.lock; do
        [ -f "$lock" ] || continue
        if ! flock -n "$lock" true 2>/dev/null; then
          say "kept $dir: a ralph loop is running (stop it, then run ./install.sh --uninstall again)"
          continue 2
        fi
      done
    fi
    for entry in $entries; do
      if [ -e "$dir/$entry" ] || [ -L "$dir/$entry" ]; then
        local shown=$dir/$entry
        if [ -d "$shown" ] && [ ! -L "$shown" ]; then shown=$shown/; fi
        rm -rf -- "${dir:?}/$entry"
        say "removed: $shown"
      fi
    done
    if rmdir "$dir" 2>/dev/null; then
      say "removed: $dir/"
    elif [ -d "$dir" ]; then
      say "kept $dir: it holds files ralph did not make ($(ls -A "$dir" | head -5 | tr '\n' ' '))"
    fi
  done < <(ralph_dirs)
  # The Stop hook's claim files, where a session outside a loop's run folder
  # leaves them (src/hook/stop.rs): only those, then the folder if empty.
  local claims=${TMPDIR:-/tmp}/ralph-$(id -u)
  if [ -d "$claims" ] && [ ! -L "$claims" ]; then
    find "$claims" -mindepth 1 -maxdepth 1 -type f -name 'stop-claim-*' -delete 2>/dev/null || true
    if rmdir "$claims" 2>/dev/null; then say "removed: $claims/"; fi
  fi
}

# mkdir -p that notes in the manifest each folder it had to create.
mkdirs() {
  local d=$1 missing=()
  while [ ! -d "$d" ]; do missing+=("$d"); d=$(dirname "$d"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  mkdir -p "$1"
  for d in "${missing[@]}"; do echo "dir $d" >>"$created"; done
}

# Write $2 (a file with the content) to $1 unless it already holds it; note
# it in the manifest either way.
put() {
  local dest=$1 src=$2
  mkdirs "$(dirname "$dest")"
  if [ -f "$dest" ] && cmp -s "$src" "$dest"; then
    say "up to date: $dest"
  elif [ -f "$dest" ] && ! grep -qxF "file $dest $(cksum <"$dest" | cut -d' ' -f1)" "$manifest" 2>/dev/null; then
    # Not ours, or changed since we installed it: the user's file wins.
    say "kept $dest: it is not the one this script installed (move it aside to get ours)"
    return 0
  else
    cp "$src" "$dest"
    say "installed: $dest"
  fi
  echo "file $dest $(cksum <"$dest" | cut -d' ' -f1)" >>"$manifest.new"
}

install() {
  command -v cargo >/dev/null 2>&1 || die "cargo not found. Install Rust from https://rustup.rs and run this again."
  created=$(mktemp)
  mkdirs "$data_dir"
  local _entries dir
  while IFS=$'\t' read -r _entries dir; do note_missing_dirs "$dir"; done < <(ralph_dirs)
  : >"$manifest.new"
  # Keep the folders a previous run created, so uninstall still removes them.
  if [ -f "$manifest" ]; then grep '^dir ' "$manifest" >>"$manifest.new" || true; fi
  # Even if a step fails, remember what was already done.
  trap 'cat "$created" >>"$manifest.new"; sort -u "$manifest.new" >"$manifest"; rm -f "$manifest.new" "$created"' EXIT

  choose_linking
  say "building and installing the ralph binary (cargo install --path . --locked, $linking): the first build takes a few minutes (about 5 on a small 2-core machine); cargo shows its progress below"
  cargo_linked_or_dynamic install --path "$here" --locked
  echo "binary $bin" >>"$manifest.new"
  say "installed: $bin"

  "$bin" install-hook

  put "$claude_dir/commands/ralph-setup.md" "$here/commands/ralph-setup.md"

  local tmp shell dest
  tmp=$(mktemp)
  while read -r shell dest; do
    "$bin" completions "$shell" >"$tmp"
    put "$dest" "$tmp"
    if [ "$shell" = zsh ] && ! grep -qs 'zfunc' "${ZDOTDIR:-$HOME}/.zshrc"; then
      say "zsh: add 'fpath+=~/.zfunc; autoload -U compinit; compinit' to ~/.zshrc to load the completions"
    fi
  done < <(completion_targets)
  rm -f "$tmp"
  # ralph install-hook keeps its records here; remove it with the rest.
  [ -d "$data_dir/installs" ] && echo "dir $data_dir/installs" >>"$manifest.new"

  case ":$PATH:" in
    *":$(dirname "$bin"):"*) ;;
    *) say "note: $(dirname "$bin") is not on your PATH; add it so Claude Code's hook and your shell find ralph" ;;
  esac
  say "done. In a project: /ralph-setup in Claude Code (or ralph init), then ralph loop. ralph doctor checks the setup."
}

uninstall() {
  if [ -x "$bin" ]; then
    "$bin" uninstall-hook
  else
    say "ralph binary not found at $bin; the Stop hook (if any) is left in $claude_dir/settings.json"
  fi
  if [ -f "$manifest" ]; then
    local kind path sum
    while read -r kind path sum; do
      [ "$kind" = file ] || continue
      if [ ! -e "$path" ]; then continue; fi
      if [ "$(cksum <"$path" | cut -d' ' -f1)" = "$sum" ]; then
        rm -f "$path"
        say "removed: $path"
      else
        say "kept $path: it changed since it was installed"
      fi
    done <"$manifest"
  fi
  if command -v cargo >/dev/null 2>&1 && [ -x "$bin" ]; then
    if cargo uninstall --quiet ralph ${CARGO_INSTALL_ROOT:+--root "$CARGO_INSTALL_ROOT"}; then say "removed: $bin"; fi
  fi
  if [ -f "$manifest" ]; then
    local dirs
    dirs=$(grep '^dir ' "$manifest" | cut -d' ' -f2- | sort -r)
    rm -f "$manifest"
    remove_ralph_dirs
    # Folders this script created, deepest first, if they are now empty.
    while read -r d; do
      if [ -n "$d" ] && rmdir "$d" 2>/dev/null; then say "removed: $d/"; fi
    done <<<"$dirs"
  else
    remove_ralph_dirs
  fi
  say "uninstalled."
}

case "${1:-}" in
  "") install ;;
  --uninstall) uninstall ;;
  --build-only) build_only ;;
  -h | --help) usage ;;
  *) printf 'install.sh: unknown option %s\n\n' "$1" >&2; usage >&2; exit 2 ;;
esac
