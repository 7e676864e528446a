#!/usr/bin/env python3
"""SSE framing throughput beside httpx-sse and the openai SDK, on the same chunks, in one run.

For each corpus file and chunk size (16, 4096, 65536 bytes) this feeds the same list of
chunks to:

* ``sse-tool`` ``SseParser`` as a library (``feed`` per chunk, events out);
* ``httpx-sse``: its ``EventSource.iter_sse()``, unchanged, over a stand-in response whose
  ``iter_text()`` decodes the chunks as ``httpx.Response.iter_text`` does (incremental UTF-8,
  errors replaced) without httpx's transport layers;
* the ``openai`` SDK's ``openai._streaming.SSEDecoder().iter_bytes`` (its own byte line splitter);
* the floor: a plain ``bytes.split(b"\\n\\n")`` loop that only counts blocks (no decoding,
  no fields), which no exact parser can beat;

and runs ``sse-tool frame`` as a whole process (file on stdin, output to /dev/null,
start-up included). It prints MB/s, events/s, peak memory (tracemalloc, in a separate
untimed run) and ratios to httpx-sse and to the floor. Linearity: bigevent (one data line)
and manylines (one event of many data lines) are generated in memory at two sizes, and
the time per byte should not grow with size. Start-up: median wall time of
``sse-tool frame < /dev/null`` beside ``python -c "import typer, orjson"``.

Contenders run in interleaved rounds (``rounds.py``: each round runs every one once, in a
shuffled order), ratios are taken within a round, and each figure is the median of the
rounds with its spread; their outputs (each event's name and data) are compared first, so
a fast wrong answer fails the bench. Generate the corpus first (it stays out of git;
make_corpus.py generates it):

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/frame_bench.py --corpus /tmp/sse-corpus        # about 5 minutes
    .venv/bin/python bench/frame_bench.py --quick                         # 5 rounds, 1 MB slices

Needs the ``bench`` extra (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import codecs
import gc
import hashlib
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import make_corpus
import rounds
from installed import sse_tool_command
from rounds import Sample, figure, ratio, run_process
from httpx_sse import EventSource
from openai._streaming import SSEDecoder as OpenAIDecoder

from sse_tool.sse import SseParser

SIZES = (16, 4096, 65536)


# -- the contenders: each takes a list of chunks and returns the number of events; given
# -- ``out``, it also passes each event's name and data to it (an untimed run: the outputs
# -- are compared, so a fast wrong answer fails the bench) ------------------------------


def ours(chunks: list[bytes], out=None) -> int:
    parser = SseParser()
    feed = parser.feed
    n = 0
    for chunk in chunks:
        events = feed(chunk)
        n += len(events)
        if out is not None:
            for e in events:
                out(e.event, e.data)
    parser.close()
    return n


class _TextResponse:
    """What ``EventSource`` reads from an ``httpx.Response``: its headers and ``iter_text()``,
    here the chunks through the incremental UTF-8 decoder that httpx's ``TextDecoder`` wraps,
    with none of httpx's transport layers (those would not be httpx-sse's cost)."""

    headers = {"content-type": "text/event-stream"}

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def iter_text(self):
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        for chunk in self._chunks:
            text = decoder.decode(chunk)
            if text:  # as httpx's TextChunker, which yields no empty text
                yield text
        text = decoder.decode(b"", True)
        if text:
            yield text


def httpx_sse(chunks: list[bytes], out=None) -> int:
    """httpx-sse's public path: ``EventSource(response).iter_sse()``, its code unchanged."""
    n = 0
    for event in EventSource(_TextResponse(chunks)).iter_sse():
        n += 1
        if out is not None:
            out(event.event, event.data)
    return n


def openai_sdk(chunks: list[bytes], out=None) -> int:
    n = 0
    for event in OpenAIDecoder().iter_bytes(iter(chunks)):
        n += 1
        if out is not None:
            out(event.event or "message", event.data)
    return n


