"""Rules of Amazon Bedrock streams (AWS event-stream messages).

``ConverseStream``: one ``messageStart`` first; ``contentBlockDelta`` by
``contentBlockIndex`` (a tool call's block opens with ``contentBlockStart`` carrying
``start.toolUse``; text and reasoning blocks often have no start); ``contentBlockStop``;
``messageStop`` with its ``stopReason`` (the terminal event), then at most one
``metadata`` (usage, latency). ``InvokeModelWithResponseStream``: ``chunk`` events whose
``bytes`` are the model's own event as base64 JSON. A failure is an ``exception:<type>``
message, which ends the stream.
"""

from __future__ import annotations

import orjson

from ..providers.bedrock import BadChunk
from .rules import ERROR, Finding, rule

MESSAGE_START = rule(
    "bedrock.message-start", ERROR, "messageStart missing, late or repeated",
    """A Converse stream opens with one `messageStart` (the role); boto3's and the AWS
    SDKs' event handlers, and normalize, start the message there.""",
)
TOOL_UNPAIRED = rule(
    "bedrock.tool-unpaired", ERROR, "a tool-use delta without its contentBlockStart",
    """A tool call's block opens with `contentBlockStart` carrying `start.toolUse` (its name
    and `toolUseId`); its input pieces come in `contentBlockDelta` at the same
    `contentBlockIndex`. Input for a block that never opened has no tool to go to.""",
)
TOOL_INPUT = rule(
    "bedrock.tool-input", ERROR, "a tool call whose joined input is not a JSON object",
    """The `toolUse.input` pieces of one block join into a JSON object by its
    `contentBlockStop`; clients parse it before calling the tool.""",
)
AFTER_STOP = rule(
    "bedrock.after-stop", ERROR, "an event after messageStop other than one metadata",
    """`messageStop` ends the turn; only one `metadata` event (usage and latency) may
    follow it. Anything else is read by some clients and not others.""",
)
CHUNK_BYTES = rule(
    "bedrock.chunk-bytes", ERROR, "an InvokeModel chunk whose bytes are not base64 JSON",
    """`InvokeModelWithResponseStream` wraps each of the model's events as base64 JSON in
    `chunk.bytes`; boto3 hands the decoded bytes to the caller, who parses them as JSON.""",
)

#: what the adapter refuses to read, by the error it raises, said by a rule of its own
#: (the core says any other refusal as stream.wrong-type): normalize stops there too
REFUSED = {BadChunk: CHUNK_BYTES}


class Rules:
    def __init__(self) -> None:
        self._started = False
        self._events = 0  # of this attempt (a reset starts new rules; the core's index runs on)
        self._stopped = False
        self._metadata = False
        self._tools: dict[int, list[str]] = {}  # open tool blocks -> their input pieces

    def feed(self, index: int, event, payload, records: list, out: list[Finding]) -> None:
        self._events += 1
        if not isinstance(payload, dict):
            return
        name = event.event
        if name == "chunk":  # (its bytes: see REFUSED)
            return
        if self._stopped and not (name == "metadata" and not self._metadata):
            out.append(AFTER_STOP.at(event.offset, index, f"{name} after messageStop"))
        if name == "metadata":
            self._metadata = True
        elif name == "messageStart":
            if self._started or self._events > 1:
                out.append(MESSAGE_START.at(event.offset, index, "messageStart is not the first event, "
                                            "or comes twice"))
            self._started = True
        elif name in ("contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"):
            if not self._started:
                out.append(MESSAGE_START.at(event.offset, index, f"{name} before messageStart"))
                self._started = True
            self._block(index, event, name, payload, out)

    def _block(self, index: int, event, name: str, payload: dict, out: list[Finding]) -> None:
        block = payload.get("contentBlockIndex")
        if name == "messageStop":
            self._stopped = True
        elif name == "contentBlockStart":
            start = payload.get("start")
            if isinstance(start, dict) and "toolUse" in start:
                self._tools[block] = []
        elif name == "contentBlockDelta":
            delta = payload.get("delta")
            tool = delta.get("toolUse") if isinstance(delta, dict) else None
            if isinstance(tool, dict):
                if block not in self._tools:
                    out.append(TOOL_UNPAIRED.at(event.offset, index, f"tool input at contentBlockIndex {block!r}, "
                                                "which no contentBlockStart opened"))
                    self._tools[block] = []
                self._tools[block].append(tool.get("input") if isinstance(tool.get("input"), str) else "")
        elif block in self._tools:  # contentBlockStop of a tool block
            joined = "".join(self._tools.pop(block))
            try:
                value = orjson.loads(joined or "{}")
            except orjson.JSONDecodeError:
                out.append(TOOL_INPUT.at(event.offset, index, f"the input of block {block} does not parse as JSON"))
            else:
                if not isinstance(value, dict):  # (a tool's input is an object)
                    out.append(TOOL_INPUT.at(event.offset, index,
                                             f"the input of block {block} is JSON but not an object"))

    def close(self, index: int) -> list[Finding]:
        return []
