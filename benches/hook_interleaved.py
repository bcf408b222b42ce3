#!/usr/bin/env python3
"""Whole-process timing of `ralph hook stop`, /bin/true and the reference
bash hook, *interleaved*: one run of each in turn, many times over, so that
the machine's drifting speed (large on small VMs) hits every command alike.
hyperfine (benches/hook.sh) times each command in its own block instead.

Every command gets the Stop JSON Claude Code sends on stdin. The active path
runs under a stand-in session, a copy of bash named
`claude` started with RALPH_LOOP=1 that ignores SIGINT and SIGTERM, with this script as
its child: nothing outside is ever signalled.

Usage: benches/hook_interleaved.py [RUNS]   (run from anywhere; builds ralph)
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ref = os.environ.get("REF", os.path.join(root, "..", "shared", "reference", "ref-stop-hook.sh"))


# What Claude Code 2.1.330 gives a Stop hook on stdin (fields from the facts file).
STOP = json.dumps({"session_id": "6f0c0b5e-3d1a-4a57-9a53-0f2b1c9d8e7a",
                   "transcript_path": "/home/u/.claude/projects/-home-u-app/6f0c0b5e.jsonl",
                   "cwd": "/home/u/app", "prompt_id": "p-1", "permission_mode": "bypassPermissions",
                   "hook_event_name": "Stop", "stop_hook_active": False,
                   "last_assistant_message": "Step 1.2 is done and committed; tests pass.",
                   "background_tasks": [], "session_crons": []})
STOP_FILE = os.path.join(tempfile.gettempdir(), f"ralph-bench-stop-{os.getuid()}.json")


def timed(argv, env):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_OPEN, 0, STOP_FILE, os.O_RDONLY, 0)])
    os.waitpid(pid, 0)
    return (time.perf_counter_ns() - t0) / 1e6


def measure(commands, env, runs):
    times = {name: [] for name, _ in commands}
    for _ in range(20):
        for _, argv in commands:
            timed(argv, env)
    for _ in range(runs):
        for name, argv in commands:
            times[name].append(timed(argv, env))
    return {name: statistics.median(t) for name, t in times.items()}


def main():
    if os.environ.get("BENCH_INNER") == "active":
        session = os.getppid()
        env = dict(os.environ, RALPH_LOOP="1", CLAUDE_CODE_ENTRYPOINT="cli", CLAUDE_PID=str(session))
        cmds = [("ralph", [os.environ["RALPH"], "hook", "stop"]), ("reference", ["/bin/bash", os.environ["REFCOPY"]])]
        m = measure(cmds, env, RUNS // 4)
        # Print mode, the loop's default: the hook leaves a detached watcher
        # behind (given a long grace here, and ended below) instead of
        # signalling. Fewer runs: every watcher polls the session meanwhile.
        env = dict(env, CLAUDE_CODE_ENTRYPOINT="sdk-cli", RALPH_HOOK_GRACE_MS="600000")
        p = measure(cmds[:1], env, RUNS // 20)
        mine = f"--pid\0{session}\0".encode()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read()
                if b"stop-watch" in argv and mine in argv:
                    os.kill(int(pid), 9)
            except OSError:
                pass
        print(f"{m['ralph']} {m['reference']} {p['ralph']}")
        return
    # The binary exactly as install.sh builds it (static where it can be).
    ralph = subprocess.run([os.path.join(root, "install.sh"), "--build-only"], check=True,
                           capture_output=True, text=True).stdout.strip()
    subprocess.run(["sync"], check=True)
    with open(STOP_FILE, "w") as f:
        f.write(STOP)
    work = tempfile.mkdtemp()
    try:
        shutil.copy(ref, os.path.join(work, "ref.sh"))
        shutil.copy("/bin/bash", os.path.join(work, "claude"))
        env = {k: v for k, v in os.environ.items() if k != "RALPH_LOOP"}
        noop = measure([("true", ["/bin/true"]), ("ralph", [ralph, "hook", "stop"]), ("reference", ["/bin/bash", os.path.join(work, "ref.sh")])], env, RUNS)
        inner = dict(env, BENCH_INNER="active", RALPH=ralph, REFCOPY=os.path.join(work, "ref.sh"))
        # The stand-in session: bash named claude, ignoring SIGINT, runs this script.
        script = 'trap "" INT TERM; "$0" "$1" "$2"; true'
        out = subprocess.run([os.path.join(work, "claude"), "-c", script, sys.executable, os.path.abspath(__file__), str(RUNS)],
                             env=dict(inner, RALPH_LOOP="1"), capture_output=True, text=True, check=True).stdout
        a_ralph, a_ref, p_ralph = map(float, out.split())
        print(f"median ms ({RUNS} interleaved runs; active {RUNS // 4}): /bin/true {noop['true']:.3f} | "
              f"no-op ralph {noop['ralph']:.3f} ref {noop['reference']:.3f} | active ralph {a_ralph:.3f} ref {a_ref:.3f}")
        print(f"no-op: ralph / /bin/true   {noop['ralph'] / noop['true']:.3f}  (target <= 1.30)")
        print(f"no-op: ralph / reference   {noop['ralph'] / noop['reference']:.3f}  (target <= 0.35)")
        print(f"active: ralph / reference  {a_ralph / a_ref:.3f}  (target <= 0.05)")
        print(f"active, print mode (starts the watcher; {RUNS // 20} runs): ralph {p_ralph:.3f} ms, / reference {p_ralph / a_ref:.3f}")
    finally:
        shutil.rmtree(work)
        os.remove(STOP_FILE)


main()
