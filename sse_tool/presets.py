"""Provider presets for ``fetch --provider``: a model and a prompt to a streaming request.

Consumes the preset options (model, prompt, system prompt, generation settings) and an
environment mapping (for the API key); produces a ``PresetRequest``: method, URL, headers
and a JSON body, as the provider's API reference and SDK build them. It does no I/O and
knows nothing of HTTP libraries; a missing key is a ``MissingKey`` error naming the variable.

``--base-url`` replaces the default base the way the provider's SDK ``base_url`` does: for
OpenAI it includes ``/v1`` (``http://localhost:11434/v1``), for Anthropic it does not, for
Gemini it includes the API version (``.../v1beta``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple
from urllib.parse import quote

from .errors import ExitCode, SseToolError

#: reasoning levels and the thinking budget (tokens) each means for budget-based APIs
REASONING_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384}
ANTHROPIC_VERSION = "2023-06-01"
# Anthropic requires max_tokens; this is the default when --max-tokens is not given
# (raised above the thinking budget when thinking is on, as the API requires).
ANTHROPIC_DEFAULT_MAX_TOKENS = 4096


class MissingKey(SseToolError):
    exit_code = ExitCode.USAGE


class PresetError(SseToolError):
    exit_code = ExitCode.USAGE


class Provider(NamedTuple):
    name: str
    base_url: str
    #: environment variables holding the key, the first set one wins
    key_variables: tuple[str, ...]


PROVIDERS = {
    "openai": Provider("openai", "https://api.openai.com/v1", ("OPENAI_API_KEY",)),
    "openai-responses": Provider("openai-responses", "https://api.openai.com/v1", ("OPENAI_API_KEY",)),
    "anthropic": Provider("anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",)),
    # GOOGLE_API_KEY is the google-genai SDK's fallback name
    "gemini": Provider("gemini", "https://generativelanguage.googleapis.com/v1beta",
                       ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
}


class Generation(NamedTuple):
    """The options every preset understands; None leaves the provider's default."""

    model: str
    prompt: str
    system: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    #: "off", "low", "medium", "high", or a thinking budget in tokens as a string
    reasoning: str | None = None
    #: extra body fields, dotted paths to JSON values (``generationConfig.topK`` -> 40)
    params: Mapping[str, Any] = MappingProxyType({})


class PresetRequest(NamedTuple):
    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes
    #: the variable the key came from ("" when the caller supplied the credential)
    key_variable: str = ""


def build(provider: str, gen: Generation, env: Mapping[str, str], *,
          base_url: str | None = None, have_credential: bool = False) -> PresetRequest:
    """The streaming request for ``provider``.

    ``have_credential`` means the caller sends its own authentication header, so no key
    is needed from the environment.
    """
    spec = PROVIDERS.get(provider)
    if spec is None:
        raise PresetError(f"unknown provider {provider!r} (one of: {', '.join(PROVIDERS)})")
    key, variable = "", ""
    if not have_credential:
        variable = next((v for v in spec.key_variables if env.get(v)), "")
        if not variable:
            raise MissingKey(f"no API key for {provider}: set {spec.key_variables[0]} "
                             f"(or pass the credential header with -H)")
        key = env[variable]
    base = (base_url or spec.base_url).rstrip("/")
    level = _reasoning(gen.reasoning)
    url, headers, body = _BUILDERS[provider](base, gen, key, level)
    for path, value in gen.params.items():
        _set_path(body, path, value)
    headers = [("Content-Type", "application/json"), *headers]
    return PresetRequest("POST", url, headers, json.dumps(body, ensure_ascii=False).encode(),
                         variable)


def _reasoning(value: str | None) -> str | int | None:
    if value is None:
        return None
    value = value.strip().lower()
    if value in ("off", "low", "medium", "high"):
        return value
    if value.isdigit():
        return int(value)
    raise PresetError(f"--reasoning: expected off, low, medium, high or a token budget, got {value!r}")


def _budget(level: str | int) -> int:
    return level if isinstance(level, int) else REASONING_BUDGETS[level]


