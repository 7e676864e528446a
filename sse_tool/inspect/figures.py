"""The figures of a report, from what the inspector kept: pure functions of plain values.

Kept apart from ``core`` so that each rule is stated once and can be tested alone:
percentiles (nearest rank), the longest stall, the burst share, rates and their basis,
token counts read from any dialect's usage, and the verdict with its cause.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from itertools import accumulate
from operator import add, itemgetter, sub

from ..errors import ExitCode
from ..model import EARLY_STOP_REASONS, End, Status, error_words
from ..normalize import NO_EVENTS
from .report import Burst, Gaps, Rate, Stall, Tokens

#: see ``burst``: the share of the content counted, the slots of the content window, the
#: share of them at most that make a burst, and the share of the content one chunk must
#: bring; a burst needs at least this many characters (about 50 tokens) and pieces of
#: content, or a short answer in one chunk would look like buffering
BURST_CONTENT = 0.9
BURST_SLOTS = 50
BURST_SHARE = 0.2
BURST_LARGEST = 0.1
BURST_MIN_CHARS = 200
BURST_MIN_PIECES = 20
#: characters of text shown before a stall
CONTEXT = 40


# -- percentiles and gaps -------------------------------------------------------------


def percentile(ordered: list[float], p: float, zeros: int = 0) -> float | None:
    """The nearest-rank ``p``-th percentile of ``zeros`` zeros followed by ``ordered``."""
    n = zeros + len(ordered)
    if not n:
        return None
    rank = max(1, math.ceil(p / 100 * n))
    return 0.0 if rank <= zeros else ordered[rank - zeros - 1]


def event_gaps(arrivals: list[tuple[float, int]]) -> Gaps:
    """Gaps between events, from (time, events completed) per chunk: the first event of a
    chunk waited since the previous event; the others of the chunk waited 0."""
    gaps = _gaps(list(map(itemgetter(0), arrivals)))
    gaps.sort()
    zeros = sum(map(itemgetter(1), arrivals)) - len(arrivals)
    return Gaps(count=len(gaps) + zeros, p50=percentile(gaps, 50, zeros),
                p95=percentile(gaps, 95, zeros), max=gaps[-1] if gaps else (0.0 if zeros else None))


def _gaps(times: list[float]) -> list[float]:
    """The differences of consecutive times (never negative: a hand-made recording may
    go back in time, which is no silence)."""
    gaps = list(map(sub, times[1:], times))
    if gaps and min(gaps) < 0:
        gaps = [max(0.0, g) for g in gaps]
    return gaps


# -- stalls -----------------------------------------------------------------------------


def longest_stall(series: list[tuple], start: float | None, end: float | None,
                  keepalives: list[float], texts: dict[str, str]) -> Stall | None:
    """The longest silence between two content arrivals, or after the last one until
    ``end``; with no content at all, from ``start`` (the first byte) to ``end``.

    ``series`` holds (time, answer chars, reasoning chars, tool chars, bytes so far) per
    chunk that brought content; ``texts`` the channels' texts, for the context.
    """
    best = None  # (seconds, start, end, index of the arrival before it or -1, where)
    times = list(map(itemgetter(0), series))
    gaps = _gaps(times)
    if gaps:
        i = gaps.index(max(gaps))  # the first of the longest
        best = (gaps[i], times[i], times[i + 1], i, "between")
    if series and end is not None and end - times[-1] > (best[0] if best else 0.0):
        best = (end - times[-1], times[-1], end, len(series) - 1, "after")
    if not series and start is not None and end is not None and end > start:
        best = (end - start, start, end, -1, "before")
    if best is None or best[0] <= 0:
        return None
    seconds, t0, t1, index, where = best
    channel, position, offset = None, 0, 0
    if index >= 0:
        last = series[index]
        # the channel the last arrival before the stall wrote to (the answer if several)
        k = next((k for k in range(3) if last[k + 1]), 2)
        channel = ("answer", "reasoning", "tool_call")[k]
        position = sum(map(itemgetter(k + 1), series[: index + 1]))
        offset = last[4]
    text = texts.get(channel or "", "")
    context = text[max(0, position - CONTEXT):position] if position <= len(text) else ""
    # keep-alives after the token that began the stall (from the first byte when no token did)
    inside = bisect_right(keepalives, t1) - (bisect_left if where == "before" else bisect_right)(keepalives, t0)
    return Stall(seconds, t0, t1, channel, position, context, offset, inside, where)


# -- bursts -----------------------------------------------------------------------------


def burst(series: list[tuple], pieces: int) -> Burst | None:
    """How the content was spread over its window (first token to last), cut into
    ``BURST_SLOTS`` equal slots (fewer when there are fewer ``pieces`` of content: deltas
    and tool-call pieces): the share of the slots that hold ``BURST_CONTENT`` of the
    characters, the fullest first. A stream that flows fills about that share of them;
    one held back and released in a few chunks fills a few. It is called a burst when
    the share is at most ``BURST_SHARE`` and one chunk alone brought at least
    ``BURST_LARGEST`` of the content (a stall in a flowing stream empties slots too, but
    brings no such chunk), given enough content to judge."""
    sizes = list(map(add, map(add, map(itemgetter(1), series), map(itemgetter(2), series)),
                     map(itemgetter(3), series)))
    total = sum(sizes)
    if not total:
        return None
    times = list(map(itemgetter(0), series))
    window = times[-1] - times[0]
    largest = max(sizes) / total
    share = 0.0
    if window > 0:
        slots = max(1, min(BURST_SLOTS, pieces))
        running = [0, *accumulate(sizes)]
        bounds = [bisect_left(times, times[0] + window * k / slots) for k in range(1, slots)]
        amounts = sorted(map(sub, map(running.__getitem__, [*bounds, len(times)]),
                             map(running.__getitem__, [0, *bounds])), reverse=True)
        used = bisect_left(list(accumulate(amounts)), BURST_CONTENT * total) + 1
        share = used / slots
    bursty = (total >= BURST_MIN_CHARS and pieces >= BURST_MIN_PIECES and share <= BURST_SHARE
              and largest >= BURST_LARGEST)
    return Burst(share, share * window, window, bursty, BURST_CONTENT, largest)


# -- tokens and rates -------------------------------------------------------------------

_WIDE = re.compile("[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def estimate_tokens(text: str) -> float:
    """About a token per four characters; one per CJK character (no tokenizer is exact
    for every model, so a report marks these figures as estimates)."""
    if text.isascii():
        return len(text) / 4
    wide = len(_WIDE.findall(text))
    return (len(text) - wide) / 4 + wide


def _number(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _first(usage: dict, *paths: str) -> int | None:
    for path in paths:
        value = usage
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if _number(value) is not None:
            return _number(value)
    return None


def read_tokens(usage: dict | None) -> Tokens:
    """Token counts from a usage object in any dialect's spelling: OpenAI Chat and
    Responses, Anthropic, Gemini, Ollama, Cohere, and servers that add credits."""
    if not usage:
        return Tokens()
    output = _first(usage, "completion_tokens", "output_tokens", "tokens.output_tokens", "eval_count",
                    "billed_units.output_tokens", "outputTokens")
    reasoning = _first(usage, "completion_tokens_details.reasoning_tokens",
                       "output_tokens_details.reasoning_tokens", "thoughtsTokenCount")
    if output is None and _first(usage, "candidatesTokenCount") is not None:
        # Gemini counts the thoughts apart from the candidates
        output = _first(usage, "candidatesTokenCount") + (reasoning or 0)
    elif output is None and reasoning is not None:
        output = reasoning
    credits = {k: v for k, v in usage.items()
               if "credit" in k.lower() and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return Tokens(
        input=_first(usage, "prompt_tokens", "input_tokens", "promptTokenCount", "tokens.input_tokens",
                     "prompt_eval_count", "billed_units.input_tokens", "inputTokens"),
        output=output,
        reasoning=reasoning,
        cached=_first(usage, "prompt_tokens_details.cached_tokens", "input_tokens_details.cached_tokens",
                      "cache_read_input_tokens", "cachedContentTokenCount", "cached_tokens",
                      "prompt_cache_hit_tokens", "cacheReadInputTokens"),
        credits=credits or None,
    )


def rates(tokens: Tokens, estimates: dict[str, float], phases: dict[str, tuple[float, float] | None],
          output_span: tuple[float, float] | None) -> tuple[Rate | None, Rate | None, Rate | None]:
    """(output, reasoning, answer) rates. ``estimates``: tokens estimated from the text of
    "reasoning" and "answer" (tool-call arguments included); ``phases``: their spans."""
    est_total = estimates["reasoning"] + estimates["answer"]

    def counted(phase: str) -> tuple[float, str]:
        if tokens.output is None:
            return estimates[phase], "estimate"
        if tokens.reasoning is not None:
            exact = tokens.reasoning if phase == "reasoning" else tokens.output - tokens.reasoning
            return float(max(exact, 0)), "usage"
        if not estimates["reasoning"] or not estimates["answer"]:  # one phase: all of it
            return (float(tokens.output) if estimates[phase] else 0.0), "usage"
        return tokens.output * estimates[phase] / est_total, "usage-split"

    def rate(count: tuple[float, str], span) -> Rate | None:
        if span is None or not count[0]:
            return None
        return Rate(count[0], span[1] - span[0], count[1])

    output = None
    if output_span is not None and (tokens.output or est_total):
        if tokens.output is not None:
            # Reasoning that was never streamed (hidden) happened before the first token.
            hidden = tokens.reasoning if tokens.reasoning and not estimates["reasoning"] else 0
            output = Rate(float(tokens.output - hidden), output_span[1] - output_span[0], "usage")
        else:
            output = Rate(est_total, output_span[1] - output_span[0], "estimate")
    return (output, rate(counted("reasoning"), phases["reasoning"]),
            rate(counted("answer"), phases["answer"]))


# -- verdict and cause ------------------------------------------------------------------

#: stop reasons (lower case, every dialect's spelling) -> the cause of a complete stream
STOP_CAUSES = {
    "end_turn": "end_turn", "stop": "end_turn", "completed": "end_turn", "complete": "end_turn",
    "succeeded": "end_turn", "end": "end_turn",
    "length": "length", "max_tokens": "length", "max_output_tokens": "length",
    "model_length": "length", "model_context_window_exceeded": "length", "incomplete": "length",
    "content_filter": "content_filter", "safety": "content_filter", "recitation": "content_filter",
    "blocklist": "content_filter", "prohibited_content": "content_filter", "spii": "content_filter",
    "image_safety": "content_filter", "image_prohibited_content": "content_filter",
    "language": "content_filter", "content_filtered": "content_filter", "guardrail_intervened": "content_filter",
    "refusal": "refusal",
    "tool_calls": "tool_use", "tool_use": "tool_use", "function_call": "tool_use", "tool_call": "tool_use",
    "stop_sequence": "stop_sequence",
    "pause_turn": "pause",
}


def stop_cause(stop_reason: str | None) -> str:
    if not isinstance(stop_reason, str):
        return "unknown"
    return STOP_CAUSES.get(stop_reason.lower(), "other")


def is_early(stop_reason: str | None) -> bool:
    return isinstance(stop_reason, str) and stop_reason.lower() in EARLY_STOP_REASONS


#: an earlier stage's failure passed on in-band (its exit marker), by its exit code
_PASSED_ON = {
    ExitCode.HTTP_ERROR: ("error", "http_error"), ExitCode.NETWORK: ("truncated", "network"),
    ExitCode.TIMEOUT: ("truncated", "timeout"), ExitCode.INTERRUPTED: ("truncated", "interrupted"),
    ExitCode.BROKEN_PIPE: ("truncated", "interrupted"),
}


def verdict(end: End | None, *, events: int, cut: str | None, terminal: bool,
            outcome: str | None, outcome_detail: str = "") -> tuple[str, str, str]:
    """(verdict, cause, detail in words). The verdict is the stream's own status, as
    ``normalize`` gives it; the recorded or observed end of the connection (``outcome``,
    as a recording's ``end`` line names it) only says why a stream was cut."""
    if end is None:  # no stream was read at all
        if outcome == "timeout":
            return "truncated", "timeout", outcome_detail or "timed out before any byte"
        if outcome in ("network", "http-error"):  # (normalize: no stream arrived, truncated)
            return "truncated", "network", outcome_detail or "the request failed"
        if outcome in ("interrupted", "broken-pipe", None):
            return "truncated", "interrupted", outcome_detail or "stopped before any byte"
        return "truncated", "empty", "no byte arrived"
    if end.exit in _PASSED_ON:
        return (*_PASSED_ON[end.exit], end.detail)
    if end.status is Status.ERROR:
        return "error", "provider_error", error_words(end.error) if end.error else end.detail
    if end.status in (Status.FAILED, Status.INVALID):  # an earlier stage's usage error, bad input, ...
        return "truncated", "failed", end.detail
    if end.status is Status.COMPLETE:
        cause = stop_cause(end.stop_reason)
        text = f"stop reason {end.stop_reason}" if end.stop_reason else "the terminal event arrived"
        return "complete", cause, text
    if outcome == "timeout":
        return "truncated", "timeout", outcome_detail or "timed out"
    if outcome in ("interrupted", "broken-pipe", "unended"):
        return "truncated", "interrupted", outcome_detail or "stopped by the reader"
    if cut is not None:
        text = end.detail or cut
        if outcome == "truncated" and outcome_detail:
            text = f"{text} ({outcome_detail})"
        return "truncated", "cut_after_terminal" if terminal else "cut_in_event", text
    if not events:
        return "truncated", "empty", end.detail or NO_EVENTS
    text = end.detail or "the stream ended without the provider's terminal event"
    if outcome == "truncated" and outcome_detail:
        text = f"{text} ({outcome_detail})"
    return "truncated", "no_terminal_event", text
