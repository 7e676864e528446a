"""Rules of the OpenAI Chat Completions stream (and the servers that copy it).

Every data is a ``chat.completion.chunk`` of one response (one ``id``), choices appear in
index order, each finishes once, a separate usage chunk (``choices: []``) comes after the
finish, and ``data: [DONE]`` ends it all (``stream.after-terminal`` and
``stream.no-terminal-event`` say the rest). Tool calls stream by ``index``: a call's first
piece names it, later pieces carry argument text, and the joined text is JSON once the
stream is done (joined from the adapter's tool-call records, the ones ``normalize``
writes, so index-less pieces are attributed as there). Error frames carry an object with a
``message``.
"""

from __future__ import annotations

import orjson

from ..model import ToolCall
from .quick import FIRST, SECOND, STRING
from .rules import ERROR, WARNING, Finding, rule

CHUNK_OBJECT = rule(
    "chat.chunk-object", WARNING, "a chunk that is not a chat.completion.chunk with choices",
    """Every frame but `[DONE]` and error frames is a `chat.completion.chunk` whose `choices`
    is a list (empty only in the usage chunk); clients build each frame into that type and
    read `chunk.choices`. A frame of another `object` (a usage or billing frame of some
    gateways, as in samples/credits-usage.sse) or without `choices` is outside the protocol
    and fails in clients that read the field unconditionally.""",
)
ID_CHANGED = rule(
    "chat.id-changed", ERROR, "chunks of one stream with different ids",
    """OpenAI's chunk reference says every chunk of a completion has the same id; clients and
    proxies group chunks by it, and a changing id means two responses were spliced.""",
)
CHOICE_INDEX = rule(
    "chat.choice-index", ERROR, "a choice index that is missing or out of order",
    """Choices are numbered from 0 and appear in that order. openai-python's stream helpers
    (`chat.completions.stream()`, ChatCompletionStreamState) keep choices in a list indexed by
    `choice.index`, appending the first one they see: an index out of order lands in the
    wrong slot and the next lookup raises IndexError.""",
    ("openai-python stream helpers (IndexError)",),
)
TOOL_CALL_INDEX = rule(
    "chat.tool-call-index", ERROR, "a tool call index that skips ahead",
    """Parallel tool calls are numbered 0, 1, 2, ... and a piece with a new index starts the
    next call. openai-python's helpers insert each call at its index in a list and then read
    `tool_calls[index]`: a first index of 1 (seen from a proxy in front of Claude) or a gap
    raises IndexError, and clients that merge by index merge two calls' arguments
    (BerriAI/litellm#7621).""",
    ("openai-python stream helpers (IndexError)",),
)
TOOL_CALL_NO_INDEX = rule(
    "chat.tool-call-no-index", WARNING, "tool call pieces without an index",
    """Mistral's API (and servers modelled on it) omits `index` on tool call pieces; the
    OpenAI schema requires it. openai-python's helpers raise RuntimeError "Expected list
    delta entry to have an `index` key", and clients that join pieces by index cannot tell
    calls apart. Reported once per stream.""",
    ("openai-python stream helpers (RuntimeError)",),
)
TOOL_CALL_START = rule(
    "chat.tool-call-start", ERROR, "a tool call whose first piece has no id or no name",
    """The first piece of each call carries `id`, `type` and `function.name`; later pieces
    carry only argument text. Without the name the call cannot be dispatched, without the id
    its result cannot be sent back.""",
)
TOOL_ARGUMENTS = rule(
    "chat.tool-arguments", ERROR, "a tool call whose joined arguments are not a JSON object",
    """Once the stream is done, each call's argument pieces joined in order are one JSON
    object (OpenAI sends `{}` for a call without arguments); clients json.loads them before
    calling the tool. Empty arguments are not JSON either.""",
)
FINISH_REPEATED = rule(
    "chat.finish-reason-repeated", WARNING, "a choice given a finish_reason twice",
    """A choice finishes once, on its last content chunk. A second finish_reason is
    harmless to the openai SDKs, but clients that close the choice on the first one drop or
    mis-attribute what follows. OpenRouter sent `length` twice before an error frame in the
    recorded tests/fixtures/openai-chat/openrouter-error-midstream.sse.""",
)
DELTA_AFTER_FINISH = rule(
    "chat.delta-after-finish", ERROR, "content for a choice after its finish_reason",
    """After its finish_reason a choice gets no more content, reasoning or tool-call pieces:
    clients finalise the message (and parse its tool arguments) at the finish, so later
    pieces are lost or break the parsed result.""",
)
USAGE_BEFORE_FINISH = rule(
    "chat.usage-before-finish", ERROR, "the usage chunk before every choice finished",
    """With `stream_options.include_usage` the usage comes in one extra chunk with
    `choices: []` after every choice's finish_reason, right before `[DONE]`; clients take it
    as the end of the content (the OpenAI reference: "the last chunk before the data: [DONE]
    message").""",
)
ERROR_SHAPE = rule(
    "chat.error-shape", ERROR, "an error frame without an error object holding a message",
    """A mid-stream error is a frame with `error: {"message": ..., "type": ..., "code": ...}`.
    openai-python raises APIError only when `error` is there, and takes the message only from
    an object's string `message` ("An error occurred during streaming" otherwise); an
    `event: error` frame without `error` is not recognised as an error at all.""",
    ("openai-python (error lost or its message lost)",),
)

