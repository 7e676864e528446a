#!/usr/bin/env python3
"""check beside normalize, on the same bytes, in one run: the ratio of their times.

For each generated 20 MB corpus (anthropic.sse, openai.sse), and the same corpus with a
finding in every event (each event written as ``date: x`` + its data, an unknown field),
this measures, interleaved so that both see the same load:

* in process: ``check.Checker`` against ``pipeline.RecordReader`` (framing and
  normalization), both fed the same chunks (64 KiB, then 4 KiB);
* as processes: ``sse-tool check --format json`` against ``sse-tool normalize`` (file on
  stdin, output to a file, start-up included).

Times are CPU time (the process's own, or its child's: user + system), which a shared
machine's load disturbs far less than wall time; each figure is the best of ``--repeat``
runs, and the ratio is check's time over normalize's (the target: at most 2). Generate the corpus first (it stays out of git):

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/check_bench.py --corpus /tmp/sse-corpus
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from installed import sse_tool_command
from sse_tool.check import Checker
from sse_tool.pipeline import RecordReader

CORPORA = ("anthropic", "openai")


def chunks(data: bytes, size: int):
    return (data[i:i + size] for i in range(0, len(data), size))


def check_in_process(data: bytes, size: int) -> int:
    checker = Checker()
    count = 0
    for chunk in chunks(data, size):
        count += len(checker.feed(chunk))
    return count + len(checker.close())


def normalize_in_process(data: bytes, size: int) -> int:
    reader = RecordReader()
    count = 0
    for chunk in chunks(data, size):
        count += len(reader.feed(chunk))
    return count + len(reader.close())


def as_process(stage: list[str], path: Path, ok: tuple[int, ...] = (0,)) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open(path, "rb") as stdin, tempfile.TemporaryFile() as out:
        code = subprocess.run([*sse_tool_command(), *stage], stdin=stdin, stdout=out, env=env).returncode
        if code not in ok:
            raise SystemExit(f"sse-tool {' '.join(stage)} exited {code} on {path}")
        out.seek(0)
        return sum(1 for _ in out)


def cpu() -> float:
    """CPU seconds used so far by this process and its finished children."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def interleaved(repeat: int, runs: dict) -> dict:
    """name -> (best CPU seconds, count): each round runs every contender once, in turn."""
    times: dict = {name: [] for name in runs}
    counts: dict = {}
    for _ in range(repeat):
        for name, run in runs.items():
            start = cpu()
            counts[name] = run()
            times[name].append(cpu() - start)
    return {name: (min(times[name]), counts[name]) for name in runs}


def with_findings(data: bytes) -> bytes:
    """The same stream with an unknown field in every event: one finding per event."""
    return data.replace(b"\n\ndata: ", b"\n\ndate: x\ndata: ").replace(b"\n\nevent: ", b"\n\ndate: x\nevent: ")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/sse-corpus"),
                    help="directory written by make_corpus.py (default: /tmp/sse-corpus)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts")
    ap.add_argument("--only", choices=CORPORA, action="append", help="measure only this corpus")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, best of {args.repeat}, "
          "ratio = check / normalize (target: at most 2)")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or CORPORA:
            path = args.corpus / f"{name}.sse"
            if not path.exists():
                print(f"{name}: {path} is missing; run make_corpus.py --out {args.corpus}")
                continue
            plain = path.read_bytes()
            noisy_path = Path(tmp) / f"{name}-findings.sse"
            noisy_path.write_bytes(with_findings(plain))
            for label, data, file in ((f"{name}.sse", plain, path),
                                      (f"{name}.sse, a finding in every event", noisy_path.read_bytes(), noisy_path)):
                print(f"\n{label}: {len(data) / 1e6:.1f} MB")
                for size in (65536, 4096):
                    got = interleaved(args.repeat, {
                        "normalize": lambda: normalize_in_process(data, size),
                        "check": lambda: check_in_process(data, size),
                    })
                    worst = max(worst, _row(f"in process, {size // 1024} KiB chunks", got, len(data)))
                got = interleaved(args.repeat, {
                    "normalize": lambda: as_process(["normalize"], file),
                    "check": lambda: as_process(["check", "--format", "json", "--max-per-rule", "0"], file, (0, 10)),
                })
                worst = max(worst, _row("as processes, to a file", got, len(data)))
        linear(args)
    print(f"\nworst ratio: {worst:.2f}")
    return 0


def linear(args) -> None:
    """Cost per byte at two sizes of one big event and of one event of many data lines
    (made by make_corpus.py), whole and cut 100 bytes before the end (the cut event's
    partial line is read again at the end): equal figures at both sizes mean linear time."""
    from make_corpus import make_bigevent, make_manylines

    print("\nlinearity (check in process, 4 KiB chunks, CPU ns per byte, half size and full size):")
    shapes = (("one big event", lambda k: make_bigevent(size=4_000_000 * k)[0]),
              ("one event of many data lines", lambda k: make_manylines(lines=100_000 * k)[0]))
    for name, make in shapes:
        half, full = make(1), make(2)
        for label, cut in ((name, 0), (f"{name}, cut before its end", 100)):
            costs = []
            for data in (half, full):
                data = data[: len(data) - cut]
                got = interleaved(args.repeat, {"check": lambda: check_in_process(data, 4096)})
                costs.append(got["check"][0] / len(data) * 1e9)
            print(f"  {label:<50} {costs[0]:6.1f}  {costs[1]:6.1f}")


def _row(label: str, got: dict, size: int) -> float:
    (n_s, n_count), (c_s, c_count) = got["normalize"], got["check"]
    ratio = c_s / n_s
    print(f"  {label:<28} normalize {n_s:6.2f} s ({size / n_s / 1e6:5.1f} MB/s, {n_count} records)   "
          f"check {c_s:6.2f} s ({size / c_s / 1e6:5.1f} MB/s, {c_count} findings)   ratio {ratio:.2f}")
    return ratio


if __name__ == "__main__":
    sys.exit(main())
