"""The provider table: ``--provider`` choices and auto-detection come from ``PROVIDERS``.

An adapter is a small class (no shared base class) with:

* ``recognise(event: str, payload) -> bool`` (a staticmethod): True when this event can
  only come from this provider's dialect; used by ``--provider auto``, in table order.
* ``feed(event: str, payload) -> list[model.Record]``: records for one event; ``payload``
  is the data parsed as JSON, or the raw string when it is not JSON (``[DONE]``).
* attributes ``error`` (dict with ``type`` and ``message``, or None), ``terminal`` (bool),
  ``stop_reason`` (str or None) and ``usage`` (dict or None), kept up to date by ``feed``;
  ``normalize.Normalizer`` turns them into the one ``End`` record.

Adapters never raise on unknown event types or missing fields: they skip what they do not
know (providers add event types over time).
"""

from __future__ import annotations

from .anthropic import Anthropic
from .cohere import Cohere
from .gemini import Gemini
from .ollama import Ollama
from .openai_chat import OpenAIChat
from .openai_responses import OpenAIResponses
from .vertex_search import VertexSearch

#: name -> adapter class, in the order auto-detection asks them
PROVIDERS: dict = {cls.name: cls for cls in (
    Anthropic, OpenAIResponses, OpenAIChat, Gemini, VertexSearch, Ollama, Cohere,
)}


def recognise(event: str, payload) -> str | None:
    """The name of the first provider that claims this event, or None."""
    for name, cls in PROVIDERS.items():
        if cls.recognise(event, payload):
            return name
    return None
