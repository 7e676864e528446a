"""The timeline picture: content over time, one band per channel, stalls marked.

Pure: a ``StreamReport`` and a width in, lines out, each line a list of (text, style)
segments that the view prints plainly or in colour. Each channel present (reasoning,
answer, tool-call arguments) gets its own band of bars, so the picture reads the same
without colour; a bar is the characters that arrived in its slice of time, at eighths of
a row, scaled to that band's fullest slice. Below, the time axis: ``━`` where the longest
stall was, ``┴`` where keep-alive comments arrived, and times under it.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from itertools import accumulate
from operator import itemgetter

Line = list  # [(text, style), ...]

_EIGHTHS = " ▁▂▃▄▅▆▇█"
_BANDS = (("reasoning", 2, "reasoning"), ("answer", 1, "answer"), ("tool calls", 3, "tool"))
GUTTER = 12


def picture(report, width: int = 80) -> list[Line]:
    """The picture's lines (none when the stream has no timing or no extent in time)."""
    series = report.series
    end = report.timeline.end
    if not report.timed or end is None:
        return []
    times = list(map(itemgetter(0), series))
    last = max(end, max(times, default=end))
    if last <= 0:
        return []
    columns = max(10, width - GUTTER - 1)

    def column(t: float) -> int:
        return min(columns - 1, max(0, int(t / last * columns)))

    # Arrivals are in time order: each column's share is a difference of running sums,
    # found by bisection at the column's bounds (no Python loop over the arrivals).
    bounds = [bisect_left(times, last * c / columns) for c in range(1, columns)] + [len(times)]
    lines: list[Line] = []
    for label, index, style in _BANDS:
        running = [0, *accumulate(map(itemgetter(index), series))]
        amounts, lo = [], 0
        for hi in bounds:
            amounts.append(running[hi] - running[lo])
            lo = hi
        if not any(amounts):
            continue
        rows = 3 if len(series) > 1 else 1
        top = max(amounts)
        heights = [math.ceil(a / top * rows * 8) if a else 0 for a in amounts]
        for row in range(rows - 1, -1, -1):
            text = "".join(_EIGHTHS[min(8, max(0, h - row * 8))] for h in heights)
            lines.append([((label if row == rows - 1 else "").rjust(GUTTER - 2) + "  ", "label"),
                          (text, style)])
    lines.append(_axis(report, columns, column))
    lines.append([(" " * GUTTER, ""), (_ticks(last, columns), "dim")])
    return lines


def _axis(report, columns: int, column) -> Line:
    marks = ["─"] * columns
    for t in report.keepalive_times:
        marks[column(t)] = "┴"
    stall = report.gaps.stall
    span = None
    if stall is not None and stall.seconds > 0:
        span = (column(stall.start), max(column(stall.start), column(stall.end) - 1))
    line: Line = [("seconds".rjust(GUTTER - 2) + "  ", "label")]
    if span is None:
        return line + [("".join(marks), "dim")]
    return line + [("".join(marks[: span[0]]), "dim"), ("━" * (span[1] - span[0] + 1), "stall"),
                   ("".join(marks[span[1] + 1:]), "dim")]


def _ticks(last: float, columns: int) -> str:
    """0, a quarter, half, three quarters and the end, each under its column."""
    out = [" "] * columns
    for k in range(5):
        label = _seconds(last * k / 4, last)
        at = min(columns - len(label), max(0, round(k / 4 * (columns - 1)) - (len(label) // 2 if k else 0)))
        if k == 4:
            at = columns - len(label)
        if all(c == " " for c in out[max(0, at - 1):at + len(label)]):
            out[at:at + len(label)] = label
    return "".join(out)


def _seconds(t: float, last: float) -> str:
    """``t`` with as many decimals as tell the quarters of ``last`` apart (0.25 of 1 s,
    0.000075 of 0.3 ms)."""
    if t == 0:
        return "0"
    if last >= 10:
        return f"{t:.0f}" if last >= 100 else f"{t:.1f}"
    decimals = 2 if last >= 1 else min(6, 2 - math.floor(math.log10(last)))
    return f"{t:.{decimals}f}"
