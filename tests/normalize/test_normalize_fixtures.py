"""Every recorded fixture and every shipped sample gives exactly its expected result:
answer text, reasoning text, status and stop reason, through the library (provider
recognised, and provider named) and through the ``normalize`` command (exit 0/3/4)."""

from __future__ import annotations

import subprocess

import orjson
import pytest

from sse_tool.model import ToolCall, from_record

from ..marks import spread
from ..support import EXPECTED, FIXTURES, SAMPLES, SAMPLES_EXPECTED, SSE_TOOL, clean_env, outcome, read_records

CASES = [pytest.param(FIXTURES / e["file"], e, id=e["file"]) for e in EXPECTED]
CASES += [pytest.param(SAMPLES / e["file"], e, id="samples/" + e["file"]) for e in SAMPLES_EXPECTED]

#: expected.json's provider names -> ``--provider`` names
PROVIDER_NAMES = {"openai-chat": "openai", "bedrock-converse": "bedrock"}
EXIT_CODES = {"complete": 0, "truncated": 3, "error": 4}


def expected_outcome(entry: dict) -> tuple:
    return entry["answer_text"], entry["reasoning_text"], entry["status"], entry["stop_reason"]


def test_every_expected_entry_names_a_file_that_exists():
    for param in CASES:
        path, entry = param.values
        assert path.is_file(), entry["file"]


@pytest.mark.parametrize("path, entry", CASES)
def test_recognised_provider_gives_the_expected_result(path, entry):
    assert outcome(read_records([path.read_bytes()])) == expected_outcome(entry)


@pytest.mark.parametrize("path, entry", CASES)
def test_named_provider_gives_the_expected_result(path, entry):
    provider = PROVIDER_NAMES.get(entry["provider"], entry["provider"])
    assert outcome(read_records([path.read_bytes()], provider)) == expected_outcome(entry)


@pytest.mark.parametrize("path, entry", CASES)
def test_auto_detection_picks_the_expected_provider(path, entry):
    from sse_tool.pipeline import RecordReader

    reader = RecordReader()
    reader.feed(path.read_bytes())
    reader.close()
    assert reader.normalizer.provider == PROVIDER_NAMES.get(entry["provider"], entry["provider"])
    assert reader.source == entry["framing"]


def tool_calls(records: list) -> list[dict]:
    """Each tool call's name and its joined arguments, parsed, in index order."""
    calls: dict[int, list] = {}
    for r in records:
        if isinstance(r, ToolCall):
            call = calls.setdefault(r.index, [None, []])
            call[0] = r.name if r.name is not None else call[0]
            call[1].append(r.arguments)
    return [{"name": name, "input": orjson.loads("".join(args))} for _, (name, args) in sorted(calls.items())]


WHOLE = [param for param in CASES if "tool_calls" in param.values[1] or "usage" in param.values[1]]


@pytest.mark.parametrize("path, entry", WHOLE)
def test_tool_calls_and_usage_are_the_expected_ones_too(path, entry):
    records = read_records([path.read_bytes()])
    assert tool_calls(records) == entry["tool_calls"]
    assert records[-1].usage == entry["usage"]


@pytest.fixture(scope="module")
def cli():
    """The ``normalize`` command as a real process; skipped until the command exists."""
    probe = subprocess.run([*SSE_TOOL, "normalize", "--help"], capture_output=True, env=clean_env())
    if probe.returncode != 0:
        pytest.skip("sse-tool normalize is not available")
    return SSE_TOOL


@pytest.mark.parametrize("path, entry", spread(CASES, 4))  # the cores read them all above
def test_normalize_command_gives_the_expected_result_and_exit_code(cli, path, entry):
    run = subprocess.run([*cli, "normalize", str(path)], capture_output=True, env=clean_env())
    records = [from_record(orjson.loads(line)) for line in run.stdout.splitlines()]
    assert outcome(records) == expected_outcome(entry)
    assert run.returncode == EXIT_CODES[entry["status"]], run.stderr
