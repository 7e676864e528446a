#!/usr/bin/env python3
"""The pipe's throughput targets, this checkout beside an earlier one, in one run.

For the generated 20 MB corpora (anthropic.sse, openai.sse; ``make_corpus.py``), each
row runs an earlier version (``--before REF``; by default where this branch left ``main``,
their merge base) and this checkout
("now") in interleaved rounds (``rounds.py``: every round runs each contender once, in a
shuffled order; ratios within a round; the median and the spread of the rounds), and
checks that they give the same output:

1. ``normalize`` in process (``RecordReader``, 64 KiB chunks, records out) reading the
   raw SSE and reading ``frame``'s records of it (target: 2x before on both corpora, and
   frame's records no slower than the raw bytes);
2. ``sse-tool render`` into a pipe (a file), reading ``normalize``'s records, as a
   process (target: 2x before), and in process;
3. ``sse-tool frame | normalize | render`` (target: 2x the MB/s before, and the CPU of
   the whole pipe at most 1.5x ``frame``'s alone), with ``frame`` alone beside it, and
   the same work in one process (``render`` reading the raw SSE; the same output);
4. ``frame`` in process and as a process (target: no regression), and each stage's
   start-up on an empty input (target: no regression).

Then, where valgrind is installed, the instructions each throughput row's work executes
on a slice of the corpus (``--slice``, 2 MB; the same count whatever the machine's
load, so a regression shows even when the timings are noise), and each stage's start-up.

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/targets_bench.py                 # about 15 minutes
    .venv/bin/python bench/targets_bench.py --quick         # 5 rounds, 5 MB slices

A slice ends between two events, without the provider's terminal event: every stage then
exits 3 (truncated), which the quick rows accept.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import rounds
from rounds import Tree, figure, in_process, ratio, run_pipe, run_process, slice_of, spread

CORPORA = ("anthropic", "openai")
STAGES = ("frame", "normalize", "render")
#: exit codes of a stage reading a corpus: complete, or truncated (a --quick slice)
OK = (0, 3)


def derived(tree: Tree, path: Path, out_dir: Path) -> tuple[Path, Path]:
    """frame's records and normalize's records of ``path``, made by ``tree``."""
    events, records = out_dir / f"{path.stem}.events.jsonl", out_dir / f"{path.stem}.records.jsonl"
    for stage, src, dst in (("frame", path, events), ("normalize", path, records)):
        with open(src, "rb") as inp, open(dst, "wb") as out:
            code = subprocess.run([*tree.command(), stage], stdin=inp, stdout=out, env=tree.env(),
                                  cwd=tree.root, stderr=subprocess.DEVNULL).returncode
            if code not in OK:
                raise SystemExit(f"sse-tool {stage} < {src} exited {code}")
    return events, records


def row(label: str, results, before: str, now: str, size: int | None = None, key: str = "cpu") -> None:
    b, n = figure(results, before, key), figure(results, now, key)
    speed = ratio(results, before, now, key)
    rate = f"  {size / n.median / 1e6:6.1f} MB/s" if size else ""
    print(f"  {label:<44} {b.median:7.3f} s {n.median:7.3f} s{rate}   {speed:.2f}x")


def header(title: str, key: str = "CPU") -> None:
    print(f"\n{title}")
    print(f"  {'':<44} {'before':>9} {'now':>9}   speed-up: before/now, median [spread] ({key})")


def normalize_rows(trees, corpora: dict, n: int) -> None:
    header("1. normalize in process (RecordReader, 64 KiB chunks)")
    for name, (path, events, _records) in corpora.items():
        runs = {}
        for label, src in (("raw", path), ("events", events)):
            for t in trees:
                runs[f"{t.label} {label}"] = lambda t=t, src=src: in_process(t, "normalize", str(src))
        results = rounds.rounds(runs, n)  # the same records from either input, before and now
        before, now = trees[0].label, trees[1].label
        size = path.stat().st_size
        row(f"{name}: the raw SSE", results, f"{before} raw", f"{now} raw", size)
        row(f"{name}: frame's records of it", results, f"{before} events", f"{now} events", size)
        for t in trees:
            r = ratio(results, f"{t.label} events", f"{t.label} raw")
            print(f"  {name}, {t.label}: frame's records cost {r:.2f}x the raw bytes (target now: <= 1)")


def render_rows(trees, corpora: dict, n: int) -> None:
    header("2. render into a pipe, reading normalize's records")
    for name, (_path, _events, records) in corpora.items():
        runs = {}
        for t in trees:
            runs[f"{t.label} process"] = lambda t=t: run_process([*t.command(), "render"], stdin=str(records),
                                                                  env=t.env(), cwd=t.root, ok=OK)
        results = rounds.rounds(runs, n)
        runs_in = {t.label: (lambda t=t: in_process(t, "render", str(records))) for t in trees}
        results_in = rounds.rounds(runs_in, n)
        size = records.stat().st_size
        before, now = trees[0].label, trees[1].label
        row(f"{name}: sse-tool render < records > file", results, f"{before} process", f"{now} process", size)
        row(f"{name}: in process", results_in, before, now, size)


def pipe_rows(trees, corpora: dict, n: int) -> None:
    header("3. frame | normalize | render > file, and frame alone", "wall for the pipe's MB/s; CPU for the rest")
    for name, (path, _events, _records) in corpora.items():
        size = path.stat().st_size
        runs, stages = {}, {}

        def pipe(t: Tree):
            sample, used = run_pipe([([*t.command(), s], t.env(), t.root) for s in STAGES], str(path), OK)
            stages.setdefault(t.label, []).append([u.cpu for u in used])
            return sample

        for t in trees:
            runs[f"{t.label} pipe"] = lambda t=t: pipe(t)
            runs[f"{t.label} frame"] = lambda t=t: run_process([*t.command(), "frame"], stdin=str(path),
                                                                env=t.env(), cwd=t.root, ok=OK)
            # the pipe's work in one process: render reads the raw SSE itself
            runs[f"{t.label} one"] = lambda t=t: run_process([*t.command(), "render"], stdin=str(path),
                                                              env=t.env(), cwd=t.root, ok=OK)
        results = rounds.rounds(runs, n, agree=[[f"{t.label} {k}" for t in trees for k in ("pipe", "one")],
                                                [f"{t.label} frame" for t in trees]])
        before, now = trees[0].label, trees[1].label
        row(f"{name}: the pipe, wall", results, f"{before} pipe", f"{now} pipe", size, key="wall")
        row(f"{name}: the pipe, CPU of its 3 processes", results, f"{before} pipe", f"{now} pipe")
        row(f"{name}: frame alone, CPU", results, f"{before} frame", f"{now} frame")
        row(f"{name}: render < SSE (one process), CPU", results, f"{before} one", f"{now} one")
        for t in trees:
            per = [spread(c[i] for c in stages[t.label]).median for i in range(len(STAGES))]
            r = ratio(results, f"{t.label} pipe", f"{t.label} frame")
            one = ratio(results, f"{t.label} one", f"{t.label} frame")
            print(f"  {name}, {t.label}: CPU per stage " + " / ".join(f"{c:.2f}" for c in per)
                  + f" s; the pipe's CPU is {r:.2f}x frame's alone (target now: <= 1.5);"
                  f" its work in one process (render < SSE) {one:.2f}x")


def frame_rows(trees, corpora: dict, n: int) -> None:
    header("4. frame (no regression) and start-up on an empty input")
    for name, (path, _events, _records) in corpora.items():
        runs = {t.label: (lambda t=t: in_process(t, "frame", str(path))) for t in trees}
        results = rounds.rounds(runs, n)
        row(f"{name}: frame in process", results, trees[0].label, trees[1].label, path.stat().st_size)
    runs = {}
    for t in trees:
        for stage in STAGES:
            runs[f"{t.label} {stage}"] = lambda t=t, stage=stage: run_process(
                [*t.command(), stage], env=t.env(), cwd=t.root, ok=(3,))
    results = rounds.rounds(runs, max(n, 10), agree=[[f"{t.label} {s}" for t in trees] for s in STAGES])
    for stage in STAGES:
        row(f"sse-tool {stage} < /dev/null", results, f"{trees[0].label} {stage}", f"{trees[1].label} {stage}")


def instruction_rows(trees, corpora: dict, size: int, tmp: Path) -> None:
    print(f"\n5. instructions (valgrind), the work alone on the first {size / 1e6:g} MB "
          "(a run minus the same run fed nothing); start-up: a whole run on an empty input")
    print(f"  {'':<44} {'before M':>9} {'now M':>9}   before/now")
    for name, (path, events, records) in corpora.items():
        for label, task, src in (("normalize, raw SSE", "normalize", path),
                                 ("normalize, frame's records", "normalize", events),
                                 ("render, normalize's records", "render", records),
                                 ("frame", "frame", path)):
            part = slice_of(src, size, tmp)
            counts = [rounds.work_instructions(t, task, str(part)) for t in trees]
            print(f"  {name + ':':<10} {label:<33} {counts[0] / 1e6:9.1f} {counts[1] / 1e6:9.1f}   "
                  f"{counts[0] / counts[1]:.2f}x")
    for stage in STAGES:
        counts = [rounds.instructions([*t.command(), stage], env=t.env(), cwd=t.root) for t in trees]
        print(f"  {'sse-tool ' + stage + ' < /dev/null':<44} {counts[0] / 1e6:9.1f} {counts[1] / 1e6:9.1f}   "
              f"{counts[0] / counts[1]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/sse-corpus"))
    parser.add_argument("--before", default=None,
                        help="the earlier version: a commit, branch or tag (default: git merge-base HEAD main)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per row (default 7; --quick 5)")
    parser.add_argument("--quick", action="store_true", help="5 rounds on 5 MB slices of the corpora")
    parser.add_argument("--slice", type=float, default=2, help="MB of each corpus valgrind counts (0: skip)")
    parser.add_argument("--only", default="1,2,3,4,5", help="sections to run, e.g. 1,3")
    args = parser.parse_args()
    n = args.rounds or (rounds.QUICK_ROUNDS if args.quick else 7)
    n = max(n, rounds.QUICK_ROUNDS)
    before = args.before or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=rounds.REPO,
                                           capture_output=True, text=True, check=True).stdout.strip()
    trees = [rounds.tree(before), rounds.tree(None)]
    sections = set(args.only.split(","))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; before: {trees[0].label}; "
          f"now: this checkout; {n} interleaved rounds")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpora = {}
        for name in CORPORA:
            path = args.corpus / f"{name}.sse"
            if not path.exists():
                sys.exit(f"{path} is missing: run python3 bench/make_corpus.py --out {args.corpus}")
            if args.quick:
                path = slice_of(path, 5_000_000, tmp)
            corpora[name] = (path, *derived(trees[1], path, tmp))
            print(f"{name}: {path.stat().st_size / 1e6:.1f} MB of SSE; frame's records "
                  f"{corpora[name][1].stat().st_size / 1e6:.1f} MB; normalize's {corpora[name][2].stat().st_size / 1e6:.1f} MB")
        if "1" in sections:
            normalize_rows(trees, corpora, n)
        if "2" in sections:
            render_rows(trees, corpora, n)
        if "3" in sections:
            pipe_rows(trees, corpora, n)
        if "4" in sections:
            frame_rows(trees, corpora, n)
        if "5" in sections and args.slice and rounds.valgrind():
            instruction_rows(trees, corpora, int(args.slice * 1e6), tmp)


if __name__ == "__main__":
    main()
