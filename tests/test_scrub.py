"""KeyScrubber (sse_tool/serve/scrub.py): every occurrence of the key masked, whatever the
chunking, and nothing held back that could not be the start of the key."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.serve.scrub import KeyScrubber, scrub

KEY = "sk-relay-test-key-0123456789"
ODD_KEY = "sk/relay+test=key%01"  # its URL-encoded form differs, and contains the raw '%01'


def reference(data: bytes, secret: str) -> bytes:
    """One replacement over the whole body: a regex alternation, longest form first."""
    forms = sorted({secret.encode(), quote(secret, safe="").encode()}, key=len, reverse=True)
    mask = KeyScrubber(secret)._mask
    return re.sub(b"|".join(re.escape(f) for f in forms), lambda m: mask * len(m[0]), data)


def scrubbed(pieces, secret: str) -> bytes:
    s = KeyScrubber(secret)
    return b"".join(s.feed(p) for p in pieces) + s.close()


BODIES = [
    b'{"error": {"message": "Incorrect API key provided: sk-relay-test-key-0123456789.", '
    b'"type": "invalid_request_error"}}',
    b'data: {"i": 0}\n\ndata: {"echo": "sk-relay-test-key-0123456789"}\n\ndata: {"i": 1}\n\n',
    b"sk-relay-test-key-0123456789sk-relay-test-key-0123456789",
    b"sk-sk-relay-sk-relay-test-key-0123456789-sk-relay-test-key-012345678",  # near misses
    b"GET /v1/models?key=sk-relay-test-key-0123456789 failed",
    b"ends with the start of the key: sk-relay-test",
    b"no key here at all, just text with s and k and sk-",
]


@pytest.mark.parametrize("body", BODIES)
def test_every_split_position_gives_the_whole_body_scrubbed(body):
    expected = reference(body, KEY)
    assert scrubbed([body], KEY) == expected
    assert scrubbed([body[i:i + 1] for i in range(len(body))], KEY) == expected
    for cut in range(len(body) + 1):
        assert scrubbed([body[:cut], body[cut:]], KEY) == expected, cut


def test_every_pair_of_cuts_through_the_key_gives_the_whole_body_scrubbed():
    body = b"x: sk-relay-test-key-0123456789 y"
    expected = b"x: " + b"*" * len(KEY) + b" y"
    for a in range(len(body) + 1):
        for b in range(a, len(body) + 1):
            assert scrubbed([body[:a], body[a:b], body[b:]], KEY) == expected, (a, b)


def test_the_url_encoded_form_of_the_key_is_masked_too():
    encoded = quote(ODD_KEY, safe="").encode()
    body = b"raw " + ODD_KEY.encode() + b" and in a URL ?key=" + encoded + b"&x=1"
    out = scrubbed([body[i:i + 1] for i in range(len(body))], ODD_KEY)
    assert ODD_KEY.encode() not in out and encoded not in out
    assert out == b"raw " + b"*" * len(ODD_KEY) + b" and in a URL ?key=" + b"*" * len(encoded) + b"&x=1"


def test_a_replacement_keeps_the_length_so_content_length_stays_true():
    for body in BODIES:
        assert len(scrub(body, KEY)) == len(body)


def test_a_chunk_ending_in_a_blank_line_is_never_held_back():
    s = KeyScrubber(KEY)
    for event in (b'data: {"text": "task s', b'k"}\n\n', b"data: sk-relay-test-k", b"ey-0123456789\n\n"):
        s.feed(event)
    assert s.held == 0


def test_only_a_possible_start_of_the_key_is_held_back_and_close_flushes_it():
    s = KeyScrubber(KEY)
    assert s.feed(b"data: sk-rel") == b"data: "
    assert s.held == len(b"sk-rel")
    assert s.feed(b"ax") == b"sk-relax"  # it was not the key after all
    assert s.feed(b" sk-relay-test") == b" "
    assert s.close() == b"sk-relay-test"
    assert s.held == 0


def test_a_chunk_ending_with_the_whole_key_goes_out_masked_at_once():
    s = KeyScrubber(KEY)
    assert s.feed(b"key: " + KEY.encode()) == b"key: " + b"*" * len(KEY)
    assert s.held == 0
    s = KeyScrubber(ODD_KEY)  # the raw key, shorter than its encoded form
    assert s.feed(b"key: " + ODD_KEY.encode()) == b"key: " + b"*" * len(ODD_KEY)
    assert s.held == 0


def test_where_the_key_begins_its_encoded_form_the_longer_one_is_masked_whatever_the_split():
    key = "sk-test-key%"  # URL-encoded: sk-test-key%25, which begins with the key itself
    body = b"a sk-test-key%25 b sk-test-key% c"
    expected = b"a " + b"*" * 14 + b" b " + b"*" * 12 + b" c"
    for cut in range(len(body) + 1):
        s = KeyScrubber(key)
        assert s.feed(body[:cut]) + s.feed(body[cut:]) + s.close() == expected, cut


def test_a_mask_byte_is_one_the_key_does_not_contain():
    out = scrub(b"aa*b*", "a*b*")
    assert b"a*b*" not in out and out == b"a####"


def test_an_empty_key_is_refused():
    with pytest.raises(ValueError):
        KeyScrubber("")


# Small alphabets make overlaps, near misses and keys split anywhere common.
_keys = st.text(alphabet="ab%/+s", min_size=1, max_size=8)
_filler = st.binary(max_size=6) | st.sampled_from([b"a", b"ab", b"%", b"%2F", b"s", b"\n\n"])


@st.composite
def _bodies_with_keys(draw):
    key = draw(_keys)
    forms = [key.encode(), quote(key, safe="").encode()]
    parts = draw(st.lists(_filler | st.sampled_from(forms) |
                          st.sampled_from(forms).map(lambda f: f[: len(f) // 2]), max_size=12))
    body = b"".join(parts)
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=6)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]
    return key, body, pieces


@settings(max_examples=400, deadline=None)
@given(_bodies_with_keys())
def test_any_chunking_gives_one_replacement_over_the_whole_body(case):
    key, body, pieces = case
    out = scrubbed(pieces, key)
    assert out == reference(body, key)
    assert len(out) == len(body)
    for form in (key.encode(), quote(key, safe="").encode()):
        assert form not in out


@settings(max_examples=300, deadline=None)
@given(_keys.filter(lambda k: not k.startswith("\n")), st.lists(st.binary(max_size=20), max_size=8))
def test_whatever_came_before_a_line_end_goes_out_with_it(key, lines):
    s = KeyScrubber(key)
    sent = b""
    emitted = b""
    for line in lines:
        sent += line + b"\n"
        emitted += s.feed(line + b"\n")
        assert s.held == 0
        assert emitted == reference(sent, key)


@settings(max_examples=300, deadline=None)
@given(_bodies_with_keys())
def test_what_is_held_back_is_always_shorter_than_the_key(case):
    key, _, pieces = case
    s = KeyScrubber(key)
    longest = max(len(key.encode()), len(quote(key, safe="")))
    for piece in pieces:
        s.feed(piece)
        assert s.held < longest
