#!/usr/bin/env bash
# What a long history costs each command that reads it: `status`, `status
# --json`, `status --all`, `watch --once`, `logs`, and one iteration of a
# loop paced with --max-sessions-per-hour, against 1, 100, 1,000 and 5,000
# past runs of 50 sessions each, as callgrind instruction counts (the same
# on a busy machine). The figure that matters is each command's ratio at
# 5,000 runs to its cost at 1 run (the target: within 1.5x). BEFORE=<an
# older ralph> measures it side by side. Needs valgrind.
#   benches/history.sh               # this checkout's release build
#   BEFORE=/path/to/ralph benches/history.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 1; }
cargo build --release --locked -q
AFTER=$PWD/target/release/ralph
COUNTS=${COUNTS:-"1 100 1000 5000"}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export HOME=$W/home
mkdir -p "$HOME/.claude"

# A project and one real run of it (a stand-in claude that does nothing),
# whose folder is the template of every past run.
P=$W/p
mkdir -p "$P" && cd "$P"
git init -q && git config user.email b@b && git config user.name b
mkdir .ralph && printf '# Spec\n\n- [ ] **1** One\n- [ ] **2** Two\n' > .ralph/spec.md
echo "do it" > .ralph/prompt.md
git add -A && git commit -qm init
cat > "$W/claude" <<'SH'
#!/bin/sh
cat >/dev/null
echo '{"type":"system","subtype":"init","session_id":"s","model":"m"}'
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"nothing to do"}]}}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.01,"num_turns":1,"usage":{"input_tokens":10,"output_tokens":5}}'
SH
chmod +x "$W/claude"
"$AFTER" loop --claude "$W/claude" --max-iterations 1 >/dev/null 2>&1 || true
TEMPLATE=$(ls -d .ralph/runs/*/ | head -1)
[ -s "$TEMPLATE/records.jsonl" ] || { echo "the template run has no records"; exit 1; }
# Its sessions long over: none counts in the pacing hour.
REC=$(head -1 "$TEMPLATE/records.jsonl" \
  | sed -E 's/"(start|end)":"[^"]*"/"\1":"2025-01-01T00:00:00Z"/g')
mkdir -p "$W/template"
cp "$TEMPLATE"/{summary.json,state.json,session-001.jsonl} "$W/template/"
for i in $(seq 1 50); do echo "$REC"; done > "$W/template/records.jsonl"
# The real run stays: the newest, the one ralph's own record names, as a
# project's latest run is.

# Past runs, an hour apart in 2025 (long over: none is in the pacing hour).
make_runs() { # $1: how many there are to be
  local have; have=$(find .ralph/runs -mindepth 1 -maxdepth 1 -name '2025-*' | wc -l)
  for i in $(seq $((have + 1)) "$1"); do
    local id; id=$(date -u -d "2025-01-01 + $i hours" +%Y-%m-%dT%H-%M-%SZ)-$i
    cp -r "$W/template" ".ralph/runs/$id"
  done
}

instructions() { # the command's instructions, its children aside
  timeout 300 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null </dev/null \
    | awk '/Collected :/ {print $4}'
}

# One iteration of a paced loop: two iterations less one. (Each run it
# makes stays, as the newest: the next command finds it as a user would.)
paced() { # $1: ralph
  local a b
  a=$(instructions "$1" loop --claude "$W/claude" --max-sessions-per-hour 500 --max-iterations 1)
  b=$(instructions "$1" loop --claude "$W/claude" --max-sessions-per-hour 500 --max-iterations 2)
  echo $((b - a))
}

declare -A AT
BINS="after:$AFTER"
[ -n "${BEFORE:-}" ] && BINS="before:$BEFORE $BINS"
printf '%-8s %-16s' binary command; for n in $COUNTS; do printf ' %14s' "$n runs"; done; printf ' %10s\n' ratio
for n in $COUNTS; do
  make_runs "$n"
  for b in $BINS; do
    name=${b%%:*}; bin=${b#*:}
    AT[$name,status,$n]=$(instructions "$bin" status)
    AT[$name,status-json,$n]=$(instructions "$bin" status --json)
    AT[$name,status-all,$n]=$(instructions "$bin" status --all)
    AT[$name,watch-once,$n]=$(instructions "$bin" watch --once)
    AT[$name,logs,$n]=$(instructions "$bin" logs)
    AT[$name,paced-iter,$n]=$(paced "$bin")
  done
done
first=${COUNTS%% *}; last=${COUNTS##* }
for b in $BINS; do
  name=${b%%:*}
  for c in status status-json status-all watch-once logs paced-iter; do
    printf '%-8s %-16s' "$name" "$c"
    for n in $COUNTS; do printf ' %14s' "${AT[$name,$c,$n]}"; done
    printf ' %9.2fx\n' "$(echo "${AT[$name,$c,$last]} / ${AT[$name,$c,$first]}" | bc -l)"
  done
done
