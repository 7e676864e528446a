"""The inspector core on streams with chosen arrival times: every verdict and cause, the
timeline, rates, gaps, stalls, keep-alives, bursts, delivery shape and sizes, each figure
checked against the value the chosen times give."""

from __future__ import annotations

import random

import pytest

from sse_tool.errors import BadInput
from sse_tool.inspect import Inspector, core
from sse_tool.inspect.report import Http

from ..inspect_streams import anthropic, event, inspect_chunks, openai, timed
from ..support import EXPECTED, FIXTURES, stream_files


def approx(x):
    return pytest.approx(x, abs=1e-9)


# -- verdict and cause ------------------------------------------------------------------


@pytest.mark.parametrize("stop, cause, early", [
    ("end_turn", "end_turn", False), ("max_tokens", "length", True), ("refusal", "refusal", True),
    ("tool_use", "tool_use", False), ("stop_sequence", "stop_sequence", False),
    ("pause_turn", "pause", True), ("something_new", "other", False),
])
def test_a_complete_stream_is_caused_by_its_stop_reason(stop, cause, early):
    report = inspect_chunks(timed(anthropic(text=["Hi"], stop=stop)))
    assert (report.verdict, report.cause, report.stop_reason, report.stopped_early) == (
        "complete", cause, stop, early)


@pytest.mark.parametrize("finish, cause", [("stop", "end_turn"), ("length", "length"),
                                           ("content_filter", "content_filter"), ("tool_calls", "tool_use")])
def test_openai_finish_reasons_name_the_same_causes(finish, cause):
    report = inspect_chunks(timed(openai(text=["a"], finish=finish)))
    assert (report.verdict, report.cause) == ("complete", cause)


def test_a_stream_ending_between_events_without_its_terminal_event_is_truncated_no_terminal_event():
    report = inspect_chunks(timed(anthropic(text=["Hi"], terminal=False)))
    assert (report.verdict, report.cause) == ("truncated", "no_terminal_event")


def test_a_stream_cut_inside_an_event_is_truncated_cut_in_event():
    events = anthropic(text=["Hi", " there"])
    chunks = timed(events[:5]) + [(2.0, events[5][:20])]
    report = inspect_chunks(chunks)
    assert (report.verdict, report.cause) == ("truncated", "cut_in_event")
    assert "inside an event" in report.detail or "middle of a line" in report.detail


def test_a_stream_cut_after_its_terminal_event_is_truncated_cut_after_terminal():
    report = inspect_chunks(timed(anthropic(text=["Hi"]) + [b"data: {\"tr"]))
    assert (report.verdict, report.cause) == ("truncated", "cut_after_terminal")


def test_a_recorded_timeout_is_the_cause_of_a_truncated_stream():
    chunks = timed(anthropic(text=["Hi"], terminal=False))
    report = inspect_chunks(chunks, end=30.0, outcome="timeout",
                            detail="idle timeout: nothing received for 20s (--idle-timeout)")
    assert (report.verdict, report.cause) == ("truncated", "timeout")
    assert "idle timeout" in report.detail


def test_a_timeout_after_the_terminal_event_leaves_the_stream_complete_with_a_note():
    report = inspect_chunks(timed(anthropic(text=["Hi"])), end=30.0, outcome="timeout", detail="idle")
    assert report.verdict == "complete"
    assert any("timeout" in note for note in report.notes)


def test_a_recorder_stopped_early_is_interrupted():
    chunks = timed(anthropic(text=["Hi"], terminal=False))
    assert inspect_chunks(chunks, outcome="interrupted").cause == "interrupted"
    assert inspect_chunks(chunks, outcome="unended").cause == "interrupted"


