#!/usr/bin/env bash
# Benchmark `ralph loop` itself, with instant stand-ins for claude:
#   1. overhead per iteration: N sessions of a stand-in that does one small
#      change and prints a result line, minus N times the stand-in alone,
#      and the part of it that is the loop's own git call (`git status`,
#      once per session; target <= 5 ms per iteration beyond it); the same
#      for stand-ins that print Codex's and Gemini's streams (--agent codex,
#      --agent gemini: the same overhead for every agent). With
#      OLD=<another ralph binary>, that one is measured in the same run;
#   2. peak memory of the loop while one session streams 1 GiB of
#      stream-json (target <= 30 MB).
# Needs hyperfine (apt-get install hyperfine) and GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "hyperfine not found: apt-get install hyperfine" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time not found: apt-get install time" >&2; exit 2; }
# The binary exactly as install.sh builds it (static where it can be).
RALPH=$(./install.sh --build-only)
# A just-linked binary still has dirty pages in writeback, which slows its
# first thousands of starts: flush them before measuring.
sync
N=${N:-50}
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cd "$work"
git init -q . && git -c user.email=b@b -c user.name=b commit -q --allow-empty -m start
mkdir .ralph && printf -- '- [ ] **1** work\n' > .ralph/spec.md && echo "do it" > .ralph/prompt.md
result='{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"ok","total_cost_usd":0.001,"usage":{"input_tokens":1,"output_tokens":1}}'
cat > instant <<EOF2
#!/bin/sh
cat > /dev/null
echo x >> work.txt
echo '$result'
EOF2
chmod +x instant

standin=$(hyperfine -N -w 5 -r 200 --export-json s.json "sh -c './instant < .ralph/prompt.md > /dev/null'" >/dev/null && python3 -c 'import json; print(json.load(open("s.json"))["results"][0]["median"])')
# The git call the loop makes after each session, as it makes it.
gitcall=$(hyperfine -N -w 5 -r 200 --export-json g.json \
  "git status --porcelain=v2 --branch -z --untracked-files=all -- . :(exclude).ralph/runs :(exclude).ralph/loop.lock" >/dev/null \
  && python3 -c 'import json; print(json.load(open("g.json"))["results"][0]["median"])')
# The same session as Codex and Gemini print it.
cat > instant-codex <<'EOF2'
#!/bin/sh
cat > /dev/null
echo x >> work.txt
echo '{"type":"thread.started","thread_id":"t1"}'
echo '{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"/bin/bash -lc true","exit_code":null}}'
echo '{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"ok"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":2,"cached_input_tokens":0,"output_tokens":1}}'
EOF2
cat > instant-gemini <<'EOF2'
#!/bin/sh
cat > /dev/null
echo x >> work.txt
echo '{"type":"init","session_id":"s1","model":"gemini-2.5-pro"}'
echo '{"type":"tool_use","tool_name":"run_shell_command","tool_id":"r1","parameters":{"command":"true"}}'
echo '{"type":"message","role":"assistant","content":"ok","delta":true}'
echo '{"type":"result","status":"success","stats":{"input_tokens":2,"output_tokens":1,"cached":0,"models":{"gemini-2.5-pro":{"input_tokens":2,"output_tokens":1,"cached":0}}}}'
EOF2
chmod +x instant-codex instant-gemini
loops=("$RALPH")
names=("this ralph")
[ -n "${OLD:-}" ] && loops+=("$OLD") && names+=("OLD ($OLD)")
cmds=()
for bin in "${loops[@]}"; do
  cmds+=("$bin loop --claude ./instant --max-iterations $N --max-sessions-per-step $((N + 1)) >/dev/null 2>&1 || [ \$? = 4 ]; rm -rf .ralph/runs")
done
# Codex runs commands in a login shell, which must find ralph (the loop
# checks): a home whose profile puts it on PATH, as a user's would.
mkdir -p home && printf 'PATH="%s:$PATH"\n' "$(dirname "$RALPH")" > home/.profile
for agent in codex gemini; do
  cmds+=("HOME=$work/home $RALPH loop --agent $agent --$agent ./instant-$agent --max-iterations $N --max-sessions-per-step $((N + 1)) >/dev/null 2>&1 || [ \$? = 4 ]; rm -rf .ralph/runs")
  names+=("this ralph, --agent $agent")
done
hyperfine -w 1 -r "${RUNS:-5}" --export-json l.json "${cmds[@]}" >/dev/null
loop=$(python3 -c 'import json; print(" ".join(str(r["median"]) for r in json.load(open("l.json"))["results"]))')

# (A step open that long would be "stuck": the loops above say how long
# is too long.) 1 GiB of assistant text events, then the result.
cat > firehose <<EOF2
#!/bin/sh
cat > /dev/null
line='{"type":"assistant","message":{"model":"m","content":[{"type":"text","text":"$(head -c 1000 /dev/zero | tr '\0' 'x')"}]}}'
yes "\$line" | head -c 1073741824
echo
echo x >> work.txt
echo '$result'
EOF2
chmod +x firehose
/usr/bin/time -f '%M' -o mem.txt "$RALPH" loop --claude ./firehose --max-iterations 1 >/dev/null 2>&1 || true
streamed=$(stat -c %s .ralph/runs/*/session-001.jsonl)

python3 - "$standin" "$loop" "$N" "$(tail -1 mem.txt)" "$streamed" "$gitcall" "$(printf '%s\n' "${names[@]}")" <<'PY'
import sys
standin, n, mem_kb, streamed, git = float(sys.argv[1]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
loops = [float(x) for x in sys.argv[2].split()]
names = sys.argv[7].splitlines()
print(f"stand-in alone {standin*1000:.2f} ms; the loop's git call {git*1000:.2f} ms")
for name, loop in zip(names, loops):
    per = (loop - n * standin) / n * 1000
    print(f"{name}: {n} iterations in {loop*1000:.0f} ms; overhead per iteration {per:.2f} ms, "
          f"of which git {git*1000:.2f} ms, beyond git {per - git*1000:.2f} ms  (target <= 5 ms)")
print(f"peak RSS while streaming {streamed / 2**30:.2f} GiB: {mem_kb / 1024:.1f} MB  (target <= 30 MB)")
PY
