"""The provider table: ``--provider`` choices and auto-detection come from ``PROVIDERS``.

An adapter is a small class (no shared base class) with:

* ``recognise(event: str, payload) -> bool`` (a staticmethod): True when this event can
  only come from this provider's dialect; used by ``--provider auto``, in table order.
* ``feed(event: str, payload) -> list[model.Record]``: records for one event; ``payload``
  is the data parsed as JSON, or the raw string when it is not JSON (``[DONE]``).
* attributes ``error`` (dict with ``type`` and ``message``, or None), ``terminal`` (bool),
  ``stop_reason`` (str or None) and ``usage`` (dict or None), kept up to date by ``feed``;
  ``normalize.Normalizer`` turns them into the one ``End`` record;
* optionally ``quick(event: str, payload: dict) -> Delta | None``: the one record of the
  dialect's common delta event, read with a few plain tests, or None for anything else
  (which ``feed`` then reads). It must give exactly what ``feed`` gives and change no
  state that ``feed`` would not (``tests/test_fast_paths.py`` holds them together);
* optionally ``quick_lines``: the exact data line of that event, for reading many at
  once (``batch.py`` says what it is; it may follow the adapter's state).

Adapters never raise on unknown event types or missing fields: they skip what they do not
know (providers add event types over time).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module

#: name -> (module, class) of each adapter, in the order auto-detection asks them
_ADAPTERS = {
    "anthropic": ("anthropic", "Anthropic"),
    "openai-responses": ("openai_responses", "OpenAIResponses"),
    "openai": ("openai_chat", "OpenAIChat"),
    "gemini": ("gemini", "Gemini"),
    "vertex-search": ("vertex_search", "VertexSearch"),
    "ollama": ("ollama", "Ollama"),
    "cohere": ("cohere", "Cohere"),
    "bedrock": ("bedrock", "Bedrock"),
}


class _Table(Mapping):
    """name -> adapter class; a module is imported when its class is first asked for, so
    a stage that reads one provider's stream does not load the others."""

    def __getitem__(self, name: str):
        module, cls = _ADAPTERS[name]
        return getattr(import_module(f".{module}", __name__), cls)

    def __iter__(self) -> Iterator[str]:
        return iter(_ADAPTERS)

    def __len__(self) -> int:
        return len(_ADAPTERS)


PROVIDERS: Mapping = _Table()


def recognise(event: str, payload) -> str | None:
    """The name of the first provider that claims this event, or None."""
    for name, cls in PROVIDERS.items():
        if cls.recognise(event, payload):
            return name
    return None