def _effort(level: str | int) -> str:
    # OpenAI takes an effort word; a budget is mapped to the nearest word at or above it.
    if isinstance(level, str):
        return level
    return next((w for w, b in REASONING_BUDGETS.items() if level <= b), "high")


def _openai(base, gen, key, level):
    messages = [{"role": "system", "content": gen.system}] if gen.system else []
    messages.append({"role": "user", "content": gen.prompt})
    body: dict[str, Any] = {"model": gen.model, "messages": messages, "stream": True,
                            "stream_options": {"include_usage": True}}
    if gen.max_tokens is not None:
        body["max_completion_tokens"] = gen.max_tokens
    if gen.temperature is not None:
        body["temperature"] = gen.temperature
    if level is not None and level != "off":
        body["reasoning_effort"] = _effort(level)
    return f"{base}/chat/completions", _bearer(key), body


def _openai_responses(base, gen, key, level):
    body: dict[str, Any] = {"model": gen.model, "input": gen.prompt, "stream": True}
    if gen.system:
        body["instructions"] = gen.system
    if gen.max_tokens is not None:
        body["max_output_tokens"] = gen.max_tokens
    if gen.temperature is not None:
        body["temperature"] = gen.temperature
    if level is not None and level != "off":
        # "auto" asks for reasoning summaries, the only reasoning text the API streams
        body["reasoning"] = {"effort": _effort(level), "summary": "auto"}
    return f"{base}/responses", _bearer(key), body


def _anthropic(base, gen, key, level):
    body: dict[str, Any] = {"model": gen.model,
                            "messages": [{"role": "user", "content": gen.prompt}],
                            "stream": True}
    max_tokens = gen.max_tokens
    if level is not None and level != "off":
        budget = _budget(level)
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if max_tokens is None:
            max_tokens = budget + ANTHROPIC_DEFAULT_MAX_TOKENS
    body["max_tokens"] = max_tokens if max_tokens is not None else ANTHROPIC_DEFAULT_MAX_TOKENS
    if gen.system:
        body["system"] = gen.system
    if gen.temperature is not None:
        body["temperature"] = gen.temperature
    headers = [("anthropic-version", ANTHROPIC_VERSION)]
    if key:
        headers.append(("x-api-key", key))
    return f"{base}/v1/messages", headers, body


def _gemini(base, gen, key, level):
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": gen.prompt}]}]}
    if gen.system:
        body["systemInstruction"] = {"parts": [{"text": gen.system}]}
    config: dict[str, Any] = {}
    if gen.max_tokens is not None:
        config["maxOutputTokens"] = gen.max_tokens
    if gen.temperature is not None:
        config["temperature"] = gen.temperature
    if level == "off":
        config["thinkingConfig"] = {"thinkingBudget": 0}
    elif level is not None:
        # includeThoughts: without it Gemini thinks but streams no thought summaries
        config["thinkingConfig"] = {"includeThoughts": True, "thinkingBudget": _budget(level)}
    if config:
        body["generationConfig"] = config
    model = gen.model.removeprefix("models/")
    url = f"{base}/models/{quote(model, safe='')}:streamGenerateContent?alt=sse"
    # The key goes in a header, not in ?key=, so it stays out of URLs and proxy logs.
    headers = [("x-goog-api-key", key)] if key else []
    return url, headers, body


def _bearer(key: str) -> list[tuple[str, str]]:
    return [("Authorization", f"Bearer {key}")] if key else []


_BUILDERS = {"openai": _openai, "openai-responses": _openai_responses,
             "anthropic": _anthropic, "gemini": _gemini}


def parse_param(text: str) -> tuple[str, Any]:
    """``path=VALUE`` from ``--param``: VALUE as JSON when it parses, else as a string."""
    path, sep, raw = text.partition("=")
    if not sep or not path.strip():
        raise PresetError(f"--param: expected PATH=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return path.strip(), value


def _set_path(body: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = body
    for name in parents:
        child = node.get(name)
        if not isinstance(child, dict):
            child = node[name] = {}
        node = child
    if value is None:
        node.pop(last, None)  # --param name=null removes a field the preset set
    else:
        node[last] = value
