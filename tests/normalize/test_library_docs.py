"""docs/library.md and the README's Python examples run as doctests, against a real local
HTTP server that serves samples/, from the repository's root; and the package's face
(py.typed, dir)."""

from __future__ import annotations

import doctest
import os
import sys

import pytest

import sse_tool

from ..file_server import FileServer
from ..support import ROOT, SAMPLES

DOC = ROOT / "docs" / "library.md"


@pytest.fixture(scope="module")
def samples_url():
    server = FileServer(SAMPLES)
    yield server.url
    server.close()


@pytest.mark.parametrize("doc, least", [(DOC, 25), (ROOT / "README.md", 5)], ids=lambda d: getattr(d, "name", d))
def test_every_python_example_runs_as_shown(doc, least, samples_url, monkeypatch):
    monkeypatch.chdir(ROOT)
    # the examples run `sse-tool`: the one installed beside this Python
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(doc.read_text(encoding="utf-8"), {"base": samples_url}, doc.name, str(doc), 0)
    assert len(test.examples) >= least
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)


def test_the_package_is_typed():
    # where it is imported from: the checkout, or an installed wheel
    assert os.path.isfile(os.path.join(os.path.dirname(sse_tool.__file__), "py.typed"))


def test_dir_lists_the_api_and_nothing_else():
    import sse_tool.decode  # noqa: F401  (a submodule imported sets an attribute)

    public = [name for name in dir(sse_tool) if not name.startswith("_")]
    assert public == sorted(sse_tool.__all__)
    assert {"annotations", "importlib", "decode"}.isdisjoint(dir(sse_tool))
    assert "__version__" in dir(sse_tool)
    for name in sse_tool.__all__:
        getattr(sse_tool, name)


def test_a_type_checker_sees_every_exported_name_from_its_module():
    # the names load on first use (__getattr__), which a type checker reads as untyped:
    # the TYPE_CHECKING imports must name each export, from the module it is loaded from
    import ast

    tree = ast.parse(open(sse_tool.__file__, encoding="utf-8").read())  # (the checkout's, or a wheel's)
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    aliases = [(alias, node.module) for node in block.body if isinstance(node, ast.ImportFrom)
               for alias in node.names]
    assert {alias.name: module for alias, module in aliases} == sse_tool._EXPORTS
    # ``X as X``: re-exported, as ``mypy --strict`` (no implicit re-export) asks
    assert all(alias.asname == alias.name for alias, _ in aliases)


def test_every_record_a_reader_yields_is_exported():
    from sse_tool.model import RECORD_TYPES

    assert {cls.__name__ for cls in RECORD_TYPES.values()} <= set(sse_tool.__all__)
    assert sse_tool.Record is sse_tool.model.Record
