"""Provider error objects: inside a stream, and as a whole HTTP error body.

``error_info`` turns an error object (or string) into ``{"type", "message"[, "code"]}``.
``error_body`` says whether a JSON value is an error as providers send them, so that an
error body piped in from ``curl`` without ``-f`` is a provider error, not a stream:

* ``{"error": {"message", "type"|"status"|"code"}}``: OpenAI (also pretty-printed),
  Gemini and Vertex (``{"code", "message", "status"}``), most OpenAI-compatible servers;
* ``{"type": "error", "error": {"type", "message"}}``: Anthropic;
* ``{"error": "message"}``: Ollama and some compatible servers;
* ``{"object": "error", "message", "type", "code"}``: vLLM, Mistral;
* ``{"message": ...}`` with only error-like keys (``request_id``, ``code``, ...): Mistral's
  401, gateways; ``{"detail": ...}`` (FastAPI servers, RFC 9457 problem details).
"""

from __future__ import annotations

#: keys an error body of the bare ``message`` or ``detail`` kind may have besides it
_ERROR_KEYS = frozenset({"message", "detail", "request_id", "code", "status", "type", "param",
                         "object", "title", "instance"})


def plain_text(data: str) -> bool:
    """Whether an event's data is read as text, not JSON: what does not start as a JSON
    object or array (or with whitespace, before one) is taken as it was written."""
    first = data[:1]
    return first != "{" and first != "[" and not first.isspace()


def error_event(text: str) -> dict:
    """An SSE ``event: error`` whose data is no JSON object (empty, or plain text, as a
    proxy writes it) as the error object it stands for: the SDKs raise on it too."""
    return {"type": "error", "error": {"type": "error", "message": text.strip() or "an error event with no data"}}


def error_info(error) -> dict:
    """A provider error object (or string) as ``{"type", "message", ...}``."""
    if not isinstance(error, dict):
        return {"type": "error", "message": str(error)}
    kind = error.get("type") or error.get("status") or error.get("code") or "error"
    message = error.get("message") or error.get("detail") or ""
    out = {"type": str(kind), "message": message if isinstance(message, str) else str(message)}
    if error.get("code") is not None:
        out["code"] = error["code"]
    return out


def error_body(value) -> dict | None:
    """``error_info`` of ``value`` if it is a provider's error object, else None."""
    if not isinstance(value, dict):
        return None
    error = value.get("error")
    if isinstance(error, dict) and error:
        return error_info(error)
    if isinstance(error, str) and error:
        return error_info(error)
    if value.get("object") == "error" or value.get("type") == "error":
        return error_info(value)
    if (isinstance(value.get("message"), str) or "detail" in value) and value.keys() <= _ERROR_KEYS:
        return error_info(value)
    return None
