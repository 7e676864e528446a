"""Google Gemini ``streamGenerateContent``: ``alt=sse`` frames and the JSON-array stream.

Each event is a whole ``GenerateContentResponse`` holding only the new output (the JSON
array framer turns each array element into an event, so both forms read the same).
Candidate 0's ``content.parts`` carry the text: parts with ``thought: true`` are reasoning,
other text is the answer. A ``functionCall`` part is a whole tool call (its arguments are
the JSON of ``args``); Vertex may stream the arguments instead as ``partialArgs`` pieces
(``jsonPath`` and a value, strings continued while ``willContinue``), which are assembled
and emitted as the call's JSON arguments once the call is complete. A ``thoughtSignature``
is a ``signature`` record (with the tool call's index when it rides on a function call),
to send back unchanged. Search grounding (``groundingMetadata``) gives one ``citation`` per
supported segment and source (the segment's text, the source's ``uri`` and ``title``), and
``citationMetadata`` one per cited source; grounding is also kept whole as metadata (search
queries, the search entry point), like ``executableCode``/``codeExecutionResult``.
``usageMetadata`` comes again on every chunk, cumulative: the last one is the usage.

There is no sentinel: a candidate's ``finishReason`` (or a ``promptFeedback.blockReason``,
which refuses the whole prompt) is the terminal event. The JSON-array form also needs its
closing ``]``, which the framer reports through the ``FrameEnd``. An error arrives as an
object ``{"error": {"code", "message", "status"}}``; its ``status`` is the error type.
"""

from __future__ import annotations

import re

import orjson

from ..errors import BadInput
from ..model import Channel, Citation, Delta, Meta, Record, Signature, ToolCall, Usage
from ..typed import field
from .errors import error_info

_KEYS = ("candidates", "usageMetadata", "promptFeedback", "modelVersion")

# ``$.operations[0].action`` -> ("operations", 0, "action")
_PATH_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\['([^']*)'\]")
_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue")


