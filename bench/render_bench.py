"""How much ``sse-tool render`` paints and how much CPU it burns under a fast stream.

A writer feeds channel records at a fixed rate (default 2,000 deltas per second for 10 s)
into ``sse-tool render --stats``, once with stdout on a pseudo-terminal (the rich view,
80x24) and once into a pipe (the plain view), each at the default ``--interval 40ms`` and,
for comparison, at ``--interval 0`` (a paint per delta, what an unthrottled renderer does).
Reported per run: paints and paints per second (from ``--stats``, over the painter's
lifetime, so the interpreter's start-up is not counted), render's CPU time
(user + system, from ``os.wait4``), and CPU time as a share of the wall time.

    .venv/bin/python bench/render_bench.py [--rate 2000] [--seconds 10] [--runs pty-40ms,pipe-40ms,...] [--growth]

``--markdown`` has a run of its own; ``--growth`` also measures CPU per delta at 1,000 and
50,000 deltas, which must not grow with the answer's length.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import struct
import subprocess
import sys
import termios
import threading
import time

from installed import sse_tool_command

RUNS = {"pty-40ms": ("pty", "40ms"), "pty-0": ("pty", "0"), "pipe-40ms": ("pipe", "40ms"), "pipe-0": ("pipe", "0"),
        "pty-markdown-40ms": ("pty", "40ms", ("--markdown",))}
#: ``--growth``: the same rate, a short and a long answer: CPU per delta must not grow
GROWTH = (1000, 50000)


def record(i: int) -> bytes:
    text = f"word{i} " if i % 12 else f"word{i}.\n"
    return json.dumps({"type": "delta", "channel": "answer", "text": text}).encode() + b"\n"


def drain(fd: int, counter: list) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO once the pty's other side is closed
            return
        if not chunk:
            return
        counter[0] += len(chunk)


def run(where: str, interval: str, extra: tuple = (), *, rate: int, seconds: float) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    if where == "pty":
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        out_fd, child_out = master, slave
    else:
        out_fd, child_out = os.pipe()
    proc = subprocess.Popen([*sse_tool_command(), "render", "--stats", "--interval", interval, *extra],
                            stdin=subprocess.PIPE, stdout=child_out, stderr=subprocess.PIPE, env=env)
    os.close(child_out)
    received = [0]
    reader = threading.Thread(target=drain, args=(out_fd, received), daemon=True)
    reader.start()
    total = int(rate * seconds)
    batch = max(1, rate // 200)  # a write every 5 ms, as a network would deliver them
    start = time.monotonic()
    for i in range(0, total, batch):
        due = start + i / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        proc.stdin.write(b"".join(record(j) for j in range(i, min(total, i + batch))))
        proc.stdin.flush()
    proc.stdin.write(b'{"type": "end", "status": "complete", "stop_reason": "stop"}\n')
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode()
    reader.join(5)
    os.close(out_fd)
    m = re.search(r"stats: (\d+) paints in ([\d.]+) s", stderr)
    paints = int(m.group(1)) if m else -1
    alive = float(m.group(2)) if m else wall  # from the painter's start: no interpreter start-up
    cpu = usage.ru_utime + usage.ru_stime
    name = f"{where}, --interval {interval}" + "".join(f" {e}" for e in extra)
    return {"run": name, "exit": proc.returncode, "deltas": total,
            "paints": paints, "paints/s": paints / alive, "cpu_s": cpu, "cpu_share": cpu / wall,
            "wall_s": wall, "bytes_out": received[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--growth", action="store_true",
                        help=f"also CPU per delta at {GROWTH[0]:,} and {GROWTH[1]:,} deltas (pty, plain and Markdown)")
    args = parser.parse_args()
    results = [run(*RUNS[name], rate=args.rate, seconds=args.seconds) for name in args.runs.split(",")]
    print(f"{args.rate} deltas/s for {args.seconds:g} s ({int(args.rate * args.seconds)} deltas)")
    print(f"{'run':<34} {'exit':>4} {'paints':>7} {'paints/s':>9} {'cpu s':>7} {'cpu/wall':>9} {'wall s':>7} {'out KB':>8}")
    for r in results:
        print(f"{r['run']:<34} {r['exit']:>4} {r['paints']:>7} {r['paints/s']:>9.1f} {r['cpu_s']:>7.2f} "
              f"{r['cpu_share']:>8.1%} {r['wall_s']:>7.2f} {r['bytes_out'] / 1024:>8.0f}")
    by = {r["run"]: r for r in results}
    for where in ("pty", "pipe"):
        a, b = by.get(f"{where}, --interval 40ms"), by.get(f"{where}, --interval 0")
        if a and b:
            print(f"{where}: --interval 0 costs {b['cpu_s'] / a['cpu_s']:.1f}x the CPU of --interval 40ms")
    if args.growth:
        # The interpreter's start-up is the same in both: the difference per extra delta
        # is what each delta costs once the answer is long.
        for extra in ((), ("--markdown",)):
            short, long = (run("pty", "40ms", extra, rate=args.rate, seconds=n / args.rate) for n in GROWTH)
            marginal = (long["cpu_s"] - short["cpu_s"]) / (GROWTH[1] - GROWTH[0]) * 1e6
            print(f"pty{''.join(' ' + e for e in extra)}: {GROWTH[0]:,} deltas {short['cpu_s'] / GROWTH[0] * 1e6:.0f} us/delta "
                  f"(start-up included), {GROWTH[1]:,} deltas {long['cpu_s'] / GROWTH[1] * 1e6:.0f} us/delta; "
                  f"each delta past the first {GROWTH[0]:,}: {marginal:.0f} us")


if __name__ == "__main__":
    main()
