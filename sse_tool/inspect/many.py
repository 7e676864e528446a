"""Many reports at once: rows, aggregates, sorting, and ``--fail-on`` conditions.

Pure functions of ``StreamReport`` values: the CLI edge decides where the results go.
A condition names a finding that a CI gate fails on, and each has the exit code the
finding has everywhere else in sse-tool (truncated 3, error 4, stopped early 9), or 10 for
a threshold crossed (a stall, a late first token, a slow rate, a burst).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..errors import ExitCode, SseToolError
from ..units import parse_duration
from .figures import percentile
from .report import VERSION, StreamReport

#: --fail-on names: flags, then thresholds (NAME=VALUE)
FLAGS = ("truncated", "error", "early", "burst")
THRESHOLDS = ("stall", "ttft", "tps")
#: --sort keys
SORT_KEYS = ("given", "file", "verdict", "ttft", "tps", "stall", "burst", "duration", "bytes")


class FailOnError(SseToolError):
    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class Condition:
    name: str
    limit: float | None = None

    @property
    def exit_code(self) -> ExitCode:
        return {"truncated": ExitCode.TRUNCATED, "error": ExitCode.PROVIDER_ERROR,
                "early": ExitCode.STOPPED_EARLY}.get(self.name, ExitCode.FINDINGS)

    def label(self) -> str:
        if self.limit is None:
            return self.name
        return f"{self.name}={self.limit:g}" + ("" if self.name == "tps" else "s")

    def met(self, report: StreamReport) -> bool:
        name = self.name
        if name == "truncated":
            return report.verdict == "truncated"
        if name == "error":
            return report.verdict == "error"
        if name == "early":
            return report.stopped_early
        if not report.timed:  # a plain file has no timing to judge
            return False
        if name == "burst":
            burst = report.delivery.burst
            return burst is not None and burst.bursty
        if name == "stall":
            stall = report.gaps.stall
            return stall is not None and _shown(stall.seconds) >= self.limit
        if name == "ttft":  # a token that never came is later than any limit
            return report.ttft is None or _shown(report.ttft) >= self.limit
        rate = report.rates.output.per_second if report.rates.output is not None else None
        return rate is not None and _shown(rate) < self.limit  # tps: output slower than the limit


def _shown(value: float) -> float:
    """A figure as the report gives it (to the microsecond): the threshold is judged on
    that, not on the float sum that made it (4.1 - 1.1 is 2.9999999999999996, not 3)."""
    return round(value, 6)


_CONDITION = re.compile(r"\s*([a-z]+)\s*(?:=\s*(\S+))?\s*")


def parse_fail_on(text: str) -> list[Condition]:
    """``truncated,error,stall=30s`` -> conditions, in the order given."""
    out = []
    for part in text.split(","):
        m = _CONDITION.fullmatch(part)
        name, value = (m.group(1), m.group(2)) if m else (part.strip(), None)
        if name in FLAGS and value is None:
            out.append(Condition(name))
        elif name in THRESHOLDS and value is not None:
            try:
                limit = float(value.removesuffix("/s")) if name == "tps" else parse_duration(value)
            except ValueError:
                raise FailOnError(f"--fail-on {name}={value}: not a {'number' if name == 'tps' else 'duration'}") from None
            out.append(Condition(name, limit))
        else:
            raise FailOnError(
                f"--fail-on: unknown condition {part.strip()!r} (choose from {', '.join(FLAGS)}, "
                "stall=DURATION, ttft=DURATION, tps=N)")
    return out


def findings(report: StreamReport, conditions: list[Condition]) -> list[Condition]:
    return [c for c in conditions if c.met(report)]


def exit_code(results: list[tuple[StreamReport, list[Condition]]]) -> ExitCode:
    """The code of the first condition met, streams in order, conditions in the order given."""
    for _, met in results:
        if met:
            return met[0].exit_code
    return ExitCode.OK


# -- rows and aggregates ----------------------------------------------------------------


def tokens_per_second(report: StreamReport) -> float | None:
    return report.rates.output.per_second if report.rates.output is not None else None


def stall_seconds(report: StreamReport) -> float | None:
    return report.gaps.stall.seconds if report.gaps.stall is not None else None


def burst_share(report: StreamReport) -> float | None:
    return report.delivery.burst.share if report.delivery.burst is not None else None


_VERDICT_ORDER = {"complete": 0, "truncated": 1, "error": 2}
_KEYS = {
    "file": lambda r: r.name,
    "verdict": lambda r: (_VERDICT_ORDER.get(r.verdict, 3), r.cause),
    "ttft": lambda r: r.ttft,
    "tps": tokens_per_second,
    "stall": stall_seconds,
    "burst": burst_share,
    "duration": lambda r: r.timeline.end,
    "bytes": lambda r: r.sizes.bytes,
}


def sort_reports(reports: list, key: str = "given", reverse: bool = False) -> list:
    """Reports (or (report, ...) tuples) by ``key``, ascending unless ``reverse``; those
    without the figure (an untimed file, no token) come last either way."""
    if key == "given":
        return list(reversed(reports)) if reverse else list(reports)
    get = _KEYS[key]

    def value(item):
        return get(item[0] if isinstance(item, tuple) else item)

    known = [item for item in reports if value(item) is not None]
    unknown = [item for item in reports if value(item) is None]
    return sorted(known, key=value, reverse=reverse) + unknown


@dataclass(frozen=True)
class Spread:
    count: int
    p50: float | None
    p95: float | None
    max: float | None


def spread(values: list[float | None]) -> Spread:
    known = sorted(v for v in values if v is not None)
    return Spread(len(known), percentile(known, 50), percentile(known, 95), known[-1] if known else None)


@dataclass(frozen=True)
class Summary:
    streams: int
    verdicts: dict
    causes: dict  # verdict -> {cause: count}
    ttft: Spread
    tps: Spread
    stall: Spread
    unreadable: int = 0
    empty: int = 0
    findings: dict | None = None
    exit_code: int = 0


def summarize(reports: list[StreamReport], *, unreadable: int = 0, empty: int = 0,
              met: list[list[Condition]] | None = None, code: int = 0) -> Summary:
    verdicts = Counter(r.verdict for r in reports)
    causes: dict = {}
    for r in reports:
        causes.setdefault(r.verdict, Counter())[r.cause] += 1
    found = Counter(c.label() for m in met or [] for c in m)
    return Summary(
        streams=len(reports),
        verdicts={v: verdicts.get(v, 0) for v in ("complete", "truncated", "error")},
        causes={v: dict(sorted(c.items())) for v, c in sorted(causes.items(), key=lambda i: _VERDICT_ORDER[i[0]])},
        ttft=spread([r.ttft for r in reports]),
        tps=spread([tokens_per_second(r) for r in reports]),
        stall=spread([stall_seconds(r) for r in reports]),
        unreadable=unreadable, empty=empty, findings=dict(found), exit_code=int(code))


def _spread_json(s: Spread, digits: int = 6) -> dict:
    def r(v):
        return None if v is None else round(v, digits)

    return {"count": s.count, "p50": r(s.p50), "p95": r(s.p95), "max": r(s.max)}


def summary_json(s: Summary) -> dict:
    """The documented summary object (``--json``, last line)."""
    return {
        "kind": "summary", "version": VERSION, "streams": s.streams, "unreadable": s.unreadable,
        "empty": s.empty, "verdicts": s.verdicts, "causes": s.causes,
        "ttft": _spread_json(s.ttft), "tokens_per_second": _spread_json(s.tps, 3),
        "stall": _spread_json(s.stall), "findings": s.findings or {}, "exit_code": s.exit_code,
    }
