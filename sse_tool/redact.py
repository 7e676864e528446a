"""Secret redaction for everything ``fetch`` shows or saves: headers, URLs, messages.

Consumes header pairs, URLs and free text; produces the same with secrets replaced by
``<redacted>``. It knows which header names and query parameters carry credentials, and
it remembers the secret values it has seen so that a value echoed back elsewhere (an
error body quoting the key, a proxy message with the URL) is caught too. It does not
know where the text goes: the edge passes every line it prints or records through here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit, urlunsplit

MASK = "<redacted>"

#: header names (lower case) whose values are credentials
SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key",
    "cookie", "set-cookie", "x-auth-token",
})
#: query parameters (lower case) whose values are credentials
SECRET_PARAMS = frozenset({"key", "api_key", "api-key", "apikey", "access_token", "token"})

# Shorter values are not remembered: replacing every "a" in a message would hide the message.
_MIN_SECRET = 6
# A "Bearer xyz" value keeps its scheme visible: it helps to see which kind of credential went out.
_SCHEME = re.compile(r"^([A-Za-z][\w.-]*)\s+(\S.*)$")
_PARAM_IN_TEXT = re.compile(
    r"(?i)([?&;](?:%s)=)[^&#\s\"']+" % "|".join(re.escape(p) for p in sorted(SECRET_PARAMS))
)
_USERINFO_IN_TEXT = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/@\s]+@")


def is_secret_header(name: str) -> bool:
    return name.strip().lower() in SECRET_HEADERS


class Redactor:
    """Masks secrets; ``learn_*`` first, so the values can be recognised wherever they reappear."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        for secret in secrets:
            self.learn(secret)

    def learn(self, secret: str) -> None:
        secret = secret.strip()
        if len(secret) >= _MIN_SECRET and secret not in self._secrets:
            self._secrets.add(secret)
            # Longest first, so a whole "Bearer sk-..." goes before its "sk-..." part.
            alternatives = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(s) for s in alternatives))

    def learn_headers(self, headers: Iterable[tuple[str, str]]) -> None:
        for name, value in headers:
            if is_secret_header(name):
                self.learn(value)
                m = _SCHEME.match(value.strip())
                if m:
                    self.learn(m.group(2))

    def learn_url(self, url: str) -> None:
        parts = urlsplit(url)
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name.lower() in SECRET_PARAMS:
                self.learn(value)
        if parts.password:
            self.learn(parts.password)

    def header(self, name: str, value: str) -> str:
        """The value to show for one header."""
        if not is_secret_header(name):
            return self.text(value)
        m = _SCHEME.match(value.strip())
        if m and name.lower() in ("authorization", "proxy-authorization"):
            return f"{m.group(1)} {MASK}"
        return MASK

    def headers(self, headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(name, self.header(name, value)) for name, value in headers]

    def url(self, url: str) -> str:
        """The URL with secret query parameters and any password masked (the rest kept exact)."""
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
        query = "&".join(_mask_param(piece) for piece in parts.query.split("&")) if parts.query else ""
        return self.text(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))

    def text(self, message: str) -> str:
        """Any message: known secret values, ``key=`` parameters and URL credentials masked."""
        if self._pattern is not None:
            message = self._pattern.sub(MASK, message)
        message = _PARAM_IN_TEXT.sub(lambda m: m.group(1) + MASK, message)
        return _USERINFO_IN_TEXT.sub(lambda m: m.group(1) + MASK + "@", message)


def _mask_param(piece: str) -> str:
    name, sep, _ = piece.partition("=")
    return f"{name}={MASK}" if sep and name.lower() in SECRET_PARAMS else piece
