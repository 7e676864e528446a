#!/usr/bin/env python3
"""Start-up of each pipe stage beside the floor of ``python -c "import typer, orjson"``.

Runs ``sse-tool STAGE < /dev/null`` (output to /dev/null) for fetch, frame, normalize and
render, round-robin with the baseline so that a change in machine load hits all alike,
and prints per command the median wall time and the median CPU time (user + system, from
``os.wait4``: less sensitive to other load on the machine), and the instructions one run
executes (counted by valgrind, when it is installed: the same whatever the load), each
as a ratio to the baseline. Target: each stage within 1.3x.

``fetch`` without a URL stops at the usage error, after its imports; httpx loads only
when a request is made, so two more rows show the cost of a real one (a tiny body from a
server in this process on 127.0.0.1): ``sse-tool fetch URL``, and the same request made
by httpx itself after ``import typer, orjson``, the floor for any typer command built on
httpx. Two more draw a sample on a pseudo-terminal, as a person sees ``render``: its
start-up with rich, and with ``--markdown``.

The sources are compiled to bytecode first, as an install has them (see installed.py).

Then lists, per stage, the modules it imports beyond what ``import typer, orjson`` loads
(top-level package names, stdlib included; sse_tool's own modules listed apart), so that
a lazy import can be seen to be lazy.

    .venv/bin/python bench/startup_bench.py            # 30 runs each, then valgrind: 2 minutes
    .venv/bin/python bench/startup_bench.py --runs 10 --no-valgrind
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple

from installed import sse_tool_command

STAGES = ("fetch", "frame", "normalize", "render")
BASELINE = [sys.executable, "-c", "import typer, orjson"]
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "anthropic-thinking.sse"


class Command(NamedTuple):
    argv: list[str]
    stdin: str = os.devnull
    #: stdout a pseudo-terminal (read until the command closes it), else /dev/null
    tty: bool = False


def run_once(command: Command) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run."""
    with open(command.stdin, "rb") as stdin:
        reader, out = pty.openpty() if command.tty else (None, os.open(os.devnull, os.O_WRONLY))
        start = time.perf_counter()
        proc = subprocess.Popen(command.argv, stdin=stdin, stdout=out, stderr=out)
        os.close(out)
        while reader is not None:
            try:
                if not os.read(reader, 65536):
                    break
            except OSError:  # EIO: the terminal's other side is closed
                break
        _, _, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = 0  # reaped above
        if reader is not None:
            os.close(reader)
    return wall, usage.ru_utime + usage.ru_stime


class _Tiny(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"data: hi\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def serve() -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Tiny)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return "http://%s:%d/" % server.server_address


def commands(url: str) -> dict[str, Command]:
    tool = [*sse_tool_command()]
    return {"typer+orjson": Command(BASELINE)} | {s: Command([*tool, s]) for s in STAGES} | {
        "fetch URL": Command([*tool, "fetch", url]),
        "httpx URL": Command([sys.executable, "-c", f"import typer, orjson, httpx; httpx.get({url!r})"]),
        "render, terminal": Command([*tool, "render"], str(SAMPLE), tty=True),
        "render --markdown, terminal": Command([*tool, "render", "--markdown"], str(SAMPLE), tty=True),
    }


def instructions(commands: dict[str, Command]) -> dict[str, int]:
    """Instructions executed per command, counted by valgrind: the same on a busy machine
    and an idle one (system calls and disk waits are not in it). Not for the terminal rows."""
    counts = {}
    for name, command in commands.items():
        if command.tty:
            continue
        with open(command.stdin, "rb") as stdin:
            p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                *command.argv], stdin=stdin, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True,
                               env=os.environ | {"PYTHONHASHSEED": "0"})
        counts[name] = int(re.search(r"Collected : (\d+)", p.stderr).group(1))
    return counts


def measure(commands: dict[str, Command], runs: int) -> dict[str, tuple[float, float]]:
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for name, command in commands.items():  # warm the page cache and .pyc files
        run_once(command)
    for _ in range(runs):
        for name, command in commands.items():
            samples[name].append(run_once(command))
    return {name: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
            for name, s in samples.items()}


PROBE = """
import atexit, json, sys
def report():
    sys.__stderr__.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")
atexit.register(report)
sys.argv = ["sse-tool", *sys.argv[1:]]
from sse_tool.cli import main
main()
"""


def modules_of(command: list[str], stdin: str = os.devnull) -> set[str]:
    with open(stdin, "rb") as inp:
        p = subprocess.run(command, stdin=inp, capture_output=True, text=True)
    line = next(line for line in p.stderr.splitlines() if line.startswith("MODULES "))
    return set(json.loads(line[len("MODULES "):]))


def extra_imports() -> dict[str, tuple[list[str], list[str]]]:
    base = modules_of([sys.executable, "-c",
                       "import atexit, json, sys, typer, orjson\n"
                       "atexit.register(lambda: sys.__stderr__.write('MODULES ' + json.dumps(sorted(sys.modules)) + '\\n'))"])
    out = {}
    for stage in STAGES:
        extra = modules_of([sys.executable, "-c", PROBE, stage]) - base
        loaded = {m.split(".")[0] for m in base}
        # a new package by its name; a new part of a package already loaded by its full name
        tops = sorted({m if m.split(".")[0] in loaded else m.split(".")[0] for m in extra
                       if not m.startswith("sse_tool")})
        ours = sorted(m for m in extra if m.startswith("sse_tool."))
        out[stage] = (tops, ours)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--no-valgrind", action="store_true",
                        help="skip the instruction counts (about a minute under valgrind)")
    args = parser.parse_args()

    todo = commands(serve())
    results = measure(todo, args.runs)
    counts = {} if args.no_valgrind or not shutil.which("valgrind") else instructions(todo)
    base_wall, base_cpu = results["typer+orjson"]
    print(f"start-up, median of {args.runs} runs (round-robin), stdin and stdout /dev/null"
          f" (terminal rows: {SAMPLE.name} in, a pseudo-terminal out); instructions: one run"
          " under valgrind\n")
    labels = {"typer+orjson": 'python -c "import typer, orjson"',
              "httpx URL": "  ... + httpx.get(URL)"}
    print(f"{'command':<36} {'wall ms':>8} {'ratio':>6} {'cpu ms':>8} {'ratio':>6}"
          + (f" {'instr M':>8} {'ratio':>6}" if counts else ""))
    for name, (wall, cpu) in results.items():
        label = labels.get(name, f"sse-tool {name}")
        line = f"{label:<36} {wall * 1000:8.1f} {wall / base_wall:6.2f} {cpu * 1000:8.1f} {cpu / base_cpu:6.2f}"
        if name in counts:
            line += f" {counts[name] / 1e6:8.1f} {counts[name] / counts['typer+orjson']:6.2f}"
        print(line)
    print("\nimported beyond typer + orjson (top-level names; then sse_tool modules):")
    for stage, (tops, ours) in extra_imports().items():
        print(f"  {stage}: {', '.join(tops) or '-'}")
        print(f"  {' ' * len(stage)}  sse_tool: {', '.join(m[len('sse_tool.'):] for m in ours)}")


if __name__ == "__main__":
    main()
