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

Each throughput figure is the best of ``--repeat`` runs. Generate the corpus first (it stays
out of git; make_corpus.py generates it):

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/frame_bench.py --corpus /tmp/sse-corpus        # about 3 minutes
    .venv/bin/python bench/frame_bench.py --quick                         # under a minute

Needs the ``bench`` extra (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import codecs
import gc
import os
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import make_corpus
from installed import sse_tool_command
from httpx_sse import EventSource
from openai._streaming import SSEDecoder as OpenAIDecoder

from sse_tool.sse import SseParser

SIZES = (16, 4096, 65536)


# -- the contenders: each takes a list of chunks and returns the number of events -------


def ours(chunks: list[bytes]) -> int:
    parser = SseParser()
    feed = parser.feed
    n = 0
    for chunk in chunks:
        n += len(feed(chunk))
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


def httpx_sse(chunks: list[bytes]) -> int:
    """httpx-sse's public path: ``EventSource(response).iter_sse()``, its code unchanged."""
    n = 0
    for _ in EventSource(_TextResponse(chunks)).iter_sse():
        n += 1
    return n


def openai_sdk(chunks: list[bytes]) -> int:
    return sum(1 for _ in OpenAIDecoder().iter_bytes(iter(chunks)))


def floor(chunks: list[bytes]) -> int:
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


CONTENDERS = {"sse-tool": ours, "httpx-sse": httpx_sse, "openai": openai_sdk, "floor": floor}


# -- measuring ------------------------------------------------------------------------


def best_time(fn, chunks, repeat: int) -> tuple[float, int]:
    """Best wall time of ``repeat`` runs, with the cyclic GC paused as timeit does."""
    best, events = float("inf"), 0
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            events = fn(chunks)
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best, events


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


def measure_corpus(name: str, data: bytes, repeat: int, sizes=SIZES) -> None:
    print(f"\n{name}: {len(data) / 1e6:.1f} MB")
    widths = (10, 7, 9, 11, 9, 9, 9)
    print(table_row(("parser", "chunk", "MB/s", "events/s", "peak MB", "x httpx", "x floor"), widths))
    for size in sizes:
        chunks = split(data, size)
        results = {}
        for label, fn in CONTENDERS.items():
            results[label] = best_time(fn, chunks, repeat)
        counts = {label: events for label, (_, events) in results.items() if label != "floor"}
        if len(set(counts.values())) != 1:
            print(f"  event counts differ at chunk {size}: {counts}")
        for label, (seconds, events) in results.items():
            peak = peak_memory(CONTENDERS[label], chunks)
            print(table_row((
                label, size, f"{len(data) / seconds / 1e6:.1f}", f"{events / seconds:,.0f}",
                f"{peak / 1e6:.1f}", f"{results['httpx-sse'][0] / seconds:.2f}",
                f"{results['floor'][0] / seconds:.2f}",
            ), widths))


def measure_process(path: Path, runs: int) -> None:
    command = [*sse_tool_command(), "frame"]
    times = []
    for _ in range(runs):
        with open(path, "rb") as stdin, open(os.devnull, "wb") as stdout:
            start = time.perf_counter()
            code = subprocess.run(command, stdin=stdin, stdout=stdout).returncode
            times.append(time.perf_counter() - start)
        assert code == 0, code
    size = path.stat().st_size
    print(f"sse-tool frame < {path.name} > /dev/null: {size / min(times) / 1e6:.1f} MB/s "
          f"(best of {runs}, start-up included)")


def median_wall(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        with open(os.devnull, "rb") as stdin, open(os.devnull, "wb") as out:
            start = time.perf_counter()
            subprocess.run(command, stdin=stdin, stdout=out, stderr=out)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_startup(runs: int) -> None:
    frame = median_wall([*sse_tool_command(), "frame"], runs)
    baseline = median_wall([sys.executable, "-c", "import typer, orjson"], runs)
    print(f"\nstart-up, median of {runs}: sse-tool frame < /dev/null {frame * 1000:.0f} ms; "
          f'python -c "import typer, orjson" {baseline * 1000:.0f} ms; ratio {frame / baseline:.2f} (target <= 1.3)')


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
    parser.add_argument("--quick", action="store_true", help="1 MB slices, one run each: under a minute")
    parser.add_argument("--repeat", type=int, default=None, help="best of N runs (default 3, quick 1)")
    parser.add_argument("--mb", type=float, default=None, help="slice of anthropic/openai to use (default 4)")
    args = parser.parse_args()
    missing = [n for n in ("anthropic.sse", "openai.sse", "bigevent.sse", "manylines.sse")
               if not (args.corpus / n).exists()]
    if missing:
        sys.exit(f"missing {', '.join(missing)} in {args.corpus}; generate the corpus with:\n"
                 f"  python3 bench/make_corpus.py --out {args.corpus}")
    repeat = args.repeat or (1 if args.quick else 3)
    mb = args.mb or (1 if args.quick else 4)
    print(f"python {sys.version.split()[0]}, best of {repeat}; corpus {args.corpus}")
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
        measure_corpus(f"{name}.sse", data, 1, sizes=(4096, 65536) if not args.quick else (4096,))
    measure_linearity(args.quick, repeat)
    print()
    for name in ("anthropic", "openai"):
        measure_process(args.corpus / f"{name}.sse", 1 if args.quick else 3)
    measure_startup(8 if args.quick else 25)


if __name__ == "__main__":
    main()
