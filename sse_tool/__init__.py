"""sse-tool: streamed LLM responses (Server-Sent Events), layer by layer.

Each layer is a sans-I/O core with ``feed(...) -> list`` and ``close()``::

    bytes --SseParser--> SseEvent --Normalizer--> Delta, ToolCall, ..., End

* ``Utf8Decoder``: bytes to text across any chunking.
* ``SseParser`` (and ``JsonArrayParser``, ``NdjsonParser``, ``EventStreamParser`` for AWS
  event streams; ``AutoFramer`` picks one from the first bytes): bytes to events,
  WHATWG-exact; ``SnapshotReader`` turns a "growing snapshot" source into chunks.
* ``Normalizer``: one provider's events to channel records (``Delta``, ``End``, ...).
* ``ThinkTags``: ``<think>…</think>`` in answer text to reasoning deltas.
* ``RecordReader``: bytes of any stage's output straight to channel records.
* ``records`` (``arecords`` for async): the whole pipe in one call, chunks of bytes in,
  records out, ending with the ``End`` that ``sse-tool normalize`` writes.

Names are imported on first use, so ``import sse_tool`` stays cheap for pipe stages.
docs/library.md shows each in use.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "Utf8Decoder": "decode",
    "BadInput": "errors", "EventTooLarge": "errors", "ExitCode": "errors", "SseToolError": "errors",
    "AutoFramer": "framing", "sniff": "framing",
    "EventMessage": "eventstream", "EventStreamParser": "eventstream",
    "JsonArrayParser": "jsonarray",
    "NdjsonParser": "ndjson",
    "FrameEnd": "sse", "SseComment": "sse", "SseEvent": "sse", "SseParser": "sse",
    "SnapshotReader": "transport", "feed_all": "transport", "feed_snapshots": "transport",
    "Channel": "model", "Citation": "model", "Delta": "model", "End": "model", "Meta": "model",
    "Note": "model", "Part": "model", "Record": "model", "Redacted": "model", "Reset": "model",
    "Signature": "model", "Status": "model", "ToolCall": "model", "ToolResult": "model",
    "ToolStatus": "model", "Transcript": "model", "Usage": "model",
    "ThinkTags": "think",
    "Normalizer": "normalize",
    "RecordReader": "pipeline",
    "records": "reading", "arecords": "reading",
    "PROVIDERS": "providers",
}

__all__ = sorted(_EXPORTS)

# What a type checker reads (mypy and pyright take any ``TYPE_CHECKING`` as true): the names
# with their types, which ``__getattr__`` alone would leave as Any, re-exported (``X as X``)
# for ``--strict``. Not ``typing``'s: a pipe stage need not import typing for this.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .decode import Utf8Decoder as Utf8Decoder
    from .errors import (
        BadInput as BadInput, EventTooLarge as EventTooLarge, ExitCode as ExitCode,
        SseToolError as SseToolError,
    )
    from .framing import AutoFramer as AutoFramer, sniff as sniff
    from .eventstream import EventMessage as EventMessage, EventStreamParser as EventStreamParser
    from .jsonarray import JsonArrayParser as JsonArrayParser
    from .ndjson import NdjsonParser as NdjsonParser
    from .sse import (
        FrameEnd as FrameEnd, SseComment as SseComment, SseEvent as SseEvent,
        SseParser as SseParser,
    )
    from .transport import (
        SnapshotReader as SnapshotReader, feed_all as feed_all, feed_snapshots as feed_snapshots,
    )
    from .model import (
        Channel as Channel, Citation as Citation, Delta as Delta, End as End, Meta as Meta,
        Note as Note, Part as Part, Record as Record, Redacted as Redacted, Reset as Reset,
        Signature as Signature, Status as Status, ToolCall as ToolCall, ToolResult as ToolResult,
        ToolStatus as ToolStatus, Transcript as Transcript, Usage as Usage,
    )
    from .think import ThinkTags as ThinkTags
    from .normalize import Normalizer as Normalizer
    from .pipeline import RecordReader as RecordReader
    from .reading import arecords as arecords, records as records
    from .providers import PROVIDERS as PROVIDERS


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sse_tool' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)


def __dir__():
    # the API, not the submodules that importing it set as attributes
    return sorted({*__all__, "__version__", *(n for n in globals() if n.startswith("__") and n != "__getattr__")})
