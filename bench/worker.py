"""One piece of in-process work, timed inside this process, for ``rounds.in_process``.

Run by any version of sse-tool (its package first on ``sys.path``: see ``rounds.Tree``):

    python bench/worker.py TASK FILE [--chunk N] [--empty]

Tasks, each fed FILE in chunks of N bytes (default 65536), as the stage's edge feeds it:

* ``frame``: ``AutoFramer`` (the framing recognised from the first bytes), events out;
* ``normalize``: ``RecordReader`` (any earlier stage's output), channel records out;
* ``render``: ``RecordReader`` into a ``Painter`` drawing the ``PlainView`` (what
  ``render`` does into a pipe: answer text out, reasoning hidden, a paint at most every
  40 ms by the real clock).

Prints one JSON line: the CPU and wall time of the work alone (the input read before
timing starts), a digest of the output, and how many items it made. The output is made
again in a second, untimed pass for ``frame`` and ``normalize``: keeping every record of
the timed pass, or writing each out, would time the memory and the writing instead.
For render the digest is of the bytes written, taken as they are written (a paint is
rare). ``--timed-only`` leaves the second pass out, and ``--empty`` does everything but
feed the bytes: valgrind counts a run of each, and the difference is the work alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time


def chunks_of(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def frame(chunks: list[bytes], out=None) -> int:
    from sse_tool.framing import AutoFramer
    from sse_tool.wire import dumps, event_record

    framer, n = AutoFramer(), 0
    for chunk in chunks:
        items = framer.feed(chunk)
        n += len(items)
        if out is not None:
            out(b"".join(dumps(event_record(i)) for i in items))
    end = framer.close()
    if out is not None:
        out(repr(end.truncated).encode())
    return n + len(end.items)


def normalize(chunks: list[bytes], out=None) -> int:
    from sse_tool.model import to_record
    from sse_tool.pipeline import RecordReader
    from sse_tool.wire import dumps

    reader, n = RecordReader(), 0
    for chunk in [*chunks, None]:
        records = reader.feed(chunk) if chunk is not None else reader.close()
        n += len(records)
        if out is not None:
            out(b"".join(dumps(to_record(r)) for r in records))
    return n


def render(chunks: list[bytes], out) -> int:
    try:
        from sse_tool.render.throttle import Painter
    except ImportError:  # where versions before the package was regrouped keep it
        from sse_tool.painter import Painter
    from sse_tool.pipeline import RecordReader
    from sse_tool.render.loop import _feed
    from sse_tool.render.release import make_policy
    from sse_tool.render.view_plain import PlainView

    written = [0]

    def write(data: bytes) -> None:
        written[0] += len(data)
        out(data)

    view = PlainView(write, lambda text: None, make_policy("delta"), reasoning="hide")
    painter = Painter(view, time.monotonic, 0.04)
    reader = RecordReader()
    for chunk in [*chunks, None]:  # as render's read loop feeds the painter (loop.pump)
        records = reader.feed(chunk) if chunk is not None else reader.close()
        _feed(records, painter)
        painter.tick()
    return written[0]


TASKS = {"frame": frame, "normalize": normalize, "render": render}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("task", choices=TASKS)
    parser.add_argument("file")
    parser.add_argument("--chunk", type=int, default=65536)
    parser.add_argument("--empty", action="store_true")
    parser.add_argument("--timed-only", action="store_true", help="no second pass (for valgrind's count)")
    args = parser.parse_args()
    with open(args.file, "rb") as f:
        chunks = chunks_of(f.read(), args.chunk)
    if args.empty:
        chunks = []
    task = TASKS[args.task]
    sha = hashlib.sha256()
    cpu, wall = time.process_time(), time.perf_counter()
    count = task(chunks, sha.update) if args.task == "render" else task(chunks)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if args.task != "render" and not args.timed_only:
        task(chunks, sha.update)
    print(json.dumps({"cpu": cpu, "wall": wall, "output": sha.hexdigest()[:16], "count": count}))


if __name__ == "__main__":
    main()
