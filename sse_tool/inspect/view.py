"""The report for a person: one stream in full, or many as rows and aggregates.

Pure: reports in, lines out (lists of (text, style) segments, at most ``WIDTH`` columns),
so the same lines are printed plain into a pipe or a file and in colour on a terminal
(``show``: rich is imported only then). It knows nothing of files, exit codes or clocks.
"""

from __future__ import annotations

import re

from ..plural import count
from ..render.controls import safe
from .many import Summary, burst_share, stall_seconds, tokens_per_second
from .picture import Line, picture
from .report import Rate, StreamReport

WIDTH = 80
_VERDICT_STYLE = {"complete": "ok", "truncated": "bad", "error": "bad"}
_MARK = {"complete": "✔", "truncated": "✘", "error": "✘"}
#: rich styles of the segments' style names
STYLES = {
    "title": "bold", "label": "dim", "dim": "dim", "ok": "bold green", "bad": "bold red",
    "warn": "yellow", "answer": "green", "reasoning": "magenta", "tool": "yellow",
    "stall": "bold red", "value": "",
}


def seconds(t: float | None, unit: bool = True) -> str:
    if t is None:
        return "—"
    text = f"{t:.3f}" if t < 10 else f"{t:.2f}" if t < 100 else f"{t:.1f}" if t < 1000 else f"{t:.0f}"
    return text + " s" if unit else text


def _count(n: float) -> str:
    """Tokens, whole: an estimate or a share of a total is no more exact than that."""
    return "<1" if 0 < n < 0.5 else f"{round(n):,}"


def _rate(rate: Rate | None) -> str:
    if rate is None:
        return "—"
    per = rate.per_second
    basis = {"usage": "usage", "usage-split": "usage, split by text", "estimate": "estimated"}[rate.basis]
    mark = "≈" if rate.basis == "estimate" else ""
    if per is None:
        return f"{mark}{_count(rate.tokens)} tokens ({basis}) all at once"
    return f"{mark}{per:,.1f} tok/s  {mark}{_count(rate.tokens)} tokens ({basis}) in {seconds(rate.seconds)}"


def _field(label: str, value: str, style: str = "value") -> Line:
    return [("    " + label.ljust(18), "label"), (value, style)]


def _heading(text: str) -> Line:
    return [("  " + text, "title")]


def report_lines(report: StreamReport, met: list | None = None) -> list[Line]:
    """One stream, in full."""
    name = report.name if len(report.name) <= WIDTH - 18 else "…" + report.name[-(WIDTH - 19):]
    lines: list[Line] = [[("sse-tool inspect: ", "dim"), (name, "title")]]
    what = [report.provider, report.model, _input_words(report)]
    lines += _wrapped([("  " + " · ".join(w for w in what if w), "dim")])
    lines.append([])
    style = _VERDICT_STYLE[report.verdict]
    cause = report.cause.replace("_", " ")
    if report.verdict == "complete" and report.cause == "refusal":
        cause = "the model refused" + (f" (stop reason {report.stop_reason})" if report.stop_reason else "")
    elif report.verdict == "complete" and report.stop_reason:
        said = report.cause in ("end_turn", "other") or report.stop_reason.lower().replace("_", " ") == cause
        cause = report.stop_reason if said else f"{report.stop_reason} ({cause})"
    usage = "usage reported" if report.usage_reported else "no usage reported"
    lines.append([(f"  {_MARK[report.verdict]} {report.verdict}: {cause}", style), (f" · {usage}", "dim")])
    if report.verdict != "complete":
        lines += _wrapped([("    " + _one_line(report.detail), "")])
    if report.stopped_early:
        lines.append([("    the model stopped early", "warn")])
    for note in report.notes:
        lines += _wrapped([("    " + note, "warn")])
    if met:
        lines.append([("    --fail-on: " + ", ".join(c.label() for c in met), "bad")])
    if report.timed:
        lines += _timing(report)
    else:
        lines += [[], [("  No timing: a plain stream file (a recording, fetch --record, has it).", "dim")]]
    lines += _sizes(report)
    art = picture(report, WIDTH) if report.series or report.keepalive_times else []
    if art:
        lines += [[], _heading("Picture") + [("  (characters over time; ━ longest stall, ┴ keep-alive)", "dim")]]
        lines += art
    return lines


