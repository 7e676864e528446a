"""OpenAI Chat Completions, and the many servers that copy its chunk format.

Answer: ``choices[0].delta.content`` (a string, or Mistral's array of typed parts).
Reasoning: ``reasoning_content`` (DeepSeek, vLLM, Z.ai), ``reasoning`` (OpenRouter, Groq) or
``reasoning_details`` (OpenRouter; it repeats ``reasoning``, so it is read only when that
string is absent; its signatures and encrypted reasoning are ``signature`` and ``redacted``
records). A refusal (``delta.refusal``) is its own channel. Tool calls: ``delta.tool_calls`` pieces joined by ``index`` (pieces
without an index continue the latest call). Terminal event: ``data: [DONE]``, after which
nothing is read (openai-python and openai-go stop there). Errors: a
top-level ``error`` in a data frame (alone, or inside a normal chunk), or ``event: error``.

Nearly every chunk carries one piece of answer text and nothing else new: ``quick`` reads
those with a few plain tests and leaves any other chunk (a new model, usage, a finish
reason, any other delta field, a value of another type) to ``feed``, which gives the same
record (the tests compare both on every fixture). ``quick_lines`` is such a chunk's exact
line, for the model named before (``batch.py``).
"""

from __future__ import annotations

import orjson

from ..model import Channel, Delta, Meta, Record, Redacted, Signature, ToolCall, Usage
from ..typed import field
from ..wire import INT, JSON_STRING, PLAIN
from .errors import error_body, error_info

_ANSWER = Channel.ANSWER
_new = tuple.__new__  # builds a Delta without the keyword handling of its constructor
#: the only fields a delta read by ``quick`` may have (``role`` is never read)
_PLAIN_DELTA = frozenset({"content", "role"})

_CHANNELS = {b"content": _ANSWER}
#: ``quick`` leaves the events of that name to ``feed``
_REFUSED = frozenset({"error"})


def _chunk_lines(model: str | None) -> tuple:
    """``quick_lines`` while ``model`` is the model named before: a chunk of answer text
    naming it, its members in the order OpenAI writes them (vLLM, Groq, Mistral and
    Ollama leave some out). Members ``quick`` does not read are plain strings, integers
    or null; a member it does read takes the one value it reads as plain text (an
    optional member ends ``|)``, which the regex engine takes faster than ``?``)."""
    return (
        rb'\{"id":' + PLAIN + rb',"object":' + PLAIN + rb',"created":' + INT + rb',"model":' + _named(model)
        + rb',(?:"service_tier":' + PLAIN + rb',|)(?:"system_fingerprint":(?:' + PLAIN + rb'|null),|)"choices":\['
        rb'\{"index":0,"delta":\{(?:"role":"assistant",|)"(content)":(' + JSON_STRING + rb')\}(?:,"logprobs":null|)'
        rb',"finish_reason":null\}\](?:,"usage":null|)(?:,"obfuscation":' + PLAIN + rb'|)\}',
        _CHANNELS, _REFUSED,
    )


def _named(model: str | None) -> bytes:
    """A regex of the model's JSON as orjson writes it (null if there is none, or if
    that holds an escape, which a frame record would escape again)."""
    try:
        literal = orjson.dumps(model) if model is not None else b"null"
    except orjson.JSONEncodeError:  # a lone surrogate
        literal = b"null"
    if b"\\" in literal:
        return b"null"
    # each byte as itself or a \xHH escape: no quote or character set in the regex
    return b"".join(bytes([c]) if c < 128 and (chr(c).isalnum() or c == 34) else b"\\x%02x" % c for c in literal)


def _reasoning_text(delta: dict) -> str | None:
    for key in ("reasoning_content", "reasoning"):
        text = field(delta, key, str, where=f"delta.{key}")
        if text is not None:
            return text
    details = field(delta, "reasoning_details", list, where="delta.reasoning_details")
    if details is not None:
        pieces = [d.get("text") or d.get("summary") for d in details if isinstance(d, dict)]
        return "".join(p for p in pieces if isinstance(p, str))
    return None


def _content(content, out: list[Record]) -> None:
    if isinstance(content, str):
        if content:
            out.append(Delta(Channel.ANSWER, content))
        return
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        text = field(part, "text", str, where="content[].text")
        if part.get("type") == "text" and text:
            out.append(Delta(Channel.ANSWER, text))
        elif part.get("type") == "thinking":  # Mistral Magistral
            thinking = part.get("thinking")
            items = thinking if isinstance(thinking, list) else [{"text": thinking}]
            for item in items:
                text = item.get("text") if isinstance(item, dict) else None
                if isinstance(text, str) and text:
                    out.append(Delta(Channel.REASONING, text))