def floor(chunks: list[bytes], out=None) -> int:
    """Counts blocks, reads nothing: no output to compare (only its count is shown)."""
    pieces: list[bytes] = []
    n = 0
    last = b""
    for chunk in chunks:
        if b"\n\n" in chunk or (last == b"\n" and chunk[:1] == b"\n"):
            pieces.append(chunk)
            blocks = b"".join(pieces).split(b"\n\n")
            pieces = [blocks.pop()]
            n += len(blocks)
        else:
            pieces.append(chunk)
        last = chunk[-1:]
    return n


def output_of(fn, chunks: list[bytes]) -> str:
    """A digest of the events ``fn`` reads from ``chunks`` (name and data of each)."""
    sha = hashlib.sha256()
    fn(chunks, lambda event, data: sha.update(f"{event}\0{data}\0".encode("utf-8", "surrogatepass")))
    return sha.hexdigest()[:16]


CONTENDERS = {"sse-tool": ours, "httpx-sse": httpx_sse, "openai": openai_sdk, "floor": floor}


# -- measuring ------------------------------------------------------------------------


def timed(fn, chunks) -> Sample:
    """One run, with the cyclic GC paused as timeit does: its CPU and wall time, and count."""
    gc.collect()
    gc.disable()
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        events = fn(chunks)
        return Sample(time.process_time() - cpu, time.perf_counter() - wall, "", events)
    finally:
        gc.enable()


def best_time(fn, chunks, repeat: int) -> tuple[float, int]:
    """Best wall time of ``repeat`` runs (the linearity rows: one contender, no ratio)."""
    samples = [timed(fn, chunks) for _ in range(repeat)]
    return min(s.wall for s in samples), samples[-1].count


def peak_memory(fn, chunks) -> int:
    tracemalloc.start()
    fn(chunks)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def cut_at_event(data: bytes, limit: int) -> bytes:
    """The first ``limit`` bytes or so, ending on an event boundary."""
    if len(data) <= limit:
        return data
    return data[: data.index(b"\n\n", limit) + 2]


def table_row(cells, widths) -> str:
    return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))


def measure_corpus(name: str, data: bytes, n: int, sizes=SIZES) -> None:
    """Every contender once per round, in a shuffled order; ratios within a round, their
    median and spread (CPU time); the outputs compared first."""
    print(f"\n{name}: {len(data) / 1e6:.1f} MB; {n} interleaved rounds; ratios: median [lowest-highest]")
    widths = (10, 7, 9, 11, 9, 18, 18)
    print(table_row(("parser", "chunk", "MB/s", "events/s", "peak MB", "x httpx", "x floor"), widths))
    for size in sizes:
        chunks = split(data, size)
        outputs = {label: output_of(fn, chunks) for label, fn in CONTENDERS.items() if label != "floor"}
        if len(set(outputs.values())) != 1:
            raise SystemExit(f"outputs differ at chunk {size}: {outputs}")
        results = rounds.rounds({label: (lambda fn=fn: timed(fn, chunks)) for label, fn in CONTENDERS.items()},
                                n, agree=[])
        for label, samples in results.items():
            seconds = figure(results, label).median
            peak = peak_memory(CONTENDERS[label], chunks)
            print(table_row((
                label, size, f"{len(data) / seconds / 1e6:.1f}", f"{samples[0].count / seconds:,.0f}",
                f"{peak / 1e6:.1f}", f"{ratio(results, 'httpx-sse', label):.2f}",
                f"{ratio(results, 'floor', label):.2f}",
            ), widths))


