"""sse_tool.records / arecords: the whole pipe in one call ends with the End the CLI writes."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

import sse_tool
from sse_tool.model import End, Status, to_record

from ..marks import spread
from ..support import SAMPLES, SSE_TOOL, clean_env

SAMPLE_FILES = sorted(p for p in SAMPLES.iterdir() if p.suffix in (".sse", ".json", ".ndjson", ".eventstream")
                      and not p.name.startswith("expected"))
# broken JSON (at byte 56), then an event that shows it was not cut by a failure
BAD = (b'data: {"type":"message_start","message":{"model":"m"}}\n\n'
       b'data: {oops\n\ndata: {}\n\n')


def normalized_by_the_cli(data: bytes) -> list[dict]:
    done = subprocess.run([*SSE_TOOL, "normalize"], input=data, capture_output=True, timeout=60, env=clean_env())
    return [json.loads(line) for line in done.stdout.splitlines()]


def as_lines(records) -> list[dict]:
    return [json.loads(json.dumps(to_record(r))) for r in records]


@pytest.mark.parametrize("path", spread(SAMPLE_FILES, 4, ids=lambda p: p.name))
def test_the_records_and_the_end_are_the_clis(path):
    data = path.read_bytes()
    assert as_lines(sse_tool.records([data], name="<stdin>")) == normalized_by_the_cli(data)


def test_bad_input_ends_with_the_clis_invalid_end_and_nothing_more_is_read():
    read = []

    def chunks():
        for chunk in (BAD, b"data: never read\n\n"):
            read.append(chunk)
            yield chunk

    got = list(sse_tool.records(chunks(), name="<stdin>"))
    assert as_lines(got) == normalized_by_the_cli(BAD)
    assert got[-1].status is Status.INVALID and got[-1].exit == 5 and got[-1].offset == 56
    assert read == [BAD]


def test_no_bytes_at_all_is_a_truncated_end():
    assert list(sse_tool.records([])) == [End(Status.TRUNCATED, detail="no stream arrived (empty input)")]


@pytest.mark.parametrize("path", [SAMPLES / "anthropic-thinking.sse", SAMPLES / "bedrock-invoke-truncated.eventstream"],
                         ids=lambda p: p.name)
def test_one_byte_chunks_and_async_chunks_give_the_same_records(path):
    data = path.read_bytes()
    whole = list(sse_tool.records([data]))

    async def byte_by_byte():
        for i in range(len(data)):
            yield data[i:i + 1]

    async def collect():
        return [r async for r in sse_tool.arecords(byte_by_byte())]

    assert list(sse_tool.records(data[i:i + 1] for i in range(len(data)))) == whole
    assert asyncio.run(collect()) == whole
    assert type(whole[-1]) is End and sum(type(r) is End for r in whole) == 1


def test_async_bad_input_stops_at_the_invalid_end():
    async def chunks():
        yield BAD
        raise AssertionError("read past the bad input")

    async def collect():
        return [r async for r in sse_tool.arecords(chunks())]

    assert asyncio.run(collect())[-1].status is Status.INVALID
