"""The report from what the inspector kept: ``assemble(inspector, ...) -> StreamReport``.

Pure: it reads the inspector's counts and series (after ``close`` has read everything)
and applies the rules in ``figures``; it reads no input and keeps no state.
"""

from __future__ import annotations

from ..marker import parse
from ..model import Channel, End, Status
from ..normalize import NO_EVENTS
from ..plural import count
from . import figures
from .report import Delivery, Gaps, Http, Rates, Sizes, StreamReport, Timeline


def assemble(ins, end_time: float | None, outcome: str | None, detail: str) -> StreamReport:
    reader = ins.reader
    texts = {"answer": ins.text(Channel.ANSWER), "reasoning": ins.text(Channel.REASONING)}
    refusal = ins.text(Channel.REFUSAL)
    # timed as the answer: its place in the answer phase (a turn holds one or the other)
    timed_texts = {**texts, "answer": texts["answer"] or refusal}
    end = ins.end if reader.received else None  # no byte: no stream was read at all
    if ins.error_body is not None:
        verdict, cause, why = _http_verdict(ins.http, bytes(ins.error_body), detail)
    else:
        terminal, cut = _how_it_ended(reader, end)
        verdict, cause, why = figures.verdict(end, events=ins.events, cut=cut, terminal=terminal,
                                              outcome=outcome, outcome_detail=detail)
        if verdict == "complete" and refusal:  # whatever the stop reason says (as normalize)
            cause, why = "refusal", f"the model refused ({why})"
        elif cause == "end_turn" and ins.tool_indexes - ins.server_tools:
            # the Responses API, Gemini and Ollama end a turn that calls a tool with their
            # plain stop reason, where Anthropic and OpenAI chat say tool_use (a server
            # tool, which the provider ran, leaves nothing for the client to call)
            cause = "tool_use"
    tokens = figures.read_tokens(ins.usage)
    timeline = _timeline(ins, end_time)
    series = ins.series if ins.timed else []
    comments, keepalive_times = _comments(ins)
    keepalives = [t for t in keepalive_times if t is not None]
    gaps = Gaps()
    if ins.timed:
        # A complete stream's last silence ends with its terminal event (the last event),
        # not with the connection.
        quiet_until = timeline.end
        if verdict == "complete" and ins.arrivals:
            quiet_until = ins.arrivals[-1][0]
        stall = figures.longest_stall(series, timeline.first_byte, quiet_until, keepalives, timed_texts)
        gaps = figures.event_gaps(ins.arrivals)._replace(stall=stall)
    estimates = {"reasoning": figures.estimate_tokens(texts["reasoning"]),
                 "answer": figures.estimate_tokens(timed_texts["answer"]) + ins.tool_chars / 4}
    output_span = None
    if timeline.first_token is not None and timeline.last_token is not None:
        output_span = (timeline.first_token, timeline.last_token)
    output, reasoning_rate, answer_rate = figures.rates(
        tokens, estimates, {"reasoning": timeline.reasoning_phase, "answer": timeline.answer_phase},
        output_span)
    chars = len(texts["answer"]) + len(texts["reasoning"]) + len(refusal) + ins.tool_chars
    body = None
    if ins.first_byte is not None and ins.last_time is not None:
        body = ins.last_time - ins.first_byte
    chunks = len(ins.starts)
    return StreamReport(
        name=ins.name, origin=ins.origin, source=reader.source if reader.received else None,
        timed=ins.timed,
        provider=reader.normalizer.provider if reader.normalizer is not None else None,
        model=ins.model, verdict=verdict, cause=cause, detail=why,
        stop_reason=end.stop_reason if end is not None else None,
        stopped_early=verdict == "complete" and (figures.is_early(end.stop_reason) or bool(refusal)),
        error=end.error if end is not None and end.status is Status.ERROR else None,
        http=ins.http, usage_reported=ins.usage is not None,
        timeline=timeline,
        rates=Rates(
            output=output, reasoning=reasoning_rate, answer=answer_rate,
            chars_per_second=_per(chars, output_span),
            events_per_second=ins.events / body if body else None),
        gaps=gaps,
        delivery=Delivery(
            chunks=chunks, events=ins.events,
            events_per_chunk_max=ins.most_per_chunk if ins.events else 0,
            events_per_chunk_mean=ins.events / chunks if chunks else None,
            multi_event_chunks=ins.multi, split_events=ins.split,
            chunks_per_event_max=max(ins.most_chunks, 1 if ins.events else 0),
            burst=figures.burst(series, ins.pieces) if series else None),
        sizes=Sizes(
            bytes=ins.bytes, events=ins.events, chunks=chunks, largest_event=ins.largest,
            line_ends=_line_style(ins), comments=comments, keepalives=len(keepalive_times),
            answer_chars=len(texts["answer"]), reasoning_chars=len(texts["reasoning"]),
            tool_call_chars=ins.tool_chars, tool_calls=len(ins.tool_indexes), refusal_chars=len(refusal)),
        tokens=tokens, resets=ins.resets,
        notes=tuple(_notes(ins, tokens, texts, outcome, verdict, keepalives)),
        series=tuple(series), keepalive_times=tuple(keepalives),
    )


