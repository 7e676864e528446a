"""Presets: the request each provider gets, built alone and sent to a local server."""

import json
import subprocess

import pytest

from sse_tool.presets import Generation, MissingKey, PresetError, build, parse_param

from ..http_server import LocalServer
from ..support import SSE_TOOL, clean_env

ENV = {"OPENAI_API_KEY": "sk-openai-000111", "ANTHROPIC_API_KEY": "sk-ant-000222",
       "GEMINI_API_KEY": "AIza-gemini-000333", "AZURE_OPENAI_API_KEY": "az-key-000444",
       "OLLAMA_API_KEY": "ollama-key-000555"}


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


@pytest.mark.parametrize("provider, base", [
    ("openai", "https://api.openai.com/v1"), ("openai-responses", None), ("anthropic", "https://api.anthropic.com"),
    ("gemini", None), ("azure-openai", "https://res.openai.azure.com"), ("ollama", "https://ollama.com"),
])
def test_on_the_providers_own_host_a_key_is_required(provider, base):
    with pytest.raises(MissingKey):
        build(provider, Generation("m", "p"), {}, base_url=base)


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini", "azure-openai", "ollama"])
def test_elsewhere_no_key_is_needed_and_none_is_sent(provider):
    req = build(provider, Generation("m", "p"), {}, base_url="http://localhost:11434/v1")
    assert {n for n, _ in req.headers} <= {"Content-Type", "anthropic-version"} and req.key_variable == ""
    # ... and a key that is set is sent, as the SDKs do with a base_url
    with_key = build(provider, Generation("m", "p"), ENV | {"AZURE_OPENAI_API_KEY": "az-1", "OLLAMA_API_KEY": "ol-1"},
                     base_url="http://localhost:11434/v1")
    assert len(with_key.headers) == len(req.headers) + 1


def test_ollama_preset_is_the_native_chat_api():
    req = build("ollama", Generation("qwen3:8b", "Hi", system="S", max_tokens=64, temperature=0.3,
                                     reasoning="medium"), {})
    assert req.url == "http://localhost:11434/api/chat"
    assert body(req) == {"model": "qwen3:8b", "stream": True, "think": True,
                         "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}],
                         "options": {"num_predict": 64, "temperature": 0.3}}
    assert body(build("ollama", Generation("m", "p", reasoning="off"), {}))["think"] is False
    assert "think" not in body(build("ollama", Generation("m", "p"), {}))


def test_ollama_follows_ollama_host_and_sends_a_cloud_key_as_bearer():
    assert build("ollama", Generation("m", "p"), {"OLLAMA_HOST": "10.0.0.5:11434"}).url == "http://10.0.0.5:11434/api/chat"
    req = build("ollama", Generation("m", "p"), {"OLLAMA_API_KEY": "ol-key-1"}, base_url="https://ollama.com")
    assert req.url == "https://ollama.com/api/chat" and ("Authorization", "Bearer ol-key-1") in req.headers


AZURE = {"AZURE_OPENAI_API_KEY": "az-key-0001"}


@pytest.mark.parametrize("base, env, url", [
    ("https://res.openai.azure.com", {},
     "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"),
    ("https://res.openai.azure.com/", {"OPENAI_API_VERSION": "2025-04-01-preview"},
     "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2025-04-01-preview"),
    ("https://res.openai.azure.com/openai/deployments/prod-4o?api-version=2024-06-01", {},
     "https://res.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2024-06-01"),
    (None, {"AZURE_OPENAI_ENDPOINT": "https://env.cognitiveservices.azure.com"},
     "https://env.cognitiveservices.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"),
])
def test_azure_openai_preset_addresses_a_deployment(base, env, url):
    req = build("azure-openai", Generation("gpt-4o", "Hi", max_tokens=5), AZURE | env, base_url=base)
    assert req.url == url
    assert ("api-key", "az-key-0001") in req.headers and not any(n == "Authorization" for n, _ in req.headers)
    assert req.key_variable == "AZURE_OPENAI_API_KEY"
    b = body(req)
    assert "model" not in b and b["stream"] is True and b["stream_options"] == {"include_usage": True}
    assert b["messages"] == [{"role": "user", "content": "Hi"}] and b["max_completion_tokens"] == 5


