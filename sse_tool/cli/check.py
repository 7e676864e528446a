"""``sse-tool check``: captured streams (or recordings) in, protocol findings out.

The edge around ``sse_tool.check``: reads each input as it arrives (a recording, told by its
first line, is read whole: its headers are checked too), filters the findings (``--ignore``,
``--max-per-rule``), writes them in the chosen format (JSON Lines and annotations as they
come, a table per input, one SARIF log at the end) and exits 10 when a finding reaches
``--fail-on``.
"""

from __future__ import annotations

import io
import sys
from collections import Counter
from enum import Enum
from operator import attrgetter
from typing import List, Optional

import orjson
import typer

from ..errors import BadInput, ExitCode
from ..framing import FRAMERS
from ..plural import count
from ..providers import PROVIDERS
from ..sse import DEFAULT_MAX_EVENT_SIZE
from ..marker import NO_STREAM
from ._edge import Output, inputs, parse_size, run_stage, warn

Provider = Enum("Provider", {name: name for name in ["auto", *PROVIDERS]}, type=str)
From = Enum("From", {name: name for name in ["auto", *FRAMERS, "recording"]}, type=str)
Format = Enum("Format", {name: name for name in ("table", "json", "sarif", "github")}, type=str)
Level = Enum("Level", {name: name for name in ("error", "warning", "note", "never")}, type=str)

EPILOG = """\b
Examples:
  sse-tool check capture.sse
  sse-tool fetch --provider openai --model gpt-4o-mini --prompt hi | sse-tool check
  sse-tool check --format sarif --fail-on warning captures/*.sse why.rec > check.sarif
  sse-tool check --format github --ignore sse.comment-only-block recording.rec
  sse-tool check --rules

\b
Findings: a rule id (sse-tool check --rules), a severity (error: breaks the protocol;
warning: legal, but breaks named clients; note), the line, byte offset and event index
(0-based) where it is, and what is wrong. A recording (fetch --record) is checked with its
status and headers; its lines are the recording's.

\b
Exit status:
  0  no finding at or above --fail-on (default: error)
  10 findings at or above --fail-on
  3  an input was empty: no stream arrived (as from a fetch that failed before its body)
  2  usage error (an unknown rule in --ignore, a missing file)
  5  an input could not be read as a stream (data of no framing, a broken recording, an
     event over --max-event-size); the other inputs are still checked
  130 interrupted (the findings of what arrived are still shown); 141 the reader closed
      the pipe (quietly)

\b
Environment (see man sse-tool-check):
  NO_COLOR, FORCE_COLOR  colour of the table on a terminal
  SSE_TOOL_DEBUG=1       show the traceback of an internal error (as sse-tool --debug)
"""

_MAGIC = b"sse-tool recording"
_RULE_ID = attrgetter("rule.id")


class _NoStream(Exception):
    """An input of no byte at all."""


