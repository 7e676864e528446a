"""Every outcome is told by the right exit code and end record, at every edge.

The reproducers of the edges found by trying sse-tool as a new user and as a fuzzer
would: each is a real process, and each asserts the code and the records now given
(the property tests that generalise them: test_fuzz_types.py, test_fuzz_stages.py,
test_startup_signals.py, test_memory_bounds.py).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from ..http_server import LocalServer
from ..support import SAMPLES, SSE_TOOL, clean_env, failed_output

WAIT = 60


def run(*args: str, data: bytes = b"", **popen) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, *args], input=data, capture_output=True, env=clean_env(), timeout=WAIT,
                          **popen)


def one_line(err: bytes) -> str:
    text = err.decode()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return text


def end_of(stdout: bytes) -> dict:
    return json.loads(stdout.splitlines()[-1])


# -- not a stream is not a cut ----------------------------------------------------------------

HTML = b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>\n"
TEXT = b"Hello, this is just some text.\nNot an event stream.\n"


@pytest.mark.parametrize("stage", ["frame", "normalize", "render"])
@pytest.mark.parametrize("data", [HTML, TEXT], ids=["html", "text"])
def test_input_that_is_not_a_stream_is_bad_input_5_not_a_cut(stage, data):
    p = run(stage, data=data)
    assert p.returncode == 5
    assert "not an event stream" in one_line(p.stderr)


@pytest.mark.parametrize("stage", ["normalize", "render"])
def test_events_of_another_provider_than_the_one_named_are_bad_input_saying_both(stage):
    p = run(stage, "--provider", "openai", str(SAMPLES / "anthropic-thinking.sse"))
    assert p.returncode == 5
    assert "expected openai events, got anthropic events" in one_line(p.stderr)


# -- an error body piped from curl is a provider error ------------------------------------------

ERROR_BODIES = {
    "openai-one-line": b'{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}',
    "openai-pretty": b'{\n    "error": {\n        "message": "Incorrect API key provided: sk-****.",\n'
                     b'        "type": "invalid_request_error",\n        "param": null,\n'
                     b'        "code": "invalid_api_key"\n    }\n}\n',
    "anthropic-429": b'{"type":"error","error":{"type":"rate_limit_error","message":"Number of request '
                     b'tokens has exceeded your per-minute rate limit"},"request_id":"req_011"}',
    "gemini-pretty": b'{\n  "error": {\n    "code": 429,\n    "message": "Resource has been exhausted",\n'
                     b'    "status": "RESOURCE_EXHAUSTED"\n  }\n}\n',
    "gemini-array": b'[{\n  "error": {\n    "code": 400,\n    "message": "API key not valid",\n'
                    b'    "status": "INVALID_ARGUMENT"\n  }\n}\n]',
    "vllm": b'{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError",'
            b'"param":null,"code":404}',
    "ollama": b'{"error":"model \\"llama9\\" not found, try pulling it first"}',
    "fastapi": b'{"detail":"Not Found"}',
}


@pytest.mark.parametrize("name", ERROR_BODIES)
def test_a_provider_error_body_is_a_provider_error_4_with_its_message(name):
    body = ERROR_BODIES[name]
    normalize = run("normalize", data=body)
    assert normalize.returncode == 4, normalize.stderr
    end = end_of(normalize.stdout)
    assert end["status"] == "error" and end["error"]["message"]
    assert end["error"]["message"] in normalize.stderr.decode()
    render = run("render", data=body)
    assert render.returncode == 4 and "provider error" in one_line(render.stderr)
    framed = run("frame", data=body)
    assert run("normalize", data=framed.stdout).returncode == 4


def test_an_error_body_from_a_real_server_through_curl_without_f_is_4():
    curl = subprocess.run(["sh", "-c", "command -v curl"], capture_output=True)
    if curl.returncode:
        pytest.skip("no curl")
    server = LocalServer()
    try:
        url = server.url("/error?status=429&message=Rate+limit+reached&type=rate_limit_error")
        p = subprocess.run(f"curl -sN '{url}' | {' '.join(SSE_TOOL)} render", shell=True, capture_output=True,
                           env=clean_env(), timeout=WAIT)
    finally:
        server.close()
    assert p.returncode == 4 and b"Rate limit reached" in p.stderr


# -- nothing arrived is never success; one end record on every run ------------------------------

def test_empty_input_is_3_at_every_stage_and_normalize_still_writes_its_end():
    for stage in ("frame", "normalize", "render"):
        assert run(stage).returncode == 3
    assert end_of(run("normalize").stdout)["detail"] == "no stream arrived (empty input)"


def test_normalize_on_bad_input_ends_with_an_invalid_end_record_with_the_offset():
    p = run("normalize", data=b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: {"choices": [\n\n')
    assert p.returncode == 5
    end = end_of(p.stdout)
    assert (end["status"], end["exit"], end["offset"]) == ("invalid", 5, 58)
    assert sum(json.loads(line)["type"] == "end" for line in p.stdout.splitlines()) == 1


def test_a_non_json_data_line_in_an_openai_stream_is_bad_input_or_a_warning_with_lenient():
    data = (b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: oops not json\n\n'
            b'data: {"choices":[{"index":0,"delta":{"content":"!"}}]}\n\ndata: [DONE]\n\n')
    p = run("normalize", data=data)
    assert p.returncode == 5 and "not JSON ('oops not json')" in one_line(p.stderr) and "at byte 58" in p.stderr.decode()
    lenient = run("normalize", "--lenient", data=data)
    assert lenient.returncode == 0 and b"skipped" in lenient.stderr and b"at byte 58" in lenient.stderr
    texts = [json.loads(line).get("text") for line in lenient.stdout.splitlines()]
    assert texts[:2] == ["Hi", "!"]
    assert run("render", "--lenient", data=data).stdout == b"Hi!\n"


# -- usage errors, not internal ones --------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["fetch", "--max-time", "99999999999h", "http://127.0.0.1:9/"],
    ["fetch", "--idle-timeout", "99999999999h", "http://127.0.0.1:9/"],
    ["fetch", "--first-byte-timeout", "99999999999h", "http://127.0.0.1:9/"],
    ["fetch", "--connect-timeout", "99999999999h", "http://127.0.0.1:9/"],
    ["fetch", "--retry-delay", "99999999999h", "http://127.0.0.1:9/"],
    ["fetch", "--max-redirs", "-1", "http://127.0.0.1:9/"],
    ["render", "--interval", "99999999999h"],
    ["replay", "--speed", "1e-300", str(SAMPLES / "anthropic-thinking.sse")],
], ids=["max-time", "idle-timeout", "first-byte-timeout", "connect-timeout", "retry-delay", "max-redirs",
        "interval", "speed"])
def test_out_of_range_options_are_usage_errors(args):
    p = run(*args)
    assert p.returncode == 2, p.stderr
    assert b"Traceback" not in p.stderr and b"Exception" not in p.stderr


# -- fetch: redirects and the response head -------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    s = LocalServer()
    yield s
    s.close()


@pytest.mark.parametrize("location", ["javascript:alert(1)", "data:text/plain,hi", "ftp://127.0.0.1/x"])
def test_a_redirect_to_a_url_that_is_not_http_is_an_http_error(server, location):
    from urllib.parse import quote

    p = run("fetch", "-L", server.url("/redirect?to=" + quote(location, safe="")))
    assert p.returncode == 6, p.stderr
    assert "not http or https" in one_line(p.stderr)
    assert failed_output(p.stdout, b"", 6)


@pytest.mark.parametrize("path", ["/drip-head?delay=0.2", "/continue?delay=0.05"], ids=["slow-headers", "endless-100"])
@pytest.mark.parametrize("option, which", [("--max-time", "total timeout"),
                                           ("--first-byte-timeout", "first-byte timeout")])
def test_the_head_is_under_the_max_time_and_first_byte_deadlines(server, path, option, which):
    start = time.monotonic()
    p = run("fetch", option, "1s", server.url(path))
    assert p.returncode == 8, p.stderr
    assert which in one_line(p.stderr)
    assert time.monotonic() - start < 10


# -- closed and full outputs ----------------------------------------------------------------------

@pytest.mark.parametrize("args, fd", [
    (["frame", str(SAMPLES / "anthropic-thinking.sse")], 1),
    (["normalize", str(SAMPLES / "anthropic-thinking.sse")], 1),
    (["render", str(SAMPLES / "anthropic-thinking.sse")], 1),
    (["render", str(SAMPLES / "anthropic-truncated.sse")], 2),
    (["normalize", str(SAMPLES / "anthropic-truncated.sse")], 2),
], ids=["frame-stdout", "normalize-stdout", "render-stdout", "render-stderr", "normalize-stderr"])
def test_a_closed_output_is_the_quiet_output_error_10(args, fd):
    p = subprocess.run(["sh", "-c", f'"$@" {fd}>&-', "sh", *SSE_TOOL, *args], capture_output=True, env=clean_env(),
                       timeout=WAIT)
    assert p.returncode == 11, (p.returncode, p.stderr)
    assert (p.stderr if fd == 1 else p.stdout) in (b"",) or fd == 2


@pytest.mark.parametrize("stage", ["frame", "normalize", "render"])
def test_a_full_output_is_the_quiet_output_error_10(stage):
    with open("/dev/full", "wb") as full:
        p = subprocess.run([*SSE_TOOL, stage, str(SAMPLES / "anthropic-thinking.sse")], stdout=full,
                           stderr=subprocess.PIPE, env=clean_env(), timeout=WAIT)
    assert p.returncode == 11 and p.stderr == b"", p.stderr
