"""Utf8Decoder: bytes to text across any chunking, WHATWG replacement, one leading BOM."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sse_tool.decode import Utf8Decoder, decode_field

TEXT = "señor, ñandú, café 🚀 ok"


def decode(*chunks: bytes) -> tuple[str, bool]:
    decoder = Utf8Decoder()
    text = "".join(decoder.feed(c) for c in chunks)
    tail, incomplete = decoder.close()
    return text + tail, incomplete


def test_accents_and_a_four_byte_emoji_survive_a_cut_at_every_byte():
    raw = TEXT.encode()
    for i in range(len(raw) + 1):
        assert decode(raw[:i], raw[i:]) == (TEXT, False), i


def test_one_byte_at_a_time_loses_nothing():
    raw = TEXT.encode()
    assert decode(*[raw[i : i + 1] for i in range(len(raw))]) == (TEXT, False)


def test_a_split_character_is_held_back_until_it_is_complete():
    decoder = Utf8Decoder()
    assert decoder.feed("a🚀".encode()[:3]) == "a"
    assert decoder.feed("🚀".encode()[2:]) == "🚀"


def test_invalid_bytes_become_replacement_characters_never_an_exception():
    assert decode(b"a\xffb") == ("a\ufffdb", False)
    assert decode(b"\xf0\x9f\x9aX") == ("\ufffdX", False)  # one per maximal subpart
    assert decode(b"\xed\xa0\x80") == ("\ufffd" * 3, False)  # an encoded surrogate
    assert decode(b"\xc0\xaf") == ("\ufffd" * 2, False)  # an overlong form


def test_close_reports_an_incomplete_tail():
    decoder = Utf8Decoder()
    assert decoder.feed(b"ok\xf0\x9f") == "ok"
    assert decoder.close() == ("\ufffd", True)


def test_close_after_complete_text_reports_nothing_missing():
    decoder = Utf8Decoder()
    decoder.feed(b"ok")
    assert decoder.close() == ("", False)


def test_one_leading_bom_is_stripped_even_byte_by_byte():
    assert decode(b"\xef", b"\xbb", b"\xbf", b"x") == ("x", False)


def test_a_second_bom_is_kept():
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfx") == ("\ufeffx", False)


def test_a_bom_after_the_start_is_kept():
    assert decode(b"x", b"\xef\xbb\xbf") == ("x\ufeff", False)


def test_a_partial_bom_followed_by_other_bytes_is_replaced():
    assert decode(b"\xef\xbb", b"x") == ("\ufffdx", False)


def test_a_lone_partial_bom_is_an_incomplete_tail():
    assert decode(b"\xef\xbb") == ("\ufffd", True)


def test_empty_chunks_change_nothing():
    assert decode(b"", b"\xef\xbb\xbf", b"", b"a", b"") == ("a", False)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=6))
def test_any_chunking_decodes_like_the_whole_stream(raw, cuts):
    points = sorted({c % (len(raw) + 1) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)])]
    expected = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    assert decode(*chunks)[0] == expected.decode("utf-8", "replace")


def test_decode_field_never_raises():
    assert decode_field(b"\xff ok") == "\ufffd ok"