def check(
    files: Optional[List[str]] = typer.Argument(
        None, help="Captured streams or recordings, each checked on its own (default: stdin; - is stdin)."
    ),
    provider: Provider = typer.Option(
        "auto", "--provider", "-p", help="The dialect whose rules apply; auto recognises it from the first events."
    ),
    source: From = typer.Option(
        "auto", "--from", help="What the input is; auto decides from the first bytes (a recording by its first line)."
    ),
    fmt: Format = typer.Option(
        "table", "--format", "-f", help="table for a person, json (JSON Lines), sarif (SARIF 2.1.0) or github (annotations)."
    ),
    fail_on: Level = typer.Option(
        "error", "--fail-on", help="Exit 10 when a finding is at least this severe (never: always exit 0)."
    ),
    ignore: Optional[List[str]] = typer.Option(
        None, "--ignore", metavar="RULE", help="Skip a rule, or a family (sse, chat, ...); repeatable."
    ),
    max_per_rule: int = typer.Option(
        20, "--max-per-rule", min=0, metavar="N",
        help="Report at most N findings of each rule per input (0: all); the exit status counts all.",
    ),
    max_event_size: str = typer.Option(
        f"{DEFAULT_MAX_EVENT_SIZE // 2**20}MiB", "--max-event-size", metavar="SIZE",
        help="Stop checking an input (exit 5) when one event grows past SIZE (e.g. 16MiB).",
    ),
    list_rules: bool = typer.Option(
        False, "--rules", help="List every rule (id, severity, what it checks, clients it breaks) and exit."
    ),
) -> None:
    """Check captured streams against the SSE and HTTP rules and their provider's protocol.

    Reads raw stream bytes (SSE, a streamed JSON array, NDJSON, an AWS event stream) or fetch --record recordings,
    and reports each problem with its rule, severity and place, in the order of the input.
    """
    from ..check.rules import RULES

    limit = parse_size(max_event_size, "--max-event-size")
    skipped = _ignored(ignore or [], RULES)
    threshold = None if fail_on.value == "never" else fail_on.value

    def body() -> int:
        from ..check.core import NoStreamRecorded

        out = Output()
        if list_rules:
            return _list_rules(out, fmt.value)
        report = _Report(fmt.value, out, max_per_rule)
        failed = bad = empty = False
        for name, chunks in inputs(files):
            try:
                failed |= _check_one(name, chunks, report, provider.value, source.value, limit, skipped, threshold)
            except BadInput as exc:
                warn("check", f"{name}: {exc}")
                bad = True
            except _NoStream:  # an earlier stage failed before its first byte: never a pass
                warn("check", f"{name}: {NO_STREAM}")
                empty = True
            except NoStreamRecorded as exc:
                warn("check", f"{name}: no stream arrived: {exc}")
                empty = True
        report.finish()
        if bad:
            return ExitCode.BAD_INPUT
        if empty:
            return ExitCode.TRUNCATED
        return ExitCode.FINDINGS if failed else ExitCode.OK

    run_stage("check", body)


def _ignored(names: list[str], rules: dict) -> set[str]:
    families = {r.split(".")[0] for r in rules}
    out: set[str] = set()
    for name in names:
        if name in rules:
            out.add(name)
        elif name.rstrip(".*") in families:
            family = name.rstrip(".*")
            out.update(r for r in rules if r.split(".")[0] == family)
        else:
            raise typer.BadParameter(f"no rule or family {name!r} (see sse-tool check --rules)", param_hint="--ignore")
    return out


def _check_one(name: str, chunks, report: "_Report", provider: str, source: str, limit: int,
               skipped: set[str], threshold: str | None) -> bool:
    """Check one input; True when a finding reaches the threshold."""
    from ..check import RULES, Checker, Severity, check_recording

    level = Severity[threshold.upper()] if threshold else None
    failed = False

    def take(findings) -> None:
        nonlocal failed
        kept = [f for f in findings if f.rule.id not in skipped] if skipped else findings
        if level is not None and not failed and any(RULES[r].severity >= level for r in set(map(_RULE_ID, kept))):
            failed = True
        report.add(kept)

    head = b""
    chunks = iter(chunks)
    if source in ("auto", "recording"):  # a recording is told by its first line
        for chunk in chunks:
            head += chunk
            if len(head) >= len(_MAGIC):
                break
        if source == "recording" or head.startswith(_MAGIC):
            data = head + b"".join(chunks)
            if not data:
                raise _NoStream
            report.begin(name, plain=False)
            found, checker = check_recording(data, provider, max_event_size=limit, per_rule=report.max_per_rule)
            take(found)
            report.left_out(checker.dropped if checker is not None else {}, skipped)
            report.end(_about(checker, "a recording"))
            return failed
    checker = Checker(provider, source if source != "auto" else "auto", max_event_size=limit,
                      per_rule=report.max_per_rule)
    report.begin(name, plain=True)
    received = len(head)
    if head:
        take(checker.feed(head))
    try:
        for chunk in chunks:
            received += len(chunk)
            take(checker.feed(chunk))
    except KeyboardInterrupt:  # the findings of what arrived are still shown (then exit 130)
        if received:
            report.end(_about(checker) + ", interrupted")
        raise
    if not received:
        report.discard()
        raise _NoStream
    take(checker.close())
    report.left_out(checker.dropped, skipped)
    report.end(_about(checker))
    return failed


def _about(checker, what: str = "") -> str:
    if checker is None:
        return f"{what}, an HTTP error"
    parts = [what] if what else []
    parts += [checker.provider or "no provider recognised", checker.framing or "sse",
              count(checker.events, "event")]
    return ", ".join(parts)


