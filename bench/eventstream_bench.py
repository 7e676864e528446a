#!/usr/bin/env python3
"""AWS event-stream framing beside botocore's decoder, on the same chunks, in one run.

For each generated stream and chunk size this feeds the same list of chunks to:

* ``sse-tool`` ``EventStreamParser`` (``feed`` per chunk, messages out, CRCs checked);
* botocore's ``EventStreamBuffer`` (what boto3 reads Bedrock's streams with: ``add_data``
  per chunk, then iterate the messages it completes; CRCs checked too);

interleaved (a round of each, ``--repeat`` rounds, best of each), after checking that both
give the same messages (headers and payloads). It prints MB/s, messages/s and the ratio.

Streams, generated in memory: ``deltas`` (Converse ``contentBlockDelta`` messages of a few
words each, with the ``p`` padding, as Bedrock sends them) and ``large`` (messages of
256 KiB payloads: base64 chunks of a long tool input). Chunk sizes: 16 bytes (a slow
network), 4096 and 65536. Linearity: one 8 MiB message fed in 4 KiB chunks, beside one of
2 MiB; the time per byte should not grow with size (botocore's buffer is re-sliced on
every message, so its does).

    .venv/bin/python bench/eventstream_bench.py            # about a minute
    .venv/bin/python bench/eventstream_bench.py --quick

Needs botocore (the ``bench`` extra: ``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import time
import zlib
from pathlib import Path

from botocore.eventstream import EventStreamBuffer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sse_tool.eventstream import EventStreamParser  # noqa: E402

SIZES = (16, 4096, 65536)


def message(event_type: str, payload: bytes) -> bytes:
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"),
                        (":message-type", "event")):
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def deltas(n: int) -> bytes:
    words = "El lanzamiento del cohete fue todo un éxito 🚀 ".split(" ")
    out = []
    for i in range(n):
        payload = {"contentBlockIndex": 0, "delta": {"text": " ".join(words[i % 5: i % 5 + 3])},
                   "p": "abcdefghijklmnopqrstuvwxyz"[: 1 + i % 26]}
        out.append(message("contentBlockDelta", json.dumps(payload, ensure_ascii=False).encode()))
    return b"".join(out)


def large(n: int, size: int = 256 * 1024) -> bytes:
    piece = ("QUJD" * (size // 4))[:size]
    return b"".join(message("chunk", json.dumps({"bytes": piece, "p": "abc"}).encode()) for _ in range(n))


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def ours(chunks: list[bytes]) -> list:
    parser = EventStreamParser(max_event_size=64 << 20)
    out = []
    for chunk in chunks:
        out += parser.feed(chunk)
    parser.close()
    return out


def botocore(chunks: list[bytes]) -> list:
    buffer = EventStreamBuffer()
    out = []
    for chunk in chunks:
        buffer.add_data(chunk)
        out.extend(buffer)
    return out


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        m.headers == n.headers and m.data.encode() == n.payload for m, n in zip(a, b))


def best(fn, chunks, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(chunks)
        times.append(time.perf_counter() - start)
    return min(times)


def run(name: str, data: bytes, sizes, repeat: int) -> None:
    for size in sizes:
        chunks = chunked(data, size)
        got, ref = ours(chunks), botocore(chunks)
        assert same(got, ref), f"{name}/{size}: the two decoders disagree"
        t_ours = t_boto = float("inf")
        for _ in range(repeat):  # interleaved: a round of each
            t_ours = min(t_ours, best(ours, chunks, 1))
            t_boto = min(t_boto, best(botocore, chunks, 1))
        mb = len(data) / 1e6
        print(f"{name:8} {len(data) / 1e6:7.2f} MB  chunks {size:6}  "
              f"sse-tool {mb / t_ours:8.1f} MB/s {len(got) / t_ours:10.0f} msg/s   "
              f"botocore {mb / t_boto:8.1f} MB/s {len(ref) / t_boto:10.0f} msg/s   "
              f"ratio {t_boto / t_ours:5.2f}x")


def linearity(repeat: int) -> None:
    for mib in (2, 8):
        data = large(1, mib << 20)
        chunks = chunked(data, 4096)
        t_ours = min(best(ours, chunks, 1) for _ in range(repeat))
        t_boto = min(best(botocore, chunks, 1) for _ in range(repeat))
        print(f"one {mib} MiB message, 4 KiB chunks: sse-tool {t_ours * 1e9 / len(data):6.2f} ns/byte, "
              f"botocore {t_boto * 1e9 / len(data):8.2f} ns/byte")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    repeat = 2 if args.quick else args.repeat
    n = 5000 if args.quick else 20000
    print(f"python {sys.version.split()[0]}, best of {repeat} interleaved rounds")
    run("deltas", deltas(n), SIZES, repeat)
    run("large", large(8 if args.quick else 32), SIZES[1:], repeat)
    linearity(repeat)


if __name__ == "__main__":
    main()
