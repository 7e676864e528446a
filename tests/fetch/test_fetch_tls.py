"""fetch over TLS and HTTP/2, as a real process against a real TLS server on 127.0.0.1.

The CA is made for the run (tests/tls_server.py) and trusted only through SSL_CERT_FILE or
SSL_CERT_DIR, which the environment of these processes otherwise lacks: a pass proves that
fetch verified the server against them. HTTP/2 is whatever ALPN chose, shown by ``-v``.
Waits are bounds for a hung test, not timings.
"""

from __future__ import annotations

import datetime
import os
import select
import shlex
import signal
import subprocess
import sys

import pytest

from ..http_server import event, events
from ..support import SSE_TOOL, clean_env, failed_output
from ..tls_server import TLSServer, make_ca, write_ca_dir

WAIT = 20


@pytest.fixture(scope="module")
def ca():
    return make_ca()


@pytest.fixture(scope="module")
def ca_file(ca, tmp_path_factory):
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture(scope="module")
def h2_server(ca):
    s = TLSServer(ca, alpn=("h2", "http/1.1"))
    yield s
    s.close()


@pytest.fixture(scope="module")
def h1_server(ca):
    s = TLSServer(ca, alpn=("http/1.1",))
    yield s
    s.close()


def env(**trust: str) -> dict:
    """The process environment, trusting exactly what ``trust`` names (this machine's own
    SSL_CERT_FILE / SSL_CERT_DIR would otherwise decide)."""
    e = clean_env(**trust)
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        if name not in trust:
            e.pop(name, None)
    return e


def fetch(*args: str, **trust: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SSE_TOOL, "fetch", *args], capture_output=True, env=env(**trust),
                          stdin=subprocess.DEVNULL, timeout=WAIT)


def one_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text and text.count("\n") == 1, text
    return text


# -- trust ---------------------------------------------------------------------------------


def test_https_with_ssl_cert_file_naming_the_ca_gives_the_body_byte_identical(h2_server, ca_file):
    r = fetch(h2_server.url("/sse?n=5"), SSL_CERT_FILE=ca_file)
    assert (r.returncode, r.stdout, r.stderr) == (0, events(5), b"")


def test_https_with_ssl_cert_dir_naming_the_ca_gives_the_body_byte_identical(h2_server, ca,
                                                                            tmp_path):
    write_ca_dir(ca, tmp_path / "certs")
    r = fetch(h2_server.url("/sse?n=5"), SSL_CERT_DIR=str(tmp_path / "certs"))
    assert (r.returncode, r.stdout, r.stderr) == (0, events(5), b"")


def test_https_without_the_ca_is_a_network_failure_saying_the_certificate_was_not_verified(h2_server):
    r = fetch(h2_server.url("/sse"))
    assert r.returncode == 7 and failed_output(r.stdout, b"", 7)
    line = one_line(r.stderr)
    assert "certificate could not be verified" in line and "SSL_CERT_FILE" in line


def test_a_refused_certificate_is_not_retried(h2_server):
    r = fetch("--retry", "3", "--retry-delay", "10ms", h2_server.url("/sse"))
    assert r.returncode == 7 and "certificate could not be verified" in one_line(r.stderr)


def test_ssl_cert_dir_without_the_ca_in_it_does_not_trust_the_server(h2_server, tmp_path):
    r = fetch(h2_server.url("/sse"), SSL_CERT_DIR=str(tmp_path))
    assert r.returncode == 7 and "certificate could not be verified" in one_line(r.stderr)


@pytest.mark.parametrize("cert, reason", [
    ({"identities": ("example.test",)}, "mismatch, certificate is not valid for '127.0.0.1'"),
    ({"not_before": datetime.datetime(2000, 1, 1), "not_after": datetime.datetime(2001, 1, 1)},
     "expired"),
], ids=["wrong-host", "expired"])
def test_a_certificate_from_a_trusted_ca_is_still_refused_for_the_wrong_host_or_when_expired(
        ca, ca_file, cert, reason):
    server = TLSServer(ca, **cert)
    try:
        r = fetch(server.url("/sse"), SSL_CERT_FILE=ca_file)
    finally:
        server.close()
    assert r.returncode == 7 and failed_output(r.stdout, b"", 7)
    line = one_line(r.stderr)
    assert "certificate could not be verified" in line and reason in line
    assert "SSL_CERT_FILE" not in line  # the CA is trusted: naming it again would not help


@pytest.mark.parametrize("name", ["missing.pem", "."])
def test_an_ssl_cert_file_that_cannot_be_read_is_a_usage_error_naming_it(h2_server, tmp_path,
                                                                         name):
    path = str(tmp_path / name)
    r = fetch(h2_server.url("/sse"), SSL_CERT_FILE=path)
    assert r.returncode == 2 and failed_output(r.stdout, b"", 2)
    assert f"SSL_CERT_FILE={path}" in one_line(r.stderr)


