"""Presets: the request each provider gets, built alone and sent to a local server."""

import json
import subprocess

import pytest

from sse_tool.presets import Generation, MissingKey, PresetError, build, parse_param

from .http_server import LocalServer
from .support import SSE_TOOL, clean_env

ENV = {"OPENAI_API_KEY": "sk-openai-000111", "ANTHROPIC_API_KEY": "sk-ant-000222",
       "GEMINI_API_KEY": "AIza-gemini-000333"}


def body(req):
    return json.loads(req.body)


def test_openai_chat_preset():
    req = build("openai", Generation("gpt-x", "Hi", system="Be brief", max_tokens=50,
                                     temperature=0.2, reasoning="low"), ENV)
    assert (req.method, req.url) == ("POST", "https://api.openai.com/v1/chat/completions")
    assert ("Authorization", "Bearer sk-openai-000111") in req.headers
    assert body(req) == {"model": "gpt-x", "stream": True, "stream_options": {"include_usage": True},
                         "messages": [{"role": "system", "content": "Be brief"},
                                      {"role": "user", "content": "Hi"}],
                         "max_completion_tokens": 50, "temperature": 0.2, "reasoning_effort": "low"}
    assert req.key_variable == "OPENAI_API_KEY"


def test_openai_responses_preset():
    req = build("openai-responses", Generation("o-x", "Hi", system="S", max_tokens=9, reasoning="high"), ENV)
    assert req.url == "https://api.openai.com/v1/responses"
    assert body(req) == {"model": "o-x", "input": "Hi", "instructions": "S", "stream": True,
                         "max_output_tokens": 9, "reasoning": {"effort": "high", "summary": "auto"}}


def test_anthropic_preset_with_thinking_raises_max_tokens_above_the_budget():
    req = build("anthropic", Generation("claude-x", "Hi", system="S", reasoning="2000"), ENV)
    assert req.url == "https://api.anthropic.com/v1/messages"
    assert ("x-api-key", "sk-ant-000222") in req.headers
    assert ("anthropic-version", "2023-06-01") in req.headers
    b = body(req)
    assert b["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert b["max_tokens"] > 2000 and b["system"] == "S" and b["stream"] is True
    assert b["messages"] == [{"role": "user", "content": "Hi"}]


def test_anthropic_requires_max_tokens_so_the_preset_always_sends_one():
    assert body(build("anthropic", Generation("c", "Hi"), ENV))["max_tokens"] > 0


def test_gemini_preset_puts_the_key_in_a_header_and_asks_for_sse():
    req = build("gemini", Generation("gemini-x", "Hi", system="S", max_tokens=5, temperature=0,
                                     reasoning="medium"), ENV)
    assert req.url == ("https://generativelanguage.googleapis.com/v1beta/models/"
                       "gemini-x:streamGenerateContent?alt=sse")
    assert ("x-goog-api-key", "AIza-gemini-000333") in req.headers
    assert body(req) == {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "systemInstruction": {"parts": [{"text": "S"}]},
        "generationConfig": {"maxOutputTokens": 5, "temperature": 0,
                             "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 4096}},
    }


def test_gemini_reasoning_off_is_a_zero_budget():
    b = body(build("gemini", Generation("g", "Hi", reasoning="off"), ENV))
    assert b["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}


def test_base_url_replaces_the_default_as_the_sdks_do():
    assert build("openai", Generation("m", "p"), ENV, base_url="http://h:1/v1/").url == \
        "http://h:1/v1/chat/completions"
    assert build("anthropic", Generation("m", "p"), ENV, base_url="http://h:1").url == \
        "http://h:1/v1/messages"


def test_a_missing_key_names_the_variable_to_set():
    with pytest.raises(MissingKey, match="set ANTHROPIC_API_KEY"):
        build("anthropic", Generation("m", "p"), {})


def test_a_credential_given_by_the_caller_needs_no_key():
    req = build("openai", Generation("m", "p"), {}, have_credential=True)
    assert not any(n == "Authorization" for n, _ in req.headers)


def test_params_set_nested_fields_and_null_removes_one():
    gen = Generation("m", "p", params=dict([parse_param("generationConfig.topK=40"),
                                            parse_param("stream_options=null"),
                                            parse_param("user=alice")]))
    b = body(build("openai", gen, ENV))
    assert "stream_options" not in b and b["user"] == "alice"
    assert body(build("gemini", gen, ENV))["generationConfig"] == {"topK": 40}


def test_bad_reasoning_levels_are_usage_errors():
    with pytest.raises(PresetError):
        build("openai", Generation("m", "p", reasoning="extreme"), ENV)


# -- through the CLI, to a local server --------------------------------------------------

@pytest.fixture(scope="module")
def server():
    s = LocalServer()
    yield s
    s.close()


def fetch(*args, input=None, **env):
    return subprocess.run([*SSE_TOOL, "fetch", *args], input=input, capture_output=True, timeout=30,
                          env=clean_env(**env))


@pytest.mark.parametrize("provider, base, path, auth", [
    ("openai", "/capture/v1", "/capture/v1/chat/completions", ("Authorization", "Bearer sk-openai-000111")),
    ("openai-responses", "/capture/v1", "/capture/v1/responses", ("Authorization", "Bearer sk-openai-000111")),
    ("anthropic", "/capture", "/capture/v1/messages", ("x-api-key", "sk-ant-000222")),
    ("gemini", "/capture/v1beta", "/capture/v1beta/models/g-1:streamGenerateContent?alt=sse",
     ("x-goog-api-key", "AIza-gemini-000333")),
])
def test_each_preset_reaches_the_server_as_built(server, provider, base, path, auth):
    n = len(server.requests)
    r = fetch("--provider", provider, "--model", "g-1", "--prompt", "-", "--system", "Sys",
              "--base-url", server.url(base), input=b"Hello \xf0\x9f\x92\xaa", **ENV)
    assert r.returncode == 0, r.stderr
    got = server.requests[n]
    assert (got.method, got.path) == ("POST", path)
    assert got.header(auth[0]) == auth[1]
    assert got.header("Content-Type") == "application/json"
    assert got.header("Accept") == "text/event-stream"
    assert "Hello 💪" in got.body.decode() and "Sys" in got.body.decode()


def test_without_a_key_the_cli_says_which_variable_to_set_and_exits_2(server):
    r = fetch("--provider", "openai", "--model", "m", "--prompt", "hi", "--base-url", server.url("/capture"),
              OPENAI_API_KEY="")
    assert r.returncode == 2 and b"OPENAI_API_KEY" in r.stderr
    assert r.stdout.startswith(b": sse-tool exit 2 fetch: no API key")  # the failure marker only


def test_header_options_override_preset_headers(server):
    n = len(server.requests)
    r = fetch("--provider", "anthropic", "--model", "m", "--prompt", "hi", "--base-url", server.url("/capture"),
              "-H", "anthropic-version: 2099-01-01", "-H", "x-api-key: sk-own-key-999", ANTHROPIC_API_KEY="")
    assert r.returncode == 0, r.stderr
    got = server.requests[n]
    assert got.header("anthropic-version") == "2099-01-01" and got.header("x-api-key") == "sk-own-key-999"