#: delta fields that carry text or calls: none may follow a finish_reason
_CONTENT = ("content", "refusal", "reasoning_content", "reasoning", "tool_calls")


#: a chunk of answer text as OpenAI sends it (see quick.py), its id and model captured
#: (the fields no rule reads may be there or not)
QUICK = (r'\{"id":(' + STRING + r'),"object":"chat\.completion\.chunk","created":(?:0|[1-9][0-9]{0,15}),'
         r'"model":(' + STRING + r')(?:,"service_tier":(?:' + STRING + r'|null))?(?:,"system_fingerprint":(?:'
         + STRING + r'|null))?,"choices":\[\{"index":0,"delta":\{"content":' + STRING + r'\},"logprobs":null,'
         r'"finish_reason":null\}\](?:,"usage":null)?(?:,"obfuscation":' + STRING + r')?\}', "message")


def _has_content(delta: dict) -> bool:
    for key in _CONTENT:
        value = delta.get(key)
        if value:  # "" and [] and null are no content
            return True
    return False


class Rules:
    def __init__(self) -> None:
        self._id: str | None = None
        self._choices: dict[int, str | None] = {}  # index -> finish_reason (None: open)
        self._calls: dict[int, set[int]] = {}  # choice -> tool-call indexes seen
        self._no_index = False
        self._last_call_id: str | None = None
        self._arguments: dict[int, list[str]] = {}  # adapter's call index -> pieces

    def feed(self, index: int, event, payload, records: list, out: list[Finding]) -> None:
        for record in records:
            if type(record) is ToolCall:
                self._arguments.setdefault(record.index, []).append(record.arguments)
        if isinstance(payload, str):  # [DONE]
            self._done(index, event.offset, out)
            return
        at = event.offset
        if payload.get("error") or event.event == "error":
            self._error(payload, at, index, out)
            return
        kind, choices = payload.get("object"), payload.get("choices")
        if (kind is not None and kind != "chat.completion.chunk") or not isinstance(choices, list):
            what = f"object {kind!r}" if kind not in (None, "chat.completion.chunk") else "no choices list"
            out.append(CHUNK_OBJECT.at(at, index, f"a frame with {what}"))
        chunk_id = payload.get("id")
        if isinstance(chunk_id, str):
            if self._id is None:
                self._id = chunk_id
            elif chunk_id != self._id:
                out.append(ID_CHANGED.at(at, index, f"chunk id {chunk_id!r}, the stream's is {self._id!r}"))
        if not isinstance(choices, list):
            return
        if not choices:
            if payload.get("usage") and any(f is None for f in self._choices.values()):
                open_ = sorted(i for i, f in self._choices.items() if f is None)
                out.append(USAGE_BEFORE_FINISH.at(at, index, f"the usage chunk before choice {open_[0]} finished"))
            return
        for choice in choices:
            if isinstance(choice, dict):
                self._choice(choice, at, index, out)

    def close(self, index: int) -> list[Finding]:
        return []

    def quick(self, adapter, found: list) -> bool:
        """Whether ``feed`` would say nothing of a run of ``QUICK`` chunks (``found``: the
        id and model of each, as JSON) and change nothing: the stream's id and the
        model the adapter last named, choice 0 seen and not finished."""
        if self._id is None or self._choices.get(0, 0) is not None:
            return False
        ids, models = set(map(FIRST, found)), set(map(SECOND, found))
        return (all(orjson.loads(i) == self._id for i in ids)
                and all(orjson.loads(m) == adapter._model for m in models))

    # -- internals ----------------------------------------------------------------------

    def _choice(self, choice: dict, at: int, index: int, out: list[Finding]) -> None:
        number = choice.get("index")
        if not isinstance(number, int) or isinstance(number, bool):
            out.append(CHOICE_INDEX.at(at, index, f"a choice with index {number!r}"))
            return
        if number not in self._choices:
            if number != len(self._choices):
                out.append(CHOICE_INDEX.at(at, index, f"choice {number} before choice {len(self._choices)}"))
            self._choices[number] = None
        finished = self._choices[number]
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        if finished is not None and _has_content(delta):
            out.append(DELTA_AFTER_FINISH.at(at, index, f"choice {number} gets content after finish_reason {finished!r}"))
        self._tool_calls(number, delta.get("tool_calls"), at, index, out)
        reason = choice.get("finish_reason")
        if reason is not None:
            if finished is not None:
                out.append(FINISH_REPEATED.at(at, index, f"choice {number} finishes again ({reason!r}, "
                                                         f"after {finished!r})"))
            else:
                self._choices[number] = reason

    def _tool_calls(self, number: int, calls, at: int, index: int, out: list[Finding]) -> None:
        if not isinstance(calls, list):
            return
        seen = self._calls.setdefault(number, set())
        for call in calls:
            if not isinstance(call, dict):
                continue
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            call_id = call.get("id")
            position = call.get("index")
            if not isinstance(position, int) or isinstance(position, bool):
                if not self._no_index:
                    self._no_index = True
                    out.append(TOOL_CALL_NO_INDEX.at(at, index, "tool call pieces without an index"))
                if call_id and call_id != self._last_call_id and not function.get("name"):
                    out.append(TOOL_CALL_START.at(at, index, f"tool call {call_id!r} starts without a function name"))
                if call_id:
                    self._last_call_id = call_id
                continue
            if position in seen:
                continue
            if position != len(seen):
                out.append(TOOL_CALL_INDEX.at(at, index, f"tool call index {position} where {len(seen)} was next"))
            seen.add(position)
            missing = [name for name, value in (("id", call_id), ("function.name", function.get("name")))
                       if not (isinstance(value, str) and value)]
            if missing:
                out.append(TOOL_CALL_START.at(at, index, f"tool call {position} starts without {' and '.join(missing)}"))

    def _done(self, index: int, at: int, out: list[Finding]) -> None:
        for call, pieces in sorted(self._arguments.items()):
            text = "".join(pieces)
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                what = "are empty" if not text else f"are not JSON ({exc})"
                out.append(TOOL_ARGUMENTS.at(at, index, f"the arguments of tool call {call} {what}"))
                continue
            if not isinstance(value, dict):  # (a tool takes named arguments)
                out.append(TOOL_ARGUMENTS.at(at, index, f"the arguments of tool call {call} are JSON "
                                             f"but not an object ({text[:40]!r})"))
        self._arguments.clear()

    def _error(self, payload: dict, at: int, index: int, out: list[Finding]) -> None:
        error = payload.get("error")
        if not isinstance(error, dict):
            what = "no error object" if error is None else f"error {type(error).__name__} {error!r:.40}"
            out.append(ERROR_SHAPE.at(at, index, f"an error frame with {what}"))
        elif not (isinstance(error.get("message"), str) and error["message"]):
            out.append(ERROR_SHAPE.at(at, index, "an error object without a message"))
