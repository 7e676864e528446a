"""How the benches here time contenders: interleaved rounds, outputs compared, ratios.

On a shared machine the load changes from one second to the next, so timing one
contender after another compares machines, not code. Here every round runs each
contender once, in a new shuffled order; a ratio is taken within a round (both sides saw
the same load) and the rounds' median is reported with the spread (lowest and highest).
CPU time (user + system) is the figure a loaded machine disturbs least; wall time is
kept beside it.

A fast wrong answer must fail the bench: each contender returns a digest of its output,
and ``rounds`` stops with an error when contenders that must agree do not.

A bench may also run another version of sse-tool beside this one (``--before main``):
``tree(ref)`` writes that commit's ``sse_tool`` package into a cache directory, and both
versions then run the same way, as processes (``python -m sse_tool``, or ``worker.py`` for
in-process work), each finding its own package first on ``sys.path``.

``instructions`` counts what a command executes under valgrind: the same count whatever
else the machine is doing, so a regression shows even when the timings are noise.
"""

from __future__ import annotations

import compileall
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "worker.py"
TREES = Path(tempfile.gettempdir()) / "sse-tool-bench-trees"
#: rounds in --quick mode: fewer would make the median a single run's luck
QUICK_ROUNDS = 5
#: the generated 20 MB corpora of the providers (make_corpus.py)
CORPORA = ("anthropic", "openai")


class Sample(NamedTuple):
    """One run of one contender."""

    cpu: float
    wall: float
    #: a digest of what it produced: contenders that must agree must give the same
    output: str
    #: items produced (events, records, bytes): shown, not compared
    count: int = 0


