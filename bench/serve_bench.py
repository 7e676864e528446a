#!/usr/bin/env python3
"""``serve`` as a test double: the cost of what it does with a recording, beside the SDKs.

For each generated corpus (anthropic.sse, openai.sse), in one run:

* ``stream: false``: the provider's whole response assembled from the recording
  (``summarize`` then ``assemble``), beside the official SDK assembling its final object
  from the same bytes (``openai``: ``chat.completions.stream(...).get_final_completion()``,
  ``anthropic``: ``messages.stream(...).get_final_message()``, the body served in 64 KiB
  chunks by an in-memory transport, as in ``normalize_bench.py``); both answers' text
  must be the same;
* classifying a recording (dialect, model: what matching reads), and each wire quirk,
  on the first tenth of the corpus and on all of it: the ratio of the two times shows how
  the cost grows with the bytes (a step quadratic in them would show x100).

Each figure is the best of ``--repeat`` runs, the contenders interleaved. Generate the
corpus first (it stays out of git):

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/serve_bench.py --corpus /tmp/sse-corpus

Needs the ``bench`` extra (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

from normalize_bench import _version, sdk_client
from sse_tool.replay import Step, event_ends
from sse_tool.serve.assemble import assemble
from sse_tool.serve.quirks import QUIRKS, apply_quirks
from sse_tool.serve.summary import summarize

CORPORA = ("anthropic", "openai")
QUIRKED = ("comments", "cr", "split-crlf", "split-utf8", "huge-line", "error-after-200")


def ours(data: bytes) -> str:
    body = json.loads(assemble(summarize(data)).body)
    if "choices" in body:
        return body["choices"][0]["message"]["content"]
    return "".join(b["text"] for b in body["content"] if b["type"] == "text")


def theirs(name: str, data: bytes) -> str:
    client = sdk_client(name, data)
    messages = [{"role": "user", "content": "hi"}]
    if name == "openai":
        with client.chat.completions.stream(model="gpt-4o-mini", messages=messages) as stream:
            return stream.get_final_completion().choices[0].message.content
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=64000, messages=messages) as stream:
        return "".join(b.text for b in stream.get_final_message().content if b.type == "text")


def timed(run) -> tuple[float, object]:
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def steps_of(data: bytes) -> list[Step]:
    out, start = [], 0
    for end in event_ends(data):
        out.append(Step(0.0, data[start:end]))
        start = end
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/sse-corpus"),
                    help="directory written by make_corpus.py (default: /tmp/sse-corpus)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, best of {args.repeat}")
    for name in CORPORA:
        path = args.corpus / f"{name}.sse"
        if not path.exists():
            print(f"{name}: {path} is missing; run make_corpus.py --out {args.corpus}")
            continue
        data = path.read_bytes()
        print(f"\n{name}.sse: {len(data) / 1e6:.1f} MB")
        mine, sdk = [], []
        for _ in range(args.repeat):  # interleaved, so load on the machine hits both
            seconds, text = timed(lambda: ours(data))
            mine.append(seconds)
            seconds, their_text = timed(lambda: theirs(name, data))
            sdk.append(seconds)
            if text != their_text:
                raise SystemExit(f"{name}: the assembled text differs from the SDK's")
        print(f"  stream: false from the recording   sse-tool {min(mine):6.2f} s   {name} SDK "
              f"{_version(name)} final object {min(sdk):6.2f} s   ratio {min(sdk) / min(mine):.1f}x")
        tenth = data[:event_ends(data[:len(data) // 10])[-1]]
        for label, run in [("classify (dialect, model)", lambda d: summarize(d, payloads=False))] + [
                (f"quirk {q}", lambda d, q=q: sum(1 for _ in apply_quirks(
                    steps_of(d), (q,), name, "sse").steps)) for q in QUIRKED if q in QUIRKS]:
            small = min(timed(lambda: run(tenth))[0] for _ in range(args.repeat))
            large = min(timed(lambda: run(data))[0] for _ in range(args.repeat))
            print(f"  {label:<30} {len(tenth) / 1e6:5.1f} MB {small:6.2f} s   {len(data) / 1e6:5.1f} MB "
                  f"{large:6.2f} s   x{large / small:4.1f} for x{len(data) / len(tenth):.1f} the bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
