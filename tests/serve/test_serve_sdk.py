"""The official ``openai`` and ``anthropic`` Python SDKs against a real ``serve --as``
process, for every recorded stream of their provider (``tests/fixtures`` and the
samples): the text each SDK assembles is normalize's answer; ``stream: false`` gives the
SDK's response object with the same text; a miss raises in the SDK with serve's message;
faults counted per test hold when a test runs twice. (The ``interop`` extra installs the
SDKs; without them these tests are skipped.)"""

from __future__ import annotations

import re

import httpx
import pytest

from sse_tool.model import Status
from sse_tool.serve.summary import summarize

from ..serve_process import ServeProcess
from ..support import FIXTURES, SAMPLES, read_records, stream_files
from .test_serve_match import answer_of

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

SAMPLE_FILES = sorted(p for p in SAMPLES.iterdir() if p.suffix in (".sse", ".json", ".ndjson")
                      and not p.name.startswith("expected"))
MESSAGES = [{"role": "user", "content": "Hi"}]
# What an SDK raises, reading a body the server cut: anthropic's HTTP client (httpx2 in
# recent versions) lets the transport's error through, openai wraps it.
try:
    import httpx2

    _CUT: tuple = (anthropic.APIConnectionError, httpx.RemoteProtocolError, httpx2.RemoteProtocolError)
except ImportError:
    _CUT = (anthropic.APIConnectionError, httpx.RemoteProtocolError)


def by_dialect(dialect: str) -> list:
    return [p for p in stream_files() if summarize(p.read_bytes()).dialect == dialect]


def stem(path) -> str:
    """Where serve puts a file: its path under the folder served, without the extension."""
    rel = path.relative_to(FIXTURES) if FIXTURES in path.parents else path.relative_to(SAMPLES)
    return "/" + rel.as_posix().rsplit(".", 1)[0]


def ids(path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.fixture(scope="module")
def served():
    serve = ServeProcess("--speed", "0", "--as", "openai", "--as", "anthropic", str(FIXTURES),
                         *map(str, SAMPLE_FILES))
    yield serve
    assert serve.stop() == 130
    assert "Traceback" not in serve.log()


def expected(path):
    records = read_records([path.read_bytes()], think_tags="off")  # the text as the wire has it
    return answer_of(records)[0], records[-1]


def openai_client(served, path=None, **kw):
    base = served.base + (stem(path) if path else "") + "/v1"
    return openai.OpenAI(base_url=base, api_key="test-key", max_retries=0, **kw)


def anthropic_client(served, path=None, **kw):
    return anthropic.Anthropic(base_url=served.base + (stem(path) if path else ""), api_key="test-key",
                               max_retries=0, **kw)


def chat_text(delta) -> str:
    """What a chunk's delta adds to the answer: content (a string, or Mistral's typed parts)
    and a refusal."""
    content = delta.content
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return (content or "") + (getattr(delta, "refusal", None) or "")


# -- streaming: the SDK's text is normalize's answer --------------------------------------

@pytest.mark.parametrize("path", by_dialect("openai"), ids=ids)
def test_the_openai_sdk_streams_each_chat_recording_to_normalizes_answer(served, path):
    answer, end = expected(path)
    got = []
    try:
        for chunk in openai_client(served, path).chat.completions.create(
                model="gpt-4o-mini", messages=MESSAGES, stream=True):
            # A usage chunk may come without choices (samples/credits-usage.sse): careful
            # code does not assume them.
            got += [chat_text(c.delta) for c in chunk.choices or () if c.index == 0]
    except openai.APIConnectionError:
        assert end.status is Status.TRUNCATED  # cut as the network cut it, never a clean end
    except openai.APIError as exc:
        assert end.status is Status.ERROR and end.error["message"] in str(exc)
    else:
        assert end.status is Status.COMPLETE
    assert "".join(got) == answer


@pytest.mark.parametrize("path", by_dialect("openai-responses"), ids=ids)
def test_the_openai_sdk_streams_each_responses_recording_to_normalizes_answer(served, path):
    answer, end = expected(path)
    got = []
    try:
        for event in openai_client(served, path).responses.create(model="gpt-4o", input="Hi", stream=True):
            if event.type in ("response.output_text.delta", "response.refusal.delta"):
                got.append(event.delta)
    except openai.APIConnectionError:
        assert end.status is Status.TRUNCATED
    except openai.APIError as exc:
        assert end.status is Status.ERROR and end.error["message"] in str(exc)
    else:
        assert end.status is Status.COMPLETE
    assert "".join(got) == answer


@pytest.mark.parametrize("path", by_dialect("anthropic"), ids=ids)
def test_the_anthropic_sdk_streams_each_recording_to_normalizes_answer(served, path):
    answer, end = expected(path)
    got = []
    try:
        for event in anthropic_client(served, path).messages.create(
                model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES, stream=True):
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                got.append(event.delta.text)
    except _CUT:
        assert end.status is Status.TRUNCATED
    except anthropic.APIError as exc:
        assert end.status is Status.ERROR and end.error["message"] in str(exc)
    except UnicodeDecodeError:
        # The SDK decodes each line strictly: a stream cut inside a character
        # (samples/anthropic-truncated.sse) raises this, after every whole event.
        assert end.status is Status.TRUNCATED
    else:
        assert end.status is Status.COMPLETE
    assert "".join(got) == answer


# -- stream: false: the SDK's response object, the same text ------------------------------

def check_whole(call, errors, answer: str, end, text_of) -> None:
    try:
        response = call()
    except errors.APIConnectionError:
        assert end.status is Status.TRUNCATED  # no whole answer: the connection is cut
        return
    except errors.APIStatusError as exc:
        assert end.status is Status.ERROR and exc.status_code >= 400
        assert end.error["message"] in str(exc)
        return
    assert end.status is Status.COMPLETE
    assert text_of(response) == answer


@pytest.mark.parametrize("path", by_dialect("openai"), ids=ids)
def test_openai_chat_without_stream_gets_a_chat_completion_with_the_same_text(served, path):
    answer, end = expected(path)
    check_whole(lambda: openai_client(served, path).chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES), openai, answer, end,
        lambda r: r.choices[0].message.content or "")


