"""Counts in messages, in grammar: "1 word", "2 words", "1,204 events", "1 retry"."""

from __future__ import annotations


def count(n: int, noun: str, plural: str = "", grouped: bool = False) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (``plural``, or ``noun`` + "s");
    ``grouped`` writes thousands with commas."""
    number = f"{n:,}" if grouped else str(n)
    return f"{number} {noun if n == 1 else plural or noun + 's'}"
