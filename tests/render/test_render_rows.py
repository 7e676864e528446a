"""``rows.wrap`` against text whose characters are clusters of several code points."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from sse_tool.render.rows import wrap

#: clusters rich counts as one: a skin tone, a ZWJ sequence, VS16 widening a narrow
#: symbol, a letter with a combining accent (not a flag: rich measures its two letters apart)
CLUSTERS = ["\U0001f44d\U0001f3fd", "\U0001f469\U0001f3fd\u200d\U0001f4bb", "\u2764\ufe0f", "e\u0301",
            "a", "\u4e2d"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(CLUSTERS), min_size=1, max_size=40), st.integers(2, 9))
def test_a_long_word_is_folded_between_clusters_into_rows_no_wider_than_rich_counts(clusters, width):
    word = "".join(clusters)
    rows = wrap(word, width)
    assert "".join(row for row, _ in rows) == word
    assert all(word.startswith(row, start) for row, start in rows)
    ends = {0}
    for cluster in clusters:  # where a row may start: between two clusters
        ends.add(max(ends) + len(cluster))
    assert all(start in ends for _, start in rows)
    assert all(cell_len(row) <= width for row, _ in rows)


def test_a_zwj_sequence_stays_whole_on_its_row():
    coder = "\U0001f469\U0001f3fd\u200d\U0001f4bb"
    assert [row for row, _ in wrap(coder * 3, 3)] == [coder] * 3
    assert [row for row, _ in wrap("\u2764\ufe0f" * 3, 2)] == ["\u2764\ufe0f"] * 3
