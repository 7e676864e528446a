"""Which tool calls a stream made, and whether each one's arguments arrived whole.

``ToolCallCheck.add(call)`` takes the ``ToolCall`` records of one stream in order;
``summary(complete)`` gives, per call (by index), its id, name, whether the provider runs
it (``server``) and ``complete_json``: whether its argument pieces, joined, are one whole
JSON value; for a ``freeform`` call (free text, an OpenAI custom tool), which no parse can
judge, whether the turn completed (``complete``). The ``end`` record carries that
summary, so a script can refuse to run a call whose arguments were cut off (a stream
truncated mid-call, or a model that stopped at its token limit inside the arguments)
without parsing them itself.

The pieces are kept until the end (one list per call, joined once): a call's arguments
are as large as the records that carried them.
"""

from __future__ import annotations

import orjson

from .model import ToolCall


class ToolCallCheck:
    def __init__(self) -> None:
        #: index -> [id, name, server, argument pieces, freeform]
        self._calls: dict[int, list] = {}

    def add(self, call: ToolCall) -> None:
        entry = self._calls.get(call.index)
        if entry is None:
            entry = self._calls[call.index] = [None, None, False, [], False]
        if call.id is not None:
            entry[0] = call.id
        if call.name is not None:
            entry[1] = call.name
        if call.server:
            entry[2] = True
        if call.freeform:
            entry[4] = True
        if call.arguments:
            entry[3].append(call.arguments)

    def summary(self, complete: bool = True) -> list[dict] | None:
        """One dict per call, in index order; None when the stream made no call.
        ``complete``: the turn ended with its terminal event (judges ``freeform`` calls)."""
        if not self._calls:
            return None
        out = []
        for index in sorted(self._calls):
            call_id, name, server, pieces, freeform = self._calls[index]
            whole = complete
            if not freeform:
                try:
                    orjson.loads("".join(pieces))
                    whole = True
                except orjson.JSONDecodeError:
                    whole = False
            entry = {"index": index, "id": call_id, "name": name, "complete_json": whole}
            if server:
                entry["server"] = True
            if freeform:
                entry["freeform"] = True
            out.append(entry)
        return out