def _input_words(report: StreamReport) -> str:
    kind = {"sse": "SSE", "json-array": "JSON array", "ndjson": "NDJSON", "events": "frame records",
            "records": "channel records", "aws-eventstream": "Bedrock eventstream",
            }.get(report.source or "", "no stream")
    if report.cause == "http_error" and report.http is not None:  # (not a failure passed on)
        kind = "an error body"
    if report.origin == "recording":
        http = report.http
        head = f", HTTP {http.status}" if http and http.status else ""
        ctype = f" {http.content_type}" if http and http.content_type else ""
        return f"{kind} · recording{head}{ctype}"
    return f"{kind} · {report.origin}"


def _timing(report: StreamReport) -> list[Line]:
    tl = report.timeline
    origin = "the request was sent" if tl.origin == "request" else "inspect began reading"
    lines = [[], _heading("Timeline") + [(f"  (seconds after {origin})", "dim")]]
    moments = [("request sent", tl.request), ("response head", tl.response_head),
               ("first byte", tl.first_byte), ("first event", tl.first_event),
               ("first reasoning", tl.first_reasoning), ("first answer", tl.first_answer),
               ("first tool call", tl.first_tool_call), ("last token", tl.last_token), ("end", tl.end)]
    left, right = moments[:5], moments[5:]
    for i, (name, t) in enumerate(left):
        row = [("    " + name.ljust(17), "label"), (seconds(t, False).rjust(8), "value")]
        if i < len(right):
            row += [("      " + right[i][0].ljust(17), "label"), (seconds(right[i][1], False).rjust(8), "value")]
        lines.append(row)
    if tl.response_head is None and tl.origin == "request":
        lines.append([("    (a recording does not keep the time of the response head)", "dim")])
    phases = [f"time to first token {seconds(tl.first_token)}"]
    if tl.reasoning_phase:
        phases.append(f"reasoning {seconds(tl.reasoning_phase[1] - tl.reasoning_phase[0])}")
    if tl.answer_phase:
        phases.append(f"answer {seconds(tl.answer_phase[1] - tl.answer_phase[0])}")
    lines.append([("    " + " · ".join(phases), "title")])

    rates = report.rates
    if rates.output is None and not report.sizes.events:
        return lines  # no stream: nothing more was timed
    lines += [[], _heading("Rates") + [("  (output tokens per second, per phase)", "dim")]]
    lines.append(_field("output", _rate(rates.output)))
    if rates.reasoning is not None:
        lines.append(_field("reasoning", _rate(rates.reasoning)))
    if rates.answer is not None and rates.reasoning is not None:
        lines.append(_field("answer", _rate(rates.answer)))
    per = [f"{rates.chars_per_second:,.0f} chars/s" if rates.chars_per_second is not None else None,
           f"{rates.events_per_second:,.1f} events/s" if rates.events_per_second is not None else None]
    if any(per):
        lines.append(_field("text and events", " · ".join(p for p in per if p)))

    gaps = report.gaps
    lines += [[], _heading("Gaps")]
    if gaps.count:
        lines.append(_field("between events", f"p50 {seconds(gaps.p50)} · p95 {seconds(gaps.p95)} · "
                                               f"max {seconds(gaps.max)} ({count(gaps.count, 'gap', grouped=True)})"))
    stall = gaps.stall
    if stall is not None:
        where = {"between": "between two tokens", "after": "after the last token",
                 "before": "and no token at all"}[stall.where]
        at = f"at {seconds(stall.start)}"
        lines.append(_field("longest stall", f"{seconds(stall.seconds)} {where}, {at}",
                            "stall" if stall.seconds >= 5 else "value"))
        if stall.channel is not None:
            name = stall.channel.replace("_", " ")
            lines.append(_field("", f"{name} character {stall.position:,} (byte {stall.offset:,} of the input)"))
            if stall.context:
                lines.append(_field("", "…" + _one_line(stall.context)[-54:], "dim"))
        if stall.keepalives:
            lines.append(_field("", f"kept alive by {count(stall.keepalives, 'comment', grouped=True)}, no content"))
    sz = report.sizes
    lines.append(_field("keep-alives", f"{count(sz.keepalives, 'comment', grouped=True)}, counted apart from events"))

    dl = report.delivery
    lines += [[], _heading("Delivery")]
    shape = f"{count(dl.events, 'event', grouped=True)} in {count(dl.chunks, 'chunk', grouped=True)}"
    if dl.multi_event_chunks:
        shape += f"; {count(dl.multi_event_chunks, 'chunk', grouped=True)} held several (up to {dl.events_per_chunk_max})"
    if dl.split_events:
        shape += f"; {count(dl.split_events, 'event', grouped=True)} split over several chunks (up to {dl.chunks_per_event_max})"
    lines += _wrapped(_field("chunks", shape))
    burst = dl.burst
    if burst is not None and not burst.window:
        lines.append(_field("spread", f"all of the content at once, at {seconds(report.timeline.last_token)}"))
    elif burst is not None:
        largest = f"{burst.largest:.0%}" if burst.largest >= 0.1 else f"{burst.largest:.1%}"
        share = f"{burst.content_share:.0%} of the content in {burst.share:.0%} of its time " \
                f"({seconds(burst.seconds, False)} of {seconds(burst.window)}); the fullest chunk " \
                f"brought {largest}"
        lines += _wrapped(_field("spread", share))
    if burst is not None and burst.bursty:
        lines += _wrapped(_field("", "delivered in bursts: most of the content arrived at once, as "
                                     "through a buffering proxy (the rates above are its, not the model's)",
                                 "bad"))
    return lines


