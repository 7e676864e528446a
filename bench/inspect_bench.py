#!/usr/bin/env python3
"""inspect beside normalize, on the same 20 MB streams, in one run.

For each generated corpus (anthropic.sse, openai.sse) this makes a recording as
``fetch --record`` makes one (``--chunks event``: one chunk per event, as a live stream
arrives, times 1 ms apart; ``--chunks 16k``: 16 KiB reads, as from a fast server), then
measures, interleaved, best of ``--repeat``, the CPU time (user + system, from
``os.wait4``: the figure a loaded machine disturbs least) of:

* ``sse-tool normalize STREAM > /dev/null``: the baseline, the same bytes as a file;
* ``sse-tool inspect RECORDING``: the report of the recording, into a pipe (plain text);
* ``sse-tool inspect --json RECORDING`` and ``sse-tool inspect STREAM`` (no timing);
* ``sse-tool replay --speed 0 RECORDING | sse-tool normalize``: normalize reading the
  recording the only way it can, both processes' CPU time added;

and prints each with its ratio to normalize on the bare stream (target: inspect at most
1.5x). It also checks that inspect's verdict and text sizes agree with normalize's.

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/inspect_bench.py --corpus /tmp/sse-corpus
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

from installed import sse_tool_command
from sse_tool.recording import RecordingWriter
from sse_tool.replay import event_ends

CORPORA = ("anthropic", "openai")


def make_recording(data: bytes, path: Path, chunks: str) -> int:
    """Write ``data`` as a recording of one exchange; the number of chunks."""
    if chunks == "event":
        ends = event_ends(data)
    else:
        size = int(chunks.rstrip("k")) * 1024
        ends = list(range(size, len(data), size)) + [len(data)]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        writer = RecordingWriter(f)
        writer.start("2026-01-01T00:00:00.000000Z")
        writer.request("POST", "https://api.example.com/v1/stream", [("content-type", "application/json")], b"{}")
        writer.response("HTTP/1.1", 200, "OK", [("content-type", "text/event-stream")])
        start, t = 0, 0.4
        for end in ends:
            writer.chunk(t, data[start:end])
            start, t = end, t + 0.001
        writer.end(t, "complete")
    return len(ends)


def cpu(args: list[str], stdout) -> float:
    """User + system CPU seconds of one run of ``sse-tool ARGS``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([*sse_tool_command(), *args], stdout=stdout, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3, 4):
        raise SystemExit(f"sse-tool {' '.join(args)} exited {code}")
    return usage.ru_utime + usage.ru_stime


def cpu_pipe(first: list[str], second: list[str], stdout) -> float:
    """User + system CPU seconds of ``sse-tool FIRST | sse-tool SECOND``, both processes."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    one = subprocess.Popen([*sse_tool_command(), *first], stdout=subprocess.PIPE, env=env)
    two = subprocess.Popen([*sse_tool_command(), *second], stdin=one.stdout, stdout=stdout,
                           stderr=subprocess.DEVNULL, env=env)
    one.stdout.close()
    total = 0.0
    for proc in (one, two):
        _, _, usage = os.wait4(proc.pid, 0)
        total += usage.ru_utime + usage.ru_stime
    return total


def agree(stream: Path, recording: Path) -> str:
    """inspect's verdict and answer size beside normalize's end record and answer."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    out = subprocess.run([*sse_tool_command(), "normalize", str(stream)], capture_output=True, env=env).stdout
    records = [json.loads(line) for line in out.splitlines()]
    answer = sum(len(r["text"]) for r in records if r.get("channel") == "answer")
    end = records[-1]
    report = json.loads(subprocess.run([*sse_tool_command(), "inspect", "--json", str(recording)],
                                       capture_output=True, env=env).stdout.splitlines()[0])
    same = report["verdict"] == end["status"] and report["sizes"]["answer_chars"] == answer
    return f"{'agree' if same else 'DISAGREE'} ({report['verdict']}, {answer:,} answer characters)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="/tmp/sse-corpus", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunks", default="event,16k", help="recording chunkings: event, or NNk")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in CORPORA:
            stream = args.corpus / f"{name}.sse"
            data = stream.read_bytes()
            for chunks in args.chunks.split(","):
                recording = Path(tmp) / f"{name}-{chunks}.rec"
                count = make_recording(data, recording, chunks)
                contenders = {
                    "normalize STREAM": ["normalize", str(stream)],
                    "inspect RECORDING": ["inspect", str(recording)],
                    "inspect --json RECORDING": ["inspect", "--json", str(recording)],
                    "inspect STREAM": ["inspect", str(stream)],
                }
                pipe = "replay RECORDING | normalize"
                best = {label: float("inf") for label in [*contenders, pipe]}
                with open(os.devnull, "wb") as null:
                    for _ in range(args.repeat):  # interleaved: each round runs every contender
                        for label, cmd in contenders.items():
                            best[label] = min(best[label], cpu(cmd, null))
                        best[pipe] = min(best[pipe], cpu_pipe(["replay", "--speed", "0", str(recording)],
                                                              ["normalize"], null))
                print(f"{name}.sse, {len(data) / 1e6:.1f} MB, recording of {count:,} chunks ({chunks}); "
                      f"{agree(stream, recording)}")
                base = best["normalize STREAM"]
                for label, seconds in best.items():
                    print(f"  {label:26} {seconds:6.2f} s CPU   {seconds / base:5.2f}x")


if __name__ == "__main__":
    main()
