"""``inspect`` on real exchanges: ``sse-tool serve`` plays a stream with faults
(``first_byte_delay``, ``chunk_delay``, ``keepalive``), ``sse-tool fetch`` records it or
pipes it into ``inspect``; the figures must match the schedule the faults set, within a
tolerance (these are measured times on a shared machine, so the bounds are wide; the
exact rules are held by test_inspect_core.py on chosen times)."""

from __future__ import annotations

import json
import subprocess

import pytest

from sse_tool.inspect import Inspector

from ..inspect_streams import anthropic, served
from ..serve_process import run
from ..support import SSE_TOOL, clean_env

RATE = 20  # events a second: serve's default pace for a stream file
FIRST_BYTE = 1.0
CHUNK_DELAY = 0.25
KEEPALIVE = 0.12  # two keep-alives fit in each 0.30 s silence
GAP = 1 / RATE + CHUNK_DELAY
FAULTS = f"first_byte_delay={FIRST_BYTE}s&chunk_delay={CHUNK_DELAY * 1000:g}ms&keepalive={KEEPALIVE * 1000:g}ms"
EVENTS = anthropic(thinking=["Let me ", "see. "], text=["Hola, ", "¿qué ", "tal? ", "Bien."], output_tokens=30)
TOLERANCE = 0.2  # seconds, on a figure measured across two processes and a socket


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with served(tmp_path_factory.mktemp("live"), EVENTS) as serve:
        yield serve


def planned():
    """The report of the schedule the faults set: event i written at 1.0 + i * 0.30 s."""
    ins = Inspector("plan", origin="recording")
    for i, data in enumerate(EVENTS):
        ins.feed(data, FIRST_BYTE + i * GAP)
    return ins.close(FIRST_BYTE + (len(EVENTS) - 1) * GAP, "complete")


def test_a_recording_of_a_slow_stream_with_keep_alives_gives_the_planned_figures(server, tmp_path):
    rec = tmp_path / "story.rec"
    done = subprocess.run([*SSE_TOOL, "fetch", "--record", str(rec), server.url(f"/story?{FAULTS}")],
                          capture_output=True, env=clean_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(run("inspect", "--json", str(rec)).stdout.splitlines()[0])
    plan = planned()
    assert (report["verdict"], report["cause"]) == ("complete", "end_turn")
    # what the faults fix exactly: events, and two keep-alives in each of the silences
    assert report["sizes"]["events"] == len(EVENTS)
    assert report["sizes"]["keepalives"] == 2 * (len(EVENTS) - 1)
    tl, pl = report["timeline"], plan.timeline
    assert FIRST_BYTE <= tl["first_byte"] <= FIRST_BYTE + 1.0  # the request, a connection, a head
    late = tl["first_byte"] - FIRST_BYTE  # everything after the first byte keeps its pace
    for moment in ("first_event", "first_reasoning", "first_answer", "last_token"):
        assert tl[moment] == pytest.approx(getattr(pl, moment) + late, abs=TOLERANCE), moment
    assert report["durations"]["ttft"] == pytest.approx(plan.ttft + late, abs=TOLERANCE)
    gaps = report["gaps"]
    assert gaps["p50"] == pytest.approx(GAP, abs=0.1) and gaps["max"] == pytest.approx(GAP, abs=TOLERANCE)
    stall = report["stall"]
    assert stall["seconds"] == pytest.approx(plan.gaps.stall.seconds, abs=TOLERANCE)
    assert stall["keepalives"] == plan.gaps.stall.keepalives + 2 * round(plan.gaps.stall.seconds / GAP)
    assert report["rates"]["output"]["basis"] == "usage" and report["rates"]["output"]["tokens"] == 30
    assert not report["burst"]["bursty"]


def test_a_live_pipe_from_fetch_is_timed_as_it_arrives_and_passed_on_with_tee(server):
    env = clean_env()
    fetch = subprocess.Popen([*SSE_TOOL, "fetch", server.url(f"/story?{FAULTS}")], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env)
    inspect = subprocess.Popen([*SSE_TOOL, "inspect", "--tee", "--json"], stdin=fetch.stdout,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    fetch.stdout.close()
    body, report_text = inspect.communicate(timeout=60)
    assert fetch.wait(30) == 0 and inspect.returncode == 0, report_text
    assert body.replace(b": keep-alive\n", b"") == b"".join(EVENTS)  # unchanged, keep-alives included
    report = json.loads(report_text.splitlines()[0])
    assert (report["origin"], report["verdict"]) == ("live", "complete")
    assert report["sizes"]["keepalives"] == 2 * (len(EVENTS) - 1)
    assert report["gaps"]["p50"] == pytest.approx(GAP, abs=0.1)
    # t = 0 is when inspect began reading, about when fetch sent the request
    assert FIRST_BYTE - 0.5 <= report["timeline"]["first_byte"] <= FIRST_BYTE + 1.5
    plan = planned()
    assert report["durations"]["ttft"] - report["timeline"]["first_byte"] == pytest.approx(
        plan.ttft - plan.timeline.first_byte, abs=TOLERANCE)


@pytest.mark.parametrize("query, codes, verdict", [
    ("status=429", (6, 0, 6), ("error", "http_error")),
    ("first_byte_delay=5s", (8, 0, 8), ("truncated", "timeout")),
], ids=["http-error", "timeout"])
def test_a_fetch_failure_crosses_inspect_tee_and_is_its_verdict(server, query, codes, verdict):
    # fetch writes its failure marker for inspect (a stage that says it): inspect's report
    # gives the failure's verdict, --tee passes the marker on, and the pipe ends with
    # fetch's code, as it does without inspect in it
    pipe = (f"{' '.join(SSE_TOOL)} fetch --first-byte-timeout 1s '{server.url('/story?' + query)}'"
            f" | {' '.join(SSE_TOOL)} inspect --tee --json | {' '.join(SSE_TOOL)} render")
    done = subprocess.run(["bash", "-c", pipe + '; echo "${PIPESTATUS[*]}"'], capture_output=True,
                          env=clean_env(), timeout=60)
    assert tuple(map(int, done.stdout.split()[-3:])) == codes, done.stderr
    report = json.loads(next(line for line in done.stderr.splitlines() if line.startswith(b'{"kind":"stream"')))
    assert (report["verdict"], report["cause"]) == verdict
    assert report["detail"].startswith("fetch: ")
    # the failure is said once by each stage that reads it, never by fetch behind their back
    assert not any(line.startswith(b"sse-tool fetch:") for line in done.stderr.splitlines())
    fail_on = subprocess.run(["bash", "-c", f"{' '.join(SSE_TOOL)} fetch --first-byte-timeout 1s "
                              f"'{server.url('/story?' + query)}' | {' '.join(SSE_TOOL)} inspect "
                              "--fail-on truncated,error > /dev/null"], capture_output=True, env=clean_env(),
                             timeout=60)
    assert fail_on.returncode == (4 if verdict[0] == "error" else 3)
