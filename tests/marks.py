"""Parameters of an exhaustive test: one in ``every`` runs by default, spread over the
list; the others are marked slow (CI runs them all: -m "slow or not slow")."""

from __future__ import annotations

import pytest


def spread(values, every: int, ids=None) -> list:
    out = []
    for i, value in enumerate(values):
        marks = () if i % every == 0 else (pytest.mark.slow,)
        if hasattr(value, "values") and hasattr(value, "marks"):  # a pytest.param already
            out.append(pytest.param(*value.values, id=value.id, marks=[*value.marks, *marks]))
        else:
            out.append(pytest.param(value, id=ids(value) if ids else None, marks=marks))
    return out
