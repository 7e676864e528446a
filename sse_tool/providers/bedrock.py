"""Amazon Bedrock streams: ``ConverseStream`` events, and ``InvokeModelWithResponseStream``
chunks that wrap a model family's own events. Both arrive as AWS event-stream messages
(``eventstream.py``), each a JSON payload named by its ``:event-type`` header.

Converse: ``messageStart``; ``contentBlockStart`` (``start.toolUse`` opens a tool call whose
index is the ``contentBlockIndex``; text blocks often have no start at all);
``contentBlockDelta`` whose ``delta`` holds one of ``text`` (answer), ``reasoningContent``
(``text`` is reasoning; ``signature`` and ``redactedContent`` are opaque data to send
back), ``toolUse.input`` (a piece of the call's JSON arguments) or ``citation``;
``contentBlockStop``; ``messageStop`` with the ``stopReason`` (the terminal event); then
``metadata`` with ``usage`` and ``metrics.latencyMs``, which may never come and is not
needed for the turn to be complete. Every payload carries a ``p`` field of random
padding (against length side channels): it means nothing.

InvokeModelWithResponseStream: each ``chunk`` holds the model's own event as base64 JSON
in ``bytes``. It is unwrapped and given to the adapter of the family that recognises it
(Anthropic's Messages events, or an OpenAI-style chunk); Amazon Nova wraps Converse-shaped
events as ``{"contentBlockDelta": {...}}``, read here. The family's terminal event, stop
reason and usage are the stream's, with one exception: a family whose terminal event is
not JSON (the OpenAI-style chunks of gpt-oss, whose ``[DONE]`` sentinel no chunk can
carry) ends at the chunk that carries ``amazon-bedrock-invocationMetrics`` once it has
given a stop reason (a ``finish_reason``, on that chunk or before): Bedrock adds the
metrics to the last chunk of an invoke stream, so that chunk after the finish is the
turn's proof of completion; without either, the stream is truncated. Bytes that are not
base64 of a JSON object are bad input at the chunk's offset (``chunk_event``; check's
``bedrock.chunk-bytes`` says the same).

A failure is a message of type ``exception`` (``throttlingException``,
``modelStreamErrorException``, ``validationException``, ...), which the framer names
``exception:<type>``, or of type ``error`` (``error:<code>``); either is a provider error.
Its message is the payload's ``message``; an error message carries it in its
``:error-message`` header, and an exception's payload may be the plain text itself
(``eventstream.failure_payload`` reads both, as AWS's SDKs do).
"""

from __future__ import annotations

import binascii
from base64 import b64decode

import orjson

from ..errors import BadInput
from ..model import Channel, Citation, Delta, Meta, Record, Redacted, Signature, ToolCall, Usage
from ..typed import REQUIRED, field

#: the ConverseStream event types (and the one InvokeModelWithResponseStream sends)
_CONVERSE = frozenset({
    "messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop",
    "messageStop", "metadata",
})
_FAILURES = ("exception:", "error:")
#: families whose terminal event is not JSON, so no chunk can carry it: they end at the
#: chunk with the invocation metrics, after a stop reason (see the docstring)
_ENDS_AT_METRICS = frozenset({"openai"})