def _timeline(ins, end_time: float | None) -> Timeline:
    if not ins.timed:
        return Timeline(None)
    first = ins.first
    return Timeline(
        origin="request" if ins.origin == "recording" else "reading",
        request=0.0 if ins.origin == "recording" else None,
        response_head=None,  # a recording does not keep when the head arrived
        first_byte=ins.first_byte, first_event=ins.arrivals[0][0] if ins.arrivals else None,
        first_reasoning=first["reasoning"], first_answer=first["answer"],
        first_tool_call=first["tool_call"],
        last_token=ins.series[-1][0] if ins.series else None,
        end=end_time if end_time is not None else ins.last_time)


def _comments(ins) -> tuple[int, list[float | None]]:
    """(comment lines, arrival times of the keep-alives among them, in order)."""
    if ins.reader.source == "sse":
        return len(ins.comment_lines), [t for at, t in ins.comment_lines if at not in ins.markers]
    found = ins.comment_records
    return len(found), [t for text, t in found if parse(text) is None]  # a marker is no keep-alive


def _line_style(ins) -> str | None:
    if ins.reader.source == "aws-eventstream":  # binary frames: a CR or LF byte is no line end
        return None
    kinds = [name for name, seen in (("crlf", ins.crlf), ("cr", ins.cr - ins.crlf), ("lf", ins.lone_lf))
             if seen]
    if not kinds:
        return None
    return kinds[0] if len(kinds) == 1 else "mixed"


def _notes(ins, tokens, texts, outcome, verdict, keepalives) -> list[str]:
    notes = list(ins.passed_notes)  # what earlier stages said in-band ("fetch: retry 1/2 ...")
    if ins.notes_seen > len(notes):
        notes.append(f"{count(ins.notes_seen - len(notes), 'more note')} of earlier stages")
    if tokens.reasoning and not texts["reasoning"]:
        notes.append(f"{tokens.reasoning:,} reasoning tokens were not streamed (hidden reasoning, "
                     "spent before the first token)")
    if ins.resets:
        notes.append(f"{count(ins.resets, 'retry', 'retries')} (reset markers): "
                     "the content figures are the last attempt's")
    if outcome == "timeout" and verdict == "complete":
        notes.append("the terminal event arrived, then the connection hit a timeout")
    if keepalives and not ins.series:
        notes.append("keep-alives only: no content arrived")
    return notes


def _per(count: float, span: tuple[float, float] | None) -> float | None:
    if span is None or span[1] <= span[0]:
        return None
    return count / (span[1] - span[0])


def _how_it_ended(reader, end: End | None) -> tuple[bool, str | None]:
    """(terminal event seen, why the framing was cut), from the normalizer; for channel
    records, which carry only their end record, from the words ``Normalizer`` put in it."""
    if reader.normalizer is not None:
        return reader.normalizer.terminal, reader.normalizer.cut
    detail = end.detail or "" if end is not None else ""
    if "before the provider's terminal event" in detail or "without an end record" in detail:
        return False, detail
    if not detail or "terminal event" in detail or detail.startswith(NO_EVENTS) or detail == "interrupted":
        return False, None
    return True, detail  # a cut after the terminal event: normalize names only the cut


def _http_verdict(http: Http, body: bytes, detail: str) -> tuple[str, str, str]:
    from ..fetch import error_message  # pure: it reads JSON, not the network

    status = f"HTTP {http.status} {http.reason}".rstrip()
    message = error_message(body) if body else ""
    return "error", "http_error", f"{status}: {message}" if message else (detail or status)