def _sizes(report: StreamReport) -> list[Line]:
    sz, tk = report.sizes, report.tokens
    lines = [[], _heading("Sizes")]
    ends = None if report.source == "aws-eventstream" else \
        {"lf": "LF", "crlf": "CRLF", "cr": "CR", "mixed": "mixed"}.get(sz.line_ends or "", "no")
    if not sz.events:
        lines.append(_field("bytes", f"{sz.bytes:,} in {count(sz.chunks, 'chunk', grouped=True)}, no event"))
        return lines
    lines.append(_field("bytes", f"{sz.bytes:,} in {count(sz.events, 'event', grouped=True)} and {count(sz.chunks, 'chunk', grouped=True)}; "
                                 f"largest event {sz.largest_event:,} B"))
    shape = [f"{ends} line ends" if ends else "binary frames",
             count(sz.comments, "comment", grouped=True)] + ([count(report.resets, "reset")] if report.resets else [])
    lines.append(_field("shape", " · ".join(shape)))
    text = f"answer {sz.answer_chars:,} · reasoning {sz.reasoning_chars:,}"
    if sz.refusal_chars:
        text += f" · refusal {sz.refusal_chars:,}"
    text += " characters"
    if sz.tool_calls:
        text += f" · {count(sz.tool_calls, 'tool call')}, {sz.tool_call_chars:,} characters of arguments"
    lines += _wrapped(_field("text", text))
    if report.usage_reported:
        parts = [f"{name} {value:,}" for name, value in (("input", tk.input), ("output", tk.output),
                                                          ("reasoning", tk.reasoning), ("cached", tk.cached))
                 if value is not None]
        parts += [f"{k} {v:g}" for k, v in (tk.credits or {}).items()]
        lines += _wrapped(_field("usage", " · ".join(parts) or "reported, no token counts"))
    return lines


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ⏎ ")


def _wrapped(line: Line, width: int = WIDTH) -> list[Line]:
    """A line cut into lines of at most ``width`` columns at spaces, indented like the first."""
    text = "".join(t for t, _ in line)
    if len(text) <= width:
        return [line]
    if line[0][1] == "label" and len(line) > 1:  # a field: under its value
        indent = " " * len(line[0][0])
    else:
        indent = " " * (len(text) - len(text.lstrip(" ")))
    out: list[Line] = []
    current: Line = []
    used = 0
    for segment, style in line:
        for word in _words(segment):
            if used + len(word) > width and used > len(indent):
                out.append(current)
                current, used = [(indent, "")], len(indent)
                word = word.lstrip(" ")
            current.append((word, style))
            used += len(word)
    out.append(current)
    return out


def _words(text: str) -> list[str]:
    """``text`` cut before each space that follows a word, a unit kept with its number."""
    words, start = [], 0
    for i in range(1, len(text)):
        if text[i] == " " and text[i - 1] != " " and not _UNIT.match(text, i):
            words.append(text[start:i])
            start = i
    words.append(text[start:])
    return words


_UNIT = re.compile(r" (s|B|tok/s)\b")


# -- many streams -------------------------------------------------------------------------