class Tree(NamedTuple):
    """A version of sse-tool: the directory holding its ``sse_tool`` package."""

    label: str
    root: Path

    def env(self) -> dict:
        """The environment its processes run in: its package first on ``sys.path``, and
        without PYTHONUNBUFFERED (which would make every write a system call)."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        env["PYTHONPATH"] = str(self.root)
        return env

    def command(self) -> list[str]:
        """``sse-tool`` of this version (run with ``cwd=self.root``: ``-m`` puts it first)."""
        return [sys.executable, "-m", "sse_tool"]


def tree(ref: str | None) -> Tree:
    """This checkout (``ref`` None), or the ``sse_tool`` package of commit ``ref``."""
    if ref is None:
        root = REPO
        label = "now"
    else:
        sha = subprocess.run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.strip()
        root = TREES / sha
        if not root.exists():
            archive = subprocess.run(["git", "archive", sha, "sse_tool"], cwd=REPO, capture_output=True,
                                     check=True).stdout
            TREES.mkdir(parents=True, exist_ok=True)
            part = Path(tempfile.mkdtemp(dir=TREES))  # renamed once whole: never half a tree
            with tarfile.open(fileobj=BytesIO(archive)) as tar:
                tar.extractall(part)
            try:
                part.rename(root)
            except OSError:  # another bench made it meanwhile
                shutil.rmtree(part)
        label = ref[:12] if ref == sha else f"{ref} ({sha[:7]})"
    # Compiled once, as an installed copy has its modules (see installed.py).
    compileall.compile_dir(root / "sse_tool", quiet=1)
    return Tree(label, root)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def rounds(contenders: dict[str, Callable[[], Sample]], n: int, *, agree: list[list[str]] | None = None,
           seed: int = 0) -> dict[str, list[Sample]]:
    """``n`` rounds, each running every contender once in a shuffled order. ``agree``:
    groups of contenders whose outputs must be equal (default: all of them)."""
    rng = random.Random(seed)
    results: dict[str, list[Sample]] = {name: [] for name in contenders}
    for _ in range(n):
        order = list(contenders)
        rng.shuffle(order)
        for name in order:
            results[name].append(contenders[name]())
    for group in agree if agree is not None else [list(contenders)]:
        outputs = {name: {s.output for s in results[name]} for name in group}
        if len({frozenset(o) for o in outputs.values()}) != 1 or any(len(o) != 1 for o in outputs.values()):
            raise SystemExit("outputs differ: " + ", ".join(f"{name} {sorted(o)}" for name, o in outputs.items()))
    return results


class Spread(NamedTuple):
    median: float
    low: float
    high: float

    def __format__(self, spec: str) -> str:
        spec = spec or ".2f"
        between = " to " if self.low < 0 else "-"  # "-0.2-0.6" would read as a range from -0.2
        return f"{self.median:{spec}} [{self.low:{spec}}{between}{self.high:{spec}}]"


def spread(values) -> Spread:
    values = list(values)
    return Spread(statistics.median(values), min(values), max(values))


def ratio(results: dict[str, list[Sample]], a: str, b: str, key: str = "cpu") -> Spread:
    """``a``'s figure over ``b``'s, per round (the same load on both), as a spread."""
    return spread(getattr(x, key) / getattr(y, key) for x, y in zip(results[a], results[b]))


def figure(results: dict[str, list[Sample]], name: str, key: str = "cpu") -> Spread:
    return spread(getattr(s, key) for s in results[name])


def timed(run: Callable[[], object], output: Callable[[object], str] | None = None) -> Sample:
    """One run of ``run`` in this process: its CPU and wall time; the count is what it
    returns (an int) or its length. ``output`` makes the digest of what it returned,
    once the clocks are stopped; without it the outputs are compared in an untimed run."""
    import time

    cpu, wall = time.process_time(), time.perf_counter()
    got = run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    count = got if isinstance(got, int) else len(got) if hasattr(got, "__len__") else 0
    return Sample(cpu, wall, output(got) if output else "", count)


def run_process(argv: list[str], *, stdin: str | None = None, env: dict | None = None,
                cwd: Path | None = None, ok: tuple[int, ...] = (0,)) -> Sample:
    """One run of a command, stdin from a file, stdout collected: its CPU and wall time
    (from ``os.wait4``) and a digest of its stdout."""
    import time

    with open(stdin or os.devnull, "rb") as src, tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=src, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in ok:
            raise SystemExit(f"{' '.join(map(str, argv))} exited {code}")
        out.seek(0)
        data = out.read()
    return Sample(usage.ru_utime + usage.ru_stime, wall, digest(data), len(data))


class Stage(NamedTuple):
    """One process of a pipe: its CPU time (user + system) and peak memory (max RSS)."""

    cpu: float
    rss: int


def run_pipe(commands: list[tuple[list[str], dict, Path | None]], stdin: str,
             ok: tuple[int, ...] = (0,)) -> tuple[Sample, list[Stage]]:
    """``commands`` connected by pipes, the first reading ``stdin``: the whole pipe's
    CPU time (every stage's, added) and wall time, a digest of the last stage's output,
    and each stage's CPU time and peak memory."""
    import time

    with open(stdin, "rb") as src, tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        procs, upstream = [], src
        for i, (argv, env, cwd) in enumerate(commands):
            last = i == len(commands) - 1
            proc = subprocess.Popen(argv, stdin=upstream, stdout=out if last else subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=env, cwd=cwd)
            if procs:
                upstream.close()
            upstream = proc.stdout
            procs.append(proc)
        stages = []
        for proc in procs:
            _, status, usage = os.wait4(proc.pid, 0)
            code = os.waitstatus_to_exitcode(status)
            if code not in ok:
                raise SystemExit(f"{' '.join(map(str, proc.args))} exited {code}")
            stages.append(Stage(usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024))
        wall = time.perf_counter() - start
        out.seek(0)
        data = out.read()
    return Sample(sum(s.cpu for s in stages), wall, digest(data), len(data)), stages


def in_process(tree: Tree, task: str, *args: str) -> Sample:
    """``worker.py TASK ARGS`` run by ``tree``'s sse-tool: the figures of the work alone
    (start-up and reading the input excluded), measured inside the worker."""
    p = subprocess.run([sys.executable, str(WORKER), task, *args], env=tree.env(), cwd=tree.root,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"worker {task} {' '.join(args)} ({tree.label}) failed:\n{p.stderr[-2000:]}")
    got = json.loads(p.stdout.splitlines()[-1])
    return Sample(got["cpu"], got["wall"], got["output"], got["count"])


def valgrind() -> bool:
    """Whether valgrind is installed; when not, says so, so that a missing section of
    instruction counts is never mistaken for a clean one."""
    if shutil.which("valgrind") is not None:
        return True
    print("\ninstructions: valgrind is not installed, no counts (apt-get install valgrind)")
    return False


def instructions(argv: list[str], *, stdin: str | None = None, env: dict | None = None,
                 cwd: Path | None = None) -> int:
    """Instructions one run of ``argv`` executes, counted by valgrind (callgrind): the same
    on a busy machine and an idle one (system calls and waits are not in it)."""
    env = dict(env if env is not None else os.environ)
    env["PYTHONHASHSEED"] = "0"  # string hashing (and so dict probing) the same every run
    with open(stdin or os.devnull, "rb") as src:
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                           stdin=src, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=env, cwd=cwd)
    found = re.search(r"Collected : (\d+)", p.stderr)
    if found is None:
        raise SystemExit(f"valgrind gave no count for {' '.join(argv)}:\n{p.stderr[-1000:]}")
    return int(found.group(1))


