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

The four chains run in interleaved rounds (``rounds.py``: each round runs every chain
once, in a shuffled order, ``--events`` deltas each). Printed: p50, p90, p99 and max per
chain over all its rounds' events, and the difference to the floor, taken within each
round (both chains saw the same load): the median of the rounds and the spread (target:
p50 within 1 ms and p99 within 5 ms). The first ``--warmup`` events of each run are left
out. Outputs are compared: what sse-tool's chains render must be the answer's text, every
marker in order, and each floor must pass on every marker in order.

(b) Throughput of ``sse-tool frame < anthropic.sse | normalize | render > file`` on the
20 MB corpus, each stage's CPU time and peak memory (max RSS, both from ``os.wait4``; CPU
time is the figure a loaded machine disturbs least), each stage alone, and beside three
plain relays that flush per line (a peer, not a floor: flushing every line costs more
than flushing every input chunk), in interleaved rounds too: medians, and the ratio to
the relays' wall time within a round. Outputs are compared: the pipe must write what
``render`` alone writes reading the raw SSE, and the relays the corpus itself.

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/pipe_bench.py --corpus /tmp/sse-corpus      # 7 rounds: about 4 minutes
    .venv/bin/python bench/pipe_bench.py --quick                       # 5 rounds, 50 deltas a run
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import rounds
from installed import sse_tool_command
from rounds import Sample, digest, figure, ratio, spread

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


def collect(stream, arrived: dict[int, float], kept: list[bytes]) -> None:
    fd = stream.fileno()
    buffer = b""
    while chunk := os.read(fd, 65536):
        now = time.perf_counter()
        kept.append(chunk)
        buffer += chunk
        for m in MARKER.finditer(buffer):
            arrived.setdefault(int(m.group(1)), now)
        buffer = buffer[-8:]  # a marker may be split across reads


def latency_run(kind: str, floor: bool, events: int, gap: float) -> tuple[list[float], bytes]:
    """Per-event latencies of one run of a chain, and what came out of its end."""
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
    kept: list[bytes] = []
    reader = threading.Thread(target=collect, args=(procs[-1].stdout, arrived, kept))
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
    return [arrived.get(i, float("inf")) - schedule.written[i] for i in sorted(schedule.written)], b"".join(kept)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


CHAINS = (
    ("http", False, "fetch | frame | normalize | render --interval 0"),
    ("http", True, "4 plain relays (first reads the socket)"),
    ("pipe", False, "writer -> frame | normalize | render --interval 0"),
    ("pipe", True, "writer -> 3 plain relays"),
)


def checked(label: str, floor: bool, events: int, out: bytes) -> str:
    """What a chain wrote, held to what it must write: sse-tool renders the answer's
    text, every marker on its line; a floor passes every marker on, in order."""
    answer = b"".join(b"m%05d\n" % i for i in range(events))
    if floor:
        if MARKER.findall(out) != [b"%05d" % i for i in range(events)]:
            raise SystemExit(f"outputs differ: {label} did not pass on every marker in order")
    elif out != answer:
        raise SystemExit(f"outputs differ: {label} rendered {len(out)} bytes, not the answer's {len(answer)}")
    return "ok"


def measure_latency(events: int, gap: float, warmup: int, n: int) -> None:
    print(f"(a) per-event latency: {n} interleaved rounds of {events} deltas {gap * 1000:.0f} ms apart per chain, "
          f"the first {warmup} of each run left out (ms)\n")
    latencies: dict[str, list[list[float]]] = {label: [] for _, _, label in CHAINS}

    def run(kind: str, floor: bool, label: str) -> Sample:
        values, out = latency_run(kind, floor, events, gap)
        latencies[label].append(values[warmup:])
        return Sample(0.0, 0.0, checked(label, floor, events, out), len(out))

    rounds.rounds({label: (lambda k=kind, f=floor, lb=label: run(k, f, lb)) for kind, floor, label in CHAINS}, n)
    print(f"{'chain':<52} {'p50':>6} {'p90':>6} {'p99':>6} {'max':>6}")
    for ours, floor in (CHAINS[:2], CHAINS[2:]):
        for _, _, label in (ours, floor):
            pooled = [v for run in latencies[label] for v in run]
            print(f"{label:<52} " + " ".join(f"{percentile(pooled, q) * 1000:6.2f}" for q in (0.5, 0.9, 0.99))
                  + f" {max(pooled) * 1000:6.2f}")
        diff = {q: spread((percentile(a, q) - percentile(b, q)) * 1000
                          for a, b in zip(latencies[ours[2]], latencies[floor[2]])) for q in (0.5, 0.99)}
        met = diff[0.5].median < 1 and diff[0.99].median < 5
        print(f"  difference to the floor within a round, p50 {diff[0.5]:.2f}, p99 {diff[0.99]:.2f}   "
              f"(target p50 < 1, p99 < 5: {'met' if met else 'NOT met'})\n")


