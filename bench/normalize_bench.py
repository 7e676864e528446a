#!/usr/bin/env python3
"""normalize throughput beside the official SDKs, on the same bytes, in one run.

For each generated corpus (anthropic.sse, openai.sse) this measures:

* ``RecordReader`` in process: SSE framing + normalization, fed 64 KiB chunks, records out;
* the ``sse-tool normalize`` process: file on stdin, JSON lines to a file (start-up included);
* the official SDK iterating the same bytes into its stream objects: ``openai``
  ``client.chat.completions.create(..., stream=True)`` and ``anthropic``
  ``client.messages.create(..., stream=True)``, the body served in 64 KiB chunks by an
  in-memory ``MockTransport`` on the SDK's own HTTP client (``http_client=``), so no network
  is involved on either side.

Each figure is the best of ``--repeat`` runs. Generate the corpus first (it stays out of git):

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/normalize_bench.py --corpus /tmp/sse-corpus

Needs the ``bench`` extra (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from installed import sse_tool_command
from sse_tool.pipeline import RecordReader

CHUNK = 65536
CORPORA = ("anthropic", "openai")


def chunks(data: bytes):
    return (data[i:i + CHUNK] for i in range(0, len(data), CHUNK))


def best(repeat: int, run) -> tuple[float, int]:
    """(fastest wall time, item count) over ``repeat`` runs of ``run() -> count``."""
    times, count = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = run()
        times.append(time.perf_counter() - start)
    return min(times), count


def in_process(data: bytes) -> int:
    reader = RecordReader()
    count = 0
    for chunk in chunks(data):
        count += len(reader.feed(chunk))
    return count + len(reader.close())


def as_process(path: Path) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open(path, "rb") as stdin, tempfile.TemporaryFile() as out:
        code = subprocess.run([*sse_tool_command(), "normalize"], stdin=stdin, stdout=out,
                              env=env).returncode
        if code != 0:
            raise SystemExit(f"sse-tool normalize exited {code} on {path}")
        out.seek(0)
        return sum(1 for _ in out)


def sdk_client(name: str, data: bytes):
    """The SDK's client with its own HTTP client class, on an in-memory transport."""
    sdk = importlib.import_module(name)
    # The SDK's default client names the httpx package it is built on (httpx, or a fork).
    http = importlib.import_module(sdk.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])

    def respond(request):
        return http.Response(200, headers={"content-type": "text/event-stream"}, content=chunks(data))

    http_client = sdk.DefaultHttpxClient(transport=http.MockTransport(respond))
    base = "http://sdk.invalid/v1" if name == "openai" else "http://sdk.invalid"
    cls = sdk.OpenAI if name == "openai" else sdk.Anthropic
    return cls(api_key="sk-bench", base_url=base, http_client=http_client, max_retries=0)


def sdk_iterate(name: str, data: bytes) -> int:
    client = sdk_client(name, data)
    messages = [{"role": "user", "content": "hi"}]
    if name == "openai":
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
    else:
        stream = client.messages.create(model="claude-sonnet-4-5", max_tokens=64000, messages=messages,
                                        stream=True)
    return sum(1 for _ in stream)


def row(label: str, seconds: float, count: int, unit: str, size: int) -> str:
    return (f"  {label:<44} {count:>9,} {unit:<7} {seconds:>7.2f} s {size / seconds / 1e6:>7.1f} MB/s "
            f"{count / seconds:>10,.0f} {unit}/s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/sse-corpus"),
                    help="directory written by make_corpus.py (default: /tmp/sse-corpus)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per measurement; the best counts")
    ap.add_argument("--only", choices=CORPORA, action="append", help="measure only this corpus")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # SDK deprecation notices about the model names used
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {CHUNK // 1024} KiB chunks, "
          f"best of {args.repeat}")
    for name in args.only or CORPORA:
        path = args.corpus / f"{name}.sse"
        if not path.exists():
            print(f"{name}: {path} is missing; run make_corpus.py --out {args.corpus}")
            continue
        data = path.read_bytes()
        print(f"\n{name}.sse: {len(data) / 1e6:.1f} MB")
        lib_s, lib_n = best(args.repeat, lambda: in_process(data))
        proc_s, proc_n = best(args.repeat, lambda: as_process(path))
        sdk_s, sdk_n = best(args.repeat, lambda: sdk_iterate(name, data))
        if proc_n != lib_n:
            raise SystemExit(f"record counts differ: process {proc_n}, in process {lib_n}")
        print(row("sse-tool RecordReader (in process)", lib_s, lib_n, "records", len(data)))
        print(row("sse-tool normalize (process, to a file)", proc_s, proc_n, "records", len(data)))
        print(row(f"{name} SDK {_version(name)} stream iteration", sdk_s, sdk_n, "events", len(data)))
        print(f"  speed-up over the SDK: {sdk_s / lib_s:.1f}x in process, {sdk_s / proc_s:.1f}x as a process "
              f"(target: 3x)")
    return 0


def _version(name: str) -> str:
    return getattr(importlib.import_module(name), "__version__", "?")


if __name__ == "__main__":
    sys.exit(main())
