"""``sse-tool check`` as a command: exit statuses, the four output formats (SARIF checked
against the official 2.1.0 schema), recordings, ``--ignore``/``--max-per-rule``/``--rules``,
and findings written as the stream arrives through a real pipe."""

from __future__ import annotations

import json
import os
import subprocess
import time

import orjson
import pytest

from sse_tool.check import RULES, check
from sse_tool.errors import ExitCode

from ..support import FIXTURES, ROOT, SAMPLES, SSE_TOOL, clean_env, reap
from .test_check_rules import CASES, OK_CHAT, recording

SCHEMA = json.loads((ROOT / "tests" / "schemas" / "sarif-schema-2.1.0.json").read_text())
TRUNCATED = SAMPLES / "anthropic-truncated.sse"
OPENROUTER = FIXTURES / "openai-chat" / "openrouter-error-midstream.sse"  # 18 warnings, no error


def run(*args: str, input: bytes = b"", env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, "check", *args], input=input, capture_output=True,
                          env=env or clean_env(), timeout=60)


def json_lines(out: bytes) -> list[dict]:
    return [orjson.loads(line) for line in out.splitlines()]


def test_a_clean_stream_exits_0_and_says_so():
    done = run(str(SAMPLES / "anthropic-thinking.sse"))
    assert done.returncode == 0 and done.stderr == b""
    assert b"anthropic, sse, 22 events: no findings" in done.stdout


def test_errors_exit_10_and_the_table_names_rule_line_and_offset():
    done = run(str(TRUNCATED))
    assert done.returncode == ExitCode.FINDINGS == 10
    text = " ".join(done.stdout.decode().split())  # the table wraps a long path's title
    assert "sse.missing-final-blank-line" in text and "stream.no-terminal-event" in text and "2 errors" in text


@pytest.mark.parametrize("level, code", [("error", 0), ("warning", 10), ("note", 10), ("never", 0)])
def test_fail_on_sets_the_level_that_exits_10(level, code):
    assert run("--fail-on", level, "--format", "json", str(OPENROUTER)).returncode == code


def test_never_exits_0_even_on_errors():
    assert run("--fail-on", "never", str(TRUNCATED)).returncode == 0


def test_ignore_drops_a_rule_or_a_family_from_the_report_and_the_status():
    done = run("--fail-on", "warning", "--ignore", "sse.comment-only-block", "-f", "json", str(OPENROUTER))
    assert done.returncode == 10 and {r["rule"] for r in json_lines(done.stdout)} == {"chat.finish-reason-repeated"}
    done = run("--fail-on", "warning", "--ignore", "sse", "--ignore", "chat", "-f", "json", str(OPENROUTER))
    assert done.returncode == 0 and done.stdout == b""


def test_an_unknown_rule_to_ignore_is_a_usage_error():
    done = run("--ignore", "sse.no-such-rule", str(OPENROUTER))
    assert done.returncode == 2 and b"no rule or family 'sse.no-such-rule'" in done.stderr


def test_json_lines_carry_every_field_and_match_the_core():
    done = run("-f", "json", str(TRUNCATED))
    records = json_lines(done.stdout)
    core = check(TRUNCATED.read_bytes())
    assert [(r["rule"], r["offset"], r["event"], r["line"], r["message"]) for r in records] == \
        [(f.rule.id, f.offset, f.event, f.line, f.message) for f in core]
    assert set(records[0]) == {"file", "line", "offset", "event", "severity", "rule", "message", "breaks"}
    assert records[0]["file"] == str(TRUNCATED) and records[0]["severity"] == "error"


def test_max_per_rule_caps_what_is_shown_not_what_counts():
    done = run("-f", "json", "--max-per-rule", "2", "--fail-on", "warning", str(OPENROUTER))
    rules = [r["rule"] for r in json_lines(done.stdout)]
    assert rules.count("sse.comment-only-block") == 2 and done.returncode == 10
    assert b"15 more findings not shown (--max-per-rule 2)" in done.stderr
    assert len(json_lines(run("-f", "json", "--max-per-rule", "0", str(OPENROUTER)).stdout)) == 18


