#!/usr/bin/env python3
"""The whole pipe, measured: per-event latency beside a floor of plain relays, and throughput.

(a) Latency. A writer sends an Anthropic stream whose text deltas are spaced 20 ms apart
(``--gap``), each carrying a marker ``mNNNNN``; a reader thread timestamps each marker as
it reaches the end of the pipe. Both clocks are this process's ``perf_counter``, so the
latency is the time from the write to the answer text appearing at the end:

* ``http``: a local HTTP server (in this process) -> ``sse-tool fetch URL | frame |
  normalize | render --interval 0`` into a pipe, beside the floor: four plain Python
  relays that copy line by line and flush each line (the first reads the socket);
* ``pipe``: this process writes into ``frame | normalize | render --interval 0``, beside
  three such relays.

Printed: p50, p90, p99 and max per chain, and the difference to the floor (target: p50
within 1 ms and p99 within 5 ms). The first ``--warmup`` events are left out.

(b) Throughput of ``sse-tool frame < anthropic.sse | normalize | render > /dev/null`` on
the 20 MB corpus (best of ``--repeat``), each stage's CPU time and peak memory (max RSS,
both from ``os.wait4``; CPU time is the figure a loaded machine disturbs least), each
stage alone, and beside three plain relays that flush per line (a peer, not a floor:
flushing every line costs more than flushing every input chunk).

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/pipe_bench.py --corpus /tmp/sse-corpus      # about 2 minutes
    .venv/bin/python bench/pipe_bench.py --events 150 --repeat 1       # quicker
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from installed import sse_tool_command

HEAD = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
    b'"role":"assistant","model":"claude-bench","content":[],"stop_reason":null,'
    b'"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
)
TAIL = (
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
    b'"stop_sequence":null},"usage":{"output_tokens":9}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
MARKER = re.compile(rb"m(\d{5})")

RELAY = (
    "import sys\n"
    "r, w = sys.stdin.buffer, sys.stdout.buffer\n"
    "while line := r.readline():\n"
    "    w.write(line)\n"
    "    w.flush()\n"
)
HTTP_RELAY = (
    "import socket, sys\n"
    "host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]\n"
    "s = socket.create_connection((host, port))\n"
    "s.sendall(b'GET %s HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n' % (path.encode(), host.encode()))\n"
    "r, w = s.makefile('rb'), sys.stdout.buffer\n"
    "while line := r.readline():\n"
    "    w.write(line)\n"
    "    w.flush()\n"
)


def delta(i: int) -> bytes:
    return (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"m%05d\\n"}}\n\n' % i)


class Schedule:
    """Writes the stream with a fixed gap between deltas, noting when each was written."""

    def __init__(self, events: int, gap: float) -> None:
        self.events = events
        self.gap = gap
        self.written: dict[int, float] = {}

    def run(self, write) -> None:
        write(HEAD)
        start = time.perf_counter() + 0.3  # let every stage reach its read loop
        for i in range(self.events):
            pause = start + i * self.gap - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            self.written[i] = time.perf_counter()
            write(delta(i))
        write(TAIL)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

        def chunk(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        self.server.schedule.run(chunk)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True


def start_chain(commands: list[list[str]], stdin) -> list[subprocess.Popen]:
    procs = []
    upstream = stdin
    for command in commands:
        proc = subprocess.Popen(command, stdin=upstream, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if upstream not in (None, subprocess.PIPE) and procs:
            upstream.close()
        procs.append(proc)
        upstream = proc.stdout
    return procs


def collect(stream, arrived: dict[int, float]) -> None:
    fd = stream.fileno()
    buffer = b""
    while chunk := os.read(fd, 65536):
        now = time.perf_counter()
        buffer += chunk
        for m in MARKER.finditer(buffer):
            arrived.setdefault(int(m.group(1)), now)
        buffer = buffer[-8:]  # a marker may be split across reads


def latency_run(kind: str, floor: bool, events: int, gap: float) -> list[float]:
    schedule = Schedule(events, gap)
    env_clean = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    os.environ.clear()
    os.environ.update(env_clean)
    relay = [sys.executable, "-c", RELAY]
    tool = sse_tool_command()
    tail = [[*tool, "frame"], [*tool, "normalize"], [*tool, "render", "--interval", "0"]]
    server = None
    if kind == "http":
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.schedule = schedule
        threading.Thread(target=server.serve_forever, daemon=True).start()
        host, port = server.server_address
        first = ([sys.executable, "-c", HTTP_RELAY, host, str(port), "/s"] if floor
                 else [*tool, "fetch", f"http://{host}:{port}/s"])
        commands = [first] + ([relay] * 3 if floor else tail)
        procs = start_chain(commands, subprocess.DEVNULL)
    else:
        commands = [relay] * 3 if floor else tail
        procs = start_chain(commands, subprocess.PIPE)
    arrived: dict[int, float] = {}
    reader = threading.Thread(target=collect, args=(procs[-1].stdout, arrived))
    reader.start()
    if kind == "pipe":
        pipe = procs[0].stdin

        def write(data: bytes) -> None:
            pipe.write(data)
            pipe.flush()

        time.sleep(0.5)  # start-up is not what is measured
        schedule.run(write)
        pipe.close()
    reader.join()
    for proc in procs:
        proc.wait()
    if server is not None:
        server.shutdown()
        server.server_close()
    missing = set(schedule.written) - set(arrived)
    if missing:
        raise SystemExit(f"{kind} floor={floor}: {len(missing)} markers never arrived")
    return [arrived[i] - schedule.written[i] for i in sorted(schedule.written)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure_latency(events: int, gap: float, warmup: int) -> None:
    print(f"(a) per-event latency: {events} deltas {gap * 1000:.0f} ms apart, first {warmup} left out (ms)\n")
    print(f"{'chain':<52} {'p50':>6} {'p90':>6} {'p99':>6} {'max':>6}")
    for kind, label, floor_label in (
        ("http", "fetch | frame | normalize | render --interval 0", "4 plain relays (first reads the socket)"),
        ("pipe", "writer -> frame | normalize | render --interval 0", "writer -> 3 plain relays"),
    ):
        ours = latency_run(kind, False, events, gap)[warmup:]
        floor = latency_run(kind, True, events, gap)[warmup:]
        rows = {}
        for name, values in ((label, ours), (floor_label, floor)):
            rows[name] = [percentile(values, q) * 1000 for q in (0.5, 0.9, 0.99)] + [max(values) * 1000]
            print(f"{name:<52} " + " ".join(f"{v:6.2f}" for v in rows[name]))
        d50 = rows[label][0] - rows[floor_label][0]
        d99 = rows[label][2] - rows[floor_label][2]
        print(f"{'  difference to the floor':<52} {d50:6.2f} {'':>6} {d99:6.2f}   "
              f"(target p50 < 1, p99 < 5: {'met' if d50 < 1 and d99 < 5 else 'NOT met'})\n")


def run_pipe(commands: list[list[str]], path: Path) -> tuple[float, list[int], list[int], list[float]]:
    """(wall seconds, exit codes, max RSS bytes and CPU seconds per stage) of
    ``commands < path > /dev/null``."""
    with open(path, "rb") as src, open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        procs, upstream = [], src
        for i, command in enumerate(commands):
            last = i == len(commands) - 1
            proc = subprocess.Popen(command, stdin=upstream, stdout=sink if last else subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            if procs:
                upstream.close()
            upstream = proc.stdout
            procs.append(proc)
        codes, rss, cpu = [], [], []
        for proc in procs:
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            codes.append(proc.returncode)
            rss.append(usage.ru_maxrss * 1024)
            cpu.append(usage.ru_utime + usage.ru_stime)
        return time.perf_counter() - start, codes, rss, cpu


def measure_throughput(corpus: Path, repeat: int) -> None:
    path = corpus / "anthropic.sse"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run python3 bench/make_corpus.py --out {corpus}")
    size = path.stat().st_size
    tool = list(sse_tool_command())
    relay = [sys.executable, "-c", RELAY]
    chains = {
        "frame | normalize | render": [tool + ["frame"], tool + ["normalize"], tool + ["render"]],
        "frame alone": [tool + ["frame"]],
        "normalize alone (raw SSE in)": [tool + ["normalize"]],
        "render alone (raw SSE in)": [tool + ["render"]],
        "3 plain relays, flush per line": [relay] * 3,
    }
    print(f"(b) throughput on {path} ({size / 1e6:.1f} MB), best of {repeat}, output to /dev/null\n")
    print(f"{'chain':<32} {'s':>6} {'MB/s':>7}  {'exit codes':<12} {'CPU s per stage':<18} max RSS per stage (MiB)")
    for name, commands in chains.items():
        best = None
        for _ in range(repeat):
            result = run_pipe(commands, path)
            if best is None or result[0] < best[0]:
                best = result
        wall, codes, rss, cpu = best
        print(f"{name:<32} {wall:6.2f} {size / wall / 1e6:7.1f}  {str(codes):<12} "
              f"{' '.join(f'{c:.2f}' for c in cpu):<18} " + " ".join(f"{r / 2**20:.0f}" for r in rss))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/sse-corpus"))
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--gap", type=float, default=0.02, help="seconds between deltas")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    if not args.skip_latency:
        measure_latency(args.events, args.gap, args.warmup)
    if not args.skip_throughput:
        measure_throughput(args.corpus, args.repeat)


if __name__ == "__main__":
    main()
