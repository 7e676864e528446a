#!/usr/bin/env python3
"""check beside normalize, on the same bytes, in one run: the ratio of their times.

For each generated 20 MB corpus (anthropic.sse, openai.sse), and the same corpus with a
finding in every event (each event written as ``date: x`` + its data, an unknown field),
this measures:

* in process: ``check.Checker`` against ``pipeline.RecordReader`` (framing and
  normalization), both fed the same chunks (64 KiB, then 4 KiB);
* as processes: ``sse-tool check --format json`` against ``sse-tool normalize`` (file on
  stdin, output to a file, start-up included).

The six contenders run in interleaved rounds (``rounds.py``: each round runs every one
once, in a shuffled order), and each ratio, check's time over normalize's (the target:
at most 2), is taken within a round: the median of the rounds and the spread. Times are
CPU time (user + system), which a shared machine's load disturbs far less than wall time.
Outputs are compared first: the findings ``Checker`` gives at either chunk size, written
as ``--format json`` writes them, must be the bytes the check process writes, and the
records of ``RecordReader`` the bytes the normalize process writes; a fast wrong answer
fails the bench. Generate the corpus first (it stays out of git):

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/check_bench.py --corpus /tmp/sse-corpus      # 7 rounds
    .venv/bin/python bench/check_bench.py --quick                       # 5 rounds: 3 minutes
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import orjson

import rounds
from installed import sse_tool_command
from rounds import digest, ratio, run_process, timed
from sse_tool.check import Checker, report
from sse_tool.model import to_record
from sse_tool.pipeline import RecordReader
from sse_tool.wire import dumps

CHUNKS = (65536, 4096)
CHECK = ["check", "--format", "json", "--max-per-rule", "0"]
#: the name ``--format json`` gives stdin
STDIN = "<stdin>"
#: exit codes: normalize's complete or truncated (a slice of a corpus), check's findings
OK = (0, 3)


def chunks(data: bytes, size: int):
    return (data[i:i + size] for i in range(0, len(data), size))


def check_in_process(data: bytes, size: int, out=None) -> int:
    """``Checker`` over the chunks; given ``out`` (an untimed run), each finding too."""
    checker = Checker()
    count = 0
    for chunk in [*chunks(data, size), None]:
        findings = checker.feed(chunk) if chunk is not None else checker.close()
        count += len(findings)
        if out is not None:
            for f in findings:
                out(orjson.dumps(report.record(f, STDIN)) + b"\n")
    return count


def normalize_in_process(data: bytes, size: int, out=None) -> int:
    """``RecordReader`` over the chunks; given ``out`` (an untimed run), each record too."""
    reader = RecordReader()
    count = 0
    for chunk in [*chunks(data, size), None]:
        records = reader.feed(chunk) if chunk is not None else reader.close()
        count += len(records)
        if out is not None:
            for r in records:
                out(dumps(to_record(r)))
    return count


def written(run, data: bytes, size: int) -> str:
    """A digest of what ``run`` writes for ``data`` fed in chunks of ``size``."""
    parts: list[bytes] = []
    run(data, size, parts.append)
    return digest(b"".join(parts))


def as_process(stage: list[str], path: Path, ok: tuple[int, ...] = OK):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return run_process([*sse_tool_command(), *stage], stdin=str(path), env=env, ok=ok)


def with_findings(data: bytes) -> bytes:
    """The same stream with an unknown field in every event: one finding per event."""
    return data.replace(b"\n\ndata: ", b"\n\ndate: x\ndata: ").replace(b"\n\nevent: ", b"\n\ndate: x\nevent: ")


def measure(label: str, data: bytes, path: Path, n: int) -> float:
    """One corpus: the outputs compared, then the six contenders in ``n`` rounds. Returns
    the worst median ratio."""
    print(f"  {label}: {len(data) / 1e6:.1f} MB")
    process = {"normalize": as_process(["normalize"], path), "check": as_process(CHECK, path, (0, 10))}
    for size in CHUNKS:
        for name, run in (("normalize", normalize_in_process), ("check", check_in_process)):
            if written(run, data, size) != process[name].output:
                raise SystemExit(f"outputs differ: {name} in process ({size} B chunks) and sse-tool {name}")
    runs = {}
    for size in CHUNKS:
        runs[f"normalize {size}"] = lambda size=size: timed(lambda: normalize_in_process(data, size))
        runs[f"check {size}"] = lambda size=size: timed(lambda: check_in_process(data, size))
    runs["normalize process"] = lambda: as_process(["normalize"], path)
    runs["check process"] = lambda: as_process(CHECK, path, (0, 10))
    results = rounds.rounds(runs, n, agree=[["normalize process"], ["check process"]])
    worst = 0.0
    for key, row in [(str(size), f"in process, {size // 1024} KiB chunks") for size in CHUNKS] + [
            ("process", "as processes, to a file")]:
        worst = max(worst, _row(row, results, key, len(data)))
    return worst


def _row(label: str, results: dict, key: str, size: int) -> float:
    n, c = (rounds.figure(results, f"{name} {key}") for name in ("normalize", "check"))
    r = ratio(results, f"check {key}", f"normalize {key}")
    records, findings = results[f"normalize {key}"][0].count, results[f"check {key}"][0].count
    what = "bytes" if key == "process" else "records"
    print(f"    {label:<26} normalize {n.median:5.2f} s ({size / n.median / 1e6:5.1f} MB/s, {records:,} {what})"
          f"   check {c.median:5.2f} s ({size / c.median / 1e6:5.1f} MB/s, "
          f"{findings:,} {'bytes' if key == 'process' else 'findings'})   ratio {r}")
    return r.median


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/sse-corpus"),
                    help="directory written by make_corpus.py (default: /tmp/sse-corpus)")
    ap.add_argument("--repeat", type=int, default=None, help="interleaved rounds (default 7; --quick 5, never fewer)")
    ap.add_argument("--quick", action="store_true", help="5 rounds")
    ap.add_argument("--only", choices=rounds.CORPORA, action="append", help="measure only this corpus")
    args = ap.parse_args()
    n = max(args.repeat or (rounds.QUICK_ROUNDS if args.quick else 7), rounds.QUICK_ROUNDS)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {n} interleaved rounds, CPU time, "
          "median [lowest-highest]; ratio = check / normalize within a round (target: at most 2)")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, plain in rounds.corpora(args.corpus, tuple(args.only or rounds.CORPORA)):
            noisy_path = Path(tmp) / f"{name}-findings.sse"
            noisy_path.write_bytes(with_findings(plain))
            worst = max(worst, measure("as generated", plain, path, n))
            worst = max(worst, measure("a finding in every event", noisy_path.read_bytes(), noisy_path, n))
    linear(n)
    print(f"\nworst ratio (median of its rounds): {worst:.2f}")
    return 0


def linear(n: int) -> None:
    """Cost per byte at two sizes of one big event and of one event of many data lines
    (made by make_corpus.py), whole and cut 100 bytes before the end (the cut event's
    partial line is read again at the end): equal figures at both sizes mean linear time.
    The four runs of a shape are one round; the findings at 4 KiB chunks must be those of
    the whole input fed at once."""
    from make_corpus import make_bigevent, make_manylines

    print(f"\nlinearity (check in process, 4 KiB chunks, CPU ns per byte at half size and full size, "
          f"{n} interleaved rounds; full/half per round, median [spread]: 1.00 is linear):")
    shapes = (("one big event", lambda k: make_bigevent(size=4_000_000 * k)[0]),
              ("one event of many data lines", lambda k: make_manylines(lines=100_000 * k)[0]))
    for name, make in shapes:
        inputs = {}
        for k, size in ((1, "half"), (2, "full")):
            whole = make(k)
            for cut, label in ((0, name), (100, f"{name}, cut before its end")):
                data = whole[: len(whole) - cut]
                if written(check_in_process, data, 4096) != written(check_in_process, data, len(data)):
                    raise SystemExit(f"outputs differ: {label} ({size}) in 4 KiB chunks and whole")
                inputs[(label, size)] = data
        results = rounds.rounds({key: (lambda data=data: timed(lambda: check_in_process(data, 4096)))
                                 for key, data in inputs.items()}, n, agree=[])
        for label in dict.fromkeys(label for label, _ in inputs):
            half, full = inputs[(label, "half")], inputs[(label, "full")]
            per = {size: rounds.spread(s.cpu / len(inputs[(label, size)]) * 1e9 for s in results[(label, size)])
                   for size in ("half", "full")}
            growth = rounds.spread(b.cpu / len(full) / (a.cpu / len(half))
                                   for a, b in zip(results[(label, "half")], results[(label, "full")]))
            print(f"  {label:<50} {per['half'].median:6.1f}  {per['full'].median:6.1f}   {growth}")


if __name__ == "__main__":
    sys.exit(main())
