"""Transports: the two ways bytes reach a framer.

* A chunk stream (a pipe, a file, an httpx response): each chunk is fed as it comes.
* A growing snapshot: some clients (an XHR's ``responseText``, a terminal scraper, a
  callback that gets "everything so far") only expose the whole body received so far and
  signal each time it grows. ``SnapshotReader`` remembers how much it has passed on and
  returns only the new part, so the framer downstream sees an ordinary chunk stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .errors import BadInput


class SnapshotReader:
    """Turn successive snapshots of one growing body into the new chunks they add."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen = 0

    def feed(self, snapshot: bytes | str) -> bytes:
        """Return what ``snapshot`` adds to the previous one (text snapshots as UTF-8)."""
        if len(snapshot) < self._seen:
            raise BadInput(
                f"snapshot shrank from {self._seen} to {len(snapshot)}: not the same growing body"
            )
        new = snapshot[self._seen :]
        self._seen = len(snapshot)
        # A text snapshot grows by whole characters, so encoding the new part alone is exact.
        return new.encode("utf-8", "surrogatepass") if isinstance(new, str) else new


def feed_all(framer, chunks: Iterable[bytes]) -> Iterator:
    """Run a framer (or any feed/close core) over a chunk stream; yield items, then its end."""
    for chunk in chunks:
        yield from framer.feed(chunk)
    yield framer.close()


def feed_snapshots(framer, snapshots: Iterable[bytes | str]) -> Iterator:
    """Like ``feed_all``, for a source that only exposes everything received so far."""
    reader = SnapshotReader()
    return feed_all(framer, (reader.feed(s) for s in snapshots))