def _opaque(detail: dict, out: list[Record]) -> None:
    """OpenRouter's ``reasoning_details``: a signature, or encrypted reasoning, to send back."""
    index = detail.get("index") if isinstance(detail.get("index"), int) else None
    if isinstance(detail.get("signature"), str) and detail["signature"]:
        out.append(Signature(detail["signature"], index))
    if detail.get("type") == "reasoning.encrypted" and isinstance(detail.get("data"), str) and detail["data"]:
        out.append(Redacted(detail["data"], index))


class OpenAIChat:
    name = "openai"

    @staticmethod
    def recognise(event: str, payload) -> bool:
        return isinstance(payload, dict) and (
            payload.get("object") == "chat.completion.chunk" or isinstance(payload.get("choices"), list)
        )

    def __init__(self) -> None:
        self.error: dict | None = None
        self.terminal = False
        self.stop_reason: str | None = None
        self.usage: dict | None = None
        self._model: str | None = None
        self._last_tool = -1
        self._last_id: str | None = None
        self._lines: tuple = (None, _chunk_lines(None))  # (the model, quick_lines for it)

    @property
    def quick_lines(self) -> tuple:
        """The line of a chunk ``quick`` reads as it stands (``batch.py``): it names the
        model named before, so it changes with it."""
        model, lines = self._lines
        if model != self._model:
            self._lines = (self._model, lines := _chunk_lines(self._model))
        return lines

    def quick(self, event: str, payload: dict) -> Delta | None:
        """The record of a chunk that only brings answer text (the model named before,
        choice 0 alone, no finish reason, no usage, no error), read with plain tests; None
        for anything else (``feed`` reads it)."""
        choices = payload.get("choices")
        if type(choices) is list and len(choices) == 1:
            choice = choices[0]
            if type(choice) is dict:
                delta = choice.get("delta")
                if type(delta) is dict:
                    text = delta.get("content")
                    # a delta of one member that is a string is {"content": text}
                    if (type(text) is str and text and (len(delta) == 1 or delta.keys() <= _PLAIN_DELTA)
                            and choice.get("finish_reason") is None and choice.get("index", 0) == 0
                            and payload.get("usage") is None and not payload.get("error")
                            and "x_groq" not in payload and event != "error"):
                        model = payload.get("model")
                        if model is None or model == self._model:
                            return _new(Delta, (_ANSWER, text))
        return None

    def feed(self, event: str, payload) -> list[Record]:
        if self.terminal:
            return []  # nothing after [DONE] is read: the OpenAI SDKs stop there
        if isinstance(payload, str):
            if payload.strip() == "[DONE]":
                self.terminal = True
            return []
        if not isinstance(payload, dict):
            return []
        out: list[Record] = []
        error = error_body(payload) if "choices" not in payload else None
        if error is not None or payload.get("error") or event == "error":
            self.error = error or error_info(payload.get("error") or payload)
        model = field(payload, "model", str)
        if model is not None and model != self._model:
            self._model = model
            out.append(Meta("model", model))
        for choice in field(payload, "choices", list) or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # choice 0 only
            delta = field(choice, "delta", dict, where="choices[0].delta")
            if delta is not None:
                self._delta(delta, out)
            reason = field(choice, "finish_reason", str, where="choices[0].finish_reason")
            if reason is not None:
                self.stop_reason = reason
                if reason == "error" and self.error is None:  # Mistral's mid-stream failure
                    self.error = {"type": "error", "message": "the model stopped with finish_reason 'error'"}
        groq = field(payload, "x_groq", dict)
        usage = field(payload, "usage", dict) or (field(groq, "usage", dict, where="x_groq.usage") if groq else None)
        if usage:
            self.usage = usage
            out.append(Usage(usage))
        return out

    def _delta(self, delta: dict, out: list[Record]) -> None:
        reasoning = _reasoning_text(delta)
        if reasoning:
            out.append(Delta(Channel.REASONING, reasoning))
        _content(field(delta, "content", (str, list), where="delta.content"), out)
        refusal = field(delta, "refusal", str, where="delta.refusal")
        if refusal:
            out.append(Delta(Channel.REFUSAL, refusal))
        details = delta.get("reasoning_details")
        for detail in details if isinstance(details, list) else ():
            if isinstance(detail, dict):
                _opaque(detail, out)
        for call in field(delta, "tool_calls", list, where="delta.tool_calls") or ():
            if not isinstance(call, dict):
                continue
            index = field(call, "index", int, where="tool_calls[].index")
            call_id = field(call, "id", str, where="tool_calls[].id")
            function = field(call, "function", dict, {}, where="tool_calls[].function")
            name = field(function, "name", str, where="function.name") or None
            arguments = field(function, "arguments", str, "", where="function.arguments")
            if index is None:  # some servers omit it: a new id starts a call
                if call_id is not None and call_id == self._last_id:
                    call_id = name = None  # the same id repeated on a piece: a continuation
                new = call_id is not None or self._last_tool < 0
                index = self._last_tool + 1 if new else self._last_tool
            self._last_tool = index
            if call_id is not None:
                self._last_id = call_id
            out.append(ToolCall(index, call_id, name, arguments))
