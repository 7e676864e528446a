"""sse-tool: Server-Sent Events from LLM APIs, layer by layer.

Each layer is a sans-I/O core with ``feed(...) -> list`` and ``close()``:

* ``decode.Utf8Decoder``: bytes to text across any chunking.
* ``sse.SseParser`` (and ``jsonarray.JsonArrayParser``, ``ndjson.NdjsonParser``): bytes
  to events, WHATWG-exact; ``framing.AutoFramer`` picks one from the first bytes.
* ``transport.SnapshotReader``: a "growing snapshot" source as a chunk stream.
"""

__version__ = "0.1.0"

from .decode import Utf8Decoder
from .errors import BadInput, EventTooLarge, ExitCode, SseToolError
from .framing import AutoFramer, sniff
from .jsonarray import JsonArrayParser
from .ndjson import NdjsonParser
from .sse import FrameEnd, SseComment, SseEvent, SseParser
from .transport import SnapshotReader, feed_all, feed_snapshots

__all__ = [
    "AutoFramer", "BadInput", "EventTooLarge", "ExitCode", "FrameEnd", "JsonArrayParser",
    "NdjsonParser", "SnapshotReader", "SseComment", "SseEvent", "SseParser", "SseToolError",
    "Utf8Decoder", "feed_all", "feed_snapshots", "sniff",
]
