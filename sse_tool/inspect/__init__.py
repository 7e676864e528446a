"""``sse-tool inspect``'s core: what happened in a stream, when, and why it felt slow.

* ``core.Inspector``: timestamped chunks of one stream in, a ``report.StreamReport`` out.
* ``figures``: the rules behind each figure (percentiles, stalls, bursts, rates, causes).
* ``report``: the report's values and their stable JSON form (``to_json``).
* ``many``: rows, aggregates, sorting and ``--fail-on`` conditions over many reports.
* ``view`` and ``picture``: the report drawn for a person (rich on a terminal, plain text
  elsewhere), imported only by the CLI edge.
"""

from __future__ import annotations

from .core import Inspector
from .report import StreamReport, to_json

__all__ = ["Inspector", "StreamReport", "to_json"]
