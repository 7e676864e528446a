"""The streams beyond the big three, end to end: every sample in ``samples/expected-more.json``
gives its expected texts, status and stop reason whatever the chunking; the JSON-array and
NDJSON framers hold at every cut; and the commands exit with the documented codes."""

from __future__ import annotations

import json
import subprocess

import pytest

from sse_tool.framing import AutoFramer
from sse_tool.jsonarray import JsonArrayParser
from sse_tool.model import Channel, Delta, End
from sse_tool.ndjson import NdjsonParser
from sse_tool.pipeline import RecordReader

from ..marks import spread
from ..support import FIXTURES, SAMPLES, SSE_TOOL, clean_env, cut_positions

CASES = json.loads((SAMPLES / "expected-more.json").read_text())
IDS = [c["file"] for c in CASES]
#: expected.json names the openai adapter after its API
ADAPTER = {"openai-chat": "openai"}
#: the cut samples are prefixes of the whole ones: cutting those covers them
WHOLE = [c for c in CASES if "truncated" not in c["file"]]
EXIT = {"complete": 0, "truncated": 3, "error": 4}


def read(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


def summary(out: list) -> tuple:
    def text(channel):
        return "".join(r.text for r in out if isinstance(r, Delta) and r.channel is channel)
    end = out[-1]
    return text(Channel.ANSWER), text(Channel.REASONING), end.status.value, end.stop_reason


def expected(case: dict) -> tuple:
    return case["answer_text"], case["reasoning_text"], case["status"], case["stop_reason"]


# -- expected outcomes ------------------------------------------------------------------

def test_the_samples_match_their_recorded_size_and_hash():
    import hashlib
    for case in CASES:
        data = read(case["file"])
        assert (len(data), hashlib.sha256(data).hexdigest()) == (case["bytes"], case["sha256"]), case["file"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_gives_the_expected_texts_status_and_stop_reason(case):
    reader = RecordReader(ADAPTER.get(case["provider"], case["provider"]))
    out = reader.feed(read(case["file"])) + reader.close()
    assert summary(out) == expected(case)
    assert sum(isinstance(r, End) for r in out) == 1 and isinstance(out[-1], End)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_auto_detection_finds_the_framing_and_the_provider(case):
    reader = RecordReader()
    out = reader.feed(read(case["file"])) + reader.close()
    assert reader.source == case["framing"]
    assert reader.normalizer.provider == ADAPTER.get(case["provider"], case["provider"])
    assert summary(out) == expected(case)


@pytest.mark.slow  # every position of every sample; byte by byte below runs by default
@pytest.mark.parametrize("case", WHOLE, ids=[c["file"] for c in WHOLE])
def test_every_cut_position_gives_the_same_records(case):
    data = read(case["file"])
    reader = RecordReader()
    whole = reader.feed(data) + reader.close()
    for i in cut_positions(data):
        reader = RecordReader()
        out = reader.feed(data[:i]) + reader.feed(data[i:]) + reader.close()
        assert out == whole, f"cut at byte {i}"


@pytest.mark.parametrize("name", ["vertex-search-answer.json", "ollama-chat-tool-call.ndjson", "cohere-thinking.sse"])
def test_byte_by_byte_gives_the_same_records(name):
    data = read(name)
    reader = RecordReader()
    whole = reader.feed(data) + reader.close()
    reader = RecordReader()
    out = [r for i in range(len(data)) for r in reader.feed(data[i:i + 1])] + reader.close()
    assert out == whole


# -- the JSON-array and NDJSON framers --------------------------------------------------

def events(framer, *chunks) -> tuple[list, object]:
    out = [e for chunk in chunks for e in framer.feed(chunk)]
    return [(e.event, e.data, e.offset, e.end) for e in out], framer.close()


ARRAYS = [SAMPLES / "vertex-search-answer.json", FIXTURES / "gemini" / "json-array-no-alt-sse.json"]


@pytest.mark.parametrize("path", ARRAYS, ids=[p.name for p in ARRAYS])
def test_json_array_every_cut_gives_the_same_elements(path):
    data = path.read_bytes()
    whole, end = events(JsonArrayParser(), data)
    assert end.truncated is None and whole
    assert [json.loads(d) for _, d, _, _ in whole] == json.loads(data)  # each element exactly
    for i in cut_positions(data):
        assert events(JsonArrayParser(), data[:i], data[i:]) == (whole, end), f"cut at byte {i}"


def test_json_array_split_inside_a_four_byte_character_keeps_it_whole():
    data = read("vertex-search-answer.json")
    rocket = data.index("🚀".encode())
    whole, _ = events(JsonArrayParser(), data)
    for i in range(rocket, rocket + 5):
        got, _ = events(JsonArrayParser(), data[:i], data[i:])
        assert got == whole
    assert any("🚀" in d for _, d, _, _ in got)


@pytest.mark.parametrize("cut", [1, 100, -3, -1])
def test_json_array_not_closed_is_truncated(cut):
    data = read("vertex-search-answer.json")
    _, end = events(JsonArrayParser(), data[:cut])
    assert end.truncated and "JSON array" in end.truncated


NDJSON = [SAMPLES / "ollama-chat-thinking.ndjson", SAMPLES / "ollama-generate-thinking.ndjson"]


@pytest.mark.parametrize("path", NDJSON, ids=[p.name for p in NDJSON])
def test_ndjson_every_cut_gives_the_same_lines(path):
    data = path.read_bytes()
    whole, end = events(NdjsonParser(), data)
    assert end.truncated is None and len(whole) == data.count(b"\n")
    for i in cut_positions(data):
        assert events(NdjsonParser(), data[:i], data[i:]) == (whole, end), f"cut at byte {i}"


def test_ndjson_split_inside_a_four_byte_character_keeps_it_whole():
    data = read("ollama-chat-thinking.ndjson")
    rocket = data.index("🚀".encode())
    whole, _ = events(NdjsonParser(), data)
    for i in range(rocket, rocket + 5):
        assert events(NdjsonParser(), data[:i], data[i:])[0] == whole


def test_ndjson_last_line_without_newline_is_truncated_and_not_emitted():
    data = read("ollama-chat-thinking.ndjson")
    got, end = events(NdjsonParser(), data[:-2])  # the last line's JSON is cut too
    assert end.truncated and "newline" in end.truncated
    assert len(got) == data.count(b"\n") - 1


def test_ndjson_last_line_that_is_whole_json_without_its_newline_is_emitted():
    # error bodies from curl often lack the final newline: the line is whole all the same
    data = read("ollama-chat-thinking.ndjson")
    got, end = events(NdjsonParser(), data[:-1])
    assert end.truncated is None and len(end.items) == 1
    assert end.items[0].data == data[:-1].rsplit(b"\n", 1)[1].decode()


def test_ndjson_crlf_line_ends_are_lines_too():
    data = read("ollama-chat-tool-call.ndjson")
    lf = [d for _, d, _, _ in events(NdjsonParser(), data)[0]]
    crlf = [d for _, d, _, _ in events(NdjsonParser(), data.replace(b"\n", b"\r\n"))[0]]
    assert crlf == lf


@pytest.mark.parametrize("name,kind", [("vertex-search-answer.json", "json-array"),
                                       ("ollama-chat-thinking.ndjson", "ndjson"),
                                       ("cohere-thinking.sse", "sse")])
def test_the_framing_is_recognised_from_the_first_bytes(name, kind):
    framer = AutoFramer()
    data = read(name)
    framer.feed(data[:1])
    framer.feed(data[1:])
    framer.close()
    assert framer.kind == kind


# -- the commands -----------------------------------------------------------------------

def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, *args], input=stdin, capture_output=True, env=clean_env(), timeout=60)


