"""The whole pipe in one call, for programs that want the outcome: bytes in, records out.

``records(chunks)`` takes any iterable of bytes (an httpx response's ``iter_bytes()``, a
file opened in binary mode, a socket's reads) and yields channel records as each chunk
completes them, always ending with exactly one ``End``: the one ``sse-tool normalize``
writes for the same bytes, bad input included (there the good records come first, then an
``End`` with status ``invalid``, exit 5 and the offset, and nothing more is read).
``arecords`` does the same for an async iterable (``response.aiter_bytes()``, an
``asyncio.StreamReader``). The input may be the output of any stage, as for the CLI.

An exception raised by the source itself (a dropped connection in httpx) is the caller's:
it propagates after the records already yielded.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

from .errors import BadInput
from .model import Record
from .pipeline import RecordReader
from .sse import DEFAULT_MAX_EVENT_SIZE


class _Run:
    """One input read to its ``End``: the reader, and a bad input turned into the end
    record the CLI writes for it."""

    def __init__(self, name: str | None, **options) -> None:
        self.reader = RecordReader(**options)
        self.name = name
        self.done = False

    def feed(self, chunk: bytes) -> list[Record]:
        return self._guard(self.reader.feed, chunk)

    def close(self) -> list[Record]:
        return self._guard(self.reader.close)

    def _guard(self, step, *args) -> list[Record]:
        reader = self.reader
        try:
            out = step(*args)
            if reader.error is None:
                return out
            error = reader.error  # good records first, then the end that says why
        except BadInput as exc:
            out, error = [], exc
        self.done = True
        where = f"{self.name}: " if self.name else ""
        return [*out, *reader.failed(error.exit_code, f"normalize: {where}{error}", error.offset)]


def _options(provider: str, source: str, max_event_size: int, think_tags: str, lenient: bool) -> dict:
    return {"provider": provider, "source": source, "max_event_size": max_event_size,
            "think_tags": think_tags, "lenient": lenient}


def records(
    chunks: Iterable[bytes], provider: str = "auto", *, source: str = "auto", name: str | None = None,
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE, think_tags: str = "auto", lenient: bool = False,
) -> Iterator[Record]:
    """Channel records of a stream given as chunks of bytes, ending with its one ``End``.

    ``provider``, ``source``, ``max_event_size``, ``think_tags`` and ``lenient`` are
    normalize's options; ``name`` names the input in an invalid end's detail, as the CLI
    does (``"<stdin>"`` for a pipe).
    """
    run = _Run(name, **_options(provider, source, max_event_size, think_tags, lenient))
    for chunk in chunks:
        yield from run.feed(chunk)
        if run.done:
            return
    yield from run.close()


async def arecords(
    chunks: AsyncIterable[bytes], provider: str = "auto", *, source: str = "auto", name: str | None = None,
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE, think_tags: str = "auto", lenient: bool = False,
) -> AsyncIterator[Record]:
    """``records`` for an async iterable of bytes."""
    run = _Run(name, **_options(provider, source, max_event_size, think_tags, lenient))
    async for chunk in chunks:
        for record in run.feed(chunk):
            yield record
        if run.done:
            return
    for record in run.close():
        yield record

