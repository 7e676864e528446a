"""Check the built sdist and wheel in DIST against the checkout they were built from.

    python .ci/check_dist.py dist/

* The sdist holds exactly the tracked files a rebuild and the test suite need (the trees in
  SDIST_TREES and the files in SDIST_FILES) plus what setuptools generates: no benchmarks,
  no CI scripts, nothing untracked (a virtual environment, caches, leftovers).
* The wheel holds exactly the package's tracked modules, the man pages as data files for
  share/man/man1, and its metadata with the licence.
* One version everywhere: sse_tool/__init__.py, both file names, both metadata files, and
  the newest release in CHANGELOG.md.
* The metadata names the licence and the Python floor, and its classifiers name the
  oldest Python version; the Python versions they name are printed (``--pythons``) for
  .ci/package to install the wheel on.

Prints the wheel's size and file list. Exits 1 with every problem found, one a line.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: what the sdist carries from the checkout (MANIFEST.in says the same to setuptools)
SDIST_TREES = ("sse_tool/", "tests/", "samples/", "docs/")
SDIST_FILES = ("README.md", "LICENSE", "CHANGELOG.md", "pyproject.toml", "setup.py", "MANIFEST.in")
SDIST_PAGES = re.compile(r"man/[^/]+\.1")
#: what setuptools writes into every sdist
SDIST_GENERATED = {"PKG-INFO", "setup.cfg"} | {
    f"sse_tool.egg-info/{name}" for name in
    ("PKG-INFO", "SOURCES.txt", "dependency_links.txt", "entry_points.txt", "requires.txt",
     "top_level.txt")}
WHEEL_META = {"METADATA", "WHEEL", "RECORD", "entry_points.txt", "top_level.txt",
              "licenses/LICENSE"}
DEPENDENCIES = {"typer", "httpx", "rich", "orjson", "uvicorn"}

problems: list[str] = []


def problem(text: str) -> None:
    problems.append(text)


def tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"check_dist: the checkout's file list needs git: {exc}")
    return [name for name in out.stdout.decode().split("\0") if name]


def source_version() -> str:
    text = (ROOT / "sse_tool" / "__init__.py").read_text()
    found = re.findall(r'^__version__ = "([^"]+)"$', text, re.M)
    if len(found) != 1:
        sys.exit("check_dist: sse_tool/__init__.py must set __version__ once, as a plain string")
    return found[0]


def changelog_release() -> str | None:
    """The newest released version in CHANGELOG.md (Keep a Changelog headings)."""
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\](.*)$", text, re.M)
    if not headings or headings[0][0] != "Unreleased":
        problem("CHANGELOG.md: the first section must be '## [Unreleased]'")
    releases = [(v, rest) for v, rest in headings if v != "Unreleased"]
    if not releases:
        problem("CHANGELOG.md: no released version")
        return None
    version, rest = releases[0]
    if not re.fullmatch(r" - \d{4}-\d{2}-\d{2}", rest):
        problem(f"CHANGELOG.md: '## [{version}]' needs ' - YYYY-MM-DD' after it")
    return version


def compare(what: str, actual: set[str], expected: set[str]) -> None:
    for name in sorted(expected - actual):
        problem(f"{what}: missing {name}")
    for name in sorted(actual - expected):
        problem(f"{what}: should not hold {name}")


def metadata(text: str, what: str, version: str) -> list[str]:
    meta = HeaderParser().parsestr(text)
    expect = {"Name": "sse-tool", "Version": version, "License-Expression": "Apache-2.0",
              "License-File": "LICENSE", "Requires-Python": ">=3.10",
              "Description-Content-Type": "text/markdown"}
    for key, value in expect.items():
        if meta.get(key) != value:
            problem(f"{what}: {key} is {meta.get(key)!r}, not {value!r}")
    required = {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower()
                for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r}
    if required != DEPENDENCIES:
        problem(f"{what}: depends on {sorted(required)}, not {sorted(DEPENDENCIES)}")
    classifiers = meta.get_all("Classifier") or []
    pythons = sorted((c.rsplit(" ", 1)[1] for c in classifiers
                      if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)),
                     key=lambda v: tuple(map(int, v.split("."))))
    floor = meta.get("Requires-Python", "").removeprefix(">=")
    if not pythons or pythons[0] != floor:
        problem(f"{what}: the classifiers name Python {pythons}, the oldest must be {floor}")
    return pythons


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dist", type=Path)
    parser.add_argument("--pythons", action="store_true",
                        help="print only the Python versions the classifiers name, one a line")
    args = parser.parse_args()

    version = source_version()
    files = tracked()
    released = changelog_release()
    if released != version:
        problem(f"CHANGELOG.md: the newest release is {released}, the package is {version}")

    sdists = sorted(args.dist.glob("*.tar.gz"))
    wheels = sorted(args.dist.glob("*.whl"))
    if [p.name for p in sdists] != [f"sse_tool-{version}.tar.gz"]:
        sys.exit(f"check_dist: expected one sdist sse_tool-{version}.tar.gz in {args.dist}, found {[p.name for p in sdists]}")
    if [p.name for p in wheels] != [f"sse_tool-{version}-py3-none-any.whl"]:
        sys.exit(f"check_dist: expected one wheel sse_tool-{version}-py3-none-any.whl in {args.dist}, found {[p.name for p in wheels]}")
    sdist, wheel = sdists[0], wheels[0]

    # the sdist
    top = f"sse_tool-{version}/"
    with tarfile.open(sdist) as tar:
        members = {m.name: m for m in tar.getmembers()}
        in_sdist = {name[len(top):] for name, m in members.items()
                    if m.isfile() and name.startswith(top)}
        outside = [name for name in members if not (name + "/").startswith(top)]
        if outside:
            problem(f"sdist: entries outside {top}: {outside}")
        def read(name: str) -> bytes | None:
            member = members.get(top + name)
            return tar.extractfile(member).read() if member is not None and member.isfile() else None

        sdist_meta = read("PKG-INFO")
        sdist_license = read("LICENSE")
    expected = {f for f in files
                if f.startswith(SDIST_TREES) or f in SDIST_FILES or SDIST_PAGES.fullmatch(f)}
    compare("sdist", in_sdist, expected | SDIST_GENERATED)
    if sdist_license is not None and sdist_license != (ROOT / "LICENSE").read_bytes():
        problem("sdist: LICENSE differs from the checkout's")
    for needed in ("tests/fixtures/MANIFEST.md", "tests/schemas/SARIF-LICENSE.md"):
        if needed in files and needed not in in_sdist:
            problem(f"sdist: the fixtures ship without their attribution {needed}")
    if sdist_meta is not None:  # else reported missing above
        metadata(sdist_meta.decode(), "sdist PKG-INFO", version)

    # the wheel
    info = f"sse_tool-{version}.dist-info/"
    data = f"sse_tool-{version}.data/data/share/man/man1/"
    pages = sorted(f for f in files if SDIST_PAGES.fullmatch(f))
    with zipfile.ZipFile(wheel) as whl:
        entries = whl.infolist()
        in_wheel = {e.filename for e in entries}
        expected = ({f for f in files if f.startswith("sse_tool/") and f.endswith((".py", "py.typed"))}
                    | {data + Path(p).name for p in pages} | {info + name for name in WHEEL_META})
        compare("wheel", in_wheel, expected)
        for page in pages:
            name = data + Path(page).name
            if name in in_wheel and whl.read(name) != (ROOT / page).read_bytes():
                problem(f"wheel: {name} differs from {page}")
        if info + "licenses/LICENSE" in in_wheel:
            licence = whl.read(info + "licenses/LICENSE")
            if licence != (ROOT / "LICENSE").read_bytes() or b"Apache License" not in licence:
                problem("wheel: licenses/LICENSE is not the checkout's Apache-2.0 LICENSE")
        def read(name: str) -> str:  # a missing file is reported above
            return whl.read(name).decode() if name in in_wheel else ""

        if "sse-tool = sse_tool.entry:main" not in read(info + "entry_points.txt"):
            problem("wheel: no sse-tool console script")
        pythons = metadata(read(info + "METADATA"), "wheel METADATA", version)

    if args.pythons:
        if problems:
            print("\n".join(f"check_dist: {p}" for p in problems), file=sys.stderr)
            return 1
        print("\n".join(pythons))
        return 0

    size = wheel.stat().st_size
    print(f"{wheel.name}: {size} bytes ({size / 1024:.0f} KiB), {len(entries)} files, "
          f"{sum(e.file_size for e in entries)} bytes unpacked")
    for e in sorted(entries, key=lambda e: e.filename):
        print(f"  {e.file_size:>8}  {e.filename}")
    size = sdist.stat().st_size
    print(f"{sdist.name}: {size} bytes ({size / 1024:.0f} KiB), {len(in_sdist)} files")
    print(f"Python versions named by the classifiers: {', '.join(pythons)}")
    if problems:
        print("\n".join(f"check_dist: {p}" for p in problems), file=sys.stderr)
        return 1
    print(f"check_dist: sdist and wheel of sse-tool {version} hold what they should")
    return 0


if __name__ == "__main__":
    sys.exit(main())