def test_azure_openai_v1_takes_the_openai_request_with_the_deployment_as_model():
    req = build("azure-openai", Generation("gpt-4o", "Hi"), AZURE, base_url="https://res.openai.azure.com/openai/v1")
    assert req.url == "https://res.openai.azure.com/openai/v1/chat/completions"
    assert body(req)["model"] == "gpt-4o"


def test_azure_openai_needs_an_endpoint():
    with pytest.raises(PresetError, match="AZURE_OPENAI_ENDPOINT"):
        build("azure-openai", Generation("m", "p"), AZURE)


def test_an_entra_token_given_with_h_replaces_the_azure_key():
    req = build("azure-openai", Generation("m", "p"), {}, base_url="https://res.openai.azure.com", have_credential=True)
    assert not any(n == "api-key" for n, _ in req.headers)


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


@pytest.mark.parametrize("level", ["extreme", "\u00b2", "\u0663", "-1"])
def test_bad_reasoning_levels_are_usage_errors(level):
    # ("²" and "٣" are digits to str.isdigit, not to int())
    with pytest.raises(PresetError):
        build("openai", Generation("m", "p", reasoning=level), ENV)


# -- through the CLI, to a local server --------------------------------------------------

@pytest.fixture(scope="module")
def server():
    s = LocalServer()
    yield s
    s.close()


def fetch(*args, input=None, **env):
    # stdin: the input, else nothing (not pytest's, which fetch would put before --prompt)
    return subprocess.run([*SSE_TOOL, "fetch", *args], input=input if input is not None else b"",
                          capture_output=True, timeout=30, env=clean_env(**env))


@pytest.mark.parametrize("provider, base, path, auth", [
    ("openai", "/capture/v1", "/capture/v1/chat/completions", ("Authorization", "Bearer sk-openai-000111")),
    ("openai-responses", "/capture/v1", "/capture/v1/responses", ("Authorization", "Bearer sk-openai-000111")),
    ("anthropic", "/capture", "/capture/v1/messages", ("x-api-key", "sk-ant-000222")),
    ("gemini", "/capture/v1beta", "/capture/v1beta/models/g-1:streamGenerateContent?alt=sse",
     ("x-goog-api-key", "AIza-gemini-000333")),
    ("azure-openai", "/capture", "/capture/openai/deployments/g-1/chat/completions?api-version=2024-10-21",
     ("api-key", "az-key-000444")),
    ("ollama", "/capture", "/capture/api/chat", ("Authorization", "Bearer ollama-key-000555")),
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


def test_without_a_key_the_cli_says_which_variable_to_set_and_exits_2():
    r = fetch("--provider", "openai", "--model", "m", "--prompt", "hi", OPENAI_API_KEY="")
    assert r.returncode == 2 and b"OPENAI_API_KEY" in r.stderr and not r.stdout


@pytest.mark.parametrize("provider", ["openai", "ollama", "azure-openai"])
def test_a_local_server_needs_no_key_and_gets_no_key_header(server, provider):
    n = len(server.requests)
    r = fetch("--provider", provider, "--model", "llama3", "--prompt", "hi", "--base-url", server.url("/capture/v1"),
              OPENAI_API_KEY="", AZURE_OPENAI_API_KEY="", OLLAMA_API_KEY="", OLLAMA_HOST="")
    assert r.returncode == 0, r.stderr
    got = server.requests[n]
    assert got.header("Authorization") is None and got.header("api-key") is None


def test_header_options_override_preset_headers(server):
    n = len(server.requests)
    r = fetch("--provider", "anthropic", "--model", "m", "--prompt", "hi", "--base-url", server.url("/capture"),
              "-H", "anthropic-version: 2099-01-01", "-H", "x-api-key: sk-own-key-999", ANTHROPIC_API_KEY="")
    assert r.returncode == 0, r.stderr
    got = server.requests[n]
    assert got.header("anthropic-version") == "2099-01-01" and got.header("x-api-key") == "sk-own-key-999"
