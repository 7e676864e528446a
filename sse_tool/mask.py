"""Same-length masking of secrets in bytes that stream past: the relay's responses, fetch's recordings.

Consumes the secrets to hide, then byte chunks (``feed``) and the end (``close``); produces
the same bytes with every occurrence of a secret, in each form it travels in (``forms``:
raw, URL-encoded with upper- or lower-case hex, JSON-escaped), replaced by a mask of the
same length, so offsets and any Content-Length stay true. With ``patterns``, values that
look like credentials whatever they are (``?key=VALUE``, ``scheme://user:password@``) are
masked too; with ``ignore_case``, a secret is found in any ASCII case (for what travels
case-folded, such as an HTTP header name). It knows nothing of HTTP, files or where the
bytes go.

What waits. A secret may be split across two chunks, so the end of a chunk may have to wait
for the next one. What waits must not depend on the secret: if it did, a client who can
make the upstream echo a guess would learn, from whether the echo comes back at once,
whether the guess is the start of the key. So the rule looks only at line ends: the
unfinished line after the last line end waits, its last ``longest form - 1`` bytes (with
``patterns``, all of it, up to ``LINE_LIMIT``). No form of a secret holds a line end, so no
occurrence spans one, and a chunk that ends a line (every SSE event does) goes out whole.

Cost: each feed scans the waiting bytes plus the new chunk once with ``bytes.find`` per
form, linear in the input whatever the chunking. Where forms match at one place the
longest wins, so the result is always that of one replacement over the whole input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote

#: shorter values are not secrets worth masking: masking every "a" would hide the text
MIN_SECRET = 6
#: with ``patterns``, an unfinished line waits whole up to this size, then as without them
LINE_LIMIT = 64 * 1024
# The mask is a byte no form of a secret contains, so a mask next to other bytes can never
# spell a secret again.
_MASK_CHOICES = b"*#~X"
#: query parameters (lower case) whose values are credentials
#: (``$key`` is Google's system-parameter spelling of ``key``)
SECRET_PARAMS = frozenset({"key", "$key", "api_key", "api-key", "apikey", "access_token", "token"})
# Credentials whatever their value: a secret query parameter, a URL's user:password. The
# value (group 1) is masked; neither pattern crosses a line end.
_PATTERNS = (
    re.compile(rb"(?i)[?&;](?:%s)=([^&#\s\"'<>\\]+)"
               % b"|".join(re.escape(p.encode()) for p in sorted(SECRET_PARAMS))),
    re.compile(rb"(?i)\b[a-z][a-z0-9+.-]*://([^/@\s\"'<>\\]+)@"),
)


def forms(secret: str) -> set[bytes]:
    """The byte strings ``secret`` may travel as: raw, URL-encoded (either hex case, ``/``
    encoded or kept), JSON-escaped (with and without ``\\/``, ASCII-only or not)."""
    import json  # only when a secret is learned

    found = {secret.encode("utf-8")}
    for encoded in (quote(secret, safe=""), quote(secret, safe="/")):  # a path keeps its /
        found |= {encoded.encode("ascii"),
                  re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), encoded).encode("ascii")}
    for ascii_only in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        found |= {escaped.encode("utf-8"), escaped.replace("/", "\\/").encode("utf-8")}
    return found


class Masker:
    def __init__(self, secrets: Iterable[str], *, patterns: bool = False, ignore_case: bool = False) -> None:
        found: set[bytes] = set()
        for secret in secrets:
            if "\n" in secret or "\r" in secret:
                # What waits is decided by line ends, which must never be inside a secret.
                raise ValueError("a secret cannot hold a line break")
            if len(secret) >= MIN_SECRET:
                found |= forms(secret)
        if ignore_case:  # found in the data lowered (ASCII only: the same length)
            found = {f.lower() for f in found}
        self._fold = ignore_case
        #: longest first: the order in which forms starting at one place are tried
        self.forms = tuple(sorted(found, key=len, reverse=True))
        self.mask = next(bytes([b]) for b in _MASK_CHOICES if all(b not in f for f in found))
        self._keep = len(self.forms[0]) - 1 if self.forms else 0
        self._patterns = patterns
        self._tail = b""

    @property
    def held(self) -> int:
        """How many bytes fed so far wait for more (the end of an unfinished line)."""
        return len(self._tail)

    def feed(self, chunk: bytes) -> bytes:
        data = self._tail + chunk if self._tail else chunk
        out, hold = self._masked(data, self._hold_point(data))
        self._tail = data[hold:]
        return out

    def close(self) -> bytes:
        """What waits, masked; the masker can then be fed again."""
        out, _ = self._masked(self._tail, len(self._tail))
        self._tail = b""
        return out

    def _hold_point(self, data: bytes) -> int:
        end = len(data)
        line_start = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        if self._patterns and end - line_start <= LINE_LIMIT:
            return line_start
        return max(line_start, end - self._keep)

    def _masked(self, data: bytes, hold: int) -> tuple[bytes, int]:
        """``data`` up to the hold point with every occurrence masked, and the hold point
        (moved past an occurrence that begins before it)."""
        pieces = []
        pos = 0
        hay = data.lower() if self._fold else data
        found = {f: hay.find(f) for f in self.forms}
        while found:
            best, best_form = -1, b""
            for form in self.forms:
                at = found[form]
                if 0 <= at < pos:
                    at = found[form] = hay.find(form, pos)
                if at >= 0 and (best < 0 or at < best):
                    best, best_form = at, form
            if best < 0 or best >= hold:
                break
            pieces += (data[pos:best], self.mask * len(best_form))
            pos = best + len(best_form)
            hold = max(hold, pos)
        if pieces:
            pieces.append(data[pos:hold])
            out = b"".join(pieces)
        else:
            out = data[:hold] if hold < len(data) else data
        if self._patterns:
            out = self._mask_patterns(out)
        return out, hold

    def _mask_patterns(self, data: bytes) -> bytes:
        for pattern in _PATTERNS:
            data = pattern.sub(lambda m: m[0][:m.start(1) - m.start()]
                               + self.mask * (m.end(1) - m.start(1))
                               + m[0][m.end(1) - m.start():], data)
        return data


def mask(data: bytes, secrets: Iterable[str], *, patterns: bool = False, ignore_case: bool = False) -> bytes:
    """One whole piece (a header, a body known to be complete), masked."""
    masker = Masker(secrets, patterns=patterns, ignore_case=ignore_case)
    return masker.feed(data) + masker.close()