def table_lines(results: list, summary: Summary) -> list[Line]:
    """One row per stream, then the aggregates."""
    folder = _common_folder([r.name for r, _ in results])
    names = [r.name[len(folder):] for r, _ in results]
    # 2 + 20 + 2 + 22 + 25 + 6 (+ 2 for a finding's mark): 79 columns at most
    name_width = min(20, max([4] + [len(n) for n in names]))
    head = f"  {'file'.ljust(name_width)}  {'verdict'.ljust(22)} {'ttft':>7} {'tok/s':>7} {'stall':>7} {'burst':>5}"
    lines: list[Line] = [[(f"  in {folder}", "dim")]] if folder else []
    lines.append([(head, "title")])
    for (report, met), name in zip(results, names):
        name = name if len(name) <= name_width else "…" + name[-name_width + 1:]
        verdict = f"{report.verdict} {report.cause.replace('_', ' ')}"
        verdict = verdict if len(verdict) <= 22 else verdict[:21] + "…"
        tps = tokens_per_second(report)
        share = burst_share(report)
        row = [(f"  {name.ljust(name_width)}  ", ""),
               (verdict.ljust(22), _VERDICT_STYLE[report.verdict]),
               (f" {seconds(report.ttft, False):>7} {_num(tps):>7} {seconds(stall_seconds(report), False):>7} ", ""),
               (f"{'—' if share is None else f'{share:.0%}':>5}", ""),
               ("!" if report.delivery.burst and report.delivery.burst.bursty else " ", "bad")]
        if met:
            row.append((" ✘", "bad"))
        lines.append(row)
    lines.append([])
    counts = [f"{n} {v}" for v, n in summary.verdicts.items() if n]
    lines.append([(f"  {count(summary.streams, 'stream', grouped=True)}: " + ", ".join(counts), "title")])
    for verdict, causes in summary.causes.items():
        text = ", ".join(f"{cause.replace('_', ' ')} {n}" for cause, n in causes.items())
        lines += _wrapped([(f"    {verdict}: ", "label"), (text, _VERDICT_STYLE[verdict])])
    if summary.unreadable or summary.empty:
        lines.append([(f"    not read: {summary.unreadable} unreadable, {summary.empty} empty", "warn")])
    lines.append([(f"    {'':14}{'p50':>10}{'p95':>10}{'max':>10}   of", "label")])
    for label, spread, fmt in (("ttft (s)", summary.ttft, lambda v: seconds(v, False)),
                               ("tokens/s", summary.tps, _num),
                               ("stall (s)", summary.stall, lambda v: seconds(v, False))):
        lines.append([(f"    {label:14}", "label"),
                      (f"{fmt(spread.p50):>10}{fmt(spread.p95):>10}{fmt(spread.max):>10}   {spread.count}", "")])
    if any(r.delivery.burst and r.delivery.burst.bursty for r, _ in results):
        lines.append([("    ! delivered in bursts (most of the content at once)", "dim")])
    if summary.findings:
        text = ", ".join(f"{name} {n}" for name, n in summary.findings.items())
        lines.append([("    --fail-on: ", "label"), (text, "bad")])
    return lines


def _common_folder(names: list[str]) -> str:
    """The folder all ``names`` share (with its slash), or ""."""
    import os.path

    if len(names) < 2 or any("/" not in n for n in names):
        return ""
    folder = os.path.commonpath(names) if len({n.startswith("/") for n in names}) == 1 else ""
    return folder + "/" if folder and folder not in names else ""


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


# -- output -------------------------------------------------------------------------------


def plain(lines: list[Line]) -> str:
    # the provider's words (a model name, an error message) hold no command for a terminal
    # that shows the report later (`cat`) either
    return safe("".join("".join(text for text, _ in line).rstrip() + "\n" for line in lines))


def show(lines: list[Line], file, *, color: bool) -> None:
    """Print ``lines`` on a terminal with rich (in colour unless ``color`` is False)."""
    from rich.console import Console
    from rich.text import Text

    console = Console(file=file, force_terminal=True, highlight=False,
                      color_system="auto" if color else None, no_color=not color)
    console.width = min(WIDTH, console.width)  # a narrower terminal crops, never wraps
    for line in lines:
        text = Text(no_wrap=True, overflow="crop")
        for segment, style in line:
            text.append(safe(segment), style=STYLES.get(style, "") if color else "")
        console.print(text)
