#!/usr/bin/env python3
"""AWS event-stream framing beside botocore's decoder, on the same chunks, in one run.

For each generated stream and chunk size this feeds the same list of chunks to:

* ``sse-tool`` ``EventStreamParser`` (``feed`` per chunk, messages out, CRCs checked);
* botocore's ``EventStreamBuffer`` (what boto3 reads Bedrock's streams with: ``add_data``
  per chunk, then iterate the messages it completes; CRCs checked too);

in interleaved rounds (``rounds.py``: each round runs both once, in a shuffled order; at
least 5 rounds, even with ``--quick``); every run's messages (headers and payloads) are
digested once its clock is stopped, and the two decoders must give the same in every
round: a fast wrong answer fails the bench. It prints MB/s and messages/s (the median of
the rounds' CPU time) and the ratio botocore/sse-tool taken within each round: the
median and its spread.

Streams, generated in memory: ``deltas`` (Converse ``contentBlockDelta`` messages of a few
words each, with the ``p`` padding, as Bedrock sends them) and ``large`` (messages of
256 KiB payloads: base64 chunks of a long tool input). Chunk sizes: 16 bytes (a slow
network), 4096 and 65536. Linearity: one 8 MiB message fed in 4 KiB chunks, beside one of
2 MiB, the four runs in the same rounds; the time per byte should not grow with size
(botocore's buffer is re-sliced on every message, so its does).

    .venv/bin/python bench/eventstream_bench.py            # 7 rounds: about two minutes
    .venv/bin/python bench/eventstream_bench.py --quick    # 5 rounds, a quarter of the messages

Needs botocore (the ``bench`` extra: ``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys
import zlib
from pathlib import Path

from botocore.eventstream import EventStreamBuffer

import rounds
from rounds import figure, ratio, timed

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


def output_of(messages: list) -> str:
    """A digest of each message's headers and payload, whichever decoder read them."""
    sha = hashlib.sha256()
    for m in messages:
        headers, payload = (m.headers, m.payload) if hasattr(m, "payload") else (m.headers, m.data.encode())
        sha.update(json.dumps(headers, sort_keys=True, default=repr).encode() + b"\0")
        sha.update(b"%d\0" % len(payload) + payload)
    return sha.hexdigest()[:16]


def contenders(chunks: list[bytes], tag: str = "") -> dict:
    return {f"sse-tool{tag}": lambda: timed(lambda: ours(chunks), output_of),
            f"botocore{tag}": lambda: timed(lambda: botocore(chunks), output_of)}


def run(name: str, data: bytes, sizes, n: int) -> None:
    for size in sizes:
        chunks = chunked(data, size)
        results = rounds.rounds(contenders(chunks), n)  # the same messages, every round
        t_ours, t_boto = figure(results, "sse-tool").median, figure(results, "botocore").median
        count = results["sse-tool"][0].count
        mb = len(data) / 1e6
        print(f"{name:8} {mb:7.2f} MB  chunks {size:6}  "
              f"sse-tool {mb / t_ours:8.1f} MB/s {count / t_ours:10.0f} msg/s   "
              f"botocore {mb / t_boto:8.1f} MB/s {count / t_boto:10.0f} msg/s   "
              f"ratio {ratio(results, 'botocore', 'sse-tool')}")


def linearity(n: int) -> None:
    runs, sizes = {}, {}
    for mib in (2, 8):
        data = large(1, mib << 20)
        sizes[mib] = len(data)
        runs |= contenders(chunked(data, 4096), f" {mib}")
    results = rounds.rounds(runs, n, agree=[[f"sse-tool {mib}", f"botocore {mib}"] for mib in sizes])
    for mib, size in sizes.items():
        per = {who: figure(results, f"{who} {mib}").median * 1e9 / size for who in ("sse-tool", "botocore")}
        print(f"one {mib} MiB message, 4 KiB chunks: sse-tool {per['sse-tool']:6.2f} ns/byte, "
              f"botocore {per['botocore']:8.2f} ns/byte")
    for who in ("sse-tool", "botocore"):
        growth = rounds.spread(b.cpu / sizes[8] / (a.cpu / sizes[2])
                               for a, b in zip(results[f"{who} 2"], results[f"{who} 8"]))
        print(f"  {who}: time per byte at 8 MiB over 2 MiB, per round: {growth} (1.00: linear)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 rounds, a quarter of the messages")
    ap.add_argument("--repeat", type=int, default=None, help="interleaved rounds (default 7; --quick 5, never fewer)")
    args = ap.parse_args()
    n = max(args.repeat or (rounds.QUICK_ROUNDS if args.quick else 7), rounds.QUICK_ROUNDS)
    count = 5000 if args.quick else 20000
    print(f"python {sys.version.split()[0]}, {n} interleaved rounds, CPU time; ratio botocore/sse-tool "
          "within a round, median [lowest-highest]")
    run("deltas", deltas(count), SIZES, n)
    run("large", large(8 if args.quick else 32), SIZES[1:], n)
    linearity(n)


if __name__ == "__main__":
    main()
