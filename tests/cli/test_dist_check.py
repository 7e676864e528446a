"""The release's own check (.ci/check_dist.py) catches what a broken sdist or wheel holds.

CI runs it on the real artefacts (.ci/package). Here it reads archives laid out as a
faithful build of this checkout would be, then the same with one fault each: junk,
a missing attribution or licence, a wrong version, a wrong Python floor. Needs the
checkout (git and .ci/), so it is skipped when the suite runs from the sdist.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import sse_tool

from ..support import ROOT

CHECK = ROOT / ".ci" / "check_dist.py"
VERSION = sse_tool.__version__

pytestmark = pytest.mark.skipif(
    not CHECK.exists() or shutil.which("git") is None or not (ROOT / ".git").exists(),
    reason="needs the checkout (.ci/check_dist.py and git)")

PYTHONS = ("3.10", "3.11", "3.12", "3.13")
DEPENDENCIES = ("typer>=0.15,<0.29", "httpx>=0.27", "rich>=13", "orjson>=3.9", "uvicorn>=0.30")


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in out.stdout.decode().split("\0") if name]


def metadata(version: str = VERSION, pythons=PYTHONS) -> str:
    lines = ["Metadata-Version: 2.4", "Name: sse-tool", f"Version: {version}",
             "License-Expression: Apache-2.0", "License-File: LICENSE", "Requires-Python: >=3.10",
             *(f"Classifier: Programming Language :: Python :: {v}" for v in pythons),
             *(f"Requires-Dist: {d}" for d in DEPENDENCIES),
             'Requires-Dist: pytest>=8; extra == "test"',
             "Description-Content-Type: text/markdown"]
    return "\n".join(lines) + "\n\nsse-tool\n"


def build(dist: Path, *, sdist_extra=(), sdist_drop=(), wheel_drop=(), meta: str | None = None) -> None:
    """Write an sdist and a wheel into ``dist`` as a build of the checkout lays them out."""
    meta = meta or metadata()
    files = tracked()
    top = f"sse_tool-{VERSION}/"
    sdist_names = [f for f in files
                   if f.startswith(("sse_tool/", "tests/", "samples/", "docs/"))
                   or f in ("README.md", "LICENSE", "CHANGELOG.md", "pyproject.toml", "setup.py", "MANIFEST.in")
                   or re.fullmatch(r"man/[^/]+\.1", f)]
    generated = {"PKG-INFO": meta, "setup.cfg": "[egg_info]\n"} | {
        f"sse_tool.egg-info/{name}": meta if name == "PKG-INFO" else ""
        for name in ("PKG-INFO", "SOURCES.txt", "dependency_links.txt", "entry_points.txt",
                     "requires.txt", "top_level.txt")}
    dist.mkdir()
    with tarfile.open(dist / f"sse_tool-{VERSION}.tar.gz", "w:gz") as tar:
        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(top + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name in sdist_names:
            if name not in sdist_drop:
                add(name, (ROOT / name).read_bytes())
        for name, text in generated.items():
            add(name, text.encode())
        for name in sdist_extra:
            add(name, b"junk\n")

    info = f"sse_tool-{VERSION}.dist-info/"
    wheel = {f: (ROOT / f).read_bytes() for f in files if f.startswith("sse_tool/") and f.endswith((".py", "py.typed"))}
    wheel |= {f"sse_tool-{VERSION}.data/data/share/man/man1/{Path(f).name}": (ROOT / f).read_bytes()
              for f in files if re.fullmatch(r"man/[^/]+\.1", f)}
    wheel |= {info + "METADATA": meta.encode(), info + "WHEEL": b"Wheel-Version: 1.0\n",
              info + "RECORD": b"", info + "top_level.txt": b"sse_tool\n",
              info + "entry_points.txt": b"[console_scripts]\nsse-tool = sse_tool.entry:main\n",
              info + "licenses/LICENSE": (ROOT / "LICENSE").read_bytes()}
    with zipfile.ZipFile(dist / f"sse_tool-{VERSION}-py3-none-any.whl", "w") as whl:
        for name, data in wheel.items():
            if name.removeprefix(info) not in wheel_drop:
                whl.writestr(name, data)


def check(dist: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), str(dist)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def faithful(tmp_path_factory) -> subprocess.CompletedProcess:
    dist = tmp_path_factory.mktemp("faithful") / "dist"
    build(dist)
    return check(dist)


def test_a_faithful_build_passes_and_the_wheel_is_listed(faithful):
    # this also holds the newest release in CHANGELOG.md to the package's version
    assert faithful.returncode == 0, faithful.stderr
    assert f"sse_tool-{VERSION}-py3-none-any.whl: " in faithful.stdout
    assert "  sse_tool/__init__.py\n" in faithful.stdout and "licenses/LICENSE" in faithful.stdout
    assert "hold what they should" in faithful.stdout


@pytest.mark.parametrize(("fault", "messages"), [
    (dict(sdist_extra=["bench/corpus/big.sse", ".venv/pyvenv.cfg", "tests/__pycache__/x.pyc",
                       ".ci/run", "tests/untracked.sse"]),
     ["sdist: should not hold bench/corpus/big.sse", "sdist: should not hold .venv/pyvenv.cfg",
      "sdist: should not hold tests/__pycache__/x.pyc", "sdist: should not hold .ci/run",
      "sdist: should not hold tests/untracked.sse"]),
    (dict(sdist_drop=["tests/fixtures/MANIFEST.md"]),
     ["sdist: missing tests/fixtures/MANIFEST.md",
      "the fixtures ship without their attribution tests/fixtures/MANIFEST.md"]),
    (dict(sdist_drop=["LICENSE"]), ["sdist: missing LICENSE"]),
    (dict(sdist_drop=["man/sse-tool-render.1"]), ["sdist: missing man/sse-tool-render.1"]),
    (dict(wheel_drop=["licenses/LICENSE"]),
     [f"wheel: missing sse_tool-{VERSION}.dist-info/licenses/LICENSE"]),
    (dict(wheel_drop=["METADATA", "entry_points.txt"]),
     [f"wheel: missing sse_tool-{VERSION}.dist-info/METADATA", "wheel: no sse-tool console script"]),
    (dict(meta=metadata(version="0.0.1")),
     [f"wheel METADATA: Version is '0.0.1', not '{VERSION}'", "sdist PKG-INFO: Version is '0.0.1'"]),
    (dict(meta=metadata(pythons=("3.11", "3.12"))),
     ["the classifiers name Python ['3.11', '3.12'], the oldest must be 3.10"]),
], ids=["junk", "no-attribution", "no-licence", "no-man-page", "wheel-no-licence", "wheel-no-metadata", "version", "floor"])
def test_each_fault_is_reported_on_its_own_line(tmp_path, fault, messages):
    build(tmp_path / "dist", **fault)
    r = check(tmp_path / "dist")
    assert r.returncode == 1, r.stdout
    for message in messages:
        assert message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
