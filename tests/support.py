"""Shared helpers for the tests: fixture files, the every-cut positions, subprocess env."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from sse_tool.model import Delta

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "samples"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
#: the samples we ship, with their expected results in the same shape
SAMPLES_EXPECTED = json.loads((SAMPLES / "expected.json").read_text())

#: run the CLI as a real process
SSE_TOOL = [sys.executable, "-m", "sse_tool"]

#: streams small enough to cut at every single byte position
ALL_CUTS_UP_TO = 8192


def stream_files() -> list[Path]:
    """Every recorded stream: the shared fixtures and the samples we ship."""
    files = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".sse", ".json", ".jsonl", ".ndjson", ".eventstream")
                   and not p.name.startswith("expected"))
    files += sorted(p for p in SAMPLES.glob("*") if p.suffix in (".sse", ".json", ".ndjson", ".eventstream")
                    and not p.name.startswith("expected"))
    return files


def clean_env(**extra: str) -> dict:
    """The environment for subprocess tests: PYTHONUNBUFFERED hides pipe-buffering bugs."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env.update(extra)
    return env


def cut_positions(data: bytes, sample: int = 300, seed: int = 0) -> list[int]:
    """Where to cut ``data`` in two: every position for a small stream; for a large one,
    every position where a cut can matter plus a random sample of the rest.

    A cut can matter in and around each line terminator (CRLF split, blank line split),
    inside each multi-byte character, inside the field name at the start of each line
    (``da|ta:``), inside a leading BOM, and at both ends.
    """
    n = len(data)
    if n <= ALL_CUTS_UP_TO:
        return list(range(n + 1))
    cuts = set(range(0, 8)) | set(range(max(0, n - 8), n + 1))
    line_start = 0
    for i, byte in enumerate(data):
        if byte in (10, 13):
            cuts.update(range(max(0, i - 1), min(n, i + 3)))
            line_start = i + 1
        elif byte >= 0x80:
            cuts.update((i, i + 1))
        elif i - line_start < 8:
            cuts.add(i)
    rng = random.Random(seed)
    cuts.update(rng.randrange(n + 1) for _ in range(sample))
    return sorted(cuts)


def read_records(chunks, provider: str = "auto", think_tags: str = "auto") -> list:
    """Channel records for a stream given as byte chunks, through ``pipeline.RecordReader``."""
    from sse_tool.pipeline import RecordReader

    reader = RecordReader(provider, think_tags=think_tags)
    records = []
    for chunk in chunks:
        records += reader.feed(chunk)
    return records + reader.close()


def outcome(records: list) -> tuple:
    """(answer text, reasoning text, status, stop reason), as ``expected.json`` states them."""
    from sse_tool.model import Channel, Delta

    text = {channel: "".join(r.text for r in records if isinstance(r, Delta) and r.channel is channel)
            for channel in Channel}
    end = records[-1]
    return text[Channel.ANSWER], text[Channel.REASONING], end.status.value, end.stop_reason


def channel_text(records: list, channel) -> str:
    """One channel's text: its delta records' texts joined in arrival order."""
    return "".join(r.text for r in records if isinstance(r, Delta) and r.channel is channel)


def event_message(headers: dict, payload: bytes = b"") -> bytes:
    """One AWS event-stream message, CRCs included. A header value is a string (type 7),
    or a ``(type byte, value bytes)`` pair for the other types."""
    import struct
    import zlib

    raw = b""
    for name, value in headers.items():
        kind, body = (7, struct.pack(">H", len(value.encode())) + value.encode()) if isinstance(value, str) else value
        raw += bytes([len(name.encode())]) + name.encode() + bytes([kind]) + body
    total = 16 + len(raw) + len(payload)
    prelude = struct.pack(">II", total, len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + raw + payload
    return message + struct.pack(">I", zlib.crc32(message))


def bedrock_event(event_type: str, payload: dict | str) -> bytes:
    """A Bedrock event message as the service sends it (JSON payload)."""
    body = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return event_message({":event-type": event_type, ":content-type": "application/json",
                          ":message-type": "event"}, body.encode())


def bedrock_exception(kind: str, message: str) -> bytes:
    return event_message({":exception-type": kind, ":content-type": "application/json",
                          ":message-type": "exception"}, json.dumps({"message": message}).encode())


def odd_shapes(data: bytes, provider: str) -> list:
    """Records of a stream holding values of the wrong type: bad input with the byte
    offset, and with ``lenient`` the same stream read with those events skipped."""
    import pytest

    from sse_tool.errors import BadInput
    from sse_tool.pipeline import RecordReader

    with pytest.raises(BadInput, match="at byte"):
        read_records([data], provider)
    reader = RecordReader(provider, lenient=True)
    out = reader.feed(data) + reader.close()
    assert reader.normalizer.warnings
    return out


def failed_output(out: bytes, body: bytes, code: int, stage: str = "fetch") -> bool:
    """Whether ``out`` is ``body`` then the failure marker a failed byte stage ends with:
    ``: sse-tool exit CODE STAGE: WHY`` on a line of its own, the last (no blank line after
    it: the event it cut stays unfinished for any SSE parser); or, when the body never
    began, nothing at all (as for curl: ``out`` was not read by a stage of ours)."""
    if not body:
        assert out == b"", out[:300]
        return True
    line_end = b"" if not body or body[-1:] in b"\r\n" else b"\n"
    head = body + line_end + b": sse-tool exit %d %s: " % (code, stage.encode())
    assert out.startswith(head), (out[-300:], head[-100:])
    assert out.endswith(b"\n") and not out.endswith(b"\n\n") and out[len(head):-1].count(b"\n") == 0, out[-300:]
    return True


def reap(proc) -> None:
    """End a test's process if it still runs, and close its pipes (in a ``finally``)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