def work_instructions(tree: Tree, task: str, *args: str) -> int:
    """Instructions of ``worker.py TASK ARGS``'s work alone: the run minus a run of the
    same task that does no work (``--empty``: start-up, imports and the input's reading)."""
    argv = [sys.executable, str(WORKER), task, *args, "--timed-only"]
    full = instructions(argv, env=tree.env(), cwd=tree.root)
    empty = instructions([*argv, "--empty"], env=tree.env(), cwd=tree.root)
    return full - empty


def corpora(directory: Path, names: tuple[str, ...] = CORPORA):
    """(name, path, bytes) of each generated corpus ``NAME.sse`` in ``directory``, its size
    printed as a heading; a missing one is said and skipped."""
    for name in names:
        path = directory / f"{name}.sse"
        if not path.exists():
            print(f"{name}: {path} is missing; run python3 bench/make_corpus.py --out {directory}")
            continue
        data = path.read_bytes()
        print(f"\n{name}.sse: {len(data) / 1e6:.1f} MB")
        yield name, path, data


#: a terminal's escape sequences (CSI, OSC, charset), taken out before its words are read
ESCAPES = re.compile(rb"\x1b(?:\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07|[()][0-9A-Za-z])")


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text))


def shown(answer: str, screen: bytes, what: str) -> str:
    """The output of ``what``, a run drawing ``answer`` on a terminal, as a digest to
    compare: it must show every word of the answer (what is drawn over is still in the
    bytes), or the bench stops."""
    missing = words(answer) - words(ESCAPES.sub(b"", screen).decode("utf-8", "replace"))
    if missing:
        raise SystemExit(f"outputs differ: {what} never showed " + " ".join(sorted(missing)[:10]))
    return "every word shown"


def slice_of(path: Path, size: int, out_dir: Path) -> Path:
    """The first ``size`` bytes or so of ``path``, ending after a line end (an event of
    SSE, or a JSON line), as a file in ``out_dir``."""
    data = path.read_bytes()
    if len(data) > size:
        end = data.find(b"\n\n", size)
        data = data[: end + 2] if end >= 0 and data.startswith((b"data:", b"event:")) else data[: data.index(b"\n", size) + 1]
    out = out_dir / f"{path.stem}-{size // 1000}k{path.suffix}"
    out.write_bytes(data)
    return out
