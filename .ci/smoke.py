"""Smoke test of an installed sse-tool, run from a folder outside the checkout.

    python .ci/smoke.py --bin DIR --man DIR --version X.Y.Z [--label NAME]

DIR of --bin holds the installed ``sse-tool`` command (a venv's bin, pipx's bin folder);
DIR of --man is where its pages are expected (holding man1/): ``man`` must find them there
as a user's ``man`` does, with no MANPATH, from the bin folder on PATH (man-db looks in
../share/man beside each PATH entry). The command must be the installed package, not the
checkout: the module it runs is looked up, and must come from outside the checkout and be
a regular (not editable) install of version X.Y.Z.

Checks: --version (and -v) against X.Y.Z, --help of the tool and of every command, ``man``
for the tool and each command from DIR, render of a sample given by its path (complete and
cut), frame | normalize | render through real pipes, and replay, check and inspect on a
sample. Exits 1 at the first failure, with what was run and what it gave.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
COMMANDS = ("fetch", "frame", "normalize", "render", "inspect", "check", "replay", "serve")
PAGES = ("sse-tool", *(f"sse-tool-{name}" for name in COMMANDS))

label = "smoke"
checks = 0


def fail(what: str, result: subprocess.CompletedProcess | None = None) -> None:
    print(f"{label}: FAILED: {what}", file=sys.stderr)
    if result is not None:
        print(f"  command: {result.args}\n  exit: {result.returncode}\n"
              f"  stdout: {result.stdout[-2000:]!r}\n  stderr: {result.stderr[-2000:]!r}", file=sys.stderr)
    sys.exit(1)


def ok(what: str) -> None:
    global checks
    checks += 1
    print(f"{label}: ok  {what}")


def main() -> None:
    global label
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", type=Path, required=True)
    parser.add_argument("--man", type=Path, required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--label", default="smoke")
    args = parser.parse_args()
    label = f"smoke ({args.label})"
    bindir, mandir, version = args.bin.resolve(), args.man.resolve(), args.version

    work = Path(tempfile.mkdtemp(prefix="sse-tool-smoke-")).resolve()
    if ROOT in work.parents:
        fail(f"the working folder {work} is inside the checkout")
    # only the installed command and the system's tools; nothing from the checkout or a venv
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONUNBUFFERED", "VIRTUAL_ENV", "PYTHONSTARTUP",
                        "MANPATH")}
    env.update(PATH=os.pathsep.join([str(bindir), "/usr/local/bin", "/usr/bin", "/bin"]),
               MANPAGER="cat", PAGER="cat", MANWIDTH="80", LC_ALL="C.UTF-8")

    def run(argv: list[str], stdin: bytes | None = None, text: bool = True) -> subprocess.CompletedProcess:
        out = subprocess.run(argv, cwd=work, env=env, input=stdin, capture_output=True, timeout=120)
        if text:
            out.stdout, out.stderr = out.stdout.decode(), out.stderr.decode()
        return out

    def expect(argv: list[str], code: int = 0, **kw) -> subprocess.CompletedProcess:
        out = run(argv, **kw)
        if out.returncode != code:
            fail(f"{' '.join(argv)} exited {out.returncode}, not {code}", out)
        return out

    # the command on PATH is the installed one, running the installed package
    command = shutil.which("sse-tool", path=env["PATH"])
    if command is None or Path(command).parent.resolve() != bindir:
        fail(f"sse-tool on PATH is {command}, not the one in {bindir}")
    # its interpreter, from the script's first line (pipx's carry an option: "python -E")
    python = Path(command).resolve().read_text(errors="replace").splitlines()[0].removeprefix("#!").split()
    probe = ("import json, sys, sse_tool, importlib.metadata as m; d = m.distribution('sse-tool');"
             "print(json.dumps([sse_tool.__file__, d.version, d.read_text('direct_url.json'), sys.prefix]))")
    out = expect([*python, "-c", probe])
    module, installed, direct_url, prefix = json.loads(out.stdout)
    if ROOT in Path(module).resolve().parents:
        fail(f"sse_tool is imported from {module}, inside the checkout")
    if installed != version:
        fail(f"the installed distribution is {installed}, not {version}")
    if direct_url and json.loads(direct_url).get("dir_info", {}).get("editable"):
        fail(f"sse-tool is an editable install: {direct_url}")
    ok(f"{command} runs {' '.join(python)} with sse_tool {installed} from {Path(module).parent}")

    # versions
    out = expect(["sse-tool", "--version"])
    if out.stdout != f"sse-tool {version}\n":
        fail(f"--version printed {out.stdout!r}, not 'sse-tool {version}'", out)
    ok(f"sse-tool --version: {out.stdout.strip()}")
    out = expect(["sse-tool", "--version", "-v"])
    lines = out.stdout.splitlines()
    names = {line.split()[0] for line in lines[2:]}
    if lines[0] != f"sse-tool {version}" or not lines[1].startswith("Python 3.") \
            or not {"httpx", "rich", "typer"} <= names or "not installed" in "".join(lines[2:5]):
        fail("--version -v does not list Python, httpx, rich and typer", out)
    ok("sse-tool --version -v: " + "; ".join(lines[1:]))

    # help
    out = expect(["sse-tool", "--help"])
    section = out.stdout.partition("\nCommands:\n")[2].partition("\n\n")[0]
    listed = [line.split()[0] for line in section.splitlines()]
    if sorted(listed) != sorted([*COMMANDS, "help"]):
        fail(f"sse-tool --help lists {listed}, not {[*COMMANDS, 'help']}", out)
    ok("sse-tool --help lists " + " ".join(listed))
    for name in COMMANDS:
        out = expect(["sse-tool", name, "--help"])
        if not out.stdout.startswith(f"Usage: sse-tool {name} ") or "Exit status" not in out.stdout:
            fail(f"sse-tool {name} --help", out)
        if expect(["sse-tool", "help", name]).stdout != out.stdout:
            fail(f"sse-tool help {name} is not sse-tool {name} --help", out)
    ok("--help and help COMMAND of " + ", ".join(COMMANDS))

    # man pages: installed with the package (in its prefix's share/man/man1), and in the
    # folder given (the same one for a venv; pipx links them into its own), found there by man
    own = Path(prefix).resolve() / "share" / "man" / "man1"
    for folder in dict.fromkeys([own, mandir / "man1"]):
        installed_pages = sorted(p.name for p in folder.glob("*.1"))
        if installed_pages != sorted(f"{page}.1" for page in PAGES):
            fail(f"{folder} holds {installed_pages}")
        if any((folder / f"{page}.1").resolve().parent != own for page in PAGES):
            fail(f"the pages in {folder} are not the installed ones in {own}")
    for page in PAGES:
        where = expect(["man", "-w", page]).stdout.strip()
        if Path(where).resolve() != (mandir / "man1" / f"{page}.1").resolve():  # man-db follows links
            fail(f"man -w {page} finds {where}, not the page in {mandir / 'man1'}")
        out = expect(["man", page])
        words = " ".join(out.stdout.split())  # justified: spaces vary
        if not words.startswith(f"{page.upper()}(1) ") or f"NAME {page} - " not in words:
            fail(f"man {page} does not show the page", out)
    ok(f"man finds {len(PAGES)} pages in {mandir / 'man1'} (installed in {own}) and shows each")

    # render a sample given by its path, complete and cut
    expected = {e["file"]: e for e in json.loads((SAMPLES / "expected.json").read_text())}
    sample = SAMPLES / "anthropic-thinking.sse"
    answer = expected[sample.name]["answer_text"]
    out = expect(["sse-tool", "render", str(sample)])
    if out.stdout != answer + "\n":
        fail(f"render {sample} did not write the answer", out)
    ok(f"sse-tool render {sample}: the answer, exit 0")
    cut = SAMPLES / "anthropic-truncated.sse"
    expect(["sse-tool", "render", str(cut)], code=3)
    ok(f"sse-tool render {cut}: exit 3 (truncated)")

    # frame | normalize | render, each a process, connected by real pipes
    for path, code, status in ((sample, 0, "complete"), (cut, 3, "truncated")):
        with open(path, "rb") as stdin:
            frame = subprocess.Popen(["sse-tool", "frame"], stdin=stdin, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=work, env=env)
        normalize = subprocess.Popen(["sse-tool", "normalize"], stdin=frame.stdout,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=work, env=env)
        frame.stdout.close()
        records, normalize_err = normalize.communicate(timeout=120)
        frame_err = frame.stderr.read()
        frame.stderr.close()
        codes = (frame.wait(timeout=120), normalize.returncode)
        result = subprocess.CompletedProcess(["sse-tool frame <", str(path), "| sse-tool normalize"],
                                             codes[1], records.decode(), (frame_err + normalize_err).decode())
        if codes != (code, code):
            fail(f"frame | normalize on {path.name} exited {codes}, not ({code}, {code})", result)
        rows = [json.loads(line) for line in records.decode().splitlines()]
        text = "".join(r["text"] for r in rows if r.get("type") == "delta" and r.get("channel") == "answer")
        if rows[-1].get("type") != "end" or rows[-1].get("status") != status \
                or text != expected[path.name]["answer_text"]:
            fail(f"frame | normalize on {path.name}: wrong records", result)
        out = expect(["sse-tool", "render"], code=code, stdin=records)
        ok(f"frame < {path.name} | normalize | render: {len(rows)} records, end {status}, exit {code}")

    # the other commands on a sample
    out = expect(["sse-tool", "replay", "--speed", "0", str(sample)], text=False)
    if out.stdout != sample.read_bytes():
        fail("replay --speed 0 did not write the sample's bytes")
    out = expect(["sse-tool", "check", str(sample)])
    if "no findings" not in out.stdout:
        fail("check found problems in a good sample", out)
    out = expect(["sse-tool", "inspect", "--json", str(sample)])
    report = json.loads(out.stdout.splitlines()[0])
    if (report.get("kind"), report.get("verdict")) != ("stream", "complete"):
        fail("inspect --json did not report a complete stream", out)
    ok("replay, check and inspect --json on the sample")

    shutil.rmtree(work)
    print(f"{label}: all {checks} checks ok for sse-tool {version} in {bindir}")


if __name__ == "__main__":
    main()
