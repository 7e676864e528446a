"""Streaming key scrubber: response body chunks in, the same chunks with the key masked out.

Consumes byte chunks (``feed``) and the end of the body (``close``); produces byte chunks
in which every occurrence of one secret, raw or URL-encoded, is replaced by a mask of the
same length, so offsets and any Content-Length stay valid. An occurrence split across
chunks is caught: a chunk's end is held back only while it could still be the start of
the secret, and nothing else is, so an SSE event ending in a blank line goes out with its
chunk. It knows nothing of HTTP, encodings or where the bytes go.

Strategy: each feed scans the held tail plus the new chunk once with ``bytes.find`` (one
search per form of the secret), so the cost is linear in the input whatever the chunking;
the tail is shorter than the longest form. Where two forms match at one place, the longer
wins, as with a regex alternation ordered longest first; the result is always that of one
replacement over the whole body.
"""

from __future__ import annotations

from urllib.parse import quote

# The mask is a byte no form of the secret contains, so a mask next to body bytes can
# never spell the secret again.
_MASK_CHOICES = b"*#~X"


class KeyScrubber:
    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("nothing to scrub: the secret is empty")
        forms = {secret.encode("utf-8"), quote(secret, safe="").encode("ascii")}
        #: longest first: the order in which forms starting at one place are tried
        self.forms = tuple(sorted(forms, key=len, reverse=True))
        self._mask = next(bytes([b]) for b in _MASK_CHOICES if all(b not in f for f in forms))
        self._starts = frozenset(f[0] for f in forms)
        self._longest = len(self.forms[0])
        self._tail = b""

    @property
    def held(self) -> int:
        """How many bytes fed so far are held back (a possible start of the secret)."""
        return len(self._tail)

    def feed(self, chunk: bytes) -> bytes:
        data = self._tail + chunk if self._tail else chunk
        out, hold = self._scrub(data, final=False)
        self._tail = data[hold:]
        return out

    def close(self) -> bytes:
        """The held tail: it never became the secret, so it goes out as it came."""
        out, _ = self._scrub(self._tail, final=True)
        self._tail = b""
        return out

    def _scrub(self, data: bytes, final: bool) -> tuple[bytes, int]:
        """``data`` up to the hold point with every occurrence masked, and the hold point."""
        hold = len(data) if final else self._possible_start(data, 0)
        found = {f: data.find(f) for f in self.forms}
        pieces = []
        pos = 0
        while True:
            best, best_form = -1, b""
            for form in self.forms:
                at = found[form]
                if 0 <= at < pos:
                    at = found[form] = data.find(form, pos)
                if at >= 0 and (best < 0 or at < best):
                    best, best_form = at, form
            # A match at or past the hold point waits: a longer form may still start there.
            if best < 0 or best >= hold:
                break
            pieces += (data[pos:best], self._mask * len(best_form))
            pos = best + len(best_form)
            if pos > hold:
                hold = self._possible_start(data, pos)
        if not pieces:
            return data[:hold] if hold < len(data) else data, hold
        pieces.append(data[pos:hold])
        return b"".join(pieces), hold

    def _possible_start(self, data: bytes, start: int) -> int:
        """The first place at or after ``start`` where the rest of ``data`` is a proper
        prefix of a form (the secret may be arriving); ``len(data)`` if there is none."""
        end = len(data)
        at = max(start, end - self._longest + 1)
        while at < end:
            # Jump to the next byte that begins a form: usually there is none.
            nearest = end
            for first in self._starts:
                found = data.find(first, at, nearest)
                if found >= 0:
                    nearest = found
            if nearest == end:
                return end
            rest = data[nearest:]
            if any(len(f) > len(rest) and f.startswith(rest) for f in self.forms):
                return nearest
            at = nearest + 1
        return end


def scrub(data: bytes, secret: str) -> bytes:
    """One whole piece (a header value, a body known to be complete), masked."""
    scrubber = KeyScrubber(secret)
    return scrubber.feed(data) + scrubber.close()
