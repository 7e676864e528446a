"""A streamed answer as the provider's non-streaming response: ``"stream": false`` served
from a recording of a stream.

Consumes a ``summary.Summary`` of a stream; produces an ``Answer``: the status and JSON
body the provider's API gives a request without ``stream`` (text, reasoning, tool calls,
usage and stop reason), or, for a stream that failed, the provider's error answer; or
None for a stream that was cut, which has no whole answer to give (the server cuts the
connection, as the network did). Each provider's shape is its own small module,
registered in ``ASSEMBLERS`` by normalize's provider name; each module's ``assemble``
takes the summary and returns the response object. Nothing here does I/O.
"""

from __future__ import annotations

from importlib import import_module
from typing import NamedTuple

import orjson

from ...model import Status
from ..summary import Summary

#: normalize's provider name -> the module that shapes its answer
ASSEMBLERS = {
    "openai": "openai_chat", "openai-responses": "openai_responses", "anthropic": "anthropic",
    "gemini": "gemini", "ollama": "ollama", "cohere": "cohere",
}

# Error types (or gRPC-style statuses) and the HTTP status an API answers them with.
_STATUS_OF = {
    "invalid_request_error": 400, "INVALID_ARGUMENT": 400, "authentication_error": 401,
    "UNAUTHENTICATED": 401, "permission_error": 403, "PERMISSION_DENIED": 403,
    "not_found_error": 404, "NOT_FOUND": 404, "request_too_large": 413,
    "rate_limit_error": 429, "insufficient_quota": 429, "RESOURCE_EXHAUSTED": 429,
    "overloaded_error": 529, "UNAVAILABLE": 503, "timeout": 504, "DEADLINE_EXCEEDED": 504,
}


class Answer(NamedTuple):
    status: int
    body: bytes
    content_type: str = "application/json"


def can_assemble(dialect: str | None) -> bool:
    return dialect in ASSEMBLERS


def assemble(summary: Summary) -> Answer | None:
    """The non-streaming answer to the request a stream answered; None for a cut stream."""
    if summary.status is Status.ERROR and summary.error is not None:
        return error_answer(summary.dialect, summary.error)
    if summary.status is Status.TRUNCATED:
        return None
    module = import_module(f".{ASSEMBLERS[summary.dialect]}", __name__)
    return Answer(200, orjson.dumps(module.assemble(summary)))


def error_status(error: dict) -> int:
    code = error.get("code")
    if isinstance(code, int) and 400 <= code <= 599:
        return code
    for value in (error.get("type"), code):
        if isinstance(value, str) and value in _STATUS_OF:
            return _STATUS_OF[value]
    return 500


def error_answer(dialect: str | None, error: dict) -> Answer:
    """The error a stream reported, as the API answers it without streaming."""
    from ..faults import error_body

    status = error_status(error)
    message = str(error.get("message") or "the stream reported an error")
    return Answer(status, error_body(dialect or "openai", status, message, kind=error.get("type"),
                                     code=error.get("code")))


def arguments_object(text: str):
    """A tool call's JSON arguments as an object (an API gives them parsed); the raw text
    when they are not JSON (a cut call), so nothing is lost."""
    try:
        return orjson.loads(text) if text else {}
    except orjson.JSONDecodeError:
        return text