def measure_throughput(corpus: Path, n: int) -> None:
    path = corpus / "anthropic.sse"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run python3 bench/make_corpus.py --out {corpus}")
    size = path.stat().st_size
    tool = list(sse_tool_command())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    relay = [sys.executable, "-c", RELAY]
    chains = {
        "frame | normalize | render": [tool + ["frame"], tool + ["normalize"], tool + ["render"]],
        "frame alone": [tool + ["frame"]],
        "normalize alone (raw SSE in)": [tool + ["normalize"]],
        "render alone (raw SSE in)": [tool + ["render"]],
        "3 plain relays, flush per line": [relay] * 3,
    }
    stages: dict[str, list] = {name: [] for name in chains}

    def run(name: str) -> Sample:
        sample, used = rounds.run_pipe([(c, env, None) for c in chains[name]], str(path))
        stages[name].append(used)
        return sample

    results = rounds.rounds({name: (lambda name=name: run(name)) for name in chains}, n, agree=[
        ["frame | normalize | render", "render alone (raw SSE in)"], ["frame alone"],
        ["normalize alone (raw SSE in)"], ["3 plain relays, flush per line"]])
    if results["3 plain relays, flush per line"][0].output != digest(path.read_bytes()):
        raise SystemExit("outputs differ: the relays did not pass the corpus on unchanged")
    print(f"(b) throughput on {path} ({size / 1e6:.1f} MB), {n} interleaved rounds, output to a file; "
          "medians; every stage exited 0\n")
    # A child's peak RSS starts at its parent's size when forked, and exec keeps the peak:
    # what ``true`` reports is the floor under every figure of that column.
    floor = rounds.run_pipe([(["true"], env, None)], os.devnull)[1][0].rss
    print(f"{'chain':<32} {'wall s':>6} {'MB/s':>6}  {'wall / relays':<18} {'CPU s per stage':<18} "
          f"max RSS per stage (MiB; at least {floor / 2**20:.0f}: this process's size at fork)")
    for name, commands in chains.items():
        wall = figure(results, name, "wall").median
        cpu = [spread(run[i].cpu for run in stages[name]).median for i in range(len(commands))]
        rss = [spread(run[i].rss for run in stages[name]).median for i in range(len(commands))]
        versus = format(ratio(results, name, "3 plain relays, flush per line", "wall"), ".2f")
        print(f"{name:<32} {wall:6.2f} {size / wall / 1e6:6.1f}  {versus:<18} "
              f"{' '.join(f'{c:.2f}' for c in cpu):<18} " + " ".join(f"{r / 2**20:.0f}" for r in rss))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/sse-corpus"))
    parser.add_argument("--events", type=int, default=None, help="deltas per chain and round (default 100; --quick 50)")
    parser.add_argument("--gap", type=float, default=0.02, help="seconds between deltas")
    parser.add_argument("--warmup", type=int, default=10, help="deltas left out at the start of each run")
    parser.add_argument("--repeat", type=int, default=None, help="interleaved rounds (default 7; --quick 5, never fewer)")
    parser.add_argument("--quick", action="store_true", help="5 rounds, 50 deltas a run")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    n = max(args.repeat or (rounds.QUICK_ROUNDS if args.quick else 7), rounds.QUICK_ROUNDS)
    events = args.events or (50 if args.quick else 100)
    if events <= args.warmup:
        parser.error(f"--events must be more than --warmup ({args.warmup})")
    if not args.skip_latency:
        measure_latency(events, args.gap, args.warmup, n)
    if not args.skip_throughput:
        measure_throughput(args.corpus, n)


if __name__ == "__main__":
    main()
