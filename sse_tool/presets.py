"""Provider presets for ``fetch --provider``: a model and a prompt to a streaming request.

Consumes the preset options (model, prompt, system prompt, generation settings) and an
environment mapping (for the API key); produces a ``PresetRequest``: method, URL, headers
and a JSON body, as the provider's API reference and SDK build them. It does no I/O and
knows nothing of HTTP libraries; a missing key is a ``MissingKey`` error naming the variable.

``--base-url`` replaces the default base the way the provider's SDK ``base_url`` does: for
OpenAI it includes ``/v1`` (``http://localhost:11434/v1``), for Anthropic it does not, for
Gemini it includes the API version (``.../v1beta``). A key is required only on the
provider's own hosts: pointed anywhere else (a local server, a compatible service), the
preset sends the key when its variable is set and no key header at all when it is not.

``ollama`` is Ollama's native ``/api/chat`` (NDJSON), on ``OLLAMA_HOST`` or
``http://localhost:11434``; a key (``OLLAMA_API_KEY``) is needed only by ollama.com.
``azure-openai`` is a deployment of Azure OpenAI: the resource endpoint (``--base-url`` or
``AZURE_OPENAI_ENDPOINT``) plus ``/openai/deployments/<model>/chat/completions`` with an
``api-version`` (``OPENAI_API_VERSION``, or the latest GA one), the key in an ``api-key``
header. A base that already names a deployment (and maybe its ``api-version``) is used as
it is, and one ending in ``/openai/v1`` takes the OpenAI request unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple
from urllib.parse import quote, urlsplit

from .errors import ExitCode, SseToolError

#: reasoning levels and the thinking budget (tokens) each means for budget-based APIs
REASONING_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384}
ANTHROPIC_VERSION = "2023-06-01"
# Anthropic requires max_tokens; this is the default when --max-tokens is not given
# (raised above the thinking budget when thinking is on, as the API requires).
ANTHROPIC_DEFAULT_MAX_TOKENS = 4096
#: Azure OpenAI's latest generally available data-plane API version
AZURE_API_VERSION = "2024-10-21"
OLLAMA_BASE = "http://localhost:11434"


class MissingKey(SseToolError):
    exit_code = ExitCode.USAGE


class PresetError(SseToolError):
    exit_code = ExitCode.USAGE


class Provider(NamedTuple):
    name: str
    #: the default base ("": none, it must be given)
    base_url: str
    #: environment variables holding the key, the first set one wins
    key_variables: tuple[str, ...]
    #: the provider's own hosts, where a key is required (".x.com": any host under x.com)
    hosts: tuple[str, ...] = ()
    #: an environment variable naming the base when --base-url is not given
    base_variable: str = ""


PROVIDERS = {
    "openai": Provider("openai", "https://api.openai.com/v1", ("OPENAI_API_KEY",), ("api.openai.com",)),
    "openai-responses": Provider("openai-responses", "https://api.openai.com/v1", ("OPENAI_API_KEY",),
                                 ("api.openai.com",)),
    "anthropic": Provider("anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",), ("api.anthropic.com",)),
    # GOOGLE_API_KEY is the google-genai SDK's fallback name
    "gemini": Provider("gemini", "https://generativelanguage.googleapis.com/v1beta",
                       ("GEMINI_API_KEY", "GOOGLE_API_KEY"), ("generativelanguage.googleapis.com",)),
    # a local server needs no key; Ollama's cloud does (OLLAMA_HOST: the CLI's own variable)
    "ollama": Provider("ollama", OLLAMA_BASE, ("OLLAMA_API_KEY",), ("ollama.com",), "OLLAMA_HOST"),
    # the variable names are the ones the openai SDKs' Azure clients read
    "azure-openai": Provider("azure-openai", "", ("AZURE_OPENAI_API_KEY",),
                             (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"),
                             "AZURE_OPENAI_ENDPOINT"),
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
    base = (base_url or _base(spec, env)).rstrip("/")
    version = env.get("OPENAI_API_VERSION", "").strip()
    if provider == "azure-openai" and version and not urlsplit(base).query:
        base += f"?api-version={quote(version)}"  # as the SDK's AzureOpenAI client reads it
    key, variable = "", ""
    if not have_credential:
        variable = next((v for v in spec.key_variables if env.get(v)), "")
        if variable:
            key = env[variable]
        elif own_host(spec, base):
            raise MissingKey(f"no API key for {provider}: set {spec.key_variables[0]} "
                             f"(or pass the credential header with -H)")
    level = _reasoning(gen.reasoning)
    url, headers, body = _BUILDERS[provider](base, gen, key, level)
    for path, value in gen.params.items():
        _set_path(body, path, value)
    headers = [("Content-Type", "application/json"), *headers]
    return PresetRequest("POST", url, headers, json.dumps(body, ensure_ascii=False).encode(),
                         variable)


def _base(spec: Provider, env: Mapping[str, str]) -> str:
    base = env.get(spec.base_variable, "").strip() if spec.base_variable else ""
    if base and "://" not in base:  # OLLAMA_HOST may be host:port alone
        base = "http://" + base
    base = base or spec.base_url
    if not base:
        raise PresetError(f"--provider {spec.name} needs --base-url"
                          + (f" (or {spec.base_variable})" if spec.base_variable else ""))
    return base


def own_host(spec: Provider, base: str) -> bool:
    """Whether ``base`` is on one of the provider's own hosts (where its key is required)."""
    host = (urlsplit(base).hostname or "").lower()
    return any(host == h or (h.startswith(".") and host.endswith(h)) for h in spec.hosts)


def _reasoning(value: str | None) -> str | int | None:
    if value is None:
        return None
    value = value.strip().lower()
    if value in ("off", "low", "medium", "high"):
        return value
    if value.isascii() and value.isdigit():
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


def _ollama(base, gen, key, level):
    messages = [{"role": "system", "content": gen.system}] if gen.system else []
    messages.append({"role": "user", "content": gen.prompt})
    body: dict[str, Any] = {"model": gen.model, "messages": messages, "stream": True}
    options: dict[str, Any] = {}
    if gen.max_tokens is not None:
        options["num_predict"] = gen.max_tokens
    if gen.temperature is not None:
        options["temperature"] = gen.temperature
    if options:
        body["options"] = options
    if level is not None:
        # a yes or no for most models (gpt-oss also takes a level: --param think='"high"')
        body["think"] = level != "off"
    return f"{base}/api/chat", _bearer(key), body


def _azure_openai(base, gen, key, level):
    url, headers, body = _openai(base, gen, "", level)  # the OpenAI body; the key goes elsewhere
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    if path.endswith("/openai/v1"):  # the v1 API takes OpenAI's request, the deployment as model
        url = parts._replace(path=f"{path}/chat/completions", query="").geturl()
    else:
        if "/openai/deployments/" not in path:
            path = f"{path}/openai/deployments/{quote(gen.model, safe='')}"
        query = parts.query or f"api-version={AZURE_API_VERSION}"
        url = parts._replace(path=f"{path}/chat/completions", query=query).geturl()
        del body["model"]  # the deployment in the URL names it
    return url, [("api-key", key)] if key else [], body


def _bearer(key: str) -> list[tuple[str, str]]:
    return [("Authorization", f"Bearer {key}")] if key else []


_BUILDERS = {"openai": _openai, "openai-responses": _openai_responses,
             "anthropic": _anthropic, "gemini": _gemini, "ollama": _ollama,
             "azure-openai": _azure_openai}


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