# -- HTTP/2 --------------------------------------------------------------------------------


def test_http2_is_negotiated_and_the_verbose_head_shows_it(h2_server, ca_file):
    r = fetch("--http2", "-v", h2_server.url("/sse?n=5"), SSL_CERT_FILE=ca_file)
    assert (r.returncode, r.stdout) == (0, events(5))
    assert "\n< HTTP/2 200" in r.stderr.decode()
    assert h2_server.protocols[-1] == "h2"


def test_without_http2_the_same_server_is_spoken_to_in_http_1_1(h2_server, ca_file):
    r = fetch("-v", h2_server.url("/sse"), SSL_CERT_FILE=ca_file)
    assert (r.returncode, r.stdout) == (0, events(3))
    assert "\n< HTTP/1.1 200" in r.stderr.decode()


def test_http2_against_a_server_without_it_falls_back_to_http_1_1(h1_server, ca_file):
    r = fetch("--http2", "-v", h1_server.url("/sse?n=5"), SSL_CERT_FILE=ca_file)
    assert (r.returncode, r.stdout) == (0, events(5))
    assert "\n< HTTP/1.1 200" in r.stderr.decode()
    assert h1_server.protocols[-1] == "http/1.1"


def test_http2_without_the_h2_package_says_what_to_install(h2_server, ca_file):
    # h2 comes with the test extra, so hide it to see what a user without it meets
    code = "import sys; sys.modules['h2'] = None; from sse_tool.cli import main; main()"
    r = subprocess.run([sys.executable, "-c", code, "fetch", "--http2", h2_server.url("/sse")],
                       capture_output=True, env=env(SSL_CERT_FILE=ca_file), timeout=WAIT)
    assert r.returncode == 2 and failed_output(r.stdout, b"", 2)
    assert "pip install 'sse-tool[http2]'" in one_line(r.stderr)


# -- a body cut short, a deadline, a user who stops ---------------------------------------


@pytest.mark.parametrize("http2, mode, says", [
    (False, "close", "peer closed connection"),
    (True, "close", "disconnected"),
    (True, "reset", "reset the HTTP/2 stream (error INTERNAL_ERROR)"),
    (True, "goaway", "ended the HTTP/2 connection (error INTERNAL_ERROR)"),
], ids=["tls-http1.1-close", "http2-close", "http2-reset", "http2-goaway"])
def test_a_body_cut_mid_way_keeps_what_arrived_and_exits_3(h2_server, ca_file, http2, mode, says):
    args = ["--http2"] if http2 else []
    r = fetch(*args, h2_server.url(f"/cut?after=50&mode={mode}"), SSL_CERT_FILE=ca_file)
    assert r.returncode == 3 and failed_output(r.stdout, events(20)[:50], 3)
    line = one_line(r.stderr)
    assert "body cut short after 50 bytes" in line and says in line


def test_the_idle_deadline_holds_over_http2(h2_server, ca_file):
    # the watchdog shuts the socket under TLS and HTTP/2 framing, and the error names it
    r = fetch("--http2", "--idle-timeout", "100ms", h2_server.url("/stall?key=t1"),
              SSL_CERT_FILE=ca_file)
    assert r.returncode == 8 and failed_output(r.stdout, event(0), 8)
    assert "idle timeout" in one_line(r.stderr)
    assert h2_server.disconnected["t1"].wait(WAIT)


def test_ctrl_c_mid_body_over_http2_closes_the_upstream_and_exits_130(h2_server, ca_file):
    p = subprocess.Popen([*SSE_TOOL, "fetch", "--http2", h2_server.url("/stall?key=i1")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env(SSL_CERT_FILE=ca_file))
    ready, _, _ = select.select([p.stdout], [], [], WAIT)
    assert ready and os.read(p.stdout.fileno(), 65536) == event(0)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=WAIT)
    assert p.returncode == 130 and b"Traceback" not in err
    assert h2_server.disconnected["i1"].wait(WAIT)


def test_a_reader_that_stops_early_over_http2_closes_the_upstream_quietly(h2_server, ca_file):
    cmd = shlex.join([*SSE_TOOL, "fetch", "--http2", h2_server.url("/drip?key=h1")])
    r = subprocess.run(["bash", "-c", f"{cmd} | head -c 10; echo \" ${{PIPESTATUS[0]}}\""],
                       capture_output=True, env=env(SSL_CERT_FILE=ca_file), timeout=WAIT)
    assert r.stdout == event(0)[:10] + b" 141\n"
    assert r.stderr == b""
    assert h2_server.disconnected["h1"].wait(WAIT)