class _Report:
    """Findings out in one format: JSON Lines and annotations as they come, a table per
    input, one SARIF log at the end."""

    def __init__(self, fmt: str, out: Output, max_per_rule: int) -> None:
        self.fmt = fmt
        self.out = out
        self.max_per_rule = max_per_rule
        self._sarif: list = []
        self._name = ""
        self._plain = True
        self._rows: list = []
        self._seen: dict[str, int] = {}
        self._left_out = 0
        self._tally: dict = {}

    def begin(self, name: str, plain: bool) -> None:
        self._name, self._plain = name, plain
        self._rows, self._seen, self._left_out = [], {}, 0
        self._tally = {}

    def add(self, findings: list) -> None:
        if not findings:
            return
        from ..check import RULES, report

        # counted per rule, not per finding: a stream may give one finding an event
        counts = Counter(map(_RULE_ID, findings))
        limit, seen, tally = self.max_per_rule, self._seen, self._tally
        over = False
        for rule_id, n in counts.items():
            severity = RULES[rule_id].severity
            tally[severity] = tally.get(severity, 0) + n
            seen[rule_id] = seen.get(rule_id, 0) + n
            over |= bool(limit) and seen[rule_id] > limit
        shown = findings
        if over:
            shown = []
            number = {rule_id: seen[rule_id] - n for rule_id, n in counts.items()}  # before these
            for f in findings:
                n = number[f.rule.id] = number[f.rule.id] + 1
                if n > limit:
                    self._left_out += 1
                else:
                    shown.append(f)
        if not shown:
            return
        if self.fmt == "json":
            self.out.send(report.json_lines(shown, self._name))
        elif self.fmt == "github":
            self.out.send("".join(report.github(f, self._name) + "\n" for f in shown).encode())
        elif self.fmt == "sarif":
            self._sarif += [(self._name, f, self._plain) for f in shown]
        else:
            self._rows += shown

    def left_out(self, dropped: dict[str, int], skipped) -> None:
        """The findings the checker counted past the cap instead of keeping them."""
        from ..check import RULES

        for rule_id, n in dropped.items():
            if rule_id in skipped:
                continue
            severity = RULES[rule_id].severity
            self._tally[severity] = self._tally.get(severity, 0) + n
            self._seen[rule_id] = self._seen.get(rule_id, 0) + n
            self._left_out += n

    def discard(self) -> None:
        self._rows = []

    def end(self, about: str) -> None:
        if self._left_out:
            warn("check", f"{self._name}: {self._left_out} more findings not shown (--max-per-rule {self.max_per_rule})")
        if self.fmt != "table":
            return
        from ..check import report

        # into a pipe or a file, one line per finding, whatever its length (for grep)
        _print_table(self.out, lambda console: report.table(console, self._name, self._rows, about,
                                                             self._tally, self._left_out), width=100_000)

    def finish(self) -> None:
        if self.fmt == "sarif":
            from ..check import report

            self.out.send(orjson.dumps(report.sarif(self._sarif), option=orjson.OPT_INDENT_2) + b"\n")


def _print_table(out: Output, draw, width: int | None = None) -> None:
    """A rich table (``draw(console)``): on a terminal in colour, as rich decides from
    NO_COLOR and FORCE_COLOR; into a pipe or a file plain text whatever they say, ``width``
    columns wide (rich's default, COLUMNS or 80, if None), no padding at the ends of lines,
    and written through ``out``, so that a full or closed stdout is exit 11 as for the
    other formats."""
    from rich.console import Console

    if sys.stdout.isatty():
        draw(Console(file=sys.stdout, highlight=False, soft_wrap=False))
        return
    text = io.StringIO()
    draw(Console(file=text, highlight=False, soft_wrap=False, color_system=None, width=width))
    out.send("".join(line.rstrip() + "\n" for line in text.getvalue().splitlines()).encode())


def _list_rules(out: Output, fmt: str) -> int:
    from ..check import report
    from ..check.rules import RULES

    if fmt == "json":
        out.send(b"".join(orjson.dumps(report.rule_record(r)) + b"\n" for r in RULES.values()))
    elif fmt == "sarif":
        out.send(orjson.dumps(report.sarif([]), option=orjson.OPT_INDENT_2) + b"\n")
    elif fmt == "github":
        out.send("".join(f"{r.id}\t{r.severity.label}\t{r.summary}\n" for r in RULES.values()).encode())
    else:
        _print_table(out, report.rules_table)
    return ExitCode.OK
