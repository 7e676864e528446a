"""``fetch -w/--write-out``: curl's format, curl's variables where they mean the same, and
this tool's times of the first byte, event and token, after the transfer."""

from __future__ import annotations

import json
import subprocess

import pytest

from sse_tool.fetch_writeout import Piece, Transfer, WriteOutError, parse_format, reads_stream, render

from ..inspect_streams import anthropic, served
from ..support import SSE_TOOL, clean_env

EVENTS = anthropic(thinking=["Hmm"], text=["Hola", " mundo"], output_tokens=5)


# -- the format, sans I/O -------------------------------------------------------------------


def test_a_format_is_text_variables_headers_and_destinations_as_curl_reads_it():
    pieces = parse_format(r"%{http_code}\t%header{Content-Type} 100%%\n%{stdout}x%output{>>log}%{json}\\")
    assert pieces == [
        Piece("var", "http_code"), Piece("text", "\t"), Piece("header", "Content-Type"),
        Piece("text", " 100"), Piece("text", "%"), Piece("text", "\n"), Piece("to", "stdout"),
        Piece("text", "x"), Piece("to", ">>log"), Piece("json", ""), Piece("text", "\\"),
    ]


def test_an_unknown_variable_is_a_usage_error_before_any_request():
    with pytest.raises(WriteOutError, match="unknown variable %{time_namelookup}"):
        parse_format("%{time_namelookup}")
    with pytest.raises(WriteOutError, match=r"%\{exit_code\}"):
        parse_format("%{exitcode}")


def test_only_the_first_event_and_token_need_the_body_read_as_a_stream():
    assert not reads_stream(parse_format("%{time_total} %{time_first_byte}"))
    assert reads_stream(parse_format("%{time_first_token}")) and reads_stream(parse_format("%{json}"))


def test_values_from_chosen_times_as_curl_writes_them():
    t = Transfer(read_stream=True)
    t.sending("POST", "https://api.example.com/v1", 1)
    t.trace(0.010, "connection.connect_tcp.complete", {})
    t.trace(0.030, "connection.start_tls.complete", {})
    t.trace(0.031, "http11.send_request_headers.started", {})
    t.head(0.400, 200, "HTTP/1.1", "https://api.example.com/v1", [("content-type", "text/event-stream")], True)
    t.chunk(0.500, EVENTS[0][:30])  # part of message_start
    t.chunk(0.600, EVENTS[0][30:] + EVENTS[1])  # message_start done, ping
    t.chunk(1.250, b"".join(EVENTS[2:4]))  # the thinking token
    t.chunk(1.300, b"".join(EVENTS[4:]))
    t.finish(1.500, 0)
    text = dict(render(parse_format(
        "%{http_code} %{http_version} %{time_connect} %{time_appconnect} %{time_pretransfer} "
        "%{time_starttransfer} %{time_first_byte} %{time_first_event} %{time_first_token} "
        "%{time_total} %{size_download} %{speed_download} %{exit_code} %{num_retries} %{scheme} "
        "%{content_type} [%{errormsg}]"), t))
    size = len(b"".join(EVENTS))
    assert text["stderr"].split() == [
        "200", "1.1", "0.010000", "0.030000", "0.031000", "0.400000", "0.500000", "0.600000",
        "1.250000", "1.500000", str(size), f"{size / 1.5:.0f}", "0", "0", "https",
        "text/event-stream", "[]"]


def test_moments_that_never_came_are_zero_as_curl_has_them_and_null_in_json():
    t = Transfer(read_stream=True)
    t.finish(2.0, 7, "cannot connect to 127.0.0.1:9")
    assert render(parse_format("%{http_code} %{time_connect} %{time_first_token} %{exit_code}"), t) == [
        ("stderr", "000 0.000000 0.000000 7")]
    values = json.loads(render(parse_format("%{json}"), t)[0][1])
    assert values["time_first_token"] is None and values["errormsg"] == "cannot connect to 127.0.0.1:9"


def test_destinations_switch_as_the_format_goes():
    t = Transfer()
    t.finish(1.0, 0)
    assert render(parse_format("a%{stdout}b%{stderr}c%output{f.txt}d"), t) == [
        ("stderr", "a"), ("stdout", "b"), ("stderr", "c"), ("f.txt", "d")]


# -- fetch, through a real server ----------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with served(tmp_path_factory.mktemp("w"), EVENTS) as serve:
        yield serve