@pytest.mark.parametrize("path", by_dialect("openai-responses"), ids=ids)
def test_openai_responses_without_stream_gets_a_response_with_the_same_text(served, path):
    answer, end = expected(path)
    check_whole(lambda: openai_client(served, path).responses.create(model="gpt-4o", input="Hi"),
                openai, answer, end, _message_text)


def _message_text(response) -> str:
    """The messages' text, a refusal in its place included (``output_text`` leaves it out)."""
    return "".join(part.text if part.type == "output_text" else part.refusal
                   for item in response.output if item.type == "message" for part in item.content)


@pytest.mark.parametrize("path", by_dialect("anthropic"), ids=ids)
def test_anthropic_without_stream_gets_a_message_with_the_same_text(served, path):
    answer, end = expected(path)
    check_whole(lambda: anthropic_client(served, path).messages.create(
        model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES), anthropic, answer, end,
        lambda m: "".join(b.text for b in m.content if b.type == "text"))


def test_the_sdks_read_tool_calls_from_an_assembled_answer(served):
    path = FIXTURES / "openai-chat" / "openai-parallel-tool-calls.sse"
    calls = openai_client(served, path).chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert [c.function.name for c in calls.choices[0].message.tool_calls] == [
        t.name for t in summarize(path.read_bytes()).tools] == ["get_country", "get_product_name"]
    assert calls.choices[0].finish_reason == "tool_calls" and calls.usage.total_tokens
    path = FIXTURES / "anthropic" / "tool-use-no-args.sse"
    message = anthropic_client(served, path).messages.create(model="c", max_tokens=10, messages=MESSAGES)
    assert message.content[0].type == "tool_use" and message.content[0].input == {}
    assert message.stop_reason == "tool_use"


# -- choosing a recording, and missing loudly ---------------------------------------------

def test_without_a_base_path_the_model_chooses_the_recording(served):
    # gpt-4o-mini is the model of more than one recording, and none has this exact request.
    with pytest.raises(openai.UnprocessableEntityError) as exc:
        openai_client(served).chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
    assert re.search(r"\b[2-9] recordings have model gpt-4o-mini\b", str(exc.value))
    text = openai_client(served).responses.create(model="o3-mini", input="Hi").output_text
    assert text == expected(FIXTURES / "openai-responses" / "responses-reasoning-summary.sse")[0]