def test_a_provider_error_is_an_error_with_its_type_and_message():
    chunks = timed(anthropic(text=["Hi"], terminal=False) + [event("error", {
        "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})])
    report = inspect_chunks(chunks)
    assert (report.verdict, report.cause) == ("error", "provider_error")
    assert report.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert report.detail == "overloaded_error: Overloaded"


def test_an_http_error_status_is_an_error_with_the_providers_message():
    body = b'{"error": {"type": "rate_limit_error", "message": "Slow down"}}'
    report = inspect_chunks([(0.2, body)], outcome="http-error",
                            http=Http(status=429, reason="Too Many Requests"))
    assert (report.verdict, report.cause) == ("error", "http_error")
    assert report.detail == "HTTP 429 Too Many Requests: Slow down (rate_limit_error)"


def test_a_network_failure_or_a_timeout_before_any_byte_is_truncated_as_normalize_says():
    report = inspect_chunks([], end=1.0, outcome="network", detail="cannot connect")
    assert (report.verdict, report.cause, report.detail) == ("truncated", "network", "cannot connect")
    report = inspect_chunks([], end=5.0, outcome="timeout", detail="first-byte timeout")
    assert (report.verdict, report.cause) == ("truncated", "timeout")


def test_a_refusal_in_its_own_channel_is_the_cause_timed_as_the_answer_and_not_counted_as_it():
    """A refusal sent in the refusal channel under an ordinary stop reason ("completed"):
    the model refused and stopped early, as normalize says; its text is timed as the
    answer's (the person's first token) but is not the answer's size."""
    from ..support import SAMPLES

    events = [e + b"\n\n" for e in (SAMPLES / "openai-responses-refusal.sse").read_bytes().split(b"\n\n") if e]
    report = inspect_chunks(timed(events, start=0.5, gap=0.1))
    assert (report.verdict, report.cause, report.stopped_early) == ("complete", "refusal", True)
    assert report.stop_reason == "completed"
    assert (report.sizes.answer_chars, report.sizes.refusal_chars) == (0, 35)
    assert report.timeline.first_answer is not None and report.timeline.first_token == report.timeline.first_answer
    # fed whole, the same
    whole = inspect_chunks([(0.5, b"".join(events))])
    assert (whole.cause, whole.sizes.answer_chars, whole.sizes.refusal_chars) == ("refusal", 0, 35)


@pytest.mark.parametrize("path", ["openai-responses/responses-function-call.sse",
                                  "gemini/function-call-thought-signature.sse",
                                  "gemini/vertex-partial-args-tool-call.sse",
                                  "openai-chat/openai-tool-call-usage.sse"])
def test_a_turn_that_ends_in_a_tool_call_is_caused_by_tool_use_whatever_the_dialect_calls_it(path):
    report = inspect_chunks([(0.0, (FIXTURES / path).read_bytes())], origin="file")
    assert (report.verdict, report.cause, report.stopped_early) == ("complete", "tool_use", False)
    assert report.sizes.tool_calls >= 1


def test_a_turn_that_used_only_a_server_tool_keeps_its_own_stop_reason():
    # web search ran at the provider, then text ended the turn: nothing for the client to call
    report = inspect_chunks([(0.0, (FIXTURES / "anthropic/web-search-citations.sse").read_bytes())], origin="file")
    assert (report.verdict, report.cause) == ("complete", "end_turn") and report.sizes.tool_calls >= 1


def test_whether_usage_was_reported_is_said():
    assert inspect_chunks(timed(openai(text=["a"], usage={"completion_tokens": 1}))).usage_reported
    assert not inspect_chunks(timed(openai(text=["a"]))).usage_reported


# -- timeline and rates -------------------------------------------------------------------


def test_time_to_first_token_is_the_first_token_not_the_first_byte_or_event():
    # message_start and ping arrive at 0.5 and 0.6; the first thinking token at 2.0
    events = anthropic(thinking=["Hmm", "."], text=["Hola", " mundo"], output_tokens=40)
    times = [0.5, 0.6, 1.0, 2.0, 2.5, 2.6, 2.7, 3.0, 3.5, 4.0, 4.1, 4.2]
    report = inspect_chunks(list(zip(times, events)), end=4.5)
    tl = report.timeline
    assert (tl.request, tl.response_head, tl.first_byte, tl.first_event) == (0.0, None, 0.5, 0.5)
    assert (tl.first_reasoning, tl.first_answer, tl.first_tool_call) == (2.0, 3.0, None)
    assert (tl.last_token, tl.end, report.ttft) == (3.5, 4.5, 2.0)
    assert tl.reasoning_phase == (2.0, 3.0) and tl.answer_phase == (3.0, 3.5)


def test_rates_come_from_usage_when_the_stream_reports_it_split_by_phase():
    events = openai(reasoning=["ab" * 10] * 4, text=["cd" * 10] * 4, usage={
        "prompt_tokens": 5, "completion_tokens": 60, "completion_tokens_details": {"reasoning_tokens": 20}})
    report = inspect_chunks(timed(events, start=1.0, gap=0.5))
    rates = report.rates
    # reasoning 1.5 .. 3.5 (first answer), answer 3.5 .. 5.0, output 1.5 .. 5.0
    assert (rates.output.basis, rates.output.tokens, rates.output.seconds) == ("usage", 60, approx(3.5))
    assert (rates.reasoning.basis, rates.reasoning.tokens) == ("usage", 20)
    assert rates.reasoning.per_second == approx(20 / 2.0)
    assert rates.answer.per_second == approx(40 / 1.5)
    assert rates.chars_per_second == approx(160 / 3.5)


def test_without_usage_rates_are_estimated_from_the_text_and_marked_so():
    report = inspect_chunks(timed(openai(text=["abcd" * 10] * 5), start=1.0, gap=1.0))
    output = report.rates.output
    assert output.basis == "estimate" and output.tokens == approx(200 / 4)
    assert output.seconds == approx(4.0) and output.per_second == approx(12.5)


def test_a_usage_total_without_a_split_is_split_between_the_phases_by_their_text():
    events = anthropic(thinking=["x" * 40], text=["y" * 120], output_tokens=100)
    report = inspect_chunks(timed(events, gap=1.0))
    assert report.rates.output.basis == "usage"
    assert report.rates.reasoning.basis == "usage-split"
    assert report.rates.reasoning.tokens == approx(25) and report.rates.answer.tokens == approx(75)


def test_reasoning_tokens_that_were_not_streamed_are_said_and_left_out_of_the_output_rate():
    events = openai(text=["abcd"] * 3, usage={"completion_tokens": 103,
                                              "completion_tokens_details": {"reasoning_tokens": 100}})
    report = inspect_chunks(timed(events, gap=1.0))
    assert report.rates.output.tokens == 3
    assert any("100 reasoning tokens were not streamed" in note for note in report.notes)


def test_usage_is_read_in_every_dialect():
    from sse_tool.inspect.figures import read_tokens

    assert read_tokens({"input_tokens": 22, "output_tokens": 118, "cache_read_input_tokens": 5})[:4] == (22, 118, None, 5)
    assert read_tokens({"promptTokenCount": 34, "candidatesTokenCount": 23, "thoughtsTokenCount": 787,
                        "cachedContentTokenCount": 3})[:4] == (34, 810, 787, 3)
    assert read_tokens({"prompt_eval_count": 24, "eval_count": 81})[:4] == (24, 81, None, None)
    assert read_tokens({"billed_units": {"input_tokens": 31, "output_tokens": 74},
                        "tokens": {"input_tokens": 528, "output_tokens": 131}})[:4] == (528, 131, None, None)
    tokens = read_tokens({"prompt_tokens": 24, "completion_tokens": 58, "credits_spent": 0.0164})
    assert tokens.credits == {"credits_spent": 0.0164}
    # Bedrock's Converse stream (its metadata event)
    assert read_tokens({"inputTokens": 13, "outputTokens": 85, "totalTokens": 98,
                        "cacheReadInputTokens": 4})[:4] == (13, 85, None, 4)


@pytest.mark.parametrize("entry", [e for e in EXPECTED if e.get("usage")], ids=lambda e: e["file"])
def test_the_token_counts_of_every_recorded_stream_that_reports_usage_are_read(entry):
    usage = entry["usage"]
    report = inspect_chunks([(0.0, (FIXTURES / entry["file"]).read_bytes())], origin="file")
    assert report.usage_reported
    assert (report.tokens.input, report.tokens.output) == (usage["inputTokens"], usage["outputTokens"])


# -- gaps, stalls, keep-alives ------------------------------------------------------------


def test_gaps_between_events_have_exact_percentiles_and_events_of_one_chunk_wait_zero():
    events = anthropic(text=[str(i) for i in range(6)])  # 11 events
    times = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 3.8, 3.9, 4.0]
    chunks = list(zip(times, events))
    chunks[1:3] = [(0.3, chunks[1][1] + chunks[2][1])]  # two events in one chunk: a gap of 0
    report = inspect_chunks(chunks)
    gaps = report.gaps
    # 10 gaps: one 0 (same chunk), 0.2 (0.1 -> 0.3), 7 of 0.1, one 3.0
    assert gaps.count == 10
    assert (gaps.p50, gaps.p95, gaps.max) == (approx(0.1), approx(3.0), approx(3.0))


def test_the_longest_stall_is_between_content_events_with_its_place_in_the_text():
    events = anthropic(text=["Hola, ", "¿qué tal? ", "Bien."])
    times = [0.1, 0.2, 0.3, 0.4, 1.0, 9.0, 9.1, 9.2, 9.3]  # 8 s between the 2nd and 3rd deltas
    report = inspect_chunks(list(zip(times, events)))
    stall = report.gaps.stall
    assert (stall.seconds, stall.start, stall.end, stall.where) == (approx(8.0), 1.0, 9.0, "between")
    assert (stall.channel, stall.position, stall.context) == ("answer", 16, "Hola, ¿qué tal? ")
    assert stall.offset == sum(len(e) for e in events[:5]) and stall.keepalives == 0


def test_a_stream_kept_alive_by_comments_but_without_content_for_40_seconds_is_a_stall():
    events = anthropic(text=["one", "two"])
    chunks = timed(events[:4], gap=0.1)  # start, ping, block start, "one" at 0.8
    chunks += [(0.8 + 5 * (i + 1), b": keep-alive\n") for i in range(8)]  # 5 s apart, 40 s
    chunks += [(41.0, events[4])] + timed(events[5:], start=41.1, gap=0.1)
    report = inspect_chunks(chunks)
    stall = report.gaps.stall
    assert (stall.seconds, stall.keepalives, stall.where) == (approx(40.2), 8, "between")
    assert report.sizes.keepalives == 8 and report.sizes.comments == 8
    assert report.sizes.events == len(events)  # keep-alives are not events
    assert report.gaps.max == approx(40.2)


def test_keep_alives_only_make_a_stall_from_the_first_byte_to_the_end():
    chunks = [(0.5 + i, b": keep-alive\n\n") for i in range(40)]
    report = inspect_chunks(chunks, end=45.0, outcome="timeout", detail="idle timeout")
    assert (report.verdict, report.cause) == ("truncated", "timeout")
    stall = report.gaps.stall
    assert (stall.seconds, stall.where, stall.keepalives, stall.channel) == (approx(44.5), "before", 40, None)
    assert report.ttft is None and report.sizes.events == 0


def test_a_complete_streams_last_silence_ends_at_its_terminal_event_not_at_the_connection():
    report = inspect_chunks(timed(anthropic(text=["a", "b"]), gap=0.1), end=60.0)
    assert report.gaps.stall.seconds < 1


def test_a_truncated_streams_silence_after_its_last_token_is_a_stall():
    report = inspect_chunks(timed(anthropic(text=["a", "b"], terminal=False), gap=0.1), end=30.0,
                            outcome="timeout")
    stall = report.gaps.stall
    assert stall.where == "after" and stall.end == 30.0


def test_comment_lines_are_found_in_any_line_end_and_across_chunks():
    stream = b": first\r\ndata: {}\r\n\r\n:x\rdata: {}\r\r: sse-tool reset\n\n"
    for cut in range(len(stream) + 1):
        report = inspect_chunks([(1.0, stream[:cut]), (2.0, stream[cut:])], provider="openai")
        assert (report.sizes.comments, report.sizes.keepalives) == (3, 2), cut


# -- delivery and bursts -------------------------------------------------------------------


def test_content_that_arrives_all_at_once_after_a_wait_is_diagnosed_as_a_burst():
    events = anthropic(text=["word " * 4] * 50)
    chunks = [(0.3, events[0]), (12.0, b"".join(events[1:]))]
    report = inspect_chunks(chunks)
    burst = report.delivery.burst
    assert burst.bursty and burst.share == 0 and burst.window == 0
    assert report.ttft == 12.0
    assert report.delivery.events_per_chunk_max == len(events) - 1


def test_content_released_in_a_few_flushes_is_a_burst_with_its_share():
    # 100 deltas over 10 s, held by a proxy and flushed every 2.5 s, a quarter each time
    events = anthropic(text=["abcd" * 5] * 100)
    chunks = [(0.2, b"".join(events[:3]))]
    for k in range(4):
        chunks.append((2.5 * (k + 1), b"".join(events[3 + 25 * k: 28 + 25 * k])))
    chunks.append((10.1, b"".join(events[103:])))
    burst = inspect_chunks(chunks).delivery.burst
    # the content window 2.5 .. 10.0 in 50 slots: 4 of them hold it all (90% needs 4)
    assert (burst.window, burst.share, burst.seconds) == (approx(7.5), approx(4 / 50), approx(0.6))
    assert burst.largest == approx(0.25) and burst.bursty


def test_a_stall_in_a_flowing_stream_is_not_a_burst():
    events = anthropic(text=["abcd" * 5] * 100)
    chunks = timed(events[:40], start=0.5, gap=0.05) + timed(events[40:], start=60.0, gap=0.05)
    report = inspect_chunks(chunks)
    burst = report.delivery.burst
    assert burst.share <= 0.2 and burst.largest == approx(0.01) and not burst.bursty
    assert report.gaps.stall.seconds == approx(60.0 - 0.5 - 39 * 0.05)


def test_steady_delivery_is_not_a_burst():
    burst = inspect_chunks(timed(anthropic(text=["abcd" * 5] * 60), gap=0.05)).delivery.burst
    assert not burst.bursty and burst.share > 0.8


def test_a_short_answer_in_one_chunk_is_no_sign_of_buffering():
    report = inspect_chunks([(0.5, b"".join(anthropic(text=["Hi!"])))])
    assert not report.delivery.burst.bursty


def test_delivery_counts_events_per_chunk_and_events_split_over_chunks():
    events = anthropic(text=["a", "b", "c"])
    big = events[4]
    chunks = [(0.1, events[0] + events[1] + events[2]), (0.2, events[3]),
              (0.3, big[:10]), (0.4, big[10:20]), (0.5, big[20:]), (0.6, b"".join(events[5:]))]
    dl = inspect_chunks(chunks).delivery
    assert (dl.chunks, dl.events, dl.events_per_chunk_max) == (6, len(events), 4)
    assert (dl.multi_event_chunks, dl.split_events, dl.chunks_per_event_max) == (2, 1, 3)


# -- sizes -------------------------------------------------------------------------------


@pytest.mark.parametrize("end, style", [(b"\n", "lf"), (b"\r\n", "crlf"), (b"\r", "cr")])
def test_line_end_style_is_named(end, style):
    stream = b"".join(anthropic(text=["a"])).replace(b"\n", end)
    for cut in (0, 1, 7, len(stream) // 2):
        report = inspect_chunks([(0.1, stream[:cut]), (0.2, stream[cut:])])
        assert report.sizes.line_ends == style and report.verdict == "complete"


def test_mixed_line_ends_are_mixed():
    stream = b"".join(anthropic(text=["a"]))
    report = inspect_chunks([(0.1, stream[:60].replace(b"\n", b"\r\n") + stream[60:])])
    assert report.sizes.line_ends == "mixed"


def test_sizes_and_usage():
    events = openai(text=["Hola", " 🚀"], tool=("f", ['{"x"', ": 1}"]), finish="tool_calls",
                    usage={"prompt_tokens": 7, "completion_tokens": 9,
                           "prompt_tokens_details": {"cached_tokens": 4}})
    report = inspect_chunks(timed(events))
    sz = report.sizes
    assert (sz.bytes, sz.events, sz.chunks) == (sum(map(len, events)), len(events), len(events))
    assert sz.largest_event == max(len(e) for e in events) - 1  # its blank line not counted
    assert (sz.answer_chars, sz.reasoning_chars, sz.tool_call_chars, sz.tool_calls) == (6, 0, 8, 1)
    assert report.tokens[:4] == (7, 9, None, 4)
    assert report.timeline.first_tool_call is not None and report.model == "gpt-test"


def test_a_retry_starts_the_content_over():
    first = anthropic(text=["lost"], terminal=False)
    second = anthropic(text=["kept"])
    chunks = timed(first, gap=0.1) + [(5.0, b": sse-tool reset\n\n")] + timed(second, start=6.0, gap=0.1)
    report = inspect_chunks(chunks)
    assert (report.verdict, report.resets, report.sizes.answer_chars) == ("complete", 1, 4)
    assert report.timeline.first_answer == approx(6.3) and report.sizes.keepalives == 0
    assert report.sizes.comments == 1


# -- the inspector's own workings ----------------------------------------------------------


def test_a_plain_file_has_structure_and_no_timing():
    ins = Inspector("x")
    for event_bytes in anthropic(text=["a"]):
        ins.feed(event_bytes)
    report = ins.close()
    assert report.verdict == "complete" and not report.timed
    assert report.timeline.first_byte is None and report.gaps.stall is None and report.rates.output is None


def test_bad_input_is_raised_after_the_good_events_are_counted():
    ins = Inspector("x", origin="recording")
    ins.feed(b"".join(anthropic(text=["a"], terminal=False)) + b"event: content_block_delta\ndata: {bad\n\n", 0.5)
    with pytest.raises(BadInput):
        ins.close()


def _inspected(chunks: list, fast: bool, whole: bool = False) -> tuple:
    """Everything an inspector makes of (time, bytes) chunks: the report, the texts and
    the counts behind them (``whole``: fed in one ``feed_all`` call)."""
    inspector = Inspector(origin="recording", fast=fast)
    try:
        if whole:
            inspector.feed_all([t for t, _ in chunks], [chunk for _, chunk in chunks])
        else:
            for t, chunk in chunks:
                inspector.feed(chunk, t)
        report = inspector.close()
    except BadInput as exc:
        return ("bad input", str(exc))
    return (report, {channel: inspector.text(channel) for channel in list(inspector.texts)},
            inspector.pieces, inspector.events, inspector.series, inspector.arrivals)


def _chunked(data: bytes, cuts) -> list:
    bounds = [0, *cuts, len(data)]
    return [(i / 1000, data[a:b]) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]


@pytest.mark.parametrize("path", stream_files(), ids=lambda p: p.name)
def test_runs_read_in_bulk_give_what_the_reference_gives(path, monkeypatch):
    # Runs of chunks framed and converted in one call, their events and records placed by
    # offset, against every chunk read alone through the reader and every event through
    # Normalizer.feed: the same report, texts, timings and counts, for chunks of a few
    # bytes, of about an event, of many events, cut at random (empty chunks too), fed one by one or all
    # at once; with runs of the usual size and of a few dozen bytes (runs end mid-event).
    data = path.read_bytes()
    rng = random.Random(path.name)
    chunkings = [range(size, len(data), size) for size in (7, 150, 300, 4096)]
    chunkings += [sorted(rng.sample(range(1, len(data)), min(len(data) - 1, 40)))]
    chunkings += [sorted(rng.choices(range(len(data) + 1), k=40))]  # empty chunks among them
    for cuts in chunkings:
        chunks = _chunked(data, cuts)
        expected = _inspected(chunks, fast=False)
        for run in (core.RUN, 50):
            monkeypatch.setattr(core, "RUN", run)
            assert _inspected(chunks, fast=True) == expected, (run, len(chunks))
            assert _inspected(chunks, fast=True, whole=True) == expected, (run, len(chunks))


@pytest.mark.parametrize("code, verdict, cause", [
    (6, "error", "http_error"), (7, "truncated", "network"), (8, "truncated", "timeout"),
    (130, "truncated", "interrupted"), (141, "truncated", "interrupted"), (4, "error", "provider_error"),
    (2, "truncated", "failed"), (5, "truncated", "failed"), (1, "truncated", "failed"),
])
@pytest.mark.parametrize("content", [False, True], ids=["alone", "after-content"])
def test_an_earlier_stage_s_failure_marker_is_the_verdict_with_its_words(code, verdict, cause, content):
    # `fetch URL | inspect`: fetch's failure arrives as its exit marker, before or inside the
    # body; the verdict is the failure's, as normalize's end record says (exit CODE)
    marker = f": sse-tool exit {code} fetch: it went wrong\n".encode()
    body = b"".join(openai(text=["Hi"], done=False)) if content else b""
    for chunks in ([(None, body + marker)], [(None, bytes([b])) for b in body + marker]):
        report = inspect_chunks(chunks, outcome=None, origin="file")
        assert (report.verdict, report.cause, report.detail) == (verdict, cause, "fetch: it went wrong")
        assert report.sizes.answer_chars == (2 if content else 0)


def test_earlier_stages_notes_are_in_the_report_and_counted_past_a_cap():
    notes = b"".join(f": sse-tool note fetch: retry {i}/30 in 1s\n".encode() for i in range(1, 31))
    report = inspect_chunks([(None, notes + b"".join(openai(text=["Hi"])))], outcome=None, origin="file")
    assert report.verdict == "complete"
    assert report.notes[:core.NOTES_KEPT] == tuple(f"fetch: retry {i}/30 in 1s" for i in range(1, 21))
    assert report.notes[core.NOTES_KEPT] == "10 more notes of earlier stages"