def measure_process(path: Path, n: int) -> None:
    command = [*sse_tool_command(), "frame"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    results = rounds.rounds({"frame": lambda: run_process(command, stdin=str(path), env=env)}, n)
    size = path.stat().st_size
    wall, cpu = figure(results, "frame", "wall"), figure(results, "frame")
    print(f"sse-tool frame < {path.name} > file: {size / wall.median / 1e6:.1f} MB/s, wall {wall:.3f} s, "
          f"CPU {cpu:.3f} s ({n} runs: median [lowest-highest], start-up included)")


def measure_startup(n: int) -> None:
    runs = {"frame": lambda: run_process([*sse_tool_command(), "frame"], ok=(3,)),
            "baseline": lambda: run_process([sys.executable, "-c", "import typer, orjson"])}
    results = rounds.rounds(runs, n, agree=[])
    frame, baseline = figure(results, "frame", "wall"), figure(results, "baseline", "wall")
    print(f"\nstart-up, {n} interleaved rounds: sse-tool frame < /dev/null {frame.median * 1000:.0f} ms; "
          f'python -c "import typer, orjson" {baseline.median * 1000:.0f} ms; ratio '
          f"{ratio(results, 'frame', 'baseline', 'wall'):.2f} (median [spread]; target <= 1.3)")


def measure_linearity(quick: bool, repeat: int) -> None:
    print("\nlinearity (sse-tool parser; ns per byte should not grow with size)")
    big = (2_000_000, 4_000_000) if quick else (4_000_000, 8_000_000)
    lines = (50_000, 100_000) if quick else (100_000, 200_000)
    cases = [(f"bigevent {n / 1e6:.0f} MB", make_corpus.make_bigevent(n)[0]) for n in big]
    cases += [(f"manylines {n:,} lines", make_corpus.make_manylines(n)[0]) for n in lines]
    for size in (16, 4096):
        for label, data in cases:
            seconds, events = best_time(ours, split(data, size), repeat)
            assert events == 1
            print(f"  {label:<24} chunk {size:>5}: {seconds * 1e9 / len(data):6.1f} ns/byte")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="/tmp/sse-corpus", type=Path)
    parser.add_argument("--quick", action="store_true", help="1 MB slices, 5 rounds: a few minutes")
    parser.add_argument("--repeat", type=int, default=None,
                        help="interleaved rounds (default 7; quick 5, never fewer)")
    parser.add_argument("--mb", type=float, default=None, help="slice of anthropic/openai to use (default 4)")
    args = parser.parse_args()
    missing = [n for n in ("anthropic.sse", "openai.sse", "bigevent.sse", "manylines.sse")
               if not (args.corpus / n).exists()]
    if missing:
        sys.exit(f"missing {', '.join(missing)} in {args.corpus}; generate the corpus with:\n"
                 f"  python3 bench/make_corpus.py --out {args.corpus}")
    repeat = max(args.repeat or (rounds.QUICK_ROUNDS if args.quick else 7), rounds.QUICK_ROUNDS)
    mb = args.mb or (1 if args.quick else 4)
    print(f"python {sys.version.split()[0]}, {repeat} interleaved rounds; corpus {args.corpus}")
    for name in ("anthropic", "openai"):
        data = cut_at_event((args.corpus / f"{name}.sse").read_bytes(), int(mb * 1e6))
        measure_corpus(f"{name}.sse (first {mb:g} MB)", data, repeat)
    # CRLF line ends (as Gemini sends them) take the line-by-line path
    data = cut_at_event((args.corpus / "openai.sse").read_bytes(), int(mb * 1e6) // 2)
    measure_corpus(f"openai.sse with CRLF (first {mb / 2:g} MB)", data.replace(b"\n", b"\r\n"), repeat,
                   sizes=(16, 4096))
    for name in ("bigevent", "manylines"):
        data = (args.corpus / f"{name}.sse").read_bytes()
        if args.quick:
            data = (make_corpus.make_bigevent(2_000_000) if name == "bigevent"
                    else make_corpus.make_manylines(50_000))[0]
        measure_corpus(f"{name}.sse", data, repeat, sizes=(4096, 65536) if not args.quick else (4096,))
    measure_linearity(args.quick, 1 if args.quick else 3)
    print()
    for name in ("anthropic", "openai"):
        measure_process(args.corpus / f"{name}.sse", repeat)
    measure_startup(max(repeat, 10) if args.quick else 25)


if __name__ == "__main__":
    main()