def test_a_miss_raises_in_each_sdk_with_serves_message(served):
    with pytest.raises(openai.UnprocessableEntityError) as exc:
        openai_client(served).chat.completions.create(model="no-such-model", messages=MESSAGES, stream=True)
    assert "sse-tool serve: no recording answers POST /v1/chat/completions (model no-such-model)" in str(exc.value)
    assert "nearest: " in str(exc.value)
    with pytest.raises(anthropic.UnprocessableEntityError) as exc:
        anthropic_client(served).messages.create(model="claude-none", max_tokens=5, messages=MESSAGES)
    assert exc.value.body["error"]["type"] == "invalid_request_error"
    assert "no recording answers POST /v1/messages (model claude-none)" in exc.value.message
    with pytest.raises(anthropic.UnprocessableEntityError) as exc:
        anthropic.Anthropic(base_url=served.base + "/anthropic/nope", api_key="k", max_retries=0).messages.create(
            model="c", max_tokens=5, messages=MESSAGES)
    assert "/anthropic/nope names no stream or folder here" in exc.value.message


# -- faults counted per test ----------------------------------------------------------------

def one_run(served, test: str) -> None:
    """A test whose first call meets a rate limit: the SDK raises, the next call streams."""
    path = FIXTURES / "openai-chat" / "openai-text-usage.sse"
    client = openai_client(served, path, default_headers={
        "X-Sse-Tool-Test": test, "X-Sse-Tool-Fault": "status=429&retry_after=0&times=1"})
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
    assert "".join(chat_text(c.choices[0].delta) for c in stream if c.choices) == expected(path)[0]


def reset(served, test: str) -> None:
    """What a test fixture does first: its counts start again."""
    assert httpx.post(served.url(f"/_sse-tool/reset?test={test}"), trust_env=False).status_code == 200


def test_faults_scoped_to_a_test_hold_across_two_runs_of_it(served):
    for _ in range(2):
        reset(served, "test_checkout")
        one_run(served, "test_checkout")
    one_run(served, "test_other")  # another test's count is its own


def test_an_sdk_retrying_a_rate_limit_meets_it_once(served):
    reset(served, "test_retry")
    path = FIXTURES / "anthropic" / "text-short.sse"
    client = anthropic.Anthropic(base_url=served.base + stem(path), api_key="k", max_retries=2,
                                 default_headers={"X-Sse-Tool-Test": "test_retry",
                                                  "X-Sse-Tool-Fault": "status=529&retry_after=0&times=1"})
    message = client.messages.create(model="c", max_tokens=5, messages=MESSAGES)
    assert message.content[0].text == "Hello"
    served.wait_for(__import__("re").compile(r'"POST /anthropic/text-short/v1/messages" 529 .*times=1'))


# -- faults on a request for the whole answer -----------------------------------------------

@pytest.mark.parametrize("fault", ["close_after_events=2", "quirk=error-after-200", "quirk=hold-open",
                                   "quirk=split-utf8"])
def test_a_stream_fault_asked_of_a_whole_answer_is_a_400_that_says_so(served, fault):
    # They were ignored: a full 200 answer, as if no fault had been asked for.
    path = FIXTURES / "openai-chat" / "openai-text-usage.sse"
    client = openai_client(served, path, default_headers={"X-Sse-Tool-Fault": fault})
    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert fault in str(exc.value) and "stream: false" in str(exc.value)
    if fault != "quirk=error-after-200":  # (which the SDK raises, as it should)
        got = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
        assert [c for c in got]  # a stream takes it


def test_cut_after_events_cuts_a_whole_answer_as_the_cut_stream_would(served):
    path = FIXTURES / "openai-chat" / "openai-text-usage.sse"
    client = openai_client(served, path, default_headers={"X-Sse-Tool-Fault": "cut_after_events=2"})
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    # past its last event the fault never comes: the whole answer
    client = openai_client(served, path, default_headers={"X-Sse-Tool-Fault": "cut_after_events=999"})
    assert client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES).choices[0].message.content \
        == expected(path)[0]
