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

The stream: false contenders run in interleaved rounds (``rounds.py``: each round runs
both once, in a shuffled order), and so do the two sizes of each classifying or quirk row;
ratios are taken within a round, and each figure is the median of the rounds (CPU time)
with its spread. Outputs are compared: both answers' texts in every round; the dialect
and model read from a tenth and from the whole; each quirk's output the same every
round, and read back by ``summarize`` to the same answer as the stream without it (every
quirk keeps the stream's meaning but ``error-after-200``, whose summary must hold its
error). Generate the corpus first (it stays out of git):

    python3 bench/make_corpus.py --out /tmp/sse-corpus
    .venv/bin/python bench/serve_bench.py --corpus /tmp/sse-corpus     # 7 rounds
    .venv/bin/python bench/serve_bench.py --quick                      # 5 rounds: about 8 minutes

Needs the ``bench`` extra (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import rounds
from normalize_bench import _version, sdk_client
from rounds import digest, figure, ratio, timed
from sse_tool.replay import Step, event_ends
from sse_tool.serve.assemble import assemble
from sse_tool.serve.quirks import QUIRKS, apply_quirks
from sse_tool.serve.summary import summarize

QUIRKED = ("comments", "cr", "split-crlf", "split-utf8", "huge-line", "error-after-200")
#: the one quirk that changes what the stream says
CHANGES_MEANING = "error-after-200"


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


def steps_of(data: bytes) -> list[Step]:
    out, start = [], 0
    for end in event_ends(data):
        out.append(Step(0.0, data[start:end]))
        start = end
    return out


def quirked(data: bytes, quirk: str, dialect: str) -> list[Step]:
    return list(apply_quirks(steps_of(data), (quirk,), dialect, "sse").steps)


def body_of(steps: list[Step]) -> str:
    return digest(b"".join(s.data for s in steps))


def text_of(text: str) -> str:
    return digest(text.encode())


def classified(summary) -> str:
    return f"{summary.dialect} {summary.model}"


def stream_false(name: str, data: bytes, n: int) -> str:
    """The stream: false rows; returns the dialect the whole stream is read as."""
    results = rounds.rounds({"sse-tool": lambda: timed(lambda: ours(data), text_of),
                             "sdk": lambda: timed(lambda: theirs(name, data), text_of)}, n)
    mine, sdk = figure(results, "sse-tool"), figure(results, "sdk")
    print(f"  stream: false from the recording   sse-tool {mine.median:6.2f} s   {name} SDK "
          f"{_version(name)} final object {sdk.median:6.2f} s   ratio {ratio(results, 'sdk', 'sse-tool')}")
    return summarize(data, payloads=False).dialect


def growth(name: str, data: bytes, dialect: str, n: int) -> None:
    """Each row on a tenth and on the whole, the two in the same rounds."""
    tenth = data[:event_ends(data[:len(data) // 10])[-1]]
    rows = [("classify (dialect, model)", lambda d: timed(lambda: summarize(d, payloads=False), classified), None)]
    rows += [(f"quirk {q}", lambda d, q=q: timed(lambda: quirked(d, q, dialect), body_of), q)
             for q in QUIRKED if q in QUIRKS]
    answer = summarize(data, payloads=False).answer
    for label, run, quirk in rows:
        if quirk is not None:  # what a client reads from the quirked stream
            got = summarize(b"".join(s.data for s in quirked(data, quirk, dialect)), payloads=False)
            if quirk == CHANGES_MEANING and got.error is None:
                raise SystemExit(f"{name}, quirk {quirk}: the stream holds no error")
            if quirk != CHANGES_MEANING and got.answer != answer:
                raise SystemExit(f"outputs differ: {name}, quirk {quirk} changed the answer")
        results = rounds.rounds({"tenth": lambda: run(tenth), "whole": lambda: run(data)}, n,
                                agree=[["tenth", "whole"]] if quirk is None else [["tenth"], ["whole"]])
        small, large = figure(results, "tenth"), figure(results, "whole")
        print(f"  {label:<30} {len(tenth) / 1e6:5.1f} MB {small.median:6.2f} s   {len(data) / 1e6:5.1f} MB "
              f"{large.median:6.2f} s   x{ratio(results, 'whole', 'tenth'):.1f} for x{len(data) / len(tenth):.1f} the bytes")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/sse-corpus"),
                    help="directory written by make_corpus.py (default: /tmp/sse-corpus)")
    ap.add_argument("--repeat", type=int, default=None, help="interleaved rounds (default 7; --quick 5, never fewer)")
    ap.add_argument("--quick", action="store_true", help="5 rounds")
    args = ap.parse_args()
    n = max(args.repeat or (rounds.QUICK_ROUNDS if args.quick else 7), rounds.QUICK_ROUNDS)
    warnings.simplefilter("ignore")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {n} interleaved rounds, CPU time, "
          "median [lowest-highest] of the ratios within a round")
    for name, _path, data in rounds.corpora(args.corpus):
        dialect = stream_false(name, data, n)
        growth(name, data, dialect, n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
