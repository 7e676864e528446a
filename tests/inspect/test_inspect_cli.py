"""``sse-tool inspect`` as a command: recordings made here with chosen times, many files,
the JSON form and its documentation, --fail-on exit codes, --tee through real pipes,
the report on a terminal and into a pipe."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from ..inspect_streams import anthropic, event, openai, recording, timed
from ..support import ROOT, SSE_TOOL, clean_env, reap
from ..cli.test_cli_unix import COLOUR, on_a_terminal

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run(*args: str, input: bytes = b"", env: dict | None = None, timeout: float = 30):
    done = subprocess.run([*SSE_TOOL, "inspect", *args], input=input, capture_output=True,
                          env=env or clean_env(), timeout=timeout)
    done.text = done.stdout.decode("utf-8")
    done.err = done.stderr.decode("utf-8")
    return done


@pytest.fixture
def recs(tmp_path):
    """A few recordings, each with a known story."""
    story = anthropic(thinking=["Let me think. "] * 6, text=["The answer is 42. "] * 16, output_tokens=80)
    files = {}

    def write(name, text):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        files[name] = path
        return path

    # steady: first byte 0.8 s, one event every 0.05 s; ttft = 0.8 + 3 * 0.05
    write("steady.rec", recording(timed(story, start=0.8, gap=0.05)))
    # stalled: 30 s without content after the last thinking token (0.9 s), kept alive
    chunks = timed(story[:10], start=0.5, gap=0.05)
    chunks += [(0.8 + 5 * (i + 1), b": keep-alive\n") for i in range(6)]
    chunks += timed(story[10:], start=30.85, gap=0.05)  # the next token at 30.9
    write("stalled.rec", recording(chunks))
    # buffered: everything after message_start at once, 9 s in
    write("buffered.rec", recording([(0.3, story[0]), (9.0, b"".join(story[1:]))]))
    # cut: an idle timeout after the 12th event
    write("cut.rec", recording(timed(story[:12], start=0.4, gap=0.05), end=20.95, outcome="timeout",
                               detail="idle timeout: nothing received for 20s (--idle-timeout)"))
    # early: complete, but the model hit its token limit
    write("early.rec", recording(timed(openai(text=["a"] * 5, finish="length"), start=2.0, gap=0.1)))
    # failed: the provider's error event
    write("failed.rec", recording(timed(anthropic(text=["Hi"], terminal=False) + [event("error", {
        "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})], start=0.3)))
    return files


def stream_objects(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


# -- one stream ---------------------------------------------------------------------------


def test_one_recording_gets_a_full_plain_report_of_at_most_80_columns(recs):
    done = run(str(recs["stalled.rec"]))
    assert done.returncode == 0, done.err
    text = done.text
    assert not ANSI.search(text)  # into a pipe: plain
    assert max(map(len, text.splitlines())) <= 80
    for words in ("✔ complete: end_turn", "Timeline", "time to first token 0.650 s", "Rates",
                  "(usage, split by text)", "Gaps", "longest stall     30.00 s between two tokens",
                  "kept alive by 6 comments", "Delivery", "Sizes", "usage             input 12 · output 80",
                  "Picture", "━"):
        assert words in text, words


def test_a_buffered_stream_is_diagnosed_as_delivered_in_bursts(recs):
    text = run(str(recs["buffered.rec"])).text
    assert "all of the content at once, at 9.000 s" in text
    assert "delivered in bursts" in text and "time to first token 9.000 s" in text


def test_a_plain_stream_file_has_structure_and_says_it_has_no_timing(tmp_path):
    path = tmp_path / "x.sse"
    path.write_bytes(b"".join(anthropic(text=["Hola"])))
    done = run(str(path))
    assert done.returncode == 0 and "No timing" in done.text and "Timeline" not in done.text


def test_a_report_of_a_cut_stream_says_why(recs):
    text = run(str(recs["cut.rec"])).text
    assert "✘ truncated: timeout" in text and "idle timeout: nothing received for 20s" in text


# -- many streams ---------------------------------------------------------------------------


def test_many_recordings_get_a_row_each_and_aggregates(recs):
    done = run(*map(str, recs.values()))
    assert done.returncode == 0, done.err
    lines = done.text.splitlines()
    assert lines[0].strip().startswith("in ") and "file" in lines[1]
    rows = {line.split()[0]: line for line in lines[2:8]}
    assert set(rows) == set(recs)
    assert "truncated timeout" in rows["cut.rec"] and "error provider error" in rows["failed.rec"]
    assert "0%!" in rows["buffered.rec"]
    assert "6 streams: 3 complete, 2 truncated, 1 error" not in done.text  # (early is complete)
    assert "6 streams: 4 complete, 1 truncated, 1 error" in done.text
    assert re.search(r"ttft \(s\)\s+\S+\s+\S+\s+9\.000\s+6", done.text)


def test_rows_sort_by_a_column_and_in_reverse(recs):
    def order(*args):
        text = run(*args, *map(str, recs.values())).text
        return [line.split()[0] for line in text.splitlines()[2:8]]

    by_ttft = order("--sort", "ttft")
    assert by_ttft[:2] == ["cut.rec", "failed.rec"] and by_ttft[-2:] == ["early.rec", "buffered.rec"]
    assert order("--sort", "ttft", "--reverse")[:2] == ["buffered.rec", "early.rec"]
    assert order("--sort", "stall", "-r")[0] == "stalled.rec"
    assert order("--sort", "file") == sorted(recs)


# -- JSON -----------------------------------------------------------------------------------

STREAM_KEYS = {
    "kind", "version", "file", "origin", "input", "timed", "provider", "model", "verdict", "cause",
    "detail", "stop_reason", "stopped_early", "error", "usage_reported", "http", "timeline",
    "durations", "rates", "gaps", "stall", "delivery", "burst", "sizes", "usage", "resets", "notes",
    "findings",
}
NESTED = {
    "http": {"method", "url", "status", "reason", "content_type", "started"},
    "timeline": {"origin", "request", "response_head", "first_byte", "first_event", "first_reasoning",
                 "first_answer", "first_tool_call", "last_token", "end"},
    "durations": {"ttft", "reasoning", "answer", "total"},
    "rates": {"output", "reasoning", "answer", "chars_per_second", "events_per_second"},
    "gaps": {"count", "p50", "p95", "max"},
    "stall": {"seconds", "start", "end", "where", "channel", "position", "context", "offset", "keepalives"},
    "delivery": {"chunks", "events", "events_per_chunk_max", "events_per_chunk_mean",
                 "multi_event_chunks", "split_events", "chunks_per_event_max"},
    "burst": {"share", "content_share", "seconds", "window", "largest_arrival", "bursty"},
    "sizes": {"bytes", "events", "chunks", "largest_event", "line_ends", "comments", "keepalives",
              "answer_chars", "reasoning_chars", "tool_call_chars", "tool_calls", "refusal_chars"},
    "usage": {"input", "output", "reasoning", "cached", "credits"},
}
RATE_KEYS = {"tokens_per_second", "tokens", "seconds", "basis"}
SUMMARY_KEYS = {"kind", "version", "streams", "unreadable", "empty", "verdicts", "causes", "ttft",
                "tokens_per_second", "stall", "findings", "exit_code"}


def test_json_is_one_object_per_stream_then_a_summary_with_the_documented_keys(recs):
    done = run("--json", *map(str, recs.values()))
    objects = stream_objects(done.text)
    assert [o["kind"] for o in objects] == ["stream"] * len(recs) + ["summary"]
    for obj in objects[:-1]:
        assert set(obj) == STREAM_KEYS and obj["version"] == 1
        for key, keys in NESTED.items():
            assert obj[key] is None or set(obj[key]) == keys, key
        for rate in obj["rates"]["output"], obj["rates"]["reasoning"], obj["rates"]["answer"]:
            assert rate is None or set(rate) == RATE_KEYS
    summary = objects[-1]
    assert set(summary) == SUMMARY_KEYS
    assert summary["verdicts"] == {"complete": 4, "truncated": 1, "error": 1}
    assert summary["causes"]["truncated"] == {"timeout": 1}
    stalled = next(o for o in objects if o["file"].endswith("stalled.rec"))
    assert stalled["stall"]["seconds"] == pytest.approx(30.0) and stalled["stall"]["keepalives"] == 6
    assert stalled["durations"]["ttft"] == pytest.approx(0.65)
    assert stalled["rates"]["output"]["basis"] == "usage"


def test_every_json_key_is_documented_in_the_man_page():
    page = (ROOT / "man" / "sse-tool-inspect.1").read_text()
    section = page[page.index(".SH JSON OUTPUT"):page.index(".SH OPTIONS")]
    words = set(re.findall(r"[a-z_0-9]+", section.replace("\\-", "-").replace("\\fB", " ").replace("\\fR", " ")))
    keys = STREAM_KEYS | SUMMARY_KEYS | RATE_KEYS | {k for keys in NESTED.values() for k in keys}
    assert keys - words == set()


def test_json_and_a_report_can_go_to_a_file(recs, tmp_path):
    out = tmp_path / "report.json"
    done = run("--json", "-o", str(out), str(recs["steady.rec"]))
    assert done.returncode == 0 and done.stdout == b""
    assert [o["kind"] for o in stream_objects(out.read_text())] == ["stream", "summary"]


# -- --fail-on -----------------------------------------------------------------------------


@pytest.mark.parametrize("conditions, name, code", [
    ("truncated", "cut.rec", 3), ("truncated", "steady.rec", 0), ("error", "failed.rec", 4),
    ("early", "early.rec", 9), ("early", "steady.rec", 0), ("stall=30s", "stalled.rec", 10),
    ("stall=31s", "stalled.rec", 0), ("ttft=5s", "buffered.rec", 10), ("ttft=5s", "steady.rec", 0),
    ("burst", "buffered.rec", 10), ("burst", "steady.rec", 0), ("tps=1000", "steady.rec", 10),
    ("truncated,error,stall=30s", "stalled.rec", 10),
])
def test_fail_on_turns_findings_into_the_exit_code(recs, conditions, name, code):
    done = run("--json", "--fail-on", conditions, str(recs[name]))
    assert done.returncode == code, done.err
    stream = stream_objects(done.text)[0]
    assert bool(stream["findings"]) == bool(code)


@pytest.mark.parametrize("condition, code", [("stall=3s", 10), ("stall=3.000001s", 0), ("tps=10", 0),
                                             ("tps=10.000001", 10)])
def test_a_threshold_is_judged_on_the_figure_the_report_gives(tmp_path, condition, code):
    # times that are not exact in binary: 4.1 - 1.1 is 2.9999999999999996 and 3 tokens in
    # 0.4 - 0.1 s are 9.999999999999998 a second, but the report says 3.000 s and 10.0
    story = openai(text=["Hello", " world"], usage={"prompt_tokens": 3, "completion_tokens": 3})
    chunks = [(0.05, story[0]), (0.1, story[1]), (0.4, story[2]), (0.45, story[3])]
    if condition.startswith("stall"):
        chunks = [(0.05, story[0]), (1.1, story[1]), (2.0, b": ping\n\n"), (4.1, story[2]), (4.25, story[3])]
    chunks += [(chunks[-1][0] + 0.05, b"".join(story[4:]))]
    path = tmp_path / "edge.rec"
    path.write_text(recording(chunks), encoding="utf-8")
    done = run("--json", "--fail-on", condition, str(path))
    report = stream_objects(done.text)[0]
    assert report["gaps"]["max"] == 3.0 if condition.startswith("stall") else report["rates"]
    assert done.returncode == code, (done.err, report["findings"])


def test_with_many_streams_the_first_finding_in_input_order_gives_the_code(recs):
    names = ["steady.rec", "stalled.rec", "cut.rec", "failed.rec"]
    done = run("--fail-on", "truncated,error,stall=10s", *(str(recs[n]) for n in names))
    assert done.returncode == 10
    done = run("--fail-on", "error,truncated", *(str(recs[n]) for n in names))
    assert done.returncode == 3  # cut.rec comes before failed.rec
    assert "--fail-on: " in done.text


def test_a_bad_fail_on_condition_is_a_usage_error():
    done = run("--fail-on", "slow", input=b"")
    assert done.returncode == 2 and "unknown condition 'slow'" in done.err


# -- inputs ---------------------------------------------------------------------------------


def test_an_unreadable_input_is_said_and_the_others_are_reported(recs, tmp_path):
    bad = tmp_path / "bad.sse"
    bad.write_bytes(b"\x00\x01\x02 binary")
    done = run(str(recs["steady.rec"]), str(bad))
    assert done.returncode == 5 and "bad.sse: binary data" in done.err
    assert "steady.rec" in done.text and "1 unreadable" in done.text


def test_an_empty_input_is_no_stream_and_exits_0_unless_truncated_streams_fail():
    done = run(input=b"")
    assert done.returncode == 0 and "no stream arrived" in done.err and done.stdout == b""
    # an earlier stage that failed before its first byte fails a gate on cut streams
    assert run("--fail-on", "truncated,error", input=b"").returncode == 3
    assert run("--fail-on", "error", input=b"").returncode == 0


def test_a_recording_on_stdin_is_read_as_a_recording(recs):
    done = run("--json", input=recs["steady.rec"].read_bytes())
    assert stream_objects(done.text)[0]["origin"] == "recording"


def test_from_recording_reads_a_recording_and_refuses_a_stream_file(recs, tmp_path):
    stream = tmp_path / "plain.sse"
    stream.write_bytes(b"".join(anthropic(text=["Hi"])))
    assert stream_objects(run("--json", "--from", "recording", str(recs["steady.rec"])).text)[0]["origin"] == "recording"
    done = run("--from", "recording", str(stream))
    assert done.returncode == 5 and "not an sse-tool recording" in done.err


def test_a_recording_read_as_it_arrives_is_the_recording_read_whole(recs):
    # stdin in pieces of a few bytes: lines and chunks cut anywhere give the same report
    whole = run("--json", str(recs["stalled.rec"])).text
    proc = subprocess.Popen([*SSE_TOOL, "inspect", "--json", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=clean_env())
    data = recs["stalled.rec"].read_bytes()
    for i in range(0, len(data), 7):
        proc.stdin.write(data[i:i + 7])
        proc.stdin.flush()
    proc.stdin.close()
    assert proc.stdout.read().decode().replace('"<stdin>"', f'"{recs["stalled.rec"]}"') == whole
    assert proc.wait() == 0


def test_tee_passes_the_bytes_on_unchanged_through_real_pipes():
    data = b"".join(openai(text=["Hola", " mundo"] * 50, usage={"completion_tokens": 100}))
    env = clean_env()
    inspect = subprocess.Popen([*SSE_TOOL, "inspect", "--tee", "--json"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    normalize = subprocess.Popen([*SSE_TOOL, "normalize"], stdin=inspect.stdout, stdout=subprocess.PIPE,
                                 env=env)
    inspect.stdout.close()
    for i in range(0, len(data), 500):
        inspect.stdin.write(data[i:i + 500])
        inspect.stdin.flush()
        time.sleep(0.002)
    inspect.stdin.close()
    records, _ = normalize.communicate(timeout=30)
    report = inspect.stderr.read().decode()
    assert inspect.wait(30) == 0 and normalize.returncode == 0
    direct = subprocess.run([*SSE_TOOL, "normalize"], input=data, capture_output=True, env=env).stdout
    assert records == direct
    stream = stream_objects(report)[0]
    assert stream["origin"] == "live" and stream["sizes"]["bytes"] == len(data)
    assert stream["timed"] and stream["verdict"] == "complete"


def test_tee_copies_bytes_that_are_not_a_stream_and_says_so():
    data = b"\x00\x01 not a stream\n" * 100
    done = run("--tee", input=data)
    assert done.stdout == data and done.returncode == 5 and "binary data" in done.err


def test_ctrl_c_on_a_live_stream_still_writes_the_report_and_exits_130():
    proc = subprocess.Popen([*SSE_TOOL, "inspect", "--json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    proc.stdin.write(b"".join(anthropic(text=["Hi"], terminal=False)))
    proc.stdin.flush()
    time.sleep(1.5)  # let it start and read (a bound for start-up, not a measured figure)
    proc.send_signal(2)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130
    stream = stream_objects(out.decode())[0]
    assert (stream["verdict"], stream["cause"]) == ("truncated", "interrupted")



def blocked_reading_a_pipe(pid: int, within: float = 20) -> bool:
    """Whether process ``pid`` came to wait in a read of a pipe (False where /proc does not
    say what a process waits on)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/wchan") as f:
                if f.read().endswith("pipe_read"):  # anon_pipe_read, pipe_read
                    return True
        except OSError:
            return False
        time.sleep(0.01)
    return False


