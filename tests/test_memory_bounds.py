"""Memory stays bounded whatever the shape of the input: peak RSS of real processes.

One event of 11 million empty ``data:`` lines (66 MB, under the 64 MiB default limit)
must not cost a Python object per line; normalize and render must not keep anything per
delta beyond the text they must keep. Each case streams its input into a real process
through a pipe and reads the child's peak RSS (``ru_maxrss``) when it exits.
"""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

from .support import SSE_TOOL, clean_env

MiB = 2**20


def peak_rss(args: list[str], pieces, repeat: int, head: bytes = b"", tail: bytes = b"") -> tuple[int, int]:
    """(exit status, peak RSS in bytes) of ``sse-tool ARGS`` fed ``head``, then ``pieces``
    ``repeat`` times, then ``tail``, through a pipe."""
    # A preexec_fn makes subprocess fork rather than vfork: a vforked child's ru_maxrss
    # starts at this test process's own peak (Linux keeps the high-water mark of the memory
    # it leaves at exec), so a test run that grew past the limit would fail every case.
    proc = subprocess.Popen([*SSE_TOOL, *args], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=clean_env(), preexec_fn=os.getpid)

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
    _, status, usage = os.wait4(proc.pid, 0)
    writer.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss * 1024


LINES = 11_000_000
#: a block of lines, written many times: LINES lines in all
BLOCK_LINES = 100_000


@pytest.mark.parametrize("stage", ["frame", "render"])
@pytest.mark.parametrize("line", [b"data:\n", b"data: \n", b"id:\n", b":\n"], ids=["data", "data-space", "id", "comment"])
def test_one_event_of_11_million_short_lines_stays_within_a_small_multiple_of_the_limit(stage, line):
    code, rss = peak_rss([stage], line * BLOCK_LINES, LINES // BLOCK_LINES, head=b"", tail=b"data: end\n\n")
    assert code in (0, 3, 5), code
    assert rss < 300 * MiB, f"{stage}: peak RSS {rss / MiB:.0f} MiB for {len(line) * LINES / MiB:.0f} MiB of input"


def openai_deltas(n: int) -> tuple[bytes, int]:
    return b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n' * 1000, n // 1000


@pytest.mark.parametrize("stage", ["normalize", "render"])
def test_memory_does_not_grow_with_the_number_of_deltas(stage):
    small = peak_rss([stage], *openai_deltas(100_000), tail=b"data: [DONE]\n\n")
    large = peak_rss([stage], *openai_deltas(1_500_000), tail=b"data: [DONE]\n\n")
    assert small[0] == large[0] == 0
    # what is kept is the text (render: 1.5 MB of answer), not 72 bytes a delta (100 MB)
    assert large[1] - small[1] < 24 * MiB, (small[1] / MiB, large[1] / MiB)
