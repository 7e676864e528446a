"""Masker (sse_tool/mask.py): every occurrence of a secret, in each of its forms, masked
whatever the chunking; what waits for the next chunk never depends on the secret."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.mask import Masker, forms, mask
from sse_tool.redact import Redactor

KEY = "sk-relay-test-key-0123456789"
ODD_KEY = "sk/relay+test=key%01"  # its URL-encoded form differs, and contains the raw '%01'


def reference(data: bytes, secrets) -> bytes:
    """One replacement over the whole body: a regex alternation, longest form first."""
    found = sorted({f for s in secrets for f in forms(s)}, key=len, reverse=True)
    mask_byte = Masker(secrets).mask
    return re.sub(b"|".join(re.escape(f) for f in found), lambda m: mask_byte * len(m[0]), data)


def masked(pieces, secrets, patterns: bool = False) -> bytes:
    m = Masker(secrets, patterns=patterns)
    return b"".join(m.feed(p) for p in pieces) + m.close()


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
def test_every_split_position_gives_the_whole_body_masked(body):
    expected = reference(body, [KEY])
    assert masked([body], [KEY]) == expected
    assert masked([body[i:i + 1] for i in range(len(body))], [KEY]) == expected
    for cut in range(len(body) + 1):
        assert masked([body[:cut], body[cut:]], [KEY]) == expected, cut


def test_every_pair_of_cuts_through_the_key_gives_the_whole_body_masked():
    body = b"x: sk-relay-test-key-0123456789 y"
    expected = b"x: " + b"*" * len(KEY) + b" y"
    for a in range(len(body) + 1):
        for b in range(a, len(body) + 1):
            assert masked([body[:a], body[a:b], body[b:]], [KEY]) == expected, (a, b)


def test_each_form_of_the_key_is_masked_url_encoded_in_either_case_and_json_escaped():
    upper = quote(ODD_KEY, safe="")
    lower = re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), upper)
    escaped = json.dumps(ODD_KEY)[1:-1].replace("/", "\\/")
    assert len({upper, lower, escaped, ODD_KEY}) == 4
    for form in (ODD_KEY, upper, lower, escaped):
        body = b"quoted: " + form.encode() + b"!"
        out = masked([body[i:i + 1] for i in range(len(body))], [ODD_KEY])
        assert out == b"quoted: " + b"*" * len(form) + b"!", form


def test_a_replacement_keeps_the_length_so_content_length_stays_true():
    for body in BODIES:
        assert len(mask(body, [KEY])) == len(body)


def test_a_chunk_ending_a_line_is_never_held_back():
    m = Masker([KEY])
    for piece in (b'data: {"text": "task s', b'k"}\n\n', b"data: sk-relay-test-k", b"ey-0123456789\n\n"):
        m.feed(piece)
        assert piece.endswith(b"\n") == (m.held == 0)


def test_what_waits_is_the_end_of_an_unfinished_line_whatever_it_holds():
    # The same bytes wait whether the line ends with the start of the key or not: what
    # comes back at once must not tell a client which of its guesses begins the key.
    for tail in (b"sk-relay-te", b"xx-xxxxx-xx", b"no"):
        m = Masker([KEY])
        out = m.feed(b"done\nthe line so far, long enough to pass the key's length: " + tail)
        assert m.held == len(KEY) - 1
        assert out.endswith(b"the line so far, long enough to pass the key's length: "[:-(len(KEY) - 1 - len(tail))])
    m = Masker([KEY])
    assert m.feed(b"short") == b"" and m.held == 5
    assert m.feed(b" line\n") == b"short line\n" and m.held == 0


def test_a_chunk_ending_with_the_whole_key_goes_out_masked_at_once():
    # (No oracle: the mask itself tells a client that its whole guess was the key.)
    m = Masker([KEY])
    assert m.feed(b"key: " + KEY.encode()) == b"key: " + b"*" * len(KEY)
    assert m.held == 0


def test_where_the_key_begins_its_encoded_form_the_longer_one_is_masked_whatever_the_split():
    key = "sk-test-key%"  # URL-encoded: sk-test-key%25, which begins with the key itself
    body = b"a sk-test-key%25 b sk-test-key% c"
    expected = b"a " + b"*" * 14 + b" b " + b"*" * 12 + b" c"
    for cut in range(len(body) + 1):
        assert masked([body[:cut], body[cut:]], [key]) == expected, cut


def test_several_secrets_are_masked_together():
    basic = base64.b64encode(b"user:hunter2-password").decode()
    body = f"a {KEY} b {basic} c hunter2-password d".encode()
    out = masked([body[i:i + 1] for i in range(len(body))], [KEY, basic, "hunter2-password"])
    assert out == b"a " + b"*" * len(KEY) + b" b " + b"*" * len(basic) + b" c " + b"*" * 16 + b" d"


def test_a_mask_byte_is_one_the_key_does_not_contain():
    out = mask(b"aa*b*cd*", ["a*b*cd"])
    assert b"a*b*cd" not in out and out == b"a######*"


def test_short_values_are_not_secrets_and_line_breaks_cannot_be_in_one():
    assert mask(b"abc abc", ["abc"]) == b"abc abc"
    with pytest.raises(ValueError):
        Masker(["sk-line\nbreak"])


def test_patterns_mask_credentials_whatever_their_value_across_any_split():
    body = (b'{"error": "GET https://user:pa55word@proxy.example/v1?alt=sse&key=AIzaUnknown9 '
            b'refused"}\ndata: keyboard=1 https://example.com/a@b\n')
    expected = (b'{"error": "GET https://*************@proxy.example/v1?alt=sse&key=************ '
                b'refused"}\ndata: keyboard=1 https://example.com/a@b\n')
    for cut in range(len(body) + 1):
        assert masked([body[:cut], body[cut:]], [], patterns=True) == expected, cut
    assert masked([body], [], patterns=False) == body


def test_the_redactor_knows_every_form_and_the_basic_credentials_it_learns():
    r = Redactor()
    r.learn(ODD_KEY)
    r.learn_url("https://alice:s3cret-pass@proxy.example:3128")
    basic = base64.b64encode(b"alice:s3cret-pass").decode()
    text = f"{quote(ODD_KEY, safe='').lower()} {json.dumps(ODD_KEY)} {basic} s3cret-pass"
    assert r.text(text) == '<redacted> "<redacted>" <redacted> <redacted>'
    r = Redactor()
    r.learn_headers([("Proxy-Authorization", "Basic " + basic)])
    assert r.text("echo: alice:s3cret-pass") == "echo: alice:<redacted>"


# Small alphabets make overlaps, near misses and keys split anywhere common.
_keys = st.text(alphabet="ab%/+s\"", min_size=6, max_size=10)
_filler = st.binary(max_size=6) | st.sampled_from([b"a", b"ab", b"%", b"%2F", b"%2f", b"s", b"\n\n"])


@st.composite
def _bodies_with_keys(draw):
    key = draw(_keys)
    found = sorted(forms(key))
    parts = draw(st.lists(_filler | st.sampled_from(found) |
                          st.sampled_from(found).map(lambda f: f[: len(f) // 2]), max_size=12))
    body = b"".join(parts)
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=6)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]
    return key, body, pieces


@settings(max_examples=400, deadline=None)
@given(_bodies_with_keys())
def test_any_chunking_gives_one_replacement_over_the_whole_body(case):
    key, body, pieces = case
    out = masked(pieces, [key])
    assert out == reference(body, [key])
    assert len(out) == len(body)
    for form in forms(key):
        assert form not in out


@settings(max_examples=300, deadline=None)
@given(_keys, st.lists(st.binary(max_size=20), max_size=8))
def test_whatever_came_before_a_line_end_goes_out_with_it(key, lines):
    m = Masker([key])
    sent = emitted = b""
    for line in lines:
        sent += line + b"\n"
        emitted += m.feed(line + b"\n")
        assert m.held == 0
        assert emitted == reference(sent, [key])


@settings(max_examples=300, deadline=None)
@given(_bodies_with_keys(), st.randoms(use_true_random=False))
def test_what_waits_never_depends_on_the_key(case, random):
    # Another key whose forms have the same lengths: feed for feed, as many bytes go out
    # and as many wait, unless a whole form of one of them is in the body.
    key, body, pieces = case
    other = "".join(random.choice("abs") if c in "abs" else c for c in key)
    if any(f in body for f in forms(key) | forms(other)):
        return
    one, two = Masker([key]), Masker([other])
    for piece in pieces:
        assert len(one.feed(piece)) == len(two.feed(piece))
        assert one.held == two.held < max(map(len, forms(key)))


def test_ignore_case_finds_the_key_in_any_ascii_case_and_keeps_the_rest_as_it_was():
    key = "sk-Mixed-Key/0123+abc"
    for found in (key, key.lower(), key.upper(), "SK-mIXED-kEY%2f0123%2BABC"):
        data = b"X-Rejected-" + found.encode() + b": 1"
        assert mask(data, [key], ignore_case=True) == b"X-Rejected-" + b"*" * len(found) + b": 1", found
    # without it only the key's own case is a match
    assert mask(b"x-sk-mixed-key/0123+abc", [key]) == b"x-sk-mixed-key/0123+abc"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), min_size=len(KEY), max_size=len(KEY)), st.binary(max_size=40),
       st.binary(max_size=40), st.integers(0, 120))
def test_ignore_case_masks_any_case_of_the_key_across_any_split(flips, before, after, cut):
    spelled = "".join(c.upper() if flip else c for c, flip in zip(KEY, flips)).encode()
    data = before + spelled + after
    m = Masker([KEY], ignore_case=True)
    out = m.feed(data[:cut]) + m.feed(data[cut:]) + m.close()
    found = sorted(forms(KEY), key=len, reverse=True)
    expected = re.sub(b"|".join(re.escape(f) for f in found), lambda m: b"*" * len(m[0]), data, flags=re.I)
    assert out == expected and KEY.encode() not in out.lower()
