#!/usr/bin/env python3
"""Start-up of each pipe stage beside the floor of ``python -c "import typer, orjson"``.

Runs ``sse-tool STAGE < /dev/null`` (output to /dev/null) for fetch, frame, normalize and
render beside the baseline in interleaved rounds (``rounds.py``: each round runs every
command once, in a shuffled order), so that a change in machine load hits all alike, and
prints per command the median wall time and the median CPU time (user + system, from
``os.wait4``: less sensitive to other load on the machine), each with its ratio to the
baseline taken within a round (the median of the rounds and the spread), and the
instructions one run executes (counted by valgrind, when it is installed: the same
whatever the load; said when it is not), as a ratio to the baseline's. Target: each
stage within 1.3x.

Outputs are compared: every command's exit status is the one expected, and its output
the same in every round; ``sse-tool fetch URL`` must write the body that httpx reads,
and each terminal row must show every word of the answer that ``render`` writes into a
pipe.

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

    .venv/bin/python bench/startup_bench.py            # 30 rounds, then valgrind: 2 minutes
    .venv/bin/python bench/startup_bench.py --quick    # 10 rounds, then valgrind
    .venv/bin/python bench/startup_bench.py --runs 10 --no-valgrind
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple

import rounds
from installed import sse_tool_command
from rounds import Sample, digest, figure, ratio, shown

STAGES = ("fetch", "frame", "normalize", "render")
BASELINE = [sys.executable, "-c", "import typer, orjson"]
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "anthropic-thinking.sse"


class Command(NamedTuple):
    argv: list[str]
    stdin: str = os.devnull
    #: stdout a pseudo-terminal (read until the command closes it), else a file
    tty: bool = False
    #: the exit statuses it may end with
    ok: tuple[int, ...] = (0,)


def run_once(command: Command, answer: str) -> Sample:
    """One run: its wall and CPU time, and a digest of its stdout (of a terminal row: the
    words of the answer it did not show, which must be none)."""
    with open(command.stdin, "rb") as stdin, open(os.devnull, "wb") as null:
        if command.tty:
            reader, out = pty.openpty()
            start = time.perf_counter()
            proc = subprocess.Popen(command.argv, stdin=stdin, stdout=out, stderr=out)
        else:
            reader, out = os.pipe()
            start = time.perf_counter()
            proc = subprocess.Popen(command.argv, stdin=stdin, stdout=out, stderr=null)
        os.close(out)
        kept = []
        while True:
            try:
                chunk = os.read(reader, 65536)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not chunk:
                break
            kept.append(chunk)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped above
        os.close(reader)
    if code not in command.ok:
        raise SystemExit(f"{' '.join(command.argv)} exited {code}")
    data = b"".join(kept)
    output = shown(answer, data, ' '.join(command.argv)) if command.tty else digest(data)
    return Sample(usage.ru_utime + usage.ru_stime, wall, output, len(data))


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
    # no URL: fetch stops at its usage error; an empty input is truncated (3)
    return {"typer+orjson": Command(BASELINE)} | {
        s: Command([*tool, s], ok=(2,) if s == "fetch" else (3,)) for s in STAGES} | {
        "fetch URL": Command([*tool, "fetch", url], ok=(0, 3)),
        "httpx URL": Command([sys.executable, "-c", "import sys, typer, orjson, httpx; "
                              f"sys.stdout.buffer.write(httpx.get({url!r}).content)"]),
        "render, terminal": Command([*tool, "render"], str(SAMPLE), tty=True),
        "render --markdown, terminal": Command([*tool, "render", "--markdown"], str(SAMPLE), tty=True),
    }


def instructions(commands: dict[str, Command]) -> dict[str, int]:
    """Instructions executed per command, counted by valgrind: the same on a busy machine
    and an idle one (system calls and disk waits are not in it). Not for the terminal rows."""
    return {name: rounds.instructions(c.argv, stdin=c.stdin) for name, c in commands.items() if not c.tty}


def measure(commands: dict[str, Command], n: int) -> dict[str, list[Sample]]:
    answer = subprocess.run([*sse_tool_command(), "render"], stdin=open(SAMPLE, "rb"), capture_output=True,
                            check=True).stdout.decode()
    runs = {name: (lambda c=c: run_once(c, answer)) for name, c in commands.items()}
    for run in runs.values():  # warm the page cache and .pyc files
        run()
    return rounds.rounds(runs, n, agree=[["fetch URL", "httpx URL"], ["render, terminal", "render --markdown, terminal"]]
                         + [[name] for name in commands if "URL" not in name and "terminal" not in name])


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
    parser.add_argument("--runs", type=int, default=None, help="interleaved rounds (default 30; --quick 10)")
    parser.add_argument("--quick", action="store_true", help="10 rounds")
    parser.add_argument("--no-valgrind", action="store_true",
                        help="skip the instruction counts (about a minute under valgrind)")
    args = parser.parse_args()
    n = max(args.runs or (10 if args.quick else 30), rounds.QUICK_ROUNDS)

    todo = commands(serve())
    results = measure(todo, n)
    counts = {} if args.no_valgrind or not rounds.valgrind() else instructions(todo)
    base = "typer+orjson"
    print(f"start-up, {n} interleaved rounds, stdin and stdout /dev/null (terminal rows: {SAMPLE.name} in, "
          "a pseudo-terminal out); ms: the median; ratio to the baseline within a round: median "
          "[lowest-highest]" + ("; instructions: one run under valgrind" if counts else "") + "\n")
    labels = {"typer+orjson": 'python -c "import typer, orjson"',
              "httpx URL": "  ... + httpx.get(URL)"}
    print(f"{'command':<36} {'wall ms':>8} {'ratio':>17} {'cpu ms':>8} {'ratio':>17}"
          + (f" {'instr M':>8} {'ratio':>6}" if counts else ""))
    for name in todo:
        wall, cpu = figure(results, name, "wall"), figure(results, name)
        line = (f"{labels.get(name, f'sse-tool {name}'):<36} {wall.median * 1000:8.1f} "
                f"{format(ratio(results, name, base, 'wall'), '.2f'):>17} {cpu.median * 1000:8.1f} "
                f"{format(ratio(results, name, base), '.2f'):>17}")
        if name in counts:
            line += f" {counts[name] / 1e6:8.1f} {counts[name] / counts[base]:6.2f}"
        print(line)
    print("\nimported beyond typer + orjson (top-level names; then sse_tool modules):")
    for stage, (tops, ours) in extra_imports().items():
        print(f"  {stage}: {', '.join(tops) or '-'}")
        print(f"  {' ' * len(stage)}  sse_tool: {', '.join(m[len('sse_tool.'):] for m in ours)}")


if __name__ == "__main__":
    main()