class _PartialCall:
    """A Vertex function call whose arguments arrive as ``partialArgs`` pieces."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.args: dict = {}
        self._continued: tuple | None = None  # the string still being continued

    def add(self, piece: dict) -> None:
        path = field(piece, "jsonPath", str, where="partialArgs.jsonPath")
        key = next((k for k in _VALUE_KEYS if k in piece), None)
        if path is None or key is None:
            return
        steps = [m[1] if m[1] is not None else int(m[2]) if m[2] is not None else m[3]
                 for m in _PATH_STEP.finditer(path)]
        if not steps:
            return
        value = None if key == "nullValue" else piece[key]
        if key == "stringValue":
            value = field(piece, key, str, "", where="partialArgs.stringValue")
        target = self.args
        for step, following in zip(steps, steps[1:]):
            target = _child(target, step, [] if isinstance(following, int) else {})
            if target is None:
                return
        last = steps[-1]
        if key == "stringValue" and self._continued == tuple(steps):
            value = _get(target, last, "") + value  # the same string, continued
        _put(target, last, value)
        self._continued = tuple(steps) if key == "stringValue" and piece.get("willContinue") is True else None


def _child(container, step, empty):
    if isinstance(container, dict) and isinstance(step, str):
        return container.setdefault(step, empty)
    if isinstance(container, list) and isinstance(step, int):
        _reach(container, step)
        if container[step] is None:
            container[step] = empty
        return container[step]
    return None


def _get(container, step, default):
    try:
        value = container[step]
    except (KeyError, IndexError, TypeError):
        return default
    return value if isinstance(value, str) else default


def _put(container, step, value) -> None:
    if isinstance(container, dict) and isinstance(step, str):
        container[step] = value
    elif isinstance(container, list) and isinstance(step, int):
        _reach(container, step)
        container[step] = value


def _reach(items: list, index: int) -> None:
    """Make ``items[index]`` exist: elements arrive in order, so an index is one already
    there or the next one. One further on skips elements (and ``[1000000000]`` in a few
    bytes would be a gigabyte of padding): bad input."""
    if index > len(items):
        raise BadInput(f"'partialArgs.jsonPath' skips from element {len(items)} to element {index} of a list")
    if index == len(items):
        items.append(None)


def _str(value) -> str | None:
    return value if isinstance(value, str) else None


def _grounding_citations(grounding: dict) -> list[Citation]:
    """One citation per grounding support and source it names: what the answer says there
    (``segment.text``) and where it comes from (``groundingChunks[i].web``)."""
    chunks = grounding.get("groundingChunks")
    chunks = chunks if isinstance(chunks, list) else []
    out = []
    for support in field(grounding, "groundingSupports", list, (), "groundingMetadata.groundingSupports"):
        if not isinstance(support, dict):
            continue
        segment = support.get("segment")
        text = _str(segment.get("text")) if isinstance(segment, dict) else None
        for i in field(support, "groundingChunkIndices", list, (), "groundingSupports[].groundingChunkIndices"):
            chunk = chunks[i] if isinstance(i, int) and 0 <= i < len(chunks) else None
            source = chunk.get("web") or chunk.get("retrievedContext") if isinstance(chunk, dict) else None
            source = source if isinstance(source, dict) else {}
            out.append(Citation({"segment": segment, "chunk": chunk}, _str(source.get("uri")),
                                _str(source.get("title")), text))
    return out


class Gemini:
    name = "gemini"

    @staticmethod
    def recognise(event: str, payload) -> bool:
        return isinstance(payload, dict) and any(key in payload for key in _KEYS)

    def __init__(self) -> None:
        self.error: dict | None = None
        self.terminal = False
        self.stop_reason: str | None = None
        self.usage: dict | None = None
        self._model: str | None = None
        self._response_id: str | None = None
        self._calls = 0  # function calls seen: the next call's index
        self._partial: _PartialCall | None = None

    def feed(self, event: str, payload) -> list[Record]:
        if not isinstance(payload, dict):
            return []
        out: list[Record] = []
        if payload.get("error") is not None:
            self.error = error_info(payload["error"])
        self._meta(payload, out)
        for candidate in field(payload, "candidates", list) or ():
            if isinstance(candidate, dict) and candidate.get("index", 0) == 0:  # candidate 0 only
                self._candidate(candidate, out)
        feedback = field(payload, "promptFeedback", dict)
        block = field(feedback, "blockReason", str, where="promptFeedback.blockReason") if feedback else None
        if block:
            self.stop_reason = block
            self.terminal = True  # the prompt was refused: no candidate will follow
        usage = field(payload, "usageMetadata", dict)
        if usage and usage != self.usage:
            self.usage = usage  # repeated on every chunk, cumulative: the last one counts
            out.append(Usage(usage))
        return out

    def _meta(self, payload: dict, out: list[Record]) -> None:
        model = payload.get("modelVersion")
        if isinstance(model, str) and model != self._model:
            self._model = model
            out.append(Meta("model", model))
        response_id = payload.get("responseId")
        if isinstance(response_id, str) and response_id != self._response_id:
            self._response_id = response_id
            out.append(Meta("id", response_id))

    def _candidate(self, candidate: dict, out: list[Record]) -> None:
        content = field(candidate, "content", dict, where="candidates[0].content")
        parts = field(content, "parts", list, where="candidates[0].content.parts") if content else None
        for part in parts or ():
            if isinstance(part, dict):
                self._part(part, out)
        grounding = candidate.get("groundingMetadata")
        if isinstance(grounding, dict) and grounding:  # chunks often carry an empty ``{}``
            out.append(Meta("grounding", grounding))
            out += _grounding_citations(grounding)
        cited = candidate.get("citationMetadata")
        sources = cited.get("citationSources") or cited.get("citations") if isinstance(cited, dict) else None
        for source in sources if isinstance(sources, list) else ():
            if isinstance(source, dict):
                out.append(Citation(source, _str(source.get("uri")), _str(source.get("title"))))
        if candidate.get("finishMessage"):
            out.append(Meta("finish_message", candidate["finishMessage"]))
        reason = field(candidate, "finishReason", str, where="candidates[0].finishReason")
        if reason:
            self.stop_reason = reason
            self.terminal = True

    def _part(self, part: dict, out: list[Record]) -> None:
        text = field(part, "text", str, where="parts[].text")
        if text:
            out.append(Delta(Channel.REASONING if part.get("thought") is True else Channel.ANSWER, text))
        call = field(part, "functionCall", dict, where="parts[].functionCall")
        call_index = None
        if call is not None:
            call_index = self._partial.index if self._partial is not None else self._calls
            self._function_call(call, out)
        for key, name in (("executableCode", "executable_code"),
                          ("codeExecutionResult", "code_execution_result")):
            if part.get(key) is not None:
                out.append(Meta(name, part[key]))
        signature = part.get("thoughtSignature")
        if isinstance(signature, str) and signature:
            out.append(Signature(signature, call_index))

    def _function_call(self, call: dict, out: list[Record]) -> None:
        partial = self._partial
        go_on = call.get("willContinue") is True
        args = field(call, "args", dict, where="functionCall.args")
        if partial is None:  # a new call
            index = self._calls
            self._calls += 1
            out.append(ToolCall(index, field(call, "id", str, where="functionCall.id"),
                                field(call, "name", str, where="functionCall.name"), ""))
            if not go_on:
                out.append(ToolCall(index, arguments=orjson.dumps(args or {}).decode()))
                return
            partial = self._partial = _PartialCall(index)
        if args is not None:
            partial.args.update(args)
        for piece in field(call, "partialArgs", list, where="functionCall.partialArgs") or ():
            if isinstance(piece, dict):
                partial.add(piece)
        if not go_on:
            self._partial = None
            out.append(ToolCall(partial.index, arguments=orjson.dumps(partial.args).decode()))
