"""What a served stream holds, read once: its dialect, model, text, tool calls and end.

Consumes a stream's body bytes (a recording's chunks joined, or a plain file); produces a
``Summary``, using the project's own framers and normalizer (``framing.AutoFramer``,
``normalize.Normalizer``), so a stream is classified exactly as ``sse-tool normalize``
would classify it. The summary keeps the provider's own payloads too, in order: the
assemblers (``assemble``) build a non-streaming answer from them, in the provider's own
shape. Input that is not a provider stream gives a summary whose ``dialect`` is None.
Nothing here does I/O.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field

from ..errors import BadInput
from ..framing import AutoFramer
from ..model import Channel, Delta, End, Meta, Reset, Status, ToolCall, Usage
from ..normalize import Normalizer, parse_payload
from ..sse import SseComment


@dataclass
class Tool:
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass
class Summary:
    #: normalize's provider name (``openai``, ``openai-responses``, ``anthropic``, ...)
    dialect: str | None = None
    #: ``sse``, ``json-array`` or ``ndjson``
    framing: str = "sse"
    answer: str = ""
    reasoning: str = ""
    #: a refusal sent in place of the answer (OpenAI's ``refusal`` fields)
    refusal: str = ""
    tools: list[Tool] = field(default_factory=list)
    usage: dict | None = None
    stop_reason: str | None = None
    status: Status = Status.TRUNCATED
    error: dict | None = None
    #: the first value of each metadata key (``model``, ``id``, ...)
    meta: dict = field(default_factory=dict)
    #: (event name, payload) of every event of the last attempt, in order
    payloads: list[tuple[str, object]] = field(default_factory=list)

    @property
    def model(self) -> str | None:
        model = self.meta.get("model")
        return model if isinstance(model, str) else None


def summarize(body: bytes, *, payloads: bool = True) -> Summary:
    """The summary of a whole stream body; ``dialect`` None when it is no provider's.
    ``payloads=False`` keeps no payloads (a server classifying many streams holds only
    what matching needs; an assembler reads the stream again)."""
    # Hundreds of thousands of parsed payloads, none in a cycle: the cyclic collector
    # would scan them again and again as they pile up (3.2 s instead of 1.2 s for
    # 200,000 events), so it waits until they are all read.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _summarize(body, payloads)
    finally:
        if was_enabled:
            gc.enable()


def _summarize(body: bytes, payloads: bool) -> Summary:
    out = Summary()
    framer = AutoFramer()
    normalizer = Normalizer()
    texts: dict[Channel, list[str]] = {c: [] for c in Channel}
    tools: dict[int, Tool] = {}
    arguments: dict[int, list[str]] = {}  # each call's pieces, joined once
    try:
        items = framer.feed(body)
        frame_end = framer.close()
        items += frame_end.items  # a last JSON line without its newline, whole
        records = []
        for item in items:
            if isinstance(item, SseComment):
                got = normalizer.feed(item)
                if got:  # the reset marker: the payloads so far were a failed attempt's
                    out.payloads.clear()
                records += got
                continue
            if payloads:
                out.payloads.append((item.event, parse_payload(item)))
            records += normalizer.feed(item)
        records += normalizer.close(frame_end)
    except BadInput:
        return Summary(framing=framer.kind or "sse")
    out.framing = framer.kind or "sse"
    out.dialect = normalizer.provider
    for record in records:
        kind = type(record)
        if kind is Delta:
            texts[record.channel].append(record.text)
        elif kind is ToolCall:
            tool = tools.setdefault(record.index, Tool(record.index))
            tool.id = tool.id or record.id
            tool.name = tool.name or record.name
            arguments.setdefault(record.index, []).append(record.arguments)
        elif kind is Meta:
            out.meta.setdefault(record.key, record.value)
        elif kind is Usage:
            out.usage = record.usage
        elif kind is Reset:  # a retry: what the failed attempt said is void
            tools.clear(), arguments.clear(), out.meta.clear()
            for pieces in texts.values():
                pieces.clear()
        elif kind is End:
            out.status, out.stop_reason, out.error = record.status, record.stop_reason, record.error
            out.usage = record.usage if record.usage is not None else out.usage
    out.answer, out.reasoning, out.refusal = (
        "".join(texts[Channel.ANSWER]), "".join(texts[Channel.REASONING]), "".join(texts[Channel.REFUSAL]))
    for index, parts in arguments.items():
        tools[index].arguments = "".join(parts)
    out.tools = [tools[i] for i in sorted(tools)]
    return out
