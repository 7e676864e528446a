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

The contenders run in interleaved rounds (``rounds.py``: each round runs every one once,
in a shuffled order; ratios within a round, their median and spread). Outputs are compared
first: the records of the process and of ``RecordReader`` must be the same bytes, and the
answer and reasoning texts the SDK's stream objects carry must be the texts of sse-tool's
deltas. Generate the corpus first (it stays out of git):

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/normalize_bench.py --corpus /tmp/sse-corpus

Needs the ``bench`` extra (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import warnings
from pathlib import Path

import rounds
from installed import sse_tool_command
from rounds import Sample, digest, figure, ratio, run_process
from sse_tool.model import Delta, to_record
from sse_tool.pipeline import RecordReader
from sse_tool.wire import dumps

CHUNK = 65536


def chunks(data: bytes):
    return (data[i:i + CHUNK] for i in range(0, len(data), CHUNK))


def in_process(data: bytes, out=None) -> int:
    """``RecordReader`` over the chunks; given ``out`` (an untimed run), each record too."""
    reader = RecordReader()
    count = 0
    for chunk in [*chunks(data), None]:
        records = reader.feed(chunk) if chunk is not None else reader.close()
        count += len(records)
        if out is not None:
            for record in records:
                out(record)
    return count


def records_of(data: bytes) -> tuple[bytes, dict]:
    """What ``sse-tool normalize`` writes for ``data``, and its delta texts per channel."""
    lines, texts = [], {}

    def keep(record) -> None:
        lines.append(dumps(to_record(record)))
        if isinstance(record, Delta):
            texts.setdefault(record.channel.value, []).append(record.text)

    in_process(data, keep)
    return b"".join(lines), {k: "".join(v) for k, v in texts.items()}


def as_process(path: Path) -> Sample:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return run_process([*sse_tool_command(), "normalize"], stdin=str(path), env=env)


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


def sdk_iterate(name: str, data: bytes, out=None) -> int:
    """The SDK's stream iterated; given ``out``, each text it carries: (channel, text)."""
    client = sdk_client(name, data)
    messages = [{"role": "user", "content": "hi"}]
    if name == "openai":
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
    else:
        stream = client.messages.create(model="claude-sonnet-4-5", max_tokens=64000, messages=messages,
                                        stream=True)
    n = 0
    for event in stream:
        n += 1
        if out is None:
            continue
        if name == "openai":
            for choice in event.choices:
                if choice.index == 0 and choice.delta.content:
                    out("answer", choice.delta.content)
        elif event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                out("answer", delta.text)
            elif delta.type == "thinking_delta":
                out("reasoning", delta.thinking)
    return n


def sdk_texts(name: str, data: bytes) -> dict:
    texts: dict = {}
    sdk_iterate(name, data, lambda channel, text: texts.setdefault(channel, []).append(text))
    return {k: "".join(v) for k, v in texts.items()}


def wall_of(run) -> Sample:
    start = time.perf_counter()
    count = run()
    return Sample(0.0, time.perf_counter() - start, "", count)


def row(label: str, seconds, count: int, unit: str, size: int) -> str:
    return (f"  {label:<44} {count:>11,} {unit:<7} {seconds:.2f} s {size / seconds.median / 1e6:>7.1f} MB/s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/sse-corpus"),
                    help="directory written by make_corpus.py (default: /tmp/sse-corpus)")
    ap.add_argument("--repeat", type=int, default=rounds.QUICK_ROUNDS, help="interleaved rounds (at least 5)")
    ap.add_argument("--only", choices=rounds.CORPORA, action="append", help="measure only this corpus")
    args = ap.parse_args()
    n = max(args.repeat, rounds.QUICK_ROUNDS)
    warnings.simplefilter("ignore")  # SDK deprecation notices about the model names used
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {CHUNK // 1024} KiB chunks, "
          f"{n} interleaved rounds; wall time, median [lowest-highest]")
    for name, path, data in rounds.corpora(args.corpus, tuple(args.only or rounds.CORPORA)):
        written, texts = records_of(data)
        process = as_process(path)
        if process.output != digest(written):
            raise SystemExit("outputs differ: the normalize process and RecordReader")
        sdk = sdk_texts(name, data)
        if sdk != texts:
            raise SystemExit(f"outputs differ: the {name} SDK's texts and sse-tool's deltas")
        results = rounds.rounds({
            "lib": lambda: wall_of(lambda: in_process(data)),
            "process": lambda: as_process(path),
            "sdk": lambda: wall_of(lambda: sdk_iterate(name, data)),
        }, n, agree=[])
        lib_n, proc_n, sdk_n = (results[k][0].count for k in ("lib", "process", "sdk"))
        print(row("sse-tool RecordReader (in process)", figure(results, "lib", "wall"), lib_n, "records", len(data)))
        print(row("sse-tool normalize (process, to a file)", figure(results, "process", "wall"), proc_n, "bytes",
                  len(data)))
        print(row(f"{name} SDK {_version(name)} stream iteration", figure(results, "sdk", "wall"), sdk_n, "events",
                  len(data)))
        print(f"  speed-up over the SDK: {ratio(results, 'sdk', 'lib', 'wall'):.2f}x in process, "
              f"{ratio(results, 'sdk', 'process', 'wall'):.2f}x as a process (target: 3x)")
    return 0


def _version(name: str) -> str:
    return getattr(importlib.import_module(name), "__version__", "?")


if __name__ == "__main__":
    sys.exit(main())