def test_github_annotations_name_file_line_and_rule_and_escape_their_text(tmp_path):
    path = tmp_path / "a,b:c.sse"
    path.write_bytes(CASES["stream.data-not-json"][0].replace(b"data: hello", b"data: 100%\xe2\x80\x94bad"))
    done = run("-f", "github", str(path))
    assert done.returncode == 10
    line = done.stdout.decode().splitlines()[0]
    assert line.startswith(f"::error file={str(path).replace(',', '%2C').replace(':', '%3A')},line=3,"
                           "title=stream.data-not-json::")
    assert "100%25" in line and "\n" not in line


def _validate(log: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft4Validator(SCHEMA).validate(log)


def test_sarif_is_valid_against_the_official_schema_and_describes_every_rule(tmp_path):
    rec = tmp_path / "chat.rec"
    rec.write_bytes(CASES["http.cache-control"][0])
    done = run("-f", "sarif", "--max-per-rule", "0", str(TRUNCATED), str(OPENROUTER), str(rec))
    assert done.returncode == 10
    log = json.loads(done.stdout)
    _validate(log)
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(RULES)
    results = run_["results"]
    assert len(results) == 2 + 18 + 1
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == RULES[result["ruleId"]].severity.label
    first = results[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"]["uri"] == str(TRUNCATED)
    assert first["region"] == {"startLine": 52, "byteOffset": 2627}
    last = results[-1]["locations"][0]["physicalLocation"]
    assert last["artifactLocation"]["uri"] == str(rec) and set(last["region"]) == {"startLine"}


def test_sarif_of_every_case_is_valid(tmp_path):
    names = []
    for rule, (broken, fixed) in CASES.items():
        for kind, data in (("broken", broken), ("fixed", fixed)):
            path = tmp_path / f"{rule}.{kind}"
            path.write_bytes(data)
            names.append(str(path))
    done = run("-f", "sarif", "--max-per-rule", "0", *names)
    log = json.loads(done.stdout)
    _validate(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == set(RULES)


@pytest.mark.parametrize("name, uri", [("x:y #1.sse", "./x:y%20%231.sse"), ("a/b:c.sse", "a/b:c.sse"),
                                       ("plain.sse", "plain.sse")])
def test_a_sarif_location_is_a_relative_reference_whatever_colons_the_name_holds(tmp_path, monkeypatch, name, uri):
    # a colon in the first segment would make the name a URI with a scheme ("x:")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(CASES["stream.no-terminal-event"][0])
    done = run("-f", "sarif", name)
    location = json.loads(done.stdout)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == uri


def test_a_recording_is_checked_with_its_head_and_its_lines_are_the_recording_s(tmp_path):
    rec = tmp_path / "chat.rec"
    rec.write_bytes(recording(OK_CHAT + b"data: {", headers=[("content-type", "application/json")]))
    done = run("-f", "json", str(rec))
    records = json_lines(done.stdout)
    assert [r["rule"] for r in records] == ["http.cache-control", "http.content-type", "sse.missing-final-blank-line"]
    lines = rec.read_text().splitlines()
    assert lines[records[0]["line"] - 1].startswith("< HTTP/1.1 200")  # (no Cache-Control: the status line)
    assert lines[records[1]["line"] - 1] == "< content-type: application/json"
    assert lines[records[2]["line"] - 1].startswith("0.200000 ")  # the chunk holding the cut event
    assert records[1]["event"] is None and done.returncode == 10


@pytest.mark.parametrize("content_type, rules", [
    ("application/vnd.amazon.eventstream", []),
    ("text/event-stream", ["http.content-type"]),
])
def test_a_recording_of_a_bedrock_stream_is_checked_by_its_own_content_type(tmp_path, content_type, rules):
    """Bedrock's binary event stream, recorded: read as one, its Content-Type judged as one's."""
    body = (FIXTURES / "bedrock" / "converse-stream-text.eventstream").read_bytes()
    rec = tmp_path / "bedrock.rec"
    rec.write_bytes(recording(body, headers=[("content-type", content_type)]))
    done = run("-f", "json", str(rec))
    assert b"internal error" not in done.stderr and done.returncode in (0, 10), done.stderr
    found = [r["rule"] for r in json_lines(done.stdout) if r.get("rule", "").startswith("http.")]
    assert found == rules
    if rules:
        assert b"for an AWS event stream (want application/vnd.amazon.eventstream)" in done.stdout


def test_a_recording_of_an_http_error_is_reported_not_read_as_a_stream(tmp_path):
    rec = tmp_path / "429.rec"
    rec.write_bytes(CASES["http.status"][0])
    done = run("-f", "json", str(rec))
    assert [r["rule"] for r in json_lines(done.stdout)] == ["http.status"] and done.returncode == 0


def test_bad_input_exits_5_and_the_other_inputs_are_still_checked(tmp_path):
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    done = run("-f", "json", str(binary), str(TRUNCATED))
    assert done.returncode == 5
    assert b"image.png: binary data" in done.stderr
    assert len(json_lines(done.stdout)) == 2


def test_sse_tool_records_are_refused_with_a_clear_message():
    frames = subprocess.run([*SSE_TOOL, "frame", str(SAMPLES / "anthropic-thinking.sse")],
                            capture_output=True, env=clean_env(), timeout=60).stdout
    done = run(input=frames)
    assert done.returncode == 5 and b"sse-tool's own JSON Lines" in done.stderr


def test_an_empty_input_is_no_stream_and_never_passes(tmp_path):
    done = run(input=b"")
    assert done.returncode == 3 and b"no stream arrived" in done.stderr and done.stdout == b""
    assert run("--fail-on", "never", input=b"").returncode == 3
    # among other inputs, each still checked; a bad input's 5 comes first
    empty, bad = tmp_path / "empty.sse", tmp_path / "bad.bin"
    empty.write_bytes(b"")
    bad.write_bytes(b"\x00\x01binary")
    assert run(str(empty), str(SAMPLES / "anthropic-thinking.sse")).returncode == 3
    assert run(str(empty), str(bad)).returncode == 5


def test_a_fetch_that_fails_before_its_body_fails_the_check_gate():
    """The man page's CI gate, ``fetch URL | check``, against a port nobody listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: refused
    tool = " ".join(SSE_TOOL)
    done = subprocess.run(["bash", "-c", f"{tool} fetch http://127.0.0.1:{port}/x | {tool} check; "
                           'echo "${PIPESTATUS[*]}"'], capture_output=True, env=clean_env(), timeout=60)
    assert done.stdout.decode().split()[-2:] == ["7", "3"], done.stdout


def test_rules_lists_every_rule_in_each_format():
    table = run("--rules").stdout.decode()
    for rule in RULES:
        assert rule in table
    records = json_lines(run("--rules", "-f", "json").stdout)
    assert [r["rule"] for r in records] == list(RULES)
    assert all(r["rationale"] and r["severity"] in ("error", "warning", "note") for r in records)
    _validate(json.loads(run("--rules", "-f", "sarif").stdout))


@pytest.mark.parametrize("unbuffered", [False, True])
@pytest.mark.parametrize("args", [[str(TRUNCATED)], ["--rules"]], ids=["table", "rules"])
def test_a_full_stdout_is_the_quiet_output_error_11(args, unbuffered):
    # rich once wrote the table to sys.stdout itself, which a write-through stdout (as
    # PYTHONUNBUFFERED makes it) turned into an internal error, exit 1
    env = clean_env()
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    else:
        env.pop("PYTHONUNBUFFERED", None)
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*SSE_TOOL, "check", *args], stdout=full, stderr=subprocess.PIPE, env=env, timeout=60)
    assert done.returncode == ExitCode.OUTPUT == 11 and done.stderr == b"", done.stderr


def test_findings_come_out_through_a_real_pipe_before_the_stream_ends():
    env = clean_env()
    env.pop("PYTHONUNBUFFERED", None)
    proc = subprocess.Popen([*SSE_TOOL, "check", "-f", "json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        proc.stdin.write(CASES["stream.data-not-json"][0].split(b"data: [DONE]")[0])
        proc.stdin.flush()
        first = orjson.loads(proc.stdout.readline())  # before stdin is closed
        assert first["rule"] == "stream.data-not-json"
        proc.stdin.write(b"data: [DONE]\n\n")
        proc.stdin.close()
        assert proc.stdout.read() == b"" and proc.wait(30) == 10
    finally:
        proc.kill()
        proc.wait()


def test_ctrl_c_still_shows_the_table_of_what_arrived_and_exits_130():
    from ..inspect.test_inspect_cli import blocked_reading_a_pipe

    proc = subprocess.Popen([*SSE_TOOL, "check"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=clean_env())
    try:
        proc.stdin.write(CASES["stream.data-not-json"][0].split(b"data: [DONE]")[0])
        proc.stdin.flush()
        time.sleep(0.3)  # (the data in the pipe before check reads it)
        read = blocked_reading_a_pipe(proc.pid)  # read, and waiting for more (where Linux tells)
        proc.send_signal(2)
        assert proc.wait(30) == 130
        out = proc.stdout.read().decode()
        if read:
            assert "<stdin>: openai, sse, 4 events, interrupted: 1 error" in out and "stream.data-not-json" in out
            assert "stream.no-terminal-event" not in out  # what arrived, not a judgement of its end
        assert proc.stderr.read() == b""
    finally:
        reap(proc)


def test_a_closed_reader_ends_check_quietly():
    big = OK_CHAT.replace(b"data: [DONE]", b"data: hello\n\n" * 20000 + b"data: [DONE]")
    env = clean_env()
    done = subprocess.run(["bash", "-c", f"{' '.join(SSE_TOOL)} check -f json --max-per-rule 0 | head -1"],
                          input=big, capture_output=True, env=env, timeout=60)
    assert done.returncode == 0 and done.stdout.count(b"\n") == 1 and b"Traceback" not in done.stderr


@pytest.mark.skipif(os.name != "posix", reason="a POSIX shell")
def test_check_reads_fetch_output_in_a_pipe():
    script = (f"{' '.join(SSE_TOOL)} replay --speed 0 {TRUNCATED} | {' '.join(SSE_TOOL)} check -f json; "
              "echo \"status ${PIPESTATUS[0]} ${PIPESTATUS[1]}\"")
    done = subprocess.run(["bash", "-c", script], capture_output=True, env=clean_env(), timeout=60)
    lines = done.stdout.decode().splitlines()
    assert lines[-1] == "status 0 10"
    assert [json.loads(line)["rule"] for line in lines[:-1]] == ["sse.missing-final-blank-line",
                                                                 "stream.no-terminal-event"]


def test_the_shell_completes_check_and_the_values_of_its_options():
    from ..cli.test_cli_unix import complete

    def words(line: str) -> list[str]:
        return complete("bash", COMP_WORDS=line, COMP_CWORD=str(len(line.split(" ")) - 1)).stdout.split()

    assert "check" in words("sse-tool ")
    assert words("sse-tool check --format ") == ["table", "json", "sarif", "github"]
    assert words("sse-tool check --fail-on ") == ["error", "warning", "note", "never"]
    assert "--max-per-rule" in words("sse-tool check --max")


def test_a_finding_s_words_reach_no_terminal_as_commands():
    import io

    from rich.console import Console

    from sse_tool.check import report
    from sse_tool.check.stream import NO_TERMINAL

    console = Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=200)
    finding = NO_TERMINAL.at(0, 0, "event \x1b]0;PWNED\x07 then \x1b[2J")._replace(line=1)
    report.table(console, "in\x1b[2J.sse", [finding], "openai", {finding.severity: 1})
    out = console.file.getvalue()
    assert "PWNED" in out and "\x1b]0;" not in out and "\x1b[2J" not in out and "\x07" not in out
