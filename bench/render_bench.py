"""How much ``sse-tool render`` paints and how much CPU it burns under a fast stream.

A writer feeds channel records at a fixed rate (default 2,000 deltas per second for 10 s)
into ``sse-tool render --stats``, with stdout on a pseudo-terminal (the rich view, 80x24)
and into a pipe (the plain view), each at the default ``--interval 40ms`` and, for
comparison, at ``--interval 0`` (a paint per delta, what an unthrottled renderer does).
Reported per run: paints and paints per second (from ``--stats``, over the painter's
lifetime, so the interpreter's start-up is not counted), render's CPU time
(user + system, from ``os.wait4``), and CPU time as a share of the wall time.

The runs go in interleaved rounds (``rounds.py``: each round runs every one once, in a
shuffled order; at least 5): each figure is the median of the rounds, and the cost of
``--interval 0`` over ``40ms`` is taken within a round, with its spread. Outputs are
compared: into a pipe, render must write the answer's text exactly, at either interval;
on the terminal it must show every word of it.

    .venv/bin/python bench/render_bench.py [--rate 2000] [--seconds 10] [--runs pty-40ms,pipe-40ms,...] [--growth]
    .venv/bin/python bench/render_bench.py --quick       # 5 rounds of 2 s runs: about a minute

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
import termios
import threading
import time

import rounds
from installed import sse_tool_command
from rounds import Sample, digest, figure, ratio, spread, shown

RUNS = {"pty-40ms": ("pty", "40ms"), "pty-0": ("pty", "0"), "pipe-40ms": ("pipe", "40ms"), "pipe-0": ("pipe", "0"),
        "pty-markdown-40ms": ("pty", "40ms", ("--markdown",))}
#: ``--growth``: the same rate, a short and a long answer: CPU per delta must not grow
GROWTH = (1000, 50000)


def text(i: int) -> str:
    return f"word{i} " if i % 12 else f"word{i}.\n"


def record(i: int) -> bytes:
    return json.dumps({"type": "delta", "channel": "answer", "text": text(i)}).encode() + b"\n"


def answer(total: int) -> str:
    return "".join(text(i) for i in range(total))


def drain(fd: int, kept: list) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO once the pty's other side is closed
            return
        if not chunk:
            return
        kept.append(chunk)


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
    kept: list[bytes] = []
    reader = threading.Thread(target=drain, args=(out_fd, kept), daemon=True)
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
    if proc.returncode != 0:
        raise SystemExit(f"render --interval {interval} {' '.join(extra)} ({where}) exited {proc.returncode}:\n{stderr}")
    out = b"".join(kept)
    # into a pipe: the answer's text itself; on a terminal: every word of it shown
    output = shown(answer(total), out, f"render {' '.join(extra)} on a terminal") if where == "pty" else digest(out)
    return {"sample": Sample(cpu, wall, output, len(out)), "paints": paints, "paints/s": paints / alive}



def name_of(key: str) -> str:
    where, interval, *extra = RUNS[key]
    return f"{where}, --interval {interval}" + "".join(f" {e}" for e in (extra[0] if extra else ()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=None, help="per run (default 10; --quick 2)")
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--repeat", type=int, default=None, help="interleaved rounds (at least 5)")
    parser.add_argument("--quick", action="store_true", help="5 rounds of 2 s runs")
    parser.add_argument("--growth", action="store_true",
                        help=f"also CPU per delta at {GROWTH[0]:,} and {GROWTH[1]:,} deltas (pty, plain and Markdown)")
    args = parser.parse_args()
    n = max(args.repeat or rounds.QUICK_ROUNDS, rounds.QUICK_ROUNDS)
    seconds = args.seconds or (2 if args.quick else 10)
    keys = args.runs.split(",")
    extra: dict[str, list[dict]] = {key: [] for key in keys}

    def one(key: str, **kw) -> Sample:
        got = run(*RUNS[key], rate=args.rate, seconds=seconds, **kw)
        extra[key].append(got)
        return got["sample"]

    results = rounds.rounds({key: (lambda key=key: one(key)) for key in keys}, n,
                            agree=[[k for k in keys if k.startswith("pipe")]] + [[k] for k in keys if k.startswith("pty")])
    pipe = [k for k in keys if k.startswith("pipe")]
    written = answer(int(args.rate * seconds))
    written += "" if written.endswith("\n") else "\n"  # the plain view ends the answer's last line
    if pipe and results[pipe[0]][0].output != digest(written.encode()):
        raise SystemExit("outputs differ: render into a pipe did not write the answer's text")
    print(f"{args.rate} deltas/s for {seconds:g} s ({int(args.rate * seconds)} deltas), {n} interleaved rounds; "
          "medians (exit 0 and the answer's text checked in every run)")
    print(f"{'run':<34} {'paints':>7} {'paints/s':>9} {'cpu s':>7} {'cpu/wall':>9} {'wall s':>7} {'out KB':>8}")
    for key in keys:
        cpu, wall = figure(results, key), figure(results, key, "wall")
        share = spread(s.cpu / s.wall for s in results[key]).median
        paints = spread(e["paints"] for e in extra[key]).median
        rate = spread(e["paints/s"] for e in extra[key]).median
        out = spread(s.count for s in results[key]).median
        print(f"{name_of(key):<34} {paints:>7.0f} {rate:>9.1f} {cpu.median:>7.2f} {share:>8.1%} {wall.median:>7.2f} "
              f"{out / 1024:>8.0f}")
    for where in ("pty", "pipe"):
        if f"{where}-40ms" in keys and f"{where}-0" in keys:
            r = ratio(results, f"{where}-0", f"{where}-40ms")
            print(f"{where}: --interval 0 costs {r.median:.1f}x the CPU of --interval 40ms (within a round: {r})")
    if args.growth:
        growth(args.rate, n)


def growth(rate: int, n: int) -> None:
    """The interpreter's start-up is the same in both: the difference per extra delta,
    taken within a round, is what each delta costs once the answer is long."""
    runs = {}
    for extra in ((), ("--markdown",)):
        for total in GROWTH:
            runs[(extra, total)] = lambda extra=extra, total=total: run(
                "pty", "40ms", extra, rate=rate, seconds=total / rate)["sample"]
    results = rounds.rounds(runs, n, agree=[[key] for key in runs])
    for extra in ((), ("--markdown",)):
        short, long = results[(extra, GROWTH[0])], results[(extra, GROWTH[1])]
        marginal = spread((b.cpu - a.cpu) / (GROWTH[1] - GROWTH[0]) * 1e6 for a, b in zip(short, long))
        per = [spread(s.cpu / total * 1e6 for s in results[(extra, total)]).median for total in GROWTH]
        print(f"pty{''.join(' ' + e for e in extra)}: {GROWTH[0]:,} deltas {per[0]:.0f} us/delta "
              f"(start-up included), {GROWTH[1]:,} deltas {per[1]:.0f} us/delta; "
              f"each delta past the first {GROWTH[0]:,}: {marginal:.0f} us")


if __name__ == "__main__":
    main()
