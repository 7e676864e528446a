"""Which request targets ``serve`` accepts, and where the relay sends them.

Consumes a request target as the client sent it (the bytes between the method and the
HTTP version); produces the reason it is refused, or nothing. Only a plain origin-form
target is accepted: a path that begins with one ``/``, then an optional query. Refused:
``*``, absolute-form (``http://host/...``), authority-form (``host:port``), anything else
not starting with ``/`` (``@host/...`` once turned a relay's upstream URL into userinfo),
``//`` at the start, ``@``, ``\\`` or ``#`` anywhere, and, once the path is
percent-decoded (again and again, so double encoding does not hide it), a ``.`` or ``..``
segment (also before a ``;parameter``), an encoded ``/`` or ``\\``, a control character, or
bytes that are not UTF-8. Such a path is a plain path, whatever the upstream does with
escapes; joined under the upstream's base path, it stays under it.

``AllowedPaths`` is the relay's list of path prefixes (``--allow-path``), matched on whole
segments of the decoded path. Nothing here does I/O.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

# Decoding rounds before giving up: a path still changing after this many is refused.
_ROUNDS = 4


class RefusedTarget(ValueError):
    """A request target that is not a plain path; the text says why, in one line."""


def check_target(target: bytes) -> bytes:
    """The path of an acceptable target, percent-decoded; ``RefusedTarget`` otherwise."""
    path, _, _query = target.partition(b"?")
    if not path.startswith(b"/"):
        raise RefusedTarget("the request target must be a path starting with /")
    if path.startswith(b"//"):
        raise RefusedTarget("the request path must not start with //")
    if b"@" in target or b"\\" in target or b"#" in target:
        # (a fragment is never sent: a # is an attempt, and no URL can be built with it)
        raise RefusedTarget("the request target must not contain @, \\ or #")
    decoded = path
    for _ in range(_ROUNDS):
        decoded, previous = unquote_to_bytes(decoded), decoded
        segments = decoded.split(b"/")
        if decoded.count(b"/") != previous.count(b"/") or b"\\" in decoded:
            raise RefusedTarget("the request path must not contain an encoded / or \\")
        if any(s.split(b";")[0] in (b".", b"..") for s in segments):
            raise RefusedTarget("the request path must not contain . or .. segments")
        if any(b < 0x20 or b == 0x7F for b in decoded) or b"@" in decoded:
            raise RefusedTarget("the request path must not contain control characters or @")
        if decoded == previous:
            break
    else:
        raise RefusedTarget("the request path is percent-encoded too many times over")
    try:
        decoded.decode("utf-8")
    except UnicodeDecodeError:
        raise RefusedTarget("the request path is not UTF-8 once decoded") from None
    return decoded


class PathNotAllowed(ValueError):
    """A plain path outside the prefixes the relay forwards."""


class AllowedPaths:
    """Path prefixes on whole segments: ``/v1/`` allows what is under ``/v1``, ``/v1``
    that too and ``/v1`` itself, neither allows ``/v1beta``; ``/`` allows every path."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        self.prefixes = tuple(p if p.startswith("/") else "/" + p for p in prefixes)
        self._under = tuple(p if p.endswith("/") else p + "/" for p in self.prefixes)

    def allows(self, decoded_path: bytes) -> bool:
        path = decoded_path.decode("utf-8")
        return path in self.prefixes or path.startswith(self._under)

    def describe(self) -> str:
        return ", ".join(self.prefixes)
