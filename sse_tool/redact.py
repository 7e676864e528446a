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
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from .mask import MIN_SECRET, SECRET_PARAMS, forms

MASK = "<redacted>"

#: header names (lower case) whose values are credentials
SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key",
    "cookie", "set-cookie", "x-auth-token",
})
# A "Bearer xyz" value keeps its scheme visible: it helps to see which kind of credential went out.
_SCHEME = re.compile(r"^([A-Za-z][\w.-]*)\s+(\S.*)$")
_PARAM_IN_TEXT = re.compile(
    r"(?i)([?&;](?:%s)=)[^&#\s\"']+" % "|".join(re.escape(p) for p in sorted(SECRET_PARAMS))
)
_USERINFO_IN_TEXT = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/@\s]+@")


def is_secret_header(name: str) -> bool:
    return name.strip().lower() in SECRET_HEADERS


def is_masked(value: str) -> bool:
    """True for a credential header value that holds no secret: empty, ``<redacted>``,
    ``Bearer <redacted>``, or a same-length mask (``****``)."""
    m = _SCHEME.match(value.strip())
    rest = m.group(2) if m else value.strip()
    return rest in ("", MASK) or set(rest) <= set("*#~X")


def basic_token(user: str, password: str) -> str:
    """The base64 of ``user:password``: what a Basic Authorization header carries."""
    import base64

    return base64.b64encode(f"{user}:{password}".encode("utf-8")).decode("ascii")


class Redactor:
    """Masks secrets; ``learn_*`` first, so the values can be recognised wherever they reappear."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._any_case: re.Pattern[str] | None = None  # the same, for header names
        for secret in secrets:
            self.learn(secret)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values learned so far (for ``mask.Masker``, which hides them in bytes)."""
        return tuple(self._secrets)

    def learn(self, secret: str) -> None:
        secret = secret.strip()
        if len(secret) >= MIN_SECRET and secret not in self._secrets:
            self._secrets.add(secret)
            # Every form a value travels in (URL-encoded, JSON-escaped), longest first, so
            # a whole "Bearer sk-..." goes before its "sk-..." part.
            alternatives = {f.decode("utf-8") for s in self._secrets for f in forms(s)}
            either = "|".join(re.escape(s) for s in sorted(alternatives, key=len, reverse=True))
            self._pattern = re.compile(either)
            self._any_case = re.compile(either, re.IGNORECASE)

    def learn_basic(self, user: str, password: str) -> None:
        """A Basic credential: the password, and the base64 of ``user:password`` that goes
        out in an Authorization or Proxy-Authorization header (and may be echoed back)."""
        self.learn(password)
        self.learn(basic_token(user, password))

    def learn_headers(self, headers: Iterable[tuple[str, str]]) -> None:
        for name, value in headers:
            if is_secret_header(name):
                self.learn(value)
                m = _SCHEME.match(value.strip())
                if m:
                    self.learn(m.group(2))
                    if m.group(1).lower() == "basic":
                        self._learn_basic_token(m.group(2))

    def learn_url(self, url: str) -> None:
        parts = urlsplit(url)
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name.lower() in SECRET_PARAMS:
                self.learn(value)
        if parts.password:
            # httpx sends a URL's user:password as Basic auth
            self.learn_basic(unquote(parts.username or ""), unquote(parts.password))

    def _learn_basic_token(self, token: str) -> None:
        import base64
        import binascii

        try:
            user, sep, password = base64.b64decode(token, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return
        if sep:
            self.learn(password)

    def header(self, name: str, value: str) -> str:
        """The value to show for one header."""
        if not is_secret_header(name):
            return self.text(value)
        m = _SCHEME.match(value.strip())
        if m and name.lower() in ("authorization", "proxy-authorization"):
            return f"{m.group(1)} {MASK}"
        return MASK

    def name(self, name: str) -> str:
        """A header name to show: as ``text``, but a secret is found in any case (a name is
        case-insensitive, and clients hand it over lower-cased)."""
        return self.text(name, any_case=True)

    def headers(self, headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Header pairs to show: secret values masked, and a secret in a name too."""
        return [(self.name(name), self.header(name, value)) for name, value in headers]

    def url(self, url: str) -> str:
        """The URL with secret query parameters and any password masked (the rest kept exact)."""
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
        query = "&".join(_mask_param(piece) for piece in parts.query.split("&")) if parts.query else ""
        return self.text(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))

    def text(self, message: str, *, any_case: bool = False) -> str:
        """Any message: known secret values (in any case, with ``any_case``), ``key=``
        parameters and URL credentials masked."""
        pattern = self._any_case if any_case else self._pattern
        if pattern is not None:
            message = pattern.sub(MASK, message)
        message = _PARAM_IN_TEXT.sub(lambda m: m.group(1) + MASK, message)
        return _USERINFO_IN_TEXT.sub(lambda m: m.group(1) + MASK + "@", message)


def _mask_param(piece: str) -> str:
    name, sep, _ = piece.partition("=")
    return f"{name}={MASK}" if sep and unquote(name).lower() in SECRET_PARAMS else piece
