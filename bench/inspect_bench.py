#!/usr/bin/env python3
"""inspect beside normalize, on the same 20 MB streams and recordings, in one run.

For each generated corpus (anthropic.sse, openai.sse) this makes a recording as
``fetch --record`` makes one (``--chunks event``: one chunk per event, as a live stream
arrives, times 1 ms apart; ``--chunks 16k``: 16 KiB reads, as from a fast server), then
runs, in interleaved rounds (``rounds.py``: each round runs every contender once, in a
shuffled order; ratios within a round; the median and spread of the rounds), as processes
with their CPU time (user + system):

* ``sse-tool normalize RECORDING``: normalize on the recording (its body is the stream);
* ``sse-tool normalize STREAM``: normalize on the bare stream, the same bytes as a file;
* ``sse-tool inspect RECORDING`` (the report for a person, into a file), ``inspect --json
  RECORDING`` and ``inspect STREAM`` (no timing);
* ``sse-tool replay --speed 0 RECORDING | sse-tool normalize``, both processes' CPU;
* with ``--before REF``: ``inspect RECORDING`` as commit REF has it, the same way.

Outputs are compared: normalize's records of the recording, of the stream and through
replay must be the same bytes, each inspect output the same in every round (and the
same as REF's), and inspect's verdict and answer size must be normalize's. The target:
inspect on a recording at most 1.5x normalize on it; the bare stream's ratio is printed
beside it.

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/inspect_bench.py --corpus /tmp/sse-corpus [--quick] [--before REF]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

import rounds
from rounds import CORPORA, figure, ratio, run_pipe, run_process
from sse_tool.recording import RecordingWriter
from sse_tool.replay import event_ends

#: exit codes of a run on a corpus: complete (or, for a slice, truncated)
OK = (0, 3)


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


def agree(tree: rounds.Tree, stream: Path, recording: Path) -> str:
    """inspect's verdict and answer size beside normalize's end record and answer."""
    out = subprocess.run([*tree.command(), "normalize", str(stream)], capture_output=True,
                         env=tree.env(), cwd=tree.root).stdout
    records = [json.loads(line) for line in out.splitlines()]
    answer = sum(len(r["text"]) for r in records if r.get("channel") == "answer")
    report = json.loads(subprocess.run([*tree.command(), "inspect", "--json", str(recording)],
                                       capture_output=True, env=tree.env(), cwd=tree.root).stdout.splitlines()[0])
    if report["verdict"] != records[-1]["status"] or report["sizes"]["answer_chars"] != answer:
        raise SystemExit(f"inspect and normalize disagree on {recording.name}: inspect says "
                         f"{report['verdict']} with {report['sizes']['answer_chars']} answer characters, "
                         f"normalize {records[-1]['status']} with {answer}")
    return f"both {report['verdict']}, {answer:,} answer characters"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="/tmp/sse-corpus", type=Path)
    parser.add_argument("--rounds", type=int, default=None, help="rounds per row (default 7; --quick 5)")
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    parser.add_argument("--chunks", default="event,16k", help="recording chunkings: event, or NNk")
    parser.add_argument("--before", default=None, help="also run inspect as this commit has it")
    args = parser.parse_args()
    n = max(rounds.QUICK_ROUNDS, args.rounds or (rounds.QUICK_ROUNDS if args.quick else 7))
    now = rounds.tree(None)
    before = rounds.tree(args.before) if args.before else None
    print(f"{n} interleaved rounds; CPU time (user + system), median [lowest-highest] of the "
          f"ratios taken within a round" + (f"; before: {before.label}" if before else ""))

    def run(tree: rounds.Tree, *argv: str):
        return lambda: run_process([*tree.command(), *argv], env=tree.env(), cwd=tree.root, ok=OK)

    with tempfile.TemporaryDirectory() as tmp:
        for name, stream, data in rounds.corpora(args.corpus, CORPORA):
            for chunks in args.chunks.split(","):
                recording = Path(tmp) / f"{name}-{chunks}.rec"
                count = make_recording(data, recording, chunks)
                pipe = [([*now.command(), "replay", "--speed", "0", str(recording)], now.env(), now.root),
                        ([*now.command(), "normalize"], now.env(), now.root)]
                contenders = {
                    "normalize RECORDING": run(now, "normalize", str(recording)),
                    "normalize STREAM": run(now, "normalize", str(stream)),
                    "inspect RECORDING": run(now, "inspect", str(recording)),
                    "inspect --json RECORDING": run(now, "inspect", "--json", str(recording)),
                    "inspect STREAM": run(now, "inspect", str(stream)),
                    "replay RECORDING | normalize": lambda: run_pipe(pipe, "/dev/null", ok=OK)[0],
                }
                agreeing = [["normalize RECORDING", "normalize STREAM", "replay RECORDING | normalize"],
                            ["inspect RECORDING"], ["inspect --json RECORDING"], ["inspect STREAM"]]
                if before is not None:
                    contenders[f"inspect RECORDING, {before.label}"] = run(before, "inspect", str(recording))
                    agreeing[1].append(f"inspect RECORDING, {before.label}")
                results = rounds.rounds(contenders, n, agree=agreeing)
                print(f"a recording of {count:,} chunks ({chunks}); "
                      f"{agree(now, stream, recording)}")
                print(f"  {'':34} {'CPU':>8}   {'/ normalize RECORDING':>22}   {'/ normalize STREAM':>22}")
                for label in results:
                    print(f"  {label:34} {figure(results, label).median:6.2f} s   "
                          f"{format(ratio(results, label, 'normalize RECORDING')):>22}   "
                          f"{format(ratio(results, label, 'normalize STREAM')):>22}")


if __name__ == "__main__":
    main()
