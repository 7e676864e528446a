"""``sse-tool check``: a protocol checker for captured streams (sans I/O).

``Checker`` is fed a stream's bytes and returns findings; ``check_recording`` checks a
``fetch --record`` recording, headers included; ``RULES`` lists every rule. One module per
family of rules: ``stream`` and ``sse`` (bytes and framing), ``http`` (recorded headers),
and one per provider dialect.
"""

from __future__ import annotations

# The families register their rules on import, in this order (the order of the listing).
from . import stream, sse, http, openai_chat, openai_responses, anthropic, gemini  # noqa: F401, I001
from . import vertex_search, ollama, cohere  # noqa: F401
from .core import FAMILIES, Checker, check, check_recording
from .rules import RULES, Finding, Rule, Severity

__all__ = ["FAMILIES", "RULES", "Checker", "Finding", "Rule", "Severity", "check", "check_recording"]