def test_ctrl_c_with_tee_ends_inspect_even_when_the_stream_turns_out_bad():
    # The bad event is found as Ctrl-C closes the stream; --tee then must not go on
    # copying stdin to its end (which only a second Ctrl-C would have stopped).
    proc = subprocess.Popen([*SSE_TOOL, "inspect", "--tee"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    try:
        bad = b"data: not json\n\n"
        proc.stdin.write(bad)
        proc.stdin.flush()
        assert proc.stdout.read(len(bad)) == bad  # started, copying
        waiting = blocked_reading_a_pipe(proc.pid)  # reading on (where Linux tells)
        proc.send_signal(2)
        assert proc.wait(30) == 130
        if waiting:  # interrupted in the read, not before it: the close finds the bad event
            assert "data is not JSON" in proc.stderr.read().decode()
    finally:
        reap(proc)


# -- on a terminal ---------------------------------------------------------------------------


def test_on_a_terminal_the_report_is_in_colour_and_fits_80_columns(recs):
    code, raw = on_a_terminal("inspect", str(recs["stalled.rec"]), COLUMNS="120")
    text = raw.decode("utf-8")
    assert code == 0
    assert "\x1b[" in text  # colour
    plain = ANSI.sub("", text).replace("\r", "")
    assert "longest stall" in plain and max(map(len, plain.splitlines())) <= 80


def test_no_color_leaves_a_terminal_report_without_colour(recs):
    for args, variables in ((["inspect"], {"NO_COLOR": "1"}), (["inspect", "--color", "never"], {"FORCE_COLOR": "1"})):
        code, raw = on_a_terminal(*args, str(recs["steady.rec"]), **variables)
        assert code == 0 and not COLOUR.search(raw) and b"Timeline" in raw


def test_shell_completion_knows_the_command_its_options_and_the_fail_on_conditions():
    def words(line: str) -> list[str]:
        env = clean_env(_SSE_TOOL_COMPLETE="complete_bash", COMP_WORDS=line,
                        COMP_CWORD=str(len(line.split(" ")) - 1))
        return subprocess.run([*SSE_TOOL], capture_output=True, text=True, env=env, timeout=20).stdout.split()

    assert words("sse-tool insp") == ["inspect"]
    assert {"--fail-on", "--tee", "--json", "--sort"} <= set(words("sse-tool inspect --"))
    assert words("sse-tool inspect --sort d") == ["duration"]
    assert words("sse-tool inspect --fail-on trunc") == ["truncated"]
    assert words("sse-tool inspect --fail-on truncated,st") == ["truncated,stall="]


def test_a_bedrock_eventstream_file_is_named_so_and_has_no_line_ends():
    from ..support import FIXTURES

    done = run(str(FIXTURES / "bedrock" / "converse-stream-text.eventstream"))
    assert done.returncode == 0, done.err
    assert "Bedrock eventstream · file" in done.text and "no stream" not in done.text
    assert "binary frames · 0 comments" in done.text and "line ends" not in done.text
    assert "and 1 chunk;" in done.text and "usage             input 13 · output 82" in done.text
    assert json.loads(run("--json", str(FIXTURES / "bedrock" / "converse-stream-text.eventstream")
                          ).text.splitlines()[0])["sizes"]["line_ends"] is None


def test_counts_in_reports_are_in_grammar():
    from ..support import stream_files

    done = run(*map(str, stream_files()))
    assert not re.search(r"\d [a-z -]+\(s\)|\b1 [a-z]+s\b", done.text), done.text


def test_a_refusal_is_said_and_fail_on_early_catches_it():
    from ..support import SAMPLES

    path = str(SAMPLES / "openai-responses-refusal.sse")
    done = run(path)
    assert "✔ complete: the model refused (stop reason completed)" in done.text
    assert "the model stopped early" in done.text and "refusal 35 characters" in done.text
    assert run("--fail-on", "early", path).returncode == 9  # as normalize --strict


def test_reports_and_tables_fit_80_columns_whatever_the_names_and_tool_calls(tmp_path):
    from ..support import SAMPLES

    long = tmp_path / ("a-rather-long-name-for-a-recorded-stream-" * 2 + "tool.eventstream")
    long.write_bytes((SAMPLES / "bedrock-converse-tool-reasoning.eventstream").read_bytes())
    rec = tmp_path / "bedrock.rec"  # its head line names a long content type
    rec.write_text(recording([(0.4, long.read_bytes())], content_type="application/vnd.amazon.eventstream"),
                   encoding="utf-8")
    for args in ([str(long)], [str(rec)],
                 [str(long), str(SAMPLES / "anthropic-truncated.sse"), str(SAMPLES / "cohere-error.sse")]):
        text = run(*args).text
        assert max(map(len, text.splitlines())) <= 80, text


def test_frames_failure_marker_is_a_comment_but_no_keep_alive():
    from ..support import SAMPLES

    frames = subprocess.run([*SSE_TOOL, "frame", str(SAMPLES / "anthropic-truncated.sse")], capture_output=True,
                            env=clean_env(), timeout=30).stdout
    assert b"sse-tool exit 3 frame" in frames
    stream = json.loads(run("--json", input=frames).text.splitlines()[0])
    assert (stream["verdict"], stream["cause"]) == ("truncated", "cut_in_event")
    assert (stream["sizes"]["comments"], stream["sizes"]["keepalives"]) == (1, 0)


def test_a_stream_s_control_characters_reach_no_terminal_through_the_report(tmp_path):
    # a model name or an error message is the provider's text: an escape sequence in it
    # (a window title, a screen clear) shows as U+FFFD, on a terminal and in a file
    hostile = "gpt\x1b]0;PWNED\x07\x1b[2J"
    path = tmp_path / "hostile.sse"
    path.write_bytes(b"".join(openai(text=["Hi"], done=False)).replace(b'"gpt-test"', json.dumps(hostile).encode())
                     + b"event: error\ndata: boom\x1b[2Jboom\n\n")
    code, out = on_a_terminal("inspect", str(path))
    assert code == 0 and b"PWNED" in out and b"\x1b]0;" not in out and b"\x1b[2J" not in out
    plain = run(str(path)).stdout
    assert b"PWNED" in plain and b"boom" in plain and b"\x1b" not in plain and b"\x07" not in plain
