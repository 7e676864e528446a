"""Durations and sizes as people type them: ``40ms``, ``2s``, ``1m``; ``64k``, ``16MiB``.

One reading for every place that takes them: the command-line options (whose edge turns
the ``ValueError`` into a usage error), serve's faults (options and query parameters)
and inspect's ``--fail-on`` thresholds.
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"(\d+)\s*([kmg]?)(i?b?)", re.I)
_TIME = re.compile(r"(\d+(?:\.\d*)?)\s*(ms|s|m|h)?", re.I)
#: the longest duration taken (about three years): longer ones overflow the clocks and
#: waits they are added to
MAX_SECONDS = 1e8


def parse_size(text: str) -> int:
    """``65536``, ``64k``, ``16MiB``, ``1G`` -> bytes (K/M/G are powers of 1024)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not a size: {text!r} (try 16MiB)")
    return int(m.group(1)) * 1024 ** " kmg".index(m.group(2).lower() or " ")


def parse_duration(text: str) -> float:
    """``40ms``, ``2s``, ``1.5``, ``1m`` -> seconds (a bare number is seconds)."""
    m = _TIME.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not a duration: {text!r} (try 40ms, 2s or 1m)")
    unit = (m.group(2) or "s").lower()
    seconds = float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    if seconds > MAX_SECONDS:
        raise ValueError(f"duration too long: {text!r} (at most {MAX_SECONDS:.0e} s)")
    return seconds
