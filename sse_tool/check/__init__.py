"""``sse-tool check``: a protocol checker for captured streams (sans I/O).

``Checker`` is fed a stream's bytes and returns findings; ``check_recording`` checks a
``fetch --record`` recording, headers included; ``RULES`` lists every rule. One module per
family of rules: ``stream`` and ``sse`` (bytes and framing), ``http`` (recorded headers),
and one per provider dialect.
"""

from __future__ import annotations

from .core import FAMILIES, Checker, check, check_recording
from .http import CACHE_CONTROL  # noqa: F401  (registers the http rules)
from .rules import RULES, Finding, Rule, Severity

__all__ = ["FAMILIES", "RULES", "Checker", "Finding", "Rule", "Severity", "check", "check_recording"]
