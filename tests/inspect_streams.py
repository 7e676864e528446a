"""Streams and recordings with chosen timings, for the inspect tests.

Each builder returns a list of SSE events (bytes, one complete event each) in a
provider's wire format; ``timed`` spaces them out; ``recording`` writes them as
``fetch --record`` would, with the times given (not measured).
"""

from __future__ import annotations

import io
import json
from contextlib import contextmanager

from sse_tool.inspect import Inspector
from sse_tool.recording import RecordingWriter


def event(name: str | None, data) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return (f"event: {name}\n" if name else "").encode() + f"data: {text}\n\n".encode()


def anthropic(thinking=(), text=(), stop="end_turn", output_tokens=None, terminal=True, ping=True):
    """An Anthropic Messages stream: thinking deltas, text deltas, then its end."""
    out = [event("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [], "usage": {"input_tokens": 12, "output_tokens": 1}}})]
    if ping:
        out.append(event("ping", {"type": "ping"}))
    index = 0
    if thinking:
        out.append(event("content_block_start", {"type": "content_block_start", "index": 0,
                                                 "content_block": {"type": "thinking", "thinking": ""}}))
        out += [event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "thinking_delta", "thinking": t}})
                for t in thinking]
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    if text:
        out.append(event("content_block_start", {"type": "content_block_start", "index": index,
                                                 "content_block": {"type": "text", "text": ""}}))
        out += [event("content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": t}})
                for t in text]
        out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    if terminal:
        usage = {"output_tokens": output_tokens} if output_tokens is not None else {}
        out.append(event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop},
                                           "usage": usage}))
        out.append(event("message_stop", {"type": "message_stop"}))
    return out


def openai(text=(), reasoning=(), finish="stop", usage=None, done=True, tool=None):
    """An OpenAI Chat Completions stream; ``usage`` adds the usage chunk."""
    def chunk(delta, finish_reason=None):
        return event(None, {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": r}) for r in reasoning]
    out += [chunk({"content": t}) for t in text]
    if tool:
        name, pieces = tool
        out.append(chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                          "function": {"name": name, "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    if finish:
        out.append(chunk({}, finish))
    if usage:
        out.append(event(None, {"id": "c1", "object": "chat.completion.chunk", "choices": [],
                                "usage": usage}))
    if done:
        out.append(event(None, "[DONE]"))
    return out


def timed(events, start: float = 0.5, gap: float = 0.1) -> list[tuple[float, bytes]]:
    """Each event its own chunk, the first at ``start``, then every ``gap`` seconds."""
    return [(round(start + i * gap, 6), e) for i, e in enumerate(events)]


def inspect_chunks(chunks, end=None, outcome="complete", detail="", origin="recording", **kw):
    """The report of (time, bytes) chunks fed to an ``Inspector``."""
    ins = Inspector("test", origin=origin, **kw)
    for t, data in chunks:
        ins.feed(data, t)
    if end is None and chunks:
        end = chunks[-1][0]
    return ins.close(end, outcome, detail)


def recording(chunks, end=None, outcome="complete", detail="", status=200,
              content_type="text/event-stream", notes=()) -> str:
    """The text of a recording of ``chunks`` ((time, bytes) pairs), as fetch --record writes."""
    out = io.StringIO()
    writer = RecordingWriter(out)
    writer.start("2026-01-01T00:00:00.000000Z")
    writer.request("POST", "https://api.example.com/v1/messages", [("content-type", "application/json")], b"{}")
    if status is not None:
        writer.response("HTTP/1.1", status, "OK" if status < 400 else "Too Many Requests",
                        [("content-type", content_type)])
    for note in notes:
        writer.note(note)
    for t, data in chunks:
        writer.chunk(t, data)
    if outcome is not None:
        writer.end(end if end is not None else (chunks[-1][0] if chunks else 0.0), outcome, detail)
    return out.getvalue()


@contextmanager
def served(directory, events, name: str = "story.sse"):
    """A real ``sse-tool serve`` playing ``events`` as the stream file ``name``."""
    from .serve_process import ServeProcess

    path = directory / name
    path.write_bytes(b"".join(events))
    serve = ServeProcess(str(path))
    try:
        yield serve
    finally:
        serve.stop()