@pytest.mark.parametrize("name,code,count", [
    ("vertex-search-answer.json", 0, 4), ("vertex-search-truncated.json", 3, 2),
    ("ollama-chat-thinking.ndjson", 0, 80), ("ollama-truncated.ndjson", 3, 59),
])
def test_frame_exits_3_on_an_unclosed_array_or_a_last_line_without_newline(name, code, count):
    r = run("frame", str(SAMPLES / name))
    assert r.returncode == code, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == count + (code == 3)  # a cut input ends with the cut marker
    assert (b"truncated" in r.stderr) == (code == 3)
    assert (lines[-1].startswith(b'{"comment":"sse-tool exit 3 frame: ')) == (code == 3)


def test_frame_told_json_array_refuses_ndjson_with_exit_5():
    r = run("frame", "--from", "json-array", str(SAMPLES / "ollama-chat-thinking.ndjson"))
    assert r.returncode == 5 and b"JSON array" in r.stderr
    assert r.stdout.startswith(b'{"comment":"sse-tool exit 5 frame: not a JSON array')


@pytest.mark.parametrize("case", spread(CASES, 4, ids=lambda c: c["file"]))
def test_normalize_exit_code_follows_the_status(case):
    r = run("normalize", str(SAMPLES / case["file"]))
    assert r.returncode == EXIT[case["status"]], r.stderr
    end = json.loads(r.stdout.splitlines()[-1])
    assert (end["type"], end["status"], end["stop_reason"]) == ("end", case["status"], case["stop_reason"])


def test_frame_output_of_an_array_piped_to_normalize_gives_the_same_records():
    framed = run("frame", str(SAMPLES / "vertex-search-answer.json"))
    piped = run("normalize", stdin=framed.stdout)
    direct = run("normalize", str(SAMPLES / "vertex-search-answer.json"))
    assert (piped.returncode, direct.returncode) == (0, 0)
    assert piped.stdout == direct.stdout