class Bedrock:
    name = "bedrock"

    @staticmethod
    def recognise(event: str, payload) -> bool:
        if event in _CONVERSE:
            return isinstance(payload, dict)
        if event == "chunk":
            return isinstance(payload, dict) and isinstance(payload.get("bytes"), str)
        return event.startswith(_FAILURES)

    def __init__(self) -> None:
        self.error: dict | None = None
        self.terminal = False
        self.stop_reason: str | None = None
        self.usage: dict | None = None
        #: tool blocks open: contentBlockIndex -> whether argument text arrived
        self._tools: dict[int, bool] = {}
        self._family = None  # the adapter reading InvokeModelWithResponseStream chunks
        self._ends_at_metrics = False  # that family's end is the metrics chunk

    def feed(self, event: str, payload) -> list[Record]:
        if event.startswith(_FAILURES):
            self._failure(event, payload)
            return []
        if not isinstance(payload, dict):
            return []
        if event == "chunk":
            return self._chunk(payload)
        return self._converse(event, payload)

    # -- ConverseStream -----------------------------------------------------------------

    def _converse(self, event: str, payload: dict) -> list[Record]:
        if event == "contentBlockDelta":  # by far the most frequent: checked first
            return self._delta(payload)
        if event == "contentBlockStart":
            return self._block_start(payload)
        if event == "contentBlockStop":
            return self._block_stop(payload)
        if event == "messageStop":
            self.terminal = True
            if isinstance(payload.get("stopReason"), str):
                self.stop_reason = payload["stopReason"]
            extra = payload.get("additionalModelResponseFields")
            return [Meta("additional_model_response_fields", extra)] if extra else []
        if event == "metadata":
            return self._metadata(payload)
        return []  # messageStart: only the role

    def _block_start(self, payload: dict) -> list[Record]:
        index, start = payload.get("contentBlockIndex"), payload.get("start")
        tool = start.get("toolUse") if isinstance(start, dict) else None
        if not isinstance(index, int) or not isinstance(tool, dict):
            return []
        self._tools[index] = False
        return [ToolCall(index, field(tool, "toolUseId", str, where="start.toolUse.toolUseId"),
                         field(tool, "name", str, where="start.toolUse.name"), "")]

    def _delta(self, payload: dict) -> list[Record]:
        delta, index = payload.get("delta"), payload.get("contentBlockIndex")
        if not isinstance(delta, dict):
            return []
        index = index if isinstance(index, int) else None
        text = delta.get("text")
        if isinstance(text, str):
            return [Delta(Channel.ANSWER, text)] if text else []
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            return _reasoning(reasoning, index)
        tool = delta.get("toolUse")
        if isinstance(tool, dict):
            piece = tool.get("input")
            if not isinstance(piece, str) or not piece or index is None:
                return []
            self._tools[index] = True
            return [ToolCall(index, arguments=piece)]
        citation = delta.get("citation")
        if isinstance(citation, dict):
            return [_citation(citation, index)]
        return []

    def _block_stop(self, payload: dict) -> list[Record]:
        index = field(payload, "contentBlockIndex", int)
        if self._tools.pop(index, True):
            return []
        # No input streamed (a call without arguments): its arguments are ``{}``, so the
        # joined pieces of every call are one JSON object.
        return [ToolCall(index, arguments="{}")]

    def _metadata(self, payload: dict) -> list[Record]:
        out: list[Record] = []
        usage = payload.get("usage")
        if isinstance(usage, dict):
            # serverToolUsage arrives as {} when no server tool ran: not a count
            usage = {k: v for k, v in usage.items() if v not in ({}, None)}
            if usage:
                self.usage = usage
                out.append(Usage(usage))
        for key in ("metrics", "trace", "performanceConfig"):
            if payload.get(key):
                out.append(Meta(key, payload[key]))
        return out

    def _failure(self, event: str, payload) -> None:
        kind = event.partition(":")[2] or "error"
        details = payload if isinstance(payload, dict) else {}
        message = details.get("message") or details.get("Message") or (payload if isinstance(payload, str) else "")
        error = {"type": kind, "message": str(message)}
        if "originalStatusCode" in details:  # modelStreamErrorException: the model's own failure
            error["code"] = details["originalStatusCode"]
        if details.get("originalMessage"):
            error["original_message"] = details["originalMessage"]
        if self.error is None:
            self.error = error

    # -- InvokeModelWithResponseStream ------------------------------------------------

    def _chunk(self, payload: dict) -> list[Record]:
        inner = chunk_event(field(payload, "bytes", str, REQUIRED, "chunk.bytes"))
        wrapped = [key for key in inner if key in _CONVERSE]
        if len(wrapped) == 1 and isinstance(inner[wrapped[0]], dict):  # Amazon Nova
            out = self._converse(wrapped[0], inner[wrapped[0]])
        else:
            out = self._family_event(inner)
        metrics = inner.get("amazon-bedrock-invocationMetrics")
        if metrics:
            out.append(Meta("invocation_metrics", metrics))
            if self._ends_at_metrics and self.stop_reason is not None and self.error is None:
                self.terminal = True
        return out

    def _family_event(self, inner: dict) -> list[Record]:
        """A model family's own event, read by that family's adapter."""
        kind = inner.get("type") if isinstance(inner.get("type"), str) else "message"
        family = self._family
        if family is None:
            from . import PROVIDERS, recognise

            name = recognise(kind, inner)
            if name is None or name == self.name:
                return [Meta("chunk", inner)]
            family = self._family = PROVIDERS[name]()
            self._ends_at_metrics = name in _ENDS_AT_METRICS
        out = family.feed(kind, inner)
        self.terminal = self.terminal or family.terminal
        self.stop_reason, self.usage = family.stop_reason, family.usage
        if self.error is None and family.error is not None:
            self.error = family.error
        return out


class BadChunk(BadInput):
    """An InvokeModel chunk whose ``bytes`` are not base64 of a JSON object."""


def chunk_event(data: str) -> dict:
    """The model's event in a chunk's ``bytes``. Every family sends base64 JSON objects,
    which boto3 hands over for the caller to parse: anything else is bad input, never a
    chunk to skip (text would be lost while the stream still completes). Base64 is read
    strictly: lenient decoding drops stray characters and reads a torn chunk as another."""
    try:
        inner = orjson.loads(b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        inner = None
    if not isinstance(inner, dict):
        raise BadChunk("chunk.bytes is not base64 of a JSON object")
    return inner


def _reasoning(reasoning: dict, index: int | None) -> list[Record]:
    text = reasoning.get("text")
    if isinstance(text, str):
        return [Delta(Channel.REASONING, text)] if text else []
    if isinstance(reasoning.get("signature"), str):
        return [Signature(reasoning["signature"], index)]
    if isinstance(reasoning.get("redactedContent"), str):  # base64 of the encrypted bytes
        return [Redacted(reasoning["redactedContent"], index)]
    return []


def _citation(citation: dict, index: int | None) -> Citation:
    """A Converse citation: ``location`` (web: ``url``, ``domain``), ``title``, and the
    ``sourceContent`` texts it rests on."""
    location = citation.get("location")
    web = location.get("web") if isinstance(location, dict) else None
    url = web.get("url") if isinstance(web, dict) else None
    texts = [c.get("text") for c in citation.get("sourceContent") or () if isinstance(c, dict)]
    text = "".join(t for t in texts if isinstance(t, str)) or None
    title = citation.get("title") if isinstance(citation.get("title"), str) else None
    return Citation(citation, url if isinstance(url, str) else None, title, text, index)