def fetch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, "fetch", *args], capture_output=True, env=clean_env(), timeout=60)


def test_fetch_writes_the_times_after_the_transfer_to_stderr_and_the_body_unchanged(server):
    done = fetch("-w", "%{json}", server.url("/story?first_byte_delay=800ms&chunk_delay=100ms"))
    assert done.returncode == 0 and done.stdout == b"".join(EVENTS)
    values = json.loads(done.stderr.decode().strip().splitlines()[-1])
    assert (values["http_code"], values["exit_code"], values["size_download"]) == (200, 0, len(done.stdout))
    assert values["time_connect"] <= values["time_pretransfer"] <= values["time_starttransfer"]
    # the head goes at once, the body 0.8 s later; then one event every 0.15 s (20ev + 100 ms)
    assert values["time_starttransfer"] < 0.5
    assert 0.8 <= values["time_first_byte"] < 0.8 + 1.0
    assert values["time_first_event"] == values["time_first_byte"]
    # the thinking token is the fourth event: three gaps of 0.15 s after the first byte
    assert values["time_first_token"] - values["time_first_byte"] == pytest.approx(0.45, abs=0.15)
    assert values["time_total"] >= values["time_first_token"]
    assert values["remote_ip"] == "127.0.0.1" and values["http_version"] == "1.1"


def test_a_failed_transfer_still_writes_its_code_and_message(server):
    done = fetch("-w", r"%{http_code} %{exit_code} %{size_download} [%{errormsg}]\n",
                 server.url("/story?status=429"))
    assert done.returncode == 6
    line = done.stderr.decode().splitlines()[-1]
    assert line.startswith("429 6 ") and "[HTTP 429 Too Many Requests" in line
    done = fetch("-w", r"%{http_code} %{exit_code}\n", "http://127.0.0.1:9/")
    assert done.returncode == 7 and done.stderr.decode().splitlines()[-1] == "000 7"


def test_the_format_can_come_from_a_file_and_go_to_a_file(server, tmp_path):
    fmt = tmp_path / "fmt"
    fmt.write_text("%{http_code}%output{" + str(tmp_path / "out.txt") + "} %{exit_code}\n")
    done = fetch("-w", f"@{fmt}", server.url("/story"))
    assert done.returncode == 0 and done.stderr.decode().endswith("200")
    assert (tmp_path / "out.txt").read_text() == " 0\n"


def test_secrets_in_the_url_are_redacted_in_the_output(server):
    done = fetch("-w", r"%{url}\n", server.url("/story?key=sk-secret-123"))
    assert "sk-secret-123" not in done.stderr.decode() and "key=" in done.stderr.decode()


def test_a_bad_format_stops_before_the_request():
    done = fetch("-w", "%{nope}", "http://127.0.0.1:9/")
    assert done.returncode == 2 and b"unknown variable %{nope}" in done.stderr
    assert b"cannot connect" not in done.stderr


def _redirects(hops: int | None):
    """A server whose /0, /1, ... redirect to the next path, ``hops`` times (None: for ever),
    then answer one event."""
    from ..raw_http import Catcher

    def answer(seen):
        n = int(seen.head.split(b" ")[1].strip(b"/") or 0)
        if hops is None or n < hops:
            return [b"HTTP/1.1 302 Found\r\nLocation: /%d\r\nContent-Length: 0\r\n"
                    b"Connection: close\r\n\r\n" % (n + 1)]
        return [b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 10\r\n"
                b"Connection: close\r\n\r\ndata: ok\n\n"]
    return Catcher("127.0.0.1", answer=answer)


@pytest.mark.parametrize("hops, code, redirects, last", [(2, 0, 2, 2), (None, 6, 3, 3)])
def test_redirects_are_counted_as_curl_counts_them_also_past_max_redirs(hops, code, redirects, last):
    # curl -L --max-redirs 3 -w ... on an endless loop: 3 followed, the last 302 is the answer.
    server = _redirects(hops)
    try:
        done = fetch("-L", "--max-redirs", "3", "-w", "%{num_redirects} %{http_code} %{url_effective}",
                     server.base + "/0")
    finally:
        server.close()
    assert done.returncode == code, done.stderr
    status = 200 if hops is not None else 302
    assert done.stderr.endswith(f"{redirects} {status} {server.base}/{last}".encode())
    if hops is None:
        assert b"more than 3 redirects" in done.stderr and len(server.seen) == 4
