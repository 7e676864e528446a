"""The aggregate of one attempt: channel records in, what a view paints out.

``Draft.add(record, now)`` stores a record (O(1) for a delta: pieces are joined only when
a view reads ``answer`` or ``reasoning``); ``clear()`` forgets the attempt after a ``reset``;
``result(end)`` is the whole outcome as a JSON-ready dict (``--output-json``).
It knows no clock (times are passed in), no terminal and no file.
"""

from __future__ import annotations

from operator import attrgetter

from ..model import Channel, Delta, End, Meta, Part, Record, ToolCall, Transcript, Usage

_REASONING = Channel.REASONING
_CHANNEL, _TEXT = attrgetter("channel"), attrgetter("text")


class Draft:
    """What arrived so far of the current attempt."""

    def __init__(self, started: float = 0.0) -> None:
        #: when the painter started (clock time): the spinner's elapsed time counts from it
        self.started = started
        self.transcript = Transcript()
        #: index -> [id, name, argument pieces]
        self._tools: dict[int, list] = {}
        self.usage: dict | None = None
        self.meta: dict = {}
        self.got_bytes = False
        self.reasoning_started: float | None = None
        self.reasoning_last: float | None = None
        self.answer_started: float | None = None
        self.attempts = 1
        #: whether arrival times mean anything: a live input (a pipe), not a file read at
        #: once; and which read each milestone came in (a time measured inside one read
        #: is no time at all: ``cat file | render``)
        self.live = False
        self.batch = 0
        self._batches: dict[str, int] = {}
        self.last_content: float | None = None
        #: the latest content is reasoning
        self.thinking = False
        #: where the reasoning and the rest took turns, in order: (reasoning size, answer
        #: size, time) at each change of side, so that a view lays the reasoning out where
        #: it came (Anthropic's interleaved thinking, several items of a Responses stream)
        self.turns: list[tuple[int, int, float]] = []

    def add(self, record: Record, now: float) -> bool:
        """Store one record; True when it changed something a view shows."""
        if isinstance(record, Delta):
            if not record.text:
                return False
            if (record.channel is _REASONING) is not self.thinking:
                self._turn(now)
            self.transcript.add(record)
            if record.channel is Channel.REASONING:
                if self.reasoning_started is None:
                    self.reasoning_started = now
                    self._batches["reasoning"] = self.batch
                self.reasoning_last = now
                self._batches["reasoning_last"] = self.batch
            elif self.answer_started is None:  # the answer, or a refusal in its place
                self.answer_started = now
                self._batches["answer"] = self.batch
            self.last_content = now
            self._batches["last"] = self.batch
            return True
        if isinstance(record, Part):
            self.transcript.part(record)
            return True
        if isinstance(record, ToolCall):
            call = self._tools.setdefault(record.index, [None, None, []])
            call[0] = record.id if record.id is not None else call[0]
            call[1] = record.name if record.name is not None else call[1]
            if record.arguments:
                call[2].append(record.arguments)
            return True
        if isinstance(record, Usage):
            self.usage = record.usage
        elif isinstance(record, Meta):
            self.meta[record.key] = record.value
        return False  # signatures, citations, server tool progress: not drawn

    def add_deltas(self, deltas: list[Delta], now: float) -> bool:
        """Store a run of deltas that arrived together (at ``now``, in the same read), as
        ``add`` one after another would; True when any had text."""
        channels = set(map(_CHANNEL, deltas))
        if len(channels) == 1:  # nearly every read: one channel's deltas
            channel = channels.pop()
            texts = list(filter(None, map(_TEXT, deltas)))
            reasoning = bool(texts) and channel is _REASONING
            other = bool(texts) and channel is not _REASONING
            if texts and reasoning is not self.thinking:
                self._turn(now)
            self.transcript.extend(channel, texts)
        else:
            add = self.transcript.add
            reasoning = other = False
            for delta in deltas:
                if delta.text:
                    if (delta.channel is _REASONING) is not self.thinking:
                        self._turn(now)
                    add(delta)
                    if delta.channel is _REASONING:
                        reasoning = True
                    else:
                        other = True
        if reasoning:
            if self.reasoning_started is None:
                self.reasoning_started = now
                self._batches["reasoning"] = self.batch
            self.reasoning_last = now
            self._batches["reasoning_last"] = self.batch
        if other and self.answer_started is None:
            self.answer_started = now
            self._batches["answer"] = self.batch
        if reasoning or other:
            self.last_content = now
            self._batches["last"] = self.batch
            return True
        return False

    def _turn(self, now: float) -> None:
        """Content arrives from the side that did not have the last word (asked before it
        is stored); an answer with no reasoning before it is no turn."""
        self.thinking = not self.thinking
        reasoning = self.transcript.size(_REASONING)
        if self.thinking or reasoning:
            self.turns.append((reasoning, self.transcript.size(Channel.ANSWER), now))

    def clear(self) -> None:
        """A retry: the attempt so far is void (usage and metadata come again)."""
        got_bytes, attempts, live, batch = self.got_bytes, self.attempts, self.live, self.batch
        self.__init__(self.started)
        self.got_bytes, self.attempts, self.live, self.batch = got_bytes, attempts + 1, live, batch

    @property
    def answer(self) -> str:
        return self.transcript.text(Channel.ANSWER)

    @property
    def reasoning(self) -> str:
        return self.transcript.text(Channel.REASONING)

    def answer_from(self, start: int) -> str:
        """``answer[start:]``, without joining the text before ``start`` again."""
        return self.transcript.text_from(Channel.ANSWER, start)

    @property
    def refusal(self) -> str:
        return self.transcript.text(Channel.REFUSAL)

    @property
    def has_content(self) -> bool:
        return self.reasoning_started is not None or self.answer_started is not None or bool(self._tools)

    def tool_calls(self, end: End | None = None) -> list[dict]:
        """The calls so far; with the ``End``, each says whether its arguments are whole
        JSON (``complete_json``), as the end record told."""
        out = []
        for index in sorted(self._tools):
            call = self._tools[index]
            if len(call[2]) > 1:
                call[2][:] = ["".join(call[2])]
            out.append({"index": index, "id": call[0], "name": call[1],
                        "arguments": call[2][0] if call[2] else ""})
        if end is not None and end.tool_calls is not None:
            whole = {c.get("index"): c.get("complete_json") for c in end.tool_calls if isinstance(c, dict)}
            for call in out:
                call["complete_json"] = whole.get(call["index"])
        return out

    def thought_seconds(self, now: float) -> float:
        """How long the model thought: first reasoning delta to the answer (or the last reasoning)."""
        if self.reasoning_started is None:
            return 0.0
        end = self.answer_started if self.answer_started is not None else (self.reasoning_last or now)
        return max(0.0, end - self.reasoning_started)

    def thought_timed(self) -> bool:
        """Whether the reasoning's duration was measured: it spanned more than one read."""
        end = self._batches.get("answer", self._batches.get("reasoning_last"))
        return self.live and end is not None and end != self._batches.get("reasoning")

    def first_token_seconds(self) -> float | None:
        """From the start to the first content, when the input was live."""
        first = min((t for t in (self.reasoning_started, self.answer_started) if t is not None), default=None)
        if not self.live or first is None:
            return None
        return max(0.0, first - self.started)

    def tokens_per_second(self, tokens: int | None, now: float) -> float | None:
        """Output tokens over the time the content took to arrive (more than one read)."""
        first = min((t for t in (self.reasoning_started, self.answer_started) if t is not None), default=None)
        first_batch = min((b for k, b in self._batches.items() if k in ("reasoning", "answer")), default=None)
        if not self.live or not tokens or first is None or self._batches.get("last") == first_batch:
            return None
        seconds = (self.last_content or now) - first
        return tokens / seconds if seconds > 0 else None

    def result(self, end: End) -> dict:
        out = {
            "status": end.status.value,
            "answer": self.answer,
            "reasoning": self.reasoning,
            "tool_calls": self.tool_calls(end),
            "stop_reason": end.stop_reason,
            "usage": end.usage if end.usage is not None else self.usage,
            "meta": self.meta,
            "attempts": self.attempts,
        }
        if self.refusal:
            out["refusal"] = self.refusal
        if end.error is not None:
            out["error"] = end.error
        if end.detail is not None:
            out["detail"] = end.detail
        return out
