"""Memory stays bounded whatever the shape of the input: peak RSS of real processes.

One event of 11 million empty ``data:`` lines (66 MB, under the 64 MiB default limit)
must not cost a Python object per line; normalize and render must not keep anything per
delta beyond the text they must keep. Each case streams its input into a real process
through a pipe and reads the child's peak RSS (``ru_maxrss``) when it exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading

import pytest

from ..support import clean_env

MiB = 2**20


# The child reports its own high-water mark: ``ru_maxrss`` would also count what the test
# process held when it forked the child (Linux keeps the larger figure across the exec).
_REPORTING = (
    "import atexit, os, runpy\n"
    "def _report():\n"
    "    with open('/proc/self/status') as status:\n"
    "        kib = next(line for line in status if line.startswith('VmHWM:')).split()[1]\n"
    "    with open(os.environ['SSE_TOOL_TEST_HWM'], 'w') as out:\n"
    "        out.write(kib)\n"
    "atexit.register(_report)\n"
    "runpy.run_module('sse_tool', run_name='__main__', alter_sys=True)\n"
)


def peak_rss(args: list[str], pieces, repeat: int, head: bytes = b"", tail: bytes = b"") -> tuple[int, int]:
    """(exit status, peak RSS in bytes) of ``sse-tool ARGS`` fed ``head``, then ``pieces``
    ``repeat`` times, then ``tail``, through a pipe."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "hwm")
        code = _run_fed([sys.executable, "-c", _REPORTING, *args], pieces, repeat, head, tail,
                        clean_env(SSE_TOOL_TEST_HWM=report))
        with open(report) as f:
            return code, int(f.read()) * 1024


def _run_fed(command: list[str], pieces, repeat: int, head: bytes, tail: bytes, env: dict) -> int:
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)

    def write() -> None:
        try:
            proc.stdin.write(head)
            for _ in range(repeat):
                proc.stdin.write(pieces)
            proc.stdin.write(tail)
            proc.stdin.close()
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=write)
    writer.start()
    code = proc.wait()
    writer.join()
    return code


LINES = 11_000_000
#: a block of lines, written many times: LINES lines in all
BLOCK_LINES = 100_000


KINDS = [("data", b"data:\n"), ("data-space", b"data: \n"), ("id", b"id:\n"), ("comment", b":\n")]
#: each kind of line through each stage: the default run takes data lines through frame,
#: the others are marked slow (CI runs them)
LONG_EVENTS = [pytest.param(stage, line, id=f"{name}-{stage}",
                            marks=() if (name, stage) == ("data", "frame") else pytest.mark.slow)
               for name, line in KINDS for stage in ("frame", "render")]


@pytest.mark.parametrize("stage, line", LONG_EVENTS)
def test_one_event_of_11_million_short_lines_stays_within_a_small_multiple_of_the_limit(stage, line):
    code, rss = peak_rss([stage], line * BLOCK_LINES, LINES // BLOCK_LINES, head=b"", tail=b"data: end\n\n")
    assert code in (0, 3, 5), code
    assert rss < 300 * MiB, f"{stage}: peak RSS {rss / MiB:.0f} MiB for {len(line) * LINES / MiB:.0f} MiB of input"


def openai_deltas(n: int) -> tuple[bytes, int]:
    return b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n' * 1000, n // 1000


@pytest.mark.parametrize("stage", ["normalize", pytest.param("render", marks=pytest.mark.slow)])
def test_memory_does_not_grow_with_the_number_of_deltas(stage):
    small = peak_rss([stage], *openai_deltas(100_000), tail=b"data: [DONE]\n\n")
    large = peak_rss([stage], *openai_deltas(1_500_000), tail=b"data: [DONE]\n\n")
    assert small[0] == large[0] == 0
    # what is kept is the text (render: 1.5 MB of answer), not 72 bytes a delta (100 MB)
    assert large[1] - small[1] < 24 * MiB, (small[1] / MiB, large[1] / MiB)


def test_check_keeps_memory_bounded_by_the_findings_it_shows_not_by_those_it_counts():
    # One line of invalid UTF-8: a finding per byte, none placed until the line's event ends.
    # Past --max-per-rule they are counted, not kept (368 MB for 1 MB before).
    small = peak_rss(["check"], b"\xff" * 1000, 100, head=b"data: ")
    large = peak_rss(["check"], b"\xff" * 1000, 1000, head=b"data: ")
    assert small[0] == large[0] == 10
    assert large[1] - small[1] < 24 * MiB, (small[1] / MiB, large[1] / MiB)


@pytest.mark.parametrize("piece", [b": ping\n\n", b"id: 7\n\n", b"foo: x\n", b"id:\n", b"data:\n"],
                         ids=["pings", "blocks-without-data", "unknown-fields-in-one-event",
                              "one-block-of-id-lines", "one-event-of-data-lines"])
def test_check_keeps_no_memory_per_line_or_per_block(piece):
    # Blocks after the last event were kept until the next one, then split into a list of
    # lines with a finding each (270 MB for 500,000 pings); a long event's lines too
    # (400 MB for a million unknown fields). Now about 64 KiB of lines at a time, blocks
    # judged as they complete, and findings past --max-per-rule counted.
    head = b'data: {"type":"message_start","message":{}}\n\n'
    small = peak_rss(["check"], piece * 1000, 100, head=head, tail=b"data: {}\n\n")
    large = peak_rss(["check"], piece * 1000, 1000, head=head, tail=b"data: {}\n\n")
    assert small[0] == large[0] == 10
    assert large[1] - small[1] < 24 * MiB, (small[1] / MiB, large[1] / MiB)


def test_check_counts_what_it_does_not_keep():
    data = b"data: " + b"\xff" * 5000 + b"\x00" * 30 + b"\n\n"
    runs = {}
    for cap in ("20", "0"):
        done = subprocess.run([sys.executable, "-m", "sse_tool", "check", "--format", "json", "--max-per-rule", cap],
                              input=data, capture_output=True, env=clean_env(), timeout=60)
        runs[cap] = done
    shown, every = len(runs["20"].stdout.splitlines()), len(runs["0"].stdout.splitlines())
    assert every >= 5000 + 30 and shown < 50  # a finding per bad byte, 20 of each rule shown
    assert b"%d more findings not shown" % (every - shown) in runs["20"].stderr, runs["20"].stderr
    assert runs["20"].returncode == runs["0"].returncode == 10
